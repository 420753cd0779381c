"""Exact resume, determinism, preemption by signal, and data-parallel training over torch.distributed (gloo, CPU)."""

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
