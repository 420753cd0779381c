"""Named task terms written once as Warp functions and fused into a task's step kernel.

A task family defines one context struct (a ``wp.struct`` of the state arrays and constants its terms read, e.g.
:class:`horde.envs.velocity.Legged`) and one :class:`TermSet`. A term is a Warp function ``(x: Context, i: int) ->
float`` of env ``i``; ``term_set.term`` registers one, from horde or from a user's own module::

    from horde.envs.velocity import VELOCITY_TERMS, Legged

    @VELOCITY_TERMS.term
    def base_height(x: Legged, i: int) -> float:
        p = wp.transform_get_translation(x.body_q[i, x.root])
        return (p[2] - 0.3) * (p[2] - 0.3)

A task config then names the terms it uses (``reward_scales: {base_height: -10.0, ...}``), and the task builds one
kernel that calls them in that order with ``wp.static`` (``for k in range(wp.static(len(terms))):
wp.static(terms[k])(x, i)``, e.g. :func:`horde.envs.velocity.post_step_kernel`): one launch for every term, nothing
per term on the host, so the step stays one graph replay. The same term functions run in the sim-to-sim twin
(:mod:`horde.deploy.sim2sim`) on MuJoCo's state copied into the context's arrays, and in a task's differentiable
model on torch tensors, with gradients (:func:`term_values_torch`).

A term may take parameters after ``(x, i)``, each a ``float``, ``int`` or ``bool`` with its default next to the
function (``def reaching(x: Manip, i: int, std: float = 0.1) -> float``). One function then serves many configured
terms: ``term_set.term(reaching, name="reaching_fine", params={"std": 0.02})`` registers another name with other
defaults, and a config sets any configured term's parameters, or builds a new term from a registered function, in
its ``reward_params`` (``termination_params``, ``event_params``: ``{reaching_fine: {func: reaching, std: 0.02}}``;
``task.reward_params.reaching.std=0.05`` on the command line). The values are compiled into the kernel as
constants (:func:`bind_params`): nothing per step on the host, no kernel argument.
"""

# no `from __future__ import annotations`: Warp reads the annotations of the functions defined here
import functools
import hashlib
import inspect
import linecache
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import torch
import warp as wp

from horde.sim.device import init_warp, on_torch_stream
from horde.sim.fields import _in_bounds, _rule

__all__ = ["CommandSet", "PARAM_TYPES", "ConfiguredTerm", "bind_params", "term_values_kernel",
           "term_values_torch", "TerminationSet", "TermSet", "UnknownTermError",
           "clipped_action_rate", "unit_clip"]


class UnknownTermError(ValueError):
    """A term name that the term set does not hold; the message lists the valid ones."""


PARAM_TYPES = (float, int, bool)
"""The types a term parameter may have (compiled into the kernel as a constant)."""

FUNC_KEY = "func"
"""The key of a ``*_params`` entry that names the registered term a configured term calls (default: its own name)."""


class ConfiguredTerm(NamedTuple):
    """A term as a config uses it: its name in the config, the registered term it calls, the parameter values and
    the function a kernel calls with the task's arguments only (the registered one, or :func:`bind_params`')."""

    name: str
    base: str
    params: dict[str, Any]
    func: Any


class _Entry(NamedTuple):
    func: Any
    defaults: dict[str, Any]
    """Every parameter after the context arguments, in signature order: its default (:data:`_REQUIRED`: none)."""
    types: dict[str, type]
    bounds: dict[str, dict[str, float]]
    """Per parameter, its range (``{"gt": 0}``; the keys of :func:`horde.sim.fields.bounded`)."""


_REQUIRED = object()


