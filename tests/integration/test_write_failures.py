"""A write that fails (a full disk, a file-size limit, a path that cannot be made) ends in one line naming the file
and the cause, exit 2, and the last good checkpoint stays loadable (issue 72, item 2)."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys

import pytest
import torch

from horde.cli import write_failure
from horde.train.checkpoint import CheckpointError, load_checkpoint, save_checkpoint


def _horde(*args: str, cwd, limit_bytes: int | None = None) -> subprocess.CompletedProcess:
    def limit():  # RLIMIT_FSIZE: a write past it fails with EFBIG (Python ignores SIGXFSZ)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", "horde.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, preexec_fn=limit if limit_bytes else None)


def test_a_file_size_limit_mid_run_is_one_line(tmp_path):
    r = _horde("train", "task=cartpole", "max_iterations=2", f"run_root={tmp_path}", cwd=tmp_path,
               limit_bytes=40 * 1024)  # the config and the first events fit; a checkpoint (~68 KB) does not
    assert r.returncode == 2, r.stderr
    (line,) = [ln for ln in r.stderr.splitlines() if "error" in ln]
    assert "could not write" in line and "model_2.pt" in line and "(EFBIG)" in line
    assert "Traceback" not in r.stderr
    assert not list(tmp_path.glob("cartpole/*/.*.tmp"))  # no temporary file left behind


def test_a_run_root_that_cannot_be_made_is_one_line(tmp_path):
    r = _horde("train", "task=cartpole", "max_iterations=1", "run_root=/proc/horde_runs", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1] == ("horde train: error: could not write /proc/horde_runs: No such file "
                                                 "or directory (ENOENT)")


def test_a_failed_save_keeps_the_checkpoint_before_it(tmp_path, monkeypatch):
    good = save_checkpoint(tmp_path / "model_1.pt", {"iteration": 1, "task": "t", "config": {},
                                                      "actor_state_dict": {}})

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(CheckpointError, match=r"could not write .*model_1.pt: No space left on device \(ENOSPC\); the "
                                              r"checkpoint before it is intact"):
        save_checkpoint(good, {"iteration": 2, "task": "t", "config": {}, "actor_state_dict": {}})
    assert load_checkpoint(good)["iteration"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["model_1.pt"]


def test_write_failure_names_the_file_and_the_cause():
    assert write_failure(OSError(errno.EROFS, "Read-only file system", "/ro/x.png")) == (
        "could not write /ro/x.png: Read-only file system (EROFS)")
    try:  # a failure raised while handling the write's error still names the file
        try:
            raise OSError(errno.ENOSPC, "No space left on device", "/data/run/model_5.pt")
        except OSError:
            raise RuntimeError("while saving")  # noqa: B904
    except RuntimeError as exc:
        assert write_failure(exc) == "could not write /data/run/model_5.pt: No space left on device (ENOSPC)"
    assert write_failure(ValueError("x")) is None
