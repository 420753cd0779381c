"""The manipulation family's action terms: how a policy's actions become the arm's and the gripper's PD targets.

An arm term (:data:`ARM_ACTIONS`, ``task.arm``) is a Warp function ``(t: LiftTask, x: Manip, u: Command, chain:
Chain, i: int)`` that writes env ``i``'s arm columns of ``u.joint_actions`` (one normalized action per arm joint,
which the actuation law turns into PD targets) from ``x.actions``, with the command state ``u`` it keeps between
steps (an end-effector target, joint targets: reset where the arm is); plus what the rest of horde needs to know of
it: its action columns, their scale and unit, the actuation's arm scale, and its ``policy.json`` description. A
gripper term (:data:`GRIPPER_ACTIONS`, ``task.gripper``) is a Warp function ``(t: LiftTask, x: Manip, u: Command,
i: int)`` that writes the finger columns and ``u.grip[i]``, the opening command in [0, 1]. The step fuses the two
chosen functions into one kernel (:func:`command_kernel`, ``wp.static``): the gripper's, then the arm's.

Built in: ``joint`` (PD targets around the default pose), ``ee_delta`` (end-effector target deltas through damped
least-squares IK, :mod:`horde.sim.diffik`) and ``joint_delta`` (PD target deltas); grippers ``binary``, ``delta``
and ``independent`` (:func:`horde.sim.actuation.gripper_command`). A new law is one function and one registration::

    @wp.func
    def joint_velocity(t: LiftTask, x: Manip, u: Command, chain: Chain, i: int):
        for k in range(x.arm_dofs):  # integrate the action as a joint velocity of up to 1 rad/s
            qt = wp.clamp(u.q_target[i, k] + 0.02 * wp.clamp(x.actions[i, k], -1.0, 1.0), u.lower[k], u.upper[k])
            u.q_target[i, k] = qt
            u.joint_actions[i, k] = (qt - u.offset[k]) / u.scale[k]

    ARM_ACTIONS.register(ArmAction(name="joint_velocity", func=joint_velocity, joint_scale=ik_scale,
                                   describe=lambda cfg, arm: {"mode": "joint_velocity", "formula": "..."}))

then ``task.arm=joint_velocity``. The robot-side runner of an exported bundle does not run an arm or gripper law
(``policy.json``'s ``command`` describes it; the robot's own controller implements it).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import warp as wp

from horde.envs.arms import ArmRobot
from horde.envs.lift_terms import Manip, ee_pos
from horde.sim.actuation import gripper_command
from horde.sim.diffik import MAX_CHAIN, Chain, dls_step, orientation_error, site_jacobian, vec6

__all__ = ["ARM_ACTIONS", "ArmAction", "Command", "EE_ACTIONS", "GRIPPER_ACTIONS", "GripperAction", "IK_RANGE",
           "LiftTask", "command_kernel", "ik_scale"]

EE_ACTIONS = ("ee_dx", "ee_dy", "ee_dz")
IK_RANGE = math.pi
"""With ``arm=ee_delta`` (and ``joint_delta``) the actuation law's arm scale [rad]: the joint targets are written as
actions (target - default) / IK_RANGE, so any target within the joint limits is reachable."""


@wp.struct
class LiftTask:
    """Per-task constants of the kernels."""

    max_episode_length: int
    table_z: float
    ee_mode: int
    """The arm term's ``code`` (:class:`ArmAction`): 0 joint, 1 ee_delta, 2 joint_delta."""
    joint_step: float
    gripper_mode: int
    """The gripper term's ``code`` (:class:`GripperAction`): 0 binary, 1 delta, 2 independent."""
    gripper_rate: float
    ee_step: float
    ee_lead: float
    ee_lo: wp.vec3
    """Workspace box of the end-effector target [m]."""
    ee_hi: wp.vec3
    ik_damping: float
    ik_gain: float
    ik_lead: float
    hand: wp.quat
    """The hand orientation the IK holds."""
    ik_weight: wp.vec3
    """Weight of the IK's orientation error about world x, y, z (the arm entry's ``ik_orientation``)."""


