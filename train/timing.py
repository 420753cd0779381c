"""Wall-time split of a training iteration (simulation, policy inference, learning, other) without host syncs.

On CUDA each phase boundary records an event and the iteration reads them once at its end; on CPU phases are
timed with ``perf_counter`` (Warp's CPU kernels and torch's CPU ops finish before they return).
"""

from __future__ import annotations

import time
from collections import defaultdict

import torch

PHASES = ("sim", "inference", "learn", "other")


class PhaseTimer:
    """Accumulates seconds per phase; ``mark(phase)`` closes the interval since the previous mark."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.totals: dict[str, float] = defaultdict(float)
        self._pending: list[tuple[str, object, object]] = []
        self._last = self._now()

    def _now(self):
        if self.cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def start(self) -> None:
        """Begin timing from now (time before this is not counted)."""
        self._last = self._now()

    def mark(self, phase: str) -> None:
        """Charge the time since the last mark to ``phase``."""
        now = self._now()
        if self.cuda:
            self._pending.append((phase, self._last, now))
        else:
            self.totals[phase] += now - self._last  # type: ignore[operator]
        self._last = now

    def collect(self) -> dict[str, float]:
        """Seconds per phase since the last collect (syncs once on CUDA), then reset."""
        if self.cuda and self._pending:
            self._pending[-1][2].synchronize()  # type: ignore[union-attr]
            for phase, a, b in self._pending:
                self.totals[phase] += a.elapsed_time(b) / 1000.0  # type: ignore[union-attr]
            self._pending.clear()
        out = {p: self.totals.get(p, 0.0) for p in PHASES}
        self.totals.clear()
        return out
