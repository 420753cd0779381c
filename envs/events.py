"""Event terms: named Warp functions that change an env's state (pushes, PD gains, a task's target draw), by mode.

A task family defines one :class:`EventSet` over its context struct; a config names its events per mode
(``task.events`` with intervals, ``task.episode_events``, ``task.reset_events``, ``task.startup_events``) and their
parameters (``task.event_params``), and the task fuses them into its kernels with ``wp.static``
(:func:`interval_events_kernel`, :func:`reset_events_kernel`, :func:`event_chain`). Terms, parameters and one-line
errors are those of :mod:`horde.envs.terms`.
"""

# no `from __future__ import annotations`: Warp reads the annotations of the functions defined here
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import warp as wp

from horde.envs.terms import TermSet, UnknownTermError

__all__ = ["EVENT_MODES", "ConfiguredEvents", "EventSet", "configured_events", "event_chain", "event_steps",
           "interval_events_kernel", "refuse_events", "reset_events_kernel"]


EVENT_MODES = ("startup", "episode", "reset", "interval")
"""When an event term runs: ``startup``, once while the env is built, before the first reset (a host function
over the world's model: masses, friction; the randomization's own draws are two); ``episode``, once per episode
with the task's own reset draws (the command), before the world resets the env's state: the episode's parameters
(PD gains, motor strength, action delay; the randomization's own draws are two), not its state; ``reset``, in
every reset of an env, after the world has reset its state and before its first observation; ``interval``, every
``interval`` seconds of each episode (in the step, before the physics)."""


class EventSet(TermSet):
    """Event terms of one task family. ``episode``, ``reset`` and ``interval`` events are Warp functions ``(x:
    Context, i: int, s: wp.uint32) -> wp.uint32`` that change env ``i``'s state or parameters (a push, a kick, a
    payload change, PD gains), drawing random numbers from the env's own stream ``s`` and returning it advanced
    (``wp.randf(s)`` advances ``s``); the step kernel (interval; episode, in its branch for finished envs), the
    explicit reset kernel (episode) or the reset-event kernel (reset) fuses them with ``wp.static``. ``startup``
    events are host functions ``(world, randomization, rng: numpy.random.Generator) -> dict`` run once in config
    order while the env is built; they change the world's model arrays (the solver is told once after them: body
    inertial and shape properties) and return what they drew (``env.randomization``)::

        @VELOCITY_EVENTS.term
        def kick_up(x: Legged, i: int, s: wp.uint32) -> wp.uint32:
            x.joint_qd[i, 2] = x.joint_qd[i, 2] + wp.randf(s, 0.0, 1.0)
            return s

    A task config names them by mode: ``task.events`` maps interval events to their intervals [s],
    ``task.episode_events``, ``task.reset_events`` and ``task.startup_events`` list the others;
    ``task.event_params`` sets their parameters (arguments after ``s``, or after ``rng`` for a startup event).
    """

    lead = ("x", "i", "s")
    params_field = "task.event_params"

    def __init__(self, family: str, context: type) -> None:
        super().__init__(family, context)
        self._mode: dict[str, str] = {}

    def term(self, func: Callable | None = None, *, name: str | None = None, replace: bool = False,
             mode: str = "interval", params: Mapping[str, Any] | None = None,
             bounds: Mapping[str, Mapping[str, float]] | None = None):
        """Decorator: register ``func`` as an event of ``mode`` (:data:`EVENT_MODES`); a startup event stays a
        Python function."""
        if mode not in EVENT_MODES:
            raise ValueError(f"event mode '{mode}'; valid modes: {', '.join(EVENT_MODES)}")

        def register(f: Callable):
            wf = TermSet.term(self, f, name=name, replace=replace, warp=mode != "startup", params=params,
                              bounds=bounds)
            self._mode[name or f.__name__] = mode
            return wf

        return register(func) if func is not None else register

    def modes(self, names: Sequence[str], params: Mapping[str, Mapping[str, Any]] | None = None
              ) -> tuple[str, ...]:
        """The mode of each of the configured events ``names`` (that of the registered event each calls)."""
        return tuple(self._mode[t.base] for t in self.configure(names, params))

    def resolve_mode(self, names: Sequence[str], mode: str, where: str,
                     params: Mapping[str, Mapping[str, Any]] | None = None) -> tuple:
        """:meth:`resolve` for the config field ``where`` that lists events of ``mode``: an unknown name or an event
        of another mode fails in one line. ``params``: the config's ``event_params``, whose entries for events of
        the other fields are left to their calls (:meth:`check_params` checks that each names one)."""
        terms = self.configure(names, {n: v for n, v in (params or {}).items() if n in names})
        wrong = [f"{t.name} ({self._mode[t.base]})" for t in terms if self._mode[t.base] != mode]
        if wrong:
            field = {"interval": "task.events", "reset": "task.reset_events", "startup": "task.startup_events",
                     "episode": "task.episode_events"}
            hint = "; ".join(f"{m} events go in {field[m]}"
                             for m in sorted({self._mode[t.base] for t in terms if self._mode[t.base] != mode}))
            raise UnknownTermError(f"{where} takes {mode} events; not {', '.join(wrong)}: {hint}")
        return tuple(t.func for t in terms)

    def check_params(self, names: Sequence[str], params: Mapping[str, Mapping[str, Any]] | None) -> None:
        """Every entry of ``event_params`` names one of the configured events ``names`` (of any mode), one line
        otherwise."""
        unused = [n for n in (params or {}) if n not in names]
        if unused:
            raise UnknownTermError(f"{self.params_field}.{unused[0]}: not a configured {self.family} term; "
                                   f"configured: {', '.join(names) or 'none'}")


