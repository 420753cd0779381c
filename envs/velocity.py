"""Velocity tracking for any legged robot: follow a commanded base velocity (vx, vy, yaw rate), on flat or rough
terrain. One task, many robots: the robot is a config entry (:mod:`horde.envs.robots`; ``robot=quad12``, ``go2``,
``g1`` or one registered from outside horde), and the reward is a list of named terms (:data:`VELOCITY_TERMS`).

Observations (12 + 2 x joints + actions, then the options'): base linear [m/s] and angular [rad/s] velocity in the
base frame, gravity direction in the base frame, the command (vx [m/s], vy [m/s], yaw rate [rad/s]), joint angles
relative to the default pose [rad], joint rates [rad/s], the previous actions (clipped to [-1, 1]); with
``gait_clock`` sin and cos of the gait phase; the height scan, the depth image. Actions: PD position targets,
default pose + squash(action) x the robot's action scale [rad] (squash: clip, or tanh with ``action_squash=tanh``),
for every joint or, with ``action_joints=legs``, the leg joints (the others held at their default pose). 50 Hz
control (4 x 5 ms substeps), 20 s episodes. Commands are drawn per episode (and again every
``command_resample_s``) from their ranges; with ``vx_curriculum`` the vx range widens between iterations while
tracking is good.

Reward: ``reward_scales`` names the terms and their weights (per second: multiplied by the control period, as in
legged_gym and Isaac Lab); the keys are terms of :data:`VELOCITY_TERMS`, and their order is the order of the
episode statistics. Each term is one Warp function ``(x: Legged, i: int) -> float`` of env ``i``'s state, fused
into the step kernel (no launch per term) and run unchanged by the MuJoCo sim-to-sim twin
(:mod:`horde.deploy.sim2sim`). Adding a term is one :func:`velocity_term` definition and one ``reward_scales``
line. The episode fails when a failure-contact body (trunk, head, pelvis) touches the ground, the base tilts past
``max_tilt``, or the physics health check flags the world.

Tasks: ``quadruped`` and ``quadruped-rough`` (horde's Go2-like quad12; heightfield tiles with a terrain-level
curriculum and domain randomization), ``g1-velocity`` and ``g1-velocity-rough`` (Unitree G1, 29 DoF, from the
``mjlab`` wheel).
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Mapping

import numpy as np
import torch
import warp as wp

from horde.envs import velocity_obs
from horde.envs.articulated import ArticulatedTaskEnv
from horde.envs.curricula import CURRICULA
from horde.envs.obs_writer import past_width
from horde.envs.observations import columns_of
from horde.envs.robots import FootFrame, LeggedRobot, foot_frames, per_joint, resolve_robot
from horde.envs.velocity_config import (VelocityConfig, _g1_scales, _humanoid_scales, _scales,  # noqa: F401
                                        _sim, action_joints, check_options)  # (some re-exported)
from horde.envs.velocity_kernels import (VelocityTask, critic_history_kernel, critic_kernel,  # noqa: F401
                                         observe_kernel, post_step_kernel, pre_step_kernel, reset_episode_kernel,
                                         velocity_pre_step)
from horde.envs.velocity_terms import (CLOCK_OBS, EPISODE_EVENTS, ROOT_COORDS, ROOT_DOFS,  # noqa: F401
                                       VELOCITY_COMMANDS, VELOCITY_EVENTS, CommandRanges,
                                       VELOCITY_OBSERVATIONS, VELOCITY_TERMINATIONS, VELOCITY_TERMS, Legged,
                                       obs_names, velocity_term)
from horde.envs.events import reset_events_kernel
from horde.envs.velocity_twin import VelocityTwin
from horde.sim.actuation import Actuation
from horde.sim.depth_camera import DepthCamera
from horde.sim.device import resolve_device
from horde.sim.fields import FieldError
from horde.sim.newton_build import joint_dof_layout, load_mjcf, set_joint_positions
from horde.sim.newton_world import NewtonWorld
from horde.sim.spec import RobotEntity, Sensors, WorldSpec, world_from_spec
from horde.sim.randomize import actuation_ranges, apply_startup
from horde.sim.terrain import Terrain, scan_offsets

__all__ = ["VELOCITY_TERMS", "Legged", "VelocityConfig", "VelocityEnv", "VelocityTwin", "build_world", "obs_names",
           "post_step_kernel", "velocity_term"]

def _gains(cfg: VelocityConfig, robot: LeggedRobot) -> tuple[list[float], list[float], list[float]]:
    """Action scale, stiffness and damping per joint: the robot's, or the config's override for every joint, then
    ``joint_gains``' per-joint overrides."""
    n = len(robot.joints)
    pick = lambda over, own: [float(over)] * n if over is not None else list(own)  # noqa: E731
    stiffness, damping = pick(cfg.stiffness, robot.stiffness), pick(cfg.damping, robot.damping)
    for pattern, gains in cfg.joint_gains.items():
        try:
            hits = [j for j in robot.joints if re.fullmatch(pattern, j)]
        except re.error as exc:
            raise FieldError(f"task.joint_gains: '{pattern}' is not a regular expression ({exc})") from None
        if not hits:
            raise FieldError(f"task.joint_gains: '{pattern}' sets no joint; robot '{cfg.robot}''s joints: "
                             f"{', '.join(robot.joints)}")
        if (not isinstance(gains, (list, tuple)) or len(gains) != 2
                or not all(isinstance(g, (int, float)) and g >= 0 for g in gains)):
            raise FieldError(f"task.joint_gains['{pattern}']={gains}: give [stiffness, damping], both >= 0")
    # the first matching pattern wins, as in the robots' own per-joint tables; a joint no pattern names keeps its gain
    for out, col in ((stiffness, 0), (damping, 1)):
        out[:] = per_joint(robot.joints, {p: g[col] for p, g in cfg.joint_gains.items()}, default=out)
    return pick(cfg.action_scale, robot.action_scale), stiffness, damping


