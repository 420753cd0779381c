"""Episode bookkeeping shared by every task kernel: reward-term sums, done flags, statistics.

The env core's per-env episode buffers travel to task kernels as one struct, :class:`Episodes` (array views, no
copies), and the Warp functions below are the only code that touches them. Reward terms and their episode sums are
term-major, ``[num_terms, num_envs]`` (see :mod:`horde.envs.core`). Statistics accumulate on the device (``stats``,
float64) and are read once per training iteration, so the step never syncs with the host. Layout of ``stats``:
``[episodes, sum_return, sum_return_sq, sum_length, sum_length_sq, terminations, time_outs, sum_term_0, ...,
sum_term_{T-1}]``; :func:`summarize` turns it into the logged figures. A rollout outside a task env (SHAC's
differentiable model) keeps its episodes with the same functions through :class:`EpisodeBook`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import warp as wp

from horde.sim.device import init_warp, on_torch_stream

STATS_EPISODES = 0
STATS_RETURN = 1
STATS_RETURN_SQ = 2
STATS_LENGTH = 3
STATS_LENGTH_SQ = 4
STATS_TERMINATIONS = 5
STATS_TIME_OUTS = 6
STATS_TERMS = 7
"""Offset of the first per-term episode sum in ``stats``."""


@wp.struct
class Episodes:
    """Views of the env core's episode buffers, for task kernels (N envs, T reward terms)."""

    scales: wp.array(dtype=float)
    """Weight of each reward term, [T]."""
    terms: wp.array2d(dtype=float)
    """Unscaled reward terms of the last step, [T, N]; the task kernel writes them."""
    sums: wp.array2d(dtype=float)
    """Scaled reward terms summed over the current episode, [T, N]."""
    length: wp.array(dtype=wp.int32)
    """Control steps since the episode began, [N]."""
    returns: wp.array(dtype=float)
    """Return of the current episode so far, [N]."""
    reward: wp.array(dtype=float)
    """Reward of the last step, [N]."""
    terminated: wp.array(dtype=wp.bool)
    """The last step failed, [N]."""
    truncated: wp.array(dtype=wp.bool)
    """The last step timed out without failing, [N]."""
    dones: wp.array(dtype=wp.bool)
    """terminated or truncated, [N]."""
    stats: wp.array(dtype=wp.float64)
    """Statistics of finished episodes (layout in the module docstring)."""


@wp.func
def weighted_reward(ep: Episodes, i: int) -> float:
    """Reward = sum_k scales[k] * terms[k, i]; adds each scaled term to env i's episode sums."""
    r = float(0.0)
    for k in range(ep.terms.shape[0]):
        v = ep.scales[k] * ep.terms[k, i]
        ep.sums[k, i] = ep.sums[k, i] + v
        r += v
    return r


@wp.func
def close_step(ep: Episodes, i: int, r: float, failed: bool, max_episode_length: int) -> bool:
    """Write reward ``r`` and the done flags of env ``i``; on episode end, record its statistics and clear its
    counters. A time-out is reported only when the env did not also fail on the same step."""
    length = ep.length[i] + 1
    time_out = (length >= max_episode_length) and (not failed)
    done = failed or time_out
    ep.reward[i] = r
    ep.terminated[i] = failed
    ep.truncated[i] = time_out
    ep.dones[i] = done
    ep.length[i] = length
    ep.returns[i] = ep.returns[i] + r
    if done:
        end_episode(ep, i, failed)
    return done


@wp.func
def end_episode(ep: Episodes, i: int, failed: bool):
    """Record env ``i``'s finished episode (return, length, outcome, per-term sums) in ``stats``; clear its counters."""
    ret = ep.returns[i]
    length = ep.length[i]
    wp.atomic_add(ep.stats, STATS_EPISODES, wp.float64(1.0))
    wp.atomic_add(ep.stats, STATS_RETURN, wp.float64(ret))
    wp.atomic_add(ep.stats, STATS_RETURN_SQ, wp.float64(ret * ret))
    wp.atomic_add(ep.stats, STATS_LENGTH, wp.float64(length))
    wp.atomic_add(ep.stats, STATS_LENGTH_SQ, wp.float64(length) * wp.float64(length))
    if failed:
        wp.atomic_add(ep.stats, STATS_TERMINATIONS, wp.float64(1.0))
    else:
        wp.atomic_add(ep.stats, STATS_TIME_OUTS, wp.float64(1.0))
    for k in range(ep.sums.shape[0]):
        wp.atomic_add(ep.stats, STATS_TERMS + k, wp.float64(ep.sums[k, i]))
        ep.sums[k, i] = 0.0
    ep.length[i] = 0
    ep.returns[i] = 0.0


@wp.func
def clear_episode(ep: Episodes, i: int):
    """Start env ``i``'s episode afresh without recording statistics (explicit resets)."""
    ep.length[i] = 0
    ep.returns[i] = 0.0
    ep.dones[i] = False
    for k in range(ep.sums.shape[0]):
        ep.sums[k, i] = 0.0


