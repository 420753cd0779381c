"""Two interfaces over one env core, sharing its device buffers: rsl-rl's ``VecEnv`` and gymnasium's ``VectorEnv``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from rsl_rl.env import VecEnv
from tensordict import TensorDict

from horde.envs.core import WarpTaskEnv


class RslRlVecEnv(VecEnv):
    """rsl-rl's ``VecEnv`` over a :class:`WarpTaskEnv`: observation group ``"policy"``, auto-reset inside ``step``;
    the one rsl-rl interface, used by horde's PPO loop and by rsl-rl's own ``OnPolicyRunner`` alike.

    ``extras["time_outs"]`` flags truncations so that PPO bootstraps them. No TensorDict is built and nothing is
    cloned per step: rsl-rl keeps the observation it acted on until ``process_env_step`` has copied it into its
    storage, after the next env step, so two preallocated observation TensorDicts are filled in turn and each
    step's observations stay intact through the next step. Rewards, dones and time-outs are the core's views, valid
    until the next step (``process_env_step`` copies them). Rewards are divided by ``value_scale`` (the critic's
    units, :attr:`horde.policies.ActorCriticConfig.value_scale`).
    """

    def __init__(self, core: WarpTaskEnv, *, value_scale: float = 1.0) -> None:
        self.core = core
        self.num_envs = core.num_envs
        self.num_actions = core.num_actions
        self.max_episode_length = core.max_episode_length
        self.device = core.device
        self.cfg = core.describe()
        self.value_scale = float(value_scale)
        self._obs = [TensorDict({"policy": core.obs.clone()}, batch_size=[core.num_envs], device=core.device)
                     for _ in range(2)]
        self._views = [td["policy"] for td in self._obs]
        self._k = 0

    @property
    def episode_length_buf(self) -> torch.Tensor:
        """Control steps into each env's episode (the core's buffer)."""
        return self.core.episode_length

    @episode_length_buf.setter
    def episode_length_buf(self, value: torch.Tensor) -> None:
        # The rsl-rl runner randomizes episode starts by assigning this buffer; write into the core's memory.
        self.core.episode_length.copy_(value.to(self.core.episode_length.dtype))

    def get_observations(self) -> TensorDict:
        """The current observations, group ``policy`` [num_envs, obs_dim]."""
        self._views[self._k].copy_(self.core.obs)
        return self._obs[self._k]

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        """One control step: ``(obs, rewards / value_scale [N], dones [N], {"time_outs": [N]})``."""
        r = self.core.step(actions)
        self._k ^= 1
        self._views[self._k].copy_(r.obs)
        rewards = r.reward / self.value_scale if self.value_scale != 1.0 else r.reward
        return self._obs[self._k], rewards, r.dones, {"time_outs": r.truncated}


class GymVectorEnv(gym.vector.VectorEnv):
    """gymnasium's ``VectorEnv`` over a :class:`WarpTaskEnv`, returning torch tensors on the env's device.

    Autoreset mode is ``SAME_STEP``: when an env's episode ends, the observation returned by ``step`` is already the
    first one of its next episode; the last observation of the finished episode is in ``info["final_obs"]``
    (a [num_envs, obs_dim] tensor, valid where ``info["_final_obs"]`` is True). Wrap with
    ``gymnasium.wrappers.vector.TorchToNumpy`` for numpy arrays.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, core: WarpTaskEnv) -> None:
        self.core = core
        self.num_envs = core.num_envs
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (core.obs_dim,), np.float32)
        self.single_action_space = gym.spaces.Box(-1.0, 1.0, (core.num_actions,), np.float32)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[torch.Tensor, dict]:
        """Reset every env (or those in ``options["mask"]``); a ``seed`` re-seeds all envs' streams first."""
        if seed is not None:
            self.core.seed(seed)
            self._np_random, self._np_random_seed = gym.utils.seeding.np_random(seed)
        mask = None if options is None else options.get("mask")
        return self.core.reset(mask).clone(), {}

    def step(self, actions) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict]:
        actions = torch.as_tensor(actions, dtype=torch.float32, device=self.core.device)
        r = self.core.step(actions)
        info = {"final_obs": self.core.final_obs.clone(), "_final_obs": r.dones.clone()}
        return r.obs.clone(), r.reward.clone(), r.terminated.clone(), r.truncated.clone(), info
