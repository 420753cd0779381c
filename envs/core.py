"""The env core: one batched task on a Warp device, its buffers shared with torch without copies.

A task subclasses :class:`WarpTaskEnv`, declares its layouts, and implements two launch methods:
``_launch_step`` (physics substeps, then one post-step kernel: reward terms, terminations, time-outs,
automatic reset of finished envs, observations) and ``_launch_reset`` (reset the envs in ``self._reset_mask``).
``_launch_step`` is recorded once as a graph and replayed every step. The rsl-rl and gymnasium interfaces
(:mod:`horde.envs.adapters`) are thin views over this core.

Reward terms and their per-episode sums are stored term-major, ``[num_terms, num_envs]``, so that consecutive envs
(consecutive GPU threads, consecutive SIMD lanes on a CPU) write consecutive addresses; ``terms`` is the transposed
``[num_envs, num_terms]`` torch view of that buffer.

A task whose CPU step a native loop can vectorize (cartpole) derives from :class:`horde.envs.blocks.BlockStepEnv`
instead, which adds the CPU block path and its multi-threaded replay; the core itself always runs one env per thread.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch
import warp as wp

from horde.envs import episode
from horde.envs.curricula import CURRICULA
from horde.envs.observations import ObsTerm, raw_term
from horde.sim import StepGraph, resolve_device
from horde.sim.fields import bounded

@dataclass(kw_only=True)
class TaskConfig:
    """Fields shared by every task; a task's config subclasses this."""

    episode_length: int = bounded(500, ge=1)
    """Control steps before a time-out."""
    sim_dt: float = bounded(0.01, gt=0)
    """Physics substep [s]."""
    decimation: int = bounded(2, ge=1)
    """Physics substeps per control step."""
    use_graph: bool = True
    """Replay the step as a recorded graph (CPU or CUDA graph); False launches kernels eagerly every step."""
    cpu_threads: int = bounded(1, ge=1)
    """OS threads a CPU step is split over (tasks with a block step, horde.envs.blocks; graph replay; at least 2048
    envs per thread).
    Pays off only on otherwise idle cores: on a loaded machine the slower thread sets the pace."""
    reward_scales: dict[str, float] = field(default_factory=dict)
    """Weight of each named reward term; keys must equal the task's term names."""
    reward_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the configured reward terms, by name: ``{reaching: {std: 0.05}}`` (over the defaults next to
    the term's function), and ``func`` to make a new term of a registered one (``{reaching_coarse: {func: reaching,
    std: 0.3}}`` with a ``reward_scales`` line for its weight); ``task.reward_params.<term>.<param>=v``."""
    curricula: list[str] = field(default_factory=list)
    """Curricula (:data:`horde.envs.curricula.CURRICULA`) run once when the env is built (iteration 0) and once per
    training iteration, in order: e.g. a reward weight that grows (``reward_weight``)."""
    curriculum_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the listed curricula, by name (``func`` names the registered one a curriculum is made of);
    ``task.curriculum_params.<name>.<param>=v``."""

    @property
    def control_dt(self) -> float:
        """Control period [s] = sim_dt * decimation."""
        return self.sim_dt * self.decimation


@dataclass(frozen=True)
class StepResult:
    """Views of the device buffers after one step. Valid until the next step; clone what you keep."""

    obs: torch.Tensor
    """Observations after automatic reset, shape [num_envs, obs_dim]."""
    reward: torch.Tensor
    """Reward, shape [num_envs]."""
    terminated: torch.Tensor
    """Episode ended by a failure condition, bool [num_envs]."""
    truncated: torch.Tensor
    """Episode ended by the time limit only, bool [num_envs]."""
    dones: torch.Tensor
    """terminated | truncated, bool [num_envs]."""


