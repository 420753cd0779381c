"""Each benchmark script runs in quick mode and prints the documented JSON lines."""

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def test_sim_throughput_quick_json():
    proc = subprocess.run([sys.executable, str(BENCH / "sim_throughput.py"), "--quick", "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    impls = {r["impl"] for r in rows}
    assert {"horde-graph", "horde-eager", "numpy", "ratio:horde-graph/numpy"} <= impls
    for r in rows:
        if "env_steps_per_s" in r:
            assert {"task", "impl", "device", "num_envs", "env_steps_per_s"} <= set(r) and r["env_steps_per_s"] > 0
    assert {r["num_envs"] for r in rows} == {64, 4096}
