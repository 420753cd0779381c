"""The G1 recipe's parts (issue 29), each an option of the velocity task for any legged robot: legs-only actions
(the other joints held by PD at the default pose), tanh-squashed targets, the gait clock and its contact reward,
the vx command curriculum; the export of a legs-only run, and of a full-body run through rung 3 in MuJoCo. One G1
env is shared (its build is slow), with domain randomization off so that actions reach the joints undelayed."""

import copy
import math

import numpy as np
import pytest
import torch
import warp as wp

from horde.envs import get_task, make
from horde.envs.episode import STATS_EPISODES, STATS_LENGTH, STATS_TERMS
from horde.envs.robots import resolve_robot
from horde.envs.symmetry import task_mirror
from horde.envs.velocity import VELOCITY_TERMS, Legged

N = 4


@pytest.fixture(scope="module")
def env():
    cfg = copy.deepcopy(get_task("g1-velocity").config)
    cfg.randomization.enabled = False
    return make("g1-velocity", num_envs=N, seed=0, config=cfg)


def _clock(env) -> torch.Tensor:
    k = env.obs_names.index("gait_phase_sin")
    assert env.obs_names[k + 1] == "gait_phase_cos"
    return env.obs[:, k:k + 2].clone()


def _expected_clock(steps: int, dt: float = 0.02, period: float = 0.8) -> list[float]:
    p = 2 * math.pi * (steps * dt / period % 1.0)
    return [math.sin(p), math.cos(p)]


def test_the_g1_recipe_and_the_quadruped_defaults():
    g1, quad = get_task("g1-velocity").config, get_task("quadruped").config
    assert (g1.action_joints, g1.action_squash, g1.gait_clock, g1.vx_curriculum) == ("legs", "tanh", True, True)
    lo, hi = g1.command_vx
    assert lo <= 0.0 and hi >= 0.8, "the walking target's forward commands [0, 0.8] m/s are inside the range"
    scales = g1.reward_scales
    assert "alive" not in scales and scales["terminated"] <= -100 and scales["gait_contact"] > 0
    assert g1.randomization.enabled and g1.randomization.push_interval > 0, "trained with pushes, as evaluated"
    assert get_task("g1-velocity-rough").config.reward_scales == scales
    # the quadrupeds keep their behaviour: every new option off
    assert (quad.action_joints, quad.action_squash, quad.gait_clock, quad.vx_curriculum) == ("all", "clip", False,
                                                                                              False)


def test_legs_only_actions_and_their_layout(env):
    robot = resolve_robot("g1")
    assert env.action_names == robot.joints[:12] == robot.leg_joints and env.num_actions == 12
    assert env.held_joints == robot.joints[12:]
    nj = len(robot.joints)
    names = env.obs_names
    assert names[12:12 + nj] == tuple(f"pos_{j}" for j in robot.joints), "every joint is observed"
    assert names[12 + 2 * nj:12 + 2 * nj + 12] == tuple(f"last_action_{j}" for j in env.action_names)
    assert names[-2:] == ("gait_phase_sin", "gait_phase_cos") and env.obs_dim == 12 + 2 * nj + 12 + 2
    assert len(env.action_scale()) == 12
    offsets = {c: o for t in env.observation_terms() for c, o in zip(t.columns, t.per_column("offset"))}
    assert offsets["pos_left_elbow_joint"] == pytest.approx(0.6)  # the default angle: obs are relative


def test_held_joints_keep_their_default_targets_whatever_the_actions(env):
    robot = resolve_robot("g1")
    default = torch.tensor(robot.default_joint_pos)
    g = torch.Generator().manual_seed(0)
    env.reset()
    for scale in (1.0, 50.0, 1.0e6):
        env.step((torch.rand(N, 12, generator=g) * 2 - 1) * scale)
        targets = env.pd_targets()
        assert torch.equal(targets[:, 12:], default[12:].expand(N, -1)), "waist and arms stay at the default pose"
        assert (targets[:, :12] - default[:12]).abs().max() > 0.01, "the legs move"


