"""Hand-written Warp dynamics for the classic-control systems: cart-pole and pendulum.

Each system is a ``@wp.func`` that advances one physics substep, plus two kernels around it:

- ``*_advance``: RL path, ``decimation`` substeps in place for one env per thread (no tape, no allocation);
- ``*_substep``: differentiable path, one substep from ``state_in`` to a *fresh* ``state_out`` so that a
  ``wp.Tape`` never sees a state overwritten (these live in their own modules, so backward kernels compile only
  when a gradient is asked for).

Angles are measured from upright [rad]; forces in [N], torques in [N m], time in [s].

CPU blocks (``LANES``; used by ``horde.envs.cartpole``): Warp runs a CPU kernel's threads one after another in one
OS thread, so one env per thread leaves the SIMD units idle. The cart-pole's CPU step therefore gives each thread a
block of ``LANES`` envs, stepped by a native loop that clang vectorizes (see ``horde.envs.cartpole``), bit-identical
to the one-env-per-thread kernels that CUDA runs. ``is_finite`` and ``sincos`` exist for that loop's sake: libm's
``isfinite``, ``sinf`` and ``cosf`` are scalar calls that stop vectorization.
"""

from __future__ import annotations

import warp as wp

CARTPOLE_STATE = ("cart_pos", "cart_vel", "pole_angle", "pole_vel")
"""Cart-pole state layout: cart position [m], cart velocity [m/s], pole angle from upright [rad], pole rate [rad/s]."""

PENDULUM_STATE = ("angle", "angular_vel")
"""Pendulum state layout: angle from upright [rad], angular velocity [rad/s]."""


LANES = 64
"""Envs per CPU thread on the block path: four 16-float AVX-512 vectors, the bits of one uint64 done mask."""
FLT_MAX = wp.constant(3.4028234663852886e38)


@wp.struct
class CartpoleParams:
    """Physical constants of the cart-pole (Barto, Sutton and Anderson 1983)."""

    gravity: float
    cart_mass: float
    pole_mass: float
    pole_half_length: float
    max_force: float
    dt: float


@wp.struct
class PendulumParams:
    """Physical constants of the torque-limited pendulum (gymnasium's Pendulum-v1)."""

    gravity: float
    mass: float
    length: float
    max_torque: float
    max_speed: float
    dt: float


@wp.func
def sincos(x: float):
    """sin(x), cos(x) in float32 with Cody-Waite reduction and minimax polynomials (Cephes coefficients).

    About 1e-7 absolute error for |x| < 1e4 and several times faster than libm's scalar sinf/cosf on CPU, where
    Warp runs one env after another and the transcendental calls dominate a classic-control step.
    """
    k = wp.floor(x * 0.636619772367581 + 0.5)
    r = x - k * 1.5703125
    r = r - k * 4.837512969970703125e-4
    r = r - k * 7.54978995489188216e-8
    r2 = r * r
    s = r + r * r2 * (-1.6666654611e-1 + r2 * (8.3321608736e-3 + r2 * (-1.9515295891e-4)))
    c = 1.0 - 0.5 * r2 + r2 * r2 * (4.166664568298827e-2 + r2 * (-1.388731625493765e-3 + r2 * 2.443315711809948e-5))
    q = wp.int32(k) & 3
    sin_x = wp.where(q == 0, s, wp.where(q == 1, c, wp.where(q == 2, -s, -c)))
    cos_x = wp.where(q == 0, c, wp.where(q == 1, -s, wp.where(q == 2, -c, s)))
    return sin_x, cos_x


@wp.func
def is_finite(x: float) -> bool:
    """Neither NaN nor infinite. Unlike ``wp.isfinite`` (a libm call on CPU) this vectorizes."""
    return wp.abs(x) <= FLT_MAX


@wp.func
def wrap_angle(x: float) -> float:
    """x wrapped to [-pi, pi)."""
    return x - 6.283185307179586 * wp.floor((x + 3.141592653589793) * 0.15915494309189535)


