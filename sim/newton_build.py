"""Newton models from robot files: MJCF and URDF through Newton's importers, replication into ``world_count``
worlds, the solver by name, and the joint bookkeeping (coordinate and dof indices, default poses, sites) that
:class:`horde.sim.newton_world.NewtonWorld` and the tasks need."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import warp as wp

if TYPE_CHECKING:  # newton is imported where used: importing horde.envs stays light
    import newton

__all__ = ["MAXIMAL_SOLVERS", "MUJOCO_SOLVERS", "SOLVERS", "resolve_solver", "build_model", "joint_dof_layout", "load_mjcf", "load_robot", "make_solver",
           "set_joint_positions", "site_frame"]

SOLVERS = ("auto", "mujoco", "mujoco-c", "xpbd", "featherstone")
"""Solver names accepted by ``SimConfig.solver``; ``auto`` is mujoco-c on the CPU and mujoco elsewhere
(:func:`resolve_solver`)."""

MUJOCO_SOLVERS = ("auto", "mujoco", "mujoco-c")
"""MuJoCo-Warp (through Newton's ``SolverMuJoCo``) and MuJoCo's C engine (:mod:`horde.sim.mujoco_batch`): both
step the MuJoCo model Newton converts, with MuJoCo's own contacts."""


def resolve_solver(name: str, device: str) -> str:
    """``auto`` as the solver for ``device``: MuJoCo's C engine on the CPU (5-8x MuJoCo-Warp on Warp's
    one-thread CPU backend, ``benchmarks/mujoco_batch.py``), MuJoCo-Warp on a GPU; other names unchanged."""
    if name != "auto":
        return name
    return "mujoco-c" if wp.get_device(device).is_cpu else "mujoco"

MAXIMAL_SOLVERS = ("xpbd",)
"""Solvers that advance body_q/body_qd only; joint_q/joint_qd are refreshed with ``eval_ik`` after each substep."""


def load_mjcf(path: str, *, contact_ke: float, solver: str, floating: bool | None = None,
              self_collisions: bool = True, meshes: bool = True, show_colliders: bool = False) -> newton.ModelBuilder:
    """A builder holding one robot from an MJCF file (its floor geoms ignored) with horde's contact stiffness.

    ``meshes=False`` skips visual and mesh geoms (models whose colliders are primitives load without a mesh
    library). ``show_colliders`` renders collision geoms too (Newton hides them in a model that has visual geoms:
    the lift's gripper is colliders only); physics is unchanged."""
    import newton

    b = newton.ModelBuilder()
    if solver in MUJOCO_SOLVERS:
        newton.solvers.SolverMuJoCo.register_custom_attributes(b)
    b.default_shape_cfg.ke = contact_ke
    b.add_mjcf(path, ignore_names=["floor", "ground"], floating=floating, enable_self_collisions=self_collisions,
               parse_meshes=meshes, parse_visuals=meshes, force_show_colliders=show_colliders)
    if not self_collisions and "mujoco:contype" in b.custom_attributes:
        # MuJoCo's own filter too: robot geoms touch only the ground (contype 0, conaffinity 1; the ground is 1/1)
        for sh in range(b.shape_count):
            b.custom_attributes["mujoco:contype"].values[sh] = 0
            b.custom_attributes["mujoco:conaffinity"].values[sh] = 1
    return b


def load_robot(path: str, *, contact_ke: float, solver: str, floating: bool | None = None,
               self_collisions: bool = True, meshes: bool = True, show_colliders: bool = False) -> newton.ModelBuilder:
    """A builder holding one robot from an MJCF (``.xml``) or URDF (``.urdf``) file, through Newton's importers."""
    if not str(path).lower().endswith(".urdf"):
        return load_mjcf(path, contact_ke=contact_ke, solver=solver, floating=floating,
                         self_collisions=self_collisions, meshes=meshes)
    import newton

    b = newton.ModelBuilder()
    if solver in MUJOCO_SOLVERS:
        newton.solvers.SolverMuJoCo.register_custom_attributes(b)
    b.default_shape_cfg.ke = contact_ke
    b.add_urdf(path, floating=floating, enable_self_collisions=self_collisions)
    return b


def build_model(robot: newton.ModelBuilder, *, world_count: int, device: str, solver: str, ground: bool,
                contact_ke: float, terrain=None, requires_grad: bool = False, drives=()) -> newton.Model:
    """``world_count`` separate copies of ``robot`` (no spacing: worlds never collide), finalized on ``device``.

    ``terrain`` (an object with ``add_to(builder)``, e.g. :class:`horde.sim.terrain.Terrain`) replaces the ground
    plane: its static shapes are global, shared by every world. ``requires_grad`` gives the model's arrays gradient
    buffers (differentiable rollouts, :mod:`horde.sim.diff_articulation`). ``drives`` (dof indices of one world)
    get a position drive of unit gains, which Newton's MuJoCo conversion makes a MuJoCo actuator: the ``mujoco-c``
    backend then runs horde's PD law as MuJoCo's own actuators (:mod:`horde.sim.mujoco_batch`)."""
    import newton

    scene = newton.ModelBuilder()
    if solver in MUJOCO_SOLVERS:
        newton.solvers.SolverMuJoCo.register_custom_attributes(scene)
    scene.default_shape_cfg.ke = contact_ke
    if terrain is not None:
        terrain.add_to(scene)
    elif ground:
        scene.add_ground_plane()
    scene.replicate(robot, world_count)
    # horde computes joint torques itself (effort limits, one PD law for every solver): no solver-side drives, but
    # for the drives mujoco-c asks for, whose gains it sets per env itself
    scene.joint_target_ke = [0.0] * len(scene.joint_target_ke)
    scene.joint_target_kd = [0.0] * len(scene.joint_target_kd)
    for d in drives:
        scene.joint_target_mode[d] = int(newton.JointTargetMode.POSITION)
        scene.joint_target_ke[d] = scene.joint_target_kd[d] = 1.0
    model = scene.finalize(device=device, requires_grad=requires_grad)
    if solver in MUJOCO_SOLVERS:
        # Newton gives every shape a 0.1 m contact gap (its own pipeline's speculative contacts); as MuJoCo's geom gap
        # it makes MuJoCo (C and Warp) detect every contact up to margin + 0.2 m away and hand its solver none of the
        # extra ones: on the rough terrain's heightfield up to 50 per geom pair (505 contacts for one quadruped whose
        # solver used 3; 6x the step time on the CPU, and MuJoCo-Warp's contact buffer sized for them). The solver's
        # rows are the same without it (benchmarks/README.md, "The rough terrain's contact gap").
        model.shape_gap.fill_(0.0)
    return model


def make_solver(model: newton.Model, name: str, *, iterations: int = 0, max_contacts: int = 40,
                max_constraints: int = 100):
    """The Newton solver called ``name`` (one of :data:`SOLVERS`), failing with the valid names."""
    import newton

    if name == "mujoco":
        kw = {"iterations": iterations} if iterations > 0 else {}
        # nconmax/njmax are per world: an ant has at most a few dozen contacts and constraint rows.
        return newton.solvers.SolverMuJoCo(model, njmax=max_constraints, nconmax=max_contacts, **kw)
    if name == "xpbd":
        return newton.solvers.SolverXPBD(model, iterations=iterations if iterations > 0 else 2)
    if name == "featherstone":
        return newton.solvers.SolverFeatherstone(model)
    raise ValueError(f"unknown solver '{name}'; valid solvers: {', '.join(SOLVERS)}")


def _split_label(label: str, names: set[str]) -> list[str] | None:
    """``label`` as MJCF joint names joined by "_" (how Newton names the one joint it makes of a body's hinges)."""
    if label in names:
        return [label]
    for k in range(1, len(label)):
        if label[k] == "_" and label[:k] in names:
            rest = _split_label(label[k + 1:], names)
            if rest is not None:
                return [label[:k], *rest]
    return None


def joint_dof_layout(builder: newton.ModelBuilder, joint_names: Sequence[str]) -> tuple[list[int], list[int]]:
    """Coordinate and dof index (within one world) of each named MJCF hinge.

    A single hinge is a Newton joint of its own (matched by label suffix). Newton's MJCF importer turns a body with
    several hinges (the humanoid's hips, abdomen, shoulders) into one multi-dof joint labelled with the hinge names
    joined by "_", its dofs in MJCF order: a hinge's index is that joint's start plus its position in the list.
    """
    wanted = set(joint_names)
    where: dict[str, tuple[int, int]] = {}
    for j, label in enumerate(builder.joint_label):
        for k, name in enumerate(_split_label(label.split("/")[-1], wanted) or []):
            if name in where:
                raise ValueError(f"joint '{name}' matches more than one Newton joint")
            where[name] = (builder.joint_q_start[j] + k, builder.joint_qd_start[j] + k)
    missing = [n for n in joint_names if n not in where]
    if missing:
        raise ValueError(f"joints {missing} not found; Newton joints: "
                         f"{', '.join(lbl.split('/')[-1] for lbl in builder.joint_label)}")
    return [where[n][0] for n in joint_names], [where[n][1] for n in joint_names]


def set_joint_positions(builder: newton.ModelBuilder, joint_names: Sequence[str], values: Sequence[float]) -> None:
    """Write the default (initial) coordinate of each named single-dof joint into ``builder``."""
    if len(values) != len(joint_names):
        raise ValueError(f"{len(values)} default joint positions for {len(joint_names)} joints")
    q_idx, _ = joint_dof_layout(builder, joint_names)
    for qi, v in zip(q_idx, values):
        builder.joint_q[qi] = float(v)


def site_frame(builder: newton.ModelBuilder, name: str) -> tuple[int, tuple[float, float, float]]:
    """(body index, position in that body's frame [m]) of the MJCF site (or shape) labelled ``name``."""
    hits = [s for s, lbl in enumerate(builder.shape_label) if lbl.split("/")[-1] == name]
    if len(hits) != 1:
        raise ValueError(f"site '{name}' matches {len(hits)} shapes")
    s = hits[0]
    p = wp.transform_get_translation(builder.shape_transform[s])
    return builder.shape_body[s], (float(p[0]), float(p[1]), float(p[2]))
