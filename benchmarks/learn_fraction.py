"""The shared command line of the learn scripts whose figure is a fraction of fresh envs that end the episode in a
success state (``learn_push.py``: the cube on its target; ``learn_place.py``: the cube resting on the pad): train
with evaluations, the zero-action baseline beside each figure, the curve, the JSON result and one summary line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from learning import append_result, plot_curve, plot_seeds, train_with_evals, write_result


@dataclass(frozen=True, kw_only=True)
class FractionTask:
    """What differs between the fraction scripts: the task, its figure and how it is worded."""

    task: str
    key: str
    """The figure: the fraction of fresh envs in the success state at the episode's end."""
    fraction: float
    """The target of ``key``."""
    minutes: float
    """The default training budget (the floor's)."""
    success: Callable[..., dict]
    """``success(policy, task_cfg, seed, num_envs=, device=)``: the figures of one evaluation."""
    short: str
    """The progress lines' name of the figure (``on target``)."""
    state: str
    """The success state in words (``within 3 cm of its target``), in the plots and the summary line."""


def main_fraction(argv: list[str] | None, t: FractionTask, doc: str) -> int:
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=t.minutes, help="wall-time budget for training")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--append", default=None, help="append the summary as a JSON line to this file")
    ap.add_argument("--eval-every", type=int, default=25, help="iterations between evaluations")
    ap.add_argument("--eval-envs", type=int, default=64)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "img"))
    ap.add_argument("--replot", default=None, metavar="FILE", help="plot every run of an --append file into "
                    f"<out>/{t.task}_learning.png and exit")
    ap.add_argument("--keep", default=None, help="keep the run (checkpoints, config) under this folder")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="2 iterations on 16 envs (smoke test)")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. num_envs=512 device=cuda:0")
    args = ap.parse_args(argv)
    if args.replot:
        path = Path(args.out) / f"{t.task}_learning.png"
        plot_seeds(Path(args.replot), path, key=t.key, target=t.fraction, ylabel=f"cube {t.state} at the end",
                   baseline_label="zero actions (arm at rest)",
                   title=f"horde {t.task}, PPO on {{device}} (64 fresh envs, deterministic policy)")
        print(f"wrote {path}")
        return 0
    overrides = [f"task={t.task}", f"seed={args.seed}", *args.overrides]
    if args.quick:
        overrides += ["num_envs=16", "max_iterations=2", "task.episode_length=20"]
        args.eval_every, args.eval_envs = 2, 4
    device = next((o.split("=", 1)[1] for o in overrides if o.startswith("device=")), "cpu")
    run = train_with_evals(
        overrides, lambda pol, cfg, seed: t.success(pol.to(device), cfg, seed, num_envs=args.eval_envs,
                                                    device=device),
        run_root=args.keep, eval_every=args.eval_every, minutes=args.minutes, baseline=True,
        describe=lambda p: f"{t.short} {p[t.key]:.2f}  final error "
                           f"{p['final_error_m'] if p['final_error_m'] is None else round(p['final_error_m'], 3)} m")
    curve, out, cfg, baseline = run["curve"], Path(args.out), run["cfg"], run["baseline"]
    if not curve:
        print(f"{t.task}: no evaluation ran (training stopped before the first one)", file=sys.stderr)
        return 1
    reached = next((c for c in curve if c[t.key] >= t.fraction), None)
    result = {"task": t.task, "overrides": overrides, "device": cfg.device, "num_envs": cfg.num_envs,
              "iterations": run["iterations"], "train_s": run["train_s"], "seed": args.seed,
              t.key: curve[-1][t.key], "final_error_m": curve[-1]["final_error_m"],
              f"best_{t.key}": max(c[t.key] for c in curve), "target_key": t.key,
              "target_fraction": t.fraction, "baseline_zero_action": baseline,
              "env_steps": curve[-1]["env_steps"], "date": time.strftime("%Y-%m-%d"),
              "target_reached_at_s": reached["wall_s"] if reached else None, "curve": curve}
    if not args.quick:
        robot = getattr(cfg.task, "robot", "arm7")
        plot_curve(curve, out / f"{t.task}_learning.png", key=t.key, target=t.fraction,
                   ylabel=f"fraction of 64 envs, cube {t.state}",
                   title=f"horde {t.task} ({robot} + gripper), PPO, {cfg.num_envs} envs on {cfg.device}; zero "
                         f"actions {baseline[t.key]:.2f}")
    write_result(result, out, t.task, quick=args.quick)
    append_result(args.append, result)
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "curve"}))
    else:
        at = f"reached at {reached['wall_s'] / 60:.1f} min" if reached else "not reached"
        print(f"{t.task}: {run['iterations']} iterations, {run['train_s'] / 60:.1f} min training on {cfg.device}; "
              f"cube {t.state} at the episode's end in {100 * result[t.key]:.0f}% of {args.eval_envs} envs (target "
              f"{100 * t.fraction:.0f}%: {at}; zero actions {100 * baseline[t.key]:.0f}%)")
    return 0
