"""Checkpoints: written atomically, read only with ``torch.load(weights_only=True)``, versioned and migrated."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import tempfile
from pathlib import Path

import torch

from horde.train.config import SCHEMA_VERSION, from_container


class CheckpointError(RuntimeError):
    """A missing, truncated, corrupt or incompatible checkpoint; the message is one line naming the file."""


TEMP_GLOB = ".*.pt.*"
"""Names of the temporary files :func:`save_checkpoint` writes before the rename (``.model_50.pt.<random>.tmp``):
what a process killed mid-write leaves behind, removed by :func:`remove_temporaries`."""


def save_checkpoint(path: str | Path, payload: dict) -> Path:
    """Write ``payload`` to ``path`` atomically: a crash mid-write never leaves a truncated checkpoint behind (a
    kill leaves at most a temporary file, which the next run on the directory removes)."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            torch.save({"schema_version": SCHEMA_VERSION, **payload}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:  # a full disk, a file-size limit, permissions: one line, the last checkpoint intact
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        cause = f"{exc.strerror or exc} ({errno.errorcode.get(exc.errno, exc.errno)})"
        raise CheckpointError(f"could not write {path}: {cause}; the checkpoint before it is intact") from None
    except BaseException:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise
    return path


def remove_temporaries(run_dir: str | Path) -> list[Path]:
    """Delete the temporary checkpoint files a killed process left in ``run_dir``; returns them. Call it only while
    holding the directory's lock (:class:`horde.train.session.RunLock`): a live writer's file would go too."""
    removed = []
    for p in Path(run_dir).glob(TEMP_GLOB):
        if p.is_file() and not p.is_symlink():
            p.unlink(missing_ok=True)
            removed.append(p)
    return removed


def migrate(data: dict, path: Path) -> dict:
    """Bring a checkpoint from an older schema to :data:`SCHEMA_VERSION` (the one place that knows old layouts)."""
    version = data.get("schema_version")
    if version is None:
        raise CheckpointError(f"{path}: not a horde checkpoint (no schema_version)")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise CheckpointError(f"{path}: schema version {version} is newer than this horde ({SCHEMA_VERSION}); upgrade")
    # Version 1 is the first layout: nothing to migrate yet. Add steps here as `if version == 1: ...; version = 2`.
    return data


REQUIRED = ("iteration", "task", "config", "actor_state_dict")


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict:
    """Load and validate a checkpoint, or raise :class:`CheckpointError` with one line naming the problem."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    try:
        data = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many types for truncated or foreign files
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "Weights only load failed" in reason:  # torch's advice to load it unsafely does not apply to a horde file
            reason = "it holds objects other than tensors and plain values (a horde checkpoint never does)"
        raise CheckpointError(f"{path}: unreadable checkpoint (truncated, corrupt or not saved by horde): {reason}") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: not a horde checkpoint (holds a {type(data).__name__}, not a dict)")
    data = migrate(data, path)
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise CheckpointError(f"{path}: checkpoint lacks {', '.join(missing)}")
    return data


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """``model_<iter>.pt`` files in ``run_dir``, oldest iteration first."""
    files = []
    for p in Path(run_dir).glob("model_*.pt"):
        m = re.fullmatch(r"model_(\d+)\.pt", p.name)
        if m:
            files.append((int(m.group(1)), p))
    return [p for _, p in sorted(files)]


def resolve_checkpoint(run: str | Path) -> Path:
    """A checkpoint file, or the latest one in a run directory; one-line errors otherwise."""
    run = Path(run)
    if run.is_file():
        return run
    if not run.exists():
        raise CheckpointError(f"{run}: no such run directory or checkpoint")
    ckpts = list_checkpoints(run)
    if not ckpts:
        raise CheckpointError(f"{run}: run directory holds no model_<iter>.pt checkpoint")
    return ckpts[-1]


def sha256(path: str | Path) -> str:
    """Hex sha256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_policy(run: str | Path, *, precision: str = "fp32") -> tuple:
    """``(policy, checkpoint dict, typed run config, checkpoint path)`` of a run's latest checkpoint (or of a
    checkpoint file): the deterministic :class:`~horde.policies.InferencePolicy` (a recurrent actor gives a
    :class:`~horde.policies.RecurrentInferencePolicy`) that play, evaluation and export run."""
    from horde.policies import build_actor, clips_actions, make_inference_policy

    path = resolve_checkpoint(run)
    ckpt = load_checkpoint(path)
    cfg = from_container(ckpt["config"], ckpt["task"])
    actor = build_actor(cfg.algo.policy, int(ckpt["obs_dim"]), int(ckpt["num_actions"]), ckpt.get("obs_images", ()))
    try:
        actor.load_state_dict(ckpt["actor_state_dict"])
    except RuntimeError as exc:
        reason = str(exc).splitlines()[0]
        raise CheckpointError(f"{path}: actor weights do not fit the configured network: {reason}") from None
    return make_inference_policy(actor, precision, clip=clips_actions(cfg.task)), ckpt, cfg, path
