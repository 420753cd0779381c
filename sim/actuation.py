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

__all__ = ["ACTION_MODES", "MODE_NET", "MODE_PD", "MODE_TORQUE", "Actuation", "actuate_joints", "actuator_net_inputs",
           "joint_torque", "motor_torque"]

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


# --- kernels -------------------------------------------------------------------------------------------------------
@wp.func
def joint_torque(mode: int, a: float, scale: float, offset: float, stiffness: float, damping: float, lower: float,
                 upper: float, q: float, qd: float) -> float:
    """The actuation law for a clipped action ``a``: ``a`` x scale, or a PD law towards offset + ``a`` x scale
    (clipped to the joint's limits). One definition for the env step and the differentiable step."""
    tau = a * scale
    if mode == MODE_PD:
        target = wp.clamp(offset + a * scale, lower, upper)
        tau = stiffness * (target - q) - damping * qd
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
    target[j] = wp.clamp(offset[k] + wp.clamp(actions[i, k], -1.0, 1.0) * scale[k], lower[k], upper[k])
