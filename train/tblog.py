"""What every learner writes to TensorBoard after an iteration, and the one-line progress text."""

from __future__ import annotations


def iteration_scalars(*, stats: dict, losses: dict, split: dict, steps: int, iter_s: float, learning_rate: float,
                      noise_std: float) -> dict[str, float]:
    """Losses, learning rate, exploration noise, throughput, the wall-time split, episode statistics, every reward
    term, the share of episodes each termination term ended (``Termination/<name>``), every ``sim/*`` counter (e.g.
    ``sim/unstable_resets`` from the physics health check) and every ``curriculum/*`` level (terrain level, the vx
    command range), by tag."""
    out = {k if "/" in k else f"Loss/{k}": v for k, v in losses.items()}  # "Overlap/..." keeps its own tag
    out["Loss/learning_rate"] = learning_rate
    out["Policy/mean_noise_std"] = noise_std
    out["Perf/env_steps_per_s"] = steps / iter_s
    for k, v in split.items():
        out[f"Perf/time_{k}_s"] = v
        out[f"Perf/share_{k}"] = v / iter_s
    if stats.get("episodes", 0) > 0:
        out["Train/mean_return"] = stats["return_mean"]
        out["Train/mean_episode_length"] = stats["length_mean"]
        out["Train/termination_rate"] = stats["termination_rate"]
        out.update({f"Reward/{k[7:]}": v for k, v in stats.items() if k.startswith("reward/")})
        out.update({f"Termination/{k[12:]}": v for k, v in stats.items() if k.startswith("termination/")})
    out.update({k: v for k, v in stats.items() if k.startswith(("sim/", "curriculum/"))})
    return out


def write_scalars(writer, it: int, scalars: dict[str, float]) -> None:
    """All of ``scalars`` as one TensorBoard event at step ``it``.

    ``SummaryWriter.add_scalar`` queues one event per value, and its queue holds 10: with two dozen values an
    iteration the trainer waited on the writer thread, about 0.2 ms per value (5 ms an iteration, measured on the
    2-core CPU, where a cartpole iteration takes 20-40 ms). One summary with every value is one queued event; readers
    (TensorBoard, ``EventAccumulator``, ``horde plot``) see the same scalars.
    """
    from tensorboard.compat.proto.summary_pb2 import Summary

    values = [Summary.Value(tag=k, simple_value=float(v)) for k, v in scalars.items()]
    writer.file_writer.add_summary(Summary(value=values), global_step=it)
    from rsl_rl.utils.wandb_log_writer import WandbLogWriter

    if isinstance(writer, WandbLogWriter):  # logger=wandb: the same values to W&B, one record a step
        import wandb

        wandb.log({k: float(v) for k, v in scalars.items()}, step=it)


def log_iteration(writer, it: int, *, stats: dict, losses: dict, split: dict, steps: int, iter_s: float,
                  learning_rate: float, noise_std: float) -> None:
    """Write :func:`iteration_scalars` for iteration ``it`` as one event."""
    write_scalars(writer, it, iteration_scalars(stats=stats, losses=losses, split=split, steps=steps, iter_s=iter_s,
                                                learning_rate=learning_rate, noise_std=noise_std))


def postfix(stats: dict, sps: float) -> str:
    """``return R len L S steps/s`` for a progress bar or line."""
    if not stats:
        return f"{sps:,.0f} steps/s"
    return f"return {stats['return_mean']:.1f} len {stats['length_mean']:.0f} {sps:,.0f} steps/s"
