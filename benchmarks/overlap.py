"""Synchronous against overlapped PPO (``algo.overlap=true``): wall time and env steps to a threshold, same seeds.

    python benchmarks/overlap.py [--tasks cartpole pendulum ant quadruped] [--seeds 0 1 2] [--budget-s 600]
                                 [--device cpu] [--json] [--quick] [--plot PNG] [--replot JSONL] [override ...]

For every task and seed both modes train the task's tuned config (``configs/tuned/<task>_ppo.yaml``, extra
``key=value`` overrides on top) until the threshold or the budget:

* cartpole: the deterministic policy's mean return over 100 evaluation episodes >= 475, every iteration;
* pendulum: the same >= -300 (as ``benchmarks/train_vs_sb3.py``), every 5 iterations;
* ant: the mean forward speed of 64 fresh envs over 250 steps >= 0.5 m/s (``learn_ant.py``), every 25 iterations;
* quadruped (256 envs): the mean linear-velocity tracking error of 64 fresh envs <= 0.35 m/s
  (``learn_quadruped.py``), every 25 iterations. Not 0.25 (learn_quadruped's GPU target at 4096 envs): at 256 envs on
  two cores neither mode reached 0.25 within 6 minutes on two seeds (2026-11-25; best 0.27 and 0.29).

Evaluation time is not counted. Env steps count every step simulated, the batch an overlapped run collects
while its last update runs included. Each line (``--json``) is one run: seconds and env steps to the threshold,
the median wall time of an iteration, the idle share of each core over the training (``/proc/stat``), the mean
staleness. Ratio lines per task compare the medians over seeds: sync/overlap wall time to the threshold (floor 1.4
on cartpole), overlap/sync env steps to it (floor 1.25), sync/overlap wall time per iteration.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scratch import scratch_dir  # noqa: E402  (training runs' roots, removed at exit)

HERE = Path(__file__).resolve().parent
TARGETS = {
    # task: (figure, threshold, higher is better, evaluate every N iterations)
    "cartpole": ("eval_mean_return", 475.0, True, 1),
    "pendulum": ("eval_mean_return", -300.0, True, 5),
    "ant": ("forward_vel_mps", 0.5, True, 25),
    "quadruped": ("lin_vel_error_mps", 0.35, False, 25),
}
"""What counts as learned, per task (the module docstring says how each figure is measured)."""
TASK_OVERRIDES = {"quadruped": ["num_envs=256"]}


def measure(task: str, policy, task_cfg, device: str) -> float:
    """The task's figure for ``policy`` (deterministic), on fresh envs."""
    if task in ("cartpole", "pendulum"):
        from horde.train.evaluate import evaluate

        return float(evaluate(policy, task, task_cfg, episodes=100, device=device).summary()["mean_return"])
    sys.path.insert(0, str(HERE))
    if task == "ant":
        from learn_ant import evaluate_speed

        return evaluate_speed(policy, task_cfg, 0, num_envs=64, steps=250)["forward_vel_mps"]
    from learn_quadruped import tracking_error

    return tracking_error(policy, task_cfg, 0, num_envs=64, steps=250, settle=50, device=device)["lin_vel_error_mps"]


def cpu_times() -> list[tuple[int, int]]:
    """(idle, total) jiffies of every core."""
    out = []
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("cpu") and line[3:4].isdigit():
                v = [int(x) for x in line.split()[1:]]
                out.append((v[3] + v[4], sum(v[:8])))
    except OSError:
        pass
    return out


class CoreIdle:
    """Idle share of each core over the intervals between ``resume()`` and ``pause()``."""

    def __init__(self) -> None:
        self.idle: list[int] = []
        self.total: list[int] = []
        self._at = cpu_times()

    def resume(self) -> None:
        self._at = cpu_times()

    def pause(self) -> None:
        now = cpu_times()
        if not self.idle:
            self.idle, self.total = [0] * len(now), [0] * len(now)
        for k, ((i0, t0), (i1, t1)) in enumerate(zip(self._at, now)):
            self.idle[k] += i1 - i0
            self.total[k] += t1 - t0

    def shares(self) -> list[float]:
        return [round(i / t, 3) if t else float("nan") for i, t in zip(self.idle, self.total)]


def _burn(seconds_out, n: int = 20000) -> None:
    import torch

    torch.set_num_threads(1)
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    t0 = time.perf_counter()
    for _ in range(n):
        torch.relu(a @ b)
    seconds_out.put(time.perf_counter() - t0)


