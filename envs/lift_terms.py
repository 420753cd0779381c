"""The lift family's terms: what a term reads of an env (:class:`Manip`) and the terms themselves, Warp functions
``(x: Manip, i: int, <parameters>) -> float`` in :data:`LIFT_TERMS`, fused into the step kernel of
:mod:`horde.envs.lift`; its terminations (:data:`LIFT_TERMINATIONS`) and reset events (:data:`LIFT_EVENTS`: the
target draw, ``target_above_cube``). ``reaching_fine`` and ``target_fine`` are ``reaching`` and
``target_tracking`` registered again with a narrower ``std`` (``task.reward_params`` sets any configured term's)."""

from __future__ import annotations

import warp as wp

from horde.envs.events import EventSet
from horde.envs.terms import TerminationSet, TermSet, clipped_action_rate

__all__ = ["LIFT_EVENTS", "LIFT_TERMINATIONS", "LIFT_TERMS", "Manip", "cube_pos", "ee_pos", "lift_term", "lifted",
           "pinched"]


@wp.struct
class Manip:
    """What a lift reward term reads of env ``i`` (arrays ``[num_envs, ...]``)."""

    ee_body: int
    ee_offset: wp.vec3
    cube_body: int
    rest_z: float
    """Cube centre height resting on the table [m]."""
    table_z: float
    """Height of the table top [m]."""
    lift_height: float
    lift_span: float
    contact_threshold: float
    grip_lo: float
    """A finger closed on the cube opens at least this much [m] (less: closed on nothing)."""
    grip_hi: float
    """A finger closed on the cube opens at most this much [m] (more: not closed on it)."""
    arm_dofs: int
    """Arm joints (the arm entry's): the first coordinates of ``joint_q``."""
    finger_q: wp.vec2i
    """Per finger body: the ``joint_q`` column of the joint that opens it."""
    finger_scale: wp.vec2
    """Per finger body: its half opening [m] is finger_scale x (q - finger_zero) (the arm entry's ``opening``)."""
    finger_zero: wp.vec2
    target_lo: float
    """Range of the target's height above the table top [m] (``target_above_cube``)."""
    target_hi: float
    target_dx: float
    """The target's x and y are the cube's + uniform in +- these [m] (``target_above_cube``)."""
    target_dy: float
    spawn_lo: wp.vec2
    """Low corner (x, y) of the area where the cube spawns on the table [m]."""
    spawn_hi: wp.vec2
    actions: wp.array2d(dtype=float)
    last_actions: wp.array2d(dtype=float)
    joint_q: wp.array2d(dtype=float)
    """Joint coordinates: the arm's angles [rad], then its gripper's (arm7: 7 angles, two finger openings [m])."""
    joint_qd: wp.array2d(dtype=float)
    body_q: wp.array2d(dtype=wp.transform)
    body_qd: wp.array2d(dtype=wp.spatial_vector)
    """Body twists, linear [m/s] then angular [rad/s], world frame."""
    contact: wp.array2d(dtype=wp.vec3)
    """Total contact force on the left and right finger [N]."""
    target: wp.array(dtype=wp.vec3)
    unstable: wp.array(dtype=wp.bool)
    failed: wp.array(dtype=wp.bool)
    ee_mode: int
    """The arm action term's code (lift_actions.ArmAction.code): 0 joint targets, 1 an end-effector target
    (ee_delta), 2 joint target deltas."""
    ee_target: wp.array(dtype=wp.vec3)
    """End-effector target [m], world frame (arm=ee_delta)."""
    grip: wp.array(dtype=float)
    """Gripper opening command [0, 1] (1 open; the first finger's with gripper=independent)."""
    obs_past: wp.array2d(dtype=float)
    """The delayed observation terms' waiting values (``ObsTerm.delay``; :func:`horde.envs.obs_writer.past_width`
    columns, at least one)."""


LIFT_TERMS = TermSet("lift", Manip)
"""Reward terms of the lift task: Warp functions ``(x: Manip, i: int) -> float``."""
lift_term = LIFT_TERMS.term

LIFT_TERMINATIONS = TerminationSet("lift termination", Manip)
"""Termination terms of the lift family (``task.terminations``; unstable physics always fails an episode)."""

LIFT_EVENTS = EventSet("lift event", Manip)
"""Reset events of the lift family (``task.reset_events``, in order, after the cube is placed and before the first
observation): ``(x: Manip, i: int, s: wp.uint32) -> wp.uint32``; the target draw is one."""


@wp.func
def ee_pos(x: Manip, i: int) -> wp.vec3:
    return wp.transform_point(x.body_q[i, x.ee_body], x.ee_offset)


@wp.func
def cube_pos(x: Manip, i: int) -> wp.vec3:
    return wp.transform_get_translation(x.body_q[i, x.cube_body])