def build_world(cfg: VelocityConfig, num_envs: int, device: str, terrain: Terrain
                ) -> tuple[NewtonWorld, list[int], list[int], tuple[FootFrame, ...]]:
    """The batched world of ``cfg``'s robot on ``device``; the coordinate and dof index of each of the robot's
    joints (config order, matched to the MJCF's by name), and its feet as bodies and points on them."""
    robot_def = resolve_robot(cfg.robot)
    if robot_def.max_contacts > cfg.sim.max_contacts or robot_def.max_constraints > cfg.sim.max_constraints:
        # e.g. go2's box-shaped legs make several contacts each; the G1 has 34 capsules
        cfg = dataclasses.replace(cfg, sim=dataclasses.replace(
            cfg.sim, max_contacts=max(cfg.sim.max_contacts, robot_def.max_contacts),
            max_constraints=max(cfg.sim.max_constraints, robot_def.max_constraints, 6 * robot_def.max_contacts)))
    robot = load_mjcf(robot_def.mjcf_path(), contact_ke=cfg.sim.contact_ke, solver=cfg.sim.solver,
                      self_collisions=False, meshes=False)
    set_joint_positions(robot, robot_def.joints, robot_def.default_joint_pos)
    q_idx, qd_idx = joint_dof_layout(robot, robot_def.joints)
    import newton

    if robot.joint_type[0] != newton.JointType.FREE or min(q_idx) < len(ROOT_COORDS):
        raise ValueError(f"robot '{cfg.robot}': the velocity task needs a floating base (a free joint first in the "
                         "MJCF)")
    # joints the config does not list (a passive tail, a spring toe) stay unactuated: PD and observations skip them
    q_noise = [0.0] * robot.joint_coord_count
    for c in q_idx:
        q_noise[c] = cfg.init_joint_pos_range
    feet = foot_frames(robot, robot_def.feet)
    if robot_def.armature is not None:
        for d, a in zip(qd_idx, robot_def.armature):
            robot.joint_armature[d] = float(a)
    if robot_def.root_height is not None:
        robot.joint_q[2] = float(robot_def.root_height)
    scale, stiffness, damping = _gains(cfg, robot_def)
    if cfg.dc_motor and robot_def.velocity_limit is None:
        raise FieldError(f"task.dc_motor=true: robot '{cfg.robot}' states no velocity_limit for its motors")
    actuation = Actuation(mode="pd", scale=scale, offset=robot_def.default_joint_pos, stiffness=stiffness,
                          damping=damping, effort_limit=robot_def.effort_limit,
                          velocity_limit=robot_def.velocity_limit if cfg.dc_motor else None,
                          network=cfg.actuator_net)
    contact_bodies = (*(f.body for f in feet),  # geoms and sites stand for their bodies
                      *(f.body for f in foot_frames(robot, robot_def.undesired_contacts, "undesired contact")),
                      *(f.body for f in foot_frames(robot, robot_def.failure_contacts, "failure contact")))
    with warnings.catch_warnings():  # go2's authored 1 mm geom margins are zeroed by MuJoCo-Warp: say it once
        warnings.filterwarnings("once", message=".*authored margin.*")
        spec = WorldSpec(
            robot=RobotEntity(builder=robot, actuated_joints=tuple(robot_def.joints), actuation=actuation,
                              q_noise=tuple(q_noise), qd_noise=(0.0,) * robot.joint_dof_count,
                              yaw_range=cfg.init_yaw_range),
            terrain=terrain, sensors=Sensors(contact_bodies=tuple(contact_bodies),
                                             imu_site=robot_def.imu_site if cfg.imu else None),
            sim_dt=cfg.sim_dt, substeps=cfg.decimation)
        world = world_from_spec(spec, sim=cfg.sim, num_envs=num_envs, device=device)
    return world, list(q_idx), list(qd_idx), feet