@wp.func
def cartpole_substep(p: CartpoleParams, x: float, x_dot: float, theta: float, theta_dot: float, action: float):
    """One semi-implicit Euler substep; ``action`` in [-1, 1] is scaled to a cart force."""
    force = wp.clamp(action, -1.0, 1.0) * p.max_force
    inv_mass = 1.0 / (p.cart_mass + p.pole_mass)  # one division per substep instead of three (a CPU step's cost)
    pml = p.pole_mass * p.pole_half_length
    s, c = sincos(theta)
    temp = (force + pml * theta_dot * theta_dot * s) * inv_mass
    theta_acc = (p.gravity * s - c * temp) / (p.pole_half_length * (4.0 / 3.0 - p.pole_mass * c * c * inv_mass))
    x_acc = temp - pml * theta_acc * c * inv_mass
    x_dot_new = x_dot + p.dt * x_acc
    theta_dot_new = theta_dot + p.dt * theta_acc
    return x + p.dt * x_dot_new, x_dot_new, theta + p.dt * theta_dot_new, theta_dot_new


@wp.func
def pendulum_substep(p: PendulumParams, theta: float, theta_dot: float, action: float):
    """One substep of gymnasium's Pendulum-v1 update; ``action`` in [-1, 1] is scaled to a torque."""
    torque = wp.clamp(action, -1.0, 1.0) * p.max_torque
    s, c = sincos(theta)
    acc = 3.0 * p.gravity / (2.0 * p.length) * s + 3.0 / (p.mass * p.length * p.length) * torque
    theta_dot_new = wp.clamp(theta_dot + acc * p.dt, -p.max_speed, p.max_speed)
    return theta + theta_dot_new * p.dt, theta_dot_new


@wp.kernel(enable_backward=False)
def cartpole_advance(
    p: CartpoleParams,
    decimation: int,
    actions: wp.array2d(dtype=float),
    state: wp.array2d(dtype=float),
):
    """RL path: ``decimation`` substeps in place. actions [N, 1], state [N, 4]."""
    i = wp.tid()
    x = state[i, 0]
    x_dot = state[i, 1]
    theta = state[i, 2]
    theta_dot = state[i, 3]
    a = actions[i, 0]
    for _ in range(decimation):
        x, x_dot, theta, theta_dot = cartpole_substep(p, x, x_dot, theta, theta_dot, a)
    state[i, 0] = x
    state[i, 1] = x_dot
    state[i, 2] = theta
    state[i, 3] = theta_dot


@wp.kernel(enable_backward=False)
def pendulum_advance(
    p: PendulumParams,
    decimation: int,
    actions: wp.array2d(dtype=float),
    state: wp.array2d(dtype=float),
):
    """RL path: ``decimation`` substeps in place. actions [N, 1], state [N, 2]."""
    i = wp.tid()
    theta = state[i, 0]
    theta_dot = state[i, 1]
    a = actions[i, 0]
    for _ in range(decimation):
        theta, theta_dot = pendulum_substep(p, theta, theta_dot, a)
    state[i, 0] = theta
    state[i, 1] = theta_dot


@wp.kernel(enable_backward=True, module="unique")
def cartpole_step_diff(
    p: CartpoleParams,
    actions: wp.array2d(dtype=float),
    state_in: wp.array2d(dtype=float),
    state_out: wp.array2d(dtype=float),
):
    """Differentiable path: one substep into a fresh state. actions [N, 1], states [N, 4]."""
    i = wp.tid()
    x, x_dot, theta, theta_dot = cartpole_substep(
        p, state_in[i, 0], state_in[i, 1], state_in[i, 2], state_in[i, 3], actions[i, 0]
    )
    state_out[i, 0] = x
    state_out[i, 1] = x_dot
    state_out[i, 2] = theta
    state_out[i, 3] = theta_dot


@wp.kernel(enable_backward=True, module="unique")
def pendulum_step_diff(
    p: PendulumParams,
    actions: wp.array2d(dtype=float),
    state_in: wp.array2d(dtype=float),
    state_out: wp.array2d(dtype=float),
):
    """Differentiable path: one substep into a fresh state. actions [N, 1], states [N, 2]."""
    i = wp.tid()
    theta, theta_dot = pendulum_substep(p, state_in[i, 0], state_in[i, 1], actions[i, 0])
    state_out[i, 0] = theta
    state_out[i, 1] = theta_dot
