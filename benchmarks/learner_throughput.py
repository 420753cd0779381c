"""The learners' own cost: SAC's gradient steps beside PPO's update, on one task's real observations.

    python benchmarks/learner_throughput.py [--task g1-velocity] [--num-envs 512] [--repeats 5] [--threads 1 2]
                                            [--json] [--quick] [override ...]

Both learners are built as ``horde train`` builds them for the task on this device (its tuned configs, PPO's and
SAC's, with their ``cpu:`` profiles; ``override`` keys go to both, e.g. ``algo.batch_size=2048`` reaches SAC only if
PPO has the key too, so prefer ``--sac``/``--ppo`` lists). Per torch thread count (``--threads``):

* ``ppo``: one rollout of the CPU recipe, then ``alg.update()`` timed ``--repeats`` times on that same batch (each
  call is a whole update: every epoch over every mini-batch). ``samples_per_s`` = samples of the batch x epochs /
  seconds; ``update_s`` the median seconds of one update.
* ``sac``: ``learning_starts`` vector steps into the replay ring, then ``--repeats`` windows of
  ``--sac-updates`` gradient steps (``SACTrainer._update``: one critic step, the actor and temperature every
  ``actor_update_period``, the targets); ``updates_per_s`` and ``samples_per_s`` (batch x 2 with the mirror).
  ``per_env_step_s``: what the learner adds to every vector step (``num_updates`` of them).

The line ``sac/ppo`` sets them side by side per env step of the CPU recipe: seconds of learning per 1,000 env steps
for each (PPO: one update per ``num_steps_per_env x num_envs`` env steps; SAC: ``num_updates`` per ``num_envs``), so
the learner's share of a SAC run can be read against PPO's. Medians; nothing here depends on the physics' speed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from horde.train.config import compose  # noqa: E402


def _median_s(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ppo_update(task: str, num_envs: int, threads: int, repeats: int, overrides: list[str]) -> dict:
    """Median seconds of PPO's whole update on one rollout of the task's CPU recipe."""
    from horde.train.ppo import PPOTrainer

    with tempfile.TemporaryDirectory() as tmp:
        cfg, task_cfg, raw = compose([f"task={task}", f"num_envs={num_envs}", f"run_root={tmp}", "max_iterations=2",
                                      f"torch_threads={threads}", f"update_threads={threads}", *overrides])
        tr = PPOTrainer(cfg, task_cfg, raw, quiet=True)
        tr.start()
        tr.rollout(tr.alg, returns_phase="learn")
        torch.set_num_threads(threads)
        # the storage is left as the rollout wrote it: each timed call updates on the same batch
        update_s = _median_s(tr.alg.update, repeats)
        a = cfg.algo
        samples = a.num_steps_per_env * tr.num_envs
    return {"update_s": update_s, "samples_per_iteration": samples, "epochs": a.num_learning_epochs,
            "samples_per_s": samples * a.num_learning_epochs / update_s,
            "learn_s_per_1000_env_steps": 1000 * update_s / samples}


def sac_updates(task: str, num_envs: int, threads: int, repeats: int, window: int, overrides: list[str]) -> dict:
    """Median seconds of SAC's gradient steps on a ring filled by the task's own steps."""
    from horde.train.sac import SACTrainer

    with tempfile.TemporaryDirectory() as tmp:
        cfg, task_cfg, raw = compose([f"task={task}", "algo=sac", f"num_envs={num_envs}", f"run_root={tmp}",
                                      "max_iterations=2", f"torch_threads={threads}", f"update_threads={threads}",
                                      *overrides])
        tr = SACTrainer(cfg, task_cfg, raw, quiet=True)
        a = cfg.algo
        for _ in range(max(a.learning_starts, a.n_step + 1)):
            tr._step()
        torch.set_num_threads(threads)
        tr._update()  # warm-up (allocations; compilation with algo.compile=true)

        def steps():
            for _ in range(window):
                out = tr._update()
            float(out["critic"])  # one sync at the end of the window (a GPU's queue drains)

        s = _median_s(steps, repeats) / window
        batch = a.batch_size * (2 if a.symmetry.augment else 1)
    return {"update_s": s, "updates_per_s": 1 / s, "batch": batch, "samples_per_s": batch / s,
            "num_updates": a.num_updates, "per_env_step_s": a.num_updates * s,
            "learn_s_per_1000_env_steps": 1000 * a.num_updates * s / tr.num_envs,
            "actor_update_period": a.actor_update_period,
            "networks": {"actor": list(a.policy.actor_hidden_dims), "critic": list(a.policy.critic_hidden_dims),
                         "atoms": a.num_atoms}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="g1-velocity")
    ap.add_argument("--num-envs", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sac-updates", type=int, default=8, help="gradient steps per timed window")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--ppo", nargs="*", default=[], help="overrides for PPO only")
    ap.add_argument("--sac", nargs="*", default=[], help="overrides for SAC only")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="smoke run: 32 envs, 1 repeat, 1 thread count")
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args(argv)
    if args.quick:
        args.num_envs, args.repeats, args.sac_updates, args.threads = 32, 1, 2, args.threads[:1]
    rows = []
    for threads in args.threads:
        ppo = ppo_update(args.task, args.num_envs, threads, args.repeats, [*args.overrides, *args.ppo])
        sac = sac_updates(args.task, args.num_envs, threads, args.repeats, args.sac_updates,
                          [*args.overrides, *args.sac])
        rows.append({"task": args.task, "num_envs": args.num_envs, "threads": threads, "ppo": ppo, "sac": sac,
                     "sac_over_ppo_learn_per_env_step": sac["learn_s_per_1000_env_steps"]
                     / ppo["learn_s_per_1000_env_steps"]})
        print(f"{args.task} {args.num_envs} envs, {threads} torch thread(s): PPO update {ppo['update_s']:.3f} s "
              f"({ppo['samples_per_s']:,.0f} samples/s over {ppo['epochs']} epochs; "
              f"{ppo['learn_s_per_1000_env_steps'] * 1e3:.1f} ms per 1,000 env steps) | SAC step "
              f"{sac['update_s'] * 1e3:.1f} ms ({sac['updates_per_s']:.1f} updates/s, {sac['samples_per_s']:,.0f} "
              f"samples/s at batch {sac['batch']}; {sac['learn_s_per_1000_env_steps'] * 1e3:.1f} ms per 1,000 env "
              f"steps) | sac/ppo {rows[-1]['sac_over_ppo_learn_per_env_step']:.2f}", flush=True)
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
