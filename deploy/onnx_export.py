"""``horde export``: checkpoint -> ``exported/policy.onnx`` + ``exported/policy.json``, then a parity check.

The ONNX graph is the deterministic policy (observation normalizer -> MLP -> action mean -> clip to [-1, 1]) with
input ``obs`` [batch, obs_dim] and output ``actions`` [batch, num_actions], a symbolic batch axis, opset 18, IR
version 9 (readable by onnxruntime >= 1.16), all weights inside the one file, and horde's metadata embedded.
"""

from __future__ import annotations

import json
import platform
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

import horde
from horde.policies import InferencePolicy, build_actor
from horde.train.checkpoint import load_checkpoint, resolve_checkpoint, sha256
from horde.train.config import from_container

OPSET = 18
IR_VERSION = 9
POLICY_JSON_SCHEMA = 1


class ExportError(RuntimeError):
    """Export or verification failed; the message is one line."""


@dataclass
class ExportReport:
    """What ``horde export`` wrote and measured."""

    onnx_path: str
    json_path: str
    checkpoint: str
    parity_samples: int
    onnx_max_abs_err: float
    tolerance: float

    @property
    def passed(self) -> bool:
        """Parity within tolerance."""
        return self.onnx_max_abs_err <= self.tolerance


def load_policy(run: str | Path) -> tuple[InferencePolicy, dict, object, Path]:
    """The deterministic policy of a run's latest checkpoint (or of a checkpoint file), its checkpoint dict,
    the typed run config and the checkpoint path."""
    path = resolve_checkpoint(run)
    ckpt = load_checkpoint(path)
    cfg = from_container(ckpt["config"], ckpt["task"])
    actor = build_actor(cfg.algo.policy, int(ckpt["obs_dim"]), int(ckpt["num_actions"]))
    try:
        actor.load_state_dict(ckpt["actor_state_dict"])
    except RuntimeError as exc:
        raise ExportError(f"{path}: actor weights do not fit the configured network: {str(exc).splitlines()[0]}") from None
    return InferencePolicy(actor), ckpt, cfg, path


def _export_onnx(policy: InferencePolicy, path: Path, metadata: dict) -> None:
    import logging
    import warnings

    import onnx

    logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # torchvision-op registration chatter
    example = torch.zeros(4, policy.obs_dim)  # batch >= 2 so the exporter cannot specialise the batch to 1
    batch = torch.export.Dim("batch", min=1, max=1 << 16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        program = torch.onnx.export(
            policy, (example,), input_names=["obs"], output_names=["actions"], opset_version=OPSET, dynamo=True,
            dynamic_shapes=({0: batch},), external_data=False, verbose=False,
        )
    model = program.model_proto
    model.ir_version = min(model.ir_version, IR_VERSION)
    del model.metadata_props[:]
    for k, v in metadata.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = k, v if isinstance(v, str) else json.dumps(v)
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(path), save_as_external_data=False)
    dims = onnx.load(str(path)).graph.input[0].type.tensor_type.shape.dim
    if not dims or not dims[0].dim_param or dims[0].HasField("dim_value"):
        raise ExportError(f"{path}: batch axis of input 'obs' is not symbolic after export ({dims[0] if dims else None})")


@torch.inference_mode()
def record_observations(policy: InferencePolicy, task: str, cfg, *, num_envs: int, steps: int,
                        seed: int = 777) -> np.ndarray:
    """Observations met by ``policy`` in closed loop, [steps, num_envs, obs_dim] float32."""
    from horde.envs import make

    core = make(task, num_envs=num_envs, device="cpu", seed=seed, config=cfg.task)
    out = np.empty((steps, num_envs, core.obs_dim), dtype=np.float32)
    obs = core.obs
    for t in range(steps):
        out[t] = obs.numpy()
        obs = core.step(policy(obs)).obs
    return out


