"""Build a policy's observation vector from raw robot state and ``policy.json`` alone (numpy; no horde import).

``policy.json``'s ``observation.sources`` lists the observation's blocks in column order: each reads one raw
quantity (``source``, e.g. ``joint_pos``, ``projected_gravity``; the names and their units are horde's
``horde.envs.observations.SOURCES``) and feeds ``clip((raw - offset) * scale, -clip, clip)`` to the graph::

    spec = json.load(open("bundle/policy.json"))
    obs = build_observation(spec["observation"], {"joint_pos": q, "joint_vel": qd, ...})   # [batch, dim]

Every raw array is ``[batch, width]`` (or ``[width]`` for one robot) in the column order the block names
(``columns``). A missing source or a wrong width raises :class:`ObservationError` naming it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["ObservationError", "build_observation", "required_sources"]


class ObservationError(ValueError):
    """Raw state that does not match the bundle's observation blocks."""


def required_sources(obs_spec: Mapping) -> dict[str, int]:
    """Each raw source the bundle reads, with its width."""
    return {b["source"]: b["slice"][1] - b["slice"][0] for b in _blocks(obs_spec)}


def build_observation(obs_spec: Mapping, raw: Mapping[str, np.ndarray]) -> np.ndarray:
    """The observation vector, float32 ``[batch, dim]``, from ``raw`` source arrays (see the module docstring)."""
    blocks = _blocks(obs_spec)
    missing = sorted({b["source"] for b in blocks} - set(raw))
    if missing:
        raise ObservationError(f"raw state lacks source(s) {missing}; the bundle reads "
                               f"{sorted(required_sources(obs_spec))}")
    batch = None
    out = None
    for b in blocks:
        lo, hi = b["slice"]
        x = np.asarray(raw[b["source"]], dtype=np.float64)
        x = x.reshape(1, -1) if x.ndim == 1 else x.reshape(x.shape[0], -1)
        if x.shape[1] != hi - lo:
            raise ObservationError(f"source '{b['source']}' has {x.shape[1]} columns, the bundle's block "
                                   f"'{b['term']}' reads {hi - lo}")
        if out is None:
            batch = x.shape[0]
            out = np.zeros((batch, int(obs_spec["dim"])), dtype=np.float32)
        elif x.shape[0] != batch:
            raise ObservationError(f"source '{b['source']}' has {x.shape[0]} rows, others {batch}")
        y = (x - np.asarray(b["offset"], dtype=np.float64)) * np.asarray(b["scale"], dtype=np.float64)
        if b.get("clip") is not None:
            y = np.clip(y, -b["clip"], b["clip"])
        out[:, lo:hi] = y
    return out


def _blocks(obs_spec: Mapping) -> list[dict]:
    blocks = obs_spec.get("sources")
    if not blocks:
        raise ObservationError("policy.json's observation has no 'sources' blocks (a bundle exported before "
                               "2026-11-26): re-export it with horde export")
    return list(blocks)
