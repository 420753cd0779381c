"""The task registry: one typed dict that code outside horde can extend with :func:`register_task`."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from horde.envs.core import TaskConfig, WarpTaskEnv
from horde.sim.diff import DiffTask, NotDifferentiableError
from horde.sim.fields import check_fields


class UnknownTaskError(KeyError):
    """A task name that is not registered; the message lists the valid names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


@dataclass(frozen=True, kw_only=True)
class TaskSpec:
    """How to build one task."""

    env_cls: type[WarpTaskEnv]
    """The env class."""
    config: TaskConfig
    """Default config; :func:`make` works on a deep copy."""
    description: str
    """One line for the tasks table and ``horde tasks``."""
    diff_task: Callable[[TaskConfig, str], Any] | None = None
    """Builder of the task's differentiable model, ``(config, device) -> horde.sim.DiffTask`` (SHAC, gradient
    checks); None for a task without one."""
    renderer: Callable[[WarpTaskEnv, dict, int, tuple[int, int]], Any] | None = None
    """Draws env ``i`` of a state snapshot as an RGB tile for ``horde play video=true`` (horde.envs.render)."""
    twin: type | None = None
    """The task's MuJoCo sim-to-sim twin (rung 3 of the export ladder, :mod:`horde.deploy.sim2sim`): a class with
    ``load_model(task_config) -> MjModel``, ``sources`` (the observation sources it reads), ``per_second``, and per
    episode ``reset``, ``raw`` (those sources of MuJoCo's state), ``terms`` and ``metrics``; None for a task without
    one."""

    @property
    def differentiable(self) -> bool:
        """True when the task has a differentiable model (``diff_task``)."""
        return self.diff_task is not None


TASKS: dict[str, TaskSpec] = {}
"""Registered tasks by name."""


def register_task(name: str, spec: TaskSpec, *, replace: bool = False) -> None:
    """Add a task under ``name``; re-registering a name needs ``replace=True``."""
    if not isinstance(spec, TaskSpec):
        raise TypeError(f"register_task expects a TaskSpec, got {type(spec).__name__}")
    if name in TASKS and not replace:
        raise ValueError(f"task '{name}' is already registered (pass replace=True to override it)")
    TASKS[name] = spec
    _register_with_gymnasium(name)


def _register_with_gymnasium(name: str) -> None:
    """``gymnasium.make_vec("horde/<name>", ...)``; the built-in tasks' ids already exist after ``import horde``."""
    import horde

    horde._register_with_gymnasium((name,))


def task_names() -> list[str]:
    """Registered task names, sorted."""
    return sorted(TASKS)


def get_task(name: str) -> TaskSpec:
    """The spec of ``name``, or an :class:`UnknownTaskError` that lists the valid names."""
    try:
        return TASKS[name]
    except KeyError:
        raise UnknownTaskError(f"unknown task '{name}'; valid tasks: {', '.join(task_names())}") from None


def make(
    name: str, *, num_envs: int, device: str = "cpu", seed: int = 0, config: TaskConfig | None = None
) -> WarpTaskEnv:
    """Build ``num_envs`` copies of task ``name`` on ``device``."""
    spec = get_task(name)
    cfg = copy.deepcopy(spec.config) if config is None else config
    if not isinstance(cfg, type(spec.config)):
        raise TypeError(f"task '{name}' takes a {type(spec.config).__name__}, got {type(cfg).__name__}")
    check_fields(cfg, "task")
    env = spec.env_cls(cfg, num_envs=num_envs, device=device, seed=seed)
    env.task_name = name
    return env


def make_diff_task(task: str, *, config: TaskConfig | None = None, device: str = "cpu") -> DiffTask:
    """The differentiable model of registered task ``task`` (default config when ``config`` is None).

    Raises :class:`NotDifferentiableError`, naming the differentiable tasks, for a task whose ``TaskSpec`` is not
    marked ``differentiable`` or that has no builder.
    """
    spec = get_task(task)
    if spec.diff_task is None:
        valid = sorted(n for n, s in TASKS.items() if s.diff_task is not None)
        raise NotDifferentiableError(
            f"task '{task}' has no differentiable rollout; differentiable tasks: {', '.join(valid)}")
    cfg = copy.deepcopy(spec.config) if config is None else config
    if not isinstance(cfg, type(spec.config)):
        raise TypeError(f"task '{task}' takes a {type(spec.config).__name__}, got {type(cfg).__name__}")
    return spec.diff_task(cfg, device)
