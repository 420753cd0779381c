"""Run a benchmark script's ``main(argv)`` in the test's process.

A benchmark in quick mode works for 1-5 s; as a process of its own it first pays 6-20 s of imports (torch, Warp,
and for the Newton tasks Newton and MuJoCo-Warp, whose kernels are parsed on import) that a pytest worker has
already paid. Tests whose subject is the figures a script prints run it here; tests of what a process does (an
error line, a digest that must not depend on the process, a script that starts processes of its own) keep
``subprocess``, and ``run_all.py``'s test runs a script as ``make bench`` does."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import subprocess
import sys
from pathlib import Path

import torch

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _module(script: str):
    """``benchmarks/<script>`` imported once per process (as ``bench_<name>``), with benchmarks/ on the path for
    the helpers it imports (``learning``)."""
    name = "bench_" + Path(script).stem
    if name not in sys.modules:
        if str(BENCH) not in sys.path:
            sys.path.append(str(BENCH))
        spec = importlib.util.spec_from_file_location(name, BENCH / script)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def run_benchmark(script: str, *args: str) -> subprocess.CompletedProcess:
    """``python benchmarks/<script> <args>`` as ``main(list(args))`` here: its exit code and what it printed,
    shaped like ``subprocess.run(..., capture_output=True, text=True)``'s result. torch's thread count, the working
    directory and the environment are restored afterwards (scripts set them for their own process)."""
    main = _module(script).main
    threads, cwd, environ = torch.get_num_threads(), os.getcwd(), dict(os.environ)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse and the scripts' one-line errors
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if not isinstance(exc.code, int | None):
                    print(exc.code, file=sys.stderr)
    finally:
        torch.set_num_threads(threads)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
    return subprocess.CompletedProcess([script, *args], int(code or 0), out.getvalue(), err.getvalue())
