"""benchmarks/policy_latency.py runs in quick mode and prints its documented JSON lines. Whether the 3x target is
met is a figure the benchmark prints (it depends on the machine), not asserted here."""

import json

from benchhelp import run_benchmark


def test_policy_latency_quick_json():
    proc = run_benchmark("policy_latency.py", "--quick", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    timed = [r for r in rows if "median_us" in r]
    assert {(r["policy"], r["impl"]) for r in timed} >= {
        (p, i) for p in ("mlp", "gru") for i in ("torch-eager", "onnxruntime", "onnxruntime-iobinding")}
    for r in timed:
        assert r["batch"] == 1 and r["calls"] >= 10_000 and 0 < r["median_us"] <= r["p99_us"]
    (ratio,) = [r for r in rows if r["impl"] == "ratio:torch-eager/onnxruntime-iobinding"]
    assert ratio["policy"] == "mlp" and ratio["target"] == 3.0
    assert ratio["value"] > 0 and ratio["passed"] == (ratio["value"] >= ratio["target"]), ratio
