"""Train PPO on ``ant`` and report the deterministic policy's forward speed and episode length, with a curve.

    python benchmarks/learn_ant.py [--minutes 30] [--seed 0] [--eval-every 25] [--json] [--quick] [--out docs/img]
                                   [override ...]

Training uses horde's PPO trainer with ``configs/tuned/ant_ppo.yaml``; extra ``key=value`` arguments are config
overrides. Every ``--eval-every`` iterations the policy's action mean runs ``--eval-steps`` control steps on
``--eval-envs`` fresh envs; the figures are the mean torso velocity along +x [m/s] over all env-steps and the
fraction of envs that never fell. Evaluation time is not counted. The target: faster than 0.5 m/s forward
(``TARGET``); zero torque, evaluated on the same measure after training, scores about 0.001 m/s. Writes
``<out>/ant_learning.png`` and ``<out>/ant_learning.json``.
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

TARGET = Target(key="forward_vel_mps", threshold=0.5, op=">",
                measure="mean forward torso velocity [m/s], 250 steps of 64 fresh envs")


@torch.inference_mode()
def evaluate_speed(policy, task_cfg, seed: int, *, num_envs: int, steps: int, device: str = "cpu") -> dict[str, float]:
    """Mean forward velocity [m/s] and fraction of envs without a termination over ``steps`` control steps."""
    env = make("ant", num_envs=num_envs, seed=seed, config=task_cfg, device=device)
    obs, vx, fell = env.obs, 0.0, torch.zeros(num_envs, dtype=torch.bool, device=env.device)
    for _ in range(steps):
        r = env.step(policy(obs.clone()))
        obs = r.obs
        vx += float(env.terms[:, 0].mean())
        fell |= r.terminated
    return {"forward_vel_mps": vx / steps, "upright_fraction": float((~fell).float().mean())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=30.0, help="wall-time budget for training")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-every", type=int, default=25, help="iterations between evaluations")
    ap.add_argument("--eval-envs", type=int, default=64)
    ap.add_argument("--eval-steps", type=int, default=250)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "img"))
    ap.add_argument("--keep", default=None, help="keep the run (checkpoints, config) under this folder")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="3 iterations on 32 envs (smoke test)")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. num_envs=1024 seed=1")
    args = ap.parse_args(argv)
    overrides = ["task=ant", f"seed={args.seed}", *args.overrides]
    if args.quick:
        overrides += ["num_envs=32", "max_iterations=3"]
        args.eval_every, args.eval_envs, args.eval_steps = 3, 8, 20
    device = next((o.split("=", 1)[1] for o in overrides if o.startswith("device=")), "cpu")
    run = train_with_evals(
        overrides, lambda pol, cfg, seed: evaluate_speed(pol.to(device), cfg, seed, num_envs=args.eval_envs,
                                                         steps=args.eval_steps, device=device),
        run_root=args.keep, eval_every=args.eval_every, minutes=args.minutes, baseline=True,
        describe=lambda p: f"forward {p['forward_vel_mps']:.2f} m/s  upright {p['upright_fraction']:.2f}")
    curve, out, hit = run["curve"], Path(args.out), reached(run["curve"], TARGET)
    result = {"task": "ant", "overrides": overrides, "iterations": run["iterations"], "train_s": run["train_s"],
              "num_envs": run["cfg"].num_envs, **{k: curve[-1][k] for k in ("forward_vel_mps", "upright_fraction")},
              "seed": args.seed, "device": run["cfg"].device, "env_steps": curve[-1]["env_steps"],
              "target": TARGET.as_dict(), "baseline_zero_action": run["baseline"],
              "target_reached_at_s": hit["wall_s"] if hit else None,
              "png": str(out / "ant_learning.png"), "curve": curve}
    if not args.quick:
        plot_curve(curve, out / "ant_learning.png", key="forward_vel_mps", target=TARGET.threshold,
                   ylabel="forward velocity [m/s]",
                   title="horde ant (nv_ant, Newton MuJoCo-Warp), PPO, deterministic policy")
    write_result(result, out, "ant", quick=args.quick)
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "curve"}))
    else:
        print(f"ant: {run['iterations']} iterations, {run['train_s'] / 60:.1f} min training; deterministic policy "
              f"{result['forward_vel_mps']:.2f} m/s forward, {100 * result['upright_fraction']:.0f}% never fell "
              f"(target > {TARGET.threshold} m/s; zero torque {run['baseline']['forward_vel_mps']:.3f} m/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