class VelocityEnv(ArticulatedTaskEnv):
    """Batched velocity tracking for a legged robot on Newton (MuJoCo-Warp), flat or rough terrain."""

    step_kernels = (velocity_pre_step,)
    term_set = VELOCITY_TERMS
    """Where ``reward_scales``' keys are looked up."""
    termination_set = VELOCITY_TERMINATIONS
    """Where ``terminations``' names are looked up."""
    command_set = VELOCITY_COMMANDS
    """Where ``command`` is looked up."""
    observation_set = VELOCITY_OBSERVATIONS
    """Where ``extra_observations``' names are looked up."""
    event_set = VELOCITY_EVENTS
    """Where ``events``' names are looked up."""
    own_events = ("push", *EPISODE_EVENTS, "link_mass", "friction")
    """The events the env runs of its own (the randomization's), whose parameters ``task.event_params`` may set."""
    action_type = "position_target"
    action_unit = "rad"

    @staticmethod
    def check_observations(cfg: VelocityConfig) -> None:
        """``task.extra_observations`` and ``task.observation_params`` (a user term's parameters; any term's noise,
        scale, clip, history, delay) name the config's terms, checked before an env is built (one line each)."""
        velocity_obs.check_observation_params(cfg)

    def __init__(self, cfg: VelocityConfig, *, num_envs: int, device: str = "cpu", seed: int = 0) -> None:
        d = resolve_device(device).warp
        velocity_obs.check_observation_params(cfg)
        self.robot = resolve_robot(cfg.robot)
        terms = VELOCITY_TERMS.resolve(list(cfg.reward_scales), cfg.reward_params)
        # a bad name or parameter fails here, before the world is built
        VELOCITY_TERMINATIONS.resolve(list(cfg.terminations), cfg.termination_params)
        dr = cfg.randomization
        pushes = dr.enabled and dr.push_interval > 0
        self.event_names = (("push",) if pushes else ()) + tuple(cfg.events)
        """Interval events in the order they run: the randomization's push, then ``task.events``."""
        events = VELOCITY_EVENTS.resolve_mode(self.event_names, "interval", "task.events", cfg.event_params)
        self.reset_event_names = tuple(cfg.reset_events)
        """Reset events in the order they run (``task.reset_events``)."""
        reset_events = VELOCITY_EVENTS.resolve_mode(self.reset_event_names, "reset", "task.reset_events",
                                                    cfg.event_params)
        self.episode_event_names = EPISODE_EVENTS + tuple(cfg.episode_events)
        """Episode events in the order they run: the randomization's action delay and actuation draws (always;
        nothing random when it is off but a delay of 0), then ``task.episode_events``."""
        episode_events = VELOCITY_EVENTS.resolve_mode(self.episode_event_names, "episode", "task.episode_events",
                                                      cfg.event_params)
        self.startup_event_names = (("link_mass", "friction") if dr.enabled else ()) + tuple(cfg.startup_events)
        """Startup events in the order they ran: the randomization's draws, then ``task.startup_events``."""
        startup_events = VELOCITY_EVENTS.resolve_mode(self.startup_event_names, "startup", "task.startup_events",
                                                      cfg.event_params)
        VELOCITY_EVENTS.check_params(self.event_names + self.reset_event_names + self.episode_event_names
                                     + self.startup_event_names, cfg.event_params)
        control_dt = cfg.sim_dt * cfg.decimation
        bad = [f"{n}={v}" for n, v in cfg.events.items() if not float(v) > 0]
        if bad:
            raise FieldError(f"task.events: every interval must be > 0 seconds, got {', '.join(bad)}")
        event_steps = (([int(round(dr.push_interval / control_dt))] if pushes else [])
                       + [max(int(round(float(v) / control_dt)), 1) for v in cfg.events.values()])
        self.termination_names = tuple(cfg.terminations)
        check_options(cfg)
        joints = self.robot.joints
        acting = action_joints(cfg, self.robot)
        points = scan_offsets(cfg.height_scan) if cfg.height_scan.enabled else np.zeros((0, 2), np.float32)
        cam = cfg.depth_camera
        self.extras = VELOCITY_OBSERVATIONS.resolve(list(cfg.extra_observations),
                                                    velocity_obs.split_params(cfg.observation_params)[1])
        """The user's observation terms (:class:`horde.envs.observations.ObservationFunction`), after the rest."""
        self.action_names = acting
        self.state_names, self.term_names = ROOT_COORDS + joints, tuple(cfg.reward_scales)
        self.terrain = Terrain(cfg.terrain)
        self.world, q_idx, qd_idx, self.feet = build_world(cfg, num_envs, d, self.terrain)
        """``self.feet``: each foot as a body and a point on it (:class:`horde.envs.robots.FootFrame`)."""
        self.randomization = apply_startup(self.world, dr, seed=seed, events=startup_events)
        """What the startup events drew (the randomization's: ``mass``, ``base_mass_delta``, ``friction``)."""
        self.world.warm_up()
        levels = self.terrain.initial_levels(num_envs, seed)
        self.world.spawn_origin.copy_(torch.as_tensor(self.terrain.origins(levels)))
        on = dr.enabled
        control_dt = cfg.sim_dt * cfg.decimation
        t = VelocityTask()
        t.root, t.dt, t.max_episode_length = self.world.root_body, control_dt, cfg.episode_length
        t.resample_steps = max(int(round(cfg.command_resample_s / control_dt)), 0)
        self._max_delay = dr.max_action_delay if on else 0
        noise = [v * dr.obs_noise_scale if on else 0.0 for v in cfg.obs_noise]
        self.obs_noise = dict(zip(("base_lin_vel", "base_ang_vel", "projected_gravity", "joint_pos", "joint_vel"),
                                  noise))
        """Each observation term's training noise (half-width of its uniform draw, raw units): ``task.obs_noise``
        times the randomization's ``obs_noise_scale``, 0 with randomization off."""
        c = self._cmd = CommandRanges()
        c.standing_fraction = cfg.standing_fraction
        c.heading_fraction, c.heading_stiffness = cfg.heading_fraction, cfg.heading_stiffness
        t.rough = int(cfg.terrain.kind == "rough")
        hs = cfg.height_scan
        self.obs_noise["height_scan"] = hs.noise * dr.obs_noise_scale if on else 0.0
        self.camera = (DepthCamera(self.world, cam, noise_scale=dr.obs_noise_scale if on else 0.0)
                       if cam.enabled else None)
        """The depth camera (:class:`horde.sim.depth_camera.DepthCamera`; its ``depth`` view is the image), or None."""
        t.squash = int(cfg.action_squash == "tanh")
        t.clock_n, t.gait_period = (len(CLOCK_OBS) if cfg.gait_clock else 0), cfg.gait_period
        t.q_index, self._qd_index = wp.array(q_idx, dtype=int, device=d), wp.array(qd_idx, dtype=int, device=d)
        self._depth = self.camera.image if self.camera is not None else wp.zeros((1, 1, 1), dtype=float, device=d)
        self._task, self._grid, self._ranges = t, self.terrain.grid(d), actuation_ranges(dr)
        self.scan_points = points
        """Height-scan points in the base's yaw frame [P, 2] [m] (x forward, y left), the order of the
        ``height_scan_<k>`` observations; empty when the scan is off."""
        nj, na, nf = len(joints), len(acting), len(self.robot.feet)
        w = self.world
        with wp.ScopedDevice(d):
            self._command = wp.zeros((num_envs, 3), dtype=float)
            self._air_time = wp.zeros((num_envs, nf), dtype=float)
            self._contact_time = wp.zeros((num_envs, nf), dtype=float)
            self._last_actions = wp.zeros((num_envs, na), dtype=float)
            self._failed = wp.zeros(num_envs, dtype=wp.bool)
            self._history = wp.zeros((num_envs, self._max_delay + 1, na), dtype=float)
            self._delayed = wp.zeros((num_envs, na), dtype=float)
            self._applied = wp.zeros((num_envs, nj), dtype=float)
            """Every joint's action [num_envs, joints] as the actuation law takes it: the acting joints' delayed,
            squashed actions; 0 (the default pose) for the held joints."""
            self._act_joint = wp.array([joints.index(j) for j in acting], dtype=int)
            self._gait_phase = wp.zeros(num_envs, dtype=float)
            self._gait_offset = wp.array(list(self.robot.foot_phase_offsets), dtype=float)
            c.vx = wp.array(self._vx_start(cfg), dtype=float)
            c.vy, c.yaw = wp.array(cfg.command_vy, dtype=float), wp.array(cfg.command_yaw_rate, dtype=float)
            c.heading = wp.zeros((num_envs if cfg.heading_fraction > 0 else 1, 2), dtype=float)
            self._push_velocity = wp.array([self._push_start(cfg)], dtype=float)
            self._delay = wp.zeros(num_envs, dtype=wp.int32)
            self._scan = wp.array(points if len(points) else np.zeros((1, 2), np.float32), dtype=wp.vec2)
            self._physics = wp.array(self._physics_draws(num_envs), dtype=float)
            self._head = wp.zeros(num_envs, dtype=wp.int32)
            self._level = wp.array(levels, dtype=wp.int32)
            self._centre_z = wp.array(self.terrain.centre_z, dtype=float)
            self._origin = wp.from_torch(w.spawn_origin, dtype=wp.vec3)
            self._contact = wp.from_torch(w.contact_forces, dtype=wp.vec3)
            self._deviation = wp.array(list(self.robot.deviation_weight or [0.0] * nj), dtype=float)
            self._feet_body = wp.array([f.index for f in self.feet], dtype=int)
            self._feet_offset = wp.array([f.offset for f in self.feet], dtype=wp.vec3)
            self._feet_arm = wp.array([f.arm for f in self.feet], dtype=wp.vec3)
        self.command = wp.to_torch(self._command)
        """Commanded base velocity [num_envs, 3]: vx [m/s], vy [m/s], yaw rate [rad/s] (writable)."""
        self.vx_range = wp.to_torch(c.vx)
        self.vy_range, self.yaw_range = wp.to_torch(c.vy), wp.to_torch(c.yaw)
        """The vy [m/s] and yaw-rate [rad/s] ranges [lo, hi] commands are drawn from now (writable: a curriculum's)."""
        """The vx range [lo, hi] [m/s] commands are drawn from now: ``command_vx``, or the curriculum's (writable)."""
        self.push_velocity = wp.to_torch(self._push_velocity)
        """The pushes' largest velocity change [m/s] [1]: ``randomization.push_velocity``, or the push curriculum's
        (writable)."""
        self.gait_phase = wp.to_torch(self._gait_phase)
        """Phase of each env's gait clock in [0, 1) [num_envs] (zeros without ``gait_clock``)."""
        self.terrain_level = wp.to_torch(self._level)
        """Terrain level of each env (rough terrain), int32 [num_envs]."""
        ends = VELOCITY_TERMINATIONS.fused(cfg.terminations, cfg.termination_params)
        draw = VELOCITY_COMMANDS.resolve([cfg.command], cfg.command_params)[0]
        self.obs_names = columns_of(velocity_obs.observation_terms(self, cfg=cfg))
        if cfg.privileged_critic:
            feet = self.robot.feet
            self.critic_names = (*self.obs_names, *(f"motor_strength_{j}" for j in joints),
                                 *(f"stiffness_scale_{j}" for j in joints), *(f"damping_scale_{j}" for j in joints),
                                 *(f"contact_force_{f}" for f in feet), "friction", "added_base_mass", "base_height")
        write_obs = velocity_obs.observation_writer_of(self, cfg)
        self._post_step = post_step_kernel(terms, ends, write_obs, episode_events, draw)
        self._observe_kernel = observe_kernel(velocity_obs.observation_writer_of(self, cfg, fill=True))
        self._critic_history = any(t.history > 1 for t in velocity_obs.observation_terms(self, cfg=cfg))
        """A term keeps frames: the critic group keeps them too (:func:`critic_history_kernel`)."""
        self._critic_kernel = None
        if cfg.privileged_critic:
            clean = velocity_obs.observation_writer_of(self, cfg, clean=True)
            self._critic_kernel = (critic_history_kernel(clean, velocity_obs.observation_writer_of(
                self, cfg, clean=True, fill=True)) if self._critic_history else critic_kernel(clean))
        self._reset_episode = reset_episode_kernel(episode_events, draw)
        self._pre_step = pre_step_kernel(events)
        reset_kernel = reset_events_kernel(Legged, reset_events) if reset_events else None
        if reset_kernel is not None:
            self._reset_events = lambda mask, rng: wp.launch(reset_kernel, self.num_envs, device=self.dev.warp,
                                                             inputs=[self.legged, mask], outputs=[rng])
        self._event_steps = wp.array(event_steps or [0], dtype=int, device=d)
        self.step_kernels = ((self._pre_step, self._post_step, self._observe_kernel) + w.kernels
                             + ((self._critic_kernel,) if self._critic_kernel is not None else ())
                             + (self.camera.kernels if self.camera is not None else ())
                             + ((reset_kernel,) if reset_kernel is not None else ()))
        super().__init__(cfg, num_envs=num_envs, device=device, seed=seed)

    def _bind(self) -> None:
        self.legged = self._context(self.cfg)
        """The reward terms' view of the state (:class:`Legged`)."""
        if self.critic_names:  # the noise-free observations open the critic group
            self.teacher_obs = self.critic_obs[:, :self.obs_dim]
        self.reward_scale_unit = self.cfg.sim_dt * self.cfg.decimation  # reward scales are per second
        wp.to_torch(self._reward_scales).mul_(self.reward_scale_unit)

    def _context(self, cfg: VelocityConfig) -> Legged:
        w, a = self.world, self.world.arrays
        x = Legged()
        x.root, x.dt, x.sigma = w.root_body, cfg.sim_dt * cfg.decimation, cfg.tracking_sigma
        x.air_target, x.contact_threshold = cfg.feet_air_time_target, cfg.contact_threshold
        x.cos_max_tilt, x.feet_min_distance = float(np.cos(cfg.max_tilt)), cfg.feet_min_distance
        x.n_feet, x.n_undesired = len(self.robot.feet), len(self.robot.undesired_contacts)
        x.actions, x.last_actions, x.default_q = self._actions, self._last_actions, a.default_joint_q
        x.deviation, x.feet_body, x.q_index = self._deviation, self._feet_body, self._task.q_index
        x.feet_offset, x.feet_arm = self._feet_offset, self._feet_arm
        x.joint_q, x.joint_qd, x.joint_f, x.body_q, x.body_qd = a.joint_q, a.joint_qd, a.joint_f, a.body_q, a.body_qd
        x.imu_gyro, x.depth = a.imu_gyro, self._depth
        x.root_vel_base, x.contact, x.unstable, x.failed = a.root_vel_base, self._contact, a.unstable, self._failed
        x.command, x.air_time, x.contact_time = self._command, self._air_time, self._contact_time
        x.gait_phase, x.gait_offset = self._gait_phase, self._gait_offset
        x.gait_stance, x.swing_height = cfg.gait_stance, cfg.feet_swing_height
        x.push_velocity = self._push_velocity
        x.delay, x.max_delay, x.ranges = self._delay, self._max_delay, self._ranges
        x.kp0, x.kd0, x.kp, x.kd = a.nominal_stiffness, a.nominal_damping, a.stiffness, a.damping
        x.strength = a.motor_strength
        x.cmd = self._cmd
        x.qd_index, x.imu, x.imu_q = self._qd_index, int(cfg.imu), wp.quat(*self.world.imu_rotation)
        x.grid, x.scan, x.scan_yaw = self._grid, self._scan, int(cfg.height_scan.yaw_aligned)
        self._past_width = past_width(velocity_obs.observation_terms(self, cfg=cfg))
        """Values per env the delayed observation terms keep (0: none is delayed)."""
        x.obs_past = self._obs_past = wp.zeros((self.num_envs, max(1, self._past_width)), dtype=float,
                                               device=self.dev.warp)
        return x

    @staticmethod
    def _vx_start(cfg: VelocityConfig) -> list[float]:
        """The vx range the commands start from: ``command_vx``, or the curriculum's start clipped into it."""
        lo, hi = cfg.command_vx
        if not cfg.vx_curriculum:
            return [lo, hi]
        a, b = cfg.vx_curriculum_start
        return [min(max(a, lo), hi), min(max(b, lo), hi)]

    @staticmethod
    def _push_start(cfg: VelocityConfig) -> float:
        """The pushes' largest velocity change at the start: ``push_velocity``, or the curriculum's start below it."""
        v = cfg.randomization.push_velocity
        return min(cfg.push_curriculum_start, v) if cfg.push_curriculum else v

    @property
    def obs_images(self) -> list[dict]:
        """Images inside the observation vector (``policy.json``'s ``observation.images``): name, column slice,
        [height, width] and how the pixels are laid out."""
        if self.camera is None:
            return []
        h, w = self.camera.shape
        start = self.obs_names.index("depth_0_0")
        cam = self.cfg.depth_camera
        return [{"name": "depth", "slice": [start, start + h * w], "shape": [h, w], "unit": "m",
                 "layout": "row-major, row 0 at the top of the image, column 0 at its left",
                 "quantity": "forward (z) depth, clipped to max_depth; no return reads max_depth",
                 "max_depth": cam.max_depth, "fov_vertical": cam.fov, "body": cam.body or "root",
                 "position": list(cam.position), "pitch": cam.pitch}]

    def observation_terms(self) -> tuple:
        """The observation's terms (:mod:`horde.envs.velocity_obs`)."""
        return velocity_obs.observation_terms(self)

    def observation_sources(self) -> dict[str, torch.Tensor]:
        return velocity_obs.observation_sources(self)

    def action_scale(self) -> list[float]:
        return self._per_action(_gains(self.cfg, self.robot)[0])

    def _per_action(self, values) -> list[float]:
        """One value per action column, from one per robot joint."""
        joints = self.robot.joints
        return [float(values[joints.index(j)]) for j in self.action_names]

    def pd_targets(self) -> torch.Tensor:
        """Every joint's PD target [rad] under the last step's actions, [num_envs, joints] in the robot's joint order
        (before the actuation law clips it to the joint's range): default pose + action scale x the applied action,
        which is the delayed action clipped or squashed for acting joints and 0 for held ones."""
        applied = wp.to_torch(self._applied).clamp(-1.0, 1.0)  # the actuation law's clip
        scale = torch.tensor(_gains(self.cfg, self.robot)[0], device=applied.device)
        return torch.tensor(self.robot.default_joint_pos, device=applied.device) + scale * applied

    @property
    def held_joints(self) -> tuple[str, ...]:
        """Joints the actions do not drive (``action_joints=legs``): PD holds them at their default positions."""
        return tuple(j for j in self.robot.joints if j not in self.action_names)

    def _physics_draws(self, n: int) -> np.ndarray:
        """Per env: the robot's friction coefficient and its base mass change [kg] as drawn at startup (without
        randomization: the model's friction, 0)."""
        out = np.zeros((n, 2), dtype=np.float32)
        draws = self.randomization
        if "friction" in draws:
            out[:, 0] = draws["friction"]
        else:
            mu, shape_world = self.world.model.shape_material_mu.numpy(), self.world.model.shape_world.numpy()
            out[:, 0] = mu[shape_world >= 0][0]
        if "base_mass_delta" in draws:
            out[:, 1] = draws["base_mass_delta"]
        return out

    def _write_critic(self, mask: wp.array, step: int) -> None:
        """The critic group after the step (``step`` 1) or an explicit reset (0); ``mask``: the envs just reset."""
        if self._critic_kernel is None:
            return
        inputs = [self.legged, self.obs_dim, self._physics] + ([mask, step] if self._critic_history else [])
        wp.launch(self._critic_kernel, self.num_envs, device=self.dev.warp, inputs=inputs,
                  outputs=[self._critic_obs])

    def _pre_physics(self) -> None:
        wp.launch(self._pre_step, self.num_envs, device=self.dev.warp, inputs=[
            self._task, self.legged, self._actions, self._episode_length, self._delay, self._act_joint,
            self._event_steps], outputs=[self._head, self._rng, self._history, self._delayed, self._applied])

    def _joint_actions(self) -> wp.array:
        return self._applied

    def _post_physics(self) -> None:
        if self.camera is not None:  # the image of the state the step ends in (final observations included)
            self.camera.update(rng=self._rng)
        wp.launch(self._post_step, self.num_envs, device=self.dev.warp, inputs=[
            self._task, self.legged, self._grid, self._centre_z, self.episodes(), self._causes],
            outputs=[self._rng, self._level, self._origin, self._state, self._obs, self._final_obs])

    def _observe_step(self) -> None:
        if self.camera is not None:  # envs that just reset see their new state
            self.camera.update(self._dones, rng=self._rng)
        self._observe(self._dones)
        self._write_critic(self._dones, 1)

    def _observe(self, mask: wp.array) -> None:
        wp.launch(self._observe_kernel, self.num_envs, device=self.dev.warp,
                  inputs=[self._task, self.legged, mask], outputs=[self._history, self._rng, self._state, self._obs])

    def _reset_task(self) -> None:
        wp.launch(self._reset_episode, self.num_envs, device=self.dev.warp, inputs=[
            self._task, self.legged, self._reset_mask], outputs=[
            self.episodes(), self._rng, self._command, self._air_time, self._last_actions, self._gait_phase])

    def _observe_reset(self) -> None:
        if self.camera is not None:
            self.camera.update(self._reset_mask, rng=self._rng)
        self._observe(self._reset_mask)
        self._write_critic(self._reset_mask, 0)

    # --- host side -------------------------------------------------------------------------------------------------
    def pop_episode_stats(self) -> dict[str, float]:
        out = super().pop_episode_stats()
        if self.cfg.terrain.kind == "rough":
            out["curriculum/terrain_level"] = float(self.terrain_level.float().mean())
        if self.cfg.vx_curriculum:
            self._update_vx_curriculum(out.get("reward/track_lin_vel"))
            out["curriculum/vx_min"], out["curriculum/vx_max"] = (float(v) for v in self.vx_range.tolist())
        if self.cfg.push_curriculum:
            self._update_push_curriculum(out.get("length_mean"))
            out["curriculum/push_velocity"] = float(self.push_velocity[0])
        return out

    def _update_push_curriculum(self, length_mean: float | None) -> None:
        """Grow the pushes by one step (up to ``randomization.push_velocity``) when the finished episodes lasted
        ``push_curriculum_threshold`` of ``episode_length`` on average, and with ``push_curriculum_shrink`` shrink
        them by one step (down to 0) when they did not. Host side, between iterations, in device memory the recorded
        graph reads."""
        cfg = self.cfg
        if length_mean is None:  # no episode finished since the last call
            return
        v = float(self.push_velocity[0])
        if length_mean >= cfg.push_curriculum_threshold * cfg.episode_length:
            self.push_velocity.fill_(min(v + cfg.push_curriculum_step, cfg.randomization.push_velocity))
        elif cfg.push_curriculum_shrink:
            self.push_velocity.fill_(max(v - cfg.push_curriculum_step, 0.0))

    def _update_vx_curriculum(self, track_sum: float | None) -> None:
        """Widen the vx range by one step at each end (up to ``command_vx``) when the finished episodes' mean
        ``track_lin_vel`` sum reaches ``vx_curriculum_threshold`` of a full-length episode's maximum. Host side,
        between iterations: the step reads the range from device memory, so the recorded graph stays valid."""
        cfg = self.cfg
        if track_sum is None:  # no episode finished since the last call
            return
        best = cfg.reward_scales["track_lin_vel"] * cfg.control_dt * cfg.episode_length
        if best <= 0 or track_sum / best < cfg.vx_curriculum_threshold:
            return
        (lo, hi), (a, b) = cfg.command_vx, self.vx_range.tolist()
        step = cfg.vx_curriculum_step
        self.vx_range.copy_(torch.tensor([max(a - step, lo), min(b + step, hi)], dtype=self.vx_range.dtype))

    def set_env_state(self, saved: dict[str, torch.Tensor]) -> None:
        if "contact_time" not in saved and "air_time" in saved:  # saved before the feet's contact time (2026-12-07)
            saved = {**saved, "contact_time": torch.zeros_like(saved["air_time"])}  # it restarts at 0
        super().set_env_state(saved)

    def _task_state(self) -> dict[str, torch.Tensor]:
        w = self.world
        return {"command": self.command, "air_time": wp.to_torch(self._air_time),
                "contact_time": wp.to_torch(self._contact_time),
                "history": wp.to_torch(self._history), "delay": wp.to_torch(self._delay),
                "head": wp.to_torch(self._head), "terrain_level": self.terrain_level,
                "spawn_origin": w.spawn_origin, **({"vx_range": self.vx_range} if self.cfg.vx_curriculum else {}),
                **({"push_velocity": self.push_velocity} if self.cfg.push_curriculum else {}),
                **({"heading": wp.to_torch(self._cmd.heading)} if self.cfg.heading_fraction > 0 else {}),
                **({"vy_range": self.vy_range, "yaw_range": self.yaw_range} if self._curricula else {}),
                **({"obs_past": wp.to_torch(self._obs_past)} if self._past_width else {})}


