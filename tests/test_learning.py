"""Learning tests: PPO must actually solve the classic tasks on CPU (marked slow; still run by make test)."""

import pytest

from horde.policies import InferencePolicy
from horde.train.config import compose
from horde.train.evaluate import evaluate
from horde.train.ppo import PPOTrainer


def _train_and_evaluate(tmp_path, overrides, episodes=100):
    cfg, task, raw = compose([f"run_root={tmp_path}", *overrides])
    trainer = PPOTrainer(cfg, task, raw, quiet=True)
    summary = trainer.learn()
    result = evaluate(InferencePolicy(trainer.alg.get_policy()), task, cfg.task, episodes=episodes).summary()
    return summary, result


@pytest.mark.slow
def test_demo_trains_evaluates_exports_and_summarizes(tmp_path):
    """`make demo`'s command, from a fresh working directory, as a user runs it."""
    import json

    from clihelp import run_cli

    proc = run_cli("demo", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = tmp_path.glob("runs/cartpole/*/summary.json")
    summary = json.loads(path.read_text())
    for key in ("task", "mean_return", "mean_episode_length", "train_seconds", "env_steps_per_s",
                "onnx_max_abs_err", "policy_onnx"):
        assert key in summary, key
    assert summary["task"] == "cartpole" and summary["mean_episode_length"] >= 475, summary
    assert summary["onnx_max_abs_err"] <= 1e-5 and summary["train_seconds"] < 90
    assert (tmp_path / summary["policy_onnx"]).is_file() or __import__("os").path.isfile(summary["policy_onnx"])
    assert "onnxruntime vs torch max abs error" in proc.stdout


@pytest.mark.slow
def test_ppo_swings_up_the_pendulum(tmp_path):
    _, result = _train_and_evaluate(tmp_path, ["task=pendulum", "seed=0"])
    # A random policy scores about -1150 on this reward; a swing-up-and-hold policy about -200.
    assert result["mean_return"] > -400, result
