"""An observation term from a user's side: one Warp function and one config line, and the observation vector, the
critic group, ``policy.json``, the observation contract and the symmetry map pick it up with no other edit."""

import copy
import dataclasses

import numpy as np
import pytest
import torch
import warp as wp

from horde.deploy.robot.observations import build_observation
from horde.deploy.spec import observation_spec
from horde.envs import get_task, make
from horde.envs.terms import UnknownTermError
from horde.envs.velocity import Legged
from horde.envs.velocity_terms import VELOCITY_OBSERVATIONS


# --- what a user writes (each block is the whole addition) ----------------------------------------------------------
@VELOCITY_OBSERVATIONS.term(unit="m", offset=0.3, scale=2.0, clip=1.0, mirror="even")
def base_height(x: Legged, i: int, k: int) -> float:
    """Base height above z = 0 [m], seen as clip(2 (h - 0.3), -1, 1)."""
    return wp.transform_get_translation(x.body_q[i, x.root])[2]


@VELOCITY_OBSERVATIONS.term(width=2, unit="rad/s", mirror="odd")
def yaw_rate_and_error(x: Legged, i: int, k: int) -> float:
    """Column 0: the base's yaw rate; column 1: the command's minus it (both flip sign in the mirror)."""
    w = x.root_vel_base[i, 5]
    return wp.where(k == 0, w, x.command[i, 2] - w)


@VELOCITY_OBSERVATIONS.term
def no_mirror(x: Legged, i: int, k: int) -> float:
    return x.root_vel_base[i, 0]
# -------------------------------------------------------------------------------------------------------------------


def _cfg(task="quadruped", extra=("base_height", "yaw_rate_and_error"), quiet=False):
    cfg = copy.deepcopy(get_task(task).config)
    cfg.extra_observations = list(extra)
    if quiet:
        cfg.randomization = dataclasses.replace(cfg.randomization, obs_noise_scale=0.0)
        cfg.height_scan = dataclasses.replace(cfg.height_scan, noise=0.0)
    return cfg


def test_a_term_is_one_function_and_one_config_line():
    env = make("quadruped", num_envs=4, seed=0, config=_cfg())
    assert env.obs_names[-3:] == ("base_height", "yaw_rate_and_error_0", "yaw_rate_and_error_1")
    g = torch.Generator().manual_seed(0)
    for _ in range(5):
        env.step(torch.rand(4, 12, generator=g) * 2 - 1)
        z = env.world.root_pose[:, 2]
        np.testing.assert_allclose(env.obs[:, -3].numpy(), torch.clamp(2 * (z - 0.3), -1, 1).numpy(), atol=1e-6)
        w = env.world.arrays.root_vel_base.numpy()[:, 5]
        np.testing.assert_allclose(env.obs[:, -2].numpy(), w, atol=1e-6)
        np.testing.assert_allclose(env.obs[:, -1].numpy(), env.command[:, 2].numpy() - w, atol=1e-6)
    assert env.final_obs.shape[1] == env.obs_dim


def test_policy_json_and_the_contract_follow_it():
    env = make("quadruped", num_envs=4, seed=0, config=_cfg())
    spec = observation_spec(env, env.describe(), None)
    block = spec["sources"][-2]
    assert (block["source"], block["offset"], block["scale"], block["clip"], block["unit"]) == (
        "base_height", [0.3], [2.0], 1.0, ["m"])
    for _ in range(3):
        raw = {k: v.numpy() for k, v in env.observation_sources().items()}
        np.testing.assert_allclose(build_observation(spec, raw), env.obs.numpy(), rtol=1e-5, atol=2e-5)
        env.step(torch.zeros(4, 12))


def test_the_critic_group_and_the_mirror_take_it_too():
    from horde.envs.symmetry import task_mirror

    env = make("quadruped-rough-perceptive", num_envs=4, seed=0, config=_cfg("quadruped-rough-perceptive", quiet=True))
    env.step(torch.zeros(4, 12))
    n = env.obs_dim
    np.testing.assert_allclose(env.critic_obs[:, n - 3:n].numpy(), env.obs[:, n - 3:].numpy(), atol=1e-6)
    assert env.critic_names[:n] == env.obs_names
    m = task_mirror(env, "quadruped-rough-perceptive").groups["policy"]
    assert list(m.perm[n - 3:]) == [n - 3, n - 2, n - 1] and list(m.sign[n - 3:]) == [1.0, -1.0, -1.0]
    bad = make("quadruped", num_envs=2, config=_cfg(extra=("no_mirror",)))
    with pytest.raises(ValueError, match=r"^observation term 'no_mirror' declares no mirror"):
        task_mirror(bad, "quadruped")


