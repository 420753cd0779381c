"""Training: typed config, PPO runner on rsl-rl, checkpoints, evaluation, and the ``horde`` command line."""

from horde._lazy import lazy_exports

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

__getattr__, __dir__ = lazy_exports(__name__, _HOME)
