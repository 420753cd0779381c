"""Train PPO on ``push`` (the lift's arm pushes the cube to a target on the table) and report how often the cube
ends on target.

    python benchmarks/learn_push.py [--minutes 15] [--seed 0] [--eval-every 25] [--append FILE] [--json] [--quick]
                                    [--out DIR] [override ...]
    python benchmarks/learn_push.py --replot FILE.jsonl [--out DIR]

The target, stated before the first run (2026-11-26) and measured on 2 CPU cores: within 15 minutes of training at
512 envs, the deterministic policy ends the episode with the cube within 3 cm of its target (``push.on_target``) in
at least 50% of 64 fresh envs (``on_target_fraction``). The trivial baseline, zero actions (the arm at rest, the
cube where it was put), scores the share of targets drawn within 3 cm of the cube's spot (targets are up to 10 cm
away in x and y: about 7%); it is measured on the same envs in the same run and printed beside the result. The GPU
command: ``python benchmarks/learn_push.py --minutes 15 device=cuda:0 num_envs=4096``.

Every ``--eval-every`` iterations the policy's action mean drives ``--eval-envs`` fresh envs (other seeds) for one
episode (250 control steps, 5 s); an env whose cube leaves the table counts as missed. Also reported: the median
distance of the cube to its target at the episode's end [m]. Evaluation time is not counted. Writes
``<out>/push_learning.png`` and ``<out>/push_learning.json``; ``--append FILE`` adds the run as one JSON line (seeds
over sessions).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from learning import append_result, plot_curve, plot_seeds, train_with_evals, write_result  # noqa: E402

from horde.envs import make  # noqa: E402
from horde.envs.push import PUSHED  # noqa: E402

TARGET_FRACTION = 0.5
TARGET_KEY = "on_target_fraction"


@torch.inference_mode()
def push_success(policy, task_cfg, seed: int, *, num_envs: int, device: str = "cpu") -> dict:
    """Push figures of ``policy`` over one episode of ``num_envs`` fresh envs."""
    env = make("push", num_envs=num_envs, seed=seed, config=task_cfg, device=device)
    obs = env.obs
    alive = torch.ones(num_envs, dtype=torch.bool, device=env.device)
    error = torch.full((num_envs,), float("inf"), device=env.device)
    for _ in range(env.max_episode_length):
        cube_before = env.observation_sources()["object_pos"].clone()
        target_before = env.target.clone()
        r = env.step(policy(obs.clone()))
        obs = r.obs
        ended = alive & r.dones
        # an episode that ends reset its env: judge it on the state before the reset (a time-out ends on target or
        # not; a cube off the table is a miss)
        last_error = torch.linalg.vector_norm((target_before - cube_before)[:, :2], dim=-1)
        error = torch.where(ended, torch.where(r.truncated, last_error, torch.full_like(error, float("inf"))),
                            error)
        alive &= ~r.dones
        if not bool(alive.any()):
            break
    ended = ~alive
    finite = error[torch.isfinite(error)]
    return {TARGET_KEY: float((ended & (error < PUSHED)).float().mean()),
            "final_error_m": float(finite.median()) if finite.numel() else None,
            "off_table_fraction": float((ended & ~torch.isfinite(error)).float().mean())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=15.0, help="wall-time budget for training")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--append", default=None, help="append the summary as a JSON line to this file")
    ap.add_argument("--eval-every", type=int, default=25, help="iterations between evaluations")
    ap.add_argument("--eval-envs", type=int, default=64)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "img"))
    ap.add_argument("--replot", default=None, metavar="FILE", help="plot every run of an --append file into "
                    "<out>/push_learning.png and exit")
    ap.add_argument("--keep", default=None, help="keep the run (checkpoints, config) under this folder")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="2 iterations on 16 envs (smoke test)")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. num_envs=512 device=cuda:0")
    args = ap.parse_args(argv)
    if args.replot:
        path = Path(args.out) / "push_learning.png"
        plot_seeds(Path(args.replot), path, key=TARGET_KEY, target=TARGET_FRACTION,
                   ylabel="cube within 3 cm of its target at the end", baseline_label="zero actions (arm at rest)",
                   title="horde push, PPO on {device} (64 fresh envs, deterministic policy)")
        print(f"wrote {path}")
        return 0
    overrides = ["task=push", f"seed={args.seed}", *args.overrides]
    if args.quick:
        overrides += ["num_envs=16", "max_iterations=2", "task.episode_length=20"]
        args.eval_every, args.eval_envs = 2, 4
    device = next((o.split("=", 1)[1] for o in overrides if o.startswith("device=")), "cpu")
    run = train_with_evals(
        overrides, lambda pol, cfg, seed: push_success(pol.to(device), cfg, seed, num_envs=args.eval_envs,
                                                       device=device),
        run_root=args.keep, eval_every=args.eval_every, minutes=args.minutes, baseline=True,
        describe=lambda p: f"on target {p[TARGET_KEY]:.2f}  final error "
                           f"{p['final_error_m'] if p['final_error_m'] is None else round(p['final_error_m'], 3)} m")
    curve, out, cfg, baseline = run["curve"], Path(args.out), run["cfg"], run["baseline"]
    if not curve:
        print("push: no evaluation ran (training stopped before the first one)", file=sys.stderr)
        return 1
    reached = next((c for c in curve if c[TARGET_KEY] >= TARGET_FRACTION), None)
    result = {"task": "push", "overrides": overrides, "device": cfg.device, "num_envs": cfg.num_envs,
              "iterations": run["iterations"], "train_s": run["train_s"], "seed": args.seed,
              TARGET_KEY: curve[-1][TARGET_KEY], "final_error_m": curve[-1]["final_error_m"],
              "best_on_target_fraction": max(c[TARGET_KEY] for c in curve), "target_key": TARGET_KEY,
              "target_fraction": TARGET_FRACTION, "baseline_zero_action": baseline,
              "env_steps": curve[-1]["env_steps"], "date": time.strftime("%Y-%m-%d"),
              "target_reached_at_s": reached["wall_s"] if reached else None, "curve": curve}
    if not args.quick:
        plot_curve(curve, out / "push_learning.png", key=TARGET_KEY, target=TARGET_FRACTION,
                   ylabel="fraction of 64 envs, cube within 3 cm of its target",
                   title=f"horde push (arm7 + gripper), PPO, {cfg.num_envs} envs on {cfg.device}; zero actions "
                         f"{baseline[TARGET_KEY]:.2f}")
    write_result(result, out, "push", quick=args.quick)
    append_result(args.append, result)
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "curve"}))
    else:
        at = f"reached at {reached['wall_s'] / 60:.1f} min" if reached else "not reached"
        print(f"push: {run['iterations']} iterations, {run['train_s'] / 60:.1f} min training on {cfg.device}; cube "
              f"within 3 cm of its target at the episode's end in {100 * result[TARGET_KEY]:.0f}% of {args.eval_envs} "
              f"envs (target {100 * TARGET_FRACTION:.0f}%: {at}; zero actions {100 * baseline[TARGET_KEY]:.0f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
