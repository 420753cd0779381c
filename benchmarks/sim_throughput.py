"""Env-steps per second of horde's tasks on one device, against references run in the same process.

    python benchmarks/sim_throughput.py [--json] [--quick] [--device cpu] [--tasks cartpole ant humanoid quadruped]
                                        [--num-envs ...] [--cpu-threads 1]

Classic tasks (cartpole) run at N = 1, 64, 512, 4096, 16384; articulated tasks (ant, humanoid, quadruped) at
N = 64, 512, 4096 through benchmarks/newton_throughput.py, in the same process, with its two references: raw Newton
stepping of the same model (same solver, dt, substeps) and MuJoCo's C engine (``mujoco.rollout`` thread pool) on
the same MJCF, integrator and solver stated; on the CPU, then through benchmarks/mujoco_batch.py: horde on MuJoCo's
C engine (``task.sim.solver=mujoco-c``, the CPU default) against raw ``mujoco.batch`` of the same model and horde
on MuJoCo-Warp. ``--num-envs`` overrides both size lists.

For cartpole: horde with graph replay, horde eager (Python kernel launches), on a CPU horde's one-env-per-thread
kernels (the ones CUDA runs) replayed without the CPU block path, and a plain numpy batched cart-pole
(benchmarks/numpy_cartpole.py) with the same dynamics, rewards and resets. Each figure is the median
of ``--repeats`` timed windows; the implementations' windows alternate (one window of each, then the next round)
so that load from other processes drifts over all of them alike. Actions are fixed random values in [-1, 1]
held in device memory. ``--cpu-threads`` splits horde's CPU step over that many OS threads (``TaskConfig``).
With ``--json`` each line is one JSON object with keys task, impl, device, num_envs, env_steps_per_s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from numpy_cartpole import NumpyCartpole  # noqa: E402

from horde.envs import get_task, make  # noqa: E402
from horde.envs.blocks import BlockStepEnv  # noqa: E402


def calibrate(step, sync, seconds: float) -> int:
    """Steps that take about ``seconds`` (after a warm-up)."""
    for _ in range(3):
        step()
    sync()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds / 4 or n < 3:
        step()
        n += 1
    sync()
    per_step = (time.perf_counter() - t0) / n
    return max(3, int(seconds / max(per_step, 1e-9)))


def interleaved_rates(steppers: dict, num_envs: int, *, seconds: float, repeats: int) -> dict[str, float]:
    """Median env-steps/s of each ``impl -> (step, sync)`` over ``repeats`` rounds of one timed window each."""
    counts = {impl: calibrate(step, sync, seconds) for impl, (step, sync) in steppers.items()}
    rates = {impl: [] for impl in steppers}
    for _ in range(repeats):
        for impl, (step, sync) in steppers.items():
            steps = counts[impl]
            t0 = time.perf_counter()
            for _ in range(steps):
                step()
            sync()
            rates[impl].append(num_envs * steps / (time.perf_counter() - t0))
    return {impl: statistics.median(r) for impl, r in rates.items()}


def make_stepper(task: str, impl: str, num_envs: int, device: str, cpu_threads: int):
    """``(step, sync)`` for one implementation; the env is kept alive by the closure."""
    spec = get_task(task)
    if impl == "numpy":
        env = NumpyCartpole(spec.config, num_envs, seed=0)
        actions = np.random.default_rng(0).uniform(-1, 1, (num_envs, 1)).astype(np.float32)
        return (lambda: env.step(actions)), (lambda: None)
    cfg = type(spec.config)(**{**spec.config.__dict__, "use_graph": impl != "horde-eager", "cpu_threads": cpu_threads})
    env = make(task, num_envs=num_envs, device=device, seed=0, config=cfg)
    if impl == "horde-per-env":  # the one-env-per-thread kernels CUDA runs, replayed on the CPU (no block path)
        env._configure_cpu_path(blocks=False)
    g = torch.Generator(device="cpu").manual_seed(0)
    actions = (torch.rand(num_envs, env.num_actions, generator=g) * 2 - 1).to(env.device)
    sync = torch.cuda.synchronize if env.dev.is_cuda else (lambda: None)
    return (lambda: env.step(actions)), sync


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--quick", action="store_true", help="few sizes, short windows (CI smoke)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--tasks", nargs="+", default=["cartpole", "ant", "humanoid", "quadruped"])
    ap.add_argument("--num-envs", nargs="+", type=int, default=None,
                    help="default: 1 64 512 4096 16384 (classic), 64 512 4096 (articulated)")
    ap.add_argument("--seconds", type=float, default=0.5, help="length of one timed window")
    ap.add_argument("--repeats", type=int, default=5, help="timed windows per figure (median reported)")
    ap.add_argument("--cpu-threads", type=int, default=1, help="OS threads for horde's CPU step (TaskConfig)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    import newton_throughput

    articulated = [t for t in args.tasks if t in newton_throughput.BENCH_TASKS]
    classic = [t for t in args.tasks if t not in articulated]
    sizes, seconds, repeats = args.num_envs or [1, 64, 512, 4096, 16384], args.seconds, args.repeats
    if args.quick:
        sizes, seconds, repeats = [64, 4096], 0.1, 3
    rows = []
    for task in classic:
        blocks = issubclass(get_task(task).env_cls, BlockStepEnv)
        per_env = ["horde-per-env"] if args.device == "cpu" and blocks else []
        impls = ["horde-graph", "horde-eager", *per_env] + (["numpy"] if task.startswith("cartpole") else [])
        for n in sizes:
            steppers = {impl: make_stepper(task, impl, n, args.device if impl != "numpy" else "cpu", args.cpu_threads)
                        for impl in impls}
            rates = interleaved_rates(steppers, n, seconds=seconds, repeats=repeats)
            del steppers
            for impl in impls:
                row = {"task": task, "impl": impl, "device": args.device if impl != "numpy" else "cpu",
                       "num_envs": n, "env_steps_per_s": round(rates[impl], 1), "repeats": repeats}
                rows.append(row)
                if args.json:
                    print(json.dumps(row), flush=True)
    if not args.json:
        print(f"{'task':<18}{'impl':<15}{'device':<8}{'num_envs':>9}{'env-steps/s':>15}{'x numpy':>9}")
    ref = {(r["task"], r["num_envs"]): r["env_steps_per_s"] for r in rows if r["impl"] == "numpy"}
    for r in rows:
        ratio = r["env_steps_per_s"] / ref[(r["task"], r["num_envs"])] if (r["task"], r["num_envs"]) in ref else None
        if args.json:
            if ratio is not None and r["impl"] == "horde-graph":
                print(json.dumps({"task": r["task"], "impl": "ratio:horde-graph/numpy", "device": r["device"],
                                  "num_envs": r["num_envs"], "ratio": round(ratio, 2)}))
        else:
            rs = f"{ratio:9.1f}" if ratio is not None else f"{'-':>9}"
            print(f"{r['task']:<18}{r['impl']:<15}{r['device']:<8}{r['num_envs']:>9}{r['env_steps_per_s']:>15,.0f}{rs}")
    if articulated:
        if args.quick:  # the quick smoke keeps to one articulated task (newton_throughput --quick covers two)
            articulated = articulated[:1]
        sys.stdout.flush()
        rc = newton_throughput.main(
            ["--tasks", *articulated, "--device", args.device]
            + (["--json"] if args.json else []) + (["--quick"] if args.quick else [])
            + (["--num-envs", *map(str, args.num_envs)] if args.num_envs else []))
        if rc == 0 and args.device == "cpu":  # the CPU backend: horde on MuJoCo's C engine, raw batch, MuJoCo-Warp
            import mujoco_batch

            sys.stdout.flush()
            rc = mujoco_batch.main(["--tasks", *articulated] + (["--json"] if args.json else [])
                                   + (["--quick"] if args.quick else [])
                                   + (["--num-envs", *map(str, args.num_envs)] if args.num_envs else []))
        return rc
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
