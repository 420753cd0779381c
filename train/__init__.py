"""Training: typed config, PPO runner on rsl-rl, checkpoints, evaluation, and the ``horde`` command line."""

import importlib

__all__ = [
    "CheckpointError",
    "ConfigError",
    "PPOConfig",
    "TrainConfig",
    "compose",
    "load_checkpoint",
    "save_checkpoint",
]

_HOME = {"CheckpointError": "checkpoint", "load_checkpoint": "checkpoint", "save_checkpoint": "checkpoint",
         "ConfigError": "config", "PPOConfig": "config", "TrainConfig": "config", "compose": "config"}
"""Where each public name lives. They are imported on first use (PEP 562): the ``horde`` command imports this
package first, and ``horde --help`` and ``horde tasks`` must not pay for torch (~2-4 s) through ``config``."""


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"horde.train.{_HOME[name]}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
