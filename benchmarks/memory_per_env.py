"""Memory per env of every task, the figures behind the memory guard (``horde.train.memory.TASK_MEMORY``).

    python benchmarks/memory_per_env.py [--tasks a,b] [--sizes 16,528] [--json] [--quick]

For each task and each size, a fresh process composes ``horde train task=<task> num_envs=<n>`` (tuned config
included), builds the envs, steps them with random actions (200 steps on the CPU, 8 for the CUDA figure), and
reports:

- ``cpu_rss``: the process's peak resident memory (``ru_maxrss``) on the CPU with the task's default backend
  (``auto``: MuJoCo's C engine for the Newton tasks, whose per-world arena is touched as contacts come: after 8
  steps a quadruped had touched 26 KB per env, after 200 steps 37 KB);
- ``device_bytes``: the bytes of every live Warp array and torch tensor (their union: views and zero-copy tensors
  counted once) when built with the backend a CUDA run gets (MuJoCo-Warp for the Newton tasks, on Warp's CPU
  backend here: its arrays have the same sizes on a GPU; a task without a solver to swap, cartpole or the pendulum,
  takes the CPU run's figure: 148 B/env for cartpole, where a second build stepped 8 times gave 152);
- ``obs``: the floats per env of every observation group (policy, critic, teacher), ``actions``.

The per-env figure is the difference between two sizes over the difference in envs, so the interpreter, the
imports and the compiled kernels cancel. Training adds the rollout storage and the update's working set, which
:func:`horde.train.memory.estimate` derives from the config. ``--check`` also trains two sizes of a task for 2
iterations and prints the peak resident memory beside the estimate.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

QUICK_TASKS = ("cartpole",)


def _child(task: str, n: int, backend: str) -> dict:
    """One measurement in this (fresh) process."""
    import gc
    import resource
    import warnings

    warnings.simplefilter("ignore")  # gc walks over deprecated module attributes

    import torch
    import warp as wp

    from horde.envs import make
    from horde.train.config import compose

    overrides = [f"task={task}", f"num_envs={n}"]
    cfg, name, _ = compose(overrides)
    if backend == "cuda-like" and hasattr(cfg.task, "sim"):
        cfg.task.sim.solver = "mujoco"  # what `auto` is on CUDA: MuJoCo-Warp
    env = make(name, num_envs=n, device="cpu", seed=0, config=cfg.task)
    g = torch.Generator().manual_seed(0)
    env.reset()
    for _ in range(200 if backend == "cpu" else 8):
        env.step(torch.rand(n, env.num_actions, generator=g) * 2 - 1)
    gc.collect()
    spans = []
    for obj in gc.get_objects():
        try:
            if isinstance(obj, wp.array) and obj.ptr and getattr(obj, "capacity", 0):
                spans.append((int(obj.ptr), int(obj.ptr) + int(obj.capacity)))
            elif isinstance(obj, torch.Tensor) and obj.device.type == "cpu":
                st = obj.untyped_storage()
                if st.nbytes():
                    spans.append((st.data_ptr(), st.data_ptr() + st.nbytes()))
        except Exception:  # noqa: BLE001,S112 - objects half torn down, arrays without storage
            continue
    spans.sort()
    total, end = 0, 0
    for a, b in spans:  # union of the intervals
        if b > end:
            total += b - max(a, end)
            end = b
    obs = env.obs_dim + (len(env.critic_names) if env.critic_names else 0) + (
        env.teacher_obs.shape[1] if getattr(env, "teacher_obs", None) is not None else 0)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tape = 0
    if backend == "cpu" and env_is_differentiable(name):
        from horde.envs import make_diff_task

        tape = int(make_diff_task(name).rollout.bytes_per_env_step)
    return {"task": task, "num_envs": n, "backend": backend, "cpu_rss": rss, "device_bytes": total, "obs": obs,
            "actions": env.num_actions, "tape": tape}


def has_solver(task: str) -> bool:
    """Whether ``task`` has a ``sim`` config, whose solver a CUDA run sets otherwise than the CPU's default."""
    from horde.envs import get_task

    return hasattr(get_task(task).config, "sim")


