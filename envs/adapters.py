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
    """rsl-rl's ``VecEnv`` over a :class:`WarpTaskEnv`: observation group ``"policy"``, auto-reset inside ``step``.

    ``extras["time_outs"]`` flags truncations so that PPO bootstraps them. Observations are cloned so a stored
    observation is never changed by a later step.
    """

    def __init__(self, core: WarpTaskEnv) -> None:
        self.core = core
        self.num_envs = core.num_envs
        self.num_actions = core.num_actions
        self.max_episode_length = core.max_episode_length
        self.device = core.device
        self.cfg = core.describe()

    @property
    def episode_length_buf(self) -> torch.Tensor:
        """Control steps into each env's episode (the core's buffer)."""
        return self.core.episode_length

    @episode_length_buf.setter
    def episode_length_buf(self, value: torch.Tensor) -> None:
        # The rsl-rl runner randomizes episode starts by assigning this buffer; write into the core's memory.
        self.core.episode_length.copy_(value.to(self.core.episode_length.dtype))

    def get_observations(self) -> TensorDict:
        return TensorDict({"policy": self.core.obs.clone()}, batch_size=[self.num_envs], device=self.device)

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        r = self.core.step(actions)
        obs = TensorDict({"policy": r.obs.clone()}, batch_size=[self.num_envs], device=self.device)
        return obs, r.reward.clone(), r.dones.clone(), {"time_outs": r.truncated.clone()}


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
