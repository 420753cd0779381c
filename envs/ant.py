"""Ant: run forward (+x) as fast as possible. Newton's ``nv_ant.xml`` (loaded from the installed newton package).

Observations: torso height [m], gravity direction in the torso frame, torso linear [m/s] and angular [rad/s]
velocity in the torso frame, 8 joint angles [rad], 8 joint rates [rad/s], the 8 previous actions. Actions: joint
torques in [-1, 1] x ``action_scale`` [N m] (``action_mode=torque``, the classic Ant), or PD position targets
(``action_mode=pd``). 50 Hz control (2 x 10 ms substeps), 1000 steps. The episode fails when the torso drops below
``termination_height`` or turns upside down, or when the physics health check flags the world.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import warp as wp

from horde.envs.core import TaskConfig, WarpTaskEnv
from horde.envs.episode import clear_episode, close_step, weighted_reward
from horde.envs.registry import TaskSpec, register_task
from horde.sim.device import resolve_device
from horde.sim.newton_world import Actuation, NewtonWorld, SimConfig, load_mjcf, set_joint_positions

JOINTS = ("hip_1", "ankle_1", "hip_2", "ankle_2", "hip_3", "ankle_3", "hip_4", "ankle_4")
TERMS = ("forward_vel", "alive", "ctrl", "terminated")
ROOT_COORDS = ("root_x", "root_y", "root_z", "root_qx", "root_qy", "root_qz", "root_qw")
ROOT_DOFS = 6
OBS_NAMES = ("torso_z", "gravity_x", "gravity_y", "gravity_z", "lin_vel_x", "lin_vel_y", "lin_vel_z", "ang_vel_x",
             "ang_vel_y", "ang_vel_z", *(f"pos_{j}" for j in JOINTS), *(f"vel_{j}" for j in JOINTS),
             *(f"last_action_{j}" for j in JOINTS))


def _scales() -> dict[str, float]:
    return {"forward_vel": 1.0, "alive": 0.5, "ctrl": -0.05, "terminated": -1.0}


def _sim() -> SimConfig:
    # MuJoCo-Warp: the only solver measured stable on this ant under full random torques at a 10 ms substep
    # (XPBD and Featherstone went non-finite within 20 control steps at 5 ms and 2 ms: the ant's light limbs
    # rely on joint armature, which XPBD ignores); see benchmarks/newton_throughput.py and the report.
    return SimConfig(solver="mujoco")


@dataclass(kw_only=True)
class AntConfig(TaskConfig):
    """Ant model, actuation, termination and reward scales."""

    episode_length: int = 1000
    sim_dt: float = 0.01
    decimation: int = 2
    sim: SimConfig = field(default_factory=_sim)
    """Newton world: solver and its settings, health-check bounds."""
    action_mode: str = "torque"
    """torque (the classic Ant: action x action_scale N m) or pd (position targets around default_joint_pos)."""
    action_scale: list[float] = field(default_factory=lambda: [15.0] * 8)
    """Per joint: torque at action +1 [N m] (torque mode; nv_ant's motor gear) or target offset [rad] (pd mode)."""
    joint_stiffness: list[float] = field(default_factory=lambda: [20.0] * 8)
    """PD stiffness per joint [N m/rad] (pd mode)."""
    joint_damping: list[float] = field(default_factory=lambda: [1.0] * 8)
    """PD damping per joint [N m s/rad] (pd mode)."""
    effort_limit: list[float] = field(default_factory=lambda: [15.0] * 8)
    """Joint torques are clipped to +- this [N m]."""
    default_joint_pos: list[float] = field(default_factory=lambda: [0.0, 1.0, 0.0, -1.0, 0.0, -1.0, 0.0, 1.0])
    """Joint angles of the initial pose [rad] (nv_ant's init_qpos), in ``JOINTS`` order."""
    init_joint_pos_range: float = 0.1
    """Initial joint angles are default +- this [rad] (clipped to the joint limits)."""
    init_joint_vel_range: float = 0.1
    """Initial joint and root velocities are +- this [rad/s, m/s]."""
    termination_height: float = 0.31
    """The episode fails when the torso is lower than this [m]."""
    min_up: float = 0.0
    """The episode fails when the torso's up axis has a world-z component below this (0: upside down)."""
    reward_scales: dict[str, float] = field(default_factory=_scales)


@wp.struct
class AntTask:
    """Per-task constants read by the kernels."""

    root: int
    q0: int
    qd0: int
    termination_height: float
    min_up: float
    max_episode_length: int


@wp.func
def _write_obs(t: AntTask, i: int, ok: bool, joint_q: wp.array2d(dtype=float), joint_qd: wp.array2d(dtype=float),
               body_q: wp.array2d(dtype=wp.transform), root_vel_base: wp.array2d(dtype=float),
               last_actions: wp.array2d(dtype=float), state: wp.array2d(dtype=float), obs: wp.array2d(dtype=float)):
    """Observation row i (zeros when the world is not ``ok``) and the state row (joint coordinates)."""
    tf = body_q[i, t.root]
    g = wp.quat_rotate_inv(wp.transform_get_rotation(tf), wp.vec3(0.0, 0.0, -1.0))
    obs[i, 0] = wp.where(ok, wp.transform_get_translation(tf)[2], 0.0)
    for k in range(3):
        obs[i, 1 + k] = wp.where(ok, g[k], 0.0)
    for k in range(6):
        obs[i, 4 + k] = root_vel_base[i, k]
    nj = last_actions.shape[1]
    for k in range(nj):
        obs[i, 10 + k] = wp.where(ok, joint_q[i, t.q0 + k], 0.0)
        obs[i, 10 + nj + k] = wp.where(ok, joint_qd[i, t.qd0 + k], 0.0)
        obs[i, 10 + 2 * nj + k] = last_actions[i, k]
    for k in range(state.shape[1]):
        state[i, k] = wp.where(ok, joint_q[i, k], 0.0)


@wp.kernel(enable_backward=False)
def ant_post_step(
    t: AntTask,
    scales: wp.array(dtype=float),
    actions: wp.array2d(dtype=float),
    joint_q: wp.array2d(dtype=float),
    joint_qd: wp.array2d(dtype=float),
    body_q: wp.array2d(dtype=wp.transform),
    body_qd: wp.array2d(dtype=wp.spatial_vector),
    root_vel_base: wp.array2d(dtype=float),
    unstable: wp.array(dtype=wp.bool),
    episode_length: wp.array(dtype=wp.int32),
    episode_return: wp.array(dtype=float),
    episode_sums: wp.array2d(dtype=float),
    stats: wp.array(dtype=wp.float64),
    last_actions: wp.array2d(dtype=float),
    state: wp.array2d(dtype=float),
    obs: wp.array2d(dtype=float),
    final_obs: wp.array2d(dtype=float),
    reward: wp.array(dtype=float),
    terms: wp.array2d(dtype=float),
    terminated: wp.array(dtype=wp.bool),
    truncated: wp.array(dtype=wp.bool),
    dones: wp.array(dtype=wp.bool),
):
    """Reward terms, failure, time-out, statistics and observations of env i (its physics reset comes next)."""
    i = wp.tid()
    ok = not unstable[i]
    tf = body_q[i, t.root]
    z = wp.transform_get_translation(tf)[2]
    rot = wp.transform_get_rotation(tf)
    up_z = 1.0 - 2.0 * (rot[0] * rot[0] + rot[1] * rot[1])
    failed = (not ok) or z < t.termination_height or up_z < t.min_up
    vx = wp.where(ok, wp.spatial_top(body_qd[i, t.root])[0], 0.0)
    ctrl = float(0.0)
    for k in range(actions.shape[1]):
        a = wp.clamp(actions[i, k], -1.0, 1.0)
        ctrl += a * a
        last_actions[i, k] = a
    fail = wp.where(failed, 1.0, 0.0)
    terms[i, 0] = vx
    terms[i, 1] = 1.0 - fail
    terms[i, 2] = ctrl
    terms[i, 3] = fail
    r = weighted_reward(i, scales, terms, episode_sums)
    _write_obs(t, i, ok, joint_q, joint_qd, body_q, root_vel_base, last_actions, state, obs)
    done = close_step(i, r, failed, t.max_episode_length, episode_length, episode_return, episode_sums,
                      reward, terminated, truncated, dones, stats)
    if done:
        for k in range(obs.shape[1]):
            final_obs[i, k] = obs[i, k]
        for k in range(actions.shape[1]):
            last_actions[i, k] = 0.0


@wp.kernel(enable_backward=False)
def ant_observe(
    t: AntTask,
    mask: wp.array(dtype=wp.bool),
    joint_q: wp.array2d(dtype=float),
    joint_qd: wp.array2d(dtype=float),
    body_q: wp.array2d(dtype=wp.transform),
    root_vel_base: wp.array2d(dtype=float),
    last_actions: wp.array2d(dtype=float),
    state: wp.array2d(dtype=float),
    obs: wp.array2d(dtype=float),
):
    """Observations of the envs in ``mask`` (just reset: root twist zeroed until the next health check)."""
    i = wp.tid()
    if mask[i]:
        for k in range(6):
            root_vel_base[i, k] = 0.0
        _write_obs(t, i, True, joint_q, joint_qd, body_q, root_vel_base, last_actions, state, obs)


@wp.kernel(enable_backward=False)
def ant_reset_episode(
    mask: wp.array(dtype=wp.bool),
    episode_length: wp.array(dtype=wp.int32),
    episode_return: wp.array(dtype=float),
    episode_sums: wp.array2d(dtype=float),
    last_actions: wp.array2d(dtype=float),
    dones: wp.array(dtype=wp.bool),
):
    """Explicit reset of the episode counters of the envs in ``mask``."""
    i = wp.tid()
    if mask[i]:
        clear_episode(i, episode_length, episode_return, episode_sums)
        dones[i] = False
        for k in range(last_actions.shape[1]):
            last_actions[i, k] = 0.0


def build_world(cfg: AntConfig, num_envs: int, device: str) -> NewtonWorld:
    """The batched ant world of ``cfg`` on ``device``."""
    import newton.examples

    robot = load_mjcf(newton.examples.get_asset("nv_ant.xml"), contact_ke=cfg.sim.contact_ke, solver=cfg.sim.solver)
    set_joint_positions(robot, JOINTS, cfg.default_joint_pos)
    if robot.joint_coord_count != len(ROOT_COORDS) + len(JOINTS):
        raise ValueError(f"nv_ant.xml has {robot.joint_coord_count} coordinates; this task expects 15")
    nj = len(JOINTS)
    actuation = Actuation(mode=cfg.action_mode, scale=cfg.action_scale, offset=cfg.default_joint_pos,
                          stiffness=cfg.joint_stiffness, damping=cfg.joint_damping, effort_limit=cfg.effort_limit)
    qr, vr = cfg.init_joint_pos_range, cfg.init_joint_vel_range
    return NewtonWorld(robot, num_envs=num_envs, device=device, sim=cfg.sim, sim_dt=cfg.sim_dt,
                       substeps=cfg.decimation, ground=True, actuated_joints=JOINTS, actuation=actuation,
                       root_body=0, q_noise=[0.0] * len(ROOT_COORDS) + [qr] * nj, qd_noise=[vr] * (ROOT_DOFS + nj))


class AntEnv(WarpTaskEnv):
    """Batched Ant on a Newton solver (``cfg.sim.solver``)."""

    obs_names = OBS_NAMES
    action_names = JOINTS
    state_names = ROOT_COORDS + JOINTS
    term_names = TERMS
    step_kernels = (ant_post_step, ant_observe)

    def __init__(self, cfg: AntConfig, *, num_envs: int, device: str = "cpu", seed: int = 0) -> None:
        d = resolve_device(device).warp
        self.world = build_world(cfg, num_envs, d)
        self.world.warm_up()
        self.action_type = "position_target" if cfg.action_mode == "pd" else "torque"
        self.action_unit = "rad" if cfg.action_mode == "pd" else "N m"
        self._task = AntTask()
        self._task.root = self.world.root_body
        self._task.q0 = len(ROOT_COORDS)
        self._task.qd0 = ROOT_DOFS
        self._task.termination_height = cfg.termination_height
        self._task.min_up = cfg.min_up
        self._task.max_episode_length = cfg.episode_length
        self._last_actions = wp.zeros((num_envs, len(JOINTS)), dtype=float, device=d)
        self.step_kernels = self.step_kernels + self.world.kernels
        super().__init__(cfg, num_envs=num_envs, device=device, seed=seed)

    def action_scale(self) -> list[float]:
        return list(self.cfg.action_scale)

    def _launch_step(self) -> None:
        w, n, d = self.world, self.num_envs, self.dev.warp
        w.simulate(self._actions)
        w.inspect()
        wp.launch(ant_post_step, n, device=d, inputs=[
            self._task, self._reward_scales, self._actions, w._joint_q, w._joint_qd, w._body_q, w._body_qd,
            w.root_vel_base_array, w.unstable_array, self._episode_length, self._episode_return, self._episode_sums,
            self._stats], outputs=[self._last_actions, self._state, self._obs, self._final_obs, self._reward,
                                   self._terms, self._terminated, self._truncated, self._dones])
        w.reset(self._dones, self._rng)
        self._observe(self._dones)

    def _observe(self, mask: wp.array) -> None:
        w = self.world
        wp.launch(ant_observe, self.num_envs, device=self.dev.warp, inputs=[
            self._task, mask, w._joint_q, w._joint_qd, w._body_q, w.root_vel_base_array, self._last_actions],
            outputs=[self._state, self._obs])

    def _launch_reset(self) -> None:
        wp.launch(ant_reset_episode, self.num_envs, device=self.dev.warp, inputs=[self._reset_mask],
                  outputs=[self._episode_length, self._episode_return, self._episode_sums, self._last_actions,
                           self._dones])
        self.world.reset(self._reset_mask, self._rng)
        self._observe(self._reset_mask)

    # --- host side -------------------------------------------------------------------------------------------------
    def pop_episode_stats(self) -> dict[str, float]:
        out = super().pop_episode_stats()
        out["sim/unstable_resets"] = self.world.pop_unstable_count()
        return out

    def _resumable(self) -> dict[str, torch.Tensor]:
        return {**super()._resumable(), **self.world.physics_state(), "last_actions": wp.to_torch(self._last_actions)}


register_task("ant", TaskSpec(
    env_cls=AntEnv,
    config=AntConfig(),
    description="Newton nv_ant: run forward along +x; fails when the torso drops below 0.31 m or flips",
))
