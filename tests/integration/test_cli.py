"""The ``horde`` command line, run in subprocesses as a user would."""

import json

import torch
from clihelp import run_cli

from horde.envs import task_names


def test_tasks_lists_the_registry(tmp_path):
    proc = run_cli("tasks", cwd=tmp_path)
    assert proc.returncode == 0
    assert "cartpole-swingup" in proc.stdout and "pendulum" in proc.stdout


def test_unknown_command_task_and_key_fail_in_one_line(tmp_path, capsys, monkeypatch):
    """Three cases as a user runs them (a subprocess: no traceback, no Warp driver banner, exit code 2); the rest
    through the same entry point in this process (each subprocess costs ~8 s of imports)."""
    from horde.cli import main

    in_process = [(("train", "task=cartpol"), "(did you mean cartpole?); valid tasks: " + ", ".join(task_names())),
                  (("train", "nmu_envs=3"), "valid keys there:"),
                  (("play",), "play needs run="),
                  (("play", "run=/nonexistent/run"), "no such run directory"),
                  (("play", "run=x", "episods=3"), "valid keys: run, episodes"),
                  (("train", "task=ant", "task.sim.solver=foo"),
                   "task.sim.solver=foo: not a valid choice; valid choices: auto, mujoco, mujoco-c, xpbd, featherstone"),
                  (("train", "algo.learning_rate=-1"), "algo.learning_rate=-1.0: must be > 0")]
    monkeypatch.chdir(tmp_path)
    for args, expected in in_process:
        capsys.readouterr()
        assert main(list(args)) == 2, args
        lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert len(lines) == 1 and expected in lines[0], (args, lines)
    for args, expected in [(("fly",), "valid commands: train"),
                           (("train", "device=tpu"), "unknown device 'tpu'"),
                           *([(("train", "device=cuda"), "no CUDA device is usable here")]
                             if not torch.cuda.is_available() else [])]:
        proc = run_cli(*args, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]  # no Warp driver banner either
        assert len(lines) == 1 and expected in lines[0], (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_train_writes_a_complete_run_directory(tiny_run):
    names = {p.name for p in tiny_run.iterdir()}
    assert {"config.yaml", "model_2.pt", "model_3.pt", "train_summary.json"} <= names
    assert any(n.startswith("events.out.tfevents") for n in names)
    assert tiny_run.parent.name == "cartpole"
    ckpt = torch.load(tiny_run / "model_3.pt", weights_only=True)
    assert ckpt["iteration"] == 3 and ckpt["task"] == "cartpole" and "optimizer_state_dict" in ckpt
    summary = json.loads((tiny_run / "train_summary.json").read_text())
    assert set(summary["time_share"]) == {"sim", "inference", "learn", "other"}
    assert 0.95 < sum(summary["time_share"].values()) < 1.05


def test_tensorboard_has_reward_terms_losses_and_time_split(tiny_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tiny_run))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    for tag in ("Train/mean_return", "Train/mean_episode_length", "Loss/surrogate", "Loss/value",
                "Loss/learning_rate", "Perf/env_steps_per_s", "Perf/share_sim", "Perf/share_inference",
                "Perf/share_learn", "Reward/alive", "Reward/pole_angle", "Reward/terminated"):
        assert tag in tags, tag


def test_play_reports_mean_and_std(tiny_run):
    proc = run_cli("play", f"run={tiny_run}", "episodes=8", cwd=tiny_run)
    assert proc.returncode == 0, proc.stderr
    assert "over 8 deterministic episodes" in proc.stdout and "+-" in proc.stdout


def test_corrupt_checkpoint_fails_in_one_line(tiny_run, tmp_path):
    bad = tmp_path / "model_9.pt"
    bad.write_bytes((tiny_run / "model_3.pt").read_bytes()[:300])
    proc = run_cli("play", f"run={bad}", cwd=tmp_path)
    assert proc.returncode == 2 and "unreadable checkpoint" in proc.stderr and "Traceback" not in proc.stderr


def test_python_dash_m_horde_train(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "horde", "train", "task=pendulum", "num_envs=8", "max_iterations=1",
                           f"run_root={tmp_path}"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert list((tmp_path / "pendulum").glob("*/model_1.pt"))
