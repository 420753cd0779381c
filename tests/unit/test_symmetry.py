"""Left-right symmetry (issue #15): the mirror map derived from the robot config, checked in the simulator, and
rsl-rl's symmetry augmentation behind ``algo.symmetry.*``."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from horde.envs import get_task, make
from horde.envs.robots import resolve_robot
from horde.envs.observations import history_column
from horde.envs.symmetry import Mirror, joint_mirror, mirror_name, observation_mirror, task_mirror
from horde.train.config import ConfigError, compose


def _is_involution(m: Mirror) -> bool:
    n = len(m.perm)
    return np.array_equal(m.perm[m.perm], np.arange(n)) and np.all(m.sign * m.sign[m.perm] == 1)


def test_mirror_name_swaps_sides_and_keeps_centre_names():
    pairs = resolve_robot("quad12").mirror_names
    assert mirror_name("FL_hip_joint", pairs) == "FR_hip_joint"
    assert mirror_name("RR_foot", pairs) == "RL_foot"
    assert mirror_name("left_knee_joint", pairs) == "right_knee_joint"
    assert mirror_name("waist_yaw_joint", pairs) == "waist_yaw_joint"


@pytest.mark.parametrize("robot", ["quad12", "g1"])
def test_joint_mirror_pairs_sides_flips_roll_and_yaw_and_keeps_the_default_pose(robot):
    r = resolve_robot(robot)
    m = joint_mirror(r)
    assert _is_involution(m)
    for k, j in enumerate(r.joints):
        assert r.joints[m.perm[k]] == mirror_name(j, r.mirror_names)
        flips = any(part in j for part in ("_hip_joint", "roll", "yaw"))  # abduction, roll and yaw axes: x or z
        assert m.sign[k] == (-1.0 if flips else 1.0), j
    pose = torch.tensor(r.default_joint_pos)
    assert torch.allclose(m.apply(pose), pose)  # the standing pose is its own mirror image


def test_observation_mirror_of_the_perceptive_task_is_an_involution_on_both_groups():
    core = make("quadruped-rough-perceptive", num_envs=2, device="cpu", seed=0)
    mirror = task_mirror(core)
    assert set(mirror.groups) == {"policy", "critic"}
    for name, group in mirror.groups.items():
        assert _is_involution(group), name
    names = core.obs_names
    pol = mirror.groups["policy"]
    k = names.index("pos_FL_hip_joint")
    assert names[pol.perm[k]] == "pos_FR_hip_joint" and pol.sign[k] == -1
    scan = core.scan_points
    for k in range(len(scan)):  # a scan point's mirror lies at (x, -y)
        j = pol.perm[names.index(f"height_scan_{k}")] - names.index("height_scan_0")
        assert np.allclose(scan[j], scan[k] * np.array([1, -1]))


def _mirror_rollout(task: str, steps: int, history: dict | None = None) -> tuple[list[float], list[float]]:
    """Env 0 steps with random actions and a command, env 1 with their mirror images, both from the (symmetric)
    standing pose; returns per step the largest |mirror(obs_0) - obs_1| and the largest |mirror(obs_0) - obs_0|;
    ``history``: frames kept per term (``task.observation_params.<term>.history``)."""
    cfg = copy.deepcopy(get_task(task).config)
    cfg.init_joint_pos_range, cfg.init_yaw_range, cfg.randomization.enabled = 0.0, 0.0, False
    cfg.observation_params = {name: {"history": h} for name, h in (history or {}).items()}
    core = make(task, num_envs=2, device="cpu", seed=0, config=cfg)
    mirror = task_mirror(core, task)
    obs_m, act_m = mirror.groups["policy"], mirror.actions
    core.command.copy_(torch.tensor([[0.6, 0.3, 0.5], [0.6, -0.3, -0.5]]))
    if "gait_phase_sin" in core.obs_names:  # the mirror image walks half a gait cycle on
        core.episode_length[1] = int(round(cfg.gait_period / 2 / cfg.control_dt))
    g = torch.Generator().manual_seed(1)
    err, asym = [], []
    for _ in range(steps):
        a = torch.rand(1, core.num_actions, generator=g) * 2 - 1
        core.step(torch.cat([a, act_m.apply(a)]))
        o = core.obs
        err.append(float((obs_m.apply(o[0]) - o[1]).abs().max()))
        asym.append(float((obs_m.apply(o[0]) - o[0]).abs().max()))
    return err, asym


def test_a_left_step_is_a_right_step_in_the_simulator():
    err, asym = _mirror_rollout("quadruped", 20)
    assert max(asym) > 1.0  # the motion is far from symmetric itself ...
    assert max(err) < 1e-3  # ... and its mirror image is what the simulator does with the mirrored actions


def test_a_terms_past_frames_mirror_as_the_term_each_in_its_own_frame():
    """``<column>@-<lag>`` mirrors to its image's column at the same lag, with the column's sign: the mirror of a
    stacked observation is the stack of the mirrored frames."""
    r = resolve_robot("quad12")
    joint = joint_mirror(r)
    frame = ("ang_vel_x", "ang_vel_y", "ang_vel_z", *(f"pos_{j}" for j in r.joints))
    names = [history_column(c, lag) for lag in range(3) for c in frame]
    one, kept = (observation_mirror(n, r.joints, joint, r.mirror_names) for n in (frame, names))
    assert _is_involution(kept)
    k = names.index("pos_FL_hip_joint@-2")
    assert names[kept.perm[k]] == "pos_FR_hip_joint@-2" and kept.sign[k] == -1
    k = names.index("ang_vel_z@-1")
    assert names[kept.perm[k]] == "ang_vel_z@-1" and kept.sign[k] == -1
    x = torch.randn(5, 3, len(frame))  # [batch, frame, column], newest frame first
    torch.testing.assert_close(kept.apply(x.reshape(5, -1)), one.apply(x).reshape(5, -1), rtol=0, atol=0)
    with pytest.raises(ValueError, match="observation 'pos_nope@-1' has no known mirror image"):
        observation_mirror(["pos_nope@-1"], r.joints, joint, r.mirror_names)


def test_a_left_step_is_a_right_step_with_history_frames_too():
    err, asym = _mirror_rollout("quadruped", 12, history={"joint_pos": 3, "base_ang_vel": 2})
    assert max(asym) > 1.0
    assert max(err) < 1e-3


def test_the_g1s_mirror_image_holds_to_its_models_asymmetry():
    """The G1 MJCF's left and right inertias differ slightly (~1%), so now and then a foot lands a substep earlier
    in one env than in its mirror image and a joint rate jumps on that step (4.7 of 12.9 rad/s at step 8 here;
    0.35 of 3.6 at step 5 with the motors' 10 Hz leg gains as ``task.joint_gains``); on the median step the mirror
    image holds to 0.4-0.7% of the motion's own asymmetry. A wrong rule in the mirror map is off by a large share
    of the asymmetry on every step (the hip roll's sign rule dropped: 29-95%, median 56%)."""
    err, asym = _mirror_rollout("g1-velocity", 10)
    assert max(asym) > 1.0
    ratios = sorted(e / a for e, a in zip(err, asym))
    assert ratios[len(ratios) // 2] < 0.05, list(zip(err, asym))


def test_augmentation_appends_the_mirrored_batch():
    from tensordict import TensorDict

    core = make("quadruped-rough-perceptive", num_envs=3, device="cpu", seed=0)
    mirror = task_mirror(core)
    obs = TensorDict({"policy": core.obs.clone(), "critic": core.critic_obs.clone()}, batch_size=[3])
    actions = torch.randn(3, core.num_actions)
    obs2, actions2 = mirror(obs=obs, actions=actions)
    assert obs2.batch_size[0] == 6 and actions2.shape == (6, core.num_actions)
    assert torch.equal(obs2["critic"][:3], obs["critic"])
    assert torch.equal(obs2["policy"][3:], mirror.groups["policy"].apply(obs["policy"]))
    assert torch.equal(mirror.actions.apply(actions2[3:]), actions)


def test_ppo_trains_with_symmetry_augmentation_and_mirror_loss(tmp_path):
    from horde.train.ppo import PPOTrainer

    cfg, name, raw = compose(["task=quadruped", "num_envs=8", "max_iterations=2", "algo.num_steps_per_env=4",
                              "algo.symmetry.augment=true", "algo.symmetry.mirror_loss=0.5", f"run_root={tmp_path}"])
    trainer = PPOTrainer(cfg, name, raw, quiet=True)
    assert trainer.alg.symmetry is not None and trainer.alg.symmetry.use_data_augmentation
    trainer.start()
    losses = trainer.iterate()
    assert "symmetry" in losses and np.isfinite(losses["symmetry"])


def test_the_logged_mirror_error_reuses_the_updates_forward_and_matches_rsl_rls(tmp_path):
    """With augmentation on and the mirror loss off, the update runs the actor once per mini-batch (rsl-rl runs it
    twice, the second time only for the logged figure) and logs rsl-rl's figure bit for bit, parameters unchanged."""
    from rsl_rl.extensions import Symmetry

    from horde.train.algorithm import MirrorErrorFromUpdate
    from horde.train.ppo import PPOTrainer

    cfg, name, raw = compose(["task=quadruped", "num_envs=8", "max_iterations=2", "algo.num_steps_per_env=4",
                              "algo.num_mini_batches=2", "algo.num_learning_epochs=2",
                              "algo.symmetry.augment=true", f"run_root={tmp_path}"])
    trainer = PPOTrainer(cfg, name, raw, quiet=True)
    alg = trainer.alg
    assert type(alg.symmetry) is MirrorErrorFromUpdate
    trainer.start()
    trainer.rollout(alg, returns_phase="learn")
    start = copy.deepcopy(alg.save())
    storage = copy.deepcopy(alg.storage)
    calls = []
    alg.actor.mlp.register_forward_hook(lambda *_: calls.append(1))

    def update(symmetry_cls) -> tuple[dict, dict, int]:
        alg.load(start, None, strict=True)
        alg.storage = copy.deepcopy(storage)
        alg.symmetry.__class__ = symmetry_cls
        calls.clear()
        torch.manual_seed(11)
        losses = alg.update()
        return losses, copy.deepcopy(alg.get_policy().state_dict()), len(calls)

    ours, ours_params, ours_calls = update(MirrorErrorFromUpdate)
    theirs, theirs_params, theirs_calls = update(Symmetry)
    assert (ours_calls, theirs_calls) == (4, 8)  # 2 epochs x 2 mini-batches
    assert ours == theirs and ours["symmetry"] > 0
    assert all(torch.equal(ours_params[k], theirs_params[k]) for k in theirs_params)


def test_symmetry_on_a_task_without_a_mirror_is_one_line(tmp_path):
    from horde.train.ppo import PPOTrainer

    cfg, name, raw = compose(["task=cartpole", "num_envs=4", "algo.symmetry.augment=true", f"run_root={tmp_path}"])
    with pytest.raises(ConfigError,
                       match=r"^algo\.symmetry: task 'cartpole' has no left-right mirror: .*g1-velocity\)$"):
        PPOTrainer(cfg, name, raw, quiet=True)
