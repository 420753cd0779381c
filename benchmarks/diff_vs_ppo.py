"""Env steps and wall time to a return threshold: SHAC (gradients through the simulator) vs PPO, on CPU.

    python benchmarks/diff_vs_ppo.py [--json] [--quick] [--seeds 0 1 2] [--tasks pendulum cartpole-swingup reach]
                                     [--num-envs N] [--ppo-sweep] [--learners shac]
                                     [--shac-overrides algo.horizon=16 ...] [--eval-every N]

For each differentiable task, PPO and SHAC train with the same number of envs (``NUM_ENVS[task]``) and the same
seeds. SHAC uses its tuned config (configs/tuned/<task>_shac.yaml). PPO uses configs/tuned/<task>_ppo.yaml with
``PPO_OVERRIDES[task]``: the best median of the PPO settings in ``PPO_CANDIDATES`` measured at that env count
(``--ppo-sweep`` measures them again and prints each one's median). On a common grid of ``EVAL_EVERY`` env steps
(the first iteration end at or past each grid point, for both learners, so that neither gets more chances per env
step to cross the line) the deterministic policy (normalizer -> MLP -> mean -> clip, as ``horde play`` runs it)
plays ``EVAL_EPISODES`` full episodes in the RL env core (Warp kernels, not the differentiable model) with a fixed
seed. A run reaches the threshold at the first evaluation whose mean return is >= the task's threshold; a
momentary crossing counts as measured, and training then goes on for ``HOLD_EVALS`` more evaluations (outside the
reported figures) so that each run row says whether the policy stayed above the line. Reported per run: env steps
and training wall time (evaluation excluded) at the reach, or "not reached" within the budget; per task the median
over seeds, a seed that does not reach counting as infinite.

Thresholds are the same for both learners:

- pendulum: mean return >= -400. A random policy scores about -1,150; braking or holding a constant torque
  -1,100 to -1,600; the swing-up-and-hold policies that both learners end with score -150 to -250.
- cartpole-swingup: mean return >= 200. Hanging still scores about 0; spinning the pole over the top 120-190;
  200 needs the pole slowed near the top at least part of the time; swing-up-and-hold scores 300-480.

Env counts: SHAC takes one actor step per rollout of ``num_envs x horizon`` env steps. On the pendulum it needed
about 100 actor steps at 64 envs and more (so its env steps grow with the env count from there: 64 x 1 median 6,144,
128 x 1 12,800, 256 x 1 24,064) and about 6,000 env steps below that (8 x 4 ~12k; 32 x 1 6,144, with the critic
also fitting the last 8 rollouts 3,584). PPO, tuned at each count, needed 11,264 at 32 envs (8 steps per env, 20
epochs, a critic in units of 100: ``algo.policy.value_scale=100``), 19,456 at 64 and 29,696 at 128. The pendulum
runs at 32 envs, where SHAC's figure is lowest.
On the swing-up SHAC reached 200 in about 20-40k env steps at 8 envs and worse at 64 or more, where it spins
the pole and does not learn to catch it; PPO's best at 8 envs needed 17k. So the swing-up runs at 8 envs.
reach (threshold 60: the untrained deterministic policies score -30 to -70) runs at 64 envs on Featherstone for
both learners; SHAC with a 4-step horizon and random initial episode clocks (configs/tuned/reach_shac.yaml).

Measured 2026-11-23 on the 2-core CPU (12.5 minutes in all), env steps to the threshold, seeds 0 / 1 / 2:
pendulum PPO 11,264 / 11,264 / 25,600, SHAC 3,584 / 5,120 / 3,584 (3.14x; SHAC's crossings did not hold, PPO's
mostly did); swing-up PPO 17,408 / 39,936 / 10,752, SHAC 43,008 / 13,312 / 22,528 (0.77x); reach PPO 181,248 /
294,912 / 258,048, SHAC 12,288 / 12,288 / 12,288 (21.0x in env steps; 70.5 s against 17.0 s of training, 4.2x;
SHAC stayed above 60 in all 12 evaluations after its reaches, scoring 70-168; PPO in 6 of 12, 55-75). Issue #4's
5x is met on reach.

Also printed: memory that a differentiable rollout keeps per env per control step until backward (the Warp
buffers counted by ``DiffRollout.bytes_per_env_step``, and the resident-memory growth of a held rollout).
With ``--json`` every line is a JSON object: ``kind`` = memory | run | summary | ratio | curves (the last one
holds every evaluation as (training seconds, env steps, return), the layout ``run_all.py`` plots); a run row's
``curve`` lists (env steps, training seconds, return).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scratch import scratch_dir  # noqa: E402  (training runs' roots, removed at exit)

THRESHOLD = {"pendulum": -400.0, "cartpole-swingup": 200.0, "reach": 60.0}
BUDGET_STEPS = {"pendulum": 100_000, "cartpole-swingup": 60_000, "reach": 400_000}
NUM_ENVS = {"pendulum": 32, "cartpole-swingup": 8, "reach": 64}
"""Env count per task, the same for both learners (``--num-envs`` sets one count for every task)."""
TASK_OVERRIDES = {"reach": ("task.sim.solver=featherstone",)}
"""Task settings both learners train and are evaluated with: reach's differentiable model is the arm on
Featherstone (MuJoCo-Warp, the env's default, gives no gradients), so the env runs Featherstone too."""
EVAL_EVERY_TASK = {"reach": 4096}
"""Evaluation grid per task where it differs from ``EVAL_EVERY`` (a reach evaluation builds no env but plays 200
steps of the Featherstone arm, about a second: PPO's ~200k steps would otherwise spend most of the run there)."""
MEMORY_SIZE = {"reach": (256, 32)}
"""(envs, steps) of the memory measurement where 4096 x 100 would not fit (reach holds ~116 KB per env-step)."""
EVAL_EVERY = 512
EVAL_EPISODES = 32
EVAL_SEED = 999
HOLD_EVALS = 4
"""After a reach, training goes on for this many more evaluations (not counted in the reach's figures); the run
row says how many of them stayed at or above the threshold, so a momentary crossing shows as one."""

_T = "algo.num_steps_per_env"
_E = "algo.num_learning_epochs"
_V = "algo.policy.value_scale"
PPO_CANDIDATES: dict[str, list[tuple[str, ...]]] = {
    # Measured at NUM_ENVS[task] envs, seeds 0 / 1 / 2, this script's evaluation grid (2026-11, loaded 2-core CPU):
    # env steps to the threshold, then the median (a seed that did not reach counts as infinite).
    "pendulum": [
        (),                                # 24,576 / 48,128 / 36,864 -> 36,864 (T=32, lr 1e-3, gamma 0.98, 5 epochs)
        (f"{_T}=8",),                      # not in 150k / 46,080 / 85,504 -> 85,504
        (f"{_V}=100",),                    # 18,432 / 26,624 / 26,624 -> 26,624
        (f"{_T}=4", f"{_V}=100"),          # 72,704 / 54,272 / 22,016 -> 54,272
        (f"{_T}=8", f"{_V}=100"),          # 95,232 / not in 150k / 31,744 -> 95,232
        (f"{_T}=16", f"{_V}=100"),         # 12,288 / 33,280 / 20,992 -> 20,992
        (f"{_T}=8", f"{_V}=10"),           # not in 150k / 18,944 / 30,720 -> 30,720
        (f"{_T}=8", f"{_E}=10", f"{_V}=30"),    # not in 150k / 18,944 / 11,264 -> 18,944
        (f"{_T}=8", f"{_E}=10", f"{_V}=100"),   # 18,944 / 25,600 / 19,456 -> 19,456
        (f"{_T}=8", f"{_E}=10", f"{_V}=300"),   # 17,920 / 29,696 / 23,552 -> 23,552
        (f"{_T}=12", f"{_E}=10", f"{_V}=100"),  # 11,520 / 16,512 / 13,056 -> 13,056
        (f"{_T}=16", f"{_E}=10", f"{_V}=100"),  # 11,264 / 27,648 / 20,480 -> 20,480
        (f"{_T}=4", f"{_E}=20", f"{_V}=100"),   # 24,576 / 23,040 / 15,360 -> 23,040
        (f"{_T}=8", f"{_E}=20", f"{_V}=100"),   # 11,264 / 11,264 / 25,600 -> 11,264 (best)
        (f"{_T}=16", f"{_E}=20", f"{_V}=100"),  # 6,144 / 12,288 / 13,824 -> 12,288
        (f"{_T}=8", f"{_E}=20", "algo.num_mini_batches=8", f"{_V}=100"),  # 14,336 / 11,264 / 17,408 -> 14,336
        (f"{_T}=8", f"{_E}=40", f"{_V}=100"),   # 15,872 / 17,920 / 12,288 -> 15,872
    ],
    "cartpole-swingup": [
        (),                                # 54,784 / 33,792 / 36,864 -> 36,864 (T=32, lr 1e-3, 5 epochs)
        (f"{_T}=16",),                     # not in 60k / 59,392 / 56,832 -> 59,392
        (f"{_T}=64",),                     # 17,408 / 39,936 / 10,752 -> 17,408 (best)
        ("algo.learning_rate=3e-4",),      # 35,328 / 56,320 / 31,232 -> 35,328
        (f"{_E}=10",),                     # 29,184 / 29,184 / 35,840 -> 29,184
        (f"{_T}=64", f"{_E}=10"),          # 53,248 / 15,872 / 28,672 -> 28,672
        (f"{_V}=100",),                    # not in 60k / 48,640 / 46,592 -> 48,640
        (f"{_T}=64", f"{_V}=100"),         # 45,056 / 23,040 / 49,664 -> 45,056
    ],
    # reach at 64 envs, seed 0 only (a PPO run to 60 takes 2-3 minutes here): env steps to 60, evaluated every
    # 8,192 env steps for the first four and 4,096 for the last two.
    "reach": [
        (),                                # 205,824 (T=24, lr 1e-3, 5 epochs, 4 mini-batches; best 84 in 400k)
        (f"{_V}=100",),                    # 181,248 (best 99 in 400k) (best)
        (f"{_V}=100", f"{_E}=10"),         # 221,184
        (f"{_V}=100", f"{_T}=48"),         # 270,336
        (f"{_V}=100", "algo.num_mini_batches=8"),      # 262,656
        (f"{_V}=100", "algo.random_episode_start=true"),  # 267,264
    ],
}
"""PPO settings tried on top of configs/tuned/<task>_ppo.yaml at ``NUM_ENVS[task]`` envs (``--ppo-sweep`` reruns
them); the figures in the comments are env steps to the threshold. At 64 envs on the pendulum the best of 21 was
19,456 (T=16, 10 epochs, value_scale 100), at 128 envs 29,696 (T=8, value_scale 100)."""
PPO_OVERRIDES: dict[str, tuple[str, ...]] = {"pendulum": (f"{_T}=8", f"{_E}=20", f"{_V}=100"),
                                             "cartpole-swingup": (f"{_T}=64",), "reach": (f"{_V}=100",)}
"""PPO's best measured setting per task (the lowest median in ``PPO_CANDIDATES``); the output names it."""


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure_memory(task: str, *, num_envs: int, steps: int) -> dict:
    """Bytes per env per step that a taped rollout holds until backward (counted, and measured as RSS growth)."""
    import gc

    from horde.envs import make_diff_task

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


_EVAL_ENVS: dict[str, object] = {}


def train_to_threshold(task: str, algo: str, seed: int, *, num_envs: int, budget_steps: int,
                       overrides: tuple[str, ...] = (), eval_every: int | None = None) -> dict:
    """Train until the deterministic evaluation reaches the threshold or the env-step budget runs out.

    ``overrides`` are extra Hydra overrides on top of the tuned config (PPO's best setting, or a sweep's), after
    the task's own (``TASK_OVERRIDES``)."""
    from horde.envs import make
    from horde.policies import InferencePolicy
    from horde.train.config import compose
    from horde.train.evaluate import evaluate
    from horde.train.ppo import PPOTrainer
    from horde.train.shac import SHACTrainer

    eval_every = eval_every or EVAL_EVERY_TASK.get(task, EVAL_EVERY)
    overrides = (*TASK_OVERRIDES.get(task, ()), *overrides)
    root = scratch_dir("diff_vs_ppo_")
    probe, _, _ = compose([f"task={task}", f"algo={algo}", *overrides])
    steps_per_iter = num_envs * (probe.algo.horizon if algo == "shac" else probe.algo.num_steps_per_env)
    iters = max(budget_steps // steps_per_iter, 1)
    cfg, name, raw = compose([f"task={task}", f"algo={algo}", f"seed={seed}", f"num_envs={num_envs}",
                              f"max_iterations={iters}", f"save_interval={iters + 1}", f"run_root={root}", *overrides])
    trainer = (SHACTrainer if algo == "shac" else PPOTrainer)(cfg, name, raw, quiet=True)
    actor = (lambda: trainer.actor) if algo == "shac" else (lambda: trainer.alg.get_policy())
    rec = {"reached": False, "env_steps": None, "train_seconds": None, "best_return": float("-inf"),
           "evals": [], "after": [], "eval_seconds": 0.0}
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
        train_s = e0 - t0 - rec["eval_seconds"]
        key = repr(cfg.task)  # one evaluation env per task config, reused (the same episodes as a fresh one)
        if key not in _EVAL_ENVS:
            _EVAL_ENVS[key] = make(name, num_envs=EVAL_EPISODES, seed=EVAL_SEED, config=cfg.task)
        ret = evaluate(InferencePolicy(actor()), name, cfg.task, episodes=EVAL_EPISODES, seed=EVAL_SEED,
                       core=_EVAL_ENVS[key]).summary()
        rec["eval_seconds"] += time.perf_counter() - e0
        r = ret["mean_return"]
        if rec["reached"]:  # the evaluations after a reach only say whether it held
            rec["after"].append(round(r, 1))
            return len(rec["after"]) >= HOLD_EVALS
        rec["evals"].append((steps, round(train_s, 2), round(r, 1)))
        rec["best_return"] = max(rec["best_return"], r)
        if r >= THRESHOLD[task]:
            rec.update(reached=True, env_steps=steps, train_seconds=train_s)
            return HOLD_EVALS == 0 or tr.iteration >= iters
        return False

    summary = trainer.learn(on_iteration)
    return {"kind": "run", "task": task, "algo": algo, "seed": seed, "num_envs": num_envs,
            "threshold": THRESHOLD[task], "overrides": list(overrides), "reached": rec["reached"],
            "env_steps": rec["env_steps"], "train_seconds": rec["train_seconds"], "best_return": rec["best_return"],
            "returns_after_reach": rec["after"],
            "stayed_above": sum(r >= THRESHOLD[task] for r in rec["after"]) if rec["reached"] else None,
            "last_return": rec["evals"][-1][2] if rec["evals"] else None,
            "steps_trained": rec["env_steps"] if rec["reached"] else summary["env_steps"],
            "seconds_trained": rec["train_seconds"] if rec["reached"] else
            summary["train_seconds"] - rec["eval_seconds"],
            "curve": rec["evals"]}


def median_steps(rows: list[dict]) -> float | None:
    """Median env steps to the threshold over seeds, a seed that did not reach counting as infinite; None if
    that median is not finite."""
    m = statistics.median([r["env_steps"] if r["reached"] else math.inf for r in rows]) if rows else math.inf
    return None if math.isinf(m) else m


def _median(values):
    return statistics.median(values) if values else None


def _describe(overrides) -> str:
    return ", ".join(overrides) if overrides else "tuned config as is"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--quick", action="store_true", help="CI smoke: one seed, 1,024 env steps a run, 64 envs x 16 steps for the memory figure (~25 s)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--tasks", nargs="+", default=list(THRESHOLD))
    ap.add_argument("--num-envs", type=int, default=None, help="one env count for every task (default: NUM_ENVS)")
    ap.add_argument("--ppo-sweep", action="store_true",
                    help="first measure every PPO candidate setting (PPO_CANDIDATES) and print its median")
    ap.add_argument("--learners", nargs="+", choices=("ppo", "shac"), default=["ppo", "shac"],
                    help="which learners to run (the ratio needs both)")
    ap.add_argument("--shac-overrides", nargs="*", default=[],
                    help="Hydra overrides on top of configs/tuned/<task>_shac.yaml, e.g. algo.horizon=16 "
                         "(how the tuned configs' headers were measured)")
    ap.add_argument("--eval-every", type=int, default=None,
                    help="env steps between evaluations (default: 512, reach 4096)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    seeds = [0] if args.quick else args.seeds
    budget = {t: (1024 if args.quick else BUDGET_STEPS[t]) for t in args.tasks}
    envs = {t: args.num_envs or NUM_ENVS[t] for t in args.tasks}

    def emit(row: dict, text: str) -> None:
        print(json.dumps(row) if args.json else text, flush=True)

    def run_text(row: dict) -> str:
        got = (f"reached {row['threshold']:g} at {row['env_steps']:,} env steps, {row['train_seconds']:.1f} s "
               f"(then {row['stayed_above']} of the next {len(row['returns_after_reach'])} evaluations >= it: "
               f"{row['returns_after_reach']})" if row["reached"] else
               f"not reached in {row['steps_trained']:,} env steps ({row['seconds_trained']:.1f} s)")
        return f"[{row['task']}] {row['algo']:<4} seed {row['seed']}: {got}; best eval return {row['best_return']:.1f}"

    t_all = time.perf_counter()
    for task in args.tasks:
        envs_m, steps_m = (64, 16) if args.quick else MEMORY_SIZE.get(task, (4096, 100))
        mem = measure_memory(task, num_envs=envs_m, steps=steps_m)
        emit(mem, f"[{task}] differentiable rollout memory: {mem['counted_bytes_per_env_step']} B/env/step counted "
                  f"(Warp values + grads), {mem['rss_bytes_per_env_step']:.0f} B/env/step RSS growth "
                  f"({mem['num_envs']} envs x {mem['steps']} steps held)")
    if args.ppo_sweep:
        for task in args.tasks:
            for ovs in PPO_CANDIDATES[task]:
                rows = [train_to_threshold(task, "ppo", s, num_envs=envs[task], budget_steps=budget[task],
                                           overrides=ovs) for s in seeds]
                for row in rows:
                    emit({**row, "kind": "ppo_sweep"}, run_text(row) + f" [{_describe(ovs)}]")
                m = median_steps(rows)
                emit({"kind": "ppo_sweep_summary", "task": task, "overrides": list(ovs), "median_env_steps": m},
                     f"[{task}] ppo sweep [{_describe(ovs)}]: median env steps {m}")
    results: dict[tuple[str, str], list[dict]] = {}
    for task in args.tasks:
        for algo in args.learners:
            ovs = PPO_OVERRIDES[task] if algo == "ppo" else tuple(args.shac_overrides)
            for seed in seeds:
                row = train_to_threshold(task, algo, seed, num_envs=envs[task], budget_steps=budget[task],
                                         overrides=ovs, eval_every=args.eval_every)
                results.setdefault((task, algo), []).append(row)
                emit(row, run_text(row))
    for task in args.tasks:
        med = {}
        for algo in args.learners:
            rows = results[(task, algo)]
            hit = [r for r in rows if r["reached"]]
            med[algo] = median_steps(rows)
            config = (f"configs/tuned/{task}_ppo.yaml + {_describe(PPO_OVERRIDES[task])} (best median of "
                      f"{len(PPO_CANDIDATES[task])} PPO settings tried at {NUM_ENVS[task]} envs)" if algo == "ppo"
                      else f"configs/tuned/{task}_shac.yaml" + (f" + {_describe(args.shac_overrides)}"
                                                                   if args.shac_overrides else ""))
            row = {"kind": "summary", "task": task, "algo": algo, "num_envs": envs[task], "config": config,
                   "threshold": THRESHOLD[task], "runs": len(rows), "runs_reached": len(hit),
                   "median_env_steps": med[algo],
                   "median_train_seconds": _median([r["train_seconds"] if r["reached"] else math.inf
                                                    for r in rows]) if len(hit) == len(rows) else None,
                   "env_steps_per_run": [r["env_steps"] for r in rows],
                   "train_seconds_per_run": [None if r["train_seconds"] is None else round(r["train_seconds"], 1)
                                             for r in rows]}
            emit(row, f"[{task}] {algo:<4} {envs[task]} envs, {len(hit)}/{len(rows)} seeds reached {THRESHOLD[task]:g}; env steps "
                      f"{row['env_steps_per_run']} (median {row['median_env_steps']}), train s "
                      f"{row['train_seconds_per_run']}; config: {config}")
        if len(med) < 2:
            continue
        ratio = med["ppo"] / med["shac"] if med["ppo"] and med["shac"] else None
        emit({"kind": "ratio", "task": task, "num_envs": envs[task], "what": "ppo/shac median env steps",
              "env_steps_ratio": ratio, "shac_5x_fewer_env_steps": bool(ratio is not None and ratio >= 5.0)},
             f"[{task}] PPO / SHAC median env steps to threshold: "
             f"{'n/a (a median is not reached)' if ratio is None else f'{ratio:.2f}x'}"
             f"{'' if ratio is None else (' (>= 5x: met)' if ratio >= 5.0 else ' (< 5x: not met)')}")
    curves = [{"task": r["task"], "learner": r["algo"], "seed": r["seed"],
               "curve": [(sec, s, ret) for s, sec, ret in r["curve"]]} for rows in results.values() for r in rows]
    if args.json:
        emit({"kind": "curves", "curves": curves}, "")
    else:
        print(f"total wall time {time.perf_counter() - t_all:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
