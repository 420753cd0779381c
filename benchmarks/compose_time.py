"""How long composing a run's config takes (``horde.train.config.compose``: what every CLI command and many tests do
before anything else).

    python benchmarks/compose_time.py [--calls 20] [--json]

Prints the first call (Hydra's config store filled) and the median of ``--calls`` later calls, each with another
task and seed, in one process. Runs unchanged on older commits that have ``compose`` (check one out with
``git worktree`` and point ``PYTHONPATH`` at a folder that links it as ``horde``) to compare. 2026-11-26, 2-core
AMD EPYC, two runs each: c3dc405 (before the config store was filled once) 0.66 and 0.83 s a call, 47ca747 0.16
and 0.15 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

TASKS = ("cartpole", "quadruped", "g1-velocity", "lift")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    import horde
    from horde.train.config import compose

    t0 = time.perf_counter()
    compose([f"task={TASKS[0]}"])
    first = time.perf_counter() - t0
    times = []
    for k in range(args.calls):
        t0 = time.perf_counter()
        compose([f"task={TASKS[k % len(TASKS)]}", f"seed={k}", "algo.learning_rate=0.0005"])
        times.append(time.perf_counter() - t0)
    out = {"first_s": round(first, 3), "median_s": round(statistics.median(times), 3), "calls": args.calls,
           "horde_path": str(horde.__file__)}
    print(json.dumps(out) if args.json else
          f"compose: first call {out['first_s']:.3f} s, median of {args.calls} later calls {out['median_s']:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
