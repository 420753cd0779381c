"""The observation generator (issue 71, item 1): terms with functions become one Warp function that writes the
columns as the terms describe them: raw minus offset, plus noise, times scale, clipped, the fallback while not
ok."""

import dataclasses

import numpy as np
import warp as wp

from horde.envs.obs_writer import observation_writer, raw_kernel
from horde.envs.observations import ObsTerm, columns_of


@wp.struct
class Ctx:
    a: wp.array2d(dtype=float)


@wp.func
def _column(x: Ctx, i: int, k: int) -> float:
    return x.a[i, k]


@wp.func
def _twice(x: Ctx, i: int, k: int) -> float:
    return 2.0 * x.a[i, k]


TERMS = (
    ObsTerm("plain", source="a", columns=("p0", "p1"), func=_column),
    ObsTerm("shaped", source="a", columns=("s0", "s1", "s2"), func=_twice, offset=(1.0, 2.0, 3.0), scale=0.5,
            clip=1.5, fallback=(7.0, 8.0, 9.0)),
    ObsTerm("wide", source="a", columns=tuple(f"w{k}" for k in range(40)), func=_column, scale=-1.0),
)


def _kernel(terms):
    write = observation_writer(Ctx, terms)

    @wp.kernel(enable_backward=False, module="unique")
    def observe(x: Ctx, ok: wp.array(dtype=wp.bool), rng: wp.array(dtype=wp.uint32), obs: wp.array2d(dtype=float)):
        i = wp.tid()
        rng[i] = wp.static(write)(x, i, ok[i], rng[i], obs, 1)

    return observe


def _run(terms, a: np.ndarray, ok: list[bool]):
    n, width = a.shape[0], sum(t.width for t in terms)
    x = Ctx()
    x.a = wp.array(a, dtype=float)
    rng = wp.array([wp.rand_init(5, i) for i in range(n)], dtype=wp.uint32)
    before = rng.numpy().copy()
    obs = wp.full((n, 1 + width), -99.0, dtype=float)
    wp.launch(_kernel(terms), n, inputs=[x, wp.array(ok, dtype=wp.bool), rng], outputs=[obs])
    return obs.numpy(), before, rng.numpy()


def test_each_term_is_written_at_its_offset_as_its_description_says():
    a = np.arange(2 * 40, dtype=np.float32).reshape(2, 40) / 10.0
    obs, before, after = _run(TERMS, a, [True, False])
    assert (obs[:, 0] == -99.0).all()  # the start column: nothing written before it
    np.testing.assert_array_equal(obs[:, 1:3], a[:, :2])  # no offset, scale, clip or fallback: as computed
    shaped = np.clip((2.0 * a[0, :3] - np.array([1.0, 2.0, 3.0])) * 0.5, -1.5, 1.5)
    np.testing.assert_allclose(obs[0, 3:6], shaped, rtol=1e-6)
    np.testing.assert_array_equal(obs[1, 3:6], [7.0, 8.0, 9.0])  # not ok: the fallback
    np.testing.assert_array_equal(obs[1, 1:3], a[1, :2])  # a term without a fallback keeps its value
    np.testing.assert_array_equal(obs[:, 6:], -a)  # 40 columns, scale -1
    np.testing.assert_array_equal(after, before)  # no noise: the RNG state is untouched
    assert len(columns_of(TERMS)) == 45


def test_noise_is_uniform_in_its_half_width_and_advances_the_rng():
    noisy = (ObsTerm("n", source="a", columns=tuple(f"n{k}" for k in range(8)), func=_column, noise=0.25,
                     scale=2.0),)
    a = np.full((64, 8), 1.0, dtype=np.float32)
    obs, before, after = _run(noisy, a, [True] * 64)
    noise = obs[:, 1:] / 2.0 - 1.0  # (raw + noise) * scale
    assert np.abs(noise).max() <= 0.25 + 1e-6 and noise.std() > 0.1  # uniform(-0.25, 0.25): std 0.144
    assert (after != before).all()
    assert len({tuple(r) for r in obs[:, 1:]}) == 64  # every env draws its own


def test_the_raw_kernel_writes_the_functions_values_only():
    a = np.arange(2 * 40, dtype=np.float32).reshape(2, 40)
    x = Ctx()
    x.a = wp.array(a, dtype=float)
    out = wp.zeros((2, 45), dtype=float)
    wp.launch(raw_kernel(Ctx, TERMS), 2, inputs=[x], outputs=[out])
    np.testing.assert_array_equal(out.numpy()[:, :2], a[:, :2])
    np.testing.assert_array_equal(out.numpy()[:, 2:5], 2.0 * a[:, :3])
    np.testing.assert_array_equal(out.numpy()[:, 5:], a)