def test_the_critic_group_keeps_the_same_frames_as_the_policys_through_steps_ends_and_explicit_resets():
    """With ``history`` on a term, the privileged critic's noise-free copy of the observation group keeps the same
    frames (the teacher's observation for distillation is the student's layout): moved on at each step, filled on
    an episode's start, untouched by an explicit reset of other envs."""
    cfg = _cfg("quadruped-rough-perceptive", extra=("base_height",), quiet=True)
    cfg.observation_params = {"base_ang_vel": {"history": 3}, "base_height": {"history": 2}}
    env = make("quadruped-rough-perceptive", num_envs=4, seed=0, config=cfg)
    n = env.obs_dim
    assert env.critic_names[:n] == env.obs_names and "base_height@-1" in env.obs_names
    env.episode_length[0] = env.max_episode_length - 2
    g = torch.Generator().manual_seed(0)
    ended = 0
    for step in range(5):
        r = env.step(torch.rand(4, 12, generator=g) * 2 - 1)
        ended += int(r.dones[0])
        np.testing.assert_array_equal(env.critic_obs[:, :n].numpy(), env.obs.numpy(), err_msg=f"step {step}")
    assert ended == 1
    before = env.obs.clone()
    env.reset(torch.tensor([False, True, False, False]))
    np.testing.assert_array_equal(env.critic_obs[:, :n].numpy(), env.obs.numpy())
    np.testing.assert_array_equal(env.obs[[0, 2, 3]].numpy(), before[[0, 2, 3]].numpy())
    k = env.obs_names.index("ang_vel_x")
    np.testing.assert_array_equal(env.obs[1, k + 3:k + 9].numpy(), env.obs[1, k:k + 3].repeat(2).numpy())


def test_unknown_observation_term_lists_the_valid_ones():
    with pytest.raises(UnknownTermError, match=r"^unknown velocity observation term height; valid terms: "
                                               r"base_height, yaw_rate_and_error"):
        make("quadruped", num_envs=2, config=_cfg(extra=("height",)))


def test_any_velocity_term_takes_noise_scale_and_clip_from_one_config_line():
    """``task.observation_params.<term>.scale|clip|noise`` on the family's own terms (as on the lift's): the step
    writes them, ``policy.json`` states them (its rebuild matches), the critic group keeps the noise out."""
    cfg = _cfg(extra=("base_height",))
    cfg.observation_params = {"joint_vel": {"scale": 0.05}, "velocity_command": {"clip": 0.3},
                              "base_height": {"scale": 4.0, "noise": 0.01}}
    env = make("quadruped", num_envs=4, seed=0, config=cfg)
    terms = {t.name: t for t in env.observation_terms()}
    assert terms["joint_vel"].scale == 0.05 and terms["velocity_command"].clip == 0.3
    assert terms["base_height"].scale == 4.0 and terms["base_height"].noise == 0.01
    spec = observation_spec(env, env.describe(), None)
    env.step(torch.zeros(4, 12))
    cmd = env.obs_names.index("cmd_vx")
    assert env.obs[:, cmd:cmd + 3].abs().max() <= 0.3 + 1e-6
    raw = {k: v.numpy() for k, v in env.observation_sources().items()}
    rebuilt = build_observation(spec, raw)
    np.testing.assert_allclose(rebuilt[:, :-1], env.obs[:, :-1].numpy(), rtol=1e-5, atol=2e-5)  # no noise there
    assert np.abs(rebuilt[:, -1] - env.obs[:, -1].numpy()).max() <= 4.0 * 0.01 + 1e-5  # uniform +-0.01, x 4
    assert spec["sources"][-1]["training_noise"] == 0.01


@pytest.mark.parametrize("params, message", [
    ({"joint_vel": {"std": 1.0}}, r"^task.observation_params.joint_vel: the built-in term takes only noise, scale, "
                                  r"clip, history, delay; got std$"),
    ({"joint_pos": {"history": 0}}, r"^task.observation_params.joint_pos.history: frames kept, an int >= 1, got 0$"),
    ({"joint_vel": {"history": "3"}}, r"^task.observation_params.joint_vel.history: frames kept, an int >= 1, "
                                      r"got '3'$"),
    ({"height_scan": {"noise": 0.1}}, r"^task.observation_params.height_scan: not an observation term of the task "),
    ({"joint_pos": {"clip": 0.0}}, r"^task.observation_params.joint_pos.clip: must be > 0, got 0.0$"),
])
def test_a_velocity_modifier_mistake_is_one_line(params, message):
    from horde.envs.velocity import VelocityEnv

    cfg = _cfg(extra=())
    cfg.observation_params = params
    with pytest.raises(UnknownTermError, match=message):
        VelocityEnv.check_observations(cfg)


def test_the_depth_image_refuses_a_history_in_one_line():
    """The depth encoder reads one image's slice (``observation.images``): frames after it would reach the policy
    as something else, so the image keeps none."""
    from horde.envs.velocity import VelocityEnv

    cfg = _cfg("quadruped-rough-depth", extra=())
    cfg.observation_params = {"depth_image": {"history": 2}}
    with pytest.raises(UnknownTermError, match=r"^task.observation_params.depth_image.history: the depth image keeps "
                                               r"no history \(its encoder reads one frame\)$"):
        VelocityEnv.check_observations(cfg)
