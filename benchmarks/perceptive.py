"""Blind against perceptive PPO on rough terrain: ``quadruped-rough`` (48 proprioceptive observations) against
``quadruped-rough-perceptive`` (the same physics, plus a 17 x 11 height scan and a privileged critic), same training
wall time, several seeds: the mean terrain level the curriculum has moved the training envs to, and the
command-tracking error on fresh envs.

    python benchmarks/perceptive.py [--minutes 60] [--seeds 0 1 2] [--eval-every 25] [--json] [--quick]
                                    [--out DIR] [--append FILE.jsonl] [override ...]
    python benchmarks/perceptive.py --replot FILE.jsonl [--out DIR] [--json]

The issue's figure: 60 minutes per run on the CPU, 3 seeds, and the perceptive teacher reaching a higher mean
terrain level. Each evaluation reads the training envs' mean terrain level (``env.terrain_level``, 0 .. 5) and
drives ``--eval-envs`` fresh envs of the same task (other seeds, starting on the curriculum's first levels) with the
policy's action mean, reporting the linear-velocity error [m/s] after ``--settle`` steps (as
``learn_quadruped.py``). Evaluation time is not counted. ``--parallel`` runs the two variants of a seed at once, one
per core (each run uses one core: Warp's CPU kernels and torch with one thread), so both see the same machine.
Writes ``<out>/perceptive.json`` and ``<out>/perceptive.png``. ``--append FILE.jsonl`` adds each run (with its
date and CPU) to FILE and summarises every run of the same length there, so the issue's 3 seeds can be gathered a seed
pair at a time (a pair is 60 minutes of both cores): the two variants of one seed always run on the same machine;
``--replot FILE.jsonl`` summarises and plots the runs in FILE without training. Besides the medians at the end of
the wall-time budget, the summary compares the variants at equal training iterations (each seed's blind level at
the last iteration its perceptive run reached), which separates a slower iteration from slower learning.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

VARIANTS = {"blind": "quadruped-rough", "perceptive": "quadruped-rough-perceptive"}


def run_one(variant: str, seed: int, minutes: float, eval_every: int, eval_envs: int, eval_steps: int, settle: int,
            overrides: list[str]) -> dict:
    from learn_quadruped import tracking_error
    from learning import train_with_evals

    task = VARIANTS[variant]
    state: dict = {}

    def evaluate(policy, task_cfg, eval_seed: int) -> dict:
        levels = state["trainer"].core.terrain_level.float()
        ev = tracking_error(policy, task_cfg, eval_seed, num_envs=eval_envs, steps=eval_steps, settle=settle,
                            task=task)
        return {"terrain_level": float(levels.mean()), **ev}

    # the wall-time budget ends the run, not the tuned max_iterations (1,500: the blind run reached it at 57 of 60
    # minutes on 2026-11-28, once the rough terrain's contacts cost 2.6x less); an explicit override still wins
    cap = [] if any(o.startswith("max_iterations=") for o in overrides) else ["max_iterations=1000000"]
    res = train_with_evals([f"task={task}", f"seed={seed}", *cap, *overrides], evaluate, eval_every=eval_every,
                           minutes=minutes, on_start=lambda tr: state.update(trainer=tr),
                           describe=lambda p: f"{variant} level {p['terrain_level']:.2f} "
                                              f"lin err {p['lin_vel_error_mps']:.3f} m/s")
    return {"variant": variant, "task": task, "seed": seed, "iterations": res["iterations"],
            "train_s": res["train_s"], "curve": res["curve"]}


def plot(runs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 3.6), dpi=120)
    colors = {"blind": "tab:gray", "perceptive": "tab:blue"}
    for r in runs:
        minutes = [p["wall_s"] / 60 for p in r["curve"]]
        label = f"{r['variant']} (seed {r['seed']})"
        axes[0].plot(minutes, [p["terrain_level"] for p in r["curve"]], "o-", color=colors[r["variant"]],
                     label=label, alpha=0.8)
        axes[1].plot(minutes, [p["lin_vel_error_mps"] for p in r["curve"]], "o-", color=colors[r["variant"]],
                     label=label, alpha=0.8)
        axes[2].plot([p["iteration"] for p in r["curve"]], [p["terrain_level"] for p in r["curve"]], "o-",
                     color=colors[r["variant"]], label=label, alpha=0.8, markersize=3)
    axes[0].set(xlabel="training wall time [min]", ylabel="mean terrain level (training envs)",
                title="terrain curriculum")
    axes[1].set(xlabel="training wall time [min]", ylabel="linear-velocity error [m/s]", title="command tracking")
    axes[2].set(xlabel="training iteration", ylabel="mean terrain level (training envs)",
                title="terrain curriculum per iteration")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def level_at(curve: list[dict], iteration: float) -> float:
    """The mean terrain level of a run's curve at ``iteration`` (linear between evaluations)."""
    points = [(p["iteration"], p["terrain_level"]) for p in curve]
    for (i0, l0), (i1, l1) in zip(points, points[1:]):
        if i0 <= iteration <= i1:
            return l0 + (l1 - l0) * (iteration - i0) / max(i1 - i0, 1)
    return points[-1][1] if iteration > points[-1][0] else points[0][1]


