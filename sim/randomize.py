"""Domain randomization of a :class:`~horde.sim.newton_world.NewtonWorld`, per env.

Two kinds, as in legged-robot sim-to-real practice:

* **startup** (drawn once per env from the seed when the env is built, before the step graph is recorded): link
  masses, an added base mass and the friction of the robot's shapes (they live in the solver's model), as the
  startup event terms ``link_mass`` (:func:`randomize_link_mass`) and ``friction`` (:func:`randomize_friction`)
  that :func:`apply_startup` runs;
* **every episode** (drawn on the device at each reset from the env's own random stream, with the command): PD
  stiffness and damping, motor strength (:func:`draw_actuation`), action delay of 0..k control steps, as the
  velocity task's episode event terms ``actuation`` and ``action_delay``;
* **every step / on an interval**: observation noise, delayed actions (:func:`delay_actions`), random pushes.

Everything is off when ``RandomizationConfig.enabled`` is false (the contract tests build tasks that way).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import warp as wp

from horde.sim.fields import bounded, bounded_list

__all__ = ["ActuationRanges", "RandomizationConfig", "actuation_ranges", "apply_startup", "delay_actions",
           "draw_actuation"]


@dataclass(kw_only=True)
class RandomizationConfig:
    """Per-env randomization ranges (``task.randomization.<field>=...``); ``[lo, hi]`` are uniform ranges."""

    enabled: bool = False
    """Master switch: False turns every item below off."""
    link_mass_scale: list[float] = bounded_list([0.9, 1.1], gt=0, same_length=True)
    """Every link's mass and inertia x U(lo, hi) (one draw per link per env)."""
    added_base_mass: list[float] = field(default_factory=lambda: [-1.0, 2.0])
    """Mass added to the base [kg] (inertia scaled with it)."""
    friction: list[float] = bounded_list([0.5, 1.25], ge=0, same_length=True)
    """Friction coefficient of every robot shape (one draw per env)."""
    stiffness_scale: list[float] = bounded_list([0.9, 1.1], ge=0, same_length=True)
    """PD stiffness x U(lo, hi) (one draw per joint per env and episode)."""
    damping_scale: list[float] = bounded_list([0.9, 1.1], ge=0, same_length=True)
    """PD damping x U(lo, hi) (one draw per joint per env and episode)."""
    motor_strength: list[float] = bounded_list([0.9, 1.1], ge=0, same_length=True)
    """Joint torque x U(lo, hi) (one draw per joint per env and episode)."""
    obs_noise_scale: float = bounded(1.0, ge=0)
    """Multiplies the task's per-term observation noise levels (0: no noise)."""
    max_action_delay: int = bounded(1, ge=0)
    """Each episode, an env's actions act 0..max_action_delay control steps late (0: no delay)."""
    push_interval: float = bounded(8.0, ge=0)
    """Seconds between random pushes (0: no pushes)."""
    push_velocity: float = bounded(0.5, ge=0)
    """A push adds U(-v, v) to the base's x and y velocity [m/s]."""


def randomize_link_mass(world, cfg: RandomizationConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Startup event ``link_mass``: every body's mass and inertia x U(``link_mass_scale``), the base's mass plus
    U(``added_base_mass``) kg (at least a tenth of its own), per env."""
    n, b, base_body = world.num_envs, world.bodies, 0
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
    return {"mass": new_mass, "base_mass_delta": (new_mass[:, base_body] - base).astype(np.float32)}


def randomize_friction(world, cfg: RandomizationConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Startup event ``friction``: one friction coefficient U(``friction``) per env for every shape of its robot."""
    model = world.model
    mu = model.shape_material_mu.numpy()
    shape_world = model.shape_world.numpy()
    friction = rng.uniform(*cfg.friction, size=world.num_envs).astype(np.float32)
    robot_shape = shape_world >= 0
    mu[robot_shape] = friction[shape_world[robot_shape]]
    model.shape_material_mu.assign(mu)
    return {"friction": friction}


def apply_startup(world, cfg: RandomizationConfig, *, seed: int, events: Sequence[Callable] = ()
                  ) -> dict[str, np.ndarray]:
    """Run the startup event terms ``events`` (host functions ``(world, cfg, rng) -> draws``, in order, on one
    generator seeded from ``seed``), then tell the solver once that body inertial and shape properties changed;
    returns every event's draws."""
    import newton

    if not events:
        return {}
    rng = np.random.default_rng([seed, 0x5EED])
    draws: dict[str, np.ndarray] = {}
    for event in events:
        draws.update(event(world, cfg, rng) or {})
    world.solver.notify_model_changed(newton.ModelFlags.BODY_INERTIAL_PROPERTIES | newton.ModelFlags.SHAPE_PROPERTIES)
    return draws


@wp.struct
class ActuationRanges:
    """Per-episode actuation randomization read by :func:`draw_actuation` (``enabled`` 0: gains stay nominal)."""

    enabled: int
    kp_lo: float
    kp_hi: float
    kd_lo: float
    kd_hi: float
    strength_lo: float
    strength_hi: float


def actuation_ranges(cfg: RandomizationConfig) -> ActuationRanges:
    """The kernel struct of ``cfg``'s stiffness, damping and motor-strength ranges."""
    r = ActuationRanges()
    r.enabled = int(cfg.enabled)
    r.kp_lo, r.kp_hi = cfg.stiffness_scale
    r.kd_lo, r.kd_hi = cfg.damping_scale
    r.strength_lo, r.strength_hi = cfg.motor_strength
    return r


def _world_body_offset(world) -> int:
    """Index of world 0's first body (bodies of global shapes, if any, come first)."""
    body_world = world.model.body_world.numpy()
    return int(np.argmax(body_world >= 0))


# --- device side -------------------------------------------------------------------------------------------------
@wp.func
def draw_actuation(i: int, s: wp.uint32, r: ActuationRanges, kp0: wp.array(dtype=float),
                   kd0: wp.array(dtype=float), kp: wp.array2d(dtype=float), kd: wp.array2d(dtype=float),
                   strength: wp.array2d(dtype=float)) -> wp.uint32:
    """New PD gains (nominal x U(lo, hi)) and motor strength for env i's next episode; returns the RNG state."""
    if r.enabled == 1:
        for k in range(kp.shape[1]):
            kp[i, k] = kp0[k] * wp.randf(s, r.kp_lo, r.kp_hi)
            kd[i, k] = kd0[k] * wp.randf(s, r.kd_lo, r.kd_hi)
            strength[i, k] = wp.randf(s, r.strength_lo, r.strength_hi)
    return s


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
