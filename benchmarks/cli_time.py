"""How long the CLI takes to answer before any work: ``horde tasks``, ``horde --help`` and ``horde train --help``
beside ``python -c "import horde"`` (the floor every command pays), each a fresh process, the median of ``--runs``.

    python benchmarks/cli_time.py [--runs 5] [--json] [--quick]

Issue 31's floor: ``horde tasks`` under 2 s of wall time on 2 cores (and ``--help``: a built-in task's fields come
from a static table, ``train/task_fields.json``). The commands run as ``python -m horde ...`` with
this interpreter, so the figure includes Python's own start; ``import torch`` and ``import warp`` are timed too, to
show what a command that needs them pays on top.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

CASES = {
    "python -c 'import horde'": ["-c", "import horde"],
    "horde tasks": ["-m", "horde", "tasks"],
    "horde --help": ["-m", "horde", "--help"],
    "horde train --help": ["-m", "horde", "train", "--help"],
    "horde train --help task=lift": ["-m", "horde", "train", "--help", "task=lift"],
    "python -c 'import torch'": ["-c", "import torch"],
    "python -c 'import warp'": ["-c", "import warp"],
}
FLOOR_S = 2.0
"""``horde tasks`` must answer within this [s] (issue 31)."""


def wall_time(args: list[str]) -> float:
    """Seconds of one fresh ``python <args>`` process; a failure raises with its stderr."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"cli_time: python {' '.join(args)} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return dt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="processes per case (the median is reported)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="one run of the first two cases, no warm-up (smoke test)")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    cases = dict(list(CASES.items())[:2]) if args.quick else CASES
    args.runs = 1 if args.quick else args.runs
    for case in () if args.quick else cases.values():  # one untimed round: the OS's file caches warm
        wall_time(case)
    medians = {name: statistics.median(wall_time(case) for _ in range(args.runs)) for name, case in cases.items()}
    result = {"runs": args.runs, "median_s": medians, "floor_s": FLOOR_S,
              "tasks_met": medians["horde tasks"] < FLOOR_S}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    base = medians["python -c 'import horde'"]
    for name, t in medians.items():
        print(f"{name:<28} {t:6.2f} s  ({t / base:4.1f}x import horde)")
    print(f"horde tasks {'under' if result['tasks_met'] else 'NOT under'} the {FLOOR_S:.0f} s floor "
          f"(median of {args.runs})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
