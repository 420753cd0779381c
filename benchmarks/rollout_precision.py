"""What rolling out in the shipped precision buys: train with fp32 and with fp16 rollouts, export both at fp16.

    python benchmarks/rollout_precision.py [--tasks cartpole g1-velocity] [--seeds 0 1 2] [--json] [--quick]
                                           [--iterations cartpole=30 g1-velocity=40] [--episodes 64]

For each task and seed, PPO trains the tuned config twice, ``algo.rollout_precision=fp32`` and ``=fp16`` (same
seed, same iterations). Each policy is then exported to an fp16 ONNX graph (``horde export precision=fp16``'s
graph) and driven closed loop in the sim by onnxruntime against the fp32 torch policy from the same initial states
(the export ladder's rung 2, ``horde.deploy.verify.closed_loop``), and against the policy as trained (for an fp16
run: its fp16-autocast actor). One JSON line per run: the three mean returns and the relative gaps
``|fp16 bundle - as trained| / |as trained|``; then one line per task with the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scratch import scratch_dir  # noqa: E402  (training runs' roots, removed at exit)

ITERATIONS = {"cartpole": 30, "pendulum": 150, "g1-velocity": 40}
ENVS = {"g1-velocity": 256}


def run_one(task: str, seed: int, precision: str, *, iterations: int, episodes: int) -> dict:
    from horde.deploy.onnx_export import export_onnx, io_spec
    from horde.train.checkpoint import load_policy
    from horde.deploy.verify import closed_loop
    from horde.envs import make
    from horde.policies import make_inference_policy
    from horde.train.config import compose
    from horde.train.evaluate import evaluate
    from horde.train.ppo import PPOTrainer

    root = Path(scratch_dir("horde-precision-"))
    over = [f"task={task}", f"seed={seed}", f"max_iterations={iterations}", f"save_interval={iterations}",
            f"run_root={root}", f"algo.rollout_precision={precision}"]
    if task in ENVS:
        over.append(f"num_envs={ENVS[task]}")
    cfg, name, raw = compose(over)
    trainer = PPOTrainer(cfg, name, raw, quiet=True)
    t0 = time.perf_counter()
    trainer.learn()
    train_s = time.perf_counter() - t0
    reference, ckpt, rcfg, _ = load_policy(trainer.run_dir)  # fp32 torch
    fp16_graph = load_policy(trainer.run_dir, precision="fp16")[0]
    layout = make(name, num_envs=1, device="cpu", config=rcfg.task).describe()
    io = io_spec(fp16_graph, len(layout["action_names"]))
    onnx_path = root / "policy_fp16.onnx"
    export_onnx(fp16_graph, onnx_path, io, {"task": name, "precision": "fp16"})
    loop = closed_loop(onnx_path, reference, name, rcfg.task, io, episodes=episodes)
    # the policy as it acted in training (fp16 autocast for an fp16 run), deterministic, from the same states
    as_trained = evaluate(make_inference_policy(trainer.alg.get_policy()), name, rcfg.task, episodes=episodes,
                          seed=4242).summary()["mean_return"]
    gap = abs(loop.onnx_mean_return - as_trained) / max(abs(as_trained), 1e-9)
    return {"task": task, "seed": seed, "rollout_precision": precision, "iterations": iterations,
            "train_s": round(train_s, 1), "episodes": episodes,
            "params": sum(p.numel() for p in trainer.alg.get_policy().parameters()),
            "as_trained_return": round(float(as_trained), 3), "torch_fp32_return": round(loop.torch_mean_return, 3),
            "fp16_bundle_return": round(loop.onnx_mean_return, 3), "bundle_gap_rel": round(gap, 4),
            "fp16_vs_fp32_torch_rel": round(loop.rel_diff, 4), "ladder_rung2_passed": loop.passed}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="+", default=["cartpole", "g1-velocity"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--iterations", nargs="*", default=[], help="task=N overrides of the training length")
    ap.add_argument("--episodes", type=int, default=64)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="cartpole, 2 iterations, one seed (smoke test)")
    args = ap.parse_args(argv)
    iters = dict(ITERATIONS, **{k: int(v) for k, v in (s.split("=", 1) for s in args.iterations)})
    if args.quick:
        args.tasks, args.seeds, iters["cartpole"] = ["cartpole"], [0], 2
    rows = []
    for task in args.tasks:
        for seed in args.seeds:
            for precision in ("fp32", "fp16"):
                row = run_one(task, seed, precision, iterations=iters.get(task, 50), episodes=args.episodes)
                rows.append(row)
                print(json.dumps(row) if args.json else
                      f"{task} seed {seed} {precision} rollouts: as trained {row['as_trained_return']}, fp32 torch "
                      f"{row['torch_fp32_return']}, fp16 bundle {row['fp16_bundle_return']} (gap "
                      f"{100 * row['bundle_gap_rel']:.2f}%)", flush=True)
    for task in args.tasks:
        for precision in ("fp32", "fp16"):
            rs = [r for r in rows if r["task"] == task and r["rollout_precision"] == precision]
            line = {"task": task, "rollout_precision": precision, "summary": True, "seeds": len(rs),
                    "median_bundle_gap_rel": statistics.median(r["bundle_gap_rel"] for r in rs),
                    "median_fp16_bundle_return": statistics.median(r["fp16_bundle_return"] for r in rs),
                    "median_as_trained_return": statistics.median(r["as_trained_return"] for r in rs)}
            print(json.dumps(line) if args.json else
                  f"{task} {precision} rollouts: median gap of the fp16 bundle "
                  f"{100 * line['median_bundle_gap_rel']:.2f}%"
                  f" (return {line['median_fp16_bundle_return']:.1f} vs {line['median_as_trained_return']:.1f} as "
                  f"trained, {len(rs)} seeds)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
