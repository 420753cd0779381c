"""The velocity task's view of a legged robot (:class:`Legged`), its observation names, and its reward terms
(:data:`VELOCITY_TERMS`): Warp functions ``(x: Legged, i: int) -> float`` that :mod:`horde.envs.velocity` fuses
into its step kernel and :mod:`horde.envs.velocity_twin` runs on MuJoCo's state. Add a term with
``@VELOCITY_TERMS.term`` (or ``velocity_term``) and one ``reward_scales`` line; a term's parameters (arguments after
``(x, i)`` with defaults) are set per configured term in ``task.reward_params`` (``termination_params``,
``event_params`` for the termination and event terms).
"""

# no `from __future__ import annotations`: Warp reads the annotations of the functions below
import warp as wp

from horde.envs.observations import ObsTermSet
from horde.envs.events import EventSet
from horde.envs.terms import CommandSet, TerminationSet, TermSet, clipped_action_rate
from horde.sim.randomize import ActuationRanges, draw_actuation, randomize_friction, randomize_link_mass
from horde.sim.terrain import TerrainGrid

__all__ = ["BASE_OBS", "CLOCK_OBS", "ROOT_COORDS", "ROOT_DOFS", "VELOCITY_COMMANDS", "VELOCITY_OBSERVATIONS",
           "VELOCITY_TERMINATIONS", "VELOCITY_TERMS", "CommandRanges", "Legged", "advance", "clock_phase", "foot_phase", "foot_position", "foot_velocity",
           "lowest_foot", "obs_names", "swing_profile", "track_heading", "uniform_velocity", "velocity_term"]

ROOT_COORDS = ("root_x", "root_y", "root_z", "root_qx", "root_qy", "root_qz", "root_qw")
ROOT_DOFS = 6
BASE_OBS = ("lin_vel_x", "lin_vel_y", "lin_vel_z", "ang_vel_x", "ang_vel_y", "ang_vel_z", "gravity_x", "gravity_y",
            "gravity_z", "cmd_vx", "cmd_vy", "cmd_yaw_rate")
CLOCK_OBS = ("gait_phase_sin", "gait_phase_cos")
"""The gait clock (``task.gait_clock``): sin and cos of 2 pi x the first foot's phase in the gait cycle."""


def obs_names(joints: tuple[str, ...], actions: tuple[str, ...] | None = None,
              clock: bool = False) -> tuple[str, ...]:
    """Observation names of a robot with these actuated joints, of which ``actions`` (default: all) act, with the
    gait clock when ``clock``."""
    actions = joints if actions is None else actions
    return (*BASE_OBS, *(f"pos_{j}" for j in joints), *(f"vel_{j}" for j in joints),
            *(f"last_action_{j}" for j in actions), *(CLOCK_OBS if clock else ()))


@wp.func
def clock_phase(steps: int, dt: float, period: float) -> float:
    """Phase in [0, 1) of the gait clock ``steps`` control steps of ``dt`` [s] into an episode (0 at its start)."""
    c = float(steps) * dt / period
    return c - wp.floor(c)


@wp.struct
class CommandRanges:
    """What a command term draws from (``task.command_*``, ``standing_fraction``, the heading fields)."""

    vx: wp.array(dtype=float)
    """The vx range [lo, hi] [m/s]: an array, so that the curriculum can widen it between graph replays."""
    vy: wp.array(dtype=float)
    """The vy range [lo, hi] [m/s] (an array: a curriculum may move it between graph replays)."""
    yaw: wp.array(dtype=float)
    """The yaw-rate range [lo, hi] [rad/s] (an array, as ``vy``)."""
    standing_fraction: float
    heading_fraction: float
    heading_stiffness: float
    heading: wp.array2d(dtype=float)
    """Per env: the heading target [rad] and 1 where the command tracks it (``heading_fraction``), else 0."""


