"""Train PPO on ``g1-velocity`` (Unitree G1 humanoid, flat ground) and report whether it stays up and tracks.

    python benchmarks/learn_g1.py [--minutes 60] [--eval-every 25] [--json] [--quick] [--out docs] [override ...]

The issue's CPU target, on 2 cores within 60 minutes: the deterministic policy stays up for 10 s (500 control
steps) in at least 80% of 64 fresh envs, and its linear-velocity tracking error falls below 0.5 m/s
(``python benchmarks/learn_g1.py --minutes 60 num_envs=128``). The GPU command: ``python benchmarks/learn_g1.py
--minutes 60 device=cuda:0 num_envs=4096``.

Every ``--eval-every`` iterations the policy's action mean drives ``--eval-envs`` fresh envs (other seeds) for
``--eval-steps`` control steps with commands drawn from the task's ranges. Reported: the fraction of envs that did
not fall (``up_fraction``), the linear-velocity error |cmd_xy - v_xy| [m/s] and the yaw-rate error [rad/s] in the
base frame, averaged over envs and over the steps after the first ``--settle``. Evaluation time is not counted.
Writes ``<out>/g1_learning.png`` and ``<out>/g1_learning.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from learn_quadruped import tracking_error  # noqa: E402
from learning import plot_curve, train_with_evals, write_result  # noqa: E402

TARGET_MPS = 0.5
TARGET_UP = 0.8


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0, help="wall-time budget for training")
    ap.add_argument("--eval-every", type=int, default=25, help="iterations between evaluations")
    ap.add_argument("--eval-envs", type=int, default=64)
    ap.add_argument("--eval-steps", type=int, default=500, help="control steps of an evaluation (500 = 10 s)")
    ap.add_argument("--settle", type=int, default=50, help="control steps ignored by the tracking error")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="2 iterations on 16 envs (smoke test)")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. num_envs=128 device=cuda:0")
    args = ap.parse_args(argv)
    overrides = ["task=g1-velocity", *args.overrides]
    if args.quick:
        overrides += ["num_envs=16", "max_iterations=2"]
        args.eval_every, args.eval_envs, args.eval_steps, args.settle = 2, 4, 12, 2
    device = next((o.split("=", 1)[1] for o in overrides if o.startswith("device=")), "cpu")

    def evaluate(pol, cfg, seed):
        out = tracking_error(pol.to(device), cfg, seed, num_envs=args.eval_envs, steps=args.eval_steps,
                             settle=args.settle, device=device, task="g1-velocity")
        return {**out, "up_fraction": 1.0 - out["fell_fraction"]}

    run = train_with_evals(
        overrides, evaluate, eval_every=args.eval_every, minutes=args.minutes,
        describe=lambda p: f"up {p['up_fraction']:.2f}  lin vel error {p['lin_vel_error_mps']:.3f} m/s  "
                           f"yaw error {p['yaw_rate_error_rps']:.3f} rad/s")
    curve, out, cfg = run["curve"], Path(args.out), run["cfg"]
    if not curve:
        print("g1-velocity: no evaluation ran (training stopped before the first one)", file=sys.stderr)
        return 1
    reached = next((c for c in curve if c["lin_vel_error_mps"] < TARGET_MPS and c["up_fraction"] >= TARGET_UP),
                   None)
    result = {"task": "g1-velocity", "overrides": overrides, "device": cfg.device, "num_envs": cfg.num_envs,
              "iterations": run["iterations"], "train_s": run["train_s"],
              **{k: curve[-1][k] for k in ("up_fraction", "lin_vel_error_mps", "yaw_rate_error_rps")},
              "target_mps": TARGET_MPS, "target_up_fraction": TARGET_UP,
              "target_reached_at_s": reached["wall_s"] if reached else None,
              "png": str(out / "g1_learning.png"), "curve": curve}
    if not args.quick:
        plot_curve(curve, out / "g1_learning.png", key="lin_vel_error_mps", target=TARGET_MPS,
                   extra=("up_fraction", "fraction up for 10 s"), ylabel="linear-velocity error [m/s]",
                   title=f"horde g1-velocity (Unitree G1, flat), PPO, {cfg.num_envs} envs on {cfg.device}")
    write_result(result, out, "g1", quick=args.quick)
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "curve"}))
    else:
        print(f"g1-velocity: {run['iterations']} iterations, {run['train_s'] / 60:.1f} min training on {cfg.device}; "
              f"up {100 * result['up_fraction']:.0f}% of {args.eval_envs} envs for {args.eval_steps} steps "
              f"(target {100 * TARGET_UP:.0f}%), linear-velocity error {result['lin_vel_error_mps']:.3f} m/s "
              f"(target {TARGET_MPS})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
