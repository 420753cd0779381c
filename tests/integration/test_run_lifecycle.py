"""Exact resume, determinism, preemption by signal (SIGTERM, Ctrl-C), and data-parallel training over
torch.distributed (gloo, CPU)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from horde.train.config import ConfigError, compose
from horde.train.ppo import PPOTrainer

SMALL = ["task=cartpole", "num_envs=32", "algo.num_steps_per_env=8", "save_interval=1000"]


def _train(tmp_path, overrides):
    cfg, task, raw = compose([f"run_root={tmp_path}", *overrides])
    trainer = PPOTrainer(cfg, task, raw, quiet=True)
    summary = trainer.learn()
    return trainer, summary


def _same_state(a: PPOTrainer, b: PPOTrainer) -> None:
    for key in ("actor_state_dict", "critic_state_dict"):
        sa, sb = a.alg.save()[key], b.alg.save()[key]
        assert sa.keys() == sb.keys()
        for k in sa:
            assert torch.equal(sa[k], sb[k]), (key, k)
    oa, ob = a.alg.optimizer.state_dict()["state"], b.alg.optimizer.state_dict()["state"]
    for k in oa:
        assert torch.equal(oa[k]["exp_avg"], ob[k]["exp_avg"])
    assert a.alg.learning_rate == b.alg.learning_rate


def test_resume_continues_exactly(tmp_path):
    straight, _ = _train(tmp_path / "a", [*SMALL, "max_iterations=6", "seed=7"])
    first, _ = _train(tmp_path / "b", [*SMALL, "max_iterations=3", "seed=7"])
    cfg, task, raw = compose([f"resume={first.run_dir}", "max_iterations=6"])
    resumed = PPOTrainer(cfg, task, raw, quiet=True)
    assert resumed.iteration == 3 and resumed.run_dir == first.run_dir
    summary = resumed.learn()
    assert summary["iterations"] == 6 and (first.run_dir / "model_6.pt").is_file()
    _same_state(straight, resumed)
    assert torch.equal(straight.core.state, resumed.core.state)


def test_resume_refuses_changed_settings(tmp_path):
    first, _ = _train(tmp_path, [*SMALL, "max_iterations=1"])
    with pytest.raises(ConfigError, match="only max_iterations, save_interval, log_interval, memory_check, logger, "
                                          "wandb_project can change"):
        compose([f"resume={first.run_dir}", "num_envs=64"])


def test_deterministic_runs_repeat(tmp_path):
    a, _ = _train(tmp_path / "a", [*SMALL, "max_iterations=5", "deterministic=true", "seed=3"])
    b, _ = _train(tmp_path / "b", [*SMALL, "max_iterations=5", "deterministic=true", "seed=3"])
    c, _ = _train(tmp_path / "c", [*SMALL, "max_iterations=5", "deterministic=true", "seed=4"])
    torch.use_deterministic_algorithms(False)
    _same_state(a, b)
    with pytest.raises(AssertionError):
        _same_state(a, c)


def test_sigterm_checkpoints_and_exits_zero(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "horde", "train", "task=cartpole", "num_envs=32", "max_iterations=100000",
         "log_interval=1", "save_interval=100000", f"run_root={tmp_path}"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    for line in proc.stdout:
        if "] it 2/" in line:
            break
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out[-2000:]
    assert time.monotonic() - t0 < 60
    assert "preempted" in out
    ckpts = list(tmp_path.glob("cartpole/*/model_*.pt"))
    assert len(ckpts) == 1
    iteration = torch.load(ckpts[0], weights_only=True)["iteration"]
    assert 2 <= iteration < 100000
    summary = json.loads((ckpts[0].parent / "train_summary.json").read_text())
    assert summary["preempted"] is True


def _same_checkpoint(a: Path, b: Path) -> None:
    """Two checkpoints hold the same learner, optimizer, RNG and env state bit for bit (their configs may differ in
    max_iterations and resume)."""
    da, db = torch.load(a, weights_only=True), torch.load(b, weights_only=True)

    def same(x, y, where: str) -> None:
        if isinstance(x, torch.Tensor):
            assert isinstance(y, torch.Tensor) and x.dtype == y.dtype and torch.equal(x, y), where
        elif isinstance(x, dict):
            assert isinstance(y, dict) and x.keys() == y.keys(), where
            for k in x:
                same(x[k], y[k], f"{where}.{k}")
        elif isinstance(x, (list, tuple)):
            assert type(x) is type(y) and len(x) == len(y), where
            for k, (u, v) in enumerate(zip(x, y)):
                same(u, v, f"{where}[{k}]")
        else:
            assert x == y, (where, x, y)

    assert da.keys() == db.keys()
    for key in da.keys() - {"config"}:
        same(da[key], db[key], key)


def test_ctrl_c_saves_and_resume_continues_exactly(tmp_path):
    """SIGINT (Ctrl-C) at a real ``horde train`` process: a checkpoint after the iteration in progress, the resume
    command, exit code 130; resuming it to N iterations gives what an uninterrupted N-iteration run gives."""
    from horde.cli import main

    proc = subprocess.Popen(
        [sys.executable, "-m", "horde", "train", *SMALL, "max_iterations=100000", "seed=5", "log_interval=1",
         f"run_root={tmp_path / 'b'}"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a test runner's worker may ignore it
    )
    for line in proc.stdout:
        if "] it 2/" in line:
            break
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out[-2000:]
    ckpts = list(tmp_path.glob("b/cartpole/*/model_*.pt"))
    assert len(ckpts) == 1, out[-2000:]
    run = ckpts[0].parent
    iteration = torch.load(ckpts[0], weights_only=True)["iteration"]
    assert 2 <= iteration < 100000 and ckpts[0].name == f"model_{iteration}.pt"
    assert "[cartpole] Ctrl-C: saving a checkpoint after the iteration in progress" in out
    assert (f"[cartpole] interrupted (Ctrl-C): saved {ckpts[0]} at iteration {iteration}; "
            f"continue with `horde train resume={run}`") in out
    assert "Traceback" not in out and "horde train: interrupted" not in out
    assert json.loads((run / "train_summary.json").read_text())["preempted"] is True

    total = iteration + 3
    assert main(["train", f"resume={run}", f"max_iterations={total}"]) == 0
    straight, _ = _train(tmp_path / "a", [*SMALL, f"max_iterations={total}", "seed=5"])
    _same_checkpoint(straight.run_dir / f"model_{total}.pt", run / f"model_{total}.pt")


def test_a_second_ctrl_c_during_the_save_keeps_the_last_checkpoint(tmp_path, monkeypatch):
    """Ctrl-C once (here between iterations, during the evaluation hook: the run stops before another iteration and
    saves), then again while that checkpoint is being written: KeyboardInterrupt at once, the half-written file
    gone, the previous checkpoint whole."""
    from horde.train import checkpoint
    from horde.train.session import Interrupted

    real_fsync = os.fsync

    def second_ctrl_c(fd):  # while model_3.pt is written, before its rename
        if ".model_3.pt." in os.readlink(f"/proc/self/fd/{fd}"):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the handler raises here
        return real_fsync(fd)

    def first_ctrl_c(trainer) -> bool:
        if trainer.iteration == 3:
            os.kill(os.getpid(), signal.SIGINT)  # the guard asks for a stop: none starts after this one
        return False

    monkeypatch.setattr(checkpoint.os, "fsync", second_ctrl_c)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        cfg, task, raw = compose([f"run_root={tmp_path}", *SMALL, "max_iterations=1000", "save_interval=2"])
        trainer = PPOTrainer(cfg, task, raw, quiet=True)
        with pytest.raises(KeyboardInterrupt) as stop:
            trainer.learn(on_iteration=first_ctrl_c)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert not isinstance(stop.value, Interrupted), "the second Ctrl-C stopped it, not the saved stop"
    assert trainer.iteration == 3
    assert sorted(p.name for p in trainer.run_dir.glob("model_*.pt")) == ["model_2.pt"]
    assert not list(trainer.run_dir.glob(checkpoint.TEMP_GLOB)), "the half-written file is removed"
    assert checkpoint.load_checkpoint(trainer.run_dir / "model_2.pt")["iteration"] == 2


def test_two_ranks_with_gloo_stay_identical(tmp_path):
    torchrun = Path(sys.executable).with_name("torchrun")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TMPDIR": str(tmp_path)}  # torchrun's log folder
    proc = subprocess.run(
        [str(torchrun), "--standalone", "--nproc_per_node=2", "-m", "horde", "train", "task=cartpole",
         "distributed=true", "device=cpu", "max_iterations=3", "num_envs=64", "algo.num_steps_per_env=8",
         f"run_root={tmp_path}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    runs = list((tmp_path / "cartpole").iterdir())
    assert len(runs) == 1, "only rank 0 creates a run directory"
    summary = json.loads((runs[0] / "train_summary.json").read_text())
    assert summary["world_size"] == 2 and summary["ranks_in_sync"] is True
    assert summary["env_steps"] == 3 * 8 * 64
    assert sorted(p.name for p in runs[0].glob("model_*.pt")) == ["model_3.pt"]
