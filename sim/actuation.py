"""How actions become joint torques: the actuation of articulated tasks, shared by every physics backend.

:class:`Actuation` states the law per actuated joint (PD towards action targets, or torques; motor strength,
effort limit, the DC-motor torque-speed line, an ONNX actuator network in place of PD). :func:`motor_torque` is the
one Warp function that computes a joint's torque from it: :func:`actuate_joints` runs it on Newton's state
(:class:`horde.sim.newton_world.NewtonWorld`), :mod:`horde.sim.mujoco_batch` on MuJoCo's rows, and
:mod:`horde.sim.diff_articulation` differentiates :func:`joint_torque` inside it. :func:`actuator_net_inputs`
gathers an actuator network's inputs (:mod:`horde.sim.actuator_net`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import warp as wp

__all__ = ["ACTION_MODES", "GRIPPER_MODES", "MODE_NET", "MODE_PD", "MODE_TORQUE", "Actuation", "Gripper",
           "actuate_joints", "actuator_net_inputs", "gripper_command", "joint_torque", "motor_torque", "pd_target"]

ACTION_MODES = ("pd", "torque")
"""``pd``: actions are joint position targets tracked by a PD law; ``torque``: actions are joint torques."""

MODE_PD, MODE_TORQUE, MODE_NET = 0, 1, 2
"""The actuation kernels' ``mode``: PD law, torque, PD targets with the torque of an actuator network."""


@dataclass(frozen=True, kw_only=True)
class Actuation:
    """How actions in [-1, 1] become joint torques, per actuated joint (arrays of length ``num_actions``)."""

    mode: str
    """``pd`` or ``torque`` (see :data:`ACTION_MODES`)."""
    scale: Sequence[float]
    """pd: target offset at action +1 [rad]; torque: torque at action +1 [N m]."""
    offset: Sequence[float]
    """pd: target at action 0 [rad] (the default joint position); unused for torque."""
    stiffness: Sequence[float]
    """PD stiffness [N m/rad] (pd only)."""
    damping: Sequence[float]
    """PD damping [N m s/rad] (pd only)."""
    effort_limit: Sequence[float]
    """Torques are clipped to +- this [N m]."""
    velocity_limit: Sequence[float] | None = None
    """DC-motor model (None: off): the no-load speed of each joint's motor [rad/s]. The torque is clipped to
    [effort x (-1 - qd / velocity_limit), effort x (1 - qd / velocity_limit)] within +- effort: full torque at rest,
    none in the direction of motion at the no-load speed (Isaac Lab's and mjlab's DC-motor actuator)."""
    network: str | None = None
    """pd only: an ONNX actuator network (:mod:`horde.sim.actuator_net`) that turns each joint's position-error and
    velocity history into its torque in place of the PD law (stiffness and damping then go unused); None: PD."""


GRIPPER_MODES = ("binary", "delta", "independent")
"""How a parallel gripper's fingers follow the actions: ``binary``, one action, open at >= 0 and closed below
(Isaac Lab's ``BinaryJointPositionAction``); ``delta``, one action that moves the opening command by up to ``rate``
of the stroke per control step (Playground's delta control); ``independent``, one action per finger."""


@dataclass(frozen=True, kw_only=True)
class Gripper:
    """A parallel gripper whose fingers are PD-driven joints: how its action(s) become finger targets.

    Every finger's PD target is ``closed + command x (open - closed)`` with the opening command in [0, 1] from
    :func:`gripper_command`; the actuation law then runs it as the joint action ``2 x command - 1`` with offset
    ``(open + closed) / 2`` and scale ``(open - closed) / 2``. One definition for the env, ``policy.json`` and the
    robot-side runner."""

    mode: str
    """One of :data:`GRIPPER_MODES`."""
    joints: tuple[str, ...]
    """The finger joints the gripper action drives."""
    open: float
    """Finger target when open [m]."""
    closed: float = 0.0
    """Finger target when closed [m]."""
    rate: float = 0.25
    """delta: change of the opening command per control step at action +-1 (share of the stroke)."""
    per_finger: bool | None = None
    """One action per finger; None: as the built-in ``mode`` (independent)."""
    formula: str | None = None
    """The opening command's law as ``policy.json`` states it; None: the built-in ``mode``'s."""

    @property
    def num_actions(self) -> int:
        """Actions the gripper takes: one per finger when independent (or ``per_finger``), else one."""
        per_finger = self.mode == "independent" if self.per_finger is None else self.per_finger
        return len(self.joints) if per_finger else 1

    def describe(self) -> dict:
        """The gripper for ``policy.json``."""
        formula = self.formula or {
            "binary": "command = 1 if action >= 0 else 0",
            "delta": "command = clip(command + rate * clip(action, -1, 1), 0, 1), 1 (open) at reset",
            "independent": "command_f = (clip(action_f, -1, 1) + 1) / 2 per finger"}[self.mode]
        return {"mode": self.mode, "joints": list(self.joints), "open": self.open, "closed": self.closed,
                "rate": self.rate, "formula": formula + "; finger target = closed + command * (open - closed)"}


# --- kernels -------------------------------------------------------------------------------------------------------
@wp.func
def pd_target(a: float, scale: float, offset: float, lower: float, upper: float) -> float:
    """The PD law's target for a clipped action ``a``: offset + a x scale, clipped to the joint's limits."""
    return wp.clamp(offset + a * scale, lower, upper)