class TermSet:
    """The terms of one task family, by name, in registration order."""

    lead = ("x", "i")
    """The arguments every term of the set takes before its parameters."""
    params_field = "task.reward_params"
    """Where a task config sets the parameters of this set's configured terms (named in error messages)."""

    def __init__(self, family: str, context: type) -> None:
        self.family, self.context = family, context
        self._terms: dict[str, _Entry] = {}

    def term(self, func: Callable | None = None, *, name: str | None = None, replace: bool = False,
             warp: bool = True, params: Mapping[str, Any] | None = None,
             bounds: Mapping[str, Mapping[str, float]] | None = None):
        """Decorator: compile ``func`` as a Warp function (``warp=False``: keep the Python function) and register it
        under ``name`` (its own name by default); re-registering a name needs ``replace=True``. The function's
        arguments after the set's leading ones (:attr:`lead`) are its parameters (``float``, ``int`` or ``bool``,
        defaults in the signature); ``bounds`` gives a parameter a range (``{"std": {"gt": 0}}``: a config's value
        outside it fails in one line; a function registered again keeps its ranges); ``params`` sets other defaults
        under this name (one function, several terms: ``term(reaching, name="reaching_fine", params={"std":
        0.02})``)."""
        def register(f: Callable) -> wp.Function:
            key = name or f.__name__
            if key in self._terms and not replace:
                raise ValueError(f"{self.family} term '{key}' is already registered (pass replace=True)")
            defaults, types = _signature_params(self, key, f)  # before compiling: a mistake is one line
            wf = f if isinstance(f, wp.Function) or not warp else wp.func(f)
            ranges = {p: dict(b) for e in self._terms.values() if e.func is wf for p, b in e.bounds.items()}
            for p, b in (bounds or {}).items():
                if p not in defaults or not set(b) <= {"gt", "ge", "lt", "le"}:
                    raise ValueError(f"{self.family} term '{key}': bounds {p}={dict(b)}; "
                                     f"{_valid_params(defaults)}, each with gt, ge, lt or le")
                ranges[p] = dict(b)
            for p, v in [*(params or {}).items(), *((p, v) for p, v in defaults.items() if p not in (params or {}))]:
                if p not in defaults:
                    raise ValueError(f"{self.family} term '{key}': unknown parameter '{p}'; "
                                     f"{_valid_params(defaults)}")
                if v is not _REQUIRED:
                    defaults[p] = _checked(v, types[p], f"{self.family} term '{key}' parameter {p}", ranges.get(p))
            self._terms[key] = _Entry(wf, defaults, types, ranges)
            return wf

        return register(func) if func is not None else register

    def names(self) -> list[str]:
        """Registered term names, in registration order."""
        return list(self._terms)

    def function(self, name: str):
        """The function registered as ``name`` (one function may be registered under several names)."""
        return self._terms[name].func

    def parameters(self, name: str) -> dict[str, Any]:
        """The parameters of registered term ``name`` and their defaults (None where a config must give one)."""
        return {p: None if v is _REQUIRED else v for p, v in self._terms[name].defaults.items()}

    def configure(self, names: Sequence[str], params: Mapping[str, Mapping[str, Any]] | None = None
                  ) -> tuple[ConfiguredTerm, ...]:
        """The configured terms ``names``, in that order, with ``params`` (a config's ``*_params``: per configured
        name, ``func`` (the registered term it calls; default: the name itself) and parameter values over that
        term's defaults). Every mistake raises one line: an unknown name, a ``params`` entry for a term the config
        does not use, an unknown parameter (listing the valid ones), a value of the wrong type."""
        params = {str(k): dict(v or {}) for k, v in (params or {}).items()}
        unused = [n for n in params if n not in names]
        if unused:
            raise UnknownTermError(f"{self.params_field}.{unused[0]}: not a configured {self.family} term; "
                                   f"configured: {', '.join(names) or 'none'}")
        bases = {n: str(params.get(n, {}).get(FUNC_KEY, n)) for n in names}
        missing = [n for n in names if bases[n] not in self._terms]
        if missing:
            named = [n for n in missing if bases[n] != n]
            if named:
                raise UnknownTermError(f"{self.params_field}.{named[0]}.{FUNC_KEY}: unknown {self.family} term "
                                       f"{bases[named[0]]}; valid terms: {', '.join(self._terms)}")
            raise UnknownTermError(f"unknown {self.family} term{'s' if len(missing) > 1 else ''} "
                                   f"{', '.join(missing)}; valid terms: {', '.join(self._terms)}")
        out = []
        for n in names:
            entry = self._terms[bases[n]]
            values = dict(entry.defaults)
            for p, v in params.get(n, {}).items():
                if p == FUNC_KEY:
                    continue
                where = f"{self.params_field}.{n}.{p}"
                if p not in values:
                    raise UnknownTermError(f"{where}: unknown parameter of {self.family} term '{bases[n]}'; "
                                           f"{_valid_params(values)}")
                try:
                    values[p] = _checked(v, entry.types[p], where, entry.bounds.get(p))
                except (TypeError, ValueError) as exc:
                    raise UnknownTermError(str(exc)) from None
            unset = [p for p, v in values.items() if v is _REQUIRED]
            if unset:
                raise UnknownTermError(f"{self.params_field}.{n}: {self.family} term '{bases[n]}' needs "
                                       f"{', '.join(unset)} (no default)")
            out.append(ConfiguredTerm(n, bases[n], values, bind_params(entry.func, self.lead_types(entry.func),
                                                                        tuple(values.values()))))
        return tuple(out)

    def resolve(self, names: Sequence[str], params: Mapping[str, Mapping[str, Any]] | None = None
                ) -> tuple[wp.Function, ...]:
        """The functions a kernel calls (``(x, i)``) for the configured terms ``names`` with ``params``
        (:meth:`configure`), in that order; an unknown name raises one line listing the valid ones."""
        return tuple(t.func for t in self.configure(names, params))

    def lead_types(self, func) -> tuple:
        """The annotations of ``func``'s leading arguments (the bound function takes the same)."""
        sig = inspect.signature(_python(func), eval_str=True)
        return tuple(p.annotation for p in list(sig.parameters.values())[:len(self.lead)])


