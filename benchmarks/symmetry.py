"""PPO on ``quadruped`` without left-right symmetry, with symmetry augmentation (``algo.symmetry.augment``) and
with the mirror loss instead (``algo.symmetry.mirror_loss``), same training wall time, several seeds:
command-tracking error and how symmetric the learned policy is.

    python benchmarks/symmetry.py [--minutes 6] [--seeds 0 1] [--modes off augment mirror_loss] [--eval-every 25]
                                  [--json] [--quick] [--out DIR] [override ...]

Each mode sets both symmetry fields itself (the quadruped's tuned config has its own), after the overrides.

Each evaluation drives ``--eval-envs`` fresh envs (other seeds than training) with the policy's action mean for
``--eval-steps`` control steps and reports, after ``--settle`` steps, the linear-velocity error [m/s] (as
``learn_quadruped.py``) and the policy's mirror error: the mean of |pi(M o) - M_a pi(o)| over the visited
observations, divided by the mean |pi(o)| (0 for a perfectly symmetric policy; ``M``, ``M_a`` are the task's
mirror maps, :mod:`horde.envs.symmetry`). Augmentation doubles each mini-batch, so an iteration costs more: the
comparison is at equal training wall time. Evaluation time is not counted. Writes ``<out>/symmetry.json`` and
``<out>/symmetry.png``; prints one line per mode with the median over seeds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from learning import train_with_evals  # noqa: E402

from horde.envs import make  # noqa: E402
from horde.envs.symmetry import task_mirror  # noqa: E402

MODES = {"off": ["algo.symmetry.augment=false", "algo.symmetry.mirror_loss=0"],
         "augment": ["algo.symmetry.augment=true", "algo.symmetry.mirror_loss=0"],
         "mirror_loss": ["algo.symmetry.augment=false", "algo.symmetry.mirror_loss=1.0"]}
"""Each mode's symmetry settings; ``off`` turns off what the tuned config turns on."""


@torch.inference_mode()
def evaluate(policy, task_cfg, seed: int, *, num_envs: int, steps: int, settle: int) -> dict[str, float]:
    env = make("quadruped", num_envs=num_envs, seed=seed, config=task_cfg)
    mirror = task_mirror(env, "quadruped")
    obs_m, act_m = mirror.groups["policy"], mirror.actions
    lin, sym_num, sym_den = 0.0, 0.0, 0.0
    obs = env.obs
    for k in range(steps):
        o = obs.clone()
        a = policy(o)
        if k >= settle:
            v = env.world.root_vel_base
            lin += float((env.command[:, :2] - v[:, :2]).norm(dim=1).mean())
            sym_num += float((policy(obs_m.apply(o)) - act_m.apply(a)).norm(dim=1).mean())
            sym_den += float(a.norm(dim=1).mean())
        obs = env.step(a).obs
    n = max(steps - settle, 1)
    return {"lin_vel_error_mps": lin / n, "mirror_error": sym_num / max(sym_den, 1e-9)}


def _median_curve(curves: list[list[dict]], key: str) -> tuple[list[float], list[float]]:
    n = min(len(c) for c in curves)
    minutes = [statistics.median(c[i]["wall_s"] for c in curves) / 60 for i in range(n)]
    return minutes, [statistics.median(c[i][key] for c in curves) for i in range(n)]


def plot(results: dict, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), dpi=120)
    for ax, key, label in zip(axes, ("lin_vel_error_mps", "mirror_error"),
                              ("linear-velocity error [m/s]", "policy mirror error (relative)")):
        for mode, runs in results.items():
            for r in runs:
                ax.plot([c["wall_s"] / 60 for c in r["curve"]], [c[key] for c in r["curve"]], alpha=0.25,
                        color=f"C{list(MODES).index(mode)}")
            m, v = _median_curve([r["curve"] for r in runs], key)
            ax.plot(m, v, "o-", color=f"C{list(MODES).index(mode)}", label=f"symmetry {mode} (median)")
        ax.set_xlabel("training wall time [min]")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=6.0, help="training wall time per run")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--eval-envs", type=int, default=64)
    ap.add_argument("--eval-steps", type=int, default=250)
    ap.add_argument("--settle", type=int, default=50)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="2 iterations on 16 envs per mode (smoke test)")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. num_envs=256")
    args = ap.parse_args(argv)
    base = ["task=quadruped", "num_envs=256", "max_iterations=100000", *args.overrides]
    if args.quick:
        base += ["num_envs=16", "max_iterations=2"]
        args.seeds, args.eval_every, args.eval_envs, args.eval_steps, args.settle = [0], 2, 4, 12, 2
    results: dict[str, list[dict]] = {}
    for mode, extra in ((m, MODES[m]) for m in args.modes):
        for seed in args.seeds:
            run = train_with_evals(
                [*base, f"seed={seed}", *extra],
                lambda pol, cfg, s: evaluate(pol, cfg, s, num_envs=args.eval_envs, steps=args.eval_steps,
                                             settle=args.settle),
                eval_every=args.eval_every, minutes=args.minutes,
                describe=lambda p: f"lin vel error {p['lin_vel_error_mps']:.3f} m/s  mirror error "
                                   f"{p['mirror_error']:.3f}")
            results.setdefault(mode, []).append({"seed": seed, "iterations": run["iterations"],
                                                 "train_s": run["train_s"], "curve": run["curve"]})
            print(f"symmetry {mode} seed {seed}: {run['iterations']} iterations in {run['train_s'] / 60:.1f} min, "
                  f"lin vel error {run['curve'][-1]['lin_vel_error_mps']:.3f} m/s, mirror error "
                  f"{run['curve'][-1]['mirror_error']:.3f}", file=sys.stderr, flush=True)
    summary = {mode: {"seeds": len(runs),
                      "median_iterations": statistics.median(r["iterations"] for r in runs),
                      "median_lin_vel_error_mps": statistics.median(r["curve"][-1]["lin_vel_error_mps"] for r in runs),
                      "median_mirror_error": statistics.median(r["curve"][-1]["mirror_error"] for r in runs)}
               for mode, runs in results.items()}
    if not args.quick:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "symmetry.json").write_text(json.dumps({"overrides": base, "minutes": args.minutes,
                                                       "summary": summary, "runs": results}, indent=2))
        plot(results, out / "symmetry.png", f"quadruped PPO, {args.minutes:g} min per run on the CPU, "
                                             f"seeds {args.seeds}: symmetry {', '.join(args.modes)}")
    if args.json:
        print(json.dumps(summary))
    else:
        for mode, s in summary.items():
            print(f"symmetry {mode}: median over {s['seeds']} seeds: {s['median_iterations']:.0f} iterations, "
                  f"lin vel error {s['median_lin_vel_error_mps']:.3f} m/s, mirror error {s['median_mirror_error']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