class WarpTaskEnv:
    """Base class of every batched task. Subclasses set the class layouts and the two launch methods."""

    obs_names: ClassVar[tuple[str, ...]]
    """Name of each observation column, in order."""
    critic_names: tuple[str, ...] = ()
    """Name of each column of the privileged critic group (``critic_obs``): what only the simulator knows (noise-free
    observations, randomized physics, contact forces). Empty: the critic sees ``obs``, as the actor does. Never
    exported: a robot provides ``obs`` only."""
    teacher_obs: torch.Tensor | None = None
    """What a distillation teacher reads, [num_envs, obs_dim] with the columns of ``obs_names`` (the velocity tasks:
    the observations without noise, a view of the critic group); None when the task has no teacher group."""
    action_names: ClassVar[tuple[str, ...]]
    """Name of each action column, in order; actions are normalized to [-1, 1]."""
    state_names: ClassVar[tuple[str, ...]]
    """Name of each physical state column, in order."""
    termination_names: tuple[str, ...] = ()
    """Name of each termination term whose firings the step counts in ``_causes`` (tasks with termination terms);
    ``pop_episode_stats`` reports each as ``termination/<name>``, the share of finished episodes it ended."""
    term_names: ClassVar[tuple[str, ...]]
    """Name of each reward term, in order; ``cfg.reward_scales`` must have exactly these keys."""
    step_kernels: ClassVar[tuple]
    """Every kernel ``_launch_step`` launches (compiled before the step is recorded)."""
    action_type: ClassVar[str] = "force"
    """What an action commands: force, torque, position_target, ..."""
    action_unit: ClassVar[str] = ""
    """Physical unit of ``action_scale``."""

    def __init__(self, cfg: TaskConfig, *, num_envs: int, device: str = "cpu", seed: int = 0) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if set(cfg.reward_scales) != set(self.term_names):
            raise ValueError(
                f"{type(cfg).__name__}.reward_scales keys {sorted(cfg.reward_scales)} must equal the reward terms "
                f"{sorted(self.term_names)}"
            )
        self.cfg = cfg
        self.num_envs = num_envs
        self.dev = resolve_device(device)
        self.device = self.dev.torch
        self.max_episode_length = cfg.episode_length
        n, d = num_envs, self.dev.warp
        obs_dim, act_dim, t = len(self.obs_names), len(self.action_names), len(self.term_names)

        with wp.ScopedDevice(d):
            self._state = wp.zeros((n, len(self.state_names)), dtype=float)
            self._actions = wp.zeros((n, act_dim), dtype=float)
            self._obs = wp.zeros((n, obs_dim), dtype=float)
            self._final_obs = wp.zeros((n, obs_dim), dtype=float)
            self._critic_obs = wp.zeros((n, len(self.critic_names)), dtype=float)
            self._reward = wp.zeros(n, dtype=float)
            self._terms = wp.zeros((t, n), dtype=float)  # term-major (see the module docstring)
            self._terminated = wp.zeros(n, dtype=wp.bool)
            self._truncated = wp.zeros(n, dtype=wp.bool)
            self._dones = wp.zeros(n, dtype=wp.bool)
            self._reset_mask = wp.zeros(n, dtype=wp.bool)
            self._episode_length = wp.zeros(n, dtype=wp.int32)
            self._episode_return = wp.zeros(n, dtype=float)
            self._episode_sums = wp.zeros((t, n), dtype=float)
            self._stats = wp.zeros(episode.STATS_TERMS + t, dtype=wp.float64)
            self._rng = wp.zeros(n, dtype=wp.uint32)
            self._causes = wp.zeros(max(len(self.termination_names), 1), dtype=wp.float64)
            self._reward_scales = wp.array([cfg.reward_scales[k] for k in self.term_names], dtype=float)
        self._curricula = CURRICULA.configure(cfg.curricula, cfg.curriculum_params, self.term_names)
        """The configured curricula (``task.curricula``), run by :meth:`pop_episode_stats`."""
        self._curriculum_iteration = torch.zeros((), dtype=torch.int64)

        # Zero-copy torch views, created once (outside any inference mode).
        self.state = wp.to_torch(self._state)
        """Physical state, shape [num_envs, len(state_names)], units per ``state_names``."""
        self.actions = wp.to_torch(self._actions)
        """Last actions applied, shape [num_envs, num_actions], in [-1, 1]."""
        self.obs = wp.to_torch(self._obs)
        self.final_obs = wp.to_torch(self._final_obs)
        """Observation at the last step of each finished episode (valid where ``dones``), [num_envs, obs_dim]."""
        self.critic_obs = wp.to_torch(self._critic_obs)
        """The privileged critic group after the step, [num_envs, len(critic_names)] (zero columns without one)."""
        self.reward = wp.to_torch(self._reward)
        self.terms = wp.to_torch(self._terms).T
        """Unscaled reward terms of the last step, [num_envs, len(term_names)] (a transposed view: not contiguous)."""
        self.terminated = wp.to_torch(self._terminated)
        self.truncated = wp.to_torch(self._truncated)
        self.dones = wp.to_torch(self._dones)
        self.episode_length = wp.to_torch(self._episode_length)
        """Control steps since each env's episode began, int32 [num_envs]."""
        self._reset_mask_t = wp.to_torch(self._reset_mask)
        self._rng_t = wp.to_torch(self._rng)

        self._is_cuda = self.dev.is_cuda
        self._result = StepResult(self.obs, self.reward, self.terminated, self.truncated, self.dones)
        self._views: dict[tuple, wp.array] = {}
        self._bind()
        self._configure_step()
        for c in self._curricula:  # iteration 0: where each curriculum starts, before the first reset
            c(self, 0, {})
        self.seed(seed)
        self.reset()

    def _bind(self) -> None:
        """Second construction phase: the task builds what needs the buffers allocated above (its term context)
        before the first reset. Nothing by default."""

    # --- sizes -------------------------------------------------------------------------------------------------
    @property
    def obs_dim(self) -> int:
        """Observation width."""
        return len(self.obs_names)

    @property
    def num_actions(self) -> int:
        """Action width."""
        return len(self.action_names)

    # --- what the observation is ------------------------------------------------------------------------------
    def observation_terms(self) -> tuple[ObsTerm, ...]:
        """The observation's terms in column order (:mod:`horde.envs.observations`): ``policy.json``'s observation
        comes from them. This default, for tasks that declare none, feeds each column's own raw value."""
        return tuple(raw_term(n) for n in self.obs_names)

    def observation_sources(self) -> dict[str, torch.Tensor]:
        """Each raw source the observation terms read, ``[num_envs, width]``, computed from the world's state now
        (not from the observation buffer): with the terms' offsets, scales and clips it rebuilds ``obs`` (the
        observation contract test; noise off). Tasks that declare terms implement it."""
        raise NotImplementedError(f"{type(self).__name__} does not read its observation sources")

    # --- the hot path ------------------------------------------------------------------------------------------
    def step(self, actions: torch.Tensor) -> StepResult:
        """Apply ``actions`` [num_envs, num_actions] in [-1, 1] for one control step; finished envs auto-reset.

        No host sync and no allocation: one device copy, then the recorded graph.
        """
        if actions.shape != self.actions.shape:
            raise ValueError(f"actions must have shape {tuple(self.actions.shape)}, got {tuple(actions.shape)}")
        self.actions.copy_(actions)
        if self._is_cuda:
            with self._stream_order():
                self._graph()
        else:  # CPU: Warp and torch run in order already; keep the per-step cost at the graph replay
            self._graph()
        return self._result

    @contextlib.contextmanager
    def _stream_order(self):
        """On CUDA, order Warp's work after torch's pending work (the action copy) and torch's later work after
        Warp's (reading observations), with stream-to-stream waits: no host sync. Warp launches and graphs run on
        Warp's own stream because a CUDA graph cannot be captured on torch's legacy default stream."""
        if not self.dev.is_cuda:
            yield
            return
        torch_stream = wp.stream_from_torch(torch.cuda.current_stream(self.device))
        warp_stream = wp.get_stream(self.dev.warp)
        warp_stream.wait_stream(torch_stream)
        yield
        torch_stream.wait_stream(warp_stream)

    # --- resets and seeding ------------------------------------------------------------------------------------
    def reset(self, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Reset the envs where ``mask`` (bool [num_envs]) is True, all when None; returns the obs view."""
        if mask is None:
            self._reset_mask_t.fill_(True)
        else:
            self._reset_mask_t.copy_(mask.to(device=self.device, dtype=torch.bool))
        with self._stream_order():
            self._launch_reset()
        return self.obs

    def seed(self, seed: int) -> None:
        """Re-seed every env's random stream (env i draws from ``rand_init(seed, i)``)."""
        self._seed = int(seed)
        with self._stream_order():
            wp.launch(episode.seed_rng, self.num_envs, inputs=[self._seed], outputs=[self._rng], device=self.dev.warp)

    def get_rng_state(self) -> torch.Tensor:
        """A copy of the per-env random streams, for checkpoints."""
        return self._rng_t.clone()

    def set_rng_state(self, rng_state: torch.Tensor) -> None:
        """Restore per-env random streams saved by :meth:`get_rng_state`."""
        self._rng_t.copy_(rng_state.to(self.device))

    def _resumable(self) -> dict[str, torch.Tensor]:
        return {
            "state": self.state, "obs": self.obs, "episode_length": self.episode_length, "rng": self._rng_t,
            "episode_return": wp.to_torch(self._episode_return), "episode_sums": wp.to_torch(self._episode_sums).T,
            "stats": wp.to_torch(self._stats),
            **({"curriculum_iteration": self._curriculum_iteration, "reward_scales": wp.to_torch(self._reward_scales)}
               if self._curricula else {}),
        }

    def get_env_state(self) -> dict[str, torch.Tensor]:
        """Everything needed to continue these envs exactly (physics, episodes, random streams), on the CPU."""
        self._fold_stats()
        return {k: v.detach().cpu().clone() for k, v in self._resumable().items()}

    def set_env_state(self, saved: dict[str, torch.Tensor]) -> None:
        """Restore :meth:`get_env_state`; shapes must match this env (same task and num_envs)."""
        resumable = self._resumable()
        missing, extra = sorted(set(resumable) - set(saved)), sorted(set(saved) - set(resumable))
        if missing or extra:
            raise ValueError(f"saved env state does not fit this env (another simulator backend or task?): "
                             f"missing {', '.join(missing) or 'nothing'}; unexpected {', '.join(extra) or 'nothing'}")
        for k, dst in resumable.items():  # every shape first: a refused state changes nothing
            if tuple(saved[k].shape) != tuple(dst.shape):
                hint = (" (MuJoCo's state rows: saved with another task.sim.mujoco_actuators?)"
                        if k == "mj_state" and saved[k].shape[:1] == dst.shape[:1] else "")
                raise ValueError(f"saved env state '{k}' has shape {tuple(saved[k].shape)}, this env "
                                 f"{tuple(dst.shape)}{hint}")
        for k, dst in resumable.items():
            dst.copy_(saved[k].to(self.device))

    # --- statistics (host side, once per iteration) ------------------------------------------------------------
    def pop_episode_stats(self) -> dict[str, float]:
        """Statistics of episodes finished since the last call, then clear them. Syncs with the device."""
        self._fold_stats()
        s = self._stats.numpy().astype(np.float64)
        self._stats.zero_()
        causes = self._causes.numpy()[:len(self.termination_names)].copy() if self.termination_names else ()
        if self.termination_names:
            self._causes.zero_()
        out = episode.summarize(s, self.term_names, self.termination_names, causes)
        if self._curricula:  # once per training iteration, between graph replays
            self._curriculum_iteration += 1
            for c in self._curricula:
                out.update(c(self, int(self._curriculum_iteration), out))
        return out

    reward_scale_unit = 1.0
    """What one unit of a ``reward_scales`` weight is in the step's scale (the velocity family's weights are per
    second: its control period)."""

    def set_reward_weight(self, term: str, weight: float) -> None:
        """Set reward term ``term``'s weight (``reward_scales``' units) for the steps from now on; host side, between
        iterations (the recorded step reads the weights from device memory). The differentiable models of SHAC
        keep the config's weights."""
        wp.to_torch(self._reward_scales)[self.term_names.index(term)] = weight * self.reward_scale_unit

    def describe(self) -> dict:
        """Layouts and timing that an exported policy must carry."""
        return {
            "task": getattr(self, "task_name", type(self).__name__),
            "obs_names": list(self.obs_names),
            "action_names": list(self.action_names),
            "state_names": list(self.state_names),
            "reward_terms": list(self.term_names),
            "action_scale": self.action_scale(),
            "action_unit": self.action_unit,
            "action_type": self.action_type,
            "control_dt": self.cfg.control_dt,
            "decimation": self.cfg.decimation,
            "episode_length": self.cfg.episode_length,
            "config": dataclasses.asdict(self.cfg),
        }

    def action_scale(self) -> list[float]:
        """Physical command at action +1, per action column (the env clips actions to [-1, 1] first)."""
        return [1.0] * self.num_actions

    # --- how a step runs -----------------------------------------------------------------------------------------
    def _configure_step(self) -> None:
        """Record nothing yet: the step graph of ``_launch_step``, one env per thread (BlockStepEnv overrides)."""
        self._graph = StepGraph(self._launch_step, self.dev.warp, kernels=self.step_kernels,
                                use_graph=self.cfg.use_graph)

    def _fold_stats(self) -> None:
        """Gather statistics kept in more than one buffer into ``_stats`` (BlockStepEnv's threads); here one."""

    def _env_slice(self, arr: wp.array, start: int) -> wp.array:
        """``arr`` from env ``start`` on (the env axis is the last one of the term-major buffers), created once."""
        if start == 0:
            return arr
        key = ("slice", arr.ptr, start)
        if key not in self._views:
            term_major = arr.ptr in (self._terms.ptr, self._episode_sums.ptr)
            self._views[key] = arr[:, start:] if term_major else arr[start:]
        return self._views[key]

    def episodes(self, start: int = 0, stats: wp.array | None = None) -> episode.Episodes:
        """The episode buffers of envs [start, num_envs) as one kernel argument (statistics into ``stats``, default
        the env's own), created once per (start, stats)."""
        stats = self._stats if stats is None else stats
        key = ("episodes", start, stats.ptr)
        if key not in self._views:
            v = self._env_slice
            ep = episode.Episodes()
            ep.scales = self._reward_scales
            ep.terms, ep.sums = v(self._terms, start), v(self._episode_sums, start)
            ep.length, ep.returns = v(self._episode_length, start), v(self._episode_return, start)
            ep.reward = v(self._reward, start)
            ep.terminated, ep.truncated, ep.dones = (v(a, start) for a in (self._terminated, self._truncated,
                                                                            self._dones))
            ep.stats = stats
            self._views[key] = ep
        return self._views[key]

    # --- launch helpers for tasks whose kernels use horde's standard signatures (cartpole, pendulum) -------------
    def _launch_post_step(self, kernel, task, *, start: int = 0, stats: wp.array | None = None) -> None:
        """``kernel(task, actions, state, rng, episodes) -> (obs, final_obs)``, one thread per env from env ``start``
        on."""
        if start >= self.num_envs:
            return
        v = self._env_slice
        wp.launch(
            kernel, self.num_envs - start,
            inputs=[task, v(self._actions, start), v(self._state, start), v(self._rng, start),
                    self.episodes(start, stats)],
            outputs=[v(self._obs, start), v(self._final_obs, start)],
            device=self.dev.warp,
        )

    def _launch_masked_reset(self, kernel, task) -> None:
        """``kernel(task, mask, state, rng, episodes) -> obs``."""
        wp.launch(kernel, self.num_envs, inputs=[task, self._reset_mask, self._state, self._rng, self.episodes()],
                  outputs=[self._obs], device=self.dev.warp)

    # --- task hooks --------------------------------------------------------------------------------------------
    def _launch_step(self) -> None:
        raise NotImplementedError

    def _launch_reset(self) -> None:
        raise NotImplementedError
