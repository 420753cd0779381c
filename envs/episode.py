"""Warp functions shared by every task kernel: reward-term sums, episode bookkeeping and statistics.

Reward terms and episode sums are term-major arrays, ``[num_terms, num_envs]`` (see :mod:`horde.envs.core`).
Statistics accumulate on the device (``stats``, float64) and are read once per training iteration, so the
step never syncs with the host. Layout of ``stats``: ``[episodes, sum_return, sum_return_sq, sum_length,
sum_length_sq, terminations, time_outs, sum_term_0, ..., sum_term_{T-1}]``.
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


@wp.func
def weighted_reward(
    i: int,
    scales: wp.array(dtype=float),
    terms: wp.array2d(dtype=float),
    episode_sums: wp.array2d(dtype=float),
) -> float:
    """Reward = sum_k scales[k] * terms[k, i]; adds each scaled term to env i's episode sums."""
    r = float(0.0)
    for k in range(terms.shape[0]):
        v = scales[k] * terms[k, i]
        episode_sums[k, i] = episode_sums[k, i] + v
        r += v
    return r


@wp.func
def close_step(
    i: int,
    r: float,
    failed: bool,
    max_episode_length: int,
    episode_length: wp.array(dtype=wp.int32),
    episode_return: wp.array(dtype=float),
    episode_sums: wp.array2d(dtype=float),
    reward: wp.array(dtype=float),
    terminated: wp.array(dtype=wp.bool),
    truncated: wp.array(dtype=wp.bool),
    dones: wp.array(dtype=wp.bool),
    stats: wp.array(dtype=wp.float64),
) -> bool:
    """Write reward and done flags for env ``i``; on episode end, record its statistics and clear its counters.

    A time-out is reported only when the env did not also fail on the same step.
    """
    length = episode_length[i] + 1
    time_out = (length >= max_episode_length) and (not failed)
    done = failed or time_out
    reward[i] = r
    terminated[i] = failed
    truncated[i] = time_out
    dones[i] = done
    episode_length[i] = length
    episode_return[i] = episode_return[i] + r
    if done:
        end_episode(i, failed, episode_length, episode_return, episode_sums, stats)
    return done


@wp.func
def end_episode(
    i: int,
    failed: bool,
    episode_length: wp.array(dtype=wp.int32),
    episode_return: wp.array(dtype=float),
    episode_sums: wp.array2d(dtype=float),
    stats: wp.array(dtype=wp.float64),
):
    """Record env ``i``'s finished episode (return, length, outcome, per-term sums) in ``stats``; clear its counters."""
    record_episode(stats, episode_return[i], episode_length[i], failed)
    for k in range(episode_sums.shape[0]):
        wp.atomic_add(stats, STATS_TERMS + k, wp.float64(episode_sums[k, i]))
        episode_sums[k, i] = 0.0
    episode_length[i] = 0
    episode_return[i] = 0.0


@wp.func
def record_episode(stats: wp.array(dtype=wp.float64), ret: float, length: int, failed: bool):
    """Add one finished episode's return, length and outcome to ``stats`` (the per-term sums are the caller's)."""
    wp.atomic_add(stats, STATS_EPISODES, wp.float64(1.0))
    wp.atomic_add(stats, STATS_RETURN, wp.float64(ret))
    wp.atomic_add(stats, STATS_RETURN_SQ, wp.float64(ret * ret))
    wp.atomic_add(stats, STATS_LENGTH, wp.float64(length))
    wp.atomic_add(stats, STATS_LENGTH_SQ, wp.float64(length) * wp.float64(length))
    if failed:
        wp.atomic_add(stats, STATS_TERMINATIONS, wp.float64(1.0))
    else:
        wp.atomic_add(stats, STATS_TIME_OUTS, wp.float64(1.0))


@wp.func
def clear_episode(
    i: int,
    episode_length: wp.array(dtype=wp.int32),
    episode_return: wp.array(dtype=float),
    episode_sums: wp.array2d(dtype=float),
):
    """Zero env ``i``'s counters without recording statistics (explicit resets)."""
    episode_length[i] = 0
    episode_return[i] = 0.0
    for k in range(episode_sums.shape[0]):
        episode_sums[k, i] = 0.0


@wp.kernel(enable_backward=False)
def seed_rng(seed: int, rng: wp.array(dtype=wp.uint32)):
    """Give every env its own random stream: ``rand_init(seed, env_id)``."""
    i = wp.tid()
    rng[i] = wp.rand_init(seed, i)