@wp.func
def joint_torque(mode: int, a: float, scale: float, offset: float, stiffness: float, damping: float, lower: float,
                 upper: float, q: float, qd: float) -> float:
    """The actuation law for a clipped action ``a``: ``a`` x scale, or a PD law towards offset + ``a`` x scale
    (clipped to the joint's limits). One definition for the env step and the differentiable step."""
    tau = a * scale
    if mode == MODE_PD:
        tau = stiffness * (pd_target(a, scale, offset, lower, upper) - q) - damping * qd
    return tau


@wp.func
def motor_torque(mode: int, action: float, scale: float, offset: float, stiffness: float, damping: float,
                 strength: float, limit: float, dc_motor: int, velocity_limit: float, lower: float, upper: float,
                 q: float, qd: float, net_tau: float) -> float:
    """One joint's torque for an action: the law of :func:`joint_torque` on the clipped action (or, in the actuator
    network's mode, the network's torque ``net_tau``), times the motor strength, clipped to the effort limit (or,
    with ``dc_motor``, to the motor's torque-speed line)."""
    a = wp.clamp(action, -1.0, 1.0)
    tau = net_tau
    if mode != MODE_NET:
        tau = joint_torque(mode, a, scale, offset, stiffness, damping, lower, upper, q, qd)
    lo, hi = -limit, limit
    if dc_motor != 0:
        r = qd / velocity_limit
        hi = wp.clamp(limit * (1.0 - r), 0.0, limit)
        lo = wp.clamp(limit * (-1.0 - r), -limit, 0.0)
    return wp.clamp(tau * strength, lo, hi)


@wp.func
def gripper_command(mode: int, action: float, previous: float, rate: float) -> float:
    """Opening command in [0, 1] (1 open) of a gripper in :data:`GRIPPER_MODES` ``mode`` (its index) for one action:
    binary thresholds it at 0, delta integrates it from ``previous`` at ``rate`` per step, independent maps
    [-1, 1] onto [0, 1]."""
    a = wp.clamp(action, -1.0, 1.0)
    g = 0.5 * (a + 1.0)
    if mode == 0:
        g = wp.where(action >= 0.0, 1.0, 0.0)
    elif mode == 1:
        g = wp.clamp(previous + rate * a, 0.0, 1.0)
    return g


@wp.kernel(enable_backward=False)
def actuate_joints(
    mode: int,
    actions: wp.array2d(dtype=float),
    q_index: wp.array(dtype=int),
    qd_index: wp.array(dtype=int),
    scale: wp.array(dtype=float),
    offset: wp.array(dtype=float),
    stiffness: wp.array2d(dtype=float),
    damping: wp.array2d(dtype=float),
    strength: wp.array2d(dtype=float),
    effort: wp.array2d(dtype=float),
    dc_motor: int,
    velocity_limit: wp.array(dtype=float),
    lower: wp.array(dtype=float),
    upper: wp.array(dtype=float),
    joint_q: wp.array2d(dtype=float),
    joint_qd: wp.array2d(dtype=float),
    net_effort: wp.array(dtype=float),
    joint_f: wp.array2d(dtype=float),
):
    """Torque of actuated joint k of env i: clip(a) x scale, or a PD law towards offset + clip(a) x scale (or the
    actuator network's torque ``net_effort[i * num_actions + k]``), times the env's motor strength, clipped to its
    effort limit (gains, strength and limits are per env: randomizable); with ``dc_motor`` the clip follows the
    motor's torque-speed line (:attr:`Actuation.velocity_limit`)."""
    i, k = wp.tid()
    di = qd_index[k]
    net_tau = float(0.0)
    if mode == MODE_NET:
        net_tau = net_effort[i * actions.shape[1] + k]
    joint_f[i, di] = motor_torque(mode, actions[i, k], scale[k], offset[k], stiffness[i, k], damping[i, k],
                                  strength[i, k], effort[i, k], dc_motor, velocity_limit[k], lower[k], upper[k],
                                  joint_q[i, q_index[k]], joint_qd[i, di], net_tau)


@wp.kernel(enable_backward=False)
def actuator_net_inputs(
    actions: wp.array2d(dtype=float),
    q_index: wp.array(dtype=int),
    qd_index: wp.array(dtype=int),
    scale: wp.array(dtype=float),
    offset: wp.array(dtype=float),
    lower: wp.array(dtype=float),
    upper: wp.array(dtype=float),
    joint_q: wp.array2d(dtype=float),
    joint_qd: wp.array2d(dtype=float),
    q: wp.array(dtype=float),
    qd: wp.array(dtype=float),
    target: wp.array(dtype=float),
):
    """The actuator network's inputs for joint k of env i (flat index ``i * num_actions + k``): its position, its
    velocity and the PD law's target for the clipped action."""
    i, k = wp.tid()
    j = i * actions.shape[1] + k
    q[j] = joint_q[i, q_index[k]]
    qd[j] = joint_qd[i, qd_index[k]]
    target[j] = pd_target(wp.clamp(actions[i, k], -1.0, 1.0), scale[k], offset[k], lower[k], upper[k])
