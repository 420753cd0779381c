"""rsl-rl's own ``OnPolicyRunner`` over horde: :class:`horde.envs.RslRlVecEnv` is its ``VecEnv`` and
:func:`runner_config` turns a horde PPO config (a tuned YAML) into the runner's dict, so the same hyperparameters
run in rsl-rl's loop instead of horde's.

    from horde.train.libs import rsl_rl
    runner = rsl_rl.train("cartpole", seed=0, iterations=30)
"""

from __future__ import annotations

import tempfile

import torch
from rsl_rl.runners import OnPolicyRunner

from horde.envs import RslRlVecEnv, make


def runner_config(cfg, *, critic_group: bool = False, symmetry: dict | None = None, images=()) -> dict:
    """rsl-rl's ``OnPolicyRunner`` config for a composed horde :class:`horde.train.config.TrainConfig` (PPO): horde's
    own rsl-rl training dict plus what only the runner reads."""
    from horde.train.ppo import rsl_train_cfg

    return {**rsl_train_cfg(cfg, critic_group=critic_group, symmetry=symmetry, images=images), "seed": cfg.seed, "save_interval": cfg.save_interval, "logger": "tensorboard",
            "check_for_nan": False}


def build(task: str, *, seed: int = 0, device: str = "cpu", overrides: tuple[str, ...] = (), log_dir: str | None = None):
    """An ``OnPolicyRunner`` on ``task`` with horde's tuned config for it (``overrides`` as on the command line)."""
    from horde.train.config import compose

    return build_from(compose([f"task={task}", f"seed={seed}", f"device={device}", *overrides])[0], task,
                      log_dir=log_dir)


def build_from(cfg, task: str, *, log_dir: str | None = None) -> OnPolicyRunner:
    """An ``OnPolicyRunner`` for a composed horde config."""
    env = RslRlVecEnv(make(task, num_envs=cfg.num_envs, device=cfg.device, seed=cfg.seed, config=cfg.task),
                      value_scale=cfg.algo.policy.value_scale)
    from horde.train.ppo import symmetry_cfg

    torch.manual_seed(cfg.seed)
    runner_cfg = runner_config(cfg, critic_group=bool(env.core.critic_names),
                               symmetry=symmetry_cfg(cfg, env.core, task),
                               images=getattr(env.core, "obs_images", ()))
    return OnPolicyRunner(env, runner_cfg, log_dir=log_dir or tempfile.mkdtemp(prefix="horde-rsl-"),
                          device=cfg.device)


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