@CURRICULA.term
def command_ranges(env, iteration: int, stats: Mapping[str, float], *, name: str, vy: float = 0.0,
                   yaw: float = 0.0, step_vy: float = 0.05, step_yaw: float = 0.1, threshold: float = 0.8,
                   term: str = "track_lin_vel") -> dict[str, float]:
    """The velocity family's vy and yaw-rate ranges as a curriculum (the vx curriculum's rule for the other axes):
    they start at +- ``vy`` [m/s] and +- ``yaw`` [rad/s] (inside ``command_vy`` and ``command_yaw_rate``) and each
    end moves out by ``step_vy`` and ``step_yaw`` whenever the finished episodes' mean ``term`` sum reaches
    ``threshold`` of a full episode's maximum, up to the config's ranges. Logs the ranges' upper ends."""
    if not isinstance(env, VelocityEnv):
        raise FieldError(f"task.curricula: '{name}' (command_ranges) is the velocity family's curriculum")
    cfg = env.cfg
    full = {"vy": cfg.command_vy, "yaw": cfg.command_yaw_rate}
    ranges = {"vy": env.vy_range, "yaw": env.yaw_range}
    if iteration == 0:
        for axis, half in (("vy", vy), ("yaw", yaw)):
            lo, hi = full[axis]
            ranges[axis].copy_(torch.tensor([min(max(-half, lo), hi), max(min(half, hi), lo)]))
    else:
        best = cfg.reward_scales.get(term, 0.0) * cfg.control_dt * cfg.episode_length
        done = stats.get(f"reward/{term}")
        if done is not None and best > 0 and done / best >= threshold:
            for axis, step in (("vy", step_vy), ("yaw", step_yaw)):
                (lo, hi), (a, b) = full[axis], ranges[axis].tolist()
                ranges[axis].copy_(torch.tensor([max(a - step, lo), min(b + step, hi)]))
    return {f"curriculum/{name}_vy_max": float(env.vy_range[1]), f"curriculum/{name}_yaw_max": float(env.yaw_range[1])}


