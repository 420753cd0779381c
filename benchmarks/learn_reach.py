"""Train PPO on ``reach`` and report the end-effector error of the deterministic policy, with a learning curve.

    python benchmarks/learn_reach.py [--minutes 15] [--eval-every 20] [--json] [--quick] [--out docs] [override ...]

Training uses horde's PPO trainer with ``configs/tuned/reach_ppo.yaml``; extra ``key=value`` arguments are passed
as config overrides. Every ``--eval-every`` iterations (and at the end) the current policy's action mean is run
for one full episode on ``--eval-envs`` fresh envs (other seeds than training); the figure is the mean (and the
90th percentile) distance from the end effector to its target at the last step of the episode [m]. Training stops
at ``max_iterations`` or when the wall-time budget ``--minutes`` is spent, whichever comes first. Writes
``<out>/reach_learning.png`` and ``<out>/reach_learning.json``; with ``--json`` prints one JSON summary line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from horde.envs import make
from horde.policies import InferencePolicy
from horde.train.config import compose
from horde.train.ppo import PPOTrainer


@torch.inference_mode()
def final_error(policy, task_cfg, *, num_envs: int, seed: int) -> dict[str, float]:
    """Run one episode of ``policy`` on ``num_envs`` fresh envs; end-effector error at its last step [m]."""
    env = make("reach", num_envs=num_envs, seed=seed, config=task_cfg)
    obs = env.obs
    for _ in range(task_cfg.episode_length):
        obs = env.step(policy(obs.clone())).obs
    err = env.final_error.clone()
    assert (err >= 0).all(), "every env must finish its episode exactly once"
    return {"mean_m": float(err.mean()), "p90_m": float(err.quantile(0.9)), "max_m": float(err.max())}


def plot(curve: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=120)
    minutes = [c["wall_s"] / 60 for c in curve]
    ax.plot(minutes, [100 * c["mean_m"] for c in curve], "o-", label="mean final error")
    ax.plot(minutes, [100 * c["p90_m"] for c in curve], "s--", alpha=0.6, label="90th percentile")
    ax.axhline(2.0, color="gray", lw=0.8, ls=":", label="2 cm target")
    ax.set_yscale("log")
    ax.set_xlabel("training wall time [min] (2-core CPU)")
    ax.set_ylabel("end-effector error [cm]")
    ax.set_title("horde reach (7-DoF arm, Newton MuJoCo-Warp), PPO")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=15.0, help="wall-time budget for training")
    ap.add_argument("--eval-every", type=int, default=20, help="iterations between evaluations")
    ap.add_argument("--eval-envs", type=int, default=256)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="4 iterations on 32 envs (smoke test)")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. num_envs=512 seed=1")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    overrides = ["task=reach", *args.overrides]
    if args.quick:
        overrides += ["num_envs=32", "max_iterations=4"]
        args.eval_every, args.eval_envs = 2, 16
    with tempfile.TemporaryDirectory() as tmp:
        cfg, task, raw = compose([f"run_root={tmp}", *overrides])
        trainer = PPOTrainer(cfg, task, raw, quiet=True)
        total = cfg.max_iterations
        curve, t0 = [], time.perf_counter()
        train_s = 0.0
        while trainer.iteration < total:
            cfg.max_iterations = min(total, trainer.iteration + args.eval_every)
            t = time.perf_counter()
            summary = trainer.learn()
            train_s += time.perf_counter() - t
            policy = InferencePolicy(trainer.alg.get_policy())
            err = final_error(policy, cfg.task, num_envs=args.eval_envs, seed=10_000 + trainer.iteration)
            ep = summary.get("last_train_episodes", {})
            curve.append({"iteration": trainer.iteration, "wall_s": train_s, **err,
                          "train_return": ep.get("return_mean"), "env_steps_per_s": summary["env_steps_per_s"]})
            print(f"it {trainer.iteration:4d}  train {train_s / 60:5.1f} min  final error mean "
                  f"{100 * err['mean_m']:.2f} cm  p90 {100 * err['p90_m']:.2f} cm  return {ep.get('return_mean')}",
                  file=sys.stderr, flush=True)
            if train_s > 60 * args.minutes:
                break
        wall = time.perf_counter() - t0
    out = Path(args.out)
    result = {"task": "reach", "overrides": overrides, "iterations": trainer.iteration, "train_s": round(train_s, 1),
              "wall_s_with_eval": round(wall, 1), "final_error_mean_m": curve[-1]["mean_m"],
              "final_error_p90_m": curve[-1]["p90_m"], "num_envs": cfg.num_envs,
              "png": str(out / "reach_learning.png"), "curve": curve}
    if not args.quick:
        plot(curve, out / "reach_learning.png")
        (out / "reach_learning.json").write_text(json.dumps(result, indent=2))
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "curve"}))
    else:
        print(f"reach: {trainer.iteration} iterations, {train_s / 60:.1f} min training; final end-effector error "
              f"mean {100 * result['final_error_mean_m']:.2f} cm, p90 {100 * result['final_error_p90_m']:.2f} cm")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