@wp.struct
class Command:
    """Per-env command state: what the actions have set so far."""

    ee_target: wp.array(dtype=wp.vec3)
    """End-effector target [m] (arm=ee_delta)."""
    q_target: wp.array2d(dtype=float)
    """Arm joint targets [rad] (arm=ee_delta and joint_delta)."""
    grip: wp.array(dtype=float)
    """Gripper opening command [0, 1] (1 open; the first finger's with gripper=independent)."""
    offset: wp.array(dtype=float)
    """Actuation law's target at action 0 per actuated joint."""
    scale: wp.array(dtype=float)
    """Actuation law's target offset at action 1 per actuated joint."""
    lower: wp.array(dtype=float)
    """Arm joint lower limits [rad]."""
    upper: wp.array(dtype=float)
    joint_actions: wp.array2d(dtype=float)
    """What the actuation law runs: one normalized action per actuated joint [num_envs, arm + fingers]."""


# --- the registries -------------------------------------------------------------------------------------------------
def ik_scale(arm: ArmRobot) -> list[float]:
    """The actuation's arm scale of a law that writes joint targets itself: :data:`IK_RANGE` per arm joint."""
    return [IK_RANGE] * len(arm.arm_joints)


@dataclass(frozen=True, kw_only=True)
class ArmAction:
    """An arm action term: its Warp function and what ``policy.json``, the action space and the actuation need."""

    name: str
    func: wp.Function
    """``(t: LiftTask, x: Manip, u: Command, chain: Chain, i: int)``: env ``i``'s arm columns of ``u.joint_actions``."""
    describe: Callable[..., dict]
    """``(cfg, arm) -> dict``: ``policy.json``'s ``command.arm`` (its mode, actions and formula)."""
    actions: Callable[[ArmRobot], tuple[str, ...]] = lambda arm: tuple(arm.arm_joints)
    """The arm's action columns (default: one per arm joint)."""
    scale: Callable[..., list[float]] = lambda cfg, arm: [cfg.joint_step] * len(arm.arm_joints)
    """``(cfg, arm)``: each arm action's scale as ``policy.json`` states it."""
    joint_scale: Callable[[ArmRobot], list[float]] = lambda arm: list(arm.action_scale)
    """The actuation law's scale per arm joint (targets default + joint action x scale)."""
    action_type: str = ""
    """``policy.json``'s action type (default: the name)."""
    unit: str = "rad per step (arm), gripper command"
    code: int = -1
    """``LiftTask.ee_mode`` / ``Manip.ee_mode`` (1: the ``ik_lead`` observation reads the end-effector target);
    -1: the next free code."""


@dataclass(frozen=True, kw_only=True)
class GripperAction:
    """A gripper action term: its Warp function, how many actions it takes and the formula ``policy.json`` states."""

    name: str
    func: wp.Function
    """``(t: LiftTask, x: Manip, u: Command, i: int)``: the finger columns of ``u.joint_actions`` and ``u.grip[i]``."""
    formula: str
    per_finger: bool = False
    """One action per finger (else one for the gripper)."""
    code: int = -1


class ActionSet:
    """Registered action terms of one kind by name; a wrong name fails in one line with the valid ones."""

    def __init__(self, kind: str) -> None:
        self.kind, self._terms = kind, {}

    def register(self, term, *, replace: bool = False):
        if term.name in self._terms and not replace:
            raise ValueError(f"{self.kind} action '{term.name}' is already registered (pass replace=True)")
        if term.code < 0:
            term = dataclasses.replace(term, code=max((t.code for t in self._terms.values()), default=-1) + 1)
        self._terms[term.name] = term
        return term

    def unregister(self, name: str) -> None:
        """Remove a registered term (a test's, a plugin's)."""
        self._terms.pop(name, None)

    def names(self) -> tuple[str, ...]:
        return tuple(self._terms)

    def get(self, name: str):
        if name not in self._terms:
            raise ValueError(f"task.{self.kind}={name}: not a {self.kind} action; valid: {', '.join(self._terms)}")
        return self._terms[name]