@CURRICULA.term
def vx_widen(env, iteration: int, stats: Mapping[str, float], *, name: str, lo: float = -1.0, hi: float = 1.0,
             start: int = 0, ramp: int = 0) -> dict[str, float]:
    """Widen the vx command range on a schedule: from where it starts (``command_vx``, or the vx curriculum's
    start) to [``lo``, ``hi``] (clipped into ``command_vx``) at iteration ``start``, linearly over the ``ramp``
    iterations after it (0: at once). It never narrows the range (the vx curriculum's rule may widen it sooner).
    Use it when that rule cannot fire: its threshold is a share of the tracking term's maximum, which falls and
    the full lateral and yaw ranges keep out of reach (the G1's full-range hours of 2026-12-07). Logs the range."""
    if not isinstance(env, VelocityEnv):
        raise FieldError(f"task.curricula: '{name}' (vx_widen) is the velocity family's curriculum")
    cfg = env.cfg
    (c_lo, c_hi), (a0, b0) = cfg.command_vx, env._vx_start(cfg)
    goal_lo, goal_hi = min(max(lo, c_lo), c_hi), max(min(hi, c_hi), c_lo)
    share = 0.0 if iteration < start else 1.0 if ramp <= 0 else min((iteration - start) / ramp, 1.0)
    a, b = env.vx_range.tolist()
    now = [min(a, a0 + share * (goal_lo - a0)), max(b, b0 + share * (goal_hi - b0))]
    env.vx_range.copy_(torch.tensor(now, dtype=env.vx_range.dtype))
    return {f"curriculum/{name}_vx_min": now[0], f"curriculum/{name}_vx_max": now[1]}
