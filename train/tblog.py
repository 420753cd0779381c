"""What every learner writes to TensorBoard after an iteration, and the one-line progress text."""

from __future__ import annotations


def log_iteration(writer, it: int, *, stats: dict, losses: dict, split: dict, steps: int, iter_s: float,
                  learning_rate: float, noise_std: float) -> None:
    """Losses, learning rate, exploration noise, throughput, the wall-time split, episode statistics, every reward
    term and every ``sim/*`` counter (e.g. ``sim/unstable_resets`` from the physics health check)."""
    for k, v in losses.items():
        writer.add_scalar(f"Loss/{k}", v, it)
    writer.add_scalar("Loss/learning_rate", learning_rate, it)
    writer.add_scalar("Policy/mean_noise_std", noise_std, it)
    writer.add_scalar("Perf/env_steps_per_s", steps / iter_s, it)
    for k, v in split.items():
        writer.add_scalar(f"Perf/time_{k}_s", v, it)
        writer.add_scalar(f"Perf/share_{k}", v / iter_s, it)
    if stats.get("episodes", 0) > 0:
        writer.add_scalar("Train/mean_return", stats["return_mean"], it)
        writer.add_scalar("Train/mean_episode_length", stats["length_mean"], it)
        writer.add_scalar("Train/termination_rate", stats["termination_rate"], it)
        for k, v in stats.items():
            if k.startswith("reward/"):
                writer.add_scalar(f"Reward/{k[7:]}", v, it)
    for k, v in stats.items():
        if k.startswith("sim/"):
            writer.add_scalar(k, v, it)


def postfix(stats: dict, sps: float) -> str:
    """``return R len L S steps/s`` for a progress bar or line."""
    if not stats:
        return f"{sps:,.0f} steps/s"
    return f"return {stats['return_mean']:.1f} len {stats['length_mean']:.0f} {sps:,.0f} steps/s"