@LIFT_EVENTS.term(mode="reset")
def target_above_cube(x: Manip, i: int, s: wp.uint32) -> wp.uint32:
    """The target above the cube's (new) spot (moved by up to ``target_dx``, ``target_dy``), at a random height
    over the table in [``target_lo``, ``target_hi``]."""
    c = cube_pos(x, i)
    x.target[i] = wp.vec3(c[0], c[1], x.table_z + wp.randf(s, x.target_lo, x.target_hi))
    if x.target_dx > 0.0 or x.target_dy > 0.0:  # no draw otherwise: the lift's random stream is unchanged
        x.target[i] = x.target[i] + wp.vec3(wp.randf(s, -x.target_dx, x.target_dx),
                                            wp.randf(s, -x.target_dy, x.target_dy), 0.0)
    return s


@LIFT_TERMINATIONS.term
def cube_off_table(x: Manip, i: int) -> bool:
    """The cube's centre is below the table top: it fell off."""
    return cube_pos(x, i)[2] < x.table_z


@wp.func
def lifted(x: Manip, i: int) -> float:
    """1 while the cube is more than ``lift_height`` above its rest and within 5 cm of the end effector: in the
    gripper, not thrown (a first CPU run learned to bat the cube 14 cm up within 2 minutes)."""
    c = cube_pos(x, i)
    near = wp.length(c - ee_pos(x, i)) < 0.05
    return wp.where(c[2] > x.rest_z + x.lift_height and near and not x.unstable[i], 1.0, 0.0)


@wp.func
def pinched(x: Manip, i: int) -> bool:
    """Both fingers press sideways (more than down) with more than the contact threshold and the cube is within
    4 cm of the end effector: the fingers hold the cube, whatever its yaw."""
    near = wp.length(cube_pos(x, i) - ee_pos(x, i)) < 0.04
    both = bool(True)
    for f in range(2):
        c = x.contact[i, f]
        side = wp.sqrt(c[0] * c[0] + c[1] * c[1])
        both = both and side > x.contact_threshold and side > wp.abs(c[2])
    return both and near and not x.unstable[i]


@lift_term(bounds={"std": {"gt": 0}})
def reaching(x: Manip, i: int, std: float = 0.1) -> float:
    """1 - tanh(|ee - cube| / std) [std: m]."""
    return wp.where(x.unstable[i], 0.0, 1.0 - wp.tanh(wp.length(cube_pos(x, i) - ee_pos(x, i)) / std))


lift_term(reaching, name="reaching_fine", params={"std": 0.02})
"""``reaching`` with std 0.02 m: the last centimetres, where the fingers can close on the cube."""


@lift_term
def grasp(x: Manip, i: int) -> float:
    """1 when both fingers press sideways (more than down), the cube is between them (within 3 cm of the end
    effector) and each finger's opening fits the cube's width: closed on the cube, not pressing on the table
    beside it (a first CPU run collected a looser grasp term that way without ever lifting)."""
    near = wp.length(cube_pos(x, i) - ee_pos(x, i)) < 0.03
    squeeze = bool(True)
    for f in range(2):
        c = x.contact[i, f]
        side = wp.sqrt(c[0] * c[0] + c[1] * c[1])  # pressing sideways on the cube, not down on the table
        q = x.finger_scale[f] * (x.joint_q[i, x.finger_q[f]] - x.finger_zero[f])  # half opening [m]
        squeeze = squeeze and side > x.contact_threshold and side > wp.abs(c[2]) and q > x.grip_lo and q < x.grip_hi
    return wp.where(squeeze and near and not x.unstable[i], 1.0, 0.0)


@lift_term
def lift_height(x: Manip, i: int) -> float:
    """The cube's height above its rest over ``lift_span``, clipped to [0, 1], while both fingers press on it: pays
    for a partial lift (Isaac Lab's lifted bonus alone pays nothing below 4 cm)."""
    h = (cube_pos(x, i)[2] - x.rest_z) / x.lift_span
    return wp.where(pinched(x, i), wp.clamp(h, 0.0, 1.0), 0.0)


@lift_term
def lifting(x: Manip, i: int) -> float:
    """1 while the cube is more than ``lift_height`` above its resting height."""
    return lifted(x, i)


@lift_term(bounds={"std": {"gt": 0}})
def target_tracking(x: Manip, i: int, std: float = 0.3) -> float:
    """1 - tanh(|cube - target| / std) while lifted [std: m]."""
    return lifted(x, i) * (1.0 - wp.tanh(wp.length(x.target[i] - cube_pos(x, i)) / std))


lift_term(target_tracking, name="target_fine", params={"std": 0.05})
"""``target_tracking`` with std 0.05 m."""


@lift_term
def action_rate(x: Manip, i: int) -> float:
    """sum (a - a_prev)^2 of clipped actions."""
    return clipped_action_rate(x.actions, x.last_actions, i)


@lift_term
def joint_vel(x: Manip, i: int) -> float:
    """sum qd^2 over the arm joints [rad^2/s^2]."""
    v = float(0.0)
    for k in range(x.arm_dofs):
        v += x.joint_qd[i, k] * x.joint_qd[i, k]
    return wp.where(x.unstable[i], 0.0, v)


@lift_term
def dropped(x: Manip, i: int) -> float:
    """1 on the step the episode fails (the cube left the table, or unstable physics)."""
    return wp.where(x.failed[i], 1.0, 0.0)
