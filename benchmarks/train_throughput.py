"""Training throughput against the physics: PPO's env steps per second next to raw ``mujoco.batch`` stepping of the
same MuJoCo model at the same env count, in one process.

    python benchmarks/train_throughput.py [--json] [--quick] [--runs lift:512 g1-velocity:512 quadruped:256]
                                          [--iterations 8] [--split] [--no-train] [--profile] [override ...]

Per run ``task:num_envs``:

* ``train``: ``PPOTrainer.learn`` (what ``horde train`` runs: rollout, returns, update, logging) with the task's CPU
  recipe (its tuned PPO settings and the CPU overrides of ``learning_suite.py``'s entry other than ``num_envs``, as
  the scoreboard trains it: the G1's 3 epochs; ``--tuned``: the tuned settings alone) for ``--iterations``
  iterations after one warm-up iteration (compilation, graph capture); the figure is the median iteration's env
  steps per second, the median seconds of one PPO update (``update_s``: the learner's own cost, free of the
  physics' run-to-run drift; null with ``algo.overlap=true``, whose schedule updates beside the rollout), and the
  time split (sim, inference, learn, other) is summed over the timed iterations;
* ``raw``: ``mujoco.batch.Batch.step(nstep=decimation)`` of the very MuJoCo model the task steps, same env count and
  thread count, fixed joint torques (``benchmarks/mujoco_batch.py``'s ``batch-raw``), median of ``--repeats``
  windows, measured right after the training in the same process;
* ``paired``: the same raw stepping for one ``--paired-seconds`` window after every training iteration (the
  iteration's timer stops for it), so that each iteration has a raw figure taken beside it; ``paired_ratio`` is the
  median over the timed iterations of the iteration's rate over the mean of the raw windows on either side of it.
  The machine's speed drifts between processes and over minutes (the raw rate of one command moved 1.3x between
  runs on the 2-core EPYC): the paired figure cancels that drift where the ``ratio`` of two phases a minute apart
  cannot. ``--paired-seconds 0`` leaves it out.

``--split`` adds where an env step's time goes, on states the task reaches: ``env.step`` under Gaussian actions
(std ``--split-std``, 0.5 by default; 0 holds the default pose) for ``--split-warm`` steps (the robot steps,
stumbles, falls, resets), then ``--split-steps`` timed steps with ``Batch.step`` timed inside them (``mujoco_ms`` of
``env_step_ms``; the copy of the state rows that records each call for the replay, ``recording_ms``, is left out of
``env_step_ms``); those very calls replayed back to back from the rows they started from (``replay_ms``: the same
work outside the env, so ``mujoco_ms`` against it is what the env's own work between the calls costs MuJoCo through
caches and threads); and raw ``Batch.step`` from those states
(``raw_visited_ms``) against raw from the default pose (``raw_default_ms``, the reference the ratio uses), and
raw from those states as one ``Batch.step`` call per substep (``raw_per_substep_ms``: how the env calls MuJoCo, the
PD law applied between the calls).

The ratio row ``train/raw`` is issue 29's measure (floor 0.5 for lift, g1-velocity and quadruped at the env count each
recipe uses; moonshot 0.8). ``--quick``: cartpole-free smoke run (lift, 32 envs, 2 iterations, short windows).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from learning_suite import ENTRIES, cpu_overrides  # noqa: E402
from mujoco_batch import horde_env, raw_batch_stepper  # noqa: E402
from run_all import cpu_model  # noqa: E402

from horde.train.config import compose  # noqa: E402
from horde.train.ppo import PPOTrainer  # noqa: E402

DEFAULT_RUNS = ("lift:512", "g1-velocity:512", "quadruped:256")


def cpu_recipe(task: str) -> list[str]:
    """The task's CPU overrides in the learning scoreboard (``learning_suite.ENTRIES``) but ``num_envs``, which each
    run names: what the CPU recipe trains with beyond the tuned config."""
    for entry in ENTRIES:
        if entry.task == task:
            return [o for o in cpu_overrides(entry) if not o.startswith("num_envs=")]
    return []


def train_rate(task: str, num_envs: int, iterations: int, overrides: list[str], profile: bool = False,
               paired_seconds: float = 0.0, sim: dict | None = None) -> dict:
    """Median env steps per second of PPO iterations 2..iterations+1 and their time split; with ``paired_seconds``
    also a raw window after every iteration and the median paired ratio (see the module)."""
    paired_step = _raw_stepper(task, num_envs, sim) if paired_seconds > 0 else None
    paired_ms: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg, task_cfg, raw = compose([f"task={task}", f"num_envs={num_envs}", f"run_root={tmp}",
                                      f"max_iterations={iterations + 1}", f"save_interval={10 * iterations}",
                                      *overrides])
        trainer = PPOTrainer(cfg, task_cfg, raw, quiet=True)
        stamps: list[float] = []  # an iteration's end ...
        starts: list[float] = []  # ... and the next one's start (after the paired raw window)
        updates: list[float] = []
        update = trainer.alg.update

        def timed_update():
            last = profile and len(updates) == iterations  # the last timed iteration's update, under torch's profiler
            with (torch.profiler.profile() if last else contextlib.nullcontext()) as prof:
                t0 = time.perf_counter()
                out = update()
                updates.append(time.perf_counter() - t0)
            if last:
                print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12), file=sys.stderr)
            return out

        trainer.alg.update = timed_update
        splits: list[dict[str, float]] = []  # each iteration's time split (the runner adds its "other" in place)
        collect = trainer.timer.collect

        def recorded_collect() -> dict[str, float]:
            splits.append(collect())
            return splits[-1]

        trainer.timer.collect = recorded_collect

        def on_iteration(tr: PPOTrainer) -> bool:
            stamps.append(time.perf_counter())
            if paired_step is not None:
                paired_ms.append(_raw_ms(paired_step, paired_seconds, 1))
            starts.append(time.perf_counter())
            return False

        trainer.learn(on_iteration=on_iteration)
        world = getattr(trainer.core, "world", None)
        threads = getattr(getattr(getattr(world, "backend", None), "batch", None), "nthread", None)
    steps = cfg.algo.num_steps_per_env * num_envs
    rates = [steps / (b - a) for a, b in zip(starts[:-1], stamps[1:])]
    update_s = statistics.median(updates[1:] or updates) if updates else None
    paired = paired_ratio(rates, paired_ms, num_envs) if paired_ms else {}
    # the timed iterations' split: not the warm-up (compilation), not the paired windows (after each split)
    seconds = {k: sum(sp.get(k, 0.0) for sp in splits[1:] or splits) for k in ("sim", "inference", "learn", "other")}
    time_share = {k: v / max(sum(seconds.values()), 1e-9) for k, v in seconds.items()}
    return {"train_env_steps_per_s": statistics.median(rates), "update_s": update_s, **paired,
            "time_share": time_share,
            "mujoco_threads": threads, "torch_threads": cfg.torch_threads, "samples_per_iteration": steps}


def paired_ratio(rates: list[float], raw_ms: list[float], num_envs: int) -> dict:
    """Median of each timed iteration's rate over the raw rate beside it: ``rates[k]`` is the iteration that ran
    between the raw windows ``raw_ms[k]`` and ``raw_ms[k + 1]`` (one window after every iteration, the warm-up's
    included), whose mean time gives its raw rate."""
    if len(raw_ms) != len(rates) + 1:
        raise ValueError(f"{len(rates)} timed iterations need {len(rates) + 1} raw windows, got {len(raw_ms)}")
    raws = [num_envs * 1e3 / (0.5 * (a + b)) for a, b in zip(raw_ms[:-1], raw_ms[1:])]
    return {"paired_ratio": statistics.median(r / q for r, q in zip(rates, raws)),
            "paired_raw_env_steps_per_s": statistics.median(raws)}


def _seconds(x: float | None) -> str:
    """``update_s`` for the table: None where the run's schedule updates elsewhere (``algo.overlap=true``)."""
    return "n/a" if x is None else f"{x:.3f} s"


