"""Build a policy's observation vector from raw robot state and ``policy.json`` alone (numpy; no horde import).

``policy.json``'s ``observation.sources`` lists the observation's blocks in column order: each reads one raw
quantity (``source``, e.g. ``joint_pos``, ``projected_gravity``; the names and their units are horde's
``horde.envs.observations.SOURCES``) and feeds ``clip((raw - offset) * scale, -clip, clip)`` to the graph::

    spec = json.load(open("bundle/policy.json"))
    obs = build_observation(spec["observation"], {"joint_pos": q, "joint_vel": qd, ...})   # [batch, dim]

Every raw array is ``[batch, width]`` (or ``[width]`` for one robot) in the column order the block names
(``columns``). A missing source or a wrong width raises :class:`ObservationError` naming it.

A block with ``history`` H > 1 observes H frames of its source, newest first (``observation.history_layout``):
its slice spans H x the source's width, its ``offset`` and ``scale`` are one frame's, and the frames before the
newest are what the policy saw 1, 2, ... steps ago. The robot keeps them itself: :class:`ObservationFrames` holds
the last observation per row and moves the frames on at each call; the first call after
:meth:`ObservationFrames.reset` (an episode's start) fills every frame with the first value, as the env does::

    frames = ObservationFrames(spec["observation"])
    frames.reset()                                   # at every episode start
    obs = frames.build({"joint_pos": q, ...})        # once per control step

:func:`build_observation` (no state) refuses a bundle with history in one line.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["ObservationError", "ObservationFrames", "build_observation", "required_sources"]


class ObservationError(ValueError):
    """Raw state that does not match the bundle's observation blocks."""


def required_sources(obs_spec: Mapping) -> dict[str, int]:
    """Each raw source the bundle reads, with its width (one frame's)."""
    return {b["source"]: _frame_width(b) for b in _blocks(obs_spec)}


def build_observation(obs_spec: Mapping, raw: Mapping[str, np.ndarray]) -> np.ndarray:
    """The observation vector, float32 ``[batch, dim]``, from ``raw`` source arrays (see the module docstring); a
    bundle whose blocks keep a history needs the frames before: :class:`ObservationFrames` builds it."""
    kept = [b for b in _blocks(obs_spec) if b.get("history", 1) > 1]
    if kept:
        raise ObservationError(f"block '{kept[0]['term']}' observes {kept[0]['history']} frames of its source: build "
                               "the observation with ObservationFrames, which keeps them")
    return _newest(obs_spec, raw)


class ObservationFrames:
    """The observation vector of a bundle whose blocks may keep a history, step after step (the module docstring):
    the last observation of each row is kept, and each call moves every history block's frames one frame on before
    it writes the newest. Blocks without history are as :func:`build_observation` writes them."""

    def __init__(self, obs_spec: Mapping) -> None:
        self.spec = obs_spec
        self.blocks = _blocks(obs_spec)
        self.last: np.ndarray | None = None
        """The last observation built, float32 [batch, dim]; None before the first call."""
        self.fresh: np.ndarray | None = None
        """Rows whose next observation fills every frame (their episode just started); None: every row."""

    def reset(self, mask: np.ndarray | None = None) -> None:
        """Rows in ``mask`` (bool [batch]; None: every row) start an episode: their next observation fills every
        frame with its value."""
        if mask is None or self.last is None:
            self.fresh = None
            return
        mask = np.asarray(mask, dtype=bool).reshape(-1)
        if mask.shape[0] != self.last.shape[0]:
            raise ObservationError(f"reset mask has {mask.shape[0]} rows, the observations {self.last.shape[0]}")
        if self.fresh is not None:  # None: every row fills already
            self.fresh = self.fresh | mask

    def build(self, raw: Mapping[str, np.ndarray]) -> np.ndarray:
        """The observation vector, float32 ``[batch, dim]``, from this step's ``raw`` source arrays."""
        out = _newest(self.spec, raw)
        batch = out.shape[0]
        if self.last is not None and self.last.shape[0] != batch:
            raise ObservationError(f"raw state has {batch} rows, the frames kept {self.last.shape[0]}")
        fresh = (np.ones(batch, dtype=bool) if self.last is None or self.fresh is None else self.fresh)
        for b in self.blocks:
            history = b.get("history", 1)
            if history == 1:
                continue
            lo, hi = b["slice"]
            w = (hi - lo) // history
            if self.last is not None:  # frame f is the last call's frame f - 1
                out[:, lo + w:hi] = self.last[:, lo:hi - w]
            out[fresh, lo:hi] = np.tile(out[fresh, lo:lo + w], (1, history))
        self.last, self.fresh = out.copy(), np.zeros(batch, dtype=bool)
        return out


def _newest(obs_spec: Mapping, raw: Mapping[str, np.ndarray]) -> np.ndarray:
    """The observation with each block's newest frame written (older frames zero)."""
    blocks = _blocks(obs_spec)
    missing = sorted({b["source"] for b in blocks} - set(raw))
    if missing:
        raise ObservationError(f"raw state lacks source(s) {missing}; the bundle reads "
                               f"{sorted(required_sources(obs_spec))}")
    batch = None
    out = None
    for b in blocks:
        lo = b["slice"][0]
        w = _frame_width(b)
        x = np.asarray(raw[b["source"]], dtype=np.float64)
        x = x.reshape(1, -1) if x.ndim == 1 else x.reshape(x.shape[0], -1)
        if x.shape[1] != w:
            raise ObservationError(f"source '{b['source']}' has {x.shape[1]} columns, the bundle's block "
                                   f"'{b['term']}' reads {w}")
        if out is None:
            batch = x.shape[0]
            out = np.zeros((batch, int(obs_spec["dim"])), dtype=np.float32)
        elif x.shape[0] != batch:
            raise ObservationError(f"source '{b['source']}' has {x.shape[0]} rows, others {batch}")
        y = (x - np.asarray(b["offset"], dtype=np.float64)) * np.asarray(b["scale"], dtype=np.float64)
        if b.get("clip") is not None:
            y = np.clip(y, -b["clip"], b["clip"])
        out[:, lo:lo + w] = y
    return out


def _frame_width(block: Mapping) -> int:
    """Columns of one frame of a block: its slice's width over its ``history`` (1 where a bundle states none)."""
    lo, hi = block["slice"]
    return (hi - lo) // int(block.get("history", 1))


def _blocks(obs_spec: Mapping) -> list[dict]:
    blocks = obs_spec.get("sources")
    if not blocks:
        raise ObservationError("policy.json's observation has no 'sources' blocks (a bundle exported before "
                               "2026-11-26): re-export it with horde export")
    return list(blocks)