@wp.kernel(enable_backward=False)
def _draws(rng: wp.array(dtype=wp.uint32), out: wp.array2d(dtype=float)):
    i = wp.tid()
    s = rng[i]
    for k in range(out.shape[1]):
        out[i, k] = wp.randf(s, -1.0, 1.0)


def _stream(n: int, count: int) -> np.ndarray:
    out = wp.zeros((n, count), dtype=float)
    wp.launch(_draws, n, inputs=[wp.array([wp.rand_init(5, i) for i in range(n)], dtype=wp.uint32)], outputs=[out])
    return out.numpy()


def _kernel_with(terms, **order):
    write = observation_writer(Ctx, terms, **order)

    @wp.kernel(enable_backward=False, module="unique")
    def observe(x: Ctx, rng: wp.array(dtype=wp.uint32), obs: wp.array2d(dtype=float)):
        i = wp.tid()
        rng[i] = wp.static(write)(x, i, True, rng[i], obs, 0)

    return observe


def test_interleaved_terms_draw_column_by_column_and_always_draw_draws_at_zero_noise():
    """The velocity family's stream: ``interleave`` draws column k of each grouped term in turn, ``always_draw``
    draws a number (times 0) for a term without noise; the columns stay in the list's order."""
    terms = (ObsTerm("a", source="a", columns=("a0", "a1", "a2"), func=_column, noise=0.5),
             ObsTerm("b", source="a", columns=("b0", "b1", "b2"), func=_twice),
             ObsTerm("c", source="a", columns=("c0", "c1"), func=_column, noise=0.25))
    n = 4
    a = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    r = _stream(n, 8)

    def run(**order):
        x = Ctx()
        x.a = wp.array(a, dtype=float)
        rng = wp.array([wp.rand_init(5, i) for i in range(n)], dtype=wp.uint32)
        obs = wp.zeros((n, 8), dtype=float)
        wp.launch(_kernel_with(terms, **order), n, inputs=[x, rng], outputs=[obs])
        return obs.numpy()

    plain = run()  # a draws 3, b none, c 2
    np.testing.assert_allclose(plain[:, 0:3], a + 0.5 * r[:, 0:3], rtol=1e-6)
    np.testing.assert_array_equal(plain[:, 3:6], 2.0 * a)
    np.testing.assert_allclose(plain[:, 6:8], a[:, :2] + 0.25 * r[:, 3:5], rtol=1e-6)
    zipped = run(interleave=[("a", "b")], always_draw=("b",))  # a0 b0 a1 b1 a2 b2, then c
    np.testing.assert_allclose(zipped[:, 0:3], a + 0.5 * r[:, 0:6:2], rtol=1e-6)
    np.testing.assert_array_equal(zipped[:, 3:6], 2.0 * a)  # its draws are times 0
    np.testing.assert_allclose(zipped[:, 6:8], a[:, :2] + 0.25 * r[:, 6:8], rtol=1e-6)
    unzipped = run(always_draw=("b",))  # a0 a1 a2 b0 b1 b2 c0 c1
    np.testing.assert_allclose(unzipped[:, 6:8], a[:, :2] + 0.25 * r[:, 6:8], rtol=1e-6)
    np.testing.assert_allclose(unzipped[:, 0:3], plain[:, 0:3])


def test_an_interleave_group_of_other_widths_or_not_consecutive_fails_in_one_line():
    import pytest

    with pytest.raises(ValueError, match="not consecutive terms of one width"):
        observation_writer(Ctx, TERMS, interleave=[("plain", "shaped")])
    with pytest.raises(ValueError, match="no term 'nope'"):
        observation_writer(Ctx, TERMS, interleave=[("nope", "plain")])


