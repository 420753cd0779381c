"""How far apart MuJoCo's C engine (``mujoco-c``, float64) and MuJoCo-Warp (``mujoco``, float32) drift from the same
state under the same actions: the divergence curve of every articulated task.

    python benchmarks/backend_agreement.py [--json] [--quick] [--tasks ...] [--steps 50] [--num-envs 8] [--out docs/img]
                                           [--pair warp-c|actuators|jacobian]

``--pair actuators`` compares ``mujoco-c`` with itself instead: the PD law as MuJoCo's own actuators (one
``Batch.step`` per control step, ``task.sim.mujoco_actuators=true``) against horde's kernel per
substep (``false``, the default); tasks in torque mode step the same way under both. ``--pair jacobian``: MuJoCo's
dense constraint Jacobian against its sparse one (``task.sim.mujoco_jacobian``), the same physics to rounding.

Both backends step the MuJoCo model Newton converts from the task's MJCF. Each task is built twice (same seed: the
same initial state), driven by the same seeded random actions in [-1, 1] for ``--steps`` control steps; after each
step the largest absolute difference of the joint coordinates over the envs is recorded (m and rad; a reset env
starts from the same draw on both). One JSON line per task (``max_abs_diff`` per step); a plot
``<out>/backend_agreement.png``.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
from pathlib import Path

import torch

from horde.envs import get_task, make

TASKS = ("reach", "lift", "quadruped", "g1-velocity", "humanoid", "ant")
PAIRS = {"warp-c": ({"solver": "mujoco"}, {"solver": "mujoco-c"}),
         "actuators": ({"solver": "mujoco-c", "mujoco_actuators": False}, {"solver": "mujoco-c", "mujoco_actuators": True}),
         "jacobian": ({"solver": "mujoco-c", "mujoco_jacobian": "dense"}, {"solver": "mujoco-c", "mujoco_jacobian": "sparse"})}
"""The two ``task.sim`` settings each ``--pair`` compares."""


def divergence(task: str, steps: int, num_envs: int, pair: str = "warp-c") -> list[float]:
    runs = []
    for sim in PAIRS[pair]:
        cfg = copy.deepcopy(get_task(task).config)
        cfg.sim = dataclasses.replace(cfg.sim, **sim)
        env = make(task, num_envs=num_envs, device="cpu", seed=0, config=cfg)
        g = torch.Generator().manual_seed(1)
        traj = []
        for _ in range(steps):
            env.step(torch.rand(num_envs, env.num_actions, generator=g) * 2 - 1)
            traj.append(env.world.joint_q.clone())
        runs.append(torch.stack(traj))
    return [float(x) for x in (runs[0] - runs[1]).abs().flatten(1).max(1).values]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--tasks", nargs="+", default=list(TASKS))
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--num-envs", type=int, default=8)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "img"))
    ap.add_argument("--quick", action="store_true", help="reach only, 5 steps (CI smoke)")
    ap.add_argument("--pair", choices=sorted(PAIRS), default="warp-c",
                    help="warp-c: MuJoCo-Warp vs the C engine; actuators: the C engine's PD law as MuJoCo's "
                         "actuators vs horde's kernel; jacobian: MuJoCo's dense vs sparse constraint Jacobian")
    args = ap.parse_args(argv)
    if args.quick:
        args.tasks, args.steps = ["reach"], 5
    torch.set_num_threads(1)
    curves = {}
    for task in args.tasks:
        curves[task] = divergence(task, args.steps, args.num_envs, args.pair)
        row = {"task": task, "pair": args.pair, "num_envs": args.num_envs, "steps": args.steps,
               "max_abs_diff": [float(f"{v:.3g}") for v in curves[task]]}
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            c = curves[task]
            print(f"{task:<12} step 1: {c[0]:.1e}  step 10: {c[min(9, len(c) - 1)]:.1e}  step {len(c)}: {c[-1]:.1e}"
                  f"  max: {max(c):.1e}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8), dpi=120)
    for task, c in curves.items():
        ax.semilogy(range(1, len(c) + 1), [max(v, 1e-9) for v in c], marker=".", label=task)
    ax.set_xlabel("control step")
    if args.pair == "warp-c":
        ax.set_ylabel("max |joint_q(Warp) - joint_q(C)|")
        ax.set_title("MuJoCo-Warp (float32) vs MuJoCo C (float64), same model, state and actions", fontsize=9)
    elif args.pair == "actuators":
        ax.set_ylabel("max |joint_q(actuators) - joint_q(kernel)|")
        ax.set_title("MuJoCo C: PD law as MuJoCo's actuators vs horde's kernel, same state and actions", fontsize=9)
    else:
        ax.set_ylabel("max |joint_q(sparse) - joint_q(dense)|")
        ax.set_title("MuJoCo C: sparse vs dense constraint Jacobian, same state and actions", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / ("backend_agreement.png" if args.pair == "warp-c" else f"backend_agreement_{args.pair}.png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
