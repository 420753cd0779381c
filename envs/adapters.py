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
    """rsl-rl's ``VecEnv`` over a :class:`WarpTaskEnv`: observation group ``"policy"`` (and ``"critic"`` when the
    task has a privileged critic group; ``"teacher"`` when ``teacher``: a distillation teacher's inputs), auto-reset
    inside ``step``;
    the one rsl-rl interface, used by horde's PPO loop and by rsl-rl's own ``OnPolicyRunner`` alike.

    ``extras["time_outs"]`` flags truncations so that PPO bootstraps them. No TensorDict is built and nothing is
    cloned per step: rsl-rl keeps the observation it acted on until ``process_env_step`` has copied it into its
    storage, after the next env step, so two preallocated observation TensorDicts are filled in turn and each
    step's observations stay intact through the next step. Rewards, dones and time-outs are the core's views, valid
    until the next step (``process_env_step`` copies them). Rewards are divided by ``value_scale`` (the critic's
    units, :attr:`horde.policies.ActorCriticConfig.value_scale`).
    """

    def __init__(self, core: WarpTaskEnv, *, value_scale: float = 1.0, teacher: bool = False) -> None:
        self.core = core
        self.num_envs = core.num_envs
        self.num_actions = core.num_actions
        self.max_episode_length = core.max_episode_length
        self.device = core.device
        self.cfg = core.describe()
        self.value_scale = float(value_scale)
        groups = {"policy": core.obs} | ({"critic": core.critic_obs} if core.critic_names else {})
        if teacher:  # distillation: the teacher's inputs (the core's ``teacher_obs``)
            groups["teacher"] = core.teacher_obs
        self._groups = groups
        self._obs = [TensorDict({k: v.clone() for k, v in groups.items()}, batch_size=[core.num_envs],
                                device=core.device) for _ in range(2)]
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
        for key, src in self._groups.items():
            self._obs[self._k][key].copy_(src)
        return self._obs[self._k]

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        """One control step: ``(obs, rewards / value_scale [N], dones [N], {"time_outs": [N]})``."""
        r = self.core.step(actions)
        self._k ^= 1
        for key, src in self._groups.items():
            self._obs[self._k][key].copy_(src)
        rewards = r.reward / self.value_scale if self.value_scale != 1.0 else r.reward
        return self._obs[self._k], rewards, r.dones, {"time_outs": r.truncated}


AUTORESET_MODES = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP}
"""gymnasium's autoreset modes that :class:`GymVectorEnv` offers, by name."""
ARRAY_TYPES = ("numpy", "torch")
"""What :class:`GymVectorEnv` returns: numpy arrays on the host (the default), or torch tensors on the env's
device."""