@wp.struct
class Legged:
    """What a velocity-tracking reward term reads of env ``i`` (every array ``[num_envs, ...]`` unless noted).

    Coordinates follow :class:`horde.sim.newton_world.NewtonWorld`: ``joint_q`` is the root position and quaternion
    (xyzw) then the actuated joints' angles, ``joint_qd`` the root's linear and angular velocity then the joint
    rates; ``body_q``/``body_qd`` are world-frame body poses and COM twists; ``contact`` holds the total contact
    force [N] on each contact body: ``n_feet`` feet, then ``n_undesired`` undesired-contact bodies, then the failure
    bodies.
    """

    root: int
    """Body index of the floating base."""
    dt: float
    """Control period [s]."""
    sigma: float
    """Width of the exponential tracking terms."""
    air_target: float
    """Air time [s] rewarded against at touchdown."""
    contact_threshold: float
    """Contact when the force exceeds this [N]."""
    cos_max_tilt: float
    """cos of the tilt at which the episode fails."""
    feet_min_distance: float
    """Closest the first two feet may come (xy) [m]."""
    n_feet: int
    n_undesired: int
    actions: wp.array2d(dtype=float)
    """Actions of this step (unclipped) [num_envs, num_actions]."""
    last_actions: wp.array2d(dtype=float)
    """Clipped actions of the previous step."""
    default_q: wp.array(dtype=float)
    """Default coordinates [coords] (one env)."""
    deviation: wp.array(dtype=float)
    """joint_deviation weight per actuated joint [num_actions] (one env)."""
    q_index: wp.array(dtype=int)
    """Coordinate index in ``joint_q`` of each actuated joint, in the robot config's joint order (one env)."""
    feet_body: wp.array(dtype=int)
    """Body index of each foot [n_feet]."""
    feet_offset: wp.array(dtype=wp.vec3)
    """Each foot's point in its body's frame [m] [n_feet] (zeros: the body's origin)."""
    feet_arm: wp.array(dtype=wp.vec3)
    """From the velocity's reference point of each foot's body (``body_qd``'s) to the foot point, body frame [m]
    [n_feet] (zeros: that point's velocity is the foot's)."""
    joint_q: wp.array2d(dtype=float)
    joint_qd: wp.array2d(dtype=float)
    joint_f: wp.array2d(dtype=float)
    """Applied joint torques [N m] [num_envs, dofs]."""
    imu_gyro: wp.array(dtype=wp.vec3)
    """IMU angular velocity [rad/s] in the IMU site's frame [num_envs] (zeros without an IMU)."""
    depth: wp.array3d(dtype=float)
    """Depth image [num_envs, height, width] [m] (one pixel without a camera)."""
    body_q: wp.array2d(dtype=wp.transform)
    body_qd: wp.array2d(dtype=wp.spatial_vector)
    root_vel_base: wp.array2d(dtype=float)
    """Base-frame linear [m/s] and angular [rad/s] velocity [num_envs, 6]."""
    contact: wp.array2d(dtype=wp.vec3)
    unstable: wp.array(dtype=wp.bool)
    """The physics health check flagged the world."""
    failed: wp.array(dtype=wp.bool)
    """The episode fails on this step (written before the terms run)."""
    command: wp.array2d(dtype=float)
    """Commanded vx [m/s], vy [m/s], yaw rate [rad/s]."""
    air_time: wp.array2d(dtype=float)
    """Seconds since each foot last touched down [num_envs, n_feet]."""
    contact_time: wp.array2d(dtype=float)
    """Seconds since each foot last lifted off [num_envs, n_feet] (0 in the air; Isaac Lab's current contact time)."""
    gait_phase: wp.array(dtype=float)
    """Phase of the gait clock in [0, 1) [num_envs] (``task.gait_clock``; zeros without it)."""
    gait_offset: wp.array(dtype=float)
    """Each foot's phase offset in the gait cycle [n_feet] (one env)."""
    gait_stance: float
    """Share of its cycle a foot spends on the ground, from its phase 0."""
    swing_height: float
    """Height [m] a swinging foot should clear above the lowest foot."""
    push_velocity: wp.array(dtype=float)
    """The push event's largest velocity change [m/s] [1] (``randomization.push_velocity``, or the push curriculum's
    value now: an array, so that the curriculum can grow it between graph replays)."""
    delay: wp.array(dtype=wp.int32)
    """Control steps each env's actions act late this episode [num_envs] (the ``action_delay`` episode event)."""
    max_delay: int
    """The longest action delay drawn [control steps] (``randomization.max_action_delay``; 0 when it is off)."""
    ranges: ActuationRanges
    """The per-episode PD gain and motor strength ranges (``randomization``; off: nominal gains)."""
    kp0: wp.array(dtype=float)
    """Nominal PD stiffness per actuated joint [N m/rad] (one env)."""
    kd0: wp.array(dtype=float)
    """Nominal PD damping per actuated joint [N m s/rad] (one env)."""
    kp: wp.array2d(dtype=float)
    """This episode's PD stiffness [num_envs, joints] (the world's, which the actuation law reads)."""
    kd: wp.array2d(dtype=float)
    """This episode's PD damping [num_envs, joints]."""
    strength: wp.array2d(dtype=float)
    """This episode's motor strength factor [num_envs, joints]."""
    cmd: CommandRanges
    """The command's ranges (what a command term draws from)."""
    qd_index: wp.array(dtype=int)
    """Dof index in ``joint_qd`` of each actuated joint, in the robot config's joint order (one env)."""
    imu: int
    """1 when the observation reads the IMU (``task.imu``): its gyro, and gravity in the IMU site's frame."""
    imu_q: wp.quat
    """The IMU site's rotation in the base frame (``imu``)."""
    grid: TerrainGrid
    """The terrain (flat: one tile at height 0)."""
    scan: wp.array(dtype=wp.vec2)
    """Height-scan points in the base's yaw frame [points] [m] (``task.height_scan``; one point without)."""
    scan_yaw: int
    """1 when the scan turns with the base's yaw only (``height_scan.yaw_aligned``), 0 with its whole rotation."""
    obs_past: wp.array2d(dtype=float)
    """The delayed observation terms' waiting values (``ObsTerm.delay``; :func:`horde.envs.obs_writer.past_width`
    columns, at least one)."""


