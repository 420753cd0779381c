"""Batched worlds on Warp: devices, graph-replayed steps, hand-written classic-control dynamics, and
differentiable control steps into torch."""

from horde.sim.device import Device, resolve_device
from horde.sim.diff import (
    DiffRollout,
    DiffTask,
    NotDifferentiableError,
    ZeroGradientError,
)
from horde.sim.graph import StepGraph

__all__ = [
    "DiffRollout",
    "DiffTask",
    "Device",
    "NotDifferentiableError",
    "StepGraph",
    "ZeroGradientError",
    "resolve_device",
]