def raw_rate(task: str, num_envs: int, seconds: float, repeats: int, sim: dict | None = None) -> float:
    """Median env steps per second of raw ``mujoco.batch`` on the task's MuJoCo model (``mujoco_batch.py``)."""
    return num_envs * 1e3 / _raw_ms(_raw_stepper(task, num_envs, sim), seconds, repeats)  # the median, odd windows


def _raw_stepper(task: str, num_envs: int, sim: dict | None = None):
    """Raw ``Batch.step`` of the task's model from the default pose under the first step's torques, held fixed."""
    env = horde_env(task, num_envs, "mujoco-c", 0, sim)
    env.step(torch.zeros(num_envs, env.num_actions))  # the torques of the first step are the ones held fixed
    step = raw_batch_stepper(env)
    step()
    return step


def _raw_ms(step, seconds: float, repeats: int) -> float:
    """Median milliseconds of one ``step()`` over ``repeats`` windows of ``seconds``."""
    times = []
    for _ in range(repeats):
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            step()
            n += 1
        times.append(1e3 * (time.perf_counter() - t0) / n)
    return statistics.median(times)


def step_split(task: str, num_envs: int, warm: int, steps: int, seconds: float, repeats: int, seed: int = 0,
               std: float = 0.5, sim: dict | None = None) -> dict:
    """Where ``env.step`` spends its time on the states the task reaches under random actions (see the module)."""
    env = horde_env(task, num_envs, "mujoco-c", 0, sim)
    env.step(torch.zeros(num_envs, env.num_actions))
    raw_default = _raw_ms(raw_batch_stepper(env), seconds, repeats)
    gen = torch.Generator().manual_seed(seed)

    def act() -> torch.Tensor:
        return std * torch.randn(num_envs, env.num_actions, generator=gen)

    for _ in range(warm):
        env.step(act())
    batch, inner, copying = env.world.backend.batch, [0.0], [0.0]
    batch_step = batch.step
    calls = []  # the state rows before every call and its arguments, replayed below

    def timed_step(**kw):
        t0 = time.perf_counter()
        calls.append((batch.state.copy(), kw))  # the recording's copy: the split's own cost, taken out of env.step's
        t1 = time.perf_counter()
        batch_step(**kw)
        inner[0] += time.perf_counter() - t1
        copying[0] += t1 - t0

    batch.step = timed_step
    actions = [act() for _ in range(steps)]
    t0 = time.perf_counter()
    for a in actions:
        env.step(a)
    total = time.perf_counter() - t0 - copying[0]
    batch.step = batch_step
    replay, reached = 0.0, batch.state.copy()  # the very same calls from the very same rows, back to back
    for state, kw in calls:
        batch.state[:] = state
        t1 = time.perf_counter()
        batch_step(**kw)
        replay += time.perf_counter() - t1
    batch.state[:] = reached
    raw_visited = _raw_ms(raw_batch_stepper(env), seconds, repeats)
    single = raw_batch_stepper(env, nstep=1)
    substeps = env.world.substeps

    def per_substep() -> None:  # as the env calls it: one Batch.step per substep (the PD law between them)
        for _ in range(substeps):
            single()

    raw_single = _raw_ms(per_substep, seconds, repeats)
    return {"env_step_ms": 1e3 * total / steps, "mujoco_ms": 1e3 * inner[0] / steps, "mujoco_share": inner[0] / total,
            "recording_ms": 1e3 * copying[0] / steps,
            "replay_ms": 1e3 * replay / steps,
            "raw_default_ms": raw_default, "raw_visited_ms": raw_visited, "raw_per_substep_ms": raw_single,
            "visited_vs_default": raw_default / raw_visited, "substeps": substeps, "split_warm_steps": warm,
            "split_steps": steps}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs="+", default=list(DEFAULT_RUNS), help="task:num_envs pairs")
    ap.add_argument("--tuned", action="store_true",
                    help="train with the tuned config alone, not the task's CPU recipe (learning_suite.py)")
    ap.add_argument("--iterations", type=int, default=8, help="timed PPO iterations (after one warm-up)")
    ap.add_argument("--seconds", type=float, default=2.0, help="length of one raw timed window")
    ap.add_argument("--repeats", type=int, default=3, help="raw windows (median reported)")
    ap.add_argument("--paired-seconds", type=float, default=1.0,
                    help="a raw window of this length after every training iteration (paired_ratio); 0: none")
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--quick", action="store_true", help="smoke run: lift at 32 envs, 2 iterations")
    ap.add_argument("--split", action="store_true", help="also time env.step and Batch.step inside it (see above)")
    ap.add_argument("--profile", action="store_true",
                    help="print torch.profiler's table of the last timed PPO update (its operators, calls, shares); "
                         "the profiler slows that update: read the rates from a run without it")
    ap.add_argument("--no-train", action="store_true", help="only the --split figures (no PPO, no ratio)")
    ap.add_argument("--split-warm", type=int, default=200, help="random-action env steps before timing")
    ap.add_argument("--split-steps", type=int, default=50, help="timed env steps")
    ap.add_argument("--split-std", type=float, default=0.5,
                    help="std of the split's Gaussian actions (0: the default pose held by the PD law)")
    ap.add_argument("overrides", nargs="*", help="config overrides for every training run, e.g. torch_threads=2")
    args = ap.parse_args(argv)
    if args.quick:
        args.runs, args.iterations, args.seconds, args.repeats = ["lift:32"], 2, 0.2, 1
        args.paired_seconds = min(args.paired_seconds, 0.2)
        args.split_warm, args.split_steps = 5, 3
    if args.no_train:
        args.split = True
    # task.sim settings reach the raw reference and the split too: the same MuJoCo model as the training run's
    sim = {o.split("=", 1)[0][len("task.sim."):]: yaml.safe_load(o.split("=", 1)[1])
           for o in args.overrides if o.startswith("task.sim.") and "=" in o}
    for run in args.runs:  # every run checked before the first one starts
        if not run.partition(":")[2].isdigit():
            hint = " (an override? put overrides before --runs)" if "=" in run else ""
            print(f"train_throughput: '{run}' is not task:num_envs{hint}", file=sys.stderr)
            return 2
    for run in args.runs:
        task, _, n = run.partition(":")
        num_envs = int(n)
        row = {"task": task, "num_envs": num_envs}
        if not args.no_train:
            recipe = [] if args.tuned else cpu_recipe(task)
            train = train_rate(task, num_envs, args.iterations, [*recipe, *args.overrides], args.profile,
                               args.paired_seconds, sim)
            raw = raw_rate(task, num_envs, args.seconds, args.repeats, sim)
            row.update(**train, raw_env_steps_per_s=raw, ratio=train["train_env_steps_per_s"] / raw,
                       recipe=recipe, overrides=args.overrides)
        if args.split:
            row.update(step_split(task, num_envs, args.split_warm, args.split_steps, args.seconds, args.repeats,
                                  std=args.split_std, sim=sim), split_std=args.split_std)
        row.update(date=time.strftime("%Y-%m-%d"), cpu_count=os.cpu_count(), cpu=cpu_model())
        if args.json:
            print(json.dumps(row), flush=True)
            continue
        if not args.no_train:
            share = "  ".join(f"{k} {100 * v:.0f}%" for k, v in row["time_share"].items())
            print(f"{task:12s} N={num_envs:5d}  train {row['train_env_steps_per_s']:8.0f}  raw "
                  f"{row['raw_env_steps_per_s']:8.0f} env-steps/s  train/raw {row['ratio']:.2f}"
                  + (f"  paired {row['paired_ratio']:.2f}" if "paired_ratio" in row else "") + "  update "
                  f"{_seconds(row['update_s'])}  ({share})" + (f"  [{' '.join(recipe)}]" if recipe else ""),
                  flush=True)
        if args.split:
            print(f"{task:12s} N={num_envs:5d}  env.step {row['env_step_ms']:.1f} ms, Batch.step inside it "
                  f"{row['mujoco_ms']:.1f} ms ({100 * row['mujoco_share']:.0f}%) after {row['split_warm_steps']} "
                  f"random-action steps, the same calls replayed from the same rows {row['replay_ms']:.1f} ms; "
                  f"raw Batch.step {row['raw_visited_ms']:.1f} ms from those states, "
                  f"{row['raw_default_ms']:.1f} ms from the default pose ({row['visited_vs_default']:.2f}x); as "
                  f"{row['substeps']} calls of one step each from those states {row['raw_per_substep_ms']:.1f} ms",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
