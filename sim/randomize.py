"""Domain randomization of a :class:`~horde.sim.newton_world.NewtonWorld`, per env.

Two kinds, as in legged-robot sim-to-real practice:

* **startup** (drawn once per env from the seed when the env is built, before the step graph is recorded): link
  masses, an added base mass, ground friction of the robot's shapes, PD stiffness and damping, motor strength;
* **per step / per episode** (drawn on the device from each env's own random stream, inside the task's kernels):
  observation noise, action delay of 0..k control steps (:func:`delay_actions`) and random pushes.

Everything is off when ``RandomizationConfig.enabled`` is false (the contract tests build tasks that way).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import warp as wp

__all__ = ["RandomizationConfig", "apply_startup", "delay_actions"]


@dataclass(kw_only=True)
class RandomizationConfig:
    """Per-env randomization ranges (``task.randomization.<field>=...``); ``[lo, hi]`` are uniform ranges."""

    enabled: bool = False
    """Master switch: False turns every item below off."""
    link_mass_scale: list[float] = field(default_factory=lambda: [0.9, 1.1])
    """Every link's mass and inertia x U(lo, hi) (one draw per link per env)."""
    added_base_mass: list[float] = field(default_factory=lambda: [-1.0, 2.0])
    """Mass added to the base [kg] (inertia scaled with it)."""
    friction: list[float] = field(default_factory=lambda: [0.5, 1.25])
    """Friction coefficient of every robot shape (one draw per env)."""
    stiffness_scale: list[float] = field(default_factory=lambda: [0.9, 1.1])
    """PD stiffness x U(lo, hi) (one draw per joint per env)."""
    damping_scale: list[float] = field(default_factory=lambda: [0.9, 1.1])
    """PD damping x U(lo, hi) (one draw per joint per env)."""
    motor_strength: list[float] = field(default_factory=lambda: [0.9, 1.1])
    """Joint torque x U(lo, hi) (one draw per joint per env)."""
    obs_noise_scale: float = 1.0
    """Multiplies the task's per-term observation noise levels (0: no noise)."""
    max_action_delay: int = 1
    """Each episode, an env's actions act 0..max_action_delay control steps late (0: no delay)."""
    push_interval: float = 8.0
    """Seconds between random pushes (0: no pushes)."""
    push_velocity: float = 0.5
    """A push adds U(-v, v) to the base's x and y velocity [m/s]."""


def apply_startup(world, cfg: RandomizationConfig, *, seed: int, base_body: int = 0) -> dict[str, np.ndarray]:
    """Draw the startup randomization of every env of ``world`` and push it to the solver; returns the draws."""
    import newton

    if not cfg.enabled:
        return {}
    n, b = world.num_envs, world.bodies
    rng = np.random.default_rng([seed, 0x5EED])
    model = world.model
    offset = _world_body_offset(world)
    mass = model.body_mass.numpy()
    inertia = model.body_inertia.numpy()
    scale = rng.uniform(*cfg.link_mass_scale, size=(n, b))
    added = rng.uniform(*cfg.added_base_mass, size=n)
    m = mass[offset:offset + n * b].reshape(n, b)
    base = m[:, base_body].copy()
    scale[:, base_body] = scale[:, base_body] * np.maximum(base + added, 0.1 * base) / np.maximum(base, 1e-9)
    new_mass = m * scale
    mass[offset:offset + n * b] = new_mass.reshape(-1)
    inertia[offset:offset + n * b] *= scale.reshape(-1, 1, 1)
    model.body_mass.assign(mass)
    model.body_inertia.assign(inertia)
    model.body_inv_mass.assign(np.where(mass > 0, 1.0 / np.maximum(mass, 1e-12), 0.0).astype(np.float32))
    inv_inertia = np.zeros_like(inertia)
    nz = mass > 0
    inv_inertia[nz] = np.linalg.inv(inertia[nz])
    model.body_inv_inertia.assign(inv_inertia)

    mu = model.shape_material_mu.numpy()
    shape_world = model.shape_world.numpy()
    friction = rng.uniform(*cfg.friction, size=n).astype(np.float32)
    robot_shape = shape_world >= 0
    mu[robot_shape] = friction[shape_world[robot_shape]]
    model.shape_material_mu.assign(mu)
    world.solver.notify_model_changed(newton.ModelFlags.BODY_INERTIAL_PROPERTIES | newton.ModelFlags.SHAPE_PROPERTIES)

    a = world.stiffness.shape[1]
    kp = rng.uniform(*cfg.stiffness_scale, size=(n, a))
    kd = rng.uniform(*cfg.damping_scale, size=(n, a))
    strength = rng.uniform(*cfg.motor_strength, size=(n, a))
    dev = world.stiffness.device
    import torch

    world.stiffness.mul_(torch.as_tensor(kp, dtype=torch.float32, device=dev))
    world.damping.mul_(torch.as_tensor(kd, dtype=torch.float32, device=dev))
    world.motor_strength.copy_(torch.as_tensor(strength, dtype=torch.float32, device=dev))
    return {"mass": new_mass, "friction": friction, "stiffness_scale": kp, "damping_scale": kd,
            "motor_strength": strength}


def _world_body_offset(world) -> int:
    """Index of world 0's first body (bodies of global shapes, if any, come first)."""
    body_world = world.model.body_world.numpy()
    return int(np.argmax(body_world >= 0))


# --- device side -------------------------------------------------------------------------------------------------
@wp.func
def delay_actions(i: int, delay: int, head: int, actions: wp.array2d(dtype=float),
                  history: wp.array3d(dtype=float), applied: wp.array2d(dtype=float)):
    """Write env i's newest actions into its ring ``history`` [num_envs, k+1, A] at slot ``head`` and copy the actions
    from ``delay`` steps ago into ``applied``."""
    depth = history.shape[1]
    old = (head - delay + depth) % depth
    for k in range(actions.shape[1]):
        history[i, head, k] = actions[i, k]
    for k in range(actions.shape[1]):
        applied[i, k] = history[i, old, k]
