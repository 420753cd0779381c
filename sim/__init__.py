"""Batched worlds on Warp: devices, graph-replayed steps, hand-written classic-control dynamics, and
differentiable control steps into torch.

The names below are imported on first use (PEP 562): ``horde.sim.fields`` (the config schema's helpers) must not pay
for torch and Warp when only a config is composed or described (``horde train --help``)."""

from horde._lazy import lazy_exports

__all__ = [
    "DiffRollout",
    "DiffTask",
    "Device",
    "NotDifferentiableError",
    "StepGraph",
    "ZeroGradientError",
    "resolve_device",
]

_HOME = {"Device": "device", "resolve_device": "device", "DiffRollout": "diff", "DiffTask": "diff",
         "NotDifferentiableError": "diff", "ZeroGradientError": "diff", "StepGraph": "graph"}
"""Where each public name lives."""

__getattr__, __dir__ = lazy_exports(__name__, _HOME)