ARM_ACTIONS = ActionSet("arm")
"""Arm action terms (``task.arm``); register your own with ``ARM_ACTIONS.register(ArmAction(...))``."""
GRIPPER_ACTIONS = ActionSet("gripper")
"""Gripper action terms (``task.gripper``); register your own with ``GRIPPER_ACTIONS.register(GripperAction(...))``."""


@functools.lru_cache(maxsize=None)
def command_kernel(arm: wp.Function, gripper: wp.Function) -> wp.Kernel:
    """The pre-physics kernel of one arm term and one gripper term: actions -> the actuation law's joint actions."""

    @wp.kernel(enable_backward=False, module="unique")
    def lift_command(t: LiftTask, x: Manip, u: Command, chain: Chain):
        i = wp.tid()
        wp.static(gripper)(t, x, u, i)
        wp.static(arm)(t, x, u, chain, i)

    return lift_command


# --- built-in grippers ----------------------------------------------------------------------------------------------
@wp.func
def coupled_gripper(t: LiftTask, x: Manip, u: Command, i: int):
    """binary and delta: the last action, through :func:`gripper_command`, drives every finger."""
    na = x.actions.shape[1]
    fingers = u.joint_actions.shape[1] - x.arm_dofs
    g = gripper_command(t.gripper_mode, x.actions[i, na - 1], u.grip[i], t.gripper_rate)
    u.grip[i] = g
    for f in range(fingers):
        u.joint_actions[i, x.arm_dofs + f] = 2.0 * g - 1.0


@wp.func
def independent_gripper(t: LiftTask, x: Manip, u: Command, i: int):
    """One action per finger (the last ones); ``grip`` holds the first finger's command."""
    na = x.actions.shape[1]
    arm = x.arm_dofs
    fingers = u.joint_actions.shape[1] - arm
    for f in range(fingers):
        g = gripper_command(2, x.actions[i, na - fingers + f], 0.0, t.gripper_rate)
        u.joint_actions[i, arm + f] = 2.0 * g - 1.0
        if f == 0:
            u.grip[i] = g


GRIPPER_ACTIONS.register(GripperAction(name="binary", func=coupled_gripper, formula="command = 1 if action >= 0 else 0",
                                       code=0))
GRIPPER_ACTIONS.register(GripperAction(
    name="delta", func=coupled_gripper, code=1,
    formula="command = clip(command + rate * clip(action, -1, 1), 0, 1), 1 (open) at reset"))
GRIPPER_ACTIONS.register(GripperAction(name="independent", func=independent_gripper, per_finger=True, code=2,
                                       formula="command_f = (clip(action_f, -1, 1) + 1) / 2 per finger"))


# --- built-in arms --------------------------------------------------------------------------------------------------
@wp.func
def joint_targets(t: LiftTask, x: Manip, u: Command, chain: Chain, i: int):
    """arm=joint: the arm's actions as they are (PD targets default + action x the entry's action scale)."""
    for k in range(x.arm_dofs):
        u.joint_actions[i, k] = x.actions[i, k]


@wp.func
def joint_deltas(t: LiftTask, x: Manip, u: Command, chain: Chain, i: int):
    """arm=joint_delta: each action moves its joint's target by up to ``joint_step``, within ``ik_lead`` of the
    joint and its limits."""
    for k in range(x.arm_dofs):
        q = x.joint_q[i, k]
        qt = u.q_target[i, k] + wp.clamp(x.actions[i, k], -1.0, 1.0) * t.joint_step
        qt = wp.clamp(wp.clamp(qt, q - t.ik_lead, q + t.ik_lead), u.lower[k], u.upper[k])
        u.q_target[i, k] = qt
        u.joint_actions[i, k] = (qt - u.offset[k]) / u.scale[k]