def onnx_parity(onnx_path: Path, policy: InferencePolicy, observations: np.ndarray) -> float:
    """Max |onnxruntime - torch| over every recorded step (batched), plus batch-1 calls on the first step."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
    err = 0.0
    with torch.inference_mode():
        for batch in observations:
            ref = policy(torch.from_numpy(batch)).numpy()
            got = sess.run(["actions"], {"obs": batch})[0]
            err = max(err, float(np.max(np.abs(got - ref))))
        for row in observations[0][:8]:
            ref = policy(torch.from_numpy(row[None])).numpy()
            got = sess.run(["actions"], {"obs": row[None]})[0]
            err = max(err, float(np.max(np.abs(got - ref))))
    return err


def export_run(run: str | Path, *, out_dir: str | Path | None = None, tolerance: float = 1e-5,
               parity_envs: int = 16, parity_steps: int = 200) -> ExportReport:
    """Export a run's latest checkpoint and verify it; raises :class:`ExportError` on a failed check."""
    import onnx
    import onnxruntime

    from horde.envs import make

    policy, ckpt, cfg, ckpt_path = load_policy(run)
    task = ckpt["task"]
    run_dir = ckpt_path.parent
    out = Path(out_dir) if out_dir else run_dir / "exported"
    layout = make(task, num_envs=1, device="cpu", config=cfg.task).describe()
    ckpt_sha = sha256(ckpt_path)
    meta = {
        "horde_version": horde.__version__, "task": task, "obs_names": layout["obs_names"],
        "action_names": layout["action_names"], "control_dt": layout["control_dt"],
        "checkpoint_sha256": ckpt_sha, "checkpoint_iteration": int(ckpt["iteration"]),
    }
    onnx_path = out / "policy.onnx"
    _export_onnx(policy, onnx_path, meta)
    observations = record_observations(policy, task, cfg, num_envs=parity_envs, steps=parity_steps)
    err = onnx_parity(onnx_path, policy, observations)
    np.savez_compressed(out / "parity_obs.npz", obs=observations)
    info = {
        "schema_version": POLICY_JSON_SCHEMA,
        "task": task,
        "onnx": {"file": onnx_path.name, "sha256": sha256(onnx_path), "opset": OPSET, "ir_version": IR_VERSION,
                 "input": {"name": "obs", "shape": ["batch", len(layout["obs_names"])], "dtype": "float32"},
                 "output": {"name": "actions", "shape": ["batch", len(layout["action_names"])], "dtype": "float32"}},
        "observation": {"names": layout["obs_names"],
                        "slices": {n: [i, i + 1] for i, n in enumerate(layout["obs_names"])},
                        "normalizer": policy.normalizer_stats(), "normalizer_in_graph": True},
        "action": {"names": layout["action_names"], "clip": [-1.0, 1.0], "scale": layout["action_scale"],
                   "unit": layout["action_unit"], "type": layout["action_type"]},
        "control_dt": layout["control_dt"],
        "decimation": layout["decimation"],
        "episode_length": layout["episode_length"],
        "task_config": layout["config"],
        "checkpoint": {"file": str(ckpt_path), "iteration": int(ckpt["iteration"]), "sha256": ckpt_sha},
        "parity": {"onnxruntime_max_abs_err": err, "tolerance": tolerance, "samples": int(observations.shape[0] *
                   observations.shape[1]), "recorded": "parity_obs.npz"},
        "versions": {"horde": horde.__version__, "torch": torch.__version__, "onnx": onnx.__version__,
                     "onnxruntime": onnxruntime.__version__, "python": platform.python_version()},
    }
    json_path = out / "policy.json"
    json_path.write_text(json.dumps(info, indent=2))
    report = ExportReport(str(onnx_path), str(json_path), str(ckpt_path), info["parity"]["samples"], err, tolerance)
    if not report.passed:
        raise ExportError(f"{onnx_path}: onnxruntime differs from torch by {err:.3g} > {tolerance:g}")
    return report


def report_dict(report: ExportReport) -> dict:
    """JSON-ready form of a report."""
    return {**asdict(report), "passed": report.passed}
