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
"""

# no `from __future__ import annotations`: Warp reads the annotations of the functions defined here
import functools
import hashlib
from collections.abc import Callable, Sequence

import torch
import warp as wp

from horde.sim.device import init_warp, on_torch_stream

__all__ = ["EVENT_MODES", "EventSet", "term_values_kernel", "term_values_torch", "TerminationSet", "TermSet",
           "UnknownTermError", "clipped_action_rate", "unit_clip"]


class UnknownTermError(ValueError):
    """A term name that the term set does not hold; the message lists the valid ones."""


class TermSet:
    """The terms of one task family, by name, in registration order."""

    def __init__(self, family: str, context: type) -> None:
        self.family, self.context = family, context
        self._terms: dict[str, wp.Function] = {}

    def term(self, func: Callable | None = None, *, name: str | None = None, replace: bool = False,
             warp: bool = True):
        """Decorator: compile ``func`` as a Warp function (``warp=False``: keep the Python function) and register it
        under ``name`` (its own name by default); re-registering a name needs ``replace=True``."""
        def register(f: Callable) -> wp.Function:
            key = name or f.__name__
            if key in self._terms and not replace:
                raise ValueError(f"{self.family} term '{key}' is already registered (pass replace=True)")
            wf = f if isinstance(f, wp.Function) or not warp else wp.func(f)
            self._terms[key] = wf
            return wf

        return register(func) if func is not None else register

    def names(self) -> list[str]:
        """Registered term names, in registration order."""
        return list(self._terms)

    def resolve(self, names: Sequence[str]) -> tuple[wp.Function, ...]:
        """The functions of ``names``, in that order; an unknown name raises one line listing the valid ones."""
        missing = [n for n in names if n not in self._terms]
        if missing:
            raise UnknownTermError(f"unknown {self.family} term{'s' if len(missing) > 1 else ''} "
                                   f"{', '.join(missing)}; valid terms: {', '.join(self._terms)}")
        return tuple(self._terms[n] for n in names)



class TerminationSet(TermSet):
    """Termination terms of one task family: Warp functions ``(x: Context, i: int) -> bool``, each a *failure*
    (the episode fails: ``terminated``) or a *time-out* (it ends as ``truncated``, bootstrapped like the time
    limit; Isaac Lab's ``time_out=True``). A task config lists the ones it uses (``task.terminations``); the step
    kernel fuses them with ``wp.static`` and counts, per finished episode, which of them fired
    (``termination/<name>`` in the episode statistics)::

        @VELOCITY_TERMINATIONS.term
        def base_too_low(x: Legged, i: int) -> bool:
            return wp.transform_get_translation(x.body_q[i, x.root])[2] < 0.2
    """

    def __init__(self, family: str, context: type) -> None:
        super().__init__(family, context)
        self._time_out: dict[str, bool] = {}

    def term(self, func: Callable | None = None, *, name: str | None = None, replace: bool = False,
             time_out: bool = False):
        """Decorator: register ``func`` as a failure (default) or, with ``time_out=True``, a time-out."""
        def register(f: Callable) -> wp.Function:
            wf = TermSet.term(self, f, name=name, replace=replace)
            self._time_out[name or f.__name__] = bool(time_out)
            return wf

        return register(func) if func is not None else register

    def time_outs(self, names: Sequence[str]) -> tuple[bool, ...]:
        """Whether each of ``names`` is a time-out (after :meth:`resolve` checked them)."""
        return tuple(self._time_out[n] for n in names)

    def fused(self, names: Sequence[str]) -> tuple[wp.Function, wp.Function]:
        """The Warp functions a step kernel calls for the terminations ``names`` (in that order):

        * ``check(x, i) -> (hits, failed, timed_out)``: every term of env ``i``; ``hits`` has bit k set where term
          k fired, ``failed`` / ``timed_out`` whether a failure / a time-out among them did;
        * ``count(hits, causes)``: adds 1 to ``causes[k]`` for every bit k of ``hits`` (on a finished episode:
          the per-cause statistics, ``termination/<name>``).

        One definition for every task family: a step kernel calls ``hits, failed, timed_out = check(x, i)`` and,
        when the episode ends, ``count(hits, causes)``."""
        return _termination_funcs(self.context, tuple(names), self.resolve(names), self.time_outs(names))


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
    explicit reset kernel (episode) or the reset-event kernel (reset) fuses them with ``wp.static``. ``startup`` events are host
    functions ``(world, randomization, rng: numpy.random.Generator) -> dict`` run once in config order while the
    env is built; they change the world's model arrays (the solver is told once after them: body inertial and
    shape properties) and return what they drew (``env.randomization``)::

        @VELOCITY_EVENTS.term
        def kick_up(x: Legged, i: int, s: wp.uint32) -> wp.uint32:
            x.joint_qd[i, 2] = x.joint_qd[i, 2] + wp.randf(s, 0.0, 1.0)
            return s

    A task config names them by mode: ``task.events`` maps interval events to their intervals [s],
    ``task.episode_events``, ``task.reset_events`` and ``task.startup_events`` list the others.
    """

    def __init__(self, family: str, context: type) -> None:
        super().__init__(family, context)
        self._mode: dict[str, str] = {}

    def term(self, func: Callable | None = None, *, name: str | None = None, replace: bool = False,
             mode: str = "interval"):
        """Decorator: register ``func`` as an event of ``mode`` (:data:`EVENT_MODES`); a startup event stays a
        Python function."""
        if mode not in EVENT_MODES:
            raise ValueError(f"event mode '{mode}'; valid modes: {', '.join(EVENT_MODES)}")

        def register(f: Callable):
            wf = TermSet.term(self, f, name=name, replace=replace, warp=mode != "startup")
            self._mode[name or f.__name__] = mode
            return wf

        return register(func) if func is not None else register

    def modes(self, names: Sequence[str]) -> tuple[str, ...]:
        """The mode of each of ``names`` (after :meth:`resolve` checked them)."""
        return tuple(self._mode[n] for n in names)

    def resolve_mode(self, names: Sequence[str], mode: str, where: str) -> tuple:
        """:meth:`resolve` for the config field ``where`` that lists events of ``mode``: an unknown name or an event
        of another mode fails in one line."""
        found = self.resolve(names)
        wrong = [f"{n} ({m})" for n, m in zip(names, self.modes(names)) if m != mode]
        if wrong:
            field = {"interval": "task.events", "reset": "task.reset_events", "startup": "task.startup_events",
                     "episode": "task.episode_events"}
            hint = "; ".join(f"{m} events go in {field[m]}"
                             for m in sorted({self._mode[n] for n in names if self._mode[n] != mode}))
            raise UnknownTermError(f"{where} takes {mode} events; not {', '.join(wrong)}: {hint}")
        return found


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
