"""Deterministic evaluation: a reused env plays the same episodes as a fresh one."""

import torch

from horde.envs import get_task, make
from horde.train.evaluate import evaluate


def test_reused_env_plays_the_same_episodes_as_a_fresh_one():
    cfg = get_task("cartpole").config
    w = torch.tensor([[0.3, 0.8, 0.0, 2.0, 0.2]])

    def policy(obs):  # a fixed linear policy that fails after varying numbers of steps
        return (obs @ w.T).clamp(-1, 1)

    fresh = evaluate(policy, "cartpole", cfg, episodes=16, seed=11)
    core = make("cartpole", num_envs=16, seed=99, config=cfg)
    for _ in range(37):  # leave it mid-episode, with statistics and random streams advanced
        core.step(torch.rand(16, 1) * 2 - 1)
    reused = evaluate(policy, "cartpole", cfg, episodes=16, seed=11, core=core)
    assert torch.equal(fresh.returns, reused.returns) and torch.equal(fresh.lengths, reused.lengths)
    assert fresh.lengths.unique().numel() > 1, "every episode alike: the test would not see a wrong reset"
    again = evaluate(policy, "cartpole", cfg, episodes=16, seed=11, core=core)
    assert torch.equal(fresh.returns, again.returns)
