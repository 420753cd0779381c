"""Robot-side runner of a horde policy bundle. Needs numpy plus onnxruntime or TensorRT; never horde or torch.

    python run_policy.py --selftest                          # replay golden_io.npz with onnxruntime
    python run_policy.py --selftest --backend tensorrt       # ... with the engine build_engine.py wrote here
    python run_policy.py --describe                          # observation and action layout

In a control loop::

    runner = PolicyRunner("path/to/bundle", batch=1)          # or backend="tensorrt"
    runner.reset()                                            # at every episode start (zeroes recurrent state)
    actions = runner.step(obs)                                # obs float32 [1, obs_dim] -> actions [1, num_actions]
    command = runner.command(actions)                         # physical command: offset + scale * actions

``obs`` is built from raw robot state by ``observations.py`` (``ObservationFrames``: it also keeps the past frames
of observation terms with a history, filled with the first value at each episode start; reset it with the runner).

Every input is checked (type, dtype, shape, finiteness) and refused with a message that names the offending
observation term. The recurrent state of GRU/LSTM policies is carried inside the runner, double-buffered. A
TensorRT engine is refused unless the JSON written next to it by ``build_engine.py`` names this machine's
TensorRT version, GPU and compute capability and this bundle's ONNX file.

Exit codes: 0 pass, 1 golden mismatch, 2 bad bundle, input or engine.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

BUNDLE_SCHEMA = 2
"""The ``policy.json`` schema version this runner reads."""
ENGINE_RECORD_SCHEMA = 1
"""The schema version of the JSON that ``build_engine.py`` writes next to an engine."""
ENGINE_MATCH_KEYS = ("tensorrt_version", "gpu_name", "compute_capability")
"""Host properties an engine is bound to: TensorRT engines are not portable across GPUs or TensorRT versions."""
DEFAULT_ENGINE = "policy.engine"
"""Engine file name that build_engine.py writes and this runner loads by default (inside the bundle)."""


class BundleError(RuntimeError):
    """A missing, altered or unreadable bundle, or a backend that cannot run it; one line."""


class EngineMismatchError(BundleError):
    """A TensorRT engine built for another machine, TensorRT version or ONNX file; one line."""


class PolicyInputError(ValueError):
    """An observation or reset mask of the wrong type, dtype or shape, or with non-finite values; one line."""


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_spec(bundle: str | Path) -> dict:
    """``policy.json`` of a bundle, after checking its schema and that ``policy.onnx`` is the file it describes."""
    bundle = Path(bundle)
    path = bundle / "policy.json"
    if not path.is_file():
        raise BundleError(f"{bundle}: no policy.json (not a horde policy bundle)")
    try:
        spec = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BundleError(f"{path}: unreadable JSON: {exc}") from None
    version = spec.get("schema_version")
    if version != BUNDLE_SCHEMA:
        raise BundleError(f"{path}: schema version {version}, this runner reads {BUNDLE_SCHEMA}; use the "
                          f"run_policy.py shipped in the same bundle")
    onnx_path = bundle / spec["onnx"]["file"]
    if not onnx_path.is_file():
        raise BundleError(f"{bundle}: {spec['onnx']['file']} is missing")
    digest = sha256_file(onnx_path)
    if digest != spec["onnx"]["sha256"]:
        raise BundleError(f"{onnx_path}: sha256 {digest[:12]}... differs from policy.json's "
                          f"{spec['onnx']['sha256'][:12]}...; the ONNX file was altered or belongs to another bundle")
    return spec


# --- TensorRT engine records ---------------------------------------------------------------------------------------
def engine_record_path(engine: str | Path) -> Path:
    """The JSON that describes ``engine`` (``policy.engine`` -> ``policy.engine.json``)."""
    engine = Path(engine)
    return engine.with_name(engine.name + ".json")


def check_engine_record(record: dict, *, onnx_sha256: str, engine_sha256: str | None, host: dict | None) -> None:
    """Refuse an engine whose record does not match this bundle's ONNX, the engine file itself, or ``host``.

    ``host`` is :func:`host_fingerprint` (None: not checked here). Raises :class:`EngineMismatchError` naming
    every mismatch.
    """
    problems = []
    if record.get("schema_version") != ENGINE_RECORD_SCHEMA:
        problems.append(f"record schema {record.get('schema_version')} != {ENGINE_RECORD_SCHEMA}")
    if record.get("onnx_sha256") != onnx_sha256:
        problems.append(f"built from ONNX {str(record.get('onnx_sha256'))[:12]}... but the bundle's is "
                        f"{onnx_sha256[:12]}...")
    if engine_sha256 is not None and record.get("engine_sha256") != engine_sha256:
        problems.append("engine file sha256 differs from its record (file replaced after the build)")
    for key in ENGINE_MATCH_KEYS if host is not None else ():
        if str(record.get(key)) != str(host.get(key)):
            problems.append(f"{key} {record.get(key)!r} in the record, {host.get(key)!r} on this host")
    if problems:
        raise EngineMismatchError("engine refused: " + "; ".join(problems) +
                                  "; rebuild it on this machine with: python build_engine.py")


class CudaDriver:
    """The few CUDA driver calls the TensorRT backend needs, through ctypes (no pycuda, cupy or torch).

    Uses the device's primary context, which TensorRT's runtime API calls share.
    """

    def __init__(self, device: int = 0) -> None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise BundleError(f"no CUDA driver on this host (libcuda.so.1: {exc})") from None
        self._lib = lib
        u64, vp, sz = ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t
        lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(u64), sz]
        lib.cuMemFree_v2.argtypes = [u64]
        lib.cuMemcpyHtoD_v2.argtypes = [u64, vp, sz]
        lib.cuMemcpyDtoH_v2.argtypes = [vp, u64, sz]
        lib.cuMemsetD8_v2.argtypes = [u64, ctypes.c_ubyte, sz]
        lib.cuStreamSynchronize.argtypes = [vp]
        self._check(lib.cuInit(0), "cuInit")
        self._dev = ctypes.c_int()
        self._check(lib.cuDeviceGet(ctypes.byref(self._dev), device), "cuDeviceGet")
        self._ctx = ctypes.c_void_p()
        self._check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(self._ctx), self._dev), "cuDevicePrimaryCtxRetain")
        self._check(lib.cuCtxSetCurrent(self._ctx), "cuCtxSetCurrent")

    def _check(self, code: int, what: str) -> None:
        if code != 0:
            name = ctypes.c_char_p()
            self._lib.cuGetErrorName(code, ctypes.byref(name))
            raise BundleError(f"CUDA {what} failed: {(name.value or b'?').decode()} ({code})")

    def name(self) -> str:
        buf = ctypes.create_string_buffer(256)
        self._check(self._lib.cuDeviceGetName(buf, 256, self._dev), "cuDeviceGetName")
        return buf.value.decode()

    def compute_capability(self) -> str:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(self._lib.cuDeviceGetAttribute(ctypes.byref(major), 75, self._dev), "cuDeviceGetAttribute")
        self._check(self._lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, self._dev), "cuDeviceGetAttribute")
        return f"{major.value}.{minor.value}"

    def alloc(self, nbytes: int) -> int:
        ptr = ctypes.c_uint64()
        self._check(self._lib.cuMemAlloc_v2(ctypes.byref(ptr), max(int(nbytes), 1)), "cuMemAlloc")
        return int(ptr.value)

    def free(self, ptr: int) -> None:
        self._lib.cuMemFree_v2(ptr)

    def to_device(self, ptr: int, host: np.ndarray) -> None:
        self._check(self._lib.cuMemcpyHtoD_v2(ptr, host.ctypes.data, host.nbytes), "cuMemcpyHtoD")

    def to_host(self, host: np.ndarray, ptr: int) -> None:
        self._check(self._lib.cuMemcpyDtoH_v2(host.ctypes.data, ptr, host.nbytes), "cuMemcpyDtoH")

    def zero(self, ptr: int, nbytes: int) -> None:
        self._check(self._lib.cuMemsetD8_v2(ptr, 0, nbytes), "cuMemsetD8")

    def stream(self) -> int:
        s = ctypes.c_void_p()
        self._check(self._lib.cuStreamCreate(ctypes.byref(s), 0), "cuStreamCreate")
        return int(s.value or 0)

    def synchronize(self, stream: int) -> None:
        self._check(self._lib.cuStreamSynchronize(stream), "cuStreamSynchronize")


def host_fingerprint(device: int = 0) -> dict:
    """TensorRT version, GPU name and compute capability of this host (what an engine is bound to)."""
    try:
        import tensorrt as trt
    except ImportError as exc:
        raise EngineMismatchError(f"this host cannot run TensorRT engines: tensorrt is not importable ({exc})") \
            from None
    cuda = CudaDriver(device)
    return {"tensorrt_version": trt.__version__, "gpu_name": cuda.name(),
            "compute_capability": cuda.compute_capability()}


# --- backends ------------------------------------------------------------------------------------------------------
class OnnxRuntimeBackend:
    """onnxruntime with IO binding: inputs and outputs live in preallocated numpy buffers, state double-buffered."""

    def __init__(self, onnx_path: Path, io: dict, batch: int, *, threads: int, providers: list[str] | None) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise BundleError(f"onnxruntime is not importable ({exc}); pip install onnxruntime") from None
        self.version = ort.__version__
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(onnx_path), opts, providers=providers or ["CPUExecutionProvider"])
        self.obs = np.zeros((batch, io["obs_dim"]), dtype=np.float32)
        self.actions = np.zeros((batch, io["num_actions"]), dtype=np.float32)
        # states[k][j]: buffer j of state k; binding j reads buffer j and writes buffer 1 - j.
        self.states = [[np.zeros((batch, *s["shape"][1:]), dtype=np.float32) for _ in range(2)] for s in io["state"]]
        value = ort.OrtValue.ortvalue_from_numpy
        self.bindings = []
        for j in range(2):
            b = self.session.io_binding()
            b.bind_ortvalue_input("obs", value(self.obs))
            b.bind_ortvalue_output("actions", value(self.actions))
            for s, bufs in zip(io["state"], self.states):
                b.bind_ortvalue_input(s["input"], value(bufs[j]))
                b.bind_ortvalue_output(s["output"], value(bufs[1 - j]))
            self.bindings.append(b)
        self.current = 0

    def run(self) -> None:
        self.session.run_with_iobinding(self.bindings[self.current])
        if self.states:
            self.current = 1 - self.current

    def state(self) -> list[np.ndarray]:
        return [bufs[self.current] for bufs in self.states]

    def zero_state(self, rows: np.ndarray) -> None:
        for bufs in self.states:
            bufs[self.current][rows] = 0.0


class TensorRTBackend:
    """A TensorRT engine built on this host by build_engine.py; state double-buffered in device memory."""

    def __init__(self, engine_path: Path, io: dict, batch: int) -> None:
        import tensorrt as trt

        self.version = trt.__version__
        self.cuda = CudaDriver()
        self._logger = trt.Logger(trt.Logger.WARNING)
        runtime = trt.Runtime(self._logger)
        self.engine = runtime.deserialize_cuda_engine(engine_path.read_bytes())
        if self.engine is None:
            raise BundleError(f"{engine_path}: TensorRT could not deserialize the engine")
        self.context = self.engine.create_execution_context()
        self.stream = self.cuda.stream()
        names = {self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)}
        wanted = {"obs", "actions", *(s["input"] for s in io["state"]), *(s["output"] for s in io["state"])}
        if names != wanted:
            raise BundleError(f"{engine_path}: engine tensors {sorted(names)} differ from the bundle's "
                              f"{sorted(wanted)}")
        for name in names:
            if self.engine.get_tensor_dtype(name) != trt.float32:
                raise BundleError(f"{engine_path}: tensor {name} is {self.engine.get_tensor_dtype(name)}, not float32")
        self.obs = np.zeros((batch, io["obs_dim"]), dtype=np.float32)
        self.actions = np.zeros((batch, io["num_actions"]), dtype=np.float32)
        self.d_obs, self.d_actions = self.cuda.alloc(self.obs.nbytes), self.cuda.alloc(self.actions.nbytes)
        self.context.set_input_shape("obs", self.obs.shape)
        self.context.set_tensor_address("obs", self.d_obs)
        self.context.set_tensor_address("actions", self.d_actions)
        self.state_io = io["state"]
        self.state_shapes = [(batch, *s["shape"][1:]) for s in io["state"]]
        self.d_states = []
        for s, shape in zip(io["state"], self.state_shapes):
            nbytes = int(np.prod(shape)) * 4
            bufs = [self.cuda.alloc(nbytes), self.cuda.alloc(nbytes)]
            for p in bufs:
                self.cuda.zero(p, nbytes)
            self.d_states.append(bufs)
            self.context.set_input_shape(s["input"], shape)
        self.current = 0

    def run(self) -> None:
        self.cuda.to_device(self.d_obs, self.obs)
        for s, bufs in zip(self.state_io, self.d_states):
            self.context.set_tensor_address(s["input"], bufs[self.current])
            self.context.set_tensor_address(s["output"], bufs[1 - self.current])
        if not self.context.execute_async_v3(self.stream):
            raise BundleError("TensorRT execute_async_v3 failed")
        self.cuda.synchronize(self.stream)
        self.cuda.to_host(self.actions, self.d_actions)
        if self.d_states:
            self.current = 1 - self.current

    def state(self) -> list[np.ndarray]:
        out = []
        for shape, bufs in zip(self.state_shapes, self.d_states):
            host = np.empty(shape, dtype=np.float32)
            self.cuda.to_host(host, bufs[self.current])
            out.append(host)
        return out

    def zero_state(self, rows: np.ndarray) -> None:
        for shape, bufs in zip(self.state_shapes, self.d_states):
            row_bytes = int(np.prod(shape[1:])) * 4
            for r in np.flatnonzero(rows):
                self.cuda.zero(bufs[self.current] + int(r) * row_bytes, row_bytes)


# --- the runner ----------------------------------------------------------------------------------------------------
class PolicyRunner:
    """One exported policy for ``batch`` robots (or envs): checked inputs, carried recurrent state.

    ``backend`` is ``onnxruntime`` or ``tensorrt``; ``engine`` defaults to ``<bundle>/policy.engine``. ``host``
    overrides :func:`host_fingerprint` (for tests of the engine check on machines without a GPU).
    """

    def __init__(self, bundle: str | Path, *, batch: int = 1, backend: str = "onnxruntime",
                 engine: str | Path | None = None, threads: int = 1, providers: list[str] | None = None,
                 host: dict | None = None) -> None:
        self.bundle = Path(bundle)
        self.spec = load_spec(self.bundle)
        if not isinstance(batch, int) or batch < 1:
            raise PolicyInputError(f"batch must be a positive int, got {batch!r}")
        self.batch = batch
        obs_terms = self.spec["observation"]["terms"]
        self.obs_names = [t["name"] for t in obs_terms]
        self.obs_dim = int(self.spec["observation"]["dim"])
        self.num_actions = len(self.spec["action"]["names"])
        state = (self.spec.get("recurrent") or {}).get("state", [])
        io = {"obs_dim": self.obs_dim, "num_actions": self.num_actions, "state": state}
        self._column_names = []
        for t in obs_terms:
            lo, hi = t["slice"]
            self._column_names += [t["name"]] if hi - lo == 1 else [f"{t['name']}[{k}]" for k in range(hi - lo)]
        onnx_path = self.bundle / self.spec["onnx"]["file"]
        if backend == "onnxruntime":
            self._backend = OnnxRuntimeBackend(onnx_path, io, batch, threads=threads, providers=providers)
        elif backend == "tensorrt":
            engine_path = Path(engine) if engine else self.bundle / DEFAULT_ENGINE
            self._check_engine(engine_path, batch, host)
            self._backend = TensorRTBackend(engine_path, io, batch)
        else:
            raise BundleError(f"unknown backend '{backend}'; valid backends: onnxruntime, tensorrt")
        self.backend = backend
        action = self.spec["action"]
        self._scale = np.asarray(action["scale"], dtype=np.float32)
        self._offset = np.asarray(action["offset"], dtype=np.float32)
        self._clip = action["clip"]
        self._squash = action.get("squash", "clip")
        if self._squash not in ("clip", "tanh"):
            raise BundleError(f"unknown action squash '{self._squash}'; valid: clip, tanh")

    def _check_engine(self, engine_path: Path, batch: int, host: dict | None) -> None:
        record_path = engine_record_path(engine_path)
        if not engine_path.is_file():
            raise BundleError(f"{engine_path}: no TensorRT engine; build one on this machine with: "
                              f"python build_engine.py --bundle {self.bundle}")
        if not record_path.is_file():
            raise EngineMismatchError(f"{engine_path}: no {record_path.name} next to it, so nothing says which "
                                      f"host built it; rebuild it with: python build_engine.py")
        try:
            record = json.loads(record_path.read_text())
        except ValueError as exc:
            raise EngineMismatchError(f"{record_path}: unreadable JSON: {exc}") from None
        check_engine_record(record, onnx_sha256=self.spec["onnx"]["sha256"], engine_sha256=sha256_file(engine_path),
                            host=None)
        check_engine_record(record, onnx_sha256=self.spec["onnx"]["sha256"], engine_sha256=None,
                            host=host if host is not None else host_fingerprint())
        max_batch = int(record.get("profile", {}).get("max_batch", 0))
        if batch > max_batch:
            raise EngineMismatchError(f"{engine_path}: built for batch <= {max_batch}, asked for {batch}; rebuild "
                                      f"with: python build_engine.py --max-batch {batch}")

    # --- the control-loop calls ------------------------------------------------------------------------------
    def check_obs(self, obs: object) -> np.ndarray:
        """Raise :class:`PolicyInputError` unless ``obs`` is a finite float32 array [batch, obs_dim]."""
        if not isinstance(obs, np.ndarray):
            raise PolicyInputError(f"obs must be a numpy array, got {type(obs).__name__}")
        if obs.dtype != np.float32:
            raise PolicyInputError(f"obs dtype is {obs.dtype}, expected float32 (convert with obs.astype(np.float32))")
        if obs.shape != (self.batch, self.obs_dim):
            raise PolicyInputError(f"obs shape is {obs.shape}, expected {(self.batch, self.obs_dim)} = "
                                   f"(batch, obs_dim) with columns {', '.join(self._column_names)}")
        bad = ~np.isfinite(obs)
        if bad.any():
            rows, cols = np.nonzero(bad)
            where = ", ".join(f"{self._column_names[c]} (row {r}) = {obs[r, c]}" for r, c in zip(rows[:4], cols[:4]))
            raise PolicyInputError(f"obs has {int(bad.sum())} non-finite value(s): {where}")
        return obs

    def reset(self, mask: object = None) -> None:
        """Start new episodes: zero the recurrent state of every row, or of the rows where ``mask`` (bool [batch])."""
        if mask is None:
            rows = np.ones(self.batch, dtype=bool)
        else:
            if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != (self.batch,):
                got = f"{type(mask).__name__} {getattr(mask, 'dtype', '')} {getattr(mask, 'shape', '')}".strip()
                raise PolicyInputError(f"reset mask must be a bool numpy array of shape ({self.batch},), got {got}")
            rows = mask
        if rows.any():
            self._backend.zero_state(rows)

    def step(self, obs: np.ndarray) -> np.ndarray:
        """Actions in [-1, 1], float32 [batch, num_actions], for raw observations ``obs`` [batch, obs_dim]."""
        np.copyto(self._backend.obs, self.check_obs(obs))
        self._backend.run()
        return self._backend.actions.copy()

    def command(self, actions: np.ndarray) -> np.ndarray:
        """Physical command per action column: ``offset + scale * squash(actions)`` in the action's unit (squash:
        clip to ``policy.json``'s ``action.clip``, or tanh of the action when its ``action.squash`` says so; a
        null clip clips nothing)."""
        a = actions if self._clip is None else np.clip(actions, self._clip[0], self._clip[1])
        return self._offset + self._scale * (np.tanh(a) if self._squash == "tanh" else a)

    @property
    def state(self) -> dict[str, np.ndarray]:
        """Copies of the recurrent state tensors by ONNX input name (empty for feed-forward policies)."""
        specs = (self.spec.get("recurrent") or {}).get("state", [])
        return {s["input"]: a.copy() for s, a in zip(specs, self._backend.state())}

    @property
    def runtime(self) -> str:
        """Backend and its version, e.g. ``onnxruntime 1.31.1``."""
        return f"{self.backend} {self._backend.version}"


# --- self-test -----------------------------------------------------------------------------------------------------
def selftest(bundle: str | Path, *, backend: str = "onnxruntime", engine: str | Path | None = None,
             host: dict | None = None) -> dict:
    """Replay ``golden_io.npz`` through a runner (carrying its own recurrent state, resetting where the recording
    did) and compare actions and states with the recorded ones. Returns figures; ``passed`` says the verdict."""
    bundle = Path(bundle)
    spec = load_spec(bundle)
    golden_path = bundle / spec["golden"]["file"]
    if not golden_path.is_file():
        raise BundleError(f"{bundle}: {spec['golden']['file']} is missing")
    with np.load(golden_path) as g:
        data = {k: g[k] for k in g.files}
    obs, actions, resets = data["obs"], data["actions"], data["resets"]
    steps, batch = obs.shape[:2]
    runner = PolicyRunner(bundle, batch=batch, backend=backend, engine=engine, host=host)
    allowed = np.asarray(spec["golden"]["action_tolerance"], dtype=np.float64)
    state_tol = float(spec["golden"]["state_tolerance"])
    state_specs = (spec.get("recurrent") or {}).get("state", [])
    worst, worst_state, ratio = 0.0, 0.0, 0.0
    for t in range(steps):
        runner.reset(resets[t])
        got = runner.step(obs[t])
        err = np.abs(got.astype(np.float64) - actions[t]).max(axis=0)
        worst = max(worst, float(err.max()))
        ratio = max(ratio, float((err / allowed).max()))
        for s, value in zip(state_specs, runner.state.values()):
            worst_state = max(worst_state, float(np.abs(value - data[s["output"]][t]).max()))
    passed = ratio <= 1.0 and worst_state <= state_tol
    return {"passed": bool(passed), "steps": int(steps), "batch": int(batch), "runtime": runner.runtime,
            "precision": spec["precision"], "max_abs_action_err": worst, "action_tolerance": allowed.tolist(),
            "err_over_tolerance": ratio, "max_abs_state_err": worst_state, "state_tolerance": state_tol}


def describe(spec: dict) -> str:
    """The observation and action layout of a bundle, one line per column."""
    lines = [f"{spec['task']} policy ({spec['precision']}), control period {spec['control']['dt']} s"]
    for t in spec["observation"]["terms"]:
        ago = f", {t['lag']} step(s) ago" if t.get("lag") else ""
        lines.append(f"  obs[{t['slice'][0]}:{t['slice'][1]}] {t['name']} [{t['unit'] or '-'}] scale {t['scale']} "
                     f"clip {t['clip']}{ago}")
    a = spec["action"]
    for k, name in enumerate(a["names"]):
        squash = "tanh(a)" if a.get("squash") == "tanh" else "a"
        clip = f", a clipped to {a['clip']}" if a["clip"] is not None else ""
        lines.append(f"  action[{k}] {name}: {a['type']} = {a['offset'][k]} + {a['scale'][k]} * {squash} "
                     f"[{a['unit']}]{clip}")
    if spec.get("recurrent"):
        r = spec["recurrent"]
        lines.append(f"  recurrent {r['type']}: " + ", ".join(f"{s['input']}->{s['output']} {s['shape']}"
                                                             for s in r["state"]))
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="run_policy.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--bundle", default=str(Path(__file__).resolve().parent),
                   help="bundle directory (default: the directory of this script)")
    p.add_argument("--backend", choices=("onnxruntime", "tensorrt"), default="onnxruntime")
    p.add_argument("--engine", default=None, help=f"TensorRT engine (default: <bundle>/{DEFAULT_ENGINE})")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--selftest", action="store_true", help="replay golden_io.npz and compare")
    mode.add_argument("--describe", action="store_true", help="print the observation and action layout")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.describe:
            print(describe(load_spec(args.bundle)))
            return 0
        res = selftest(args.bundle, backend=args.backend, engine=args.engine)
    except (BundleError, PolicyInputError) as exc:
        print(f"run_policy: error: {exc}", file=sys.stderr)
        return 2
    verdict = "PASS" if res["passed"] else "FAIL"
    print(f"selftest ({res['runtime']}, {res['precision']}): {res['steps']} steps x {res['batch']} envs, "
          f"max abs action error {res['max_abs_action_err']:.3g} ({res['err_over_tolerance']:.3g} x tolerance "
          f"{max(res['action_tolerance']):.3g}), max abs state error {res['max_abs_state_err']:.3g} "
          f"(<= {res['state_tolerance']:.3g}): {verdict}")
    return 0 if res["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
