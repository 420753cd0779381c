"""Compile the CUDA code of every loaded Warp module ahead of time, on a machine with no GPU and no driver.

Warp's wheel links NVRTC statically, so ``wp.compile_aot_module(module, arch=...)`` turns a module's generated
CUDA C++ into SASS for any architecture without a GPU. Many kernels (MuJoCo-Warp's, Newton's solver kernels) are
created at run time with options their solver sets when it is built, so the set that matters is the set a CPU
run *loaded*: build the envs first, then call :func:`compile_loaded_modules`.

What a clean pass proves: every kernel those envs launch type-checks, generates and compiles as CUDA for the
given architectures (no CPU-only native code, no builtin that has no CUDA overload, no codegen path that breaks
on device). What it does not prove: that the kernels run correctly, fast or within a GPU's register and shared
memory limits, nor anything about kernels that only a CUDA run creates (CUDA-graph conditional nodes, GPU-only
tiled variants); those need a GPU (``pytest -m gpu``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import warp as wp

from horde.sim.device import native_output_captured

if TYPE_CHECKING:
    from warp._src.context import Module

JETSON_ORIN = 87
"""sm_87: Jetson AGX/NX Orin (JetPack 6)."""
HOPPER = 90
"""sm_90: H100/H200."""
DEFAULT_ARCHS = (JETSON_ORIN, HOPPER)


@dataclass(frozen=True)
class AotFailure:
    """One module that did not compile for one architecture."""

    module: str
    """Warp module name (a Python module, or a runtime-created kernel's own module)."""
    origin: str
    """Python module that defined its kernels (``horde.envs.quadruped``, ``mujoco_warp._src.solver``, ...)."""
    arch: int
    """The SM architecture it was compiled for."""
    message: str
    """The compiler's error lines."""

    def __str__(self) -> str:
        return f"{self.module} ({self.origin}) for sm_{self.arch}: {self.message}"


def module_origin(module: Module) -> str:
    """The Python module(s) whose code defined ``module``'s kernels, for the report."""
    origins = sorted({getattr(k.func, "__module__", None) or "warp" for k in module.kernels.values()})
    return ", ".join(origins) or module.name


def loaded_modules(origin: str | None = None) -> list[Module]:
    """Every Warp module that has been loaded on some device in this process (and so was launched or captured),
    sorted by name; with ``origin`` (a Python package, ``horde``) only those with a kernel defined in it."""
    from warp._src.context import user_modules

    modules = [m for _, m in sorted(user_modules.items()) if m.execs and m.kernels]
    if origin is not None:
        modules = [m for m in modules if any(o == origin or o.startswith(origin + ".")
                                             for o in module_origin(m).split(", "))]
    return modules


def _error_lines(log: str, exc: BaseException) -> str:
    lines = [ln.strip() for ln in log.splitlines() if re.search(r"\berror\b", ln, re.IGNORECASE)]
    lines = [ln for ln in lines if not ln.startswith("Warp NVRTC compilation error")] or [str(exc)]
    return " | ".join(lines[:6])


def compile_module(module: Module, archs=DEFAULT_ARCHS, *, module_dir: str | Path | None = None
                   ) -> list[AotFailure]:
    """Compile ``module`` to CUBIN for each of ``archs``; the failures, each with the compiler's error lines."""
    failures = []
    for arch in archs:
        with native_output_captured() as log:
            try:
                wp.compile_aot_module(module, arch=arch, module_dir=module_dir, use_ptx=False)
                error = None
            except Exception as exc:  # Warp raises a bare Exception; the reason is in NVRTC's log
                error = exc
        if error is not None:
            failures.append(AotFailure(module=module.name, origin=module_origin(module), arch=arch,
                                       message=_error_lines(log[0], error)))
    return failures


def compile_loaded_modules(archs=DEFAULT_ARCHS, *, module_dir: str | Path | None = None, threads: int | None = None,
                           spread: bool = False, origin: str | None = None) -> tuple[list[str], list[AotFailure]]:
    """Compile every loaded module (``origin``: those :func:`loaded_modules` keeps) for ``archs``. Returns the
    module names compiled and the failures.

    NVRTC runs outside the GIL, so ``threads`` workers (default: the CPU count) compile modules side by side; a
    module that fails is compiled once more alone, with the compiler's log captured for the report.
    ``module_dir=None`` writes into Warp's kernel cache, where a module whose code and options did not change is
    found compiled and skipped on the next call. ``spread`` compiles each module once, for the archs in turn
    (module k for ``archs[k % len(archs)]``): every module and every arch is compiled, in half the time for two.
    """
    from concurrent.futures import ThreadPoolExecutor

    modules = loaded_modules(origin)
    jobs = ([(m, archs[k % len(archs)]) for k, m in enumerate(modules)] if spread
            else [(m, arch) for m in modules for arch in archs])

    def build(job) -> bool:
        module, arch = job
        try:
            wp.compile_aot_module(module, arch=arch, module_dir=module_dir, use_ptx=False)
            return True
        except Exception:  # Warp raises a bare Exception; the log is read on the second, lone compile below
            return False

    # NVRTC's log of a failing module is written again below, one module at a time, where it can be read
    with native_output_captured(), ThreadPoolExecutor(max_workers=threads or os.cpu_count() or 1) as pool:
        ok = list(pool.map(build, jobs))
    failures = []
    for (module, arch), passed in zip(jobs, ok, strict=True):
        if not passed:
            failures += compile_module(module, (arch,), module_dir=module_dir)
    return [m.name for m in modules], failures
