"""One run lifecycle for every learner: iterations, timing, logging, progress, preemption, checkpoints, summary.

A learner (:class:`horde.train.ppo.PPOTrainer`, :class:`horde.train.shac.SHACTrainer`) owns its maths and its
state; :func:`run` drives it. What a learner provides (:class:`Learner`): its config, task, run directory and
device, the iteration counter, a :class:`horde.train.timing.PhaseTimer` that its ``iterate`` marks, ``iterate()``
(one iteration; returns its losses and advances ``iteration``), ``pop_episode_stats()``, ``checkpoint()``,
``learning_rate``, ``noise_std()``, ``policy()`` (the module whose parameters must agree across ranks) and
``start()`` (called once before the first iteration).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import torch

from horde.sim.files import atomic_write_text
from horde.train.session import (DistInfo, Interrupted, PreemptionGuard, all_ranks_agree, any_rank,
                                 parameters_digest)
from horde.train.tblog import log_iteration, postfix

__all__ = ["LONG_RUN_S", "Learner", "long_run_warning", "run"]

LONG_RUN_S = 30 * 86400.0
"""A run whose iterations left would take longer than this at the measured rate is warned about, once."""


class Learner(Protocol):
    cfg: Any
    task: str
    run_dir: Path
    quiet: bool
    iteration: int
    device: Any
    num_envs: int
    dist: DistInfo
    timer: Any
    steps_per_iteration: int
    """Env steps of one iteration over every rank."""
    writer: Any
    label: str
    """Shown in the progress bar (``ppo``, ``shac``)."""

    def start(self) -> None: ...
    def iterate(self) -> dict[str, float]: ...
    def pop_episode_stats(self) -> dict[str, float]: ...
    def checkpoint(self) -> Path: ...
    @property
    def learning_rate(self) -> float: ...
    def noise_std(self) -> float: ...
    def policy(self) -> torch.nn.Module: ...


def log_writer(cfg: Any, run_dir: Path):
    """The run's curve writer: TensorBoard's ``SummaryWriter`` in ``run_dir``, or with ``logger=wandb`` rsl-rl's
    ``WandbLogWriter`` (a ``SummaryWriter`` that sends every scalar to Weights & Biases too) with the run's config,
    its files in ``run_dir/wandb`` unless ``WANDB_DIR`` says otherwise."""
    if cfg.logger != "wandb":
        from torch.utils.tensorboard import SummaryWriter

        return SummaryWriter(log_dir=str(run_dir), flush_secs=10)
    import dataclasses
    import os

    from rsl_rl.utils.wandb_log_writer import WandbLogWriter

    before = os.environ.get("WANDB_DIR")
    os.environ["WANDB_DIR"] = before or str(run_dir)
    try:
        writer = WandbLogWriter(log_dir=str(run_dir), project_name=cfg.wandb_project)
    finally:
        if before is None:
            del os.environ["WANDB_DIR"]
    writer.store_config(cfg.task, {k: v for k, v in dataclasses.asdict(cfg).items() if k != "task"})
    return writer


def run(learner: Learner, on_iteration: Callable[[Any], bool] | None = None) -> dict:
    """Train ``learner`` for ``cfg.max_iterations`` iterations; returns the run's summary figures.

    ``on_iteration(learner)`` runs after every iteration (evaluation, early stopping); returning True stops. A
    SIGTERM, SIGUSR1 or SIGINT (Ctrl-C) stops every rank after the same iteration with a checkpoint (``resume=``
    continues it); after a SIGINT, :class:`horde.train.session.Interrupted` (a ``KeyboardInterrupt``) is raised
    once the checkpoint and the summary are written, so a script or sweep stops as Ctrl-C asks. A second Ctrl-C
    raises ``KeyboardInterrupt`` at once, without that checkpoint (:class:`PreemptionGuard`). After the second
    iteration (the first pays one-time compiles), iterations left that would take over 30 days at its time print one
    warning line (:func:`long_run_warning`).
    """
    from tqdm import tqdm

    cfg, dist = learner.cfg, learner.dist
    main = dist.is_main
    learner.writer = log_writer(cfg, learner.run_dir) if main else None
    steps = learner.steps_per_iteration
    start_iteration = learner.iteration
    learner.start()
    bar = tqdm(total=cfg.max_iterations, initial=learner.iteration, desc=f"train {learner.task} ({learner.label})",
               unit="it", dynamic_ncols=True, disable=learner.quiet or not sys.stderr.isatty(), file=sys.stderr)
    guard = PreemptionGuard(on_signal=None if learner.quiet else _notice(learner.task)).__enter__()
    preempted = False
    totals = {p: 0.0 for p in ("sim", "inference", "learn", "other")}
    last_stats: dict = {}
    t_start = time.perf_counter()
    while learner.iteration < cfg.max_iterations:
        if guard.requested and not dist.enabled:  # asked during the evaluation or a save: no iteration is in progress
            preempted = True
            break
        it = learner.iteration
        t_iter = time.perf_counter()
        learner.timer.start()
        losses = learner.iterate()
        split = learner.timer.collect()
        iter_s = time.perf_counter() - t_iter
        split["other"] += max(iter_s - sum(split.values()), 0.0)
        for k in totals:
            totals[k] += split[k]
        stats = learner.pop_episode_stats()
        if stats["episodes"] > 0:
            last_stats = stats
        sps = steps / iter_s
        if main:
            log_iteration(learner.writer, it, stats=stats, losses=losses, split=split, steps=steps, iter_s=iter_s,
                          learning_rate=learner.learning_rate, noise_std=learner.noise_std())
        if bar.disable and not learner.quiet and (it % cfg.log_interval == 0 or it + 1 == cfg.max_iterations):
            elapsed = time.perf_counter() - t_start
            eta = elapsed / max(it + 1 - start_iteration, 1) * (cfg.max_iterations - it - 1)
            print(f"[{learner.task}] it {it + 1}/{cfg.max_iterations} {postfix(last_stats, sps)} "
                  f"elapsed {elapsed:.0f}s eta {eta:.0f}s", flush=True)
        bar.set_postfix_str(postfix(last_stats, sps), refresh=False)
        bar.update(1)
        if main and not learner.quiet and it == start_iteration + 1:  # the 2nd: the 1st pays one-time compiles
            warning = long_run_warning(learner.task, cfg.max_iterations, learner.iteration, iter_s)
            if warning:
                bar.write(warning, file=sys.stderr)
        if any_rank(guard.requested, dist):  # every rank stops after the same iteration
            preempted = True
            break
        if on_iteration is not None and on_iteration(learner):
            break
        if main and learner.iteration % cfg.save_interval == 0:
            learner.checkpoint()
    guard.__exit__(None, None, None)
    bar.close()
    ckpt = learner.checkpoint() if main else None
    interrupted = preempted and guard.signum == signal.SIGINT
    if preempted and not learner.quiet:
        how = "interrupted (Ctrl-C)" if interrupted else f"preempted (signal {guard.signum})"
        print(f"[{learner.task}] {how}: saved {ckpt} at iteration {learner.iteration}; "
              f"continue with `horde train resume={learner.run_dir}`", flush=True)
    in_sync = all_ranks_agree(parameters_digest(learner.policy()), dist)
    if learner.writer is not None:
        learner.writer.close()
        if hasattr(learner.writer, "stop"):  # W&B: the run finishes (an offline run's files are complete)
            learner.writer.stop()
    wall = time.perf_counter() - t_start
    totals["other"] = max(wall - totals["sim"] - totals["inference"] - totals["learn"], 0.0)  # logging, saving
    env_steps = steps * (learner.iteration - start_iteration)
    share = {k: v / max(wall, 1e-9) for k, v in totals.items()}
    summary = {
        "task": learner.task, "run_dir": str(learner.run_dir), "checkpoint": str(ckpt),
        "iterations": learner.iteration, "num_envs": cfg.num_envs, "device": str(learner.device),
        "env_steps": env_steps, "train_seconds": wall, "env_steps_per_s": env_steps / max(wall, 1e-9),
        "sim_env_steps_per_s": env_steps / max(totals["sim"], 1e-9), "time_share": share,
        "last_train_episodes": last_stats, "preempted": preempted, "world_size": dist.world_size,
        "ranks_in_sync": in_sync,
    }
    if main:
        atomic_write_text(learner.run_dir / "train_summary.json", json.dumps(summary, indent=2))
    if not learner.quiet:
        print("time split: " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in share.items()), flush=True)
    if interrupted:
        raise Interrupted(f"interrupted: saved {ckpt} at iteration {learner.iteration}")
    return summary


def long_run_warning(task: str, max_iterations: int, iteration: int, iter_s: float) -> str | None:
    """One line when the iterations left (``iteration`` to ``max_iterations``) would take more than
    :data:`LONG_RUN_S` at ``iter_s`` seconds each (a mistyped ``max_iterations``, or one meant as "until stopped"),
    with the figure; None otherwise."""
    left = (max_iterations - iteration) * iter_s
    if left <= LONG_RUN_S:
        return None
    days = left / 86400
    span = f"{days:,.0f} days" if days < 730 else f"{days / 365.25:,.0f} years"
    return (f"[{task}] warning: max_iterations={max_iterations} at {iter_s:.2g} s an iteration takes {span} more; "
            f"Ctrl-C saves a checkpoint and stops")


def _notice(task: str) -> Callable[[int], None]:
    """What the first stop signal prints at once (the checkpoint comes after the iteration in progress, which may
    take a while). Written straight to file descriptor 2: a signal handler that printed through ``sys.stderr``
    while the loop was printing would raise a reentrant-call error."""

    def notice(signum: int) -> None:
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        again = "; Ctrl-C again stops at once, without it" if signum == signal.SIGINT else ""
        lead = "\n" if os.isatty(2) else ""  # past a progress bar (or the terminal's ^C)
        with contextlib.suppress(OSError):
            os.write(2, f"{lead}[{task}] {name}: saving a checkpoint after the iteration in progress{again}\n"
                        .encode())

    return notice
