"""Build a TensorRT engine from a horde policy bundle, on the machine that will run it.

    python build_engine.py [--bundle DIR] [--max-batch 64] [--opt-batch 1] [--engine PATH] [--timing-cache PATH]

Engines are bound to one GPU model and one TensorRT version, so a bundle ships ONNX only and the engine is built
here. The network is strongly typed: its precision is what the ONNX file carries (an fp16 bundle runs fp16, an
fp32 bundle runs fp32 with TF32 off), so no precision flag is needed or offered. One optimization profile covers
batch 1..max-batch (tuned for opt-batch). Tactic timings persist in a timing cache, so a rebuild is fast. Next to
the engine goes ``<engine>.json`` with the TensorRT version, GPU name, compute capability, ONNX and engine sha256;
``run_policy.py`` refuses an engine whose record does not match the machine it runs on.

Written for the TensorRT 10.x and 11 Python APIs; needs numpy and tensorrt, not horde or torch.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
from pathlib import Path

try:  # inside horde: horde.deploy.robot.run_policy
    from . import run_policy as rp
except ImportError:  # a script in the bundle directory, next to run_policy.py (also under python -I)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import run_policy as rp  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="build_engine.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--bundle", default=str(Path(__file__).resolve().parent),
                   help="bundle directory (default: the directory of this script)")
    p.add_argument("--max-batch", type=int, default=64, help="largest batch the engine accepts (default 64)")
    p.add_argument("--opt-batch", type=int, default=1, help="batch the kernels are tuned for (default 1)")
    p.add_argument("--engine", default=None, help=f"engine path (default: <bundle>/{rp.DEFAULT_ENGINE})")
    p.add_argument("--timing-cache", default=None, help="timing cache path (default: <bundle>/timing.cache)")
    p.add_argument("--workspace-mb", type=int, default=256, help="builder workspace limit in MiB (default 256)")
    p.add_argument("--verbose", action="store_true", help="TensorRT INFO logging")
    args = p.parse_args(argv)
    if args.max_batch < 1 or not 1 <= args.opt_batch <= args.max_batch:
        p.error(f"need 1 <= --opt-batch ({args.opt_batch}) <= --max-batch ({args.max_batch})")
    if args.workspace_mb < 1:
        p.error("--workspace-mb must be >= 1")
    bundle = Path(args.bundle)
    args.engine = Path(args.engine) if args.engine else bundle / rp.DEFAULT_ENGINE
    args.timing_cache = Path(args.timing_cache) if args.timing_cache else bundle / "timing.cache"
    return args


def engine_record(*, host: dict, onnx_sha256: str, engine_sha256: str, engine: Path, precision: str,
                  max_batch: int, opt_batch: int) -> dict:
    """The JSON written next to an engine; :func:`run_policy.check_engine_record` reads it back."""
    return {
        "schema_version": rp.ENGINE_RECORD_SCHEMA,
        "engine_file": engine.name,
        "engine_sha256": engine_sha256,
        "onnx_sha256": onnx_sha256,
        **{k: host[k] for k in rp.ENGINE_MATCH_KEYS},
        "precision": precision,
        "profile": {"min_batch": 1, "opt_batch": opt_batch, "max_batch": max_batch},
        "built_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def build_plan(onnx_path: Path, *, max_batch: int, opt_batch: int = 1, workspace_mb: int = 256,
               timing_cache: bytes = b"", verbose: bool = False) -> tuple[bytes, bytes]:
    """A serialized engine for ``onnx_path`` (batch 1..max_batch, tuned for opt_batch) and the updated timing
    cache. Raises :class:`run_policy.BundleError` when TensorRT cannot parse or build the graph."""
    import tensorrt as trt

    logger = trt.Logger(trt.Logger.INFO if verbose else trt.Logger.WARNING)
    builder = trt.Builder(logger)
    # STRONGLY_TYPED exists from TensorRT 9 and is the only mode (flag deprecated, ignored) in TensorRT 11.
    typed = getattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED", None)
    network = builder.create_network(1 << int(typed) if typed is not None else 0)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse(Path(onnx_path).read_bytes()):
        errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
        raise rp.BundleError(f"TensorRT cannot parse {onnx_path}: {errors}")

    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, workspace_mb << 20)
    if hasattr(trt.BuilderFlag, "TF32"):  # keep fp32 bundles fp32: parity was measured against fp32 torch
        config.clear_flag(trt.BuilderFlag.TF32)
    profile = builder.create_optimization_profile()
    for i in range(network.num_inputs):
        tensor = network.get_input(i)
        rest = tuple(int(d) for d in tensor.shape)[1:]  # every input is batch-first
        profile.set_shape(tensor.name, (1, *rest), (opt_batch, *rest), (max_batch, *rest))
    config.add_optimization_profile(profile)
    cache = config.create_timing_cache(timing_cache)
    config.set_timing_cache(cache, False)  # a cache from another TensorRT or GPU is ignored, not merged

    plan = builder.build_serialized_network(network, config)
    if plan is None:
        raise rp.BundleError(f"TensorRT failed to build an engine from {onnx_path} (run with --verbose)")
    return bytes(plan), bytes(config.get_timing_cache().serialize())


def build(args: argparse.Namespace) -> dict:
    """Build and save the bundle's engine, its record and the timing cache; returns the record."""
    spec = rp.load_spec(args.bundle)
    host = rp.host_fingerprint()  # raises a clear error where tensorrt or the GPU is missing
    cache = args.timing_cache.read_bytes() if args.timing_cache.is_file() else b""
    plan, cache = build_plan(Path(args.bundle) / spec["onnx"]["file"], max_batch=args.max_batch,
                             opt_batch=args.opt_batch, workspace_mb=args.workspace_mb, timing_cache=cache,
                             verbose=args.verbose)
    _atomic_write(args.engine, plan)
    _atomic_write(args.timing_cache, cache)
    record = engine_record(host=host, onnx_sha256=spec["onnx"]["sha256"], engine_sha256=rp.sha256_file(args.engine),
                           engine=args.engine, precision=spec["precision"], max_batch=args.max_batch,
                           opt_batch=args.opt_batch)
    _atomic_write(rp.engine_record_path(args.engine), (json.dumps(record, indent=2) + "\n").encode())
    return record


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        record = build(args)
    except rp.BundleError as exc:
        print(f"build_engine: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.engine} ({record['precision']}, batch 1..{args.max_batch}, TensorRT "
          f"{record['tensorrt_version']}, {record['gpu_name']} sm_{record['compute_capability'].replace('.', '')}) "
          f"and {rp.engine_record_path(args.engine).name}; timing cache {args.timing_cache}")
    print(f"check it with: python run_policy.py --selftest --backend tensorrt --engine {args.engine}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
