"""What would a cheaper MuJoCo step cost a legged task? One MuJoCo step of the task's own model (as horde steps it
on the CPU: ``mujoco-c``) from the states the task reaches, under MuJoCo options a recipe could change.

    python benchmarks/physics_options.py [--task g1-velocity] [--envs 32] [--warm 40] [--steps 20] [--repeats 5]
                                         [--stages] [--json]

The states: ``--envs`` envs of the task after ``--warm`` control steps of Gaussian actions (std 0.5: the robots
step, stumble and fall, as early in training). From each env's state (positions, velocities, the applied joint
torques of its last substep, held), every variant runs ``--steps`` ``mj_step`` calls on one thread; the variants
alternate ``--repeats`` times and each prints its median microseconds per step, its ratio to the model as horde
steps it, and the contact rows (``nefc``) of the first state. Variants (each one MuJoCo option of the same model):
``as horde steps it``; ``no sensors`` (horde's acceleration-stage sensor makes MuJoCo compute ``cfrc_ext``, the
contact forces the task reads after the last substep only); ``islands`` (MuJoCo's constraint islands, which horde
turns off so that each env solves one problem as on MuJoCo-Warp); ``elliptic cones``; ``CG solver``; ``10 solver
iterations``; ``0.1 m contact gap`` (Newton's default shape gap, which horde's MuJoCo models carried until
2026-11-28: MuJoCo then also detects the contacts up to 0.2 m away that its solver leaves out); and options that
keep the physics to rounding: ``dense Jacobian`` and ``sparse Jacobian`` (MuJoCo's ``auto`` picks by the dof
count), ``no midphase`` (no bounding-volume pass before the geom pairs), and ``other integrator``, the other of
Euler and implicitfast (without MuJoCo's own actuators, the joints' damping is implicit under both). The contact
geometry, time step and gains are the recipe's and stay as they are.

``--stages`` adds where one step of the model as horde steps it goes, from MuJoCo's own stage timers (read through
``omp_get_wtime``, a C clock, so that timing adds no Python call): kinematics, inertia, collision, making and
projecting the constraints, velocity, actuation, the constraint solver, the integrator, and the rest of ``mj_step``
(accelerations, sensors, checks).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import statistics
import sys
import time


def _variants(mujoco) -> dict:
    dsbl = mujoco.mjtDisableBit

    def flags(x, on: int = 0, off: int = 0) -> None:
        x.opt.disableflags = (x.opt.disableflags | on) & ~off

    return {"as horde steps it": lambda x: None,
            "no sensors": lambda x: flags(x, on=int(dsbl.mjDSBL_SENSOR)),
            "islands": lambda x: flags(x, off=int(dsbl.mjDSBL_ISLAND)),
            "elliptic cones": lambda x: setattr(x.opt, "cone", int(mujoco.mjtCone.mjCONE_ELLIPTIC)),
            "CG solver": lambda x: setattr(x.opt, "solver", int(mujoco.mjtSolver.mjSOL_CG)),
            "10 solver iterations": lambda x: setattr(x.opt, "iterations", 10),
            "0.1 m contact gap": lambda x: x.geom_gap.__setitem__(slice(None), 0.1),
            "dense Jacobian": lambda x: setattr(x.opt, "jacobian", int(mujoco.mjtJacobian.mjJAC_DENSE)),
            "sparse Jacobian": lambda x: setattr(x.opt, "jacobian", int(mujoco.mjtJacobian.mjJAC_SPARSE)),
            "no midphase": lambda x: flags(x, on=int(dsbl.mjDSBL_MIDPHASE)),
            "other integrator": lambda x: setattr(x.opt, "integrator", int(
                mujoco.mjtIntegrator.mjINT_IMPLICITFAST if x.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
                else mujoco.mjtIntegrator.mjINT_EULER))}


# MuJoCo's stage timers as --stages reports them: the top-level stages of mj_step, then the position stage's parts
STAGES = (("position", "POSITION"), ("  kinematics", "POS_KINEMATICS"), ("  inertia", "POS_INERTIA"),
          ("  collision", "POS_COLLISION"), ("  make constraints", "POS_MAKE"), ("  project constraints", "POS_PROJECT"),
          ("velocity", "VELOCITY"), ("actuation", "ACTUATION"), ("constraint solver", "CONSTRAINT"),
          ("integrator", "ADVANCE"))


def _c_clock():
    """``omp_get_wtime`` (seconds, a C function MuJoCo can call as its timer) from the OpenMP runtime torch loads, or
    None where there is none."""
    import ctypes
    import ctypes.util
    import glob
    import os

    import torch

    paths = glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libgomp*")) + [
        ctypes.util.find_library("gomp") or ""]
    for path in filter(None, paths):
        try:
            clock = ctypes.CDLL(path).omp_get_wtime
        except (OSError, AttributeError):
            continue
        clock.restype = ctypes.c_double
        return clock
    return None


def _datas(mujoco, model, sources: list) -> list:
    """A fresh ``MjData`` of ``model`` per state in ``sources``: positions, velocities and the held joint torques."""
    datas = []
    for src in sources:
        d = mujoco.MjData(model)
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = src.qpos, src.qvel, src.qfrc_applied
        datas.append(d)
    return datas


def stage_shares(mujoco, model, sources: list, steps: int) -> dict | None:
    """Microseconds per step in each of MuJoCo's stages (:data:`STAGES`, then ``rest of mj_step`` and ``step``),
    ``steps`` ``mj_step`` calls from each state in ``sources``; None where no C clock is at hand."""
    clock = _c_clock()
    if clock is None:
        return None
    datas = _datas(mujoco, model, sources)
    mujoco.set_mjcb_time(clock)
    try:
        for d in datas:
            for _ in range(steps):
                mujoco.mj_step(model, d)
    finally:
        mujoco.set_mjcb_time(None)
    timer, calls = mujoco.mjtTimer, steps * len(datas)
    us = {name: 1e6 * sum(d.timer[getattr(timer, f"mjTIMER_{t}")].duration for d in datas) / calls
          for name, t in STAGES}
    step = 1e6 * sum(d.timer[timer.mjTIMER_STEP].duration for d in datas) / calls
    top = sum(v for k, v in us.items() if not k.startswith(" "))
    return {**{k.strip(): round(v, 2) for k, v in us.items()}, "rest of mj_step": round(step - top, 2),
            "step": round(step, 2)}


def measure(task: str, envs: int, warm: int, steps: int, repeats: int, seed: int = 0,
            stages: bool = False) -> list[dict]:
    import mujoco
    import torch

    from horde.envs import get_task, make

    torch.set_num_threads(1)
    cfg = get_task(task).config
    cfg = dataclasses.replace(cfg, sim=dataclasses.replace(cfg.sim, solver="mujoco-c", cpu_threads=1))
    env = make(task, num_envs=envs, device="cpu", seed=seed, config=cfg)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(warm):
        env.step(0.5 * torch.randn(envs, env.num_actions, generator=gen))
    from mujoco_batch import held_torques

    base = env.world.backend.mj_model
    sources = [env.world.backend.batch.get_data(i) for i in range(envs)]
    held = held_torques(env)  # MuJoCo's own actuators keep their forces out of the rows' qfrc_applied
    for src, tau in zip(sources, held):
        src.qfrc_applied[:] = tau
    models = {}
    for name, change in _variants(mujoco).items():
        models[name] = copy.deepcopy(base)
        change(models[name])
    times: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(repeats):
        for name, m in models.items():
            datas = _datas(mujoco, m, sources)
            t0 = time.perf_counter()
            for d in datas:
                for _ in range(steps):
                    mujoco.mj_step(m, d)
            times[name].append(1e6 * (time.perf_counter() - t0) / (steps * envs))
    rows, ref = [], statistics.median(times["as horde steps it"])
    for name, m in models.items():
        d = _datas(mujoco, m, sources[:1])[0]
        mujoco.mj_forward(m, d)
        us = statistics.median(times[name])
        rows.append({"task": task, "variant": name, "us_per_step": round(us, 2), "vs_horde": round(us / ref, 3),
                     "nefc_first_env": int(d.nefc), "ncon_first_env": int(d.ncon), "envs": envs, "warm": warm,
                     "steps": steps, "repeats": repeats})
    if stages:
        rows.append({"task": task, "stages_us_per_step": stage_shares(mujoco, models["as horde steps it"], sources,
                                                                      steps), "envs": envs, "warm": warm,
                     "steps": steps})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="g1-velocity", help="a task stepped by MuJoCo (a legged velocity task)")
    ap.add_argument("--envs", type=int, default=32)
    ap.add_argument("--warm", type=int, default=40, help="random-action control steps before the states are taken")
    ap.add_argument("--steps", type=int, default=20, help="mj_step calls per env per timed round")
    ap.add_argument("--repeats", type=int, default=5, help="alternating rounds (the median is reported)")
    ap.add_argument("--stages", action="store_true", help="also where a step goes, from MuJoCo's stage timers")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from horde.envs import UnknownTaskError
    from horde.envs.robots import RobotNotInstalledError

    try:
        rows = measure(args.task, args.envs, args.warm, args.steps, args.repeats, stages=args.stages)
    except (UnknownTaskError, RobotNotInstalledError) as exc:
        print(f"physics_options.py: --task {args.task}: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    except AttributeError as exc:
        print(f"physics_options.py: --task {args.task} is not stepped by MuJoCo on the CPU ({exc})", file=sys.stderr)
        return 2
    for row in rows:
        if args.json:
            print(json.dumps(row))
        elif "stages_us_per_step" in row:
            shares = row["stages_us_per_step"]
            if shares is None:
                print("stages: no C clock (omp_get_wtime) found, so MuJoCo's stage timers were not read")
                continue
            print(f"where a step of the model as horde steps it goes ({shares['step']:.1f} us with the timers on):")
            parts = {name.strip() for name, _ in STAGES if name.startswith(" ")}  # the position stage's parts
            for name, us in shares.items():
                if name != "step":
                    indent = "    " if name in parts else "  "
                    print(f"{indent}{name:24s} {us:7.2f} us  {100 * us / shares['step']:5.1f}%")
        else:
            print(f"{row['variant']:20s} {row['us_per_step']:7.1f} us a step  {row['vs_horde']:.2f}x  "
                  f"(first env: {row['ncon_first_env']} contacts, {row['nefc_first_env']} constraint rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