def report(runs: list[dict], minutes: float, overrides: list[str], out: Path, *, as_json: bool) -> None:
    """Median final level and tracking error per variant, the per-seed figures, the comparison at equal
    iterations; writes ``out/perceptive.json`` and ``out/perceptive.png``."""
    out.mkdir(parents=True, exist_ok=True)
    summary = {}
    for v in VARIANTS:
        last = [r["curve"][-1] for r in runs if r["variant"] == v and r["curve"]]
        summary[v] = {"median_final_terrain_level": statistics.median(p["terrain_level"] for p in last),
                      "median_final_lin_vel_error": statistics.median(p["lin_vel_error_mps"] for p in last),
                      "median_iterations": statistics.median(p["iteration"] for p in last),
                      "seeds": len(last)}
    seeds = []
    by = {(r["variant"], r["seed"]): r for r in runs if r["curve"]}
    for seed in sorted({s for _, s in by}):
        blind, perc = by.get(("blind", seed)), by.get(("perceptive", seed))
        if blind is None or perc is None:
            continue
        at = perc["curve"][-1]["iteration"]
        seeds.append({"seed": seed, "cpu": perc.get("cpu"), "date": perc.get("date"),
                      "blind_iterations": blind["curve"][-1]["iteration"], "perceptive_iterations": at,
                      "blind_final_level": blind["curve"][-1]["terrain_level"],
                      "perceptive_final_level": perc["curve"][-1]["terrain_level"],
                      "blind_level_at_perceptive_iterations": round(level_at(blind["curve"], at), 4)})
    result = {"minutes": minutes, "overrides": overrides, "machine_note": "see README for the machine",
              "summary": summary, "per_seed": seeds, "runs": runs}
    (out / "perceptive.json").write_text(json.dumps(result, indent=1))
    plot(runs, out / "perceptive.png")
    for v, s in summary.items():
        line = {"variant": v, **s} if as_json else (
            f"{v:<11} final mean terrain level {s['median_final_terrain_level']:.2f}  lin vel error "
            f"{s['median_final_lin_vel_error']:.3f} m/s  {s['median_iterations']:g} iterations  "
            f"(median of {s['seeds']} seeds, {minutes:g} min each)")
        print(json.dumps(line) if as_json else line, flush=True)
    for r in seeds:
        line = r if as_json else (
            f"seed {r['seed']} ({r['cpu']}, {r['date']}): blind {r['blind_final_level']:.2f} after "
            f"{r['blind_iterations']} iterations, perceptive {r['perceptive_final_level']:.2f} after "
            f"{r['perceptive_iterations']}; at iteration {r['perceptive_iterations']} blind was at "
            f"{r['blind_level_at_perceptive_iterations']:.2f}")
        print(json.dumps(line) if as_json else line, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--eval-envs", type=int, default=64)
    ap.add_argument("--eval-steps", type=int, default=250)
    ap.add_argument("--settle", type=int, default=50)
    ap.add_argument("--parallel", action="store_true", help="the two variants of a seed at once, one per core")
    ap.add_argument("--variant", choices=list(VARIANTS), help=argparse.SUPPRESS)  # one run (used by --parallel)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--append", metavar="FILE.jsonl", help="add the runs to FILE and summarise all of its runs")
    ap.add_argument("--quick", action="store_true", help="2 iterations on 16 envs, one seed (smoke test)")
    ap.add_argument("--replot", metavar="FILE.jsonl", help="summarise and plot the runs in FILE; no training")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. num_envs=256")
    args = ap.parse_args(argv)
    overrides = list(args.overrides) or ["num_envs=256"]
    minutes, seeds, eval_every, eval_envs, eval_steps, settle = (
        args.minutes, args.seeds, args.eval_every, args.eval_envs, args.eval_steps, args.settle)
    if args.quick:
        overrides = ["num_envs=16", "max_iterations=2", "algo.num_steps_per_env=8"]
        minutes, seeds, eval_every, eval_envs, eval_steps, settle = 5.0, seeds[:1], 1, 8, 20, 5
    if args.replot:
        path = Path(args.replot)
        if not path.is_file():
            print(f"perceptive.py: --replot {path}: no such file", file=sys.stderr)
            return 2
        runs = [r for r in map(json.loads, path.read_text().splitlines())
                if r["minutes"] == minutes and r["overrides"] == overrides]
        if not runs:
            print(f"perceptive.py: {path} holds no {minutes:g}-minute runs with overrides {overrides}",
                  file=sys.stderr)
            return 2
        report(runs, minutes, overrides, Path(args.out), as_json=args.json)
        return 0
    if args.variant is not None:  # a child of --parallel: one run, its result as JSON on stdout
        res = run_one(args.variant, seeds[0], minutes, eval_every, eval_envs, eval_steps, settle, overrides)
        print(json.dumps(res))
        return 0
    runs = []
    for seed in seeds:
        if args.parallel:
            base = [sys.executable, __file__, "--minutes", str(minutes), "--seeds", str(seed), "--eval-every",
                    str(eval_every), "--eval-envs", str(eval_envs), "--eval-steps", str(eval_steps), "--settle",
                    str(settle), *(["--quick"] if args.quick else []), *args.overrides]
            procs = {v: subprocess.Popen([*base, "--variant", v], stdout=subprocess.PIPE, text=True)
                     for v in VARIANTS}
            for v, p in procs.items():
                out, _ = p.communicate()
                if p.returncode != 0:
                    print(f"perceptive.py: the {v} run of seed {seed} failed", file=sys.stderr)
                    return 1
                runs.append(json.loads(out.strip().splitlines()[-1]))
        else:
            for v in VARIANTS:
                runs.append(run_one(v, seed, minutes, eval_every, eval_envs, eval_steps, settle, overrides))
    if args.append:
        from run_all import machine_info

        store = Path(args.append)
        info = machine_info("cpu")
        with store.open("a") as f:
            for r in runs:
                f.write(json.dumps({"date": info["date"], "cpu": info["cpu"], "minutes": minutes,
                                    "overrides": overrides, **r}) + "\n")
        runs = [r for r in map(json.loads, store.read_text().splitlines())
                if r["minutes"] == minutes and r["overrides"] == overrides]
    report(runs, minutes, overrides, Path(args.out), as_json=args.json)
    return 0


if __name__ == "__main__":
    torch.set_num_threads(1)
    raise SystemExit(main())