VELOCITY_TERMS = TermSet("velocity", Legged)
"""Reward terms of the velocity-tracking task: Warp functions ``(x: Legged, i: int) -> float``."""
velocity_term = VELOCITY_TERMS.term


VELOCITY_OBSERVATIONS = ObsTermSet("velocity observation", Legged)
"""Observation terms a user adds to the velocity task: Warp functions ``(x: Legged, i: int, k: int) -> float``
(column ``k`` of env ``i``); ``task.extra_observations`` appends them after the task's own columns."""

VELOCITY_COMMANDS = CommandSet("velocity command", Legged)
"""Command terms of the velocity task (``task.command``): Warp functions ``(x: Legged, i: int, s: wp.uint32) ->
wp.uint32`` writing ``x.command[i]`` (vx, vy, yaw rate); :func:`uniform_velocity` by default."""


@VELOCITY_COMMANDS.term
def uniform_velocity(x: Legged, i: int, s: wp.uint32) -> wp.uint32:
    """vx, vy and yaw rate uniform in their ranges, all zero in ``standing_fraction`` of the draws; with
    ``heading_fraction``, that share of the moving commands tracks a heading drawn in [-pi, pi) (its yaw rate
    follows the heading error every step)."""
    c = x.cmd
    stand = wp.randf(s) < c.standing_fraction
    vx = wp.randf(s, c.vx[0], c.vx[1])
    vy = wp.randf(s, c.vy[0], c.vy[1])
    wz = wp.randf(s, c.yaw[0], c.yaw[1])
    x.command[i, 0] = wp.where(stand, 0.0, vx)
    x.command[i, 1] = wp.where(stand, 0.0, vy)
    x.command[i, 2] = wp.where(stand, 0.0, wz)
    if c.heading_fraction > 0.0:  # no draw otherwise: the random stream of a run without headings is unchanged
        track = wp.randf(s) < c.heading_fraction
        c.heading[i, 0] = wp.randf(s, -wp.pi, wp.pi)
        c.heading[i, 1] = wp.where(track and not stand, 1.0, 0.0)
    return s