def _python(func):
    return func.func if isinstance(func, wp.Function) else func


def _signature_params(term_set: TermSet, key: str, func) -> tuple[dict[str, Any], dict[str, type]]:
    """The parameters of a term function after its leading arguments: defaults and types."""
    args = list(inspect.signature(_python(func), eval_str=True).parameters.values())
    lead = len(term_set.lead)
    if len(args) < lead:
        raise TypeError(f"{term_set.family} term '{key}' takes ({', '.join(term_set.lead)}, ...); "
                        f"got ({', '.join(a.name for a in args)})")
    defaults, types = {}, {}
    for a in args[lead:]:
        if a.annotation not in PARAM_TYPES:
            raise TypeError(f"{term_set.family} term '{key}': parameter {a.name} must be annotated float, int or "
                            f"bool (got {getattr(a.annotation, '__name__', a.annotation)})")
        types[a.name] = a.annotation
        defaults[a.name] = _REQUIRED if a.default is inspect.Parameter.empty else _checked(
            a.default, a.annotation, f"{term_set.family} term '{key}' parameter {a.name}")
    return defaults, types


def _valid_params(values: Mapping[str, Any]) -> str:
    if not values:
        return "it takes none"
    return "valid parameters: " + ", ".join(f"{p}" if v is _REQUIRED else f"{p} (default {v})"
                                            for p, v in values.items())


def _checked(value: Any, kind: type, where: str, bounds: Mapping[str, float] | None = None):
    """``value`` as a parameter of type ``kind`` (an int where a float is asked becomes one); a wrong type
    (TypeError) or a value outside ``bounds`` (ValueError) raises one line."""
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok:
        raise TypeError(f"{where}={value!r}: takes {'a' if kind is not int else 'an'} {kind.__name__}")
    if bounds and not _in_bounds(value, bounds):
        raise ValueError(f"{where}={value}: must be {_rule(bounds)}")
    return kind(value)


