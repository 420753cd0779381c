"""rsl-rl's own ``OnPolicyRunner`` over horde: :class:`horde.envs.RslRlVecEnv` is its ``VecEnv`` and
:func:`runner_config` turns a horde PPO config (a tuned YAML) into the runner's dict, so the same hyperparameters
run in rsl-rl's loop instead of horde's.

    from horde.train.libs import rsl_rl
    runner = rsl_rl.train("cartpole", seed=0, iterations=30)
"""

from __future__ import annotations

import dataclasses
import tempfile

import torch
from rsl_rl.runners import OnPolicyRunner

from horde.envs import RslRlVecEnv, make
from horde.policies import rsl_model_cfgs


def runner_config(algo, *, seed: int = 0) -> dict:
    """rsl-rl's ``OnPolicyRunner`` config for horde's :class:`horde.train.config.PPOConfig` ``algo``."""
    a = dataclasses.asdict(algo) if dataclasses.is_dataclass(algo) else dict(algo)
    actor, critic = rsl_model_cfgs(algo.policy)
    keys = ("learning_rate", "num_learning_epochs", "num_mini_batches", "clip_param", "gamma", "lam",
            "value_loss_coef", "entropy_coef", "max_grad_norm", "schedule", "desired_kl")
    return {"seed": seed, "num_steps_per_env": a["num_steps_per_env"], "save_interval": 10**9,
            "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
            "algorithm": {"class_name": "PPO", **{k: a[k] for k in keys}},
            "actor": actor, "critic": critic, "logger": "tensorboard", "check_for_nan": False}


def build(task: str, *, seed: int = 0, device: str = "cpu", overrides: tuple[str, ...] = (), log_dir: str | None = None):
    """An ``OnPolicyRunner`` on ``task`` with horde's tuned config for it (``overrides`` as on the command line)."""
    from horde.train.config import compose

    cfg = compose([f"task={task}", f"seed={seed}", f"device={device}", *overrides])[0]
    env = RslRlVecEnv(make(task, num_envs=cfg.num_envs, device=device, seed=seed, config=cfg.task),
                      value_scale=cfg.algo.policy.value_scale)
    torch.manual_seed(seed)
    return OnPolicyRunner(env, runner_config(cfg.algo, seed=seed), log_dir=log_dir or tempfile.mkdtemp(
        prefix="horde-rsl-"), device=device)


def train(task: str, *, seed: int = 0, iterations: int = 30, device: str = "cpu", overrides: tuple[str, ...] = ()):
    """Train with rsl-rl's runner for ``iterations`` iterations; returns the runner."""
    runner = build(task, seed=seed, device=device, overrides=overrides)
    runner.learn(num_learning_iterations=iterations)
    return runner


def deterministic_policy(runner):
    """The runner's mean action as ``obs [N, obs_dim] -> actions``."""
    policy = runner.get_inference_policy()

    def act(obs: torch.Tensor) -> torch.Tensor:
        from tensordict import TensorDict

        with torch.no_grad():
            return policy(TensorDict({"policy": obs}, batch_size=[obs.shape[0]])).clamp(-1.0, 1.0)

    return act


if __name__ == "__main__":
    from horde.train.libs import main

    raise SystemExit(main("rsl-rl"))