def two_core_scaling() -> float:
    """What two busy cores give on this machine: the throughput of two single-thread torch loops in two processes at
    once over that of one alone (2.0 on two free physical cores; less with SMT siblings or a shared host)."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()

    def run(k: int) -> list[float]:
        procs = [ctx.Process(target=_burn, args=(q,)) for _ in range(k)]
        for p in procs:
            p.start()
        out = [q.get() for _ in procs]
        for p in procs:
            p.join()
        return out

    alone = statistics.median(run(1)[0] for _ in range(3))
    pair = statistics.median(max(run(2)) for _ in range(3))
    return round(2 * alone / pair, 3)


MODES = {"sync": [], "overlap0": ["algo.overlap=true", "algo.max_staleness=0"],
         "overlap": ["algo.overlap=true", "algo.max_staleness=1"]}
"""The schedules compared: synchronous PPO; the critic's update overlapped (staleness 0, bit-identical to sync); the
whole update overlapped (staleness 1)."""


def run_one(task: str, seed: int, mode: str, *, budget_s: float, device: str, overrides: list[str],
            max_iterations: int | None = None) -> dict:
    from horde.policies import InferencePolicy
    from horde.train.config import compose
    from horde.train.ppo import PPOTrainer

    import torch.utils.tensorboard  # noqa: F401  (the trainer's TensorBoard writer; an import, outside the clock)

    root = scratch_dir("horde-overlap-")
    args = [f"task={task}", f"seed={seed}", f"device={device}", "max_iterations=100000", "save_interval=100000",
            f"run_root={root}", *MODES[mode], *TASK_OVERRIDES.get(task, []), *overrides]
    if max_iterations is not None:
        args.append(f"max_iterations={max_iterations}")
    cfg, name, raw = compose(args)
    trainer = PPOTrainer(cfg, name, raw, quiet=True)
    per_iter = cfg.num_envs * cfg.algo.num_steps_per_env
    idle = CoreIdle()
    state = {"t0": time.perf_counter(), "off_s": 0.0, "t_iter": time.perf_counter(), "iter_s": [], "curve": [],
             "reached": None, "kl": [], "staleness": []}
    figure_name, threshold, higher, every = TARGETS[task]

    def steps_simulated(tr) -> int:
        batches = tr.iteration
        if getattr(tr.overlap, "_pending", None) is not None:
            batches += 1
        return batches * per_iter

    def on_iteration(tr) -> bool:
        now = time.perf_counter()
        idle.pause()
        state["iter_s"].append(now - state["t_iter"])
        t_off = now
        train_s = t_off - state["t0"] - state["off_s"]
        done = False
        if tr.iteration % every == 0:
            figure = measure(task, InferencePolicy(tr.alg.get_policy()), cfg.task, cfg.device)
            steps = steps_simulated(tr)
            state["curve"].append((round(train_s, 3), steps, round(figure, 4)))
            done = figure >= threshold if higher else figure <= threshold
        if done:
            state["reached"] = (train_s, steps)
        state["off_s"] += time.perf_counter() - t_off
        idle.resume()
        state["t_iter"] = time.perf_counter()
        return done or train_s >= budget_s

    summary = trainer.learn(on_iteration=on_iteration)
    ov = trainer.overlap
    return {
        "task": task, "seed": seed, "mode": mode, "device": str(cfg.device),
        "num_envs": cfg.num_envs, "figure": figure_name, "threshold": threshold, "eval_every": every,
        "reached": state["reached"] is not None,
        "seconds_to_threshold": round(state["reached"][0], 3) if state["reached"] else None,
        "env_steps_to_threshold": state["reached"][1] if state["reached"] else None,
        "iterations": trainer.iteration, "median_iteration_s": round(statistics.median(state["iter_s"]), 4),
        "core_idle_share": idle.shares(), "time_share": summary["time_share"],
        "mean_staleness": statistics.mean(ov.staleness_seen) if ov and ov.staleness_seen else 0.0,
        "max_staleness_seen": max(ov.staleness_seen) if ov and ov.staleness_seen else 0,
        "learner": ov.learner if ov else None,
        "curve": state["curve"],
    }


def _median(values: list) -> float | None:
    """Median with a run that never reached the threshold counted as slower than every run that did (None when
    half or more never reached it)."""
    if not values:
        return None
    m = statistics.median(float("inf") if v is None else v for v in values)
    return None if m == float("inf") else m


def summarize(rows: list[dict]) -> list[dict]:
    """Per task and overlapped mode, ratios of the medians over seeds against sync (floors: 1.4 on cartpole's wall
    time to the threshold, 1.25 on every task's env steps to it)."""
    out = []
    for task in dict.fromkeys(r["task"] for r in rows):
        by = {m: [r for r in rows if r["task"] == task and r["mode"] == m] for m in MODES}
        med = {m: {"seconds": _median([r["seconds_to_threshold"] for r in rs]),
                   "steps": _median([r["env_steps_to_threshold"] for r in rs]),
                   "iteration_s": _median([r["median_iteration_s"] for r in rs])} for m, rs in by.items() if rs}
        if "sync" not in med:
            continue
        s = med["sync"]

        def ratio(a, b):
            return round(a / b, 3) if a and b else None

        for mode in (m for m in med if m != "sync"):
            o = med[mode]
            for what, value, floor in (
                    ("sync/overlap wall time to threshold", ratio(s["seconds"], o["seconds"]),
                     1.4 if task == "cartpole" else None),
                    ("overlap/sync env steps to threshold", ratio(o["steps"], s["steps"]), 1.25),
                    ("sync/overlap wall time per iteration", ratio(s["iteration_s"], o["iteration_s"]), None)):
                out.append({"task": task, "kind": "ratio", "mode": mode, "what": what, "ratio": value,
                            "seeds": len(by["sync"]), "floor": floor, "sync": s, "overlap": o})
    return out


COLORS = {"sync": "tab:blue", "overlap0": "tab:green", "overlap": "tab:orange"}
LABELS = {"sync": "sync", "overlap0": "overlap, staleness 0 (exact)", "overlap": "overlap, staleness 1"}


def plot(rows: list[dict], path: Path) -> Path:
    """One panel per task: each run's figure against training seconds, sync and overlapped, with the threshold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r for r in rows if "seed" in r]
    tasks = list(dict.fromkeys(r["task"] for r in runs))
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.4), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        for r in (r for r in runs if r["task"] == task):
            if not r["curve"]:
                continue
            t, _, y = zip(*r["curve"])
            ax.plot(t, y, color=COLORS[r["mode"]], alpha=0.8, marker=".",
                    label=LABELS[r["mode"]] if r["seed"] == min(x["seed"] for x in runs) else None)
        ax.axhline(TARGETS[task][1], color="gray", ls="--", lw=1)
        ax.set_title(task)
        ax.set_xlabel("training seconds (evaluation not counted)")
        ax.set_ylabel(TARGETS[task][0])
        ax.legend(fontsize=8)
    fig.suptitle("synchronous vs overlapped PPO (one line per seed)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="+", default=["cartpole", "pendulum", "ant", "quadruped"],
                    choices=sorted(TARGETS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES),
                    help="sync; overlap0: the critic's update overlapped (staleness 0); overlap: the whole update")
    ap.add_argument("--budget-s", type=float, default=600.0, help="training seconds per run before giving up")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", action="store_true", help="one JSON line per run and per task summary")
    ap.add_argument("--quick", action="store_true", help="2 iterations per run, cartpole, one seed (smoke test)")
    ap.add_argument("--plot", type=Path, help="also write a PNG of every run's curve here")
    ap.add_argument("--replot", type=Path, help="read the JSON lines of an earlier --json run instead of training")
    ap.add_argument("overrides", nargs="*", help="config overrides for every run, e.g. num_envs=64")
    args = ap.parse_args(argv)
    if args.quick:
        args.tasks, args.seeds = ["cartpole"], [0]
    if args.replot:
        rows = [json.loads(ln) for ln in args.replot.read_text().splitlines() if ln.startswith("{")]
        rows = [r for r in rows if "seed" in r]
        args.tasks = list(dict.fromkeys(r["task"] for r in rows))
    else:
        rows = []
        machine = {"kind": "machine", "two_core_scaling": two_core_scaling(), "cores": os.cpu_count()}
        print(json.dumps(machine) if args.json else
              f"two busy cores give {machine['two_core_scaling']}x one core's throughput on this machine", flush=True)
    for task in [] if args.replot else args.tasks:
        for seed in args.seeds:
            for mode in args.modes:  # interleaved: a slow spell of the machine hits every mode alike
                row = run_one(task, seed, mode, budget_s=args.budget_s, device=args.device,
                              overrides=args.overrides, max_iterations=2 if args.quick else None)
                rows.append(row)
                if args.json:
                    print(json.dumps(row), flush=True)
                else:
                    r = row
                    print(f"{task:10s} seed {seed} {r['mode']:7s} reached={r['reached']!s:5s} "
                          f"{r['seconds_to_threshold']} s {r['env_steps_to_threshold']} steps "
                          f"{r['iterations']} it, {r['median_iteration_s'] * 1e3:.0f} ms/it, "
                          f"idle {r['core_idle_share']}",
                          flush=True)
    if args.plot:
        print(f"wrote {plot(rows, args.plot)}", file=sys.stderr)
    for line in [] if args.replot and args.json else summarize(rows):
        floor = "" if line["floor"] is None else (" (floor: <= " if line["what"].startswith("overlap/") else
                                                  " (floor: >= ") + f"{line['floor']})"
        print(json.dumps(line) if args.json else
              f"{line['task']} {line['mode']}: {line['what']} {line['ratio']}x, medians of {line['seeds']} seeds"
              f"{floor}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
