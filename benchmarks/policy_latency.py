"""Batch-1 policy latency: torch eager vs onnxruntime (plain and with IO binding) vs TensorRT when importable.

    python benchmarks/policy_latency.py [--json] [--quick] [--calls 50000]

For horde's default MLP actor (ActorCriticConfig defaults, cartpole's 5 observations and 1 action) and a GRU
actor (same MLP after a 64-wide GRU), each figure is the median and 99th percentile of ``--calls`` timed single
calls (>= 10,000) after a warm-up, with one torch thread and one onnxruntime intra-op thread. The IO-binding
figure is the robot-side runner's own backend (``run_policy.OnnxRuntimeBackend``: preallocated buffers, state
double-buffered). The MLP's torch-eager/onnxruntime ratio is checked against the 3x target.
With ``--json`` each line is one JSON object: ``{"policy", "impl", "batch", "calls", "median_us", "p99_us"}``,
or a ratio line ``{"policy", "impl": "ratio:torch-eager/onnxruntime-iobinding", "value", "target", "passed"}``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from horde.deploy.onnx_export import export_onnx, io_spec
from horde.deploy.robot import run_policy
from horde.policies import ActorCriticConfig, build_actor, make_inference_policy

OBS_DIM, NUM_ACTIONS = 5, 1
TARGET_RATIO = 3.0


def _time(call, calls: int, warmup: int) -> dict:
    """Median and p99 latency of ``call()`` in microseconds over ``calls`` timed calls."""
    for _ in range(warmup):
        call()
    samples = np.empty(calls, dtype=np.int64)
    clock = time.perf_counter_ns
    for i in range(calls):
        t0 = clock()
        call()
        samples[i] = clock() - t0
    us = samples / 1e3
    return {"median_us": float(np.median(us)), "p99_us": float(np.percentile(us, 99))}


def _policies() -> dict:
    torch.manual_seed(0)
    out = {}
    for name, cfg in (("mlp", ActorCriticConfig()), ("gru", ActorCriticConfig(rnn_type="gru"))):
        out[name] = make_inference_policy(build_actor(cfg, OBS_DIM, NUM_ACTIONS))
    return out


def bench_policy(name: str, policy, workdir: Path, *, calls: int, warmup: int) -> list[dict]:
    io = io_spec(policy, NUM_ACTIONS)
    onnx_path = workdir / f"{name}.onnx"
    export_onnx(policy, onnx_path, io, {"benchmark": name})
    rows = []
    obs_t = torch.randn(1, OBS_DIM)
    state_t = policy.initial_state(1)

    @torch.inference_mode()
    def torch_call():
        return policy(obs_t, *state_t) if policy.is_recurrent else policy(obs_t)

    rows.append({"impl": "torch-eager", **_time(torch_call, calls, warmup)})

    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = 1, 1
    sess = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
    feeds = {"obs": obs_t.numpy(), **{s["input"]: np.zeros((1, *s["shape"][1:]), np.float32) for s in io["state"]}}
    rows.append({"impl": "onnxruntime", **_time(lambda: sess.run(None, feeds), calls, warmup)})

    backend = run_policy.OnnxRuntimeBackend(onnx_path, {"obs_dim": OBS_DIM, "num_actions": NUM_ACTIONS,
                                                        "state": io["state"]}, 1, threads=1, providers=None)
    backend.obs[:] = obs_t.numpy()
    rows.append({"impl": "onnxruntime-iobinding", **_time(backend.run, calls, warmup)})

    trt_row = _bench_tensorrt(onnx_path, io, calls=calls, warmup=warmup)
    if trt_row is not None:
        rows.append(trt_row)
    return [{"policy": name, "batch": 1, "calls": calls, **r} for r in rows]


def _bench_tensorrt(onnx_path: Path, io: dict, *, calls: int, warmup: int) -> dict | None:
    try:
        import tensorrt  # noqa: F401
    except ImportError:
        return None
    from horde.deploy.robot import build_engine

    plan, _ = build_engine.build_plan(onnx_path, max_batch=1)
    engine = onnx_path.with_suffix(".engine")
    engine.write_bytes(plan)
    backend = run_policy.TensorRTBackend(engine, {"obs_dim": OBS_DIM, "num_actions": NUM_ACTIONS,
                                                  "state": io["state"]}, 1)
    return {"impl": f"tensorrt-{tensorrt.__version__}", **_time(backend.run, calls, warmup)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--quick", action="store_true", help="10,000 calls per figure (the minimum), short warm-up")
    p.add_argument("--calls", type=int, default=None, help="timed calls per figure (>= 10,000; default 50,000)")
    args = p.parse_args(argv)
    calls = args.calls or (10_000 if args.quick else 50_000)
    if calls < 10_000:
        p.error("--calls must be >= 10000")
    warmup = 500 if args.quick else 2_000
    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, policy in _policies().items():
            rows += bench_policy(name, policy, Path(tmp), calls=calls, warmup=warmup)
    if not any(r["impl"].startswith("tensorrt") for r in rows) and not args.json:
        print("tensorrt: not importable here, skipped")
    by = {(r["policy"], r["impl"]): r for r in rows}
    ratio = by[("mlp", "torch-eager")]["median_us"] / by[("mlp", "onnxruntime-iobinding")]["median_us"]
    ratio_row = {"policy": "mlp", "impl": "ratio:torch-eager/onnxruntime-iobinding", "value": ratio,
                 "target": TARGET_RATIO, "passed": ratio >= TARGET_RATIO}
    if args.json:
        for r in [*rows, ratio_row]:
            print(json.dumps(r))
        return 0
    print(f"batch-1 latency over {calls:,} calls, 1 torch thread, 1 onnxruntime intra-op thread")
    print(f"{'policy':<6} {'impl':<26} {'median us':>10} {'p99 us':>10}")
    for r in rows:
        print(f"{r['policy']:<6} {r['impl']:<26} {r['median_us']:>10.1f} {r['p99_us']:>10.1f}")
    print(f"MLP: onnxruntime (IO binding) is {ratio:.1f}x faster than torch eager at batch 1 "
          f"(target >= {TARGET_RATIO:g}x): {'PASS' if ratio_row['passed'] else 'FAIL'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
