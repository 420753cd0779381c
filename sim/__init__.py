"""Batched worlds on Warp: devices, graph-replayed steps, and hand-written classic-control dynamics."""

from horde.sim.device import Device, resolve_device
from horde.sim.graph import StepGraph

__all__ = ["Device", "StepGraph", "resolve_device"]
