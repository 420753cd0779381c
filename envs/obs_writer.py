"""The observation generator: a group of :class:`~horde.envs.observations.ObsTerm` s with functions becomes one Warp
function that writes the group's columns of an env, fused into the step's kernel.

A term with a ``func`` (a Warp function ``(x: Context, i: int, k: int) -> float``: column ``k``'s raw value for env
``i``) is written as its description says, in this order: the raw value minus ``offset``, plus uniform noise in +-
``noise`` (raw units, ``randf(-1, 1) x noise`` from the env's RNG state, training only), times ``scale``, clipped to
+- ``clip``, and, where the
term has a ``fallback`` (a value per column, or a function of the env), that instead while the env's world is not ok
(a NaN guard). Columns follow the term
list; each term's start column is computed here once, at build time. So ``policy.json`` (which reads the same terms)
states what ran::

    writer = observation_writer(Manip, env.observation_terms())   # at build time
    # in the step kernel, one thread per env:
    s = wp.static(writer)(x, i, ok, s, obs, 0)                       # every column of env i; returns the RNG state

Offsets, scales, clips and noise are compiled into the code as constants (no per-step host work, no kernel
argument); a term's columns are a loop, not unrolled, so a wide term (a height scan, a depth image) compiles as fast
as a narrow one. Identity constants cost nothing and change no bit (``v - 0.0`` and ``v * 1.0`` are exact).

History (``ObsTerm.history`` H > 1): the term's columns hold H frames, newest first
(:data:`horde.envs.observations.HISTORY_LAYOUT`), and the obs buffer itself keeps them: the step's writer moves
each older frame one frame on (dropping the oldest), then writes the newest as above; the writer for just-reset
envs (``fill=True``, what a task's observe kernel calls) writes the newest and copies it into every older frame.
Noise is drawn for the newest frame only, as it is written, so each frame keeps the noise it had and the RNG
stream is the one the term draws without history. Terms with history 1 generate the code they always did, and
``fill=True`` gives the step's writer itself when no term has history.

Delay (``ObsTerm.delay`` (min, max) > (0, 0)): the term's last ``max`` written values wait in the context's
``obs_past`` array (``[num_envs, past_width(terms)]``, the delayed terms' frames one after the other, newest first):
the step's writer writes the value now as above, draws the lag in [min, max] from the env's RNG state (after the
term's noise; no draw when min = max), puts the value of ``lag`` steps before in the term's columns and moves the
waiting frames on; the writer for just-reset envs fills them with the first value. History then keeps the delayed
frames. A context without ``obs_past`` (a family that keeps no delay buffer) refuses a delayed term in one line.
"""
# no `from __future__ import annotations`: Warp reads the annotations of the generated functions

import functools
from collections.abc import Sequence

import warp as wp

from horde.envs.observations import ObsTerm

__all__ = ["column_writer", "delayed_writer", "framed_writer", "interleaved_writer", "observation_values_torch",
           "observation_writer", "observe_kernel", "past_width", "raw_kernel", "term_writer", "write_joint_state"]


@functools.lru_cache(maxsize=None)
def column_writer(context: type, func: wp.Function, width: int, offset: tuple[float, ...], scale: tuple[float, ...],
                  clip: float, noise: float, fallback: tuple[float, ...] | wp.Function | None,
                  draw: bool = False) -> wp.Function:
    """``(x, i, ok, s, obs, col, k) -> s``: column ``k`` of one term of env ``i`` into ``obs[i, col + k]`` (see the
    module's docstring for the order); ``clip`` 0 and ``fallback`` None: none; a function as ``fallback``
    (``(x, i, k) -> float``) gives the value while not ok; ``draw``: a noise number is drawn (and added times
    ``noise``) even when ``noise`` is 0."""
    off = wp.types.vector(length=width, dtype=float)(*offset)
    scl = wp.types.vector(length=width, dtype=float)(*scale)
    noisy, clipped, guarded = noise > 0.0 or draw, clip > 0.0, fallback is not None
    if isinstance(fallback, wp.Function):
        other = fallback
    else:
        fb = wp.types.vector(length=width, dtype=float)(*(fallback or (0.0,) * width))

        @wp.func
        def other(x: context, i: int, k: int) -> float:
            return fb[k]

    @wp.func
    def write_column(x: context, i: int, ok: bool, s: wp.uint32, obs: wp.array2d(dtype=float), col: int,
                     k: int) -> wp.uint32:
        v = wp.static(func)(x, i, k) - off[k]
        if wp.static(noisy):  # wp.static: each flag and constant is part of the module's hash (a closure's bool
            v = v + wp.randf(s, -1.0, 1.0) * wp.static(noise)  # alone was not: two writers shared one build)
        v = v * scl[k]
        if wp.static(clipped):
            v = wp.clamp(v, -wp.static(clip), wp.static(clip))
        if wp.static(guarded):
            if not ok:
                v = wp.static(other)(x, i, k)
        obs[i, col + k] = v
        return s

    return write_column


