"""Training throughput against the physics: PPO's env steps per second next to raw ``mujoco.batch`` stepping of the
same MuJoCo model at the same env count, in one process.

    python benchmarks/train_throughput.py [--json] [--quick] [--runs lift:512 g1-velocity:512 quadruped:256]
                                          [--iterations 8] [override ...]

Per run ``task:num_envs``:

* ``train``: ``PPOTrainer.learn`` (what ``horde train`` runs: rollout, returns, update, logging) with the task's tuned
  PPO settings for ``--iterations`` iterations after one warm-up iteration (compilation, graph capture); the figure is
  the median iteration's env steps per second, and the time split (sim, inference, learn, other) is summed over the
  timed iterations;
* ``raw``: ``mujoco.batch.Batch.step(nstep=decimation)`` of the very MuJoCo model the task steps, same env count and
  thread count, fixed joint torques (``benchmarks/mujoco_batch.py``'s ``batch-raw``), median of ``--repeats``
  windows, measured right after the training in the same process.

The ratio row ``train/raw`` is issue 29's measure (floor 0.5 for lift, g1-velocity and quadruped at the env count each
recipe uses; moonshot 0.8). ``--quick``: cartpole-free smoke run (lift, 32 envs, 2 iterations, short windows).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mujoco_batch import horde_env, raw_batch_stepper  # noqa: E402

from horde.train.config import compose  # noqa: E402
from horde.train.ppo import PPOTrainer  # noqa: E402

DEFAULT_RUNS = ("lift:512", "g1-velocity:512", "quadruped:256")


def train_rate(task: str, num_envs: int, iterations: int, overrides: list[str]) -> dict:
    """Median env steps per second of PPO iterations 2..iterations+1 and their time split."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg, task_cfg, raw = compose([f"task={task}", f"num_envs={num_envs}", f"run_root={tmp}",
                                      f"max_iterations={iterations + 1}", f"save_interval={10 * iterations}",
                                      *overrides])
        trainer = PPOTrainer(cfg, task_cfg, raw, quiet=True)
        stamps: list[float] = []

        def on_iteration(tr: PPOTrainer) -> bool:
            stamps.append(time.perf_counter())
            return False

        summary = trainer.learn(on_iteration=on_iteration)
        solver = getattr(trainer.core, "world", None)
        threads = getattr(getattr(solver, "batch", None), "nthread", None)
    steps = cfg.algo.num_steps_per_env * num_envs
    rates = [steps / (b - a) for a, b in zip(stamps[:-1], stamps[1:])]
    return {"train_env_steps_per_s": statistics.median(rates), "time_share": summary["time_share"],
            "mujoco_threads": threads, "torch_threads": cfg.torch_threads, "samples_per_iteration": steps}


def raw_rate(task: str, num_envs: int, seconds: float, repeats: int) -> float:
    """Median env steps per second of raw ``mujoco.batch`` on the task's MuJoCo model (``mujoco_batch.py``)."""
    env = horde_env(task, num_envs, "mujoco-c", 0)
    env.step(torch.zeros(num_envs, env.num_actions))  # the torques of the first step are the ones held fixed
    step = raw_batch_stepper(env)
    step()
    rates = []
    for _ in range(repeats):
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            step()
            n += 1
        rates.append(n * num_envs / (time.perf_counter() - t0))
    return statistics.median(rates)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs="+", default=list(DEFAULT_RUNS), help="task:num_envs pairs")
    ap.add_argument("--iterations", type=int, default=8, help="timed PPO iterations (after one warm-up)")
    ap.add_argument("--seconds", type=float, default=2.0, help="length of one raw timed window")
    ap.add_argument("--repeats", type=int, default=3, help="raw windows (median reported)")
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--quick", action="store_true", help="smoke run: lift at 32 envs, 2 iterations")
    ap.add_argument("overrides", nargs="*", help="config overrides for every training run, e.g. torch_threads=2")
    args = ap.parse_args(argv)
    if args.quick:
        args.runs, args.iterations, args.seconds, args.repeats = ["lift:32"], 2, 0.2, 1
    for run in args.runs:
        task, _, n = run.partition(":")
        if not n.isdigit():
            print(f"train_throughput: '{run}' is not task:num_envs", file=sys.stderr)
            return 2
        num_envs = int(n)
        train = train_rate(task, num_envs, args.iterations, args.overrides)
        raw = raw_rate(task, num_envs, args.seconds, args.repeats)
        row = {"task": task, "num_envs": num_envs, **train, "raw_env_steps_per_s": raw,
               "ratio": train["train_env_steps_per_s"] / raw, "overrides": args.overrides,
               "date": time.strftime("%Y-%m-%d"), "cpu_count": os.cpu_count()}
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            share = "  ".join(f"{k} {100 * v:.0f}%" for k, v in train["time_share"].items())
            print(f"{task:12s} N={num_envs:5d}  train {train['train_env_steps_per_s']:8.0f}  raw {raw:8.0f} env-steps/s"
                  f"  train/raw {row['ratio']:.2f}  ({share})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
