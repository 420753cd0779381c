"""Train PPO on ``reach`` and report the end-effector error of the deterministic policy, with a learning curve.

    python benchmarks/learn_reach.py [--minutes 15] [--seed 0] [--eval-every 20] [--json] [--quick] [--out docs/img]
                                     [override ...]

Training uses horde's PPO trainer with ``configs/tuned/reach_ppo.yaml``; extra ``key=value`` arguments are passed
as config overrides. Every ``--eval-every`` iterations (and at the end) the current policy's action mean is run
for one full episode on ``--eval-envs`` fresh envs (other seeds than training); the figure is the mean (and the
90th percentile) distance from the end effector to its target at the last step of the episode [m]. Training stops
at ``max_iterations`` or when the wall-time budget ``--minutes`` is spent, whichever comes first; evaluation time
is not counted. The target: a mean final error below 2 cm (``TARGET``); the arm at rest (zero actions), evaluated
on the same measure after training, scores about 31.6 cm. Writes ``<out>/reach_learning.png`` and
``<out>/reach_learning.json``; with ``--json`` prints one JSON summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from learning import Target, plot_curve, reached, train_with_evals, write_result  # noqa: E402

from horde.envs import make  # noqa: E402

TARGET = Target(key="mean_m", threshold=0.02, op="<",
                measure="mean end-effector error at the episode's last step [m], 256 fresh envs")


@torch.inference_mode()
def final_error(policy, task_cfg, seed: int, *, num_envs: int, device: str = "cpu") -> dict[str, float]:
    """Run one episode of ``policy`` on ``num_envs`` fresh envs; end-effector error at its last step [m]."""
    env = make("reach", num_envs=num_envs, seed=seed, config=task_cfg, device=device)
    obs = env.obs
    for _ in range(task_cfg.episode_length):
        obs = env.step(policy(obs.clone())).obs
    err = env.final_error.clone()
    assert (err >= 0).all(), "every env must finish its episode exactly once"
    return {"mean_m": float(err.mean()), "p90_m": float(err.quantile(0.9)), "max_m": float(err.max())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=15.0, help="wall-time budget for training")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-every", type=int, default=20, help="iterations between evaluations")
    ap.add_argument("--eval-envs", type=int, default=256)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "img"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="4 iterations on 32 envs (smoke test)")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. num_envs=512 seed=1")
    args = ap.parse_args(argv)
    overrides = ["task=reach", f"seed={args.seed}", *args.overrides]
    if args.quick:
        overrides += ["num_envs=32", "max_iterations=4"]
        args.eval_every, args.eval_envs = 2, 16
    device = next((o.split("=", 1)[1] for o in overrides if o.startswith("device=")), "cpu")
    run = train_with_evals(
        overrides,
        lambda pol, cfg, seed: final_error(pol.to(device), cfg, seed, num_envs=args.eval_envs, device=device),
        eval_every=args.eval_every, minutes=args.minutes, baseline=True,
        describe=lambda p: f"final error mean {100 * p['mean_m']:.2f} cm  p90 {100 * p['p90_m']:.2f} cm")
    curve, out, hit = run["curve"], Path(args.out), reached(run["curve"], TARGET)
    result = {"task": "reach", "overrides": overrides, "iterations": run["iterations"], "train_s": run["train_s"],
              "final_error_mean_m": curve[-1]["mean_m"], "final_error_p90_m": curve[-1]["p90_m"],
              "num_envs": run["cfg"].num_envs, "seed": args.seed, "device": run["cfg"].device,
              "env_steps": curve[-1]["env_steps"], "target": TARGET.as_dict(), "baseline_zero_action": run["baseline"],
              "target_reached_at_s": hit["wall_s"] if hit else None, "png": str(out / "reach_learning.png"),
              "curve": curve}
    if not args.quick:
        plot_curve(curve, out / "reach_learning.png", key="mean_m", scale=100.0, target=100 * TARGET.threshold,
                   log=True,
                   extra=("p90_m", "90th percentile"), ylabel="final end-effector error [cm]",
                   title="horde reach (7-DoF arm, Newton MuJoCo-Warp), PPO, deterministic policy")
    write_result(result, out, "reach", quick=args.quick)
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "curve"}))
    else:
        print(f"reach: {run['iterations']} iterations, {run['train_s'] / 60:.1f} min training; final end-effector "
              f"error mean {100 * result['final_error_mean_m']:.2f} cm, p90 {100 * result['final_error_p90_m']:.2f} cm "
              f"(target < {100 * TARGET.threshold:g} cm; arm at rest {100 * run['baseline']['mean_m']:.1f} cm)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