@functools.lru_cache(maxsize=None)
def bind_params(func, lead_types: tuple, values: tuple):
    """``func`` with its parameters after the leading arguments fixed to ``values``: a Warp function of the leading
    arguments only that calls ``func`` with each value compiled in as a constant (``wp.static``), so the fused
    kernel calls it as any other term, with no argument and no host work per step; ``func`` itself when it takes
    no parameters. A host function (a startup event) gets its values as keyword arguments. One function per
    (term, values), cached; its name carries a hash of them, the same in every process (Warp's kernel cache)."""
    if not values:
        return func
    py = _python(func)
    names = list(inspect.signature(py).parameters)[len(lead_types):]
    if not isinstance(func, wp.Function):
        return functools.partial(func, **dict(zip(names, values)))
    spec = f"{py.__module__}.{py.__qualname__}:" + ",".join(f"{n}={v!r}" for n, v in zip(names, values))
    tag = hashlib.sha1(spec.encode()).hexdigest()[:12]
    args = [f"a{k}" for k in range(len(lead_types))]
    # Warp reads a function's source: the bound function's is generated (its arity is the term's) and put in
    # linecache under its own file name, where Warp (and inspect) look for it
    source = (f"def bound({', '.join(f'{a}: T{k}' for k, a in enumerate(args))}):\n"
              f"    return wp.static(func)({', '.join(args + [f'wp.static(v[{k}])' for k in range(len(values))])})\n")
    file = f"<horde term {func.key}_{tag}>"
    linecache.cache[file] = (len(source), None, source.splitlines(True), file)
    ns = {"wp": wp, "func": func, "v": values, "__name__": __name__, **{f"T{k}": t for k, t in enumerate(lead_types)}}
    exec(compile(source, file, "exec"), ns)  # noqa: S102 - generated from the term's own signature only
    return wp.func(ns["bound"], name=f"{func.key}_{tag}")


class TerminationSet(TermSet):
    """Termination terms of one task family: Warp functions ``(x: Context, i: int) -> bool``, each a *failure*
    (the episode fails: ``terminated``) or a *time-out* (it ends as ``truncated``, bootstrapped like the time
    limit; Isaac Lab's ``time_out=True``). A task config lists the ones it uses (``task.terminations``); the step
    kernel fuses them with ``wp.static`` and counts, per finished episode, which of them fired
    (``termination/<name>`` in the episode statistics)::

        @VELOCITY_TERMINATIONS.term
        def base_too_low(x: Legged, i: int, height: float = 0.2) -> bool:
            return wp.transform_get_translation(x.body_q[i, x.root])[2] < height

    (``task.termination_params: {base_too_low: {height: 0.15}}`` sets its threshold.)
    """

    params_field = "task.termination_params"

    def __init__(self, family: str, context: type) -> None:
        super().__init__(family, context)
        self._time_out: dict[str, bool] = {}

    def term(self, func: Callable | None = None, *, name: str | None = None, replace: bool = False,
             time_out: bool = False, params: Mapping[str, Any] | None = None,
             bounds: Mapping[str, Mapping[str, float]] | None = None):
        """Decorator: register ``func`` as a failure (default) or, with ``time_out=True``, a time-out."""
        def register(f: Callable) -> wp.Function:
            wf = TermSet.term(self, f, name=name, replace=replace, params=params, bounds=bounds)
            self._time_out[name or f.__name__] = bool(time_out)
            return wf

        return register(func) if func is not None else register

    def time_outs(self, names: Sequence[str], params: Mapping[str, Mapping[str, Any]] | None = None
                  ) -> tuple[bool, ...]:
        """Whether each of the configured terminations ``names`` is a time-out."""
        return tuple(self._time_out[t.base] for t in self.configure(names, params))

    def fused(self, names: Sequence[str], params: Mapping[str, Mapping[str, Any]] | None = None
              ) -> tuple[wp.Function, wp.Function]:
        """The Warp functions a step kernel calls for the terminations ``names`` (in that order):

        * ``check(x, i) -> (hits, failed, timed_out)``: every term of env ``i``; ``hits`` has bit k set where term
          k fired, ``failed`` / ``timed_out`` whether a failure / a time-out among them did;
        * ``count(hits, causes)``: adds 1 to ``causes[k]`` for every bit k of ``hits`` (on a finished episode:
          the per-cause statistics, ``termination/<name>``).

        One definition for every task family: a step kernel calls ``hits, failed, timed_out = check(x, i)`` and,
        when the episode ends, ``count(hits, causes)``. ``params``: the config's ``termination_params``."""
        terms = self.configure(names, params)
        return _termination_funcs(self.context, tuple(names), tuple(t.func for t in terms),
                                  tuple(self._time_out[t.base] for t in terms))

    def failure_term(self, names: Sequence[str], params: Mapping[str, Mapping[str, Any]] | None = None
                     ) -> wp.Function:
        """A Warp function ``(x, i) -> float``: 1 where a failure among the terminations ``names`` fires, else 0; a
        term that :func:`term_values_torch` and :func:`term_values_kernel` evaluate, so that a differentiable model
        or a MuJoCo twin ends its episodes on the env's own termination terms."""
        return _failure_func(self.fused(names, params)[0], self.context)