@wp.func
def track_heading(x: Legged, i: int):
    """A heading env's yaw-rate command from its heading error (``heading_stiffness``, clipped to the yaw range)."""
    c = x.cmd
    if c.heading_fraction > 0.0:
        if c.heading[i, 1] > 0.5:
            q = wp.transform_get_rotation(x.body_q[i, x.root])
            yaw = wp.atan2(2.0 * (q[3] * q[2] + q[0] * q[1]), 1.0 - 2.0 * (q[1] * q[1] + q[2] * q[2]))
            err = c.heading[i, 0] - yaw
            err = err - 2.0 * wp.pi * wp.floor((err + wp.pi) / (2.0 * wp.pi))
            x.command[i, 2] = wp.clamp(c.heading_stiffness * err, c.yaw[0], c.yaw[1])


VELOCITY_EVENTS = EventSet("velocity event", Legged)
"""Event terms of the velocity task: Warp functions ``(x: Legged, i: int, s: wp.uint32) -> wp.uint32`` run every
``interval`` seconds of an episode (``task.events: {name: interval}``), before the physics of that step; ``s`` is
the env's random state (return it advanced)."""


@VELOCITY_EVENTS.term
def push(x: Legged, i: int, s: wp.uint32) -> wp.uint32:
    """A random push: U(-v, v) added to the base's x and y velocity, v = ``randomization.push_velocity``
    (legged_gym's ``push_robots``; ``task.push_curriculum`` grows v); on every ``randomization.push_interval`` seconds
    when randomization is on."""
    x.joint_qd[i, 0] = x.joint_qd[i, 0] + wp.randf(s, -1.0, 1.0) * x.push_velocity[0]
    x.joint_qd[i, 1] = x.joint_qd[i, 1] + wp.randf(s, -1.0, 1.0) * x.push_velocity[0]
    return s


@VELOCITY_EVENTS.term(mode="episode")
def action_delay(x: Legged, i: int, s: wp.uint32) -> wp.uint32:
    """The episode's action delay, uniform in 0..``randomization.max_action_delay`` control steps (drawn, as 0,
    when the randomization is off too: every task's random stream stays as it was)."""
    x.delay[i] = wp.int32(wp.randi(s, 0, x.max_delay + 1))
    return s


@VELOCITY_EVENTS.term(mode="episode")
def actuation(x: Legged, i: int, s: wp.uint32) -> wp.uint32:
    """The episode's PD gains (nominal x U(lo, hi)) and motor strengths (``randomization``'s ranges; nothing is
    drawn when it is off)."""
    return draw_actuation(i, s, x.ranges, x.kp0, x.kd0, x.kp, x.kd, x.strength)


@VELOCITY_EVENTS.term(bounds={"speed": {"ge": 0}})
def kick(x: Legged, i: int, s: wp.uint32, speed: float = 0.5) -> wp.uint32:
    """A kick of U(-speed, speed) [m/s] added to the base's x and y velocity (a push of its own interval and size,
    beside the randomization's: ``task.events: {kick: 3.0}``, ``task.event_params: {kick: {speed: 1.0}}``)."""
    x.joint_qd[i, 0] = x.joint_qd[i, 0] + wp.randf(s, -1.0, 1.0) * speed
    x.joint_qd[i, 1] = x.joint_qd[i, 1] + wp.randf(s, -1.0, 1.0) * speed
    return s


EPISODE_EVENTS = ("action_delay", "actuation")
"""The randomization's episode events: every velocity task runs them first, then ``task.episode_events``."""


VELOCITY_EVENTS.term(randomize_link_mass, name="link_mass", mode="startup")
VELOCITY_EVENTS.term(randomize_friction, name="friction", mode="startup")
"""The randomization's startup draws as startup event terms (run first, in this order, when it is on)."""


VELOCITY_TERMINATIONS = TerminationSet("velocity termination", Legged)
"""Termination terms of the velocity task: Warp functions ``(x: Legged, i: int) -> bool`` (``task.terminations``
lists the ones a config uses; unstable physics always ends an episode as a failure)."""


@VELOCITY_TERMINATIONS.term
def body_contact(x: Legged, i: int) -> bool:
    """A failure-contact body (trunk, head, pelvis, ...) pushes on something harder than the contact threshold."""
    touch = bool(False)
    for c in range(x.n_feet + x.n_undesired, x.contact.shape[1]):
        touch = touch or wp.length(x.contact[i, c]) > x.contact_threshold
    return touch