@wp.func
def ee_deltas(t: LiftTask, x: Manip, u: Command, chain: Chain, i: int):
    """arm=ee_delta: the end-effector target moved by the actions (inside the workspace, near the end effector),
    turned into joint targets by one damped-least-squares IK step with the hand held down."""
    arm = x.arm_dofs
    ee = ee_pos(x, i)
    previous = u.ee_target[i]
    step = wp.vec3(wp.clamp(x.actions[i, 0], -1.0, 1.0), wp.clamp(x.actions[i, 1], -1.0, 1.0),
                   wp.clamp(x.actions[i, 2], -1.0, 1.0)) * t.ee_step
    goal = previous + step
    for k in range(3):
        goal[k] = wp.clamp(wp.clamp(goal[k], ee[k] - t.ee_lead, ee[k] + t.ee_lead), t.ee_lo[k], t.ee_hi[k])
    u.ee_target[i] = goal
    hand = wp.transform_get_rotation(x.body_q[i, x.ee_body])
    move = (goal - previous) + (goal - ee) * t.ik_gain
    turn = orientation_error(hand, t.hand) * t.ik_gain
    J = site_jacobian(chain, x.body_q, i, ee)
    w = t.ik_weight
    for k in range(wp.static(MAX_CHAIN)):  # weighted orientation rows: 0 leaves that rotation free
        for r in range(3):
            J[3 + r, k] = J[3 + r, k] * w[r]
    dq = dls_step(J, vec6(move[0], move[1], move[2], turn[0] * w[0], turn[1] * w[1], turn[2] * w[2]), t.ik_damping)
    for k in range(arm):
        q = x.joint_q[i, k]
        qt = wp.clamp(u.q_target[i, k] + dq[k], q - t.ik_lead, q + t.ik_lead)
        qt = wp.clamp(qt, u.lower[k], u.upper[k])
        u.q_target[i, k] = qt
        u.joint_actions[i, k] = (qt - u.offset[k]) / u.scale[k]


def _describe_ee(cfg, arm: ArmRobot) -> dict:
    return {"mode": "ee_delta", "actions": list(EE_ACTIONS), "step_m": cfg.ee_step, "frame": "world",
            "hand_orientation_xyzw": list(arm.hand_down),
            **({} if arm.ik_orientation == (1.0, 1.0, 1.0) else {"orientation_weight_xyz": list(arm.ik_orientation)}),
            "formula": "ee_target = clip(ee_target + ee_step * clip(action, -1, 1)), workspace and ee +- "
                       f"{cfg.ee_lead} m; joint targets by damped least squares on the site Jacobian "
                       f"(damping {cfg.ik_damping} m, integral gain {cfg.ik_gain}); the robot side needs its own "
                       "IK (horde.sim.diffik is the reference)"}


ARM_ACTIONS.register(ArmAction(
    name="ee_delta", func=ee_deltas, code=1, actions=lambda arm: EE_ACTIONS, scale=lambda cfg, arm: [cfg.ee_step] * 3,
    joint_scale=ik_scale, unit="m (end effector), gripper command", describe=_describe_ee))
ARM_ACTIONS.register(ArmAction(
    name="joint", func=joint_targets, code=0, action_type="position_target", unit="rad (arm), gripper",
    scale=lambda cfg, arm: list(arm.action_scale),
    describe=lambda cfg, arm: {"mode": "joint", "actions": list(arm.arm_joints),
                               "formula": "target = offset + scale * clip(action, -1, 1)"}))
ARM_ACTIONS.register(ArmAction(
    name="joint_delta", func=joint_deltas, code=2, joint_scale=ik_scale,
    describe=lambda cfg, arm: {"mode": "joint_delta", "actions": list(arm.arm_joints), "step_rad": cfg.joint_step,
                               "formula": "q_target = clip(q_target + joint_step * clip(action, -1, 1), q +- "
                                          f"{cfg.ik_lead} rad, joint limits), q_target = q at a reset"}))