@functools.lru_cache(maxsize=None)
def _termination_funcs(context: type, names: tuple, ends: tuple, time_outs: tuple) -> tuple[wp.Function, wp.Function]:
    """:meth:`TerminationSet.fused` for one context struct and term tuple (cached: one pair per combination)."""
    n = len(ends)

    def check(x: context, i: int):
        hits = int(0)
        failed = bool(False)
        timed_out = bool(False)
        for k in range(wp.static(n)):
            if wp.static(ends[k])(x, i):
                hits = hits | (1 << k)
                if wp.static(time_outs[k]):
                    timed_out = True
                else:
                    failed = True
        return hits, failed, timed_out

    def count(hits: int, causes: wp.array(dtype=wp.float64)):
        for k in range(wp.static(n)):
            if hits & (1 << k) != 0:
                wp.atomic_add(causes, k, wp.float64(1.0))

    # Warp keys a function by its name: one name per combination (so that two tasks' kernels never resolve each
    # other's overload), the same in every process (so that Warp's kernel cache holds across runs)
    spec = f"{context.__module__}.{context.__name__}:" + ",".join(
        f"{n}={getattr(f.func, '__module__', '')}.{f.key}{'/t' if t else ''}"
        for n, f, t in zip(names, ends, time_outs))
    tag = hashlib.sha1(spec.encode()).hexdigest()[:12]
    return wp.func(check, name=f"termination_check_{tag}"), wp.func(count, name=f"termination_count_{tag}")


@functools.lru_cache(maxsize=None)
def _failure_func(check: wp.Function, context: type) -> wp.Function:
    """:meth:`TerminationSet.failure_term` of one fused check (cached: one function per check)."""

    def failure(x: context, i: int) -> float:
        hits, failed, timed_out = wp.static(check)(x, i)
        return wp.where(failed, 1.0, 0.0)

    return wp.func(failure, name=f"termination_failure_{check.key.rsplit('_', 1)[-1]}")



class CommandSet(TermSet):
    """Command terms of one task family: Warp functions ``(x: Context, i: int, s: wp.uint32) -> wp.uint32`` that
    draw env ``i``'s next command (at a reset, at the end of an episode and every ``command_resample_s``) from the
    env's random stream ``s``, returning it advanced; ``task.command`` names the one a task runs,
    ``task.command_params`` sets its parameters (the arguments after ``s``)."""

    lead = ("x", "i", "s")
    params_field = "task.command_params"



@functools.lru_cache(maxsize=None)
def term_values_kernel(context: type, terms: tuple[wp.Function, ...], backward: bool = False) -> wp.Kernel:
    """A kernel that writes each of ``terms`` of every env into ``out[T, N]``: what a MuJoCo twin launches on a
    one-env context built from MuJoCo's state, so that it scores with the env's own term functions; with
    ``backward``, its adjoint too (:func:`term_values_torch`)."""

    @wp.kernel(enable_backward=backward, module="unique")
    def term_values(x: context, out: wp.array2d(dtype=float)):
        i = wp.tid()
        for k in range(wp.static(len(terms))):
            out[k, i] = wp.static(terms[k])(x, i)

    return term_values


