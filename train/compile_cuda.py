"""``horde compile-cuda``: build every task on the CPU, then compile every Warp module it loaded for GPU targets.

    horde compile-cuda                      # sm_87 (Jetson Orin) and sm_90 (H100), every registered task
    horde compile-cuda archs=86,90 tasks=quadruped,reach
    horde compile-cuda origin=horde         # only the modules with a kernel of horde's (make test's check)

Runs on a machine with no GPU (Warp's NVRTC). Compiled modules go to Warp's kernel cache, so a second run skips
what did not change. See :mod:`horde.sim.cuda_aot` for what a pass does and does not prove.
"""

from __future__ import annotations

import time

import dataclasses

import torch

from horde.sim.cuda_aot import DEFAULT_ARCHS, compile_loaded_modules

EXTRA_VARIANTS: dict[str, list[list[str]]] = {"quadruped": [["task.robot=go2"]]}
"""Configs besides the default whose model specializes other kernels (a different robot)."""


class CudaCompileError(RuntimeError):
    """One or more modules did not compile; the message names each module and the compiler's error."""


def exercise_task(name: str, overrides: list[str] | None = None, *, num_envs: int = 4, steps: int = 3,
                  gpu_solver: bool = True) -> None:
    """Build ``name`` on the CPU and step it with random actions, so every kernel of its step is loaded; for a
    differentiable task also run its taped rollout forward and backward. ``gpu_solver``: an articulated task on the
    solver a GPU runs (MuJoCo-Warp), not the CPU's default (MuJoCo's C engine, which has no CUDA code; its
    Warp kernels are the same modules apart from ``horde.sim.mujoco_batch``'s)."""
    from horde.envs import get_task, make
    from horde.envs import make_diff_task
    from horde.train.config import compose

    cfg = compose([f"task={name}", *(overrides or [])])[0].task
    sim = getattr(cfg, "sim", None)
    if gpu_solver and sim is not None and sim.solver == "auto":  # the solver a GPU runs
        cfg.sim = dataclasses.replace(sim, solver="mujoco")
    env = make(name, num_envs=num_envs, seed=0, config=cfg)
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        env.step(torch.rand(num_envs, env.num_actions, generator=g) * 2 - 1)
    env.reset()
    if get_task(name).differentiable:
        diff = make_diff_task(name, config=cfg)
        state = diff.sample_state(num_envs, g).requires_grad_(True)
        actions = torch.zeros(num_envs, env.num_actions, requires_grad=True)
        diff.rollout.step(state, actions).sum().backward()


def compile_tasks(tasks: list[str] | None = None, archs=DEFAULT_ARCHS, *, quiet: bool = False,
                  variants: dict[str, list[list[str]]] | None = None, spread: bool = False,
                  origin: str | None = None, gpu_solver: bool = True) -> dict:
    """Exercise ``tasks`` (default: every registered one, plus :data:`EXTRA_VARIANTS` whose packages are
    installed), then compile every loaded module for ``archs`` (``spread``: each module for one of them in turn,
    :func:`horde.sim.cuda_aot.compile_loaded_modules`; ``origin="horde"``: only the modules with a kernel of horde's;
    ``gpu_solver``: :func:`exercise_task`'s). Raises :class:`CudaCompileError` on a failure."""
    from horde.envs import task_names
    from horde.envs.robots import RobotNotInstalledError

    supported = supported_archs()
    unknown = [a for a in archs if a not in supported]
    if unknown:
        raise CudaCompileError(f"archs={','.join(map(str, archs))}: NVRTC in this Warp build compiles for "
                               f"{', '.join(map(str, sorted(supported)))} (sm_87 Jetson Orin, sm_90 H100)")
    variants = EXTRA_VARIANTS if variants is None else variants
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    t0 = time.perf_counter()
    built = []
    for name in tasks or task_names():
        for overrides in [[], *variants.get(name, [])]:
            try:
                exercise_task(name, overrides, gpu_solver=gpu_solver)
            except RobotNotInstalledError as exc:
                say(f"skipped {name} {' '.join(overrides)}: {exc}")
                continue
            built.append(" ".join([name, *overrides]))
            say(f"built {built[-1]}")
    t1 = time.perf_counter()
    modules, failures = compile_loaded_modules(archs, spread=spread, origin=origin)
    t2 = time.perf_counter()
    arch_list = ", ".join(f"sm_{a}" for a in archs) + (" in turn" if spread else "")
    of = f" of {origin}" if origin else ""
    say(f"compiled {len(modules)} Warp modules{of} for {arch_list}: {len(failures)} failure(s) "
        f"(build {t1 - t0:.0f} s, CUDA compile {t2 - t1:.0f} s)")
    if failures:
        raise CudaCompileError(f"{len(failures)} module(s) do not compile for CUDA: "
                               + "; ".join(str(f) for f in failures))
    return {"tasks": built, "modules": modules, "archs": list(archs), "build_seconds": t1 - t0,
            "compile_seconds": t2 - t1}


def supported_archs() -> set[int]:
    """SM architectures the NVRTC inside this Warp build compiles for."""
    from horde.sim.device import init_warp

    init_warp()
    from warp._src.context import runtime

    return set(runtime.nvrtc_supported_archs or ())
