"""The precision an actor computes in while it acts and learns (``algo.rollout_precision``), and ships in.

:func:`act_in_precision` makes the actor's MLP run its forward pass under torch autocast in ``fp16`` or ``bf16``
(fp32 master weights, fp32 output), in rollouts and in PPO's update alike, so PPO's ratio compares the log-
probabilities of the same quantized forward pass that acted; ``horde export`` defaults to that precision. The MLP's
class becomes a subclass of its own (as ``torch.nn.utils.parametrize`` does): ``isinstance`` checks, state-dict
keys and copies are unchanged, and the precision is readable from the module (:func:`actor_precision`).
"""

from __future__ import annotations

import functools

import torch

__all__ = ["PRECISIONS", "act_in_precision", "actor_precision"]

PRECISIONS = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
"""``algo.rollout_precision``'s choices and their torch dtypes."""


@functools.lru_cache(maxsize=None)
def _autocast_class(base: type, precision: str) -> type:
    """``base`` (a module class) whose forward runs under autocast in ``precision`` and returns fp32."""
    dtype = PRECISIONS[precision]

    class Autocast(base):
        rollout_precision = precision

        def forward(self, x):
            with torch.autocast(device_type=x.device.type, dtype=dtype):
                return super().forward(x).float()

    Autocast.__name__ = Autocast.__qualname__ = f"{base.__name__}In{precision.upper()}"
    return Autocast


def act_in_precision(actor: torch.nn.Module, precision: str) -> torch.nn.Module:
    """Make ``actor``'s MLP (``actor.mlp``) compute in ``precision`` (module docstring); ``fp32`` leaves it as it
    is. Applying a second precision replaces the first."""
    if precision not in PRECISIONS:
        raise ValueError(f"rollout precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    mlp = actor.mlp
    base = type(mlp)
    while getattr(base, "rollout_precision", None) is not None:  # already swapped: start from the original class
        base = base.__bases__[0]
    if PRECISIONS[precision] is not torch.float32:
        mlp.__class__ = _autocast_class(base, precision)
    else:
        mlp.__class__ = base
    return actor


def actor_precision(actor: torch.nn.Module) -> str:
    """The precision :func:`act_in_precision` set on ``actor`` (``fp32`` when none)."""
    return getattr(actor.mlp, "rollout_precision", None) or "fp32"