def test_tanh_squash_is_smooth_and_bounded(env):
    env.reset()
    a = torch.tensor([-1.0e6, -2.0, -1.2, -1.0, -0.5, 0.0, 0.3, 1.0, 1.2, 2.0, 50.0, 1.0e6])
    env.step(a.expand(N, -1).clone())
    applied = wp.to_torch(env._applied)[:, :12]
    torch.testing.assert_close(applied, torch.tanh(a).expand(N, -1), atol=1e-6, rtol=0)
    assert applied[0, -1] == pytest.approx(1.0) and applied[0, 0] == pytest.approx(-1.0)
    # no clip kink: beyond 1 the target still moves, and inside it is not the identity
    assert applied[0, 8] > applied[0, 7] and applied[0, 9] > applied[0, 8] and applied[0, 7] < 1.0
    scale = torch.tensor(env.action_scale())
    default = torch.tensor(resolve_robot("g1").default_joint_pos[:12])
    offset = env.pd_targets()[0, :12] - default
    assert (offset.abs() <= scale + 1e-6).all(), "a huge action gives a target within default +- action scale"


def test_the_gait_clock_ticks_from_each_episode_start(env):
    env.reset()
    torch.testing.assert_close(_clock(env), torch.tensor([[0.0, 1.0]] * N))
    zeros = torch.zeros(N, 12)
    for k in range(1, 13):
        env.step(zeros)
        torch.testing.assert_close(_clock(env), torch.tensor([_expected_clock(k)] * N), atol=1e-5, rtol=0)
        torch.testing.assert_close(env.gait_phase, torch.full((N,), k * 0.02 / 0.8 % 1.0), atol=1e-6, rtol=0)
    # an explicit reset of env 0 restarts its clock; the others keep theirs
    env.reset(torch.tensor([True, False, False, False]))
    clock = _clock(env)
    torch.testing.assert_close(clock[0], torch.tensor([0.0, 1.0]))
    torch.testing.assert_close(clock[1:], torch.tensor([_expected_clock(12)] * (N - 1)), atol=1e-5, rtol=0)
    # a time-out restarts it too: the final observation holds the last phase, the next step is one tick in
    env.episode_length[2] = env.max_episode_length - 1
    r = env.step(zeros)
    assert bool(r.truncated[2]) and not bool(r.dones[3])
    torch.testing.assert_close(_clock(env)[2], torch.tensor([0.0, 1.0]))
    k = env.obs_names.index("gait_phase_sin")
    torch.testing.assert_close(env.final_obs[2, k:k + 2], torch.tensor(_expected_clock(env.max_episode_length)),
                               atol=1e-4, rtol=0)
    env.step(zeros)
    torch.testing.assert_close(_clock(env)[2], torch.tensor(_expected_clock(1)), atol=1e-5, rtol=0)


def test_the_feet_are_half_a_cycle_apart_and_the_mirror_knows_it(env):
    robot = resolve_robot("g1")
    a, b = robot.foot_phase_offsets
    assert (b - a) % 1.0 == pytest.approx(0.5)
    mirror = task_mirror(env, "g1-velocity")
    pol, names = mirror.groups["policy"], env.obs_names
    for name in ("gait_phase_sin", "gait_phase_cos"):
        k = names.index(name)
        assert pol.perm[k] == k and pol.sign[k] == -1.0  # sin/cos of the phase half a cycle on
    acts = mirror.actions
    assert len(acts.perm) == 12
    k = env.action_names.index("left_hip_roll_joint")
    assert env.action_names[acts.perm[k]] == "right_hip_roll_joint" and acts.sign[k] == -1.0
    k = names.index("last_action_left_knee_joint")
    assert names[pol.perm[k]] == "last_action_right_knee_joint" and pol.sign[k] == 1.0


# --- the reward terms on hand-made states ---------------------------------------------------------------------------
def _legged(phase: list[float], down: list[tuple[bool, bool]], command: list[list[float]], *,
            heights: list[tuple[float, float]] | None = None, unstable: list[bool] | None = None) -> Legged:
    """A two-footed Legged on the CPU with only what the gait terms read."""
    n = len(phase)
    with wp.ScopedDevice("cpu"):
        x = Legged()
        x.n_feet, x.n_undesired, x.contact_threshold = 2, 0, 1.0
        x.gait_stance, x.swing_height = 0.55, 0.08
        x.gait_phase = wp.array(phase, dtype=float)
        x.gait_offset = wp.array([0.0, 0.5], dtype=float)
        x.contact = wp.array([[(0.0, 0.0, 50.0 if d else 0.0) for d in row] for row in down], dtype=wp.vec3)
        x.command = wp.array(command, dtype=float)
        x.unstable = wp.array(unstable or [False] * n, dtype=wp.bool)
        x.feet_body = wp.array([0, 1], dtype=int)
        x.feet_offset = wp.zeros(2, dtype=wp.vec3)  # feet at their bodies' origins
        x.feet_arm = wp.zeros(2, dtype=wp.vec3)
        z = heights or [(0.03, 0.03)] * n
        x.body_q = wp.array([[wp.transform((0.0, 0.0, h), wp.quat_identity()) for h in row] for row in z],
                            dtype=wp.transform)
    return x