@functools.lru_cache(maxsize=None)
def term_writer(context: type, func: wp.Function, width: int, offset: tuple[float, ...], scale: tuple[float, ...],
                clip: float, noise: float, fallback: tuple[float, ...] | wp.Function | None,
                draw: bool = False) -> wp.Function:
    """``(x, i, ok, s, obs, col) -> s``: one term's ``width`` columns of env ``i`` from ``obs[i, col]`` on, column
    by column (:func:`column_writer`)."""
    column = column_writer(context, func, width, offset, scale, clip, noise, fallback, draw)

    @wp.func
    def write_term(x: context, i: int, ok: bool, s: wp.uint32, obs: wp.array2d(dtype=float), col: int) -> wp.uint32:
        for k in range(wp.static(width)):
            s = wp.static(column)(x, i, ok, s, obs, col, k)
        return s

    return write_term


# Generated functions call the functions they compose through ``wp.static`` of a closure value, never of a loop
# variable: Warp hashes a static resolved at declaration into the module's hash, but a nested function's static of
# a loop variable only once it is built, so two kernels that differ only there shared one build (and one cache
# entry). Hence the chains below, one function per link.
def _chain(context: type, fns: tuple[wp.Function, ...], offsets: tuple[int, ...]) -> wp.Function:
    """``(x, i, ok, s, obs, col) -> s``: ``fns[0]`` at ``col + offsets[0]``, then the others, in order."""
    head, at = fns[0], offsets[0]
    if len(fns) == 1:

        @wp.func
        def last(x: context, i: int, ok: bool, s: wp.uint32, obs: wp.array2d(dtype=float), col: int) -> wp.uint32:
            return wp.static(head)(x, i, ok, s, obs, col + wp.static(at))

        return last
    rest = _chain(context, fns[1:], offsets[1:])

    @wp.func
    def link(x: context, i: int, ok: bool, s: wp.uint32, obs: wp.array2d(dtype=float), col: int) -> wp.uint32:
        s = wp.static(head)(x, i, ok, s, obs, col + wp.static(at))
        return wp.static(rest)(x, i, ok, s, obs, col)

    return link


def _column_chain(context: type, fns: tuple[wp.Function, ...], offsets: tuple[int, ...]) -> wp.Function:
    """``(x, i, ok, s, obs, col, k) -> s``: column ``k`` of ``fns[0]`` at ``col + offsets[0]``, then of the others."""
    head, at = fns[0], offsets[0]
    if len(fns) == 1:

        @wp.func
        def last(x: context, i: int, ok: bool, s: wp.uint32, obs: wp.array2d(dtype=float), col: int,
                 k: int) -> wp.uint32:
            return wp.static(head)(x, i, ok, s, obs, col + wp.static(at), k)

        return last
    rest = _column_chain(context, fns[1:], offsets[1:])

    @wp.func
    def link(x: context, i: int, ok: bool, s: wp.uint32, obs: wp.array2d(dtype=float), col: int,
             k: int) -> wp.uint32:
        s = wp.static(head)(x, i, ok, s, obs, col + wp.static(at), k)
        return wp.static(rest)(x, i, ok, s, obs, col, k)

    return link


@functools.lru_cache(maxsize=None)
def interleaved_writer(columns: tuple[wp.Function, ...], context: type, width: int,
                       starts: tuple[int, ...]) -> wp.Function:
    """``(x, i, ok, s, obs, col) -> s``: terms of one width written column by column in turn (column 0 of each,
    then column 1, ...; their noise drawn in that order), term ``e`` from ``obs[i, col + starts[e]]`` on."""
    each = _column_chain(context, columns, starts)

    @wp.func
    def write_interleaved(x: context, i: int, ok: bool, s: wp.uint32, obs: wp.array2d(dtype=float),
                          col: int) -> wp.uint32:
        for k in range(wp.static(width)):
            s = wp.static(each)(x, i, ok, s, obs, col, k)
        return s

    return write_interleaved


