"""The MuJoCo model of a Newton robot: the one Newton's ``SolverMuJoCo`` builds for MuJoCo-Warp, which
:class:`horde.sim.mujoco_batch.MujocoCBackend` steps on MuJoCo's C engine, and :func:`match_newton`, which gives a
robot's own MJCF model (the sim-to-sim twin's) the same solver options and contact parameters."""

from __future__ import annotations

import contextlib
import warnings
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import mujoco
    import newton

__all__ = ["NEWTON_OPTIONS", "extra_sensors", "match_newton", "newton_mujoco_model"]


@contextlib.contextmanager
def extra_sensors(add):
    """While Newton compiles its MuJoCo model, let ``add(spec)`` add sensors to the spec first."""
    import mujoco

    compile_ = mujoco.MjSpec.compile

    def compile_with_sensors(spec, *args, **kwargs):
        add(spec)
        return compile_(spec, *args, **kwargs)

    mujoco.MjSpec.compile = compile_with_sensors
    try:
        yield
    finally:
        mujoco.MjSpec.compile = compile_


NEWTON_OPTIONS = ("integrator", "solver", "cone", "iterations", "ls_iterations", "tolerance", "ls_tolerance",
                  "impratio", "noslip_iterations")
"""MuJoCo options Newton's conversion sets (the MJCF's may differ: the ant's says Euler, Newton uses implicitfast)."""


def newton_mujoco_model(robot: newton.ModelBuilder, *, ground: bool, contact_ke: float, terrain=None,
                        max_contacts: int = 40, max_constraints: int = 100, iterations: int = 0, drives=()):
    """The MuJoCo model Newton's ``SolverMuJoCo`` makes of one world of ``robot`` (what MuJoCo-Warp steps), and the
    converting solver (its joint-start and body/geom maps); ``drives``: dofs that get a MuJoCo position actuator
    (:func:`horde.sim.newton_build.build_model`)."""
    import newton

    from horde.sim.newton_build import build_model

    one = build_model(robot, world_count=1, device="cpu", solver="mujoco", ground=ground, contact_ke=contact_ke,
                      terrain=terrain, drives=drives)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(nconmax|njmax).*")  # MuJoCo-Warp sizes; C grows its arena
        kw = {"iterations": iterations} if iterations > 0 else {}
        conv = newton.solvers.SolverMuJoCo(one, use_mujoco_cpu=True, njmax=max_constraints, nconmax=max_contacts,
                                           **kw)
    return one, conv


def match_newton(model: mujoco.MjModel, newton_model: mujoco.MjModel) -> list[str]:
    """Give ``model`` (the robot's MJCF compiled by MuJoCo itself, e.g. a sim-to-sim twin) the solver options and
    contact parameters Newton gives the same robot (``newton_model``), so both simulate with one set; returns what
    changed. Contact parameters are copied where Newton gives every geom one value (horde's robots: Newton derives
    them from horde's contact stiffness); per-geom values are left as they are, and the returned list says so."""
    import mujoco

    changes = []
    for name in NEWTON_OPTIONS:
        old, new = getattr(model.opt, name), getattr(newton_model.opt, name)
        if old != new:
            setattr(model.opt, name, new)
            changes.append(f"opt.{name} {old} -> {new}")
    multiccd = int(mujoco.mjtDisableBit.mjDSBL_MULTICCD)
    if newton_model.opt.disableflags & multiccd and not model.opt.disableflags & multiccd:
        model.opt.disableflags |= multiccd
        changes.append("multi-CCD off")
    for field in ("geom_solref", "geom_solimp"):
        values = np.unique(getattr(newton_model, field), axis=0)
        if len(values) != 1:
            changes.append(f"{field} left as the MJCF's (Newton's differs between geoms)")
            continue
        old = np.unique(getattr(model, field), axis=0)
        if len(old) != 1 or not np.allclose(old[0], values[0]):
            getattr(model, field)[:] = values[0]
            changes.append(f"{field} {old.round(4).tolist()} -> {values[0].round(4).tolist()}")
    return changes