def test_the_classic_models_torch_observations_match_their_terms_values_and_gradients():
    """The differentiable models of the pendulum and the cart-pole observe in torch; their observation terms (what
    the step kernels write from) give the same values and gradients through ``observation_values_torch`` to float
    rounding. (The models keep torch: through the Warp terms, a float-rounding change, one of ten SHAC seeds fell
    under each task's learning bar; benchmarks/results/2026-12-07_learning_bars_shac_warp_obs_cpu.jsonl.)"""
    import torch

    from horde.envs import cartpole, pendulum
    from horde.envs.obs_writer import observation_values_torch

    g = torch.Generator().manual_seed(0)
    for module, context, scale, extra, constants in (
            (pendulum, pendulum.Swing, (6.0, 8.0), {}, None),
            (cartpole, cartpole.Cart, (2.0, 3.0, 7.0, 8.0),
             {"failed": (torch.zeros(64, dtype=torch.bool), wp.bool)}, {"scored": False})):
        state = ((torch.rand(64, len(scale), generator=g) * 2 - 1) * torch.tensor(scale)).requires_grad_(True)
        arrays = {"state": (state, float), "actions": (torch.zeros(64, 1), float), **extra}
        ours = observation_values_torch(context, module.observation_terms(), arrays, constants)
        ref = module.obs_from_state(state)
        torch.testing.assert_close(ours, ref, atol=2e-7, rtol=0)
        (g_ours,) = torch.autograd.grad(ours.sum(), state)
        (g_ref,) = torch.autograd.grad(ref.sum(), state)
        torch.testing.assert_close(g_ours, g_ref, atol=1e-6, rtol=0)
    # offset, scale and clip as the generator applies them
    from horde.envs.observations import ObsTerm

    term = ObsTerm("v", "v", ("v",), func=pendulum.angular_vel, offset=1.0, scale=2.0, clip=3.0)
    state = torch.tensor([[0.0, -5.0], [0.0, 1.5], [0.0, 9.0]])
    out = observation_values_torch(pendulum.Swing, (term,), {"state": (state, float),
                                                             "actions": (torch.zeros(3, 1), float)})
    torch.testing.assert_close(out[:, 0], torch.tensor([-3.0, 1.0, 3.0]))


# --- history (ObsTerm.history): frames kept in the obs buffer, newest first, filled on a reset -------------------
def _history_kernels(terms, context=Ctx, **order):
    """The step's kernel (every env: older frames move on, the newest is written) and the observe kernel of envs
    just reset (``fill``: every frame the first value), as a task's kernels call the two writers."""
    step, fill = observation_writer(context, terms, **order), observation_writer(context, terms, fill=True, **order)

    @wp.kernel(enable_backward=False, module="unique")
    def observe_step(x: context, rng: wp.array(dtype=wp.uint32), obs: wp.array2d(dtype=float)):
        i = wp.tid()
        rng[i] = wp.static(step)(x, i, True, rng[i], obs, 0)

    @wp.kernel(enable_backward=False, module="unique")
    def observe_reset(x: context, mask: wp.array(dtype=wp.bool), rng: wp.array(dtype=wp.uint32),
                      obs: wp.array2d(dtype=float)):
        i = wp.tid()
        if mask[i]:
            rng[i] = wp.static(fill)(x, i, True, rng[i], obs, 0)

    return observe_step, observe_reset


def _history_run(terms, values, resets, context=Ctx, states=None, **order):
    """Observations after each event of a sequence: ``values[t]`` [n, 2] the raw state at event t, ``resets[t]``
    None for a step or the envs reset (bool [n]); ``states``: a list that gets the RNG states after each event."""
    from horde.envs.obs_writer import past_width

    n = values[0].shape[0]
    step, reset = _history_kernels(terms, context, **order)
    x = context()
    if "obs_past" in context.vars:
        x.obs_past = wp.full((n, max(1, past_width(terms))), -7.0, dtype=float)
    rng = wp.array([wp.rand_init(5, i) for i in range(n)], dtype=wp.uint32)
    obs = wp.zeros((n, sum(t.width for t in terms)), dtype=float)
    out = []
    for a, mask in zip(values, resets):
        x.a = wp.array(a, dtype=float)
        if mask is None:
            wp.launch(step, n, inputs=[x, rng], outputs=[obs])
        else:
            wp.launch(reset, n, inputs=[x, wp.array(mask, dtype=wp.bool), rng], outputs=[obs])
        out.append(obs.numpy().copy())
        if states is not None:
            states.append(rng.numpy().copy())
    return out


