"""The logging and cluster conventions users bring (issue 31): Weights & Biases beside TensorBoard
(``logger=wandb``, here in W&B's offline mode) and sweeps through Hydra's submitit launcher (``horde train -m
hydra/launcher=submitit_slurm ...``, here with submitit's local executor, which runs each job as a process the
way Slurm would run it on a node)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ENV = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true"}


def horde(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "horde", *args], capture_output=True, text=True, cwd=cwd, env=ENV,
                          timeout=900)


def test_wandb_logger_sends_the_curves_and_the_config_beside_tensorboard(tmp_path):
    pytest.importorskip("wandb")
    proc = horde("train", "task=cartpole", "num_envs=16", "max_iterations=2", "logger=wandb", "wandb_project=probe",
                 f"run_root={tmp_path}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run,) = (tmp_path / "cartpole").iterdir()
    assert list(run.glob("events.out.tfevents.*")), "TensorBoard's event file is still written"
    (record,) = run.glob("wandb/offline-run-*/run-*.wandb")  # W&B's files stay in the run directory
    data = record.read_bytes()
    tags = set(re.findall(rb"(?:Train|Loss|Perf|Reward)/[A-Za-z_]+", data))
    assert {b"Train/mean_return", b"Loss/value", b"Reward/pole_angle", b"Perf/env_steps_per_s"} <= tags, tags
    assert b"reward_scales" in data and b"max_iterations" in data, "the run's config is stored with it"


def test_wandb_logger_without_the_package_or_with_another_library_fails_in_one_line(tmp_path, monkeypatch):
    import importlib.util

    from horde.train.config import ConfigError, compose

    with pytest.raises(ConfigError, match=r"^logger=wandb: horde's own loop only \(lib=horde\), not lib=sb3$"):
        compose(["task=cartpole", "logger=wandb", "lib=sb3"])
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a))
    with pytest.raises(ConfigError, match=r'^logger=wandb needs the wandb package: pip install "horde\[wandb\]"$'):
        compose(["task=cartpole", "logger=wandb"])


def test_a_sweep_runs_each_combination_through_hydras_submitit_launcher(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    proc = horde("train", "-m", "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=10", "task=cartpole",
                 "num_envs=16", "max_iterations=2", "seed=0,1", f"run_root={tmp_path}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = sorted((tmp_path / "cartpole").iterdir())
    assert len(runs) == 2 and all((r / "model_2.pt").is_file() for r in runs), runs
    seeds = sorted(yaml.safe_load((r / "config.yaml").read_text())["seed"] for r in runs)
    assert seeds == [0, 1]
    (sweep,) = (tmp_path / "sweeps").iterdir()  # Hydra's sweep folder: the launcher's logs, each job's .hydra
    assert len(list(sweep.glob(".submitit/*/*_log.out"))) == 2 and (sweep / "0" / ".hydra").is_dir()
    assert f"== sweep done: Hydra's sweep folder {sweep}" in proc.stdout


def test_a_launched_sweep_fails_in_one_line(tmp_path, capsys, monkeypatch):
    """In process (Hydra's basic launcher runs the jobs here, as the submitit launcher's do on their nodes): an
    unknown launcher, a typo and a job that fails each end the command in one line."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    from horde.cli import main

    monkeypatch.chdir(tmp_path)

    def one_line(args: list[str], code: int) -> str:
        capsys.readouterr()
        assert main(args) == code, args
        lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("horde train: error: "), lines
        return lines[0]

    line = one_line(["train", "-m", "hydra/launcher=submitit_cloud", "seed=0,1", f"run_root={tmp_path}"], 2)
    assert "unknown hydra/launcher 'submitit_cloud'; valid choices: basic, submitit_local, submitit_slurm" in line
    line = one_line(["train", "-m", "hydra/launcher=submitit_local", "task=cartpol", "seed=0,1"], 2)
    assert "unknown task 'cartpol'" in line  # every combination is composed before a job starts
    # jobs that fail where they run (their memory estimate refuses 10^9 envs): the first one's error and its file
    line = one_line(["train", "-m", "hydra/launcher=basic", "task=cartpole", "num_envs=1000000000", "seed=0,1",
                     f"run_root={tmp_path}"], 1)
    assert "2 of 2 jobs failed; job 0: num_envs=1000000000: needs about " in line and "horde_error.txt" in line
    assert not (tmp_path / "cartpole").exists()