@functools.lru_cache(maxsize=None)
def event_chain(context: type, events: tuple[wp.Function, ...]) -> wp.Function:
    """One Warp function ``(x: context, i, s) -> s`` that runs ``events`` in order on env ``i`` with its stream
    ``s``: what a task's own reset paths call after drawing a state (the classic tasks' explicit reset and
    auto-reset), under ``if wp.static(len(events) > 0)`` so that a config without events compiles none."""

    @wp.func
    def chain(x: context, i: int, s: wp.uint32) -> wp.uint32:
        r = s
        for e in range(wp.static(len(events))):
            r = wp.static(events[e])(x, i, r)
        return r

    return chain


@functools.lru_cache(maxsize=None)
def reset_events_kernel(context: type, events: tuple[wp.Function, ...]) -> wp.Kernel:
    """The reset events (``task.reset_events``: :class:`EventSet` functions ``(x, i, s) -> s``) of the envs in
    ``mask``, in order, fused with ``wp.static``, one thread per env: ``(x: context, mask, rng)``, run by
    ``world.reset`` between the joint state and forward kinematics (reach and the velocity family)."""

    @wp.kernel(enable_backward=False, module="unique")
    def reset_events(x: context, mask: wp.array(dtype=wp.bool), rng: wp.array(dtype=wp.uint32)):
        i = wp.tid()
        if mask[i]:
            s = rng[i]
            for e in range(wp.static(len(events))):
                s = wp.static(events[e])(x, i, s)
            rng[i] = s

    return reset_events


@functools.lru_cache(maxsize=None)
def interval_events_kernel(context: type, events: tuple[wp.Function, ...]) -> wp.Kernel:
    """The step's first kernel for these interval events (``task.events``: :class:`EventSet` functions ``(x, i, s)
    -> s``), fused with ``wp.static``, one thread per env: ``(x: context, episode_length, event_steps, rng)``; event
    ``e`` runs on the steps of an episode that are multiples of ``event_steps[e]`` (reach and the locomotion family;
    the velocity family fuses its events into its own pre-step kernel)."""

    @wp.kernel(enable_backward=False, module="unique")
    def interval_events(x: context, episode_length: wp.array(dtype=wp.int32), event_steps: wp.array(dtype=int),
                        rng: wp.array(dtype=wp.uint32)):
        i = wp.tid()
        step = episode_length[i] + 1
        s = rng[i]
        for e in range(wp.static(len(events))):
            if step % event_steps[e] == 0:
                s = wp.static(events[e])(x, i, s)
        rng[i] = s

    return interval_events


class ConfiguredEvents(NamedTuple):
    """The interval and reset events a config names, resolved (:func:`configured_events`)."""

    interval: tuple
    """``task.events``' functions, in order."""
    reset: tuple
    """``task.reset_events``' functions, in order."""
    steps: list[int]
    """Each interval event's period in control steps (:func:`event_steps`)."""


def configured_events(event_set: EventSet, cfg: Any) -> ConfiguredEvents:
    """``cfg``'s interval (``task.events``) and reset (``task.reset_events``) events of ``event_set``, with
    ``task.event_params``: an unknown name, an event of another mode, a parameter for an event not configured or
    an interval that is not > 0 fails in one line."""
    params = cfg.event_params
    interval = event_set.resolve_mode(list(cfg.events), "interval", "task.events", params)
    reset = event_set.resolve_mode(cfg.reset_events, "reset", "task.reset_events", params)
    event_set.check_params([*cfg.events, *cfg.reset_events], params)
    return ConfiguredEvents(interval, reset, event_steps(cfg.events, cfg.sim_dt * cfg.decimation))


def refuse_events(cfg: Any) -> None:
    """One line (:class:`horde.sim.fields.FieldError`) for a config that names interval or reset events where a
    task's differentiable model (SHAC) would run it: that model runs no event terms."""
    from horde.sim.fields import FieldError

    named = [*getattr(cfg, "events", {}), *getattr(cfg, "reset_events", ())]
    if named:
        raise FieldError(f"task.events / task.reset_events: the differentiable model (algo=shac) runs no event "
                         f"terms; drop {', '.join(named)} or train with algo=ppo")


def event_steps(events: dict, control_dt: float) -> list[int]:
    """Each interval event's period in control steps (``task.events``: name -> seconds, each > 0), at least 1; a
    period that is not > 0 fails in one line (:class:`horde.sim.fields.FieldError`)."""
    from horde.sim.fields import FieldError

    bad = [f"{n}={v}" for n, v in events.items() if not float(v) > 0]
    if bad:
        raise FieldError(f"task.events: every interval must be > 0 seconds, got {', '.join(bad)}")
    return [max(int(round(float(v) / control_dt)), 1) for v in events.values()]
