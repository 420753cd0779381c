"""Shared fixtures: one torch thread (the machines are 2-core and shared), a small trained cartpole run."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from clihelp import run_cli

torch.set_num_threads(1)


def _one_build_per_module():
    """pytest-xdist's workers share Warp's kernel cache, and with an empty cache two workers that need the same
    module at once both compile it (Warp builds in a folder of its own per process, then renames). A file lock per
    module makes the second wait and then load the first one's build. Test infrastructure only: it wraps a private
    Warp method, and where that method is missing the tests run without the lock."""
    import fcntl
    import functools
    import hashlib
    import os

    import warp as wp

    try:
        from warp._src.context import Module
    except ImportError:
        return
    compile_module = getattr(Module, "_compile", None)
    if compile_module is None or getattr(compile_module, "horde_locked", False):
        return

    @functools.wraps(compile_module)
    def locked(self, device=None, output_dir=None, *args, **kwargs):
        folder = os.path.join(wp.config.kernel_cache_dir or ".", "horde_build_locks")
        os.makedirs(folder, exist_ok=True)
        key = hashlib.sha1(f"{self.name}|{output_dir}".encode()).hexdigest()[:16]
        with open(os.path.join(folder, key), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                return compile_module(self, device, output_dir, *args, **kwargs)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    locked.horde_locked = True
    Module._compile = locked


_one_build_per_module()


def pytest_collection_modifyitems(config, items):
    """``@pytest.mark.gpu`` tests need CUDA: without a usable device they skip, with that reason. On a GPU machine
    ``pytest -m gpu`` runs exactly them."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (torch sees none here); run `pytest -m gpu` on a GPU machine")
    for item in items:
        if item.get_closest_marker("gpu"):  # not `"gpu" in item.keywords`: that also matches the folder tests/gpu
            item.add_marker(skip)


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """A 3-iteration cartpole run made through the CLI (not trained to competence; for plumbing tests)."""
    root = tmp_path_factory.mktemp("runs")
    # with an observation normalizer (the tuned cartpole config has none): export tests check it is in the graph
    proc = run_cli("train", "task=cartpole", "num_envs=32", "max_iterations=3", "save_interval=2",
                   "algo.policy.obs_normalization=true", f"run_root={root}", cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = list((root / "cartpole").iterdir())
    assert len(runs) == 1
    return runs[0]