class _TermValues(torch.autograd.Function):
    """``term_values_kernel`` on torch tensors; the gradient through Warp's tape (the kernel's adjoint)."""

    @staticmethod
    def forward(ctx, kernel, num_terms, context, constants, fields, dtypes, *tensors):
        device = wp.device_from_torch(tensors[0].device)
        arrays = []
        for k, (t, dtype) in enumerate(zip(tensors, dtypes)):
            t = t.detach().contiguous()
            grad = t.is_floating_point() and ctx.needs_input_grad[6 + k]
            arrays.append(wp.from_torch(t, dtype=wp.float32 if dtype is float else dtype, requires_grad=grad,
                                        grad=torch.zeros_like(t) if grad else None))
        x = context()
        for name, value in (*constants.items(), *zip(fields, arrays)):
            setattr(x, name, value)
        n = tensors[0].shape[0]
        out = wp.zeros((num_terms, n), dtype=float, device=device, requires_grad=any(a.requires_grad for a in arrays))
        tape = wp.Tape()
        with on_torch_stream(tensors[0].device), tape:
            wp.launch(kernel, n, inputs=[x], outputs=[out], device=device)
        ctx.tape, ctx.out, ctx.arrays, ctx.x = tape, out, arrays, x
        return wp.to_torch(out).clone()

    @staticmethod
    def backward(ctx, grad_out):
        with on_torch_stream(grad_out.device):
            ctx.tape.backward(grads={ctx.out: wp.from_torch(grad_out.contiguous())})
        grads = tuple(wp.to_torch(a.grad) if a.requires_grad else None for a in ctx.arrays)
        ctx.tape = ctx.out = ctx.arrays = ctx.x = None  # once: the gradients own their (torch) memory
        return (None,) * 6 + grads


def term_values_torch(context: type, terms: tuple[wp.Function, ...], arrays: dict[str, tuple[torch.Tensor, type]],
                      constants: dict[str, object] | None = None) -> torch.Tensor:
    """Each of ``terms`` of every env, ``[T, N]``, on a ``context`` built from torch tensors, differentiable
    with respect to them: the task's own Warp term functions in a torch graph (what a differentiable model, e.g.
    :func:`horde.envs.reach.diff_task`, scores its states with, so that its reward has one source).

    ``arrays`` maps each array field of ``context`` to ``(tensor, Warp dtype)``, the tensor's leading dimension
    the env (e.g. ``{"target": (t, wp.vec3)}`` for a ``[N, 3]`` tensor); ``constants`` its other fields. The
    gradient of the returned values reaches every floating-point tensor through the kernel's adjoint (Warp's
    tape); fields the terms do not read get zeros."""
    init_warp()  # a differentiable model may score states before any world exists
    wide = [f for f, (t, _) in arrays.items() if t.is_floating_point() and t.dtype != torch.float32]
    if wide:
        raise TypeError(f"term_values_torch: Warp terms run in float32; {', '.join(wide)} "
                        f"{'is' if len(wide) == 1 else 'are'} {arrays[wide[0]][0].dtype}")
    fields = tuple(arrays)
    return _TermValues.apply(term_values_kernel(context, tuple(terms), True), len(terms), context,
                             dict(constants or {}), fields, tuple(arrays[f][1] for f in fields),
                             *(arrays[f][0] for f in fields))


@wp.func
def unit_clip(x: float) -> float:
    """``x`` clamped to [-1, 1], whose gradient passes on the closed interval as ``torch.clamp``'s does (Warp's
    ``clamp`` sends it to the bound at the upper edge): an action that a straight-through clip leaves at exactly
    +-1 keeps its penalty's gradient in a differentiable model."""
    return wp.clamp(x, -1.0, 1.0)


@wp.func_grad(unit_clip)
def _adj_unit_clip(x: float, adj_ret: float):
    if x >= -1.0 and x <= 1.0:
        wp.adjoint[x] += adj_ret


@wp.func
def clipped_action_rate(actions: wp.array2d(dtype=float), last_actions: wp.array2d(dtype=float),
                        i: int) -> float:
    """sum_k (clip(a_k, -1, 1) - a_prev_k)^2 of env ``i``: the action-rate penalty that most task families share."""
    rate = float(0.0)
    for k in range(actions.shape[1]):
        d = unit_clip(actions[i, k]) - last_actions[i, k]
        rate += d * d
    return rate


_MOVED = ("EVENT_MODES", "ConfiguredEvents", "EventSet", "configured_events", "event_chain", "event_steps",
          "interval_events_kernel", "refuse_events", "reset_events_kernel")
"""Event terms live in :mod:`horde.envs.events`; their old names here still resolve (a user's plugin may import
them from this module)."""


def __getattr__(name: str):
    if name in _MOVED:
        from horde.envs import events

        return getattr(events, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