@VELOCITY_TERMINATIONS.term
def tilt(x: Legged, i: int) -> bool:
    """The base's up axis is more than ``task.max_tilt`` from the world's."""
    rot = wp.transform_get_rotation(x.body_q[i, x.root])
    return 1.0 - 2.0 * (rot[0] * rot[0] + rot[1] * rot[1]) < x.cos_max_tilt


@VELOCITY_TERMINATIONS.term
def base_height_below(x: Legged, i: int, height: float = 0.15) -> bool:
    """The base's origin is less than ``height`` [m] above the world's origin (flat ground; add it to
    ``task.terminations``, ``task.termination_params: {base_height_below: {height: 0.2}}``)."""
    return wp.transform_get_translation(x.body_q[i, x.root])[2] < height


@wp.func
def advance(x: Legged, i: int):
    """State the terms read, moved on after they ran: air and contact time per foot, the previous (clipped)
    actions."""
    for f in range(x.n_feet):
        at = x.air_time[i, f]
        down = x.contact[i, f][2] > x.contact_threshold
        x.air_time[i, f] = wp.where(down, 0.0, at + x.dt)
        x.contact_time[i, f] = wp.where(down, x.contact_time[i, f] + x.dt, 0.0)
    for k in range(x.actions.shape[1]):
        x.last_actions[i, k] = wp.clamp(x.actions[i, k], -1.0, 1.0)


@wp.func
def foot_position(x: Legged, i: int, f: int) -> wp.vec3:
    """World position of foot ``f`` [m]: its body's origin, or the geom or site that names it."""
    return wp.transform_point(x.body_q[i, x.feet_body[f]], x.feet_offset[f])


@wp.func
def foot_velocity(x: Legged, i: int, f: int) -> wp.vec3:
    """World linear velocity of foot ``f`` [m/s] (its body's, moved to the foot point by ``feet_arm``)."""
    twist = x.body_qd[i, x.feet_body[f]]
    arm = wp.quat_rotate(wp.transform_get_rotation(x.body_q[i, x.feet_body[f]]), x.feet_arm[f])
    return wp.spatial_top(twist) + wp.cross(wp.spatial_bottom(twist), arm)


@wp.func
def foot_phase(x: Legged, i: int, f: int) -> float:
    """Foot ``f``'s phase in its gait cycle, in [0, 1): stance below ``gait_stance``, swing above."""
    p = x.gait_phase[i] + x.gait_offset[f]
    return p - wp.floor(p)


@wp.func
def lowest_foot(x: Legged, i: int) -> float:
    """World height of the lowest foot [m]: the ground the swing terms measure from (it holds on rough terrain)."""
    lowest = float(1.0e9)
    for f in range(x.n_feet):
        lowest = wp.min(lowest, foot_position(x, i, f)[2])
    return lowest


@wp.func
def _moving(x: Legged, i: int) -> bool:
    return wp.abs(x.command[i, 0]) + wp.abs(x.command[i, 1]) + wp.abs(x.command[i, 2]) > 0.1


@velocity_term(bounds={"std": {"ge": 0}})
def track_lin_vel(x: Legged, i: int, std: float = 0.0) -> float:
    """exp(-|cmd_xy - v_xy|^2 / std^2), base frame [std: m/s; 0: the task's ``tracking_sigma``]."""
    ex = x.command[i, 0] - x.root_vel_base[i, 0]
    ey = x.command[i, 1] - x.root_vel_base[i, 1]
    s = wp.where(std > 0.0, std, x.sigma)
    return wp.where(x.unstable[i], 0.0, wp.exp(-(ex * ex + ey * ey) / (s * s)))


@velocity_term(bounds={"std": {"ge": 0}})
def track_ang_vel(x: Legged, i: int, std: float = 0.0) -> float:
    """exp(-(cmd_yaw_rate - w_z)^2 / std^2) [std: rad/s; 0: the task's ``tracking_sigma``; mjlab's G1 uses
    sqrt(0.5) for yaw: ``task.reward_params.track_ang_vel.std=0.707``]."""
    ez = x.command[i, 2] - x.root_vel_base[i, 5]
    s = wp.where(std > 0.0, std, x.sigma)
    return wp.where(x.unstable[i], 0.0, wp.exp(-(ez * ez) / (s * s)))