def test_a_history_term_keeps_its_frames_newest_first_and_a_reset_fills_them_with_the_first_value():
    """Hand-worked: a 2-column term (offset 1, scale 2) with 3 frames, then a plain 1-column term; both envs
    reset, three steps, env 1 alone reset, one step."""
    terms = (ObsTerm("h", source="a", columns=("h0", "h1"), func=_column, offset=1.0, scale=2.0, history=3),
             ObsTerm("p", source="a", columns=("p0",), func=_twice))
    assert columns_of(terms) == ("h0", "h1", "h0@-1", "h1@-1", "h0@-2", "h1@-2", "p0")
    assert (terms[0].width, terms[0].frame_width, terms[0].names[:2]) == (6, 2, ("h0", "h1"))
    a = [np.array([[10.0 * t + 1, 10.0 * t + 2], [100.0 * t + 1, 100.0 * t + 2]], dtype=np.float32)
         for t in range(6)]
    resets = [np.array([True, True]), None, None, None, np.array([False, True]), None]
    out = _history_run(terms, a, resets)

    def h(t, e):  # the frame env e wrote at event t
        return (a[t][e] - 1.0) * 2.0

    for e in (0, 1):
        np.testing.assert_array_equal(out[0][e], [*h(0, e), *h(0, e), *h(0, e), 2.0 * a[0][e][0]])  # filled
        np.testing.assert_array_equal(out[1][e], [*h(1, e), *h(0, e), *h(0, e), 2.0 * a[1][e][0]])
        np.testing.assert_array_equal(out[2][e], [*h(2, e), *h(1, e), *h(0, e), 2.0 * a[2][e][0]])
        np.testing.assert_array_equal(out[3][e], [*h(3, e), *h(2, e), *h(1, e), 2.0 * a[3][e][0]])
    np.testing.assert_array_equal(out[4][0], out[3][0])  # not reset: untouched by the reset's kernel
    np.testing.assert_array_equal(out[4][1], [*h(4, 1), *h(4, 1), *h(4, 1), 2.0 * a[4][1][0]])
    np.testing.assert_array_equal(out[5][0], [*h(5, 0), *h(3, 0), *h(2, 0), 2.0 * a[5][0][0]])
    np.testing.assert_array_equal(out[5][1], [*h(5, 1), *h(4, 1), *h(4, 1), 2.0 * a[5][1][0]])


def test_history_keeps_each_frames_noise_and_the_rng_stream_and_the_interleaved_order():
    """Each frame keeps the noise drawn when it was written; the draws are those of the terms without history
    (the newest frame is the history-free observation bit for bit), interleaved groups included."""
    def terms(history):
        return (ObsTerm("a", source="a", columns=("a0", "a1"), func=_column, noise=0.5, history=history),
                ObsTerm("b", source="a", columns=("b0", "b1"), func=_twice, noise=0.25))

    n, steps = 3, 5
    a = [np.random.default_rng(t).normal(size=(n, 2)).astype(np.float32) for t in range(steps)]
    resets = [np.ones(n, dtype=bool)] + [None] * (steps - 1)
    for order in ({}, {"interleave": [("a", "b")]}):
        kept, plain = _history_run(terms(4), a, resets, **order), _history_run(terms(1), a, resets, **order)
        for t in range(steps):
            np.testing.assert_array_equal(kept[t][:, 0:2], plain[t][:, 0:2])  # the newest frame: noise and all
            np.testing.assert_array_equal(kept[t][:, 8:10], plain[t][:, 2:4])  # the next term, moved by 3 frames
            for f in range(1, 4):  # frame f is the newest frame of f steps before (the reset's, before that)
                np.testing.assert_array_equal(kept[t][:, 2 * f:2 * f + 2], plain[max(t - f, 0)][:, 0:2])
        assert np.abs(kept[-1][:, 0:2] - a[-1]).max() > 0.01  # there is noise to keep


def test_history_1_is_the_writer_it_was_and_a_bad_history_fails_in_one_line():
    import pytest

    plain = ObsTerm("h", source="a", columns=("h0",), func=_column)
    assert plain.history == 1 and plain.names == plain.columns
    assert observation_writer(Ctx, (plain,), fill=True) is observation_writer(Ctx, (plain,))
    for bad in (0, 2.0, True, "3"):
        with pytest.raises(ValueError, match=r"^observation term 'h': history must be an int >= 1, got "):
            ObsTerm("h", source="a", columns=("h0",), history=bad)


# --- delay (ObsTerm.delay): the value of lag steps before, lag drawn per env and step, the waiting values in
# x.obs_past --------------------------------------------------------------------------------------------------------
@wp.struct
class Lagged:
    a: wp.array2d(dtype=float)
    obs_past: wp.array2d(dtype=float)


@wp.func
def _lagged(x: Lagged, i: int, k: int) -> float:
    return x.a[i, k]


def _delay_run(terms, values, resets):
    """:func:`_history_run` on a context with ``obs_past``, and the RNG states after each event."""
    states = []
    return _history_run(terms, values, resets, Lagged, states), states


