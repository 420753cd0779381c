"""Env steps and wall time to a return threshold: SHAC (gradients through the simulator) vs PPO, on CPU.

    python benchmarks/diff_vs_ppo.py [--json] [--quick] [--seeds 0 1 2] [--tasks pendulum cartpole-swingup]
                                     [--num-envs 8]

For each differentiable task, PPO and SHAC train with the same number of envs and the same seeds, each with its
tuned hyperparameters (configs/tuned/<task>_<algo>.yaml; ``num_envs`` overridden to the common value). Every
``EVAL_EVERY`` env steps the deterministic policy (normalizer -> MLP -> mean -> clip, as ``horde play`` runs it)
plays ``EVAL_EPISODES`` full episodes in the RL env core (Warp kernels, not the differentiable model) with a fixed
seed; a run reaches the threshold at the first evaluation whose mean return is >= the task's threshold, and stops
there. Reported per run: env steps and training wall time (evaluation excluded) at that point, or "not reached"
within the budget. Thresholds are the same for both learners:

- pendulum: mean return >= -400 (a random policy scores about -1150, swing-up-and-hold about -150 to -200);
- cartpole-swingup: mean return >= 200 (hanging still scores about 0; 500 steps of an upright pole at most ~480).

Also printed: memory that a differentiable rollout keeps per env per control step until backward (the Warp
buffers counted by ``DiffRollout.bytes_per_env_step``, and the resident-memory growth of a held rollout).
With ``--json`` every line is a JSON object: ``kind`` = run | summary | ratio | memory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch

THRESHOLD = {"pendulum": -400.0, "cartpole-swingup": 200.0}
BUDGET_STEPS = {"pendulum": 100_000, "cartpole-swingup": 48_000}
EVAL_EVERY = 2048
EVAL_EPISODES = 32
EVAL_SEED = 999


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure_memory(task: str, *, num_envs: int, steps: int) -> dict:
    """Bytes per env per step that a taped rollout holds until backward (counted, and measured as RSS growth)."""
    import gc

    from horde.sim import make_diff_task

    model = make_diff_task(task)
    g = torch.Generator().manual_seed(0)
    s0 = model.sample_state(num_envs, g).requires_grad_(True)
    actions = (torch.rand(steps, num_envs, model.rollout.action_dim, generator=g) * 2 - 1).requires_grad_(True)
    model.rollout.step(s0, actions[0]).sum().backward()  # compile and warm the allocator outside the window
    gc.collect()
    before = _rss_bytes()
    state = s0
    for t in range(steps):
        state = model.rollout.step(state, actions[t])
    held = _rss_bytes() - before
    state.sum().backward()
    return {"kind": "memory", "task": task, "num_envs": num_envs, "steps": steps,
            "counted_bytes_per_env_step": model.rollout.bytes_per_env_step,
            "rss_bytes_per_env_step": held / (num_envs * steps)}


def train_to_threshold(task: str, algo: str, seed: int, *, num_envs: int, budget_steps: int,
                       overrides: tuple[str, ...] = (), eval_every: int = EVAL_EVERY) -> dict:
    """Train until the deterministic evaluation reaches the threshold or the env-step budget runs out.

    ``overrides`` are extra Hydra overrides (for sweeps); the benchmark itself passes none."""
    from horde.policies import InferencePolicy
    from horde.train.config import compose
    from horde.train.evaluate import evaluate
    from horde.train.ppo import PPOTrainer
    from horde.train.shac import SHACTrainer

    root = tempfile.mkdtemp(prefix="diff_vs_ppo_")
    probe, _, _ = compose([f"task={task}", f"algo={algo}", *overrides])
    steps_per_iter = num_envs * (probe.algo.horizon if algo == "shac" else probe.algo.num_steps_per_env)
    iters = max(budget_steps // steps_per_iter, 1)
    cfg, name, raw = compose([f"task={task}", f"algo={algo}", f"seed={seed}", f"num_envs={num_envs}",
                              f"max_iterations={iters}", f"save_interval={iters + 1}", f"run_root={root}", *overrides])
    trainer = (SHACTrainer if algo == "shac" else PPOTrainer)(cfg, name, raw, quiet=True)
    actor = (lambda: trainer.actor) if algo == "shac" else (lambda: trainer.alg.get_policy())
    rec = {"reached": False, "env_steps": None, "train_seconds": None, "best_return": float("-inf"),
           "evals": [], "eval_seconds": 0.0}
    t0 = time.perf_counter()
    next_eval = eval_every

    def on_iteration(tr) -> bool:
        nonlocal next_eval
        steps = tr.iteration * steps_per_iter
        if steps < next_eval and tr.iteration < iters:
            return False
        while next_eval <= steps:
            next_eval += eval_every
        e0 = time.perf_counter()
        ret = evaluate(InferencePolicy(actor()), name, cfg.task, episodes=EVAL_EPISODES, seed=EVAL_SEED).summary()
        rec["eval_seconds"] += time.perf_counter() - e0
        r = ret["mean_return"]
        rec["evals"].append((steps, round(r, 1)))
        rec["best_return"] = max(rec["best_return"], r)
        if r >= THRESHOLD[task]:
            rec.update(reached=True, env_steps=steps,
                       train_seconds=time.perf_counter() - t0 - rec["eval_seconds"])
            return True
        return False

    summary = trainer.learn(on_iteration)
    return {"kind": "run", "task": task, "algo": algo, "seed": seed, "num_envs": num_envs,
            "threshold": THRESHOLD[task], "reached": rec["reached"], "env_steps": rec["env_steps"],
            "train_seconds": rec["train_seconds"], "best_return": rec["best_return"],
            "last_return": rec["evals"][-1][1] if rec["evals"] else None,
            "steps_trained": summary["env_steps"], "seconds_trained": summary["train_seconds"] - rec["eval_seconds"],
            "curve": rec["evals"]}


def _median(values):
    return statistics.median(values) if values else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--quick", action="store_true", help="CI smoke: one seed, tiny budgets (< 60 s)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--tasks", nargs="+", default=list(THRESHOLD))
    ap.add_argument("--num-envs", type=int, default=8)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    seeds = [0] if args.quick else args.seeds
    budget = {t: (6144 if args.quick else BUDGET_STEPS[t]) for t in args.tasks}

    def emit(row: dict, text: str) -> None:
        print(json.dumps(row) if args.json else text, flush=True)

    t_all = time.perf_counter()
    for task in args.tasks:
        mem = measure_memory(task, num_envs=256 if args.quick else 4096, steps=32 if args.quick else 100)
        emit(mem, f"[{task}] differentiable rollout memory: {mem['counted_bytes_per_env_step']} B/env/step counted "
                  f"(Warp values + grads), {mem['rss_bytes_per_env_step']:.0f} B/env/step RSS growth "
                  f"({mem['num_envs']} envs x {mem['steps']} steps held)")
    results: dict[tuple[str, str], list[dict]] = {}
    for task in args.tasks:
        for algo in ("ppo", "shac"):
            for seed in seeds:
                row = train_to_threshold(task, algo, seed, num_envs=args.num_envs, budget_steps=budget[task])
                results.setdefault((task, algo), []).append(row)
                if args.json:
                    emit(row, "")
                else:
                    got = (f"reached {row['threshold']:g} at {row['env_steps']:,} env steps, "
                           f"{row['train_seconds']:.1f} s" if row["reached"] else
                           f"not reached in {row['steps_trained']:,} env steps ({row['seconds_trained']:.1f} s)")
                    emit(row, f"[{task}] {algo:<4} seed {seed}: {got}; best eval return {row['best_return']:.1f}")
    for task in args.tasks:
        med = {}
        for algo in ("ppo", "shac"):
            rows = results[(task, algo)]
            hit = [r for r in rows if r["reached"]]
            med[algo] = _median([r["env_steps"] for r in hit]) if len(hit) == len(rows) else None
            row = {"kind": "summary", "task": task, "algo": algo, "num_envs": args.num_envs,
                   "threshold": THRESHOLD[task], "runs": len(rows), "runs_reached": len(hit),
                   "median_env_steps": _median([r["env_steps"] for r in hit]),
                   "median_train_seconds": _median([r["train_seconds"] for r in hit]),
                   "env_steps_per_run": [r["env_steps"] for r in rows],
                   "train_seconds_per_run": [None if r["train_seconds"] is None else round(r["train_seconds"], 1)
                                             for r in rows]}
            emit(row, f"[{task}] {algo:<4} {len(hit)}/{len(rows)} seeds reached {THRESHOLD[task]:g}; env steps "
                      f"{row['env_steps_per_run']} (median of reached {row['median_env_steps']}), train s "
                      f"{row['train_seconds_per_run']}")
        ratio = med["ppo"] / med["shac"] if med["ppo"] and med["shac"] else None
        emit({"kind": "ratio", "task": task, "ppo_over_shac_median_env_steps": ratio,
              "shac_5x_fewer_env_steps": bool(ratio is not None and ratio >= 5.0)},
             f"[{task}] PPO / SHAC median env steps to threshold: "
             f"{'n/a (not every seed of both reached it)' if ratio is None else f'{ratio:.2f}x'}")
    if not args.json:
        print(f"total wall time {time.perf_counter() - t_all:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