class GymVectorEnv(gym.vector.VectorEnv):
    """gymnasium's ``VectorEnv`` over a :class:`WarpTaskEnv`, as gymnasium's own vector wrappers expect it.

    ``autoreset_mode`` (stated in ``metadata["autoreset_mode"]``):

    - ``"next_step"`` (gymnasium's default): the step that ends an episode returns that episode's last
      observation; the env's next step ignores its action and returns the first observation of a new episode, with
      reward 0 and ``terminated``/``truncated`` False.
    - ``"same_step"``: the step that ends an episode already returns the next episode's first observation; the
      last one is in ``info["final_obs"]`` (a batched [num_envs, obs_dim] array, valid where ``info["_final_obs"]``).

    ``array``: what ``reset`` and ``step`` return; actions may be numpy arrays or tensors either way.

    - ``"numpy"`` (the default, what gymnasium's vector envs return and its vector wrappers compute on): host
      arrays, float32 observations and rewards, bool ``terminated``/``truncated``. Every wrapper in
      ``gymnasium.wrappers.vector`` that applies to a Box env runs on it (tested). On CUDA this is one device-to-host
      copy per returned array per step; gymnasium's ``NumpyToTorch`` outermost turns the result back into tensors.
    - ``"torch"``: tensors on the env's device, no host copy. gymnasium's wrappers that keep statistics or reshape
      (``RecordEpisodeStatistics``, ``NormalizeObservation``, ``NormalizeReward``, ``FlattenObservation``, the
      ``Vectorize*`` and ``Dtype``/``Reshape`` observation wrappers) do numpy arithmetic on what the env returns and
      fail on tensors: a torch default would break them, and converting under them is the host copy that numpy
      makes explicit. Use it without those wrappers, with horde's own learners or a torch library.

    Every returned array is a copy: it stays valid after later steps.
    """

    def __init__(self, core: WarpTaskEnv, *, autoreset_mode: str | AutoresetMode = "next_step",
                 array: str = "numpy") -> None:
        if isinstance(autoreset_mode, str):
            if autoreset_mode.lower() not in AUTORESET_MODES:
                raise ValueError(f"unknown autoreset_mode '{autoreset_mode}'; valid: {', '.join(AUTORESET_MODES)}")
            autoreset_mode = AUTORESET_MODES[autoreset_mode.lower()]
        if autoreset_mode not in AUTORESET_MODES.values():
            raise ValueError(f"unsupported autoreset_mode {autoreset_mode}; valid: {', '.join(AUTORESET_MODES)}")
        if array not in ARRAY_TYPES:
            raise ValueError(f"unknown array type '{array}'; valid: {', '.join(ARRAY_TYPES)}")
        self.core = core
        self.array = array
        self.autoreset_mode = autoreset_mode
        self.metadata = {"autoreset_mode": autoreset_mode, "render_modes": []}
        self.num_envs = core.num_envs
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (core.obs_dim,), np.float32)
        self.single_action_space = gym.spaces.Box(-1.0, 1.0, (core.num_actions,), np.float32)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        # NEXT_STEP: envs whose episode ended at the previous step (their next step only resets them)
        self._pending = torch.zeros(core.num_envs, dtype=torch.bool, device=core.device)

    def _out(self, x: torch.Tensor):
        if self.array == "torch":
            return x.clone()
        x = x.detach()
        return x.numpy().copy() if x.device.type == "cpu" else x.cpu().numpy()  # .cpu() already copied

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset every env, or those in ``options["reset_mask"]`` (gymnasium's key; ``"mask"`` also works), a bool
        array [num_envs]; a ``seed`` re-seeds every env's stream first."""
        if seed is not None:
            self.core.seed(seed)
            self._np_random, self._np_random_seed = gym.utils.seeding.np_random(seed)
        options = options or {}
        mask = options.get("reset_mask", options.get("mask"))
        if mask is not None:
            mask = torch.as_tensor(mask, dtype=torch.bool, device=self.core.device)
            self._pending &= ~mask
        else:
            self._pending.zero_()
        return self._out(self.core.reset(mask)), {}

    def step(self, actions):
        """One control step for every env: ``(obs, rewards, terminated, truncated, info)``."""
        actions = torch.as_tensor(actions, dtype=torch.float32, device=self.core.device)
        r = self.core.step(actions)
        info = {}
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            obs, reward, terminated, truncated = r.obs, r.reward, r.terminated, r.truncated
            info = {"final_obs": self._out(self.core.final_obs), "_final_obs": self._out(r.dones)}
        else:
            # Envs that ended last step were auto-reset by the core then stepped once more: reset them again so
            # that this step returns a first observation (no host sync: a masked reset of every env).
            pending = self._pending
            ended = r.dones & ~pending
            # on the CPU a host check is free and skips the reset launches on most steps; on CUDA it would sync
            fresh = self.core.reset(pending) if pending.is_cuda or bool(pending.any()) else self.core.obs
            obs = torch.where(ended[:, None], self.core.final_obs, fresh)
            reward = torch.where(pending, 0.0, r.reward)
            terminated, truncated = r.terminated & ~pending, r.truncated & ~pending
            self._pending = ended
        return self._out(obs), self._out(reward), self._out(terminated), self._out(truncated), info


def make_vec(task: str, num_envs: int = 1, *, device: str = "cpu", seed: int = 0, autoreset_mode: str = "next_step",
             array: str = "numpy", config=None, **_) -> GymVectorEnv:
    """gymnasium's vector entry point for ``gymnasium.make_vec("horde/<task>", num_envs=...)``."""
    from horde.envs.registry import make

    return GymVectorEnv(make(task, num_envs=num_envs, device=device, seed=seed, config=config),
                        autoreset_mode=autoreset_mode, array=array)
