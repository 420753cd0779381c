"""The world as a spec: what a task simulates (:class:`WorldSpec`), apart from how a backend steps it.

A spec composes entities: one robot (:class:`RobotEntity`: its Newton builder, the joints its actuation law drives,
reset noise), free objects and static props (:mod:`horde.sim.scene`), the ground or a terrain, and sensors
(:class:`Sensors`: contact forces on named bodies, an IMU). :func:`world_from_spec` builds it on the backend that
``sim.solver`` names (:data:`BACKENDS`): Newton's own solvers (MuJoCo-Warp, XPBD, Featherstone) or MuJoCo's C engine.
A backend is a part of the world, not a subclass of it: :class:`horde.sim.newton_world.NewtonWorld` holds the
Newton model, the views, the actuation arrays, the resets and the health check, and calls its backend's hooks
(``build``, ``attach_sensors``, ``simulate``, ``after_reset``, ``snapshot``/``restore``, ``physics_state``,
``kernels``); no backend reaches into another.

::

    spec = WorldSpec(robot=RobotEntity(builder=robot, actuated_joints=joints, actuation=actuation),
                     objects=(cube,), props=(table,), sensors=Sensors(contact_bodies=fingers),
                     sim_dt=0.005, substeps=4)
    world = world_from_spec(spec, sim=cfg.sim, num_envs=4096, device="cuda:0")

A spec's robot builder is consumed by the build (the world appends the objects, props and IMU site to it): build a
second world from a fresh builder.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from horde.sim.actuation import Actuation
from horde.sim.scene import RigidObject, StaticProp

if TYPE_CHECKING:
    import newton
    import warp as wp

    from horde.sim.newton_world import NewtonWorld, SimConfig

__all__ = ["BACKENDS", "Backend", "RobotEntity", "Sensors", "WorldSpec", "world_from_spec"]


@dataclass(frozen=True, kw_only=True)
class RobotEntity:
    """The robot of every env: a legged robot (a floating base) or an arm (a fixed base), as a Newton builder."""

    builder: newton.ModelBuilder
    """The robot's model, one env (:func:`horde.sim.newton_build.load_robot`); consumed by :func:`world_from_spec`."""
    actuated_joints: tuple[str, ...]
    """The joints ``actuation`` drives, in its order (one action each)."""
    actuation: Actuation
    """The actuation law every backend applies (``policy.json`` states it)."""
    root_body: int = 0
    """Index of the root body (one env): the health check, the IMU and the base-frame twist read it."""
    q_noise: tuple[float, ...] | None = None
    """Reset noise per robot joint coordinate (uniform, +-) [m, rad]; None: none."""
    qd_noise: tuple[float, ...] | None = None
    """Reset noise per robot dof (uniform, +-) [m/s, rad/s]; None: none."""
    yaw_range: float = 0.0
    """A floating base's reset yaw is drawn in +-this [rad]."""

    @property
    def floating(self) -> bool:
        """The robot's first joint is free (a legged robot); else its base is fixed (an arm). Read from the joint
        type, which the objects a build appends (each on its own free joint) do not change."""
        import newton

        return bool(self.builder.joint_count) and int(self.builder.joint_type[0]) == int(newton.JointType.FREE)


@dataclass(frozen=True, kw_only=True)
class Sensors:
    """The sensors a world reads every control step (from the last substep)."""

    contact_bodies: tuple[str, ...] = ()
    """Bodies whose total contact force the world reports (``contact_forces`` [num_envs, bodies, 3] [N])."""
    imu_site: str | None = None
    """An IMU at this site of the root body (``imu_gyro``, ``imu_acc``); ``""``: at the root body's origin; None:
    no IMU."""


@dataclass(frozen=True, kw_only=True)
class WorldSpec:
    """Everything a backend needs to build a batch of worlds, per env: entities, ground, sensors and timing."""

    robot: RobotEntity
    objects: tuple[RigidObject, ...] = ()
    """Free rigid bodies, placed within their ranges at every reset (``object_pose``, ``object_vel``)."""
    props: tuple[StaticProp, ...] = ()
    """Fixed shapes (a table, a wall)."""
    ground: bool = True
    """A ground plane (unless ``terrain`` replaces it)."""
    terrain: Any = None
    """A heightfield terrain (:mod:`horde.sim.terrain`), or None."""
    sensors: Sensors = field(default_factory=Sensors)
    sim_dt: float
    """Physics substep [s]."""
    substeps: int
    """Physics substeps per control step (the task's decimation)."""


class Backend(Protocol):
    """How a world is stepped: the hooks :class:`horde.sim.newton_world.NewtonWorld` calls. A backend owns its solver
    and buffers; it reads the world's public members (``model``, ``arrays``, ``drive``, ``actuator_net``, ...)."""

    steps_mujoco_c: bool
    """True for MuJoCo's C engine (host steps between recorded graphs)."""

    def build(self, world: NewtonWorld, robot: newton.ModelBuilder) -> Any:
        """The solver of ``world.model`` (``world.solver``: randomization calls its ``notify_model_changed``)."""

    def attach_sensors(self, world: NewtonWorld) -> None:
        """Contact forces and the IMU of ``world.contact_bodies`` / ``world.imu_site``; the backend's own buffers."""

    def simulate(self, world: NewtonWorld, actions: wp.array) -> None:
        """``world.substeps`` physics steps under ``actions``; the world's views hold the result."""

    def after_reset(self, world: NewtonWorld, mask: wp.array) -> None:
        """After the world wrote the masked envs' state: the backend's own copy of it."""

    def snapshot(self, world: NewtonWorld) -> Any:
        """The backend's own state (for :meth:`NewtonWorld.warm_up`, which steps once and restores)."""

    def restore(self, world: NewtonWorld, saved: Any) -> None:
        """Back to a :meth:`snapshot`."""

    def physics_state(self, world: NewtonWorld) -> dict:
        """The backend's share of an exact checkpoint."""

    def kernels(self, world: NewtonWorld) -> tuple:
        """The backend's Warp kernels that a step launches."""


def _newton_backend() -> Backend:
    from horde.sim.newton_world import NewtonSolverBackend

    return NewtonSolverBackend()


def _mujoco_c_backend() -> Backend:
    from horde.sim.mujoco_batch import MujocoCBackend

    return MujocoCBackend()


BACKENDS = {"mujoco": _newton_backend, "xpbd": _newton_backend, "featherstone": _newton_backend,
            "mujoco-c": _mujoco_c_backend}
"""Solver name (``task.sim.solver``, ``auto`` resolved for the device) -> a new backend that steps it."""


def world_from_spec(spec: WorldSpec, *, sim: SimConfig, num_envs: int, device: str) -> NewtonWorld:
    """``num_envs`` copies of ``spec`` on ``device``, stepped by the backend of ``sim.solver``."""
    from horde.sim.newton_build import SOLVERS, resolve_solver
    from horde.sim.newton_world import NewtonWorld

    if sim.solver not in SOLVERS:
        raise ValueError(f"unknown solver '{sim.solver}'; valid solvers: {', '.join(SOLVERS)}")
    sim = dataclasses.replace(sim, solver=resolve_solver(sim.solver, device))
    return NewtonWorld(spec, sim=sim, num_envs=num_envs, device=device, backend=BACKENDS[sim.solver]())
