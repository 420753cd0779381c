"""Stable-Baselines3 over horde: a ``VecEnv`` adapter (numpy out: SB3 is CPU-minded) and SB3's PPO on it.

    from horde.train.libs import sb3
    model = sb3.train("cartpole", num_envs=128, seed=0, timesteps=200_000)

SB3 wants one info dict per env and the last observation of a finished episode in ``infos[i]
["terminal_observation"]`` (its PPO bootstraps truncated episodes from it, flagged by ``"TimeLimit.truncated"``);
the adapter fills them for the envs that finished, only.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from horde.envs import make

SETTINGS = dict(n_steps=64, batch_size=1024, n_epochs=5, gamma=0.99, gae_lambda=0.95, learning_rate=1e-3,
                clip_range=0.2, ent_coef=0.0, vf_coef=1.0, max_grad_norm=1.0,
                policy_kwargs=dict(net_arch=[32, 32], activation_fn="elu", log_std_init=0.0))
"""SB3 PPO settings used here for horde tasks (a [32, 32] ELU actor and critic as Isaac Lab's cartpole; 64-step
rollouts; observations normalized by ``VecNormalize``, rewards not)."""


class HordeVecEnv(VecEnv):
    """SB3's ``VecEnv`` over a horde env core (auto-reset inside ``step``, numpy arrays out)."""

    render_mode = None

    def __init__(self, core) -> None:
        self.core = core
        n = core.num_envs
        super().__init__(n, gym.spaces.Box(-np.inf, np.inf, (core.obs_dim,), np.float32),
                         gym.spaces.Box(-1.0, 1.0, (core.num_actions,), np.float32))
        self._actions = torch.zeros(n, core.num_actions, device=core.device)

    def reset(self) -> np.ndarray:
        seed = self._seeds[0]
        if seed is not None:
            self.core.seed(seed)
        self._reset_seeds()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return self.core.reset().cpu().numpy().copy()

    def step_async(self, actions: np.ndarray) -> None:
        self._actions.copy_(torch.as_tensor(actions, dtype=torch.float32))

    def step_wait(self):
        r = self.core.step(self._actions)
        obs, reward = r.obs.cpu().numpy().copy(), r.reward.cpu().numpy().copy()
        dones, truncated = r.dones.cpu().numpy().copy(), r.truncated.cpu().numpy()
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        ended = np.flatnonzero(dones)
        if len(ended):
            final = self.core.final_obs.cpu().numpy()
            for i in ended:
                infos[i]["terminal_observation"] = final[i].copy()
                infos[i]["TimeLimit.truncated"] = bool(truncated[i])
        return obs, reward, dones, infos

    def close(self) -> None:
        pass

    def get_attr(self, attr_name: str, indices=None) -> list:
        owner = self if hasattr(type(self), attr_name) else self.core
        return [getattr(owner, attr_name)] * len(self._get_indices(indices))

    def set_attr(self, attr_name: str, value, indices=None) -> None:
        setattr(self.core, attr_name, value)

    def env_method(self, method_name: str, *args, indices=None, **kwargs) -> list:
        return [getattr(self.core, method_name)(*args, **kwargs)] * len(self._get_indices(indices))

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False] * len(self._get_indices(indices))


def make_env(task: str, *, num_envs: int = 128, seed: int = 0, normalize: bool = True, config=None) -> VecEnv:
    """``task`` as an SB3 ``VecEnv`` on the CPU, its observations normalized by ``VecNormalize`` when asked."""
    env: VecEnv = HordeVecEnv(make(task, num_envs=num_envs, device="cpu", seed=seed, config=config))
    return VecNormalize(env, norm_obs=True, norm_reward=False, gamma=SETTINGS["gamma"]) if normalize else env


def build(env: VecEnv, *, seed: int = 0, **settings):
    """SB3's PPO on ``env`` with :data:`SETTINGS` (``settings`` override them)."""
    from stable_baselines3 import PPO

    kw = {**SETTINGS, **settings}
    pk = dict(kw.pop("policy_kwargs"))
    if isinstance(pk.get("activation_fn"), str):
        pk["activation_fn"] = {"elu": torch.nn.ELU, "relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[pk["activation_fn"]]
    model = PPO("MlpPolicy", env, seed=seed, device="cpu", verbose=0, policy_kwargs=pk, **kw)
    if kw.get("tensorboard_log") is None:
        quiet_logger(model)
    return model


def quiet_logger(model):
    """Give an SB3 model a logger that writes nothing: SB3's default makes an empty ``/tmp/SB3-<stamp>`` folder on
    every ``learn()`` even when it writes nothing. Returns ``model``."""
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def train(task: str, *, num_envs: int = 128, seed: int = 0, timesteps: int = 200_000, callback=None, **settings):
    """Train SB3's PPO on ``task`` for ``timesteps`` env steps; returns the model (its env: ``model.get_env()``)."""
    model = build(make_env(task, num_envs=num_envs, seed=seed), seed=seed, **settings)
    return model.learn(total_timesteps=timesteps, callback=callback)


def deterministic_policy(model):
    """The model's mean action as ``obs [N, obs_dim] (torch) -> actions (torch)``, with its observation scaling."""
    env = model.get_env()

    def act(obs: torch.Tensor) -> torch.Tensor:
        x = obs.detach().cpu().numpy()
        if isinstance(env, VecNormalize):
            x = env.normalize_obs(x)
        return torch.as_tensor(model.predict(x, deterministic=True)[0], dtype=torch.float32, device=obs.device)

    return act


if __name__ == "__main__":
    from horde.train.libs import main

    raise SystemExit(main("sb3"))
