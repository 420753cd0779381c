"""Trained policies that ship with horde (``assets/pretrained/<name>/``): ``horde play task=g1-velocity
pretrained=true`` plays one the minute horde is installed.

Each folder is a small run directory: ``model_<iteration>.pt`` (the actor only: no critic, optimizer or env
state), ``config.yaml``, ``exported/<bundle>/`` (its verified robot bundle) and ``provenance.json`` (the commit,
command, seed, date and machine that trained it and the scoreboard figures it reached, beside the task's target
and trivial baseline). ``benchmarks/ship_pretrained.py`` writes one from a finished run; the learning tier
(``tests/learning/test_pretrained.py``) scores every one on the current code against its target.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["PRETRAINED_DIR", "PretrainedError", "available", "provenance", "resolve", "strip_checkpoint"]

PRETRAINED_DIR = Path(__file__).resolve().parents[1] / "assets" / "pretrained"
"""Where the shipped policies live (inside the package: ``pip install horde`` carries them)."""

KEEP = ("schema_version", "iteration", "task", "horde_version", "config", "obs_dim", "obs_images", "num_actions",
        "actor_state_dict")
"""The checkpoint keys a shipped policy keeps: what play, export and verify read."""


class PretrainedError(ValueError):
    """No shipped policy by that name or for that task; one line that lists those there are."""


def available() -> dict[str, dict]:
    """Every shipped policy by name: its ``provenance.json``."""
    out = {}
    if PRETRAINED_DIR.is_dir():
        for p in sorted(PRETRAINED_DIR.glob("*/provenance.json")):
            out[p.parent.name] = json.loads(p.read_text())
    return out


def provenance(name: str) -> dict:
    """The ``provenance.json`` of shipped policy ``name``."""
    return json.loads((resolve(name) / "provenance.json").read_text())


def resolve(pretrained: str, task: str | None = None) -> Path:
    """The run directory of a shipped policy: ``pretrained`` is its name, or ``true`` for the one of ``task`` (the
    policy named as the task). One line when there is none."""
    have = available()
    listing = ", ".join(f"{n} ({p['task']})" for n, p in have.items()) or "none"
    if pretrained.lower() == "true":
        if task is None:
            raise PretrainedError(f"pretrained=true needs task=<name>; shipped policies: {listing}")
        name = task
        if name not in have:
            tasks = sorted({p["task"] for p in have.values()})
            raise PretrainedError(f"no pretrained policy ships for task '{task}'; tasks with one: "
                                  f"{', '.join(tasks) or 'none'}")
    else:
        name = pretrained
        if name not in have:
            import difflib

            near = difflib.get_close_matches(name, list(have), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise PretrainedError(f"unknown pretrained policy '{name}'{hint}; shipped policies: {listing}")
        if task is not None and have[name]["task"] != task:
            raise PretrainedError(f"pretrained={name} is a {have[name]['task']} policy, not {task}")
    return PRETRAINED_DIR / name


def tasks_with_pretrained() -> set[str]:
    """The tasks a shipped policy is for (read from the provenance files, no torch)."""
    return {p["task"] for p in available().values()}


def strip_checkpoint(ckpt: dict) -> dict:
    """The keys of a checkpoint that a shipped policy keeps (:data:`KEEP`): the actor and what reads it."""
    return {k: ckpt[k] for k in KEEP if k in ckpt}
