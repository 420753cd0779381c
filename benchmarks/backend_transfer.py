"""Does a policy keep its return on the other MuJoCo backend? Evaluate trained runs on MuJoCo-Warp and on MuJoCo's C
engine (``mujoco.batch``), the same episodes on each.

    python benchmarks/backend_transfer.py RUN_DIR [RUN_DIR ...] [--episodes 64] [--json]

Each run is evaluated with its own task config twice, ``task.sim.solver=mujoco`` (MuJoCo-Warp) and
``task.sim.solver=mujoco-c`` (both step the MuJoCo model Newton converts from the same MJCF), deterministic actions,
``--episodes`` parallel episodes from the same seeds (``horde.train.evaluate``). A row gives both mean returns and
``kept``: the return on the other backend over the return on the one the run trained on (floor 0.9). Train the runs
first, for example:

    horde train task=quadruped num_envs=256 max_iterations=150 task.sim.solver=mujoco-c
    horde train task=quadruped num_envs=256 max_iterations=150 task.sim.solver=mujoco
"""

from __future__ import annotations

import argparse
import dataclasses
import json

import torch

from horde.deploy import load_policy
from horde.train.evaluate import evaluate

BACKENDS = ("mujoco", "mujoco-c")


def transfer(run: str, episodes: int) -> dict:
    policy, ckpt, cfg, _ = load_policy(run)
    task = ckpt["task"]
    trained = cfg.task.sim.solver
    if trained == "auto":  # runs record the config; auto was mujoco-c on the CPU they trained on
        trained = "mujoco-c"
    returns = {}
    for backend in BACKENDS:
        task_cfg = dataclasses.replace(cfg.task, sim=dataclasses.replace(cfg.task.sim, solver=backend))
        returns[backend] = evaluate(policy, task, task_cfg, episodes=episodes).summary()["mean_return"]
    other = next(b for b in BACKENDS if b != trained)
    return {"run": str(run), "task": task, "trained_on": trained, "episodes": episodes,
            **{f"return_{b}": round(r, 3) for b, r in returns.items()},
            "kept": round(returns[other] / returns[trained], 3) if returns[trained] != 0 else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--episodes", type=int, default=64)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    for run in args.runs:
        row = transfer(run, args.episodes)
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print(f"{row['task']} trained on {row['trained_on']}: return {row['return_mujoco']:.2f} on MuJoCo-Warp, "
                  f"{row['return_mujoco-c']:.2f} on MuJoCo C; kept {row['kept']} on the other ({run})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
