"""PPO's update with its hidden activations in place (how horde trains) against out of place (rsl-rl's modules as
built), interleaved in one process on one and the same rollout.

    python benchmarks/update_in_place.py [override ...] [--runs quadruped:256 g1-velocity:512] [--repeats 6] [--json]

Per run ``task:num_envs``: the task's tuned PPO recipe collects one rollout, then ``PPO.update`` runs ``--repeats``
times each way, alternating (out of place, in place, out of place, ...), every time from a copy of that rollout's
storage (the parameters move on between updates: the cost of an update does not depend on their values). The
figures are the medians of each way's seconds and how many of the pairs the in-place update won. Interleaving in
one process is what makes a 10% difference readable on a machine whose speed drifts by more than that between
processes (``train_throughput.py``'s ``update_s`` for the G1 moved 0.69-0.89 s over three runs of one command).
``--quick``: a smoke run (the quadruped at 16 envs, 2 repeats).
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time


def update_in_place(task: str, num_envs: int, repeats: int, overrides: list[str]) -> dict:
    from horde.train.config import compose
    from horde.train.ppo import PPOTrainer

    seconds: dict[bool, list[float]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        cfg, task_cfg, raw = compose([f"task={task}", f"num_envs={num_envs}", f"run_root={tmp}", "max_iterations=1",
                                      "save_interval=1000", *overrides])
        trainer = PPOTrainer(cfg, task_cfg, raw, quiet=True)
        alg, update = trainer.alg, trainer.alg.update
        layers = [m for model in (alg.actor, alg.critic) for m in model.mlp if getattr(m, "inplace", False)]

        def interleaved():
            rollout = copy.deepcopy(alg.storage)
            for _ in range(repeats):
                for in_place in (False, True):
                    for m in layers:
                        m.inplace = in_place
                    alg.storage = copy.deepcopy(rollout)
                    t0 = time.perf_counter()
                    update()
                    seconds[in_place].append(time.perf_counter() - t0)
            alg.storage = rollout
            return update()

        alg.update = interleaved
        trainer.learn()
    pairs = list(zip(seconds[False], seconds[True]))
    return {"task": task, "num_envs": num_envs, "repeats": repeats,
            "out_of_place_s": statistics.median(seconds[False]), "in_place_s": statistics.median(seconds[True]),
            "in_place_shorter_in": sum(b < a for a, b in pairs), "pairs": len(pairs),
            "out_of_place_all_s": seconds[False], "in_place_all_s": seconds[True], "activations": len(layers),
            "overrides": overrides}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("overrides", nargs="*", help="config overrides for every run (before --runs)")
    ap.add_argument("--runs", nargs="+", default=["quadruped:256", "g1-velocity:512"], help="task:num_envs pairs")
    ap.add_argument("--repeats", type=int, default=6, help="updates each way, alternating")
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--quick", action="store_true", help="the quadruped at 16 envs, 2 repeats")
    args = ap.parse_args(argv)
    from horde.train.config import ConfigError

    runs, repeats = (["quadruped:16"], 2) if args.quick else (args.runs, args.repeats)
    if repeats < 1:
        ap.error(f"--repeats must be >= 1, got {repeats}")
    for spec in runs:
        task, _, n = spec.partition(":")
        if not n.isdigit():
            ap.error(f"--runs takes task:num_envs pairs, got {spec!r}")
        try:
            row = update_in_place(task, int(n), repeats, list(args.overrides))
        except ConfigError as exc:
            print(f"update_in_place.py: {exc}", file=sys.stderr)
            return 2
        if args.json:
            print(json.dumps(row))
        else:
            print(f"{task:12s} N={int(n):5d}  update out of place {row['out_of_place_s']:.3f} s, in place "
                  f"{row['in_place_s']:.3f} s ({row['in_place_s'] / row['out_of_place_s']:.2f}x; shorter in "
                  f"{row['in_place_shorter_in']} of {row['pairs']} pairs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