@wp.kernel(enable_backward=False)
def seed_rng(seed: int, rng: wp.array(dtype=wp.uint32)):
    """Give every env its own random stream: ``rand_init(seed, env_id)``."""
    i = wp.tid()
    rng[i] = wp.rand_init(seed, i)


def summarize(stats: Sequence[float], term_names: Sequence[str], termination_names: Sequence[str] = (),
              causes: Sequence[float] = ()) -> dict[str, float]:
    """The figures of the episodes that ``stats`` (the layout above) recorded: ``episodes``, ``return_mean`` /
    ``_std``, ``length_mean`` / ``_std``, ``termination_rate``, ``reward/<term>`` (each scaled term's mean sum per
    episode) and ``termination/<cause>`` (the share of episodes each termination term ended; ``causes`` counts)."""
    s = np.asarray(stats, dtype=np.float64)
    n = s[STATS_EPISODES]
    out = {"episodes": float(n)}
    if n > 0:
        mean_r, mean_l = s[STATS_RETURN] / n, s[STATS_LENGTH] / n
        out["return_mean"] = float(mean_r)
        out["return_std"] = float(np.sqrt(max(s[STATS_RETURN_SQ] / n - mean_r**2, 0.0)))
        out["length_mean"] = float(mean_l)
        out["length_std"] = float(np.sqrt(max(s[STATS_LENGTH_SQ] / n - mean_l**2, 0.0)))
        out["termination_rate"] = float(s[STATS_TERMINATIONS] / n)
        for k, name in enumerate(term_names):
            out[f"reward/{name}"] = float(s[STATS_TERMS + k] / n)
        for name, count in zip(termination_names, causes):
            out[f"termination/{name}"] = float(count / n)
    return out


@wp.kernel(enable_backward=False)
def record_step(ep: Episodes, terms: wp.array2d(dtype=float), failed: wp.array(dtype=wp.bool),
                max_episode_length: int):
    """Env ``i``'s unscaled reward terms ``[N, T]`` of this step and its failure: the reward, the done flags and,
    when the episode ends, its statistics (``close_step``, as a task kernel does)."""
    i = wp.tid()
    for k in range(terms.shape[1]):
        ep.terms[k, i] = terms[i, k]
    close_step(ep, i, weighted_reward(ep, i), failed[i], max_episode_length)


class EpisodeBook:
    """Episodes of ``num_envs`` envs stepped outside a task env (SHAC's rollout of a differentiable model), kept
    by the Warp functions every task kernel calls (:func:`close_step`: the same time-out rule, the same
    statistics) on buffers that torch reads in place.

    ``length``, ``returns`` [N] and ``sums`` [T, N] (scaled terms summed over the current episode) are torch views
    of the buffers: write them to start episodes part-way (random episode starts) or to resume."""

    def __init__(self, scales: Sequence[float], num_envs: int, max_episode_length: int,
                 device: torch.device | str = "cpu") -> None:
        init_warp()
        self.device = torch.device(device)
        self.num_envs, self.max_episode_length = num_envs, int(max_episode_length)
        dev = wp.device_from_torch(self.device)
        t = len(scales)
        ep = self.ep = Episodes()
        ep.scales = wp.array(np.asarray(scales, dtype=np.float32), dtype=float, device=dev)
        ep.terms, ep.sums = (wp.zeros((t, num_envs), dtype=float, device=dev) for _ in range(2))
        ep.length = wp.zeros(num_envs, dtype=wp.int32, device=dev)
        ep.returns, ep.reward = (wp.zeros(num_envs, dtype=float, device=dev) for _ in range(2))
        ep.terminated, ep.truncated, ep.dones = (wp.zeros(num_envs, dtype=wp.bool, device=dev) for _ in range(3))
        ep.stats = wp.zeros(STATS_TERMS + t, dtype=wp.float64, device=dev)
        self.length, self.returns, self.sums = wp.to_torch(ep.length), wp.to_torch(ep.returns), wp.to_torch(ep.sums)
        self._dones, self._truncated = wp.to_torch(ep.dones), wp.to_torch(ep.truncated)
        self._stats = wp.to_torch(ep.stats)

    def record(self, terms: torch.Tensor, failed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Record one step: unscaled reward terms [N, T] and failure flags [N] (bool). Returns ``(done,
        timed_out)`` [N] (a time-out only where the env did not also fail). No host sync."""
        terms = terms.detach().to(torch.float32).contiguous()
        with on_torch_stream(self.device):
            wp.launch(record_step, self.num_envs, device=wp.device_from_torch(self.device),
                      inputs=[self.ep, wp.from_torch(terms), wp.from_torch(failed.contiguous(), dtype=wp.bool),
                              self.max_episode_length])
        return self._dones.clone(), self._truncated.clone()

    def pop_stats(self, term_names: Sequence[str]) -> dict[str, float]:
        """:func:`summarize` of the episodes finished since the last call, then clear them. Syncs with the device."""
        out = summarize(self._stats.cpu().tolist(), term_names)
        self._stats.zero_()
        return out
