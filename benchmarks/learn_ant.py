"""Train PPO on ``ant`` and report the deterministic policy's forward speed and episode length, with a curve.

    python benchmarks/learn_ant.py [--minutes 15] [--eval-every 25] [--json] [--quick] [--out docs] [override ...]

Training uses horde's PPO trainer with ``configs/tuned/ant_ppo.yaml``; extra ``key=value`` arguments are config
overrides. Every ``--eval-every`` iterations the policy's action mean runs ``--eval-steps`` control steps on
``--eval-envs`` fresh envs; the figures are the mean torso velocity along +x [m/s] over all env-steps and the
fraction of envs that never fell. Writes ``<out>/ant_learning.png`` and ``<out>/ant_learning.json``.
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
def evaluate_speed(policy, task_cfg, *, num_envs: int, steps: int, seed: int) -> dict[str, float]:
    """Mean forward velocity [m/s] and fraction of envs without a termination over ``steps`` control steps."""
    env = make("ant", num_envs=num_envs, seed=seed, config=task_cfg)
    obs, vx, fell = env.obs, 0.0, torch.zeros(num_envs, dtype=torch.bool)
    for _ in range(steps):
        r = env.step(policy(obs.clone()))
        obs = r.obs
        vx += float(env.terms[:, 0].mean())
        fell |= r.terminated
    return {"forward_vel_mps": vx / steps, "upright_fraction": float((~fell).float().mean())}


def plot(curve: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=120)
    ax.plot([c["wall_s"] / 60 for c in curve], [c["forward_vel_mps"] for c in curve], "o-")
    ax.set_xlabel("training wall time [min] (2-core CPU)")
    ax.set_ylabel("forward velocity [m/s]")
    ax.set_title("horde ant (nv_ant, Newton MuJoCo-Warp), PPO, deterministic policy")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=15.0, help="wall-time budget for training")
    ap.add_argument("--eval-every", type=int, default=25, help="iterations between evaluations")
    ap.add_argument("--eval-envs", type=int, default=64)
    ap.add_argument("--eval-steps", type=int, default=250)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="3 iterations on 32 envs (smoke test)")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. num_envs=1024 seed=1")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    overrides = ["task=ant", *args.overrides]
    if args.quick:
        overrides += ["num_envs=32", "max_iterations=3"]
        args.eval_every, args.eval_envs, args.eval_steps = 3, 8, 20
    with tempfile.TemporaryDirectory() as tmp:
        cfg, task, raw = compose([f"run_root={tmp}", *overrides])
        trainer = PPOTrainer(cfg, task, raw, quiet=True)
        total, curve, train_s = cfg.max_iterations, [], 0.0
        while trainer.iteration < total:
            cfg.max_iterations = min(total, trainer.iteration + args.eval_every)
            t = time.perf_counter()
            summary = trainer.learn()
            train_s += time.perf_counter() - t
            ev = evaluate_speed(InferencePolicy(trainer.alg.get_policy()), cfg.task, num_envs=args.eval_envs,
                                steps=args.eval_steps, seed=10_000 + trainer.iteration)
            ep = summary.get("last_train_episodes", {})
            curve.append({"iteration": trainer.iteration, "wall_s": train_s, **ev,
                          "train_return": ep.get("return_mean"), "train_length": ep.get("length_mean"),
                          "env_steps_per_s": summary["env_steps_per_s"]})
            print(f"it {trainer.iteration:4d}  train {train_s / 60:5.1f} min  forward {ev['forward_vel_mps']:.2f} m/s "
                  f"upright {ev['upright_fraction']:.2f}  train return {ep.get('return_mean')}", file=sys.stderr,
                  flush=True)
            if train_s > 60 * args.minutes:
                break
    out = Path(args.out)
    result = {"task": "ant", "overrides": overrides, "iterations": trainer.iteration, "train_s": round(train_s, 1),
              "num_envs": cfg.num_envs, **{k: curve[-1][k] for k in ("forward_vel_mps", "upright_fraction")},
              "png": str(out / "ant_learning.png"), "curve": curve}
    if not args.quick:
        plot(curve, out / "ant_learning.png")
        (out / "ant_learning.json").write_text(json.dumps(result, indent=2))
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "curve"}))
    else:
        print(f"ant: {trainer.iteration} iterations, {train_s / 60:.1f} min training; deterministic policy "
              f"{result['forward_vel_mps']:.2f} m/s forward, {100 * result['upright_fraction']:.0f}% never fell")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