@functools.lru_cache(maxsize=None)
def framed_writer(write: wp.Function, context: type, at: int, frame: int, history: int, fill: bool) -> wp.Function:
    """``(x, i, ok, s, obs, col) -> s``: ``write`` (a block's writer from ``obs[i, col]`` on), with the ``history``
    frames of ``frame`` columns each of the term at ``col + at`` kept in ``obs`` itself (newest first): before it,
    each older frame moves one frame on (``fill`` False: the step); after it, the newest is copied into every older
    frame (``fill`` True: an env just reset)."""

    @wp.func
    def write_framed(x: context, i: int, ok: bool, s: wp.uint32, obs: wp.array2d(dtype=float),
                     col: int) -> wp.uint32:
        c = col + wp.static(at)
        if wp.static(not fill):
            for g in range(wp.static(history - 1)):  # the oldest frame first: it is overwritten
                f = wp.static(history - 1) - g
                for k in range(wp.static(frame)):
                    obs[i, c + f * wp.static(frame) + k] = obs[i, c + (f - 1) * wp.static(frame) + k]
        s = wp.static(write)(x, i, ok, s, obs, col)
        if wp.static(fill):
            for f in range(1, wp.static(history)):
                for k in range(wp.static(frame)):
                    obs[i, c + f * wp.static(frame) + k] = obs[i, c + k]
        return s

    return write_framed


@functools.lru_cache(maxsize=None)
def delayed_writer(write: wp.Function, context: type, at: int, frame: int, lo: int, hi: int, past: int,
                   fill: bool) -> wp.Function:
    """``(x, i, ok, s, obs, col) -> s``: ``write`` (a block's writer from ``obs[i, col]`` on), then the ``frame``
    columns of the term at ``col + at`` delayed by a lag drawn in [``lo``, ``hi``]: ``x.obs_past[i, past:]`` holds
    the term's ``hi`` values before, newest first (``fill``: an env just reset; every one the value now)."""
    draw = hi > lo and not fill

    @wp.func
    def write_delayed(x: context, i: int, ok: bool, s: wp.uint32, obs: wp.array2d(dtype=float),
                      col: int) -> wp.uint32:
        s = wp.static(write)(x, i, ok, s, obs, col)
        c = col + wp.static(at)
        lag = int(wp.static(lo))
        if wp.static(draw):
            lag = wp.randi(s, wp.static(lo), wp.static(hi + 1))
        for k in range(wp.static(frame)):
            now = obs[i, c + k]
            if wp.static(fill):
                for f in range(wp.static(hi)):
                    x.obs_past[i, wp.static(past) + f * wp.static(frame) + k] = now
            else:
                if lag > 0:
                    obs[i, c + k] = x.obs_past[i, wp.static(past) + (lag - 1) * wp.static(frame) + k]
                for g in range(wp.static(hi - 1)):  # the oldest value first: it is dropped
                    f = wp.static(hi - 1) - g
                    x.obs_past[i, wp.static(past) + f * wp.static(frame) + k] = \
                        x.obs_past[i, wp.static(past) + (f - 1) * wp.static(frame) + k]
                x.obs_past[i, wp.static(past) + k] = now
        return s

    return write_delayed


def past_width(terms: Sequence[ObsTerm]) -> int:
    """Columns of a context's ``obs_past`` that ``terms``' delays need per env (0: no term is delayed)."""
    return sum(t.past_width for t in terms)


def _per_column(term: ObsTerm, attr: str) -> tuple[float, ...]:
    v = getattr(term, attr)
    if v is None:
        return ()
    return (tuple(float(v) for _ in range(term.frame_width)) if isinstance(v, (int, float))
            else tuple(float(c) for c in v))


def _writer_args(term: ObsTerm, draw: bool) -> tuple:
    if term.func is None:
        raise ValueError(f"observation term '{term.name}' has no function to write it (ObsTerm.func)")
    fb = term.fallback if isinstance(term.fallback, wp.Function) else (_per_column(term, "fallback") or None)
    return (term.func, term.frame_width, _per_column(term, "offset"), _per_column(term, "scale"),
            float(term.clip or 0.0), float(term.noise), fb, draw)


