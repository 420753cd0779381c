"""Train PPO on ``quadruped`` (velocity tracking on flat ground) and report the command-tracking error, with a curve.

    python benchmarks/learn_quadruped.py [--minutes 10] [--seed 0] [--eval-every 25] [--append FILE] [--json]
                                         [--quick] [--out docs/img] [override ...]

The issue's GPU target: on one GPU with 4096 envs, the mean linear-velocity error falls below 0.25 m/s within 10
minutes of training (``python benchmarks/learn_quadruped.py --minutes 10 device=cuda:0 num_envs=4096``). On a CPU
pass a smaller ``num_envs`` (e.g. 256).

Every ``--eval-every`` iterations the policy's action mean drives ``--eval-envs`` fresh envs (other seeds) for
``--eval-steps`` control steps with commands drawn from the task's ranges; the figures, averaged over envs and
over the steps after the first ``--settle`` (the robot accelerating to its command), are the linear-velocity error
|cmd_xy - v_xy| [m/s] and the yaw-rate error [rad/s] in the base frame, and the fraction of envs that fell.
Evaluation time is not counted. Standing still (zero actions: the default pose held), evaluated on the same measure
after training, scores about 0.54 m/s. Writes ``<out>/quadruped_learning.png`` and ``<out>/quadruped_learning.json``;
``--append FILE`` adds the run's summary with its curve as one JSON line to FILE (seeds and recipes over sessions).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from learning import Target, append_result, plot_curve, reached, train_with_evals, write_result  # noqa: E402

from horde.envs import make  # noqa: E402

TARGET_MPS = 0.25
TARGET = Target(key="lin_vel_error_mps", threshold=TARGET_MPS, op="<",
                measure="linear-velocity tracking error [m/s], steps 50-250 of 64 fresh envs")


@torch.inference_mode()
def tracking_error(policy, task_cfg, seed: int, *, num_envs: int, steps: int, settle: int,
                   device: str = "cpu", task: str = "quadruped") -> dict[str, float]:
    """Mean linear-velocity and yaw-rate tracking errors of ``policy`` over fresh envs (after ``settle`` steps),
    and the fraction of envs whose first episode failed within ``steps``."""
    env = make(task, num_envs=num_envs, seed=seed, config=task_cfg, device=device)
    obs = env.obs
    lin = torch.zeros((), device=env.device)
    yaw = torch.zeros((), device=env.device)
    fell = torch.zeros(num_envs, dtype=torch.bool, device=env.device)
    for k in range(steps):
        r = env.step(policy(obs.clone()))
        obs = r.obs
        fell |= r.terminated
        if k >= settle:
            v = env.world.root_vel_base
            lin += (env.command[:, :2] - v[:, :2]).norm(dim=1).mean()
            yaw += (env.command[:, 2] - v[:, 5]).abs().mean()
    n = max(steps - settle, 1)
    return {"lin_vel_error_mps": float(lin) / n, "yaw_rate_error_rps": float(yaw) / n,
            "fell_fraction": float(fell.float().mean())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0, help="wall-time budget for training")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-every", type=int, default=25, help="iterations between evaluations")
    ap.add_argument("--eval-envs", type=int, default=64)
    ap.add_argument("--eval-steps", type=int, default=250)
    ap.add_argument("--settle", type=int, default=50, help="control steps ignored at the start of evaluation")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "img"))
    ap.add_argument("--append", default=None, help="append the summary as a JSON line to this file")
    ap.add_argument("--keep", default=None, help="keep the run (checkpoints, config) under this folder")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="2 iterations on 16 envs (smoke test)")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. num_envs=256 device=cuda:0")
    args = ap.parse_args(argv)
    overrides = ["task=quadruped", f"seed={args.seed}", *args.overrides]
    if args.quick:
        overrides += ["num_envs=16", "max_iterations=2"]
        args.eval_every, args.eval_envs, args.eval_steps, args.settle = 2, 4, 12, 2
    device = next((o.split("=", 1)[1] for o in overrides if o.startswith("device=")), "cpu")
    run = train_with_evals(
        overrides, lambda pol, cfg, seed: tracking_error(pol.to(device), cfg, seed, num_envs=args.eval_envs,
                                                         steps=args.eval_steps, settle=args.settle, device=device),
        run_root=args.keep, eval_every=args.eval_every, minutes=args.minutes, baseline=True,
        describe=lambda p: f"lin vel error {p['lin_vel_error_mps']:.3f} m/s  yaw error {p['yaw_rate_error_rps']:.3f}"
                           f" rad/s  fell {p['fell_fraction']:.2f}")
    curve, out, cfg = run["curve"], Path(args.out), run["cfg"]
    hit = reached(curve, TARGET)
    result = {"task": "quadruped", "overrides": overrides, "device": cfg.device, "num_envs": cfg.num_envs,
              "iterations": run["iterations"], "train_s": run["train_s"],
              **{k: curve[-1][k] for k in ("lin_vel_error_mps", "yaw_rate_error_rps", "fell_fraction")},
              "seed": args.seed, "env_steps": curve[-1]["env_steps"], "target": TARGET.as_dict(),
              "baseline_zero_action": run["baseline"],
              "target_mps": TARGET_MPS, "target_reached_at_s": hit["wall_s"] if hit else None,
              "png": str(out / "quadruped_learning.png"), "curve": curve}
    if not args.quick:
        plot_curve(curve, out / "quadruped_learning.png", key="lin_vel_error_mps", target=TARGET_MPS,
                   extra=("yaw_rate_error_rps", "yaw-rate error [rad/s]"), ylabel="linear-velocity error [m/s]",
                   title=f"horde quadruped (quad12, flat), PPO, {cfg.num_envs} envs on {cfg.device}")
    write_result(result, out, "quadruped", quick=args.quick)
    append_result(args.append, result)
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "curve"}))
    else:
        print(f"quadruped: {run['iterations']} iterations, {run['train_s'] / 60:.1f} min training on {cfg.device}; "
              f"linear-velocity error {result['lin_vel_error_mps']:.3f} m/s (target {TARGET_MPS}, standing still "
              f"{run['baseline']['lin_vel_error_mps']:.3f}), "
              f"{100 * result['fell_fraction']:.0f}% fell")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
