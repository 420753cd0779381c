"""skrl over horde: an env wrapper (torch tensors on the env's device, same-step auto-reset as Isaac Lab's) and
skrl's PyTorch PPO built by skrl's own ``Runner`` from a config dict, as Isaac Lab users run it.

    from horde.train.libs import skrl
    runner = skrl.train("cartpole", num_envs=128, seed=0, timesteps=2_000)   # timesteps: env steps per env

A task with a privileged critic group (``quadruped-rough-perceptive``) gives the wrapper a ``state_space``: skrl's
value model then reads that group (``STATES``) while the policy reads the observations.
"""

from __future__ import annotations

import copy
import tempfile
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from horde.envs import make
from horde.sim.device import init_warp

init_warp()  # skrl initializes Warp on import when it is installed: horde's quiet start-up first

from skrl.envs.wrappers.torch.base import Wrapper  # noqa: E402, I001

SETTINGS: dict[str, Any] = {
    "models": {
        "separate": True,
        "policy": {"class": "GaussianMixin", "clip_actions": False, "clip_log_std": True, "min_log_std": -20.0,
                   "max_log_std": 2.0, "initial_log_std": 0.0,
                   "network": [{"name": "net", "input": "OBSERVATIONS", "layers": [32, 32], "activations": "elu"}],
                   "output": "ACTIONS"},
        "value": {"class": "DeterministicMixin", "clip_actions": False,
                  "network": [{"name": "net", "input": "OBSERVATIONS", "layers": [32, 32], "activations": "elu"}],
                  "output": "ONE"},
    },
    "memory": {"class": "RandomMemory", "memory_size": -1},
    "agent": {"class": "PPO", "rollouts": 32, "learning_epochs": 8, "mini_batches": 8, "discount_factor": 0.99,
              "gae_lambda": 0.95, "learning_rate": 5.0e-4, "learning_rate_scheduler": "KLAdaptiveLR",
              "learning_rate_scheduler_kwargs": {"kl_threshold": 0.008},
              "observation_preprocessor": "RunningStandardScaler", "observation_preprocessor_kwargs": None,
              "value_preprocessor": "RunningStandardScaler", "value_preprocessor_kwargs": None,
              "grad_norm_clip": 1.0, "ratio_clip": 0.2, "value_clip": 0.2, "entropy_loss_scale": 0.0,
              "value_loss_scale": 2.0, "kl_threshold": 0.0, "time_limit_bootstrap": True,
              "experiment": {"directory": "", "experiment_name": "", "write_interval": 0, "checkpoint_interval": 0}},
    "trainer": {"class": "SequentialTrainer", "timesteps": 2000, "disable_progressbar": True,
                "close_environment_at_exit": False, "headless": True},
}
"""skrl's Runner config used here: Isaac Lab's skrl cartpole settings ([32, 32] ELU models, KL-adaptive learning
rate, running standardization of observations and values) with 32-step rollouts and truncation bootstrapping."""


class HordeSkrlEnv(Wrapper):
    """skrl's env ``Wrapper`` over a horde env core: ``(obs, reward [N, 1], terminated [N, 1], truncated [N, 1],
    info)``, auto-reset inside ``step`` (skrl's vectorized trainers never call ``reset`` again)."""

    def __init__(self, core) -> None:
        super().__init__(core)
        self.core = core
        self._obs_space = gym.spaces.Box(-np.inf, np.inf, (core.obs_dim,), np.float32)
        self._act_space = gym.spaces.Box(-1.0, 1.0, (core.num_actions,), np.float32)

    @property
    def observation_space(self) -> gym.Space:
        return self._obs_space

    @property
    def action_space(self) -> gym.Space:
        return self._act_space

    @property
    def state_space(self) -> gym.Space | None:
        """The privileged critic group's space when the task has one (skrl's value model then reads it)."""
        n = len(self.core.critic_names)
        return gym.spaces.Box(-np.inf, np.inf, (n,), np.float32) if n else None

    @property
    def num_envs(self) -> int:
        return self.core.num_envs

    def reset(self) -> tuple[torch.Tensor, dict]:
        return self.core.reset().clone(), {}

    def step(self, actions: torch.Tensor):
        r = self.core.step(actions.clamp(-1.0, 1.0))
        return (r.obs.clone(), r.reward.view(-1, 1).clone(), r.terminated.view(-1, 1).clone(),
                r.truncated.view(-1, 1).clone(), {})

    def state(self) -> torch.Tensor | None:
        return self.core.critic_obs.clone() if self.core.critic_names else None

    def render(self, *args, **kwargs) -> None:
        return None

    def close(self) -> None:
        pass


def make_env(task: str, *, num_envs: int = 128, seed: int = 0, device: str = "cpu", config=None) -> HordeSkrlEnv:
    """``task`` as an skrl env."""
    return HordeSkrlEnv(make(task, num_envs=num_envs, device=device, seed=seed, config=config))


def build(env: HordeSkrlEnv, *, seed: int = 0, timesteps: int = 2000, directory: str | None = None, **agent):
    """skrl's ``Runner`` (PPO agent and sequential trainer) for ``env`` with :data:`SETTINGS`; ``agent`` overrides
    fields of its agent section. ``timesteps`` are env steps per env."""
    from skrl.utils.runner.torch import Runner

    cfg = copy.deepcopy(SETTINGS)
    cfg["seed"] = seed
    cfg["agent"].update(agent)
    if env.state_space is not None:  # asymmetric actor-critic: the value model reads the critic group
        cfg["models"]["value"]["network"][0]["input"] = "STATES"
        cfg["agent"]["state_preprocessor"] = "RunningStandardScaler"
        cfg["agent"]["state_preprocessor_kwargs"] = None
    cfg["agent"]["experiment"]["directory"] = directory or tempfile.mkdtemp(prefix="horde-skrl-")
    cfg["trainer"]["timesteps"] = int(timesteps)
    return Runner(env, cfg)


def train(task: str, *, num_envs: int = 128, seed: int = 0, timesteps: int = 2000, device: str = "cpu", **agent):
    """Train skrl's PPO on ``task`` for ``timesteps`` steps of every env; returns the skrl ``Runner``."""
    runner = build(make_env(task, num_envs=num_envs, seed=seed, device=device), seed=seed, timesteps=timesteps,
                   **agent)
    runner.run("train")
    return runner


def deterministic_policy(agent):
    """The agent's mean action (after its observation preprocessor) as ``obs [N, obs_dim] -> actions``."""

    def act(obs: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            x = agent._observation_preprocessor(obs) if agent._observation_preprocessor else obs
            _, outputs = agent.policy.act({"observations": x}, role="policy")
            return outputs["mean_actions"].clamp(-1.0, 1.0)

    return act


if __name__ == "__main__":
    from horde.train.libs import main

    raise SystemExit(main("skrl"))
