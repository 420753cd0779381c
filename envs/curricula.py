"""Curricula as terms: host functions that move a task's settings between iterations, listed in
``task.curricula`` with their parameters in ``task.curriculum_params`` (every family), as Isaac Lab's
``CurriculumTermCfg`` and mjlab's curricula; the lift's peers ramp their action-rate penalty this way.

A curriculum is a function ``(env, iteration: int, stats: dict[str, float], *, name, **params) -> dict[str, float]``
registered in :data:`CURRICULA` (``stats``: the episode statistics of the iteration, e.g. ``reward/<term>``, the mean
sum of a reward term over the finished episodes); the env calls it once per training iteration (when the learner
pops the episode statistics, before
the next rollout, so a recorded step graph stays valid: it writes device memory the graph reads) and logs what it
returns. It is called once more, with ``iteration`` 0 and no statistics, when the env is built (before its first
reset: where the curriculum starts). ``iteration`` counts the training calls from 1 and is saved with the env's
state, so a resumed run continues the schedule. Built in: :func:`reward_weight`::

    horde train task=lift task.curricula=[action_rate_up] \\
        task.curriculum_params.action_rate_up.func=reward_weight task.curriculum_params.action_rate_up.term=action_rate \\
        task.curriculum_params.action_rate_up.weight=-0.1 task.curriculum_params.action_rate_up.start=200
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from horde.envs.terms import FUNC_KEY, UnknownTermError

__all__ = ["CURRICULA", "Curriculum", "CurriculumSet", "reward_weight"]

_TYPES = (bool, int, float, str)


@dataclass(frozen=True)
class Curriculum:
    """One configured curriculum: its name in the config, the registered function and its parameter values."""

    name: str
    func: Callable[..., dict[str, float]]
    params: Mapping[str, Any]

    def __call__(self, env, iteration: int, stats: Mapping[str, float]) -> dict[str, float]:
        return self.func(env, iteration, stats, name=self.name, **self.params)


class CurriculumSet:
    """Registered curricula by name; :meth:`configure` turns ``task.curricula`` and ``task.curriculum_params`` into
    :class:`Curriculum` s, every mistake one line (:class:`horde.envs.terms.UnknownTermError`)."""

    def __init__(self) -> None:
        self._funcs: dict[str, Callable] = {}

    def term(self, func: Callable | None = None, *, name: str | None = None, replace: bool = False):
        """Decorator: register ``func(env, iteration, stats, *, name, <params with defaults>) -> dict`` under its name;
        parameters are ``bool``, ``int``, ``float`` or ``str`` (no default: a config must give it)."""
        def register(f: Callable) -> Callable:
            key = name or f.__name__
            if key in self._funcs and not replace:
                raise ValueError(f"curriculum '{key}' is already registered (pass replace=True)")
            self._funcs[key] = f
            return f

        return register(func) if func is not None else register

    def names(self) -> list[str]:
        return list(self._funcs)

    def parameters(self, key: str) -> dict[str, inspect.Parameter]:
        sig = inspect.signature(self._funcs[key])
        return {p: v for p, v in sig.parameters.items() if v.kind is inspect.Parameter.KEYWORD_ONLY and p != "name"}

    def configure(self, names: Sequence[str], params: Mapping[str, Mapping[str, Any]] | None = None,
                  reward_terms: Sequence[str] | None = None) -> tuple[Curriculum, ...]:
        """The configured curricula of ``names`` with ``params``; a ``term`` parameter must name one of
        ``reward_terms`` (when given)."""
        params = {str(k): dict(v or {}) for k, v in (params or {}).items()}
        unused = [n for n in params if n not in names]
        if unused:
            raise UnknownTermError(f"task.curriculum_params.{unused[0]}: not in task.curricula "
                                   f"({', '.join(names) or 'none'})")
        if len(set(names)) != len(names):
            raise UnknownTermError(f"task.curricula names a curriculum twice: {list(names)}")
        out = []
        for n in names:
            values = dict(params.get(n, {}))
            key = str(values.pop(FUNC_KEY, n))
            if key not in self._funcs:
                raise UnknownTermError(f"unknown curriculum '{key}'" + (f" (task.curriculum_params.{n}.func)"
                                                                        if key != n else "")
                                       + f"; valid curricula: {', '.join(self._funcs) or 'none'}")
            spec = self.parameters(key)
            for p, v in values.items():
                if p not in spec:
                    valid = ", ".join(f"{q} (default {s.default!r})" if s.default is not inspect.Parameter.empty
                                      else f"{q} (required)" for q, s in spec.items())
                    raise UnknownTermError(f"task.curriculum_params.{n}.{p}: unknown parameter of curriculum "
                                           f"'{key}'; valid parameters: {valid}")
                values[p] = _checked(v, spec[p], f"task.curriculum_params.{n}.{p}")
            missing = [p for p, s in spec.items() if s.default is inspect.Parameter.empty and p not in values]
            if missing:
                raise UnknownTermError(f"task.curriculum_params.{n}.{missing[0]}: curriculum '{key}' needs it")
            if reward_terms is not None and "term" in values and values["term"] not in reward_terms:
                raise UnknownTermError(f"task.curriculum_params.{n}.term: '{values['term']}' is not a reward term "
                                       f"of the task; terms: {', '.join(reward_terms)}")
            out.append(Curriculum(n, self._funcs[key], values))
        return tuple(out)


def _checked(value: Any, spec: inspect.Parameter, where: str) -> Any:
    names = {t.__name__: t for t in _TYPES}
    kind = names.get(spec.annotation, spec.annotation) if isinstance(spec.annotation, str) else spec.annotation
    if kind not in _TYPES:
        kind = type(spec.default) if spec.default is not inspect.Parameter.empty else str
    try:
        if kind is bool and not isinstance(value, bool):
            raise ValueError
        if kind is int and (isinstance(value, bool) or float(value) != int(float(value))):
            raise ValueError
        return kind(value)
    except (TypeError, ValueError):
        raise UnknownTermError(f"{where}: expected {getattr(kind, '__name__', kind)}, got {value!r}") from None


CURRICULA = CurriculumSet()
"""The curricula a config may list (``task.curricula``); register your own with ``@CURRICULA.term``."""


@CURRICULA.term
def reward_weight(env, iteration: int, stats: Mapping[str, float], *, name: str, term: str, weight: float,
                  start: int = 0, ramp: int = 0) -> dict[str, float]:
    """Move reward term ``term``'s weight (in ``reward_scales``' units) from the config's value to ``weight``: at
    iteration ``start``, linearly over the ``ramp`` iterations after it (0: at once). Logs
    ``curriculum/<name>``, the weight now."""
    initial = float(env.cfg.reward_scales[term])
    share = 0.0 if iteration < start else 1.0 if ramp <= 0 else min((iteration - start) / ramp, 1.0)
    now = initial + share * (weight - initial)
    env.set_reward_weight(term, now)
    return {f"curriculum/{name}": now}
