"""Scratch folders for the benchmarks' training runs, removed when the process exits.

A benchmark trains into a run root of its own (checkpoints, TensorBoard events) and reads only figures back, so
nothing of it is worth keeping: ``scratch_dir`` gives such a root under the system's temporary folder and removes it
at exit, so that ``make test`` and the benchmarks leave nothing behind in ``/tmp``.
"""
from __future__ import annotations

import atexit
import shutil
import tempfile


def scratch_dir(prefix: str) -> str:
    """A new empty folder named ``<prefix>...`` that is removed, with what it holds, when the process exits."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path
