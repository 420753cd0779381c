"""Episode bookkeeping shared by every task kernel: reward-term sums, done flags, statistics.

The env core's per-env episode buffers travel to task kernels as one struct, :class:`Episodes` (array views, no
copies), and the Warp functions below are the only code that touches them. Reward terms and their episode sums are
term-major, ``[num_terms, num_envs]`` (see :mod:`horde.envs.core`). Statistics accumulate on the device (``stats``,
float64) and are read once per training iteration, so the step never syncs with the host. Layout of ``stats``:
``[episodes, sum_return, sum_return_sq, sum_length, sum_length_sq, terminations, time_outs, sum_term_0, ...,
sum_term_{T-1}]``.
"""

from __future__ import annotations

import warp as wp

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
