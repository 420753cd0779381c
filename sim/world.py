"""The world protocol: what tasks, renderers, viewers and deploy may read and call of a simulated world.

:class:`horde.sim.newton_world.NewtonWorld` satisfies it on each backend (MuJoCo-Warp, XPBD, Featherstone on Newton;
MuJoCo's C engine, :class:`horde.sim.mujoco_batch.MujocoCBackend`); a task builds one with
:func:`horde.sim.spec.world_from_spec` from a :class:`horde.sim.spec.WorldSpec` (its robot, scene, sensors and
:class:`horde.sim.actuation.Actuation`) and uses nothing else (``tests/contract/test_world_protocol.py`` checks both backends and that envs/, deploy/ and train/
read no other attribute of a world). Arrays are ``[num_envs, ...]`` on the world's device; torch views are
zero-copy and created once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import torch
import warp as wp

from horde.sim.actuation import Actuation

__all__ = ["WORLD_MEMBERS", "World"]


@runtime_checkable
class World(Protocol):
    """A batch of ``num_envs`` copies of one robot (with free objects and static props) stepped together."""

    num_envs: int
    device: str
    sim_dt: float
    """Physics substep [s]."""
    substeps: int
    """Physics substeps per control step."""
    root_body: int
    """Index of the robot's root body (one env)."""
    bodies: int
    """Bodies per env."""
    model: Any
    """The Newton model of the scene (renderers and viewers draw it; its per-env fields are what randomization
    changes)."""
    state_0: Any
    """The Newton state the last step ended in (viewers and cameras draw it; the body views alias it)."""
    arrays: Any
    """:class:`horde.sim.newton_world.WorldArrays`: the Warp arrays kernels read and write."""
    actuation: Actuation
    """The actuation law applied every substep (``policy.json`` states it)."""
    actuated_joints: Sequence[str]
    """The joints ``actuation`` drives, in its order."""
    joint_q: torch.Tensor
    joint_qd: torch.Tensor
    body_pose: torch.Tensor
    """World-frame body poses [num_envs, bodies, 7] (position, quaternion xyzw)."""
    body_vel: torch.Tensor
    root_pose: torch.Tensor
    root_vel: torch.Tensor
    object_pose: torch.Tensor
    """Poses of the free objects [num_envs, objects, 7]."""
    object_vel: torch.Tensor
    joint_f: torch.Tensor
    """Generalized forces the actuation law applied [num_envs, dofs]."""
    root_vel_base: torch.Tensor
    """The root's linear and angular velocity in its own frame [num_envs, 6]."""
    contact_forces: torch.Tensor
    """Total contact force on each contact body [num_envs, bodies, 3] [N]."""
    spawn_origin: torch.Tensor
    """Where each env's robot is placed at reset [num_envs, 3] [m] (terrain tiles)."""
    imu_gyro: torch.Tensor
    imu_acc: torch.Tensor
    imu_rotation: tuple[float, float, float, float]
    unstable: torch.Tensor
    """The health check flagged the env this step (non-finite or runaway state)."""

    @property
    def kernels(self) -> tuple:
        """The Warp kernels a step launches (precompiled, and built for CUDA by ``horde compile-cuda``)."""

    def simulate(self, actions: wp.array) -> None:
        """``substeps`` x (actuation law, collision, solver step) for one action per actuated joint."""

    def inspect(self) -> None:
        """After the physics: health check, contact forces, IMU, the body views."""

    def reset(self, mask: wp.array, rng: wp.array, on_reset: Callable[[wp.array, wp.array], None] | None = None
              ) -> None:
        """The envs in ``mask`` to their default state with reset noise from each env's ``rng`` stream;
        ``on_reset(mask, rng)`` (a task's reset events) runs after the joint state is written and before the bodies
        are placed from it, so what it writes into the joint state is what the envs start from."""

    def warm_up(self) -> None:
        """Compile and run the step once before anything is recorded."""

    def object_body(self, name: str) -> int:
        """Body index (one env) of the free object ``name``."""

    def pop_unstable_count(self) -> float:
        """Envs the health check reset since the last call."""

    def physics_state(self) -> dict[str, torch.Tensor]:
        """What a checkpoint must hold to resume the physics exactly."""


WORLD_MEMBERS = frozenset(
    name for cls in (World,) for name in (*cls.__annotations__, *(k for k in vars(cls) if not k.startswith("_"))))
"""Every attribute and method of the protocol: the only names envs/, deploy/ and train/ may read of a world."""
