"""rl-games over horde: a vec-env adapter (torch tensors on the env's device, ``infos["time_outs"]`` for its value
bootstrap) registered with rl-games, and its continuous PPO (``a2c_continuous``) built from a params dict the way
Isaac Lab users run it (``Runner.load`` then the agent from the runner's factory).

    from horde.train.libs import rl_games
    agent = rl_games.train("cartpole", num_envs=128, seed=0, epochs=20)
"""

from __future__ import annotations

import copy
import random
import tempfile
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from rl_games.common import env_configurations, vecenv
from rl_games.common.algo_observer import AlgoObserver

from horde.envs import make

SETTINGS: dict[str, Any] = {
    "algo": {"name": "a2c_continuous"},
    "model": {"name": "continuous_a2c_logstd"},
    "network": {
        "name": "actor_critic", "separate": False,
        "space": {"continuous": {"mu_activation": "None", "sigma_activation": "None", "mu_init": {"name": "default"},
                                 "sigma_init": {"name": "const_initializer", "val": 0}, "fixed_sigma": True}},
        "mlp": {"units": [32, 32], "activation": "elu", "d2rl": False, "initializer": {"name": "default"},
                "regularizer": {"name": "None"}},
    },
    "config": {
        "name": "horde", "env_name": "horde", "device": "cpu", "device_name": "cpu", "multi_gpu": False, "ppo": True,
        "mixed_precision": False, "normalize_input": True, "normalize_value": True, "value_bootstrap": True,
        "reward_shaper": {"scale_value": 0.1}, "normalize_advantage": True, "gamma": 0.99, "tau": 0.95,
        "learning_rate": 5.0e-4, "lr_schedule": "adaptive", "kl_threshold": 0.008, "score_to_win": 1.0e9,
        "max_epochs": 100, "save_best_after": 10**9, "save_frequency": 0, "print_stats": False, "grad_norm": 1.0,
        "entropy_coef": 0.0, "truncate_grads": True, "e_clip": 0.2, "horizon_length": 32, "mini_epochs": 8,
        "critic_coef": 4, "clip_value": True, "seq_length": 4, "bounds_loss_coef": 0.0001,
    },
}
"""rl-games params used here: Isaac Lab's rl-games cartpole settings ([32, 32] ELU shared actor-critic, adaptive
learning rate, input and value normalization, rewards x 0.1, time-out bootstrap) with minibatches of 1/8 of a
rollout; ``num_actors``, ``minibatch_size`` and the run folder are filled in per run."""


class HordeRlGamesEnv:
    """rl-games' vec-env interface over a horde env core: auto-reset inside ``step``, ``(obs, rewards, dones,
    infos)`` with ``infos["time_outs"]`` flagging truncations."""

    def __init__(self, core) -> None:
        self.core = core

    def step(self, actions: torch.Tensor):
        r = self.core.step(torch.as_tensor(actions, dtype=torch.float32, device=self.core.device).clamp(-1.0, 1.0))
        return r.obs.clone(), r.reward.clone(), r.dones.clone(), {"time_outs": r.truncated.clone()}

    def reset(self) -> torch.Tensor:
        return self.core.reset().clone()

    def seed(self, seed: int) -> None:
        self.core.seed(seed)

    def set_train_info(self, env_frames: int, *args, **kwargs) -> None:
        pass

    def get_env_state(self) -> None:  # rl-games checkpoints hold no env state: horde's own checkpoints do
        return None

    def set_env_state(self, state) -> None:
        pass

    def get_number_of_agents(self) -> int:
        return 1

    def get_env_info(self) -> dict:
        return {"observation_space": gym.spaces.Box(-np.inf, np.inf, (self.core.obs_dim,), np.float32),
                "action_space": gym.spaces.Box(-1.0, 1.0, (self.core.num_actions,), np.float32)}


_ENVS: dict[str, HordeRlGamesEnv] = {}


def _register(name: str, env: HordeRlGamesEnv) -> None:
    """Make ``env`` what rl-games builds for ``env_name: name`` (rl-games creates envs from names)."""
    _ENVS[name] = env
    vecenv.register("HORDE", lambda config_name, num_actors, **kw: _ENVS[config_name])
    env_configurations.register(name, {"vecenv_type": "HORDE", "env_creator": lambda **kw: _ENVS[name]})


class _EveryEpoch(AlgoObserver):
    """Calls ``fn(agent, epoch, frames)`` after each epoch; a True return ends training."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn
        self.algo = None

    def after_init(self, algo) -> None:
        self.algo = algo

    def after_print_stats(self, frame: int, epoch_num: int, total_time: float) -> None:
        if self.fn is not None and self.fn(self.algo, epoch_num, frame):
            self.algo.max_epochs = epoch_num  # rl-games stops when epoch_num >= max_epochs


def make_env(task: str, *, num_envs: int = 128, seed: int = 0, device: str = "cpu", config=None) -> HordeRlGamesEnv:
    """``task`` as an rl-games vec env."""
    return HordeRlGamesEnv(make(task, num_envs=num_envs, device=device, seed=seed, config=config))


def build(env: HordeRlGamesEnv, *, seed: int = 0, epochs: int = 100, on_epoch=None, directory: str | None = None,
          **config):
    """rl-games' ``a2c_continuous`` agent for ``env`` with :data:`SETTINGS` (``config`` overrides its config
    section); ``on_epoch(agent, epoch, frames) -> bool`` runs after each epoch and stops training when True."""
    from rl_games.torch_runner import Runner

    torch.manual_seed(seed), np.random.seed(seed), random.seed(seed)  # rl-games skips seeding for seed 0
    name = f"horde-{id(env)}"
    _register(name, env)
    params = copy.deepcopy(SETTINGS)
    n, device = env.core.num_envs, str(env.core.device)
    params["seed"] = seed
    params["torch_threads"] = 0  # keep the process's torch thread count
    c = params["config"]
    c.update(env_name=name, num_actors=n, device=device, device_name=device, max_epochs=epochs,
             minibatch_size=n * c["horizon_length"] // 8, train_dir=directory or tempfile.mkdtemp(prefix="horde-rlg-"),
             full_experiment_name="run")
    c.update(config)
    runner = Runner(algo_observer=_EveryEpoch(on_epoch))
    runner.load({"params": params})
    return runner.algo_factory.create(runner.algo_name, base_name="run", params=runner.params)


def train(task: str, *, num_envs: int = 128, seed: int = 0, epochs: int = 100, device: str = "cpu", on_epoch=None,
          **config):
    """Train rl-games' PPO on ``task`` for ``epochs`` epochs (``horizon_length`` steps of every env each); returns
    the agent."""
    agent = build(make_env(task, num_envs=num_envs, seed=seed, device=device), seed=seed, epochs=epochs,
                  on_epoch=on_epoch, **config)
    agent.train()
    return agent


def deterministic_policy(agent):
    """The agent's mean action (its model normalizes observations itself) as ``obs [N, obs_dim] -> actions``."""
    model = agent.model

    def act(obs: torch.Tensor) -> torch.Tensor:
        was_training = model.training
        model.eval()
        with torch.no_grad():
            mus = model({"is_train": False, "prev_actions": None, "obs": obs})["mus"]
        model.train(was_training)
        return mus.clamp(-1.0, 1.0)

    return act


if __name__ == "__main__":
    from horde.train.libs import main

    raise SystemExit(main("rl-games"))