def test_a_fixed_delay_shows_the_value_of_lag_steps_before_and_a_reset_shows_its_first_value():
    """Hand-worked: a 2-column term (offset 1, scale 2) delayed 2 steps, then a plain term; both envs reset, four
    steps, env 1 alone reset, two steps. A fixed lag draws no number (the RNG stream is the undelayed one)."""
    terms = (ObsTerm("d", source="a", columns=("d0", "d1"), func=_lagged, offset=1.0, scale=2.0, delay=(2, 2)),
             ObsTerm("p", source="a", columns=("p0",), func=_lagged))
    assert terms[0].past_width == 4 and terms[0].width == 2 and columns_of(terms) == ("d0", "d1", "p0")
    a = [np.array([[10.0 * t + 1, 10.0 * t + 2], [100.0 * t + 1, 100.0 * t + 2]], dtype=np.float32)
         for t in range(8)]
    resets = [np.array([True, True]), None, None, None, None, np.array([False, True]), None, None]
    out, states = _delay_run(terms, a, resets)

    def d(t, e):  # the term's value env e had at event t
        return list((a[t][e] - 1.0) * 2.0)

    for e in (0, 1):
        assert list(out[0][e]) == [*d(0, e), a[0][e][0]]  # the reset: the first value
        assert list(out[1][e]) == [*d(0, e), a[1][e][0]]  # 2 steps before the first step: the reset's value
        assert list(out[2][e]) == [*d(0, e), a[2][e][0]]
        assert list(out[3][e]) == [*d(1, e), a[3][e][0]]
        assert list(out[4][e]) == [*d(2, e), a[4][e][0]]
    assert list(out[5][0]) == list(out[4][0])  # not reset: untouched by the reset's kernel
    assert list(out[5][1]) == [*d(5, 1), a[5][1][0]]
    # env 0 was not stepped at event 5: its last two steps before event 6 are events 4 and 3
    assert list(out[6][0]) == [*d(3, 0), a[6][0][0]] and list(out[6][1]) == [*d(5, 1), a[6][1][0]]
    assert list(out[7][0]) == [*d(4, 0), a[7][0][0]] and list(out[7][1]) == [*d(5, 1), a[7][1][0]]
    _, plain = _delay_run((dataclasses.replace(terms[0], delay=(0, 0)), terms[1]), a, resets)
    assert all((s == p).all() for s, p in zip(states, plain))


def test_a_delay_range_draws_a_lag_per_env_and_step_and_history_stacks_the_delayed_frames():
    """lag in [1, 3]: every observed value is one of the last 1-3 steps' values (the reset's before that), each
    lag occurs, and with history 2 frame 1 is the delayed value of the step before."""
    n, steps = 16, 12
    a = [np.full((n, 1), float(t), dtype=np.float32) + np.arange(n, dtype=np.float32)[:, None] * 100.0
         for t in range(steps)]
    resets = [np.ones(n, dtype=bool)] + [None] * (steps - 1)
    term = ObsTerm("d", source="a", columns=("d0",), func=_lagged, delay=(1, 3))
    out, _ = _delay_run((term,), a, resets)
    kept, _ = _delay_run((dataclasses.replace(term, history=2),), a, resets)
    lags = set()
    for t in range(1, steps):
        seen = out[t][:, 0] - np.arange(n) * 100.0  # the step whose value each env sees
        lag = t - seen
        assert ((lag >= 1) & (lag <= 3) | (seen == 0)).all(), (t, lag)
        lags |= {int(v) for v, s in zip(lag, seen) if s > 0}
        np.testing.assert_array_equal(kept[t][:, 0], out[t][:, 0])  # the same draws: the newest frame is the same
        np.testing.assert_array_equal(kept[t][:, 1], out[t - 1][:, 0])  # frame 1: the delayed value before
    assert lags == {1, 2, 3}


def test_a_bad_delay_fails_in_one_line_and_a_family_without_a_delay_buffer_refuses_one():
    import pytest

    from horde.envs.observations import modifiers
    from horde.envs.terms import UnknownTermError

    for bad in ((2, 1), (-1, 0), (1.0, 2), 3, (True, 2)):
        with pytest.raises(ValueError, match=r"^observation term 'd': delay must be \(min, max\) control steps, "):
            ObsTerm("d", source="a", columns=("d0",), delay=bad)
    assert modifiers("d", {"delay": 2}) == {"delay": (2, 2)} and modifiers("d", {"delay": [0, 3]}) == {"delay": (0, 3)}
    for bad in ([3, 1], -1, 1.5, [1, 2, 3], "2"):
        with pytest.raises(UnknownTermError, match=r"^task.observation_params.d.delay: control steps of sensor "
                                                   r"latency, an int >= 0 or \[min, max\] with 0 <= min <= max, got "):
            modifiers("d", {"delay": bad})
    with pytest.raises(ValueError, match=r"^observation term 'd' has a delay: Ctx's family keeps no delay buffer "):
        observation_writer(Ctx, (ObsTerm("d", source="a", columns=("d0",), func=_column, delay=(1, 1)),))
