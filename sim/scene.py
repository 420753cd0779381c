"""What a world holds besides its robot: free rigid objects and static props, each replicated into every env.

A :class:`RigidObject` is a primitive body on a free joint with its own initial-state ranges, each a ``(lo, hi)``
pair: on every reset of an env it is placed at x in U(``x``), y in U(``y``), z in U(``z``) (env frame) with a yaw in
U(``yaw``), at rest. A :class:`StaticProp` is a fixed shape (a table, a wall). Both are
given to a :class:`horde.sim.spec.WorldSpec` (``objects=``, ``props=``); its world appends them to the robot of
every env and exposes the objects' state as ``object_pose`` / ``object_vel`` views ``[num_envs, objects, ...]``.

Shapes: ``box`` (``size`` = half extents x, y, z [m]), ``sphere`` (radius), ``capsule`` (radius, half height, along
z). Mesh objects are not supported yet: Newton's mesh shapes need a mesh loader that horde does not depend on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import warp as wp

__all__ = ["SHAPES", "RigidObject", "StaticProp", "add_objects", "add_props", "reset_objects"]

SHAPES = ("box", "sphere", "capsule")


@dataclass(frozen=True, kw_only=True)
class RigidObject:
    """A free rigid body in every env."""

    name: str
    """Body label (contact bodies and ``NewtonWorld.object_index`` use it)."""
    shape: str = "box"
    size: tuple[float, ...] = (0.025, 0.025, 0.025)
    """Half extents (box), (radius,) (sphere) or (radius, half height) (capsule) [m]."""
    density: float = 500.0
    """[kg/m^3]."""
    friction: float = 1.0
    x: tuple[float, float] = (0.0, 0.0)
    """Range (lo, hi) of the initial x position in the env frame [m]."""
    y: tuple[float, float] = (0.0, 0.0)
    """Range (lo, hi) of the initial y position [m]."""
    z: tuple[float, float] = (0.0, 0.0)
    """Range (lo, hi) of the initial z position [m]."""
    yaw: tuple[float, float] = (0.0, 0.0)
    """Range (lo, hi) of the initial yaw [rad]."""

    @property
    def low(self) -> tuple[float, float, float]:
        return (self.x[0], self.y[0], self.z[0])

    @property
    def high(self) -> tuple[float, float, float]:
        return (self.x[1], self.y[1], self.z[1])


@dataclass(frozen=True, kw_only=True)
class StaticProp:
    """A fixed shape in every env (tables, walls)."""

    name: str
    shape: str = "box"
    size: tuple[float, ...] = (0.5, 0.5, 0.5)
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    friction: float = 1.0


def _add_shape(builder, body: int, item, xform, cfg) -> None:
    if item.shape not in SHAPES:
        raise ValueError(f"{item.name}: unknown shape '{item.shape}'; valid shapes: {', '.join(SHAPES)}")
    need = {"box": 3, "sphere": 1, "capsule": 2}[item.shape]
    if len(item.size) != need:
        raise ValueError(f"{item.name}: a {item.shape} takes {need} size values, got {len(item.size)}")
    if item.shape == "box":
        hx, hy, hz = item.size
        builder.add_shape_box(body, xform=xform, hx=hx, hy=hy, hz=hz, cfg=cfg, label=item.name)
    elif item.shape == "sphere":
        builder.add_shape_sphere(body, xform=xform, radius=item.size[0], cfg=cfg, label=item.name)
    else:
        builder.add_shape_capsule(body, xform=xform, radius=item.size[0], half_height=item.size[1], cfg=cfg,
                                  label=item.name)


def add_objects(builder, objects: Sequence[RigidObject]) -> list[int]:
    """Append each object to ``builder`` as a body on a free joint; returns their body indices."""
    import newton

    bodies = []
    for obj in objects:
        cfg = newton.ModelBuilder.ShapeConfig(density=obj.density, mu=obj.friction, ke=builder.default_shape_cfg.ke)
        mid = [0.5 * (lo + hi) for lo, hi in zip(obj.low, obj.high)]
        b = builder.add_body(xform=wp.transform(wp.vec3(*mid), wp.quat_identity()), label=obj.name)
        _add_shape(builder, b, obj, wp.transform_identity(), cfg)
        bodies.append(b)
    return bodies


def add_props(builder, props: Sequence[StaticProp]) -> None:
    """Append each prop to ``builder`` as a static shape."""
    import newton

    for prop in props:
        cfg = newton.ModelBuilder.ShapeConfig(mu=prop.friction, ke=builder.default_shape_cfg.ke)
        _add_shape(builder, -1, prop, wp.transform(wp.vec3(*prop.pos), wp.quat_identity()), cfg)


@wp.kernel(enable_backward=False)
def reset_objects(
    mask: wp.array(dtype=wp.bool),
    first_coord: wp.array(dtype=int),
    first_dof: wp.array(dtype=int),
    low: wp.array(dtype=wp.vec3),
    high: wp.array(dtype=wp.vec3),
    yaw_low: wp.array(dtype=float),
    yaw_high: wp.array(dtype=float),
    origin: wp.array(dtype=wp.vec3),
    rng: wp.array(dtype=wp.uint32),
    joint_q: wp.array2d(dtype=float),
    joint_qd: wp.array2d(dtype=float),
):
    """Masked envs: every object at a uniform position in its box (env frame) and a uniform yaw, at rest."""
    i = wp.tid()
    if mask[i]:
        s = rng[i]
        o = origin[i]
        for k in range(low.shape[0]):
            c = first_coord[k]
            lo = low[k]
            hi = high[k]
            p = o + wp.vec3(wp.randf(s, lo[0], hi[0]), wp.randf(s, lo[1], hi[1]), wp.randf(s, lo[2], hi[2]))
            q = wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), wp.randf(s, yaw_low[k], yaw_high[k]))
            for j in range(3):
                joint_q[i, c + j] = p[j]
            for j in range(4):
                joint_q[i, c + 3 + j] = q[j]
            for j in range(6):
                joint_qd[i, first_dof[k] + j] = 0.0
        rng[i] = s
