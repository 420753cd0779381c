"""Train PPO on ``place`` (the lift's arm picks the cube and sets it down on a pad drawn on the table) and report
how often the cube ends resting on the pad, released.

    python benchmarks/learn_place.py [--minutes 60] [--seed 0] [--eval-every 25] [--append FILE] [--json] [--quick]
                                     [--out DIR] [override ...]
    python benchmarks/learn_place.py --replot FILE.jsonl [--out DIR]

The floor (issue 71, stated before the first run, 2026-12-06) on 2 CPU cores: within 60 minutes of training at 512
envs, the deterministic policy ends the episode with the cube resting within 3 cm of the pad's centre, down on the
table, still and released (``place.on_pad``) in at least 50% of 64 fresh envs (``on_pad_fraction``). The trivial
baseline, zero actions (the arm at rest, the cube where it was put), scores 0: the pad is drawn at least 1.5 cube
edges from the cube; it is measured on the same envs in the same run and printed beside the result. The GPU command:
``python benchmarks/learn_place.py --minutes 1 device=cuda:0 num_envs=4096``.

Every ``--eval-every`` iterations the policy's action mean drives ``--eval-envs`` fresh envs (other seeds) for one
episode (300 control steps, 6 s), judged after its next-to-last step (before the time-out resets the env); an env
whose cube leaves the table counts as missed. Also reported: the median distance of the cube to the pad in the
table's plane at the end [m]. Evaluation time is not counted. Writes ``<out>/place_learning.png`` and
``<out>/place_learning.json``; ``--append FILE`` adds the run as one JSON line (seeds over sessions).
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
from horde.envs.place import on_pad  # noqa: E402

TARGET_FRACTION = 0.5
TARGET_KEY = "on_pad_fraction"


@torch.inference_mode()
def place_success(policy, task_cfg, seed: int, *, num_envs: int, device: str = "cpu") -> dict:
    """Place figures of ``policy`` over one episode of ``num_envs`` fresh envs."""
    env = make("place", num_envs=num_envs, seed=seed, config=task_cfg, device=device)
    obs = env.obs
    alive = torch.ones(num_envs, dtype=torch.bool, device=env.device)
    for _ in range(env.max_episode_length - 1):  # the last step would time out and reset every env
        r = env.step(policy(obs.clone()))
        obs = r.obs
        alive &= ~r.dones  # a cube off the table (or unstable physics) ended the episode early: a miss
    planar = torch.linalg.vector_norm((env.target - env.observation_sources()["object_pos"])[:, :2], dim=-1)
    return {TARGET_KEY: float((alive & on_pad(env)).float().mean()),
            "final_error_m": float(planar[alive].median()) if bool(alive.any()) else None,
            "off_table_fraction": float((~alive).float().mean())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=60.0, help="wall-time budget for training")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--append", default=None, help="append the summary as a JSON line to this file")
    ap.add_argument("--eval-every", type=int, default=25, help="iterations between evaluations")
    ap.add_argument("--eval-envs", type=int, default=64)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "img"))
    ap.add_argument("--replot", default=None, metavar="FILE", help="plot every run of an --append file into "
                    "<out>/place_learning.png and exit")
    ap.add_argument("--keep", default=None, help="keep the run (checkpoints, config) under this folder")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="2 iterations on 16 envs (smoke test)")
    ap.add_argument("overrides", nargs="*", help="config overrides, e.g. num_envs=512 device=cuda:0")
    args = ap.parse_args(argv)
    if args.replot:
        path = Path(args.out) / "place_learning.png"
        plot_seeds(Path(args.replot), path, key=TARGET_KEY, target=TARGET_FRACTION,
                   ylabel="cube resting within 3 cm of the pad at the end", baseline_label="zero actions (arm at rest)",
                   title="horde place, PPO on {device} (64 fresh envs, deterministic policy)")
        print(f"wrote {path}")
        return 0
    overrides = ["task=place", f"seed={args.seed}", *args.overrides]
    if args.quick:
        overrides += ["num_envs=16", "max_iterations=2", "task.episode_length=20"]
        args.eval_every, args.eval_envs = 2, 4
    device = next((o.split("=", 1)[1] for o in overrides if o.startswith("device=")), "cpu")
    run = train_with_evals(
        overrides, lambda pol, cfg, seed: place_success(pol.to(device), cfg, seed, num_envs=args.eval_envs,
                                                       device=device),
        run_root=args.keep, eval_every=args.eval_every, minutes=args.minutes, baseline=True,
        describe=lambda p: f"on pad {p[TARGET_KEY]:.2f}  final error "
                           f"{p['final_error_m'] if p['final_error_m'] is None else round(p['final_error_m'], 3)} m")
    curve, out, cfg, baseline = run["curve"], Path(args.out), run["cfg"], run["baseline"]
    if not curve:
        print("place: no evaluation ran (training stopped before the first one)", file=sys.stderr)
        return 1
    reached = next((c for c in curve if c[TARGET_KEY] >= TARGET_FRACTION), None)
    result = {"task": "place", "overrides": overrides, "device": cfg.device, "num_envs": cfg.num_envs,
              "iterations": run["iterations"], "train_s": run["train_s"], "seed": args.seed,
              TARGET_KEY: curve[-1][TARGET_KEY], "final_error_m": curve[-1]["final_error_m"],
              "best_on_pad_fraction": max(c[TARGET_KEY] for c in curve), "target_key": TARGET_KEY,
              "target_fraction": TARGET_FRACTION, "baseline_zero_action": baseline,
              "env_steps": curve[-1]["env_steps"], "date": time.strftime("%Y-%m-%d"),
              "target_reached_at_s": reached["wall_s"] if reached else None, "curve": curve}
    if not args.quick:
        plot_curve(curve, out / "place_learning.png", key=TARGET_KEY, target=TARGET_FRACTION,
                   ylabel="fraction of 64 envs, cube resting within 3 cm of the pad",
                   title=f"horde place (arm7 + gripper), PPO, {cfg.num_envs} envs on {cfg.device}; zero actions "
                         f"{baseline[TARGET_KEY]:.2f}")
    write_result(result, out, "place", quick=args.quick)
    append_result(args.append, result)
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "curve"}))
    else:
        at = f"reached at {reached['wall_s'] / 60:.1f} min" if reached else "not reached"
        print(f"place: {run['iterations']} iterations, {run['train_s'] / 60:.1f} min training on {cfg.device}; cube "
              f"resting within 3 cm of the pad at the episode's end in {100 * result[TARGET_KEY]:.0f}% of "
              f"{args.eval_envs} envs (target {100 * TARGET_FRACTION:.0f}%: {at}; zero actions "
              f"{100 * baseline[TARGET_KEY]:.0f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