def _term(name: str, x: Legged, n: int) -> np.ndarray:
    fn = VELOCITY_TERMS.resolve([name])[0]

    @wp.kernel(enable_backward=False, module="unique")
    def run(x: Legged, out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = fn(x, i)

    out = wp.zeros(n, dtype=float, device="cpu")
    wp.launch(run, n, inputs=[x], outputs=[out], device="cpu")
    return out.numpy()


def test_gait_contact_rewards_contacts_that_follow_the_clock():
    walk, stand = [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]
    cases = [  # (clock phase, (left down, right down), command, expected share of feet that match)
        (0.1, (True, False), walk, 1.0),    # left in stance (0.1), right in swing (0.6): both match
        (0.1, (True, True), walk, 0.5),     # right should be up
        (0.1, (False, True), walk, 0.0),    # both wrong
        (0.1, (False, False), walk, 0.5),   # left should be down
        (0.6, (False, True), walk, 1.0),    # half a cycle on: the feet swap roles
        (0.5, (True, False), walk, 0.5),    # left at 0.5 < 0.55 still in stance, right at 0.0 already: ...
        (0.5, (True, True), walk, 1.0),     # ... double support, both down
        (0.9, (True, True), stand, 1.0),    # a standing command: every foot down, whatever the clock
        (0.9, (True, False), stand, 0.5),
    ]
    x = _legged([c[0] for c in cases], [c[1] for c in cases], [c[2] for c in cases])
    np.testing.assert_allclose(_term("gait_contact", x, len(cases)), [c[3] for c in cases])
    x = _legged([0.1], [(True, False)], [walk], unstable=[True])
    assert _term("gait_contact", x, 1)[0] == 0.0


def test_feet_swing_height_wants_the_swinging_foot_at_its_height():
    walk = [0.5, 0.0, 0.0]
    x = _legged([0.1] * 4, [(True, False), (True, False), (True, True), (False, False)], [walk] * 4,
                heights=[(0.03, 0.11), (0.03, 0.06), (0.03, 0.20), (0.05, 0.05)])
    np.testing.assert_allclose(_term("feet_swing_height", x, 4), [0.0, 0.05 ** 2, 0.0, 2 * 0.08 ** 2], atol=1e-7)



def test_feet_phase_tracks_the_clocks_swing_arc():
    """Phase 0.775 puts the right foot (offset 0.5) at 0.275, in stance, and the left at the middle of its swing
    ((0.775 - 0.55) / 0.45 = 0.5): the apex, 0.08 m. Phase 0.6625 puts the left a quarter into its swing:
    smoothstep(0.5) = half the apex."""
    walk, stand = [0.5, 0.0, 0.0], [0.0, 0.0, 0.0]
    s = 2.0 / 9.0  # phase 0.1: the right foot at 0.6, 1/9 into its swing, wants smoothstep(2/9) of the apex
    cases = [  # (clock phase, (left z, right z), command, expected reward with std 0.1)
        (0.775, (0.11, 0.03), walk, 1.0),                       # the left at its apex over the right: exact
        (0.775, (0.03, 0.03), walk, math.exp(-0.08 ** 2 / 0.01)),  # shuffling: the apex missed by 8 cm
        (0.6625, (0.07, 0.03), walk, 1.0),                      # a quarter in: 4 cm
        (0.1, (0.03, 0.03), walk, math.exp(-(0.08 * s * s * (3 - 2 * s)) ** 2 / 0.01)),
        (0.775, (0.11, 0.03), stand, math.exp(-0.08 ** 2 / 0.01)),  # standing: every foot should be down
        (0.775, (0.03, 0.03), stand, 1.0),
    ]
    x = _legged([c[0] for c in cases], [(True, True)] * len(cases), [c[2] for c in cases],
                heights=[c[1] for c in cases])
    np.testing.assert_allclose(_term("feet_phase", x, len(cases)), [c[3] for c in cases], rtol=1e-5)
    x = _legged([0.775], [(True, False)], [walk], heights=[(0.11, 0.03)], unstable=[True])
    assert _term("feet_phase", x, 1)[0] == 0.0


def test_feet_air_time_biped_pays_single_stance_by_its_length():
    """Isaac Lab's biped air-time term by hand: one foot down, the shorter of its contact time and the other's air
    time, capped at the threshold (0.4 s); nothing in double support, in flight, standing or turning in place."""
    walk, turn = [0.5, 0.0, 0.0], [0.0, 0.0, 1.0]
    cases = [  # ((left down, right down), (left air, right air), (left contact, right contact), command, expected)
        ((True, False), (0.0, 0.12), (0.30, 0.0), walk, 0.12),  # mid-swing: the swing's air time
        ((True, False), (0.0, 0.30), (0.10, 0.0), walk, 0.10),  # a landing after a flight: its contact time
        ((True, False), (0.0, 0.70), (0.90, 0.0), walk, 0.40),  # capped
        ((True, True), (0.0, 0.0), (0.50, 0.20), walk, 0.0),    # double support
        ((False, False), (0.10, 0.20), (0.0, 0.0), walk, 0.0),  # flight
        ((False, True), (0.25, 0.0), (0.0, 0.60), turn, 0.0),   # turning in place: not a walking command
    ]
    x = _legged([0.0] * len(cases), [c[0] for c in cases], [c[3] for c in cases])
    with wp.ScopedDevice("cpu"):
        x.air_time = wp.array([c[1] for c in cases], dtype=float)
        x.contact_time = wp.array([c[2] for c in cases], dtype=float)
    np.testing.assert_allclose(_term("feet_air_time_biped", x, len(cases)), [c[4] for c in cases], rtol=1e-6)


def test_the_feet_count_their_contact_time_and_a_reset_clears_it(env):
    """``contact_time`` grows by the control step on every step a foot is down, is 0 in the air, and starts at 0
    in every episode; it is env state (a checkpoint keeps it)."""
    env.reset()
    ct, at = wp.to_torch(env.legged.contact_time), wp.to_torch(env.legged.air_time)
    zero = torch.zeros(N, env.num_actions)
    for _ in range(10):
        before = ct.clone()
        env.step(zero)
        down = wp.to_torch(env.legged.contact)[:, :2, 2] > env.cfg.contact_threshold
        alive = env.episode_length > 0
        want = torch.where(down, before + 0.02, torch.zeros_like(before))
        torch.testing.assert_close(ct[alive], want[alive], rtol=0, atol=1e-6)
        assert bool(((ct > 0) & (at > 0)).logical_not().all())  # never both
    assert bool((ct > 0.1).any())
    saved = env.get_env_state()
    assert "contact_time" in saved and float(saved["contact_time"].abs().max()) > 0.1
    del saved["contact_time"]  # a checkpoint from before the contact time: it loads, and the time restarts at 0
    env.set_env_state(saved)
    assert float(ct.abs().max()) == 0.0
    env.step(zero)
    env.reset()
    assert float(ct.abs().max()) == 0.0


def test_the_mujoco_twin_keeps_the_same_clock():
    """Rung 3's twin observes the clock and runs the gait terms on MuJoCo's state, one tick per control step."""
    import dataclasses

    import mujoco

    from horde.deploy.sim2sim import Joints
    from horde.envs.velocity import VelocityTwin

    robot = resolve_robot("g1")
    cfg = dataclasses.asdict(get_task("g1-velocity").config)
    model = VelocityTwin.load_model(cfg)
    data = mujoco.MjData(model)
    n = len(robot.leg_joints)  # the recipe's: the legs act, the waist and arms are held
    spec = {"action": {"names": list(robot.leg_joints), "default_joint_pos": list(robot.default_joint_pos[:n]),
                       "offset": list(robot.default_joint_pos[:n]), "scale": list(robot.action_scale[:n]),
                       "clip": None, "squash": "tanh"},
            "pd_gains": {"kp": list(robot.stiffness[:n]), "kd": list(robot.damping[:n])},
            "effort_limits": list(robot.effort_limit[:n]),
            "held_joints": {"names": list(robot.joints[n:]), "target": list(robot.default_joint_pos[n:]),
                            "kp": list(robot.stiffness[n:]), "kd": list(robot.damping[n:]),
                            "effort_limits": list(robot.effort_limit[n:])}}
    joints = Joints(model, spec)
    twin = VelocityTwin(model, cfg, 0.02)
    twin.reset(model, data, joints, np.random.default_rng(0))
    twin.command[:] = [0.5, 0.0, 0.0]
    mujoco.mj_forward(model, data)
    names = list(VelocityTwin.quantities)
    k = names.index("gait_phase_sin")
    np.testing.assert_allclose(twin.values(data)[k:k + 2], [0.0, 1.0], atol=1e-12)
    zeros = np.zeros(n)
    contact = {}
    for step in range(1, 22):
        for _ in range(4):
            tau = joints.torques(data, joints.target(zeros))
            data.qfrc_applied[joints.all_dadr] = tau
            mujoco.mj_step(model, data)
        terms, failed = twin.terms(model, data, joints, zeros, zeros, tau)
        assert not failed
        contact[step] = terms["gait_contact"]
        np.testing.assert_allclose(twin.values(data)[k:k + 2], _expected_clock(step), atol=1e-9)
    # standing on both feet (settled after the drop): at 0.3 of the cycle the right foot should swing; at 0.525
    # both feet are in stance (the left's 55% is not over, the right's began)
    assert (contact[12], contact[21]) == (0.5, 1.0)


def test_options_that_need_each_other_fail_in_one_line():
    from horde.sim.fields import FieldError

    cfg = copy.deepcopy(get_task("g1-velocity").config)
    cfg.gait_clock = False
    with pytest.raises(FieldError, match=r"^task.reward_scales.gait_contact reads the gait clock: set "):
        make("g1-velocity", num_envs=1, config=cfg)
    cfg = copy.deepcopy(get_task("quadruped").config)
    cfg.vx_curriculum = True
    cfg.reward_scales = {k: v for k, v in cfg.reward_scales.items() if k != "track_lin_vel"}
    with pytest.raises(FieldError, match=r"^task.vx_curriculum=true widens the vx range on the track_lin_vel "):
        make("quadruped", num_envs=1, config=cfg)


# --- the vx curriculum ----------------------------------------------------------------------------------------------
def _finish_episodes(env, count: int, track_share: float) -> None:
    """Pretend ``count`` episodes finished with this share of the best track_lin_vel sum (full length)."""
    cfg = env.cfg
    best = cfg.reward_scales["track_lin_vel"] * cfg.control_dt * cfg.episode_length
    stats = wp.to_torch(env._stats)
    stats.zero_()
    stats[STATS_EPISODES] = count
    stats[STATS_TERMS + env.term_names.index("track_lin_vel")] = count * track_share * best


def test_the_vx_curriculum_widens_only_when_tracking_is_good(env):
    start = env.vx_range.clone()
    try:
        assert env.vx_range.tolist() == [0.0, 0.5]
        env.pop_episode_stats()  # no episode: no change
        assert env.vx_range.tolist() == [0.0, 0.5]
        _finish_episodes(env, 10, 0.5)  # poor tracking (or falls): no change
        out = env.pop_episode_stats()
        assert env.vx_range.tolist() == [0.0, 0.5]
        assert (out["curriculum/vx_min"], out["curriculum/vx_max"]) == (0.0, 0.5)
        _finish_episodes(env, 10, 0.9)  # good tracking: one step wider at each end
        out = env.pop_episode_stats()
        assert env.vx_range.tolist() == pytest.approx([-0.1, 0.6])
        assert out["curriculum/vx_max"] == pytest.approx(0.6)
        from horde.train.tblog import iteration_scalars

        logged = iteration_scalars(stats=out, losses={}, split={}, steps=1, iter_s=1.0, learning_rate=0.0,
                                   noise_std=1.0)
        assert logged["curriculum/vx_max"] == pytest.approx(0.6), "TensorBoard gets the range"
        for _ in range(20):  # never past the configured range
            _finish_episodes(env, 10, 0.95)
            env.pop_episode_stats()
        assert env.vx_range.tolist() == pytest.approx(env.cfg.command_vx)
        env.vx_range.copy_(torch.tensor([0.2, 0.3]))
        env.reset()  # commands are drawn from the current range (or zero: standing)
        vx = env.command[:, 0]
        assert ((vx == 0) | ((vx >= 0.2) & (vx <= 0.3))).all(), vx
        assert "vx_range" in env.get_env_state()
    finally:
        env.vx_range.copy_(start)


# --- the push curriculum --------------------------------------------------------------------------------------------
def _pushed_quadruped(curriculum: bool, push_velocity: float = 0.5, **fields):
    """The quadruped pushed every step; ``fields`` set more of the task config (``push_curriculum_*``)."""
    cfg = copy.deepcopy(get_task("quadruped").config)
    cfg.randomization.enabled, cfg.randomization.push_interval = True, cfg.control_dt  # a push every step
    cfg.randomization.push_velocity, cfg.push_curriculum = push_velocity, curriculum
    for k, v in fields.items():
        setattr(cfg, k, v)
    return make("quadruped", num_envs=2, seed=0, config=cfg)


def _finish_long_episodes(env, count: int, length_share: float) -> None:
    """Pretend ``count`` episodes finished, each ``length_share`` of a full episode long."""
    stats = wp.to_torch(env._stats)
    stats.zero_()
    stats[STATS_EPISODES] = count
    stats[STATS_LENGTH] = count * length_share * env.cfg.episode_length


def _obs_after(env, steps: int = 10) -> torch.Tensor:
    for _ in range(steps):
        env.step(torch.zeros(env.num_envs, env.num_actions))
    return env.obs.clone()


def test_the_push_curriculum_grows_the_pushes_only_when_episodes_last():
    from horde.sim.fields import FieldError

    env = _pushed_quadruped(True)
    assert env.push_velocity.tolist() == [0.0] and "push_velocity" in env.get_env_state()
    env.pop_episode_stats()  # no episode: no change
    _finish_long_episodes(env, 10, 0.5)  # short episodes (falls): no change
    assert env.pop_episode_stats()["curriculum/push_velocity"] == 0.0
    _finish_long_episodes(env, 10, 0.9)  # long episodes: one step more
    assert env.pop_episode_stats()["curriculum/push_velocity"] == pytest.approx(0.1)
    for _ in range(10):  # never past the task's push_velocity
        _finish_long_episodes(env, 10, 1.0)
        env.pop_episode_stats()
    assert env.push_velocity.tolist() == pytest.approx([0.5])
    # the recorded step reads the value from device memory: at 0 the pushes do nothing (the same trajectory as
    # pushes of velocity 0, which draw the same random numbers), grown they push
    env.push_velocity.fill_(0.0)
    env.reset()
    calm = _pushed_quadruped(False, push_velocity=0.0)
    calm.reset()
    assert torch.equal(_obs_after(env), _obs_after(calm))
    env.push_velocity.fill_(0.5)
    assert not torch.equal(_obs_after(env), _obs_after(calm))
    env.push_velocity.fill_(0.3)  # short episodes never shrink the pushes of a curriculum that only grows
    _finish_long_episodes(env, 10, 0.5)
    assert env.pop_episode_stats()["curriculum/push_velocity"] == pytest.approx(0.3)
    cfg = copy.deepcopy(get_task("quadruped").config)
    cfg.randomization.push_interval, cfg.push_curriculum = 0.0, True
    with pytest.raises(FieldError, match=r"^task.push_curriculum=true grows the randomization's pushes: set .*, "
                                         r"or task.push_curriculum=false$"):
        make("quadruped", num_envs=1, config=cfg)


def test_the_push_curriculum_that_shrinks_holds_the_pushes_where_episodes_last_the_threshold():
    env = _pushed_quadruped(True, push_curriculum_shrink=True, push_curriculum_threshold=0.6,
                            push_curriculum_start=0.2, push_curriculum_step=0.1)
    assert env.push_velocity.tolist() == pytest.approx([0.2])
    env.pop_episode_stats()  # no episode finished: no change
    assert env.push_velocity.tolist() == pytest.approx([0.2])
    _finish_long_episodes(env, 10, 0.55)  # under the threshold: one step down
    assert env.pop_episode_stats()["curriculum/push_velocity"] == pytest.approx(0.1)
    for _ in range(3):  # never below zero
        _finish_long_episodes(env, 10, 0.1)
        env.pop_episode_stats()
    assert env.push_velocity.tolist() == [0.0]
    _finish_long_episodes(env, 10, 0.6)  # at the threshold: one step up
    assert env.pop_episode_stats()["curriculum/push_velocity"] == pytest.approx(0.1)


# --- export ---------------------------------------------------------------------------------------------------------
def test_a_tiny_legs_only_run_exports_and_verifies(tmp_path):
    """policy.json describes the 12 acting joints per column and the held ones with their hold; rung 3 (plain
    MuJoCo) runs at the randomization's nominal physics with its pushes (tests/integration/test_deploy_sim2sim.py
    checks it further); the Unitree deploy's dry run passes (gait clock counted on the robot side, held motors
    commanded)."""
    import json
    from pathlib import Path

    from clihelp import run_main

    from horde.deploy import export_run

    assert run_main("train", "task=g1-velocity", "num_envs=8", "max_iterations=1", "task.episode_length=40",
                     f"run_root={tmp_path}") == 0
    (run,) = (tmp_path / "g1-velocity").iterdir()
    report = export_run(run, sim2sim_episodes=2)
    assert report.passed, report.lines
    spec = json.loads(Path(report.json_path).read_text())
    robot = resolve_robot("g1")
    legs = list(robot.leg_joints)
    a = spec["action"]
    assert a["names"] == legs
    assert a["offset"] == pytest.approx(list(robot.default_joint_pos[:12]))
    assert len(a["scale"]) == len(spec["pd_gains"]["kp"]) == len(spec["effort_limits"]) == 12
    assert spec["pd_gains"]["kp"] == pytest.approx(list(robot.stiffness[:12]))
    held = spec["held_joints"]  # from the Actuation the world ran: the waist and arms, held by PD at the pose
    assert held["names"] == list(robot.joints[12:]) and held["target"] == pytest.approx(robot.default_joint_pos[12:])
    assert held["kp"] == pytest.approx(robot.stiffness[12:]) and held["kd"] == pytest.approx(robot.damping[12:])
    terms = {t["name"]: t for t in spec["observation"]["terms"]}
    assert terms["pos_left_shoulder_pitch_joint"]["offset"] == pytest.approx(0.2)
    assert "gait_phase_sin" in terms and spec["task_config"]["action_squash"] == "tanh"
    rung3 = report.ladder["sim_to_sim"]
    assert rung3 is not None and rung3["details"]["physics"] == "nominal", report.ladder["skipped"]
    import subprocess
    import sys

    dry = subprocess.run([sys.executable, "-I", "-B", "deploy_unitree.py", "--dry-run"], capture_output=True,
                         text=True, cwd=report.bundle_dir, timeout=300)
    # deploy_unitree counts the gait clock itself and commands the 17 held motors (a motor left uncommanded goes
    # limp on the robot): the replay of the recording matches, every held slot carries its hold
    assert dry.returncode == 0, dry.stdout[-1500:] + dry.stderr[-1500:]
    assert "PASS" in dry.stdout and "held_joints" in dry.stdout


# --- the walking benchmark's baseline and floor (benchmarks/learn_g1.py) -------------------------------------------
def test_the_benchmark_scores_standing_still_on_the_same_commands():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import learn_g1

    cfg = get_task("g1-velocity").config
    zero = learn_g1.walk_figures(lambda obs: torch.zeros(obs.shape[0], 12), cfg, 0, num_envs=4, steps=6, settle=2)
    # forward commands 0, 0.27, 0.53, 0.8 m/s: a robot that stays up without moving is off by 0.4 on average
    assert zero["standing_still_error_mps"] == pytest.approx(0.4)
    assert zero["up_fraction"] == 1.0 and 0.0 < zero["lin_vel_error_mps"] < 0.8
    floor = learn_g1.targets(0.4)
    assert floor[0].threshold == pytest.approx(0.2) and floor[1].threshold == 0.95
    point = {"standing_still_error_mps": 0.4, "up_fraction": 0.97, "lin_vel_error_mps": 0.19}
    assert learn_g1.reached(point)
    assert not learn_g1.reached({**point, "lin_vel_error_mps": 0.21})  # not half of standing still's
    assert not learn_g1.reached({**point, "up_fraction": 0.94})  # falls too often
    assert not learn_g1.reached({"standing_still_error_mps": 0.4, "up_fraction": 1.0, "lin_vel_error_mps": 0.4})


def test_the_benchmark_evaluates_with_the_tasks_pushes_and_samples_as_ppo_does():
    """Training may push more often (a recipe probe); the floor's evaluation keeps the task's own pushes. The
    sampled policy (a diagnosis) adds the training noise to the deterministic actions."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import learn_g1

    from horde.train.config import compose

    trained = compose(["task=g1-velocity", "task.randomization.push_interval=2.0"])[0].task
    floor = {"push_interval": 8.0, "push_velocity": 0.5}
    evaluated = learn_g1.with_pushes(trained, floor)
    assert evaluated.randomization.push_interval == 8.0 and trained.randomization.push_interval == 2.0
    # the tuned config trains with the push curriculum that shrinks; the floor's pushes are at their full velocity
    assert trained.push_curriculum and trained.push_curriculum_shrink and not evaluated.push_curriculum
    torch.manual_seed(0)  # the bars below are 4 standard errors wide; the seed only keeps the draw the same
    mean = torch.full((4000, 3), 0.3)
    sampled = learn_g1.SampledPolicy(lambda obs: mean, torch.tensor([0.0, 0.5, 1.0]))(torch.zeros(4000, 5))
    assert torch.equal(sampled[:, 0], mean[:, 0])  # no noise where the std is 0
    assert sampled[:, 1:].mean(0).sub(0.3).abs().max() < 0.06
    assert sampled[:, 1:].std(0).sub(torch.tensor([0.5, 1.0])).abs().max() < 0.05
    figures = learn_g1.training_figures({"stats": {"length_mean": 250.0, "termination_rate": 0.5}}, trained)
    assert figures["train_episode_s"] == pytest.approx(5.0) and figures["train_termination_rate"] == 0.5
    assert figures["train_vx_range"] is None and figures["train_reward"] is None  # no curriculum, no terms logged
    assert figures["train_push_velocity"] is None
    stats = {"length_mean": 250.0, "curriculum/vx_min": 0.0, "curriculum/vx_max": 0.6, "reward/terminated": -4.0,
             "reward/track_lin_vel": 12.34567, "curriculum/push_velocity": 0.2}
    figures = learn_g1.training_figures({"stats": stats}, trained)
    assert figures["train_vx_range"] == [0.0, 0.6] and figures["train_push_velocity"] == 0.2
    assert figures["train_reward"] == {"terminated": -4.0, "track_lin_vel": 12.3457}


def test_g1_trains_exports_and_runs_in_mujoco_c(tmp_path):
    """Through the CLI as a user would: train (1 iteration), then the export ladder with rung 3 in MuJoCo's C
    engine (the G1 twin runs the task's own Warp terms), then deploy_unitree's dry run. Every joint acts, nothing is
    randomized and there is no gait clock (the recipe's own export, legs only with the clock and the randomization:
    test_a_tiny_legs_only_run_exports_and_verifies)."""
    import json
    from pathlib import Path

    from clihelp import run_main

    from horde.deploy import export_run

    assert run_main("train", "task=g1-velocity", "num_envs=8", "max_iterations=1", "task.episode_length=40",
                     "task.action_joints=all", "task.randomization.enabled=false", "task.push_curriculum=false",
                     "task.gait_clock=false",
                     "task.reward_scales.gait_contact=0", f"run_root={tmp_path}") == 0
    (run,) = (tmp_path / "g1-velocity").iterdir()
    report = export_run(run, sim2sim_episodes=4)
    rung3 = report.ladder["sim_to_sim"]
    assert report.passed and rung3 is not None, report.lines
    assert rung3["episodes"] == 4 and np.isfinite(rung3["mujoco_mean_return"])
    spec = json.loads(Path(report.json_path).read_text())
    assert spec["action"]["names"] == list(resolve_robot("g1").joints)
    assert spec["pd_gains"]["kp"] == pytest.approx(list(resolve_robot("g1").stiffness))
    assert set(spec["task_config"]["reward_scales"]) >= {"feet_swing_height", "feet_slip", "terminated"}
    import subprocess
    import sys

    dry = subprocess.run([sys.executable, "-I", "-B", "deploy_unitree.py", "--dry-run"], capture_output=True,
                         text=True, cwd=report.bundle_dir, timeout=300)  # G1 motor order, unitree_hg slots
    assert dry.returncode == 0 and dry.stdout.startswith("dry run (g1, "), dry.stdout + dry.stderr