def _blocks(terms: tuple[ObsTerm, ...], interleave: tuple[tuple[str, ...], ...]) -> list[tuple[ObsTerm, ...]]:
    """The terms cut into blocks written one after the other: an ``interleave`` group (consecutive terms of one
    width, in the list's order) is one block, every other term one of its own."""
    names = [t.name for t in terms]
    first = {}
    for group in interleave:
        if not group:
            continue
        if group[0] not in names:
            raise ValueError(f"interleave group {list(group)}: no term '{group[0]}' in {names}")
        at = names.index(group[0])
        block = terms[at:at + len(group)]
        if tuple(t.name for t in block) != tuple(group) or len({t.frame_width for t in block}) != 1:
            raise ValueError(f"interleave group {list(group)}: not consecutive terms of one width in {names}")
        first[at] = block
    out, e = [], 0
    while e < len(terms):
        block = first.get(e, (terms[e],))
        out.append(block)
        e += len(block)
    return out


@functools.lru_cache(maxsize=None)
def _group_writer(context: type, terms: tuple[ObsTerm, ...], interleave: tuple[tuple[str, ...], ...],
                  always_draw: tuple[str, ...], fill: bool) -> wp.Function:
    writers, starts, col, past = [], [], 0, 0
    for block in _blocks(terms, interleave):
        args = [_writer_args(t, t.name in always_draw) for t in block]
        rel = tuple(sum(t.width for t in block[:e]) for e in range(len(block)))
        if len(block) == 1:
            write = term_writer(context, *args[0])
        else:
            columns = tuple(column_writer(context, *a) for a in args)
            write = interleaved_writer(columns, context, block[0].frame_width, rel)
        for t, at in zip(block, rel):  # no delay: the block's writer as it is
            if t.delay[1] > 0:
                write = delayed_writer(write, context, at, t.frame_width, t.delay[0], t.delay[1], past, fill)
                past += t.past_width
        for t, at in zip(block, rel):  # history 1: the block's writer as it is
            if t.history > 1:
                write = framed_writer(write, context, at, t.frame_width, t.history, fill)
        writers.append(write)
        starts.append(col)
        col += sum(t.width for t in block)
    return _chain(context, tuple(writers), tuple(starts))


def observation_writer(context: type, terms: Sequence[ObsTerm], *, interleave: Sequence[Sequence[str]] = (),
                       always_draw: Sequence[str] = (), fill: bool = False) -> wp.Function:
    """``(x: context, i, ok, s, obs, start) -> s``: writes every term of ``terms`` (each with a ``func``) for env
    ``i`` into ``obs[i, start:start + width]``, in order, and returns the RNG state ``s`` after the terms' noise
    (unchanged without noise). ``ok``: the env's world is sound (terms with a ``fallback`` write it otherwise). One
    function per context and term list (cached): a kernel calls it with ``wp.static``.

    Terms with ``history`` keep their older frames in ``obs`` (see the module's docstring): the step's writer moves
    them on; ``fill=True`` gives the writer for envs just reset (a task's observe kernel), which fills every frame
    with the first value. Delayed terms keep their waiting values in ``x.obs_past`` (:func:`past_width` columns,
    in the terms' order). Without history or delay the two are one function.

    The order of the noise draws (which sets every later number of the env's stream): term after term, column
    after column, a term with ``noise`` 0 drawing none; two options keep a task's older stream bit for bit (the
    velocity family's): ``interleave``, groups of consecutive terms of one width (by name) written column by column
    in turn (column 0 of each, then column 1, ...), and ``always_draw``, terms that draw their number (times 0)
    even without noise. The columns stay where the term list puts them."""
    terms = tuple(terms)
    fill = fill and any(t.history > 1 or t.delay[1] > 0 for t in terms)
    delayed = [t.name for t in terms if t.delay[1] > 0]
    if delayed and "obs_past" not in getattr(context, "vars", {}):
        raise ValueError(f"observation term '{delayed[0]}' has a delay: {context.__name__}'s family keeps no delay "
                         "buffer (the lift and velocity families do)")
    return _group_writer(context, terms, tuple(tuple(g) for g in interleave), tuple(always_draw), fill)


