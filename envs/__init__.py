"""Batched tasks, their registry, and the rsl-rl and gymnasium interfaces over them."""

from horde.envs import cartpole, pendulum  # noqa: F401  (registers the built-in tasks)
from horde.envs import ant, humanoid, lift, place, push, reach, velocity, velocity_tasks  # noqa: F401  (on Newton)
from horde.envs.adapters import GymVectorEnv, RslRlVecEnv
from horde.envs.core import StepResult, TaskConfig, WarpTaskEnv
from horde.envs.registry import (
    TASKS,
    TaskSpec,
    UnknownTaskError,
    get_task,
    make,
    make_diff_task,
    register_task,
    task_names,
)

__all__ = [
    "TASKS",
    "GymVectorEnv",
    "RslRlVecEnv",
    "StepResult",
    "TaskConfig",
    "TaskSpec",
    "UnknownTaskError",
    "WarpTaskEnv",
    "get_task",
    "make",
    "make_diff_task",
    "register_task",
    "task_names",
]
