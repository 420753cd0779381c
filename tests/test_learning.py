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
def test_ppo_balances_cartpole(tmp_path):
    summary, result = _train_and_evaluate(tmp_path, ["task=cartpole", "seed=0"])
    assert result["mean_episode_length"] >= 475, result
    assert summary["train_seconds"] < 120, summary["train_seconds"]


@pytest.mark.slow
def test_ppo_swings_up_the_pendulum(tmp_path):
    _, result = _train_and_evaluate(tmp_path, ["task=pendulum", "seed=0"])
    # A random policy scores about -1150 on this reward; a swing-up-and-hold policy about -200.
    assert result["mean_return"] > -400, result