@functools.lru_cache(maxsize=None)
def raw_kernel(context: type, terms: tuple[ObsTerm, ...]) -> wp.Kernel:
    """A kernel ``(x: context, out [num_envs, width])`` that writes the terms' functions' raw values (no noise,
    offset, scale, clip or fallback; one frame of a term with history), one thread per env: the raw sources of
    terms that exist only as functions (``env.observation_sources()``, checked by the observation contract);
    ``width``: the terms' frame widths summed."""
    funcs = tuple(t.func for t in terms)
    widths = tuple(t.frame_width for t in terms)
    starts = tuple(sum(widths[:e]) for e in range(len(terms)))

    @wp.kernel(enable_backward=False, module="unique")
    def raw_observation(x: context, out: wp.array2d(dtype=float)):
        i = wp.tid()
        for e in range(wp.static(len(funcs))):
            for k in range(wp.static(widths[e])):
                out[i, wp.static(starts[e]) + k] = wp.static(funcs[e])(x, i, k)

    return raw_observation


@functools.lru_cache(maxsize=None)
def _column_value(context: type, func: wp.Function, k: int) -> wp.Function:
    """``(x, i) -> float``: column ``k`` of a term's function, as a reward term's signature (what
    :func:`horde.envs.terms.term_values_torch` runs)."""

    @wp.func
    def column_value(x: context, i: int) -> float:
        return wp.static(func)(x, i, wp.static(k))

    return column_value


def observation_values_torch(context: type, terms: Sequence[ObsTerm], arrays: dict, constants: dict | None = None):
    """The observation ``[N, width]`` that ``terms`` describe, on a ``context`` built from torch tensors, with each
    term's offset, scale and clip (no noise: a differentiable model observes as the robot does), differentiable with
    respect to the tensors: the env's own observation functions in a torch graph, so that a differentiable model
    (SHAC's) observes its states through the one source the step kernel writes from. ``arrays`` and ``constants``
    as :func:`horde.envs.terms.term_values_torch` takes them."""
    import torch

    from horde.envs.terms import term_values_torch

    kept = [t.name for t in terms if t.history > 1]
    if kept:  # a differentiable model observes one state, with no frames before it
        raise ValueError(f"observation term '{kept[0]}' keeps a history: a differentiable model's torch observation "
                         "has none (history 1 on its terms)")
    delayed = [t.name for t in terms if t.delay[1] > 0]
    if delayed:
        raise ValueError(f"observation term '{delayed[0]}' has a delay: a differentiable model's torch observation "
                         "is of the state now (no delay on its terms)")
    columns = tuple(_column_value(context, t.func, k) for t in terms for k in range(t.width))
    raw = term_values_torch(context, columns, arrays, constants).T  # [N, width]
    device = raw.device
    offset = torch.tensor([v for t in terms for v in t.per_column("offset")], device=device)
    scale = torch.tensor([v for t in terms for v in t.per_column("scale")], device=device)
    out = (raw - offset) * scale
    clip = torch.tensor([t.clip or float("inf") for t in terms for _ in range(t.width)], device=device)
    return torch.where(torch.isinf(clip), out, torch.clamp(out, -clip, clip))


@wp.func
def write_joint_state(i: int, ok: bool, joint_q: wp.array2d(dtype=float), state: wp.array2d(dtype=float)):
    """The state row of env i: the first ``state.shape[1]`` joint coordinates (zeros while the world is not ``ok``)."""
    for k in range(state.shape[1]):
        state[i, k] = wp.where(ok, joint_q[i, k], 0.0)


@functools.lru_cache(maxsize=None)
def observe_kernel(context: type, write_obs: wp.Function, clear_root_twist: bool = False) -> wp.Kernel:
    """``(x: context, mask, rng, state, obs)``: the observation (``write_obs``) and the joint-coordinate state row of
    the envs in ``mask`` (just reset), one thread per env; ``clear_root_twist`` zeroes ``x.root_vel_base`` first (a
    floating base's twist until the next health check)."""

    @wp.kernel(enable_backward=False, module="unique")
    def observe(x: context, mask: wp.array(dtype=wp.bool), rng: wp.array(dtype=wp.uint32),
                state: wp.array2d(dtype=float), obs: wp.array2d(dtype=float)):
        i = wp.tid()
        if mask[i]:
            if wp.static(clear_root_twist):
                for k in range(6):
                    x.root_vel_base[i, k] = 0.0
            write_joint_state(i, True, x.joint_q, state)
            rng[i] = wp.static(write_obs)(x, i, True, rng[i], obs, 0)

    return observe