@velocity_term
def lin_vel_z(x: Legged, i: int) -> float:
    """v_z^2 (base frame)."""
    return x.root_vel_base[i, 2] * x.root_vel_base[i, 2]


@velocity_term
def ang_vel_xy(x: Legged, i: int) -> float:
    """w_x^2 + w_y^2 (base frame)."""
    return x.root_vel_base[i, 3] * x.root_vel_base[i, 3] + x.root_vel_base[i, 4] * x.root_vel_base[i, 4]


@velocity_term
def orientation(x: Legged, i: int) -> float:
    """|g_xy|^2: the gravity direction's tilt in the base frame."""
    g = wp.quat_rotate_inv(wp.transform_get_rotation(x.body_q[i, x.root]), wp.vec3(0.0, 0.0, -1.0))
    return wp.where(x.unstable[i], 0.0, g[0] * g[0] + g[1] * g[1])


@velocity_term
def torques(x: Legged, i: int) -> float:
    """sum tau^2 over the joints [N^2 m^2]."""
    torque = float(0.0)
    for k in range(6, x.joint_f.shape[1]):
        torque += x.joint_f[i, k] * x.joint_f[i, k]
    return wp.where(x.unstable[i], 0.0, torque)


@velocity_term
def action_rate(x: Legged, i: int) -> float:
    """sum (a - a_prev)^2 of clipped actions."""
    return clipped_action_rate(x.actions, x.last_actions, i)


@velocity_term
def feet_air_time(x: Legged, i: int) -> float:
    """sum over touchdowns of (air time - target) while commanded to move (legged_gym)."""
    air = float(0.0)
    for f in range(x.n_feet):
        at = x.air_time[i, f]
        if x.contact[i, f][2] > x.contact_threshold and at > 0.0:
            air += at - x.air_target
    moving = wp.abs(x.command[i, 0]) + wp.abs(x.command[i, 1]) + wp.abs(x.command[i, 2]) > 0.1
    return wp.where(moving and not x.unstable[i], air, 0.0)


@velocity_term(bounds={"threshold": {"gt": 0}})
def feet_air_time_biped(x: Legged, i: int, threshold: float = 0.4) -> float:
    """Single stance, rewarded by its length [s]: with exactly one foot down, the shorter of the stance foot's
    contact time and the other's air time, at most ``threshold``; 0 in double support or flight, and under a
    command with |(vx, vy)| <= 0.1 m/s (Isaac Lab's ``feet_air_time_positive_biped``, 0.75 with threshold 0.4 in its
    G1 recipes). Dense where ``feet_air_time`` pays only at touchdown: a shuffle in double support earns nothing."""
    down_n = int(0)
    shortest = float(1.0e9)
    for f in range(x.n_feet):
        down = x.contact[i, f][2] > x.contact_threshold
        down_n += wp.where(down, 1, 0)
        shortest = wp.min(shortest, wp.where(down, x.contact_time[i, f], x.air_time[i, f]))
    moving = x.command[i, 0] * x.command[i, 0] + x.command[i, 1] * x.command[i, 1] > 0.01
    single = down_n == 1 and moving and not x.unstable[i]
    return wp.where(single, wp.min(shortest, threshold), 0.0)


@velocity_term
def undesired_contacts(x: Legged, i: int) -> float:
    """Number of undesired-contact bodies (thighs, knees, hands) touching something."""
    n = float(0.0)
    for c in range(x.n_feet, x.n_feet + x.n_undesired):
        n += wp.where(wp.length(x.contact[i, c]) > x.contact_threshold, 1.0, 0.0)
    return n


@velocity_term
def terminated(x: Legged, i: int) -> float:
    """1 on the step the episode fails."""
    return wp.where(x.failed[i], 1.0, 0.0)


@velocity_term
def alive(x: Legged, i: int) -> float:
    """1 on every step that does not fail."""
    return wp.where(x.failed[i], 0.0, 1.0)


@velocity_term
def joint_deviation(x: Legged, i: int) -> float:
    """sum w_j |q_j - default_j| with the robot's per-joint weights (hips' roll and yaw, waist, arms)."""
    dev = float(0.0)
    for k in range(x.deviation.shape[0]):
        c = x.q_index[k]
        dev += x.deviation[k] * wp.abs(x.joint_q[i, c] - x.default_q[c])
    return wp.where(x.unstable[i], 0.0, dev)


