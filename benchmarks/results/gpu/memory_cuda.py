"""The memory guard's CUDA figures against a GPU (issue 31 left them unmeasured): for each task, ``horde train
task=<task> num_envs=<n> device=cuda:0 max_iterations=2`` at two sizes in fresh processes, the GPU memory the run
took (``torch.cuda.mem_get_info`` before ``horde``'s import and after training: the CUDA context, torch's cache and
Warp's pool included; the difference between the sizes over the difference in envs cancels the context) beside the
guard's estimate (:func:`horde.train.memory.estimate`) at the same sizes.

    python benchmarks/results/gpu/memory_cuda.py [TASK ...] [--sizes 1024,4096]

An estimate below the measured per-env figure is a defect (the guard would let a run start that does not fit).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile

TASKS = ("cartpole", "quadruped", "lift", "g1-velocity", "quadruped-rough", "g1-velocity-rough")

CHILD = """
import json, sys, torch
free0, total = torch.cuda.mem_get_info(0)
from horde.cli import main
rc = main(sys.argv[1:])
torch.cuda.synchronize()
free1, _ = torch.cuda.mem_get_info(0)
print("MEM", json.dumps({"rc": rc, "used": free0 - free1, "gpu_total": total,
                         "torch_peak": torch.cuda.max_memory_allocated(0),
                         "torch_reserved": torch.cuda.max_memory_reserved(0)}))
"""


def measure(task: str, n: int) -> dict:
    with tempfile.TemporaryDirectory() as root:
        proc = subprocess.run([sys.executable, "-c", CHILD, "train", f"task={task}", f"num_envs={n}", "device=cuda:0",
                               "max_iterations=2", f"run_root={root}", "memory_check=false"],
                              capture_output=True, text=True, timeout=600)
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("MEM ")]
    if proc.returncode != 0 or not line:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": f"rc={proc.returncode}: {tail}"}
    return json.loads(line[0][4:])


def estimated(task: str, n: int) -> int:
    from horde.train.config import compose
    from horde.train.memory import estimate

    cfg, name, _ = compose([f"task={task}", f"num_envs={n}"])  # the estimate takes the device below
    return estimate(cfg, name, num_envs=n, device="cuda:0").total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tasks", nargs="*", default=list(TASKS))
    ap.add_argument("--sizes", default="1024,4096")
    args = ap.parse_args()
    small, large = (int(s) for s in args.sizes.split(","))
    rows = []
    for task in args.tasks:
        m = [measure(task, n) for n in (small, large)]
        e = [estimated(task, n) for n in (small, large)]
        row = {"task": task, "sizes": [small, large], "measured": m, "estimated": e}
        if all("used" in x for x in m):
            row["measured_per_env"] = round((m[1]["used"] - m[0]["used"]) / (large - small))
            row["estimated_per_env"] = round((e[1] - e[0]) / (large - small))
            row["estimate_covers"] = row["estimated_per_env"] >= row["measured_per_env"]
            print(f"{task:<20} measured {row['measured_per_env']:>10,} B/env ({m[1]['used'] / 2**20:,.0f} MiB at "
                  f"{large}, context included)  estimated {row['estimated_per_env']:>10,} B/env "
                  f"({e[1] / 2**20:,.0f} MiB at {large})  covers: {row['estimate_covers']}", flush=True)
        else:
            print(f"{task:<20} {m}", flush=True)
        rows.append(row)
    print("JSON " + json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
