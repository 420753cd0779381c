"""horde on MuJoCo's C engine (``task.sim.solver=mujoco-c``) against raw ``mujoco.batch`` and horde on MuJoCo-Warp.

    python benchmarks/mujoco_batch.py [--json] [--quick] [--tasks ant humanoid quadruped g1-velocity]
                                      [--num-envs 64 512 4096] [--threads 0]

For each task and size, in one process, three steppers in alternating windows of equal step counts
(``newton_throughput.paired_rates``: the same phase of the motion, the same machine load):

* ``horde-mujoco-c``: ``env.step(actions)`` of the horde task on ``mujoco-c`` (actuation law per substep, physics,
  Newton views and forward kinematics, health check, rewards, resets, observations);
* ``batch-raw``: ``mujoco.batch.Batch`` of the very MuJoCo model horde steps (``env.world.backend.mj_model``), same thread
  count, same initial state, ``Batch.step(nstep=decimation)`` per control step with fixed joint torques (the ones
  horde's actuation law gives at its first step), no horde code;
* ``horde-mujoco-warp``: the same horde task on ``mujoco`` (MuJoCo-Warp on Warp's CPU backend, the former default).

horde runs with failures, time-outs and reset noise off (``newton_throughput.bench_config``) under fixed actions,
so that every stepper simulates the robot falling from the same pose. Ratio rows: ``ratio:horde-c/raw`` (horde's
overhead over the engine; floor 0.8 at N=4096) and ``ratio:horde-c/horde-warp`` (what the backend buys; floor 5 for
ant, humanoid and the quadruped). Each figure is the median of ``--repeats`` windows. ``--quick``: N=64, short
windows, one task.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from newton_throughput import bench_actions, bench_config, paired_rates  # noqa: E402

from horde.envs import make  # noqa: E402

DEFAULT_TASKS = ("ant", "humanoid", "quadruped", "g1-velocity")


def horde_env(task: str, num_envs: int, solver: str, threads: int, sim: dict | None = None):
    """The benchmark's env of ``task``; ``sim``: more ``task.sim`` settings (e.g. ``{"mujoco_actuators": True}``)."""
    cfg = copy.deepcopy(bench_config(task))
    cfg.sim = dataclasses.replace(cfg.sim, solver=solver, cpu_threads=threads, **(sim or {}))
    return make(task, num_envs=num_envs, device="cpu", seed=0, config=cfg)


def held_torques(env):
    """``qfrc_applied`` rows [num_envs, nv] that hold the joint torques ``env`` applied in its last substep: on
    MuJoCo's own actuators (``task.sim.mujoco_actuators``) those are the actuators' forces, not in the state rows, and
    a model without the batch's per-env gains exerts nothing through its actuators."""
    w, b = env.world, env.world.backend
    rows = b.batch.bind("qfrc_applied").copy()
    rows[:, b._act_mj_qd.numpy()] = w.joint_f.numpy()[:, w.drive.qd_index.numpy()]
    return rows


def raw_batch_stepper(env, nstep: int | None = None):
    """``Batch.step(nstep=decimation)`` (or ``nstep``) of a fresh batch on ``env``'s MuJoCo model, from ``env``'s
    current state, under the joint torques ``env`` applied last (held fixed)."""
    from mujoco.batch import Batch

    w, b = env.world, env.world.backend
    batch = Batch(b.mj_model, w.num_envs, nthread=b.batch.nthread)
    batch.state[:] = b.batch.state
    batch.bind("qfrc_applied")[:] = held_torques(env)
    substeps = w.substeps if nstep is None else nstep

    def step() -> None:
        batch.step(nstep=substeps)

    return step


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--quick", action="store_true", help="N=64, one task, short windows (CI smoke)")
    ap.add_argument("--tasks", nargs="+", default=list(DEFAULT_TASKS))
    ap.add_argument("--num-envs", nargs="+", type=int, default=[64, 512, 4096])
    ap.add_argument("--threads", type=int, default=0, help="MuJoCo batch threads (0: every core)")
    ap.add_argument("--seconds", type=float, default=2.0, help="length of one timed window")
    ap.add_argument("--repeats", type=int, default=3, help="timed windows per figure (median reported)")
    ap.add_argument("--no-warp", action="store_true", help="skip horde on MuJoCo-Warp (slow at large N)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    tasks, sizes, seconds, repeats = args.tasks, args.num_envs, args.seconds, args.repeats
    if args.quick:
        tasks, sizes, seconds, repeats = tasks[:1], [64], 0.3, 2
    rows = []

    def emit(row: dict) -> None:
        rows.append(row)
        if args.json:
            print(json.dumps(row), flush=True)

    for task in tasks:
        for n in sizes:
            env_c = horde_env(task, n, "mujoco-c", args.threads)
            actions = bench_actions(n, env_c.num_actions)
            env_c.step(actions)  # the raw batch starts from this state, under these torques
            w = env_c.world
            raw = raw_batch_stepper(env_c)
            steps = {"horde-mujoco-c": lambda: env_c.step(actions), "batch-raw": raw}
            env_w = None
            if not args.no_warp:
                env_w = horde_env(task, n, "mujoco", 0)
                env_w.step(actions)
                steps["horde-mujoco-warp"] = lambda: env_w.step(actions)
            rates = paired_rates(steps, n, lambda: None, seconds=seconds, repeats=repeats)
            mj = w.backend.mj_model
            settings = {"sim_dt": float(mj.opt.timestep), "substeps": w.substeps, "threads": w.backend.batch.nthread,
                        "integrator": int(mj.opt.integrator), "mj_solver": int(mj.opt.solver),
                        "cone": int(mj.opt.cone), "iterations": int(mj.opt.iterations)}
            for impl, rate in rates.items():
                emit({"task": task, "impl": impl, "device": "cpu", "num_envs": n, **settings,
                      "env_steps_per_s": round(rate, 1), "repeats": repeats})
            emit({"task": task, "impl": "ratio:horde-c/raw", "device": "cpu", "num_envs": n,
                  "ratio": round(rates["horde-mujoco-c"] / rates["batch-raw"], 3)})
            if env_w is not None:
                emit({"task": task, "impl": "ratio:horde-c/horde-warp", "device": "cpu", "num_envs": n,
                      "ratio": round(rates["horde-mujoco-c"] / rates["horde-mujoco-warp"], 2)})
            del env_c, env_w, steps, raw
    if not args.json:
        print(f"{'task':<14}{'num_envs':>9}{'horde C':>12}{'raw batch':>12}{'horde/raw':>11}{'horde Warp':>12}"
              f"{'C/Warp':>8}")
        for task in tasks:
            for n in sizes:
                r = {x["impl"]: x for x in rows if x["task"] == task and x["num_envs"] == n}
                warp_rate = (f"{r['horde-mujoco-warp']['env_steps_per_s']:>12,.0f}"
                             f"{r['ratio:horde-c/horde-warp']['ratio']:>8.1f}" if "horde-mujoco-warp" in r
                             else f"{'-':>12}{'-':>8}")
                print(f"{task:<14}{n:>9}{r['horde-mujoco-c']['env_steps_per_s']:>12,.0f}"
                      f"{r['batch-raw']['env_steps_per_s']:>12,.0f}{r['ratio:horde-c/raw']['ratio']:>11.2f}{warp_rate}")
        threads = next(x["threads"] for x in rows if "threads" in x)
        print(f"MuJoCo batch threads: {threads}; env-steps/s, median of {repeats} windows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