@velocity_term
def feet_slip(x: Legged, i: int) -> float:
    """sum over feet in contact of the foot's horizontal speed squared [m^2/s^2]."""
    slip = float(0.0)
    for f in range(x.n_feet):
        v = foot_velocity(x, i, f)
        if x.contact[i, f][2] > x.contact_threshold:
            slip += v[0] * v[0] + v[1] * v[1]
    return wp.where(x.unstable[i], 0.0, slip)


@velocity_term
def feet_distance(x: Legged, i: int) -> float:
    """How much closer than ``feet_min_distance`` the first two feet are (xy) [m]; 0 with fewer feet."""
    out = float(0.0)
    if x.n_feet >= 2:
        a = foot_position(x, i, 0)
        b = foot_position(x, i, 1)
        d = wp.length(wp.vec2(a[0] - b[0], a[1] - b[1]))
        out = wp.max(x.feet_min_distance - d, 0.0)
    return wp.where(x.unstable[i], 0.0, out)


@velocity_term
def gait_contact(x: Legged, i: int) -> float:
    """Share of feet whose contact state matches the gait clock: on the ground in the first ``gait_stance`` of its
    cycle, in the air after (unitree_rl_gym's ``contact``); under a standing command every foot should be down."""
    hits = float(0.0)
    moving = _moving(x, i)
    for f in range(x.n_feet):
        stance = foot_phase(x, i, f) < x.gait_stance or not moving
        down = x.contact[i, f][2] > x.contact_threshold
        hits += wp.where(down == stance, 1.0, 0.0)
    return wp.where(x.unstable[i], 0.0, hits / float(x.n_feet))


@velocity_term
def feet_swing_height(x: Legged, i: int) -> float:
    """sum over feet in the air of (height above the lowest foot - ``swing_height``)^2 [m^2] (unitree_rl_gym's
    ``feet_swing_height`` with the lowest foot, not the world plane, as the ground: it holds on rough terrain)."""
    lowest = lowest_foot(x, i)
    err = float(0.0)
    for f in range(x.n_feet):
        if x.contact[i, f][2] <= x.contact_threshold:
            h = foot_position(x, i, f)[2] - lowest - x.swing_height
            err += h * h
    return wp.where(x.unstable[i], 0.0, err)


@wp.func
def swing_profile(s: float) -> float:
    """The swing foot's height as a share of the peak at ``s`` in [0, 1] of its swing: up over the first half, down
    over the second, each a smoothstep (zero velocity at lift-off, apex and touchdown; Playground's ``get_rz``)."""
    u = wp.clamp(2.0 * s, 0.0, 2.0)
    up = wp.min(u, 1.0)
    down = wp.max(u - 1.0, 0.0)
    return up * up * (3.0 - 2.0 * up) - down * down * (3.0 - 2.0 * down)


@velocity_term(bounds={"height": {"ge": 0}, "std": {"gt": 0}})
def feet_phase(x: Legged, i: int, height: float = 0.0, std: float = 0.1) -> float:
    """exp(-sum_f (h_f - h*_f)^2 / std^2): every foot's height above the lowest foot tracks the gait clock's
    reference, 0 in stance and a smooth arc to ``height`` and back in swing (MuJoCo Playground's ``feet_phase``;
    every foot down under a standing command) [height: m, 0: the task's ``feet_swing_height``; std: m]. Dense where
    ``gait_contact`` is a step: lifting a foot 1 cm earns a little more, so a shuffling gait has a gradient to
    follow."""
    peak = wp.where(height > 0.0, height, x.swing_height)
    lowest = lowest_foot(x, i)
    moving = _moving(x, i)
    err = float(0.0)
    for f in range(x.n_feet):
        p = foot_phase(x, i, f)
        s = (p - x.gait_stance) / (1.0 - x.gait_stance)
        want = wp.where(moving and p >= x.gait_stance, peak * swing_profile(s), 0.0)
        e = foot_position(x, i, f)[2] - lowest - want
        err += e * e
    return wp.where(x.unstable[i], 0.0, wp.exp(-err / (std * std)))
