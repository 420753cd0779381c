"""The lift's scripted grasp (``tests/unit/test_lift.py::scripted_grasp``: end-effector deltas above the cube, down
around it, close the binary gripper, raise 15 cm; every action in [-1, 1]) over several seeds of 64 envs.

    python benchmarks/lift_scripted_grasp.py [--seeds 0 1 2 3 4 5 6 7] [--num-envs 64]

Prints, per seed, how many envs hold the cube at least 5 cm up at the end and the lowest final height: the figure
behind the test's bar (at least 95% of 64 envs).
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "unit"))

from test_lift import scripted_grasp  # noqa: E402

from horde.envs import make  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", nargs="+", type=int, default=list(range(8)))
    ap.add_argument("--num-envs", type=int, default=64)
    args = ap.parse_args(argv)
    for seed in args.seeds:
        h = scripted_grasp(make("lift", num_envs=args.num_envs, seed=seed))[-1]
        print(f"seed {seed}: {int((h >= 0.05).sum())} of {args.num_envs} envs hold the cube >= 5 cm up, "
              f"lowest {100 * float(h.min()):.1f} cm", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
