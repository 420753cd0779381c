"""Training: typed config, PPO runner on rsl-rl, checkpoints, evaluation, and the ``horde`` command line."""

from horde.train.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from horde.train.config import ConfigError, PPOConfig, TrainConfig, compose

__all__ = [
    "CheckpointError",
    "ConfigError",
    "PPOConfig",
    "TrainConfig",
    "compose",
    "load_checkpoint",
    "save_checkpoint",
]