def env_is_differentiable(task: str) -> bool:
    from horde.envs import get_task

    return bool(get_task(task).differentiable)


def _measure(task: str, n: int, backend: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", task, str(n), backend], capture_output=True,
                          text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{task} n={n} {backend}: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _train_rss(task: str, n: int) -> int:
    """Peak resident memory of ``horde train task=<task> num_envs=<n> max_iterations=2`` (a child process)."""
    import resource
    import tempfile

    code = ("import resource, sys; from horde.cli import main; rc = main(sys.argv[1:]); "
            "print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024); sys.exit(rc)")
    with tempfile.TemporaryDirectory() as root:
        proc = subprocess.run([sys.executable, "-c", code, "train", f"task={task}", f"num_envs={n}",
                               "max_iterations=2", f"run_root={root}"], capture_output=True, text=True, timeout=3600)
    del resource
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RSS ")]
    if proc.returncode != 0 or not line:
        raise RuntimeError(f"train {task} n={n}: {proc.stderr.strip().splitlines()[-1:]}")
    return int(line[0].split()[1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default="")
    ap.add_argument("--sizes", default="16,528")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cpu-only", action="store_true", help="skip the CUDA figure (cuda_bytes_per_env: null)")
    ap.add_argument("--quick", action="store_true", help="cartpole only, 16 and 272 envs")
    ap.add_argument("--check", default="", help="tasks to train at both sizes for 2 iterations, against the estimate "
                                                "(alone: no per-env measurement)")
    ap.add_argument("--child", nargs=3, metavar=("TASK", "N", "BACKEND"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child[0], int(args.child[1]), args.child[2])))
        return 0

    from horde.envs import task_names

    tasks = (list(QUICK_TASKS) if args.quick else [t for t in args.tasks.split(",") if t]
             or ([] if args.check else task_names()))
    small, large = (16, 272) if args.quick else tuple(int(s) for s in args.sizes.split(","))
    for task in tasks:
        cpu = [_measure(task, n, "cpu") for n in (small, large)]
        if args.cpu_only:
            dev = None
        elif has_solver(task):
            dev = [_measure(task, n, "cuda-like") for n in (small, large)]
        else:  # no solver to swap (cartpole, pendulum): a CUDA run builds these very arrays
            dev = cpu
        row = {"task": task, "sizes": [small, large],
               "cpu_bytes_per_env": round((cpu[1]["cpu_rss"] - cpu[0]["cpu_rss"]) / (large - small)),
               "cpu_tensor_bytes_per_env": round((cpu[1]["device_bytes"] - cpu[0]["device_bytes"]) / (large - small)),
               "cuda_bytes_per_env": dev and round((dev[1]["device_bytes"] - dev[0]["device_bytes"]) / (large - small)),
               "obs": cpu[0]["obs"], "actions": cpu[0]["actions"], "tape": cpu[0]["tape"]}
        print(json.dumps(row) if args.json else
              f"{task:<28} cpu {row['cpu_bytes_per_env']:>9,} B/env (tensors {row['cpu_tensor_bytes_per_env']:>9,})  "
              f"cuda {row['cuda_bytes_per_env'] or 0:>9,} B/env  obs {row['obs']}  actions {row['actions']}  "
              f"tape {row['tape']:,} B/env/step", flush=True)
    for task in [t for t in args.check.split(",") if t]:
        from horde.train.config import compose
        from horde.train.memory import estimate

        rss = [_train_rss(task, n) for n in (small, large)]
        est = [estimate(compose([f"task={task}", f"num_envs={n}"])[0], task, device="cpu") for n in (small, large)]
        row = {"task": task, "check": "train 2 iterations", "sizes": [small, large],
               "measured_bytes_per_env": round((rss[1] - rss[0]) / (large - small)),
               "estimated_bytes_per_env": round((est[1].total - est[0].total) / (large - small))}
        print(json.dumps(row) if args.json else
              f"{task:<28} training: measured {row['measured_bytes_per_env']:,} B/env, "
              f"estimated {row['estimated_bytes_per_env']:,} B/env", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
