"""The cart-pole's CPU fast path: ``LANES`` envs per Warp thread in native code that clang vectorizes (its step,
reward terms, failure, time-out, observations and resets), launched by :class:`horde.envs.cartpole.CartpoleEnv` on
CPU devices; the one-env-per-thread kernels of :mod:`horde.envs.cartpole` are what CUDA runs, and
``tests/unit/test_sim.py`` pins the two to each other bit for bit."""

from __future__ import annotations

import functools

import warp as wp

from horde.envs.cartpole import NUM_TERMS, OBS_DIM, CartpoleTask
from horde.envs.episode import (
    STATS_EPISODES,
    STATS_LENGTH,
    STATS_LENGTH_SQ,
    STATS_RETURN,
    STATS_RETURN_SQ,
    STATS_TERMINATIONS,
    STATS_TERMS,
    STATS_TIME_OUTS,
    Episodes,
)
from horde.sim.classic import CARTPOLE_STATE, LANES, CartpoleParams

__all__ = ["cartpole_block_kernel"]


# --- CPU fast path: LANES envs per Warp thread in native code that clang vectorizes --------------------------------
# Warp runs a CPU kernel's threads one after another in one OS thread, so a fast CPU step must fill the SIMD lanes
# within a thread. Warp's kernel language can do that only through fixed-size vector and matrix *values*, copied in and
# out of every block, and clang does not vectorize loops over Warp arrays, whose strides are run-time values: measured
# at 4096 envs, the best Warp-only block kernel took 34-38 us a step, this native one 17 us. Each Warp thread calls one
# native function for its block: a vectorized loop over the block's envs (physics substeps, reward terms, failure,
# time-out, observations) reading and writing the env buffers in place through raw pointers, then the few finished envs
# in env order (statistics, which built-in termination terms fired, final observation, a fresh state from the env's
# random stream). Termination terms of a config's own cannot reach this C++: such a config runs the per-env kernels. Reward terms and episode
# sums are term-major ([num_terms, num_envs], see horde.envs.core), so those stores are contiguous across lanes.
# The C++ mirrors, statement for statement, ``sincos``, ``is_finite``, ``wrap_angle`` and ``cartpole_substep``
# (horde.sim.classic), the reward terms, ``_failed``, ``_draw_state`` and the observation terms (``observation_terms``:
# their columns, in their order, and their fallback for a non-finite state) of horde.envs.cartpole, and ``weighted_reward``, ``close_step`` and
# ``end_episode`` (horde.envs.episode), calling Warp's own ``wp::clamp``, ``wp::floor``, ``wp::abs`` and ``wp::randf``:
# tests/unit/test_sim.py pins this path to the one-env-per-thread kernels (which CUDA runs) bit for bit, NaN actions,
# infinite states, random streams and statistics included, so a change to that maths not mirrored here fails there.
# The block kernel is launched, and so compiled, on CPU devices only (``block_kernels``, a module of its own).
_CPP_PRELUDE = r"""
#if defined(__clang__) && !defined(__CUDA_ARCH__)
#define HORDE_SIMD _Pragma("clang loop vectorize(assume_safety) vectorize_width(16) interleave_count(4)")
#else
#define HORDE_SIMD
#endif
const int lanes = @LANES@, n_state = @STATE_DIM@, n_obs = @OBS_DIM@;
// sin, cos of x: horde.sim.classic.sincos
auto sin_cos = [](float x, float& sin_x, float& cos_x) {
    const float k = wp::floor(x * 0.636619772367581f + 0.5f);
    float r = x - k * 1.5703125f;
    r = r - k * 4.837512969970703125e-4f;
    r = r - k * 7.54978995489188216e-8f;
    const float r2 = r * r;
    const float s = r + r * r2 * (-1.6666654611e-1f + r2 * (8.3321608736e-3f + r2 * (-1.9515295891e-4f)));
    const float c = 1.0f - 0.5f * r2
        + r2 * r2 * (4.166664568298827e-2f + r2 * (-1.388731625493765e-3f + r2 * 2.443315711809948e-5f));
    const int q = ((int)k) & 3;
    sin_x = q == 0 ? s : (q == 1 ? c : (q == 2 ? -s : -c));
    cos_x = q == 0 ? c : (q == 1 ? -s : (q == 2 ? -c : s));
};
"""
"""C++ shared by the native snippets: the SIMD loop pragma, sizes, ``sincos``."""

_STEP_SNIPPET = r"""
const int decimation = @DECIMATION@, n_terms = @NUM_TERMS@;
const float flt_max = 3.4028234663852886e38f;
// one physics substep in place: horde.sim.classic.cartpole_substep
auto substep = [&p, &sin_cos](float& x, float& x_dot, float& theta, float& theta_dot, float action) {
    const float force = wp::clamp(action, -1.0f, 1.0f) * p.max_force;
    const float inv_mass = 1.0f / (p.cart_mass + p.pole_mass);
    const float pml = p.pole_mass * p.pole_half_length;
    float s, c;
    sin_cos(theta, s, c);
    const float temp = (force + pml * theta_dot * theta_dot * s) * inv_mass;
    const float theta_acc = (p.gravity * s - c * temp)
        / (p.pole_half_length * (4.0f / 3.0f - p.pole_mass * c * c * inv_mass));
    const float x_acc = temp - pml * theta_acc * c * inv_mass;
    x_dot = x_dot + p.dt * x_acc;
    theta_dot = theta_dot + p.dt * theta_acc;
    x = x + p.dt * x_dot;
    theta = theta + p.dt * theta_dot;
};
float sc[n_terms];
for (int k = 0; k < n_terms; ++k) sc[k] = ep.scales.data[k];
const int term_row = ep.terms.strides[0] / (int)sizeof(float), sum_row = ep.sums.strides[0] / (int)sizeof(float);
const float* __restrict__ act = actions.data + first;            // [num_envs, 1]
float* __restrict__ st = state.data + n_state * first;            // [num_envs, 4]
float* __restrict__ tm = ep.terms.data + first;                   // [num_terms, num_envs]
float* __restrict__ sums = ep.sums.data + first;                  // [num_terms, num_envs]
float* __restrict__ ob = obs.data + n_obs * first;                // [num_envs, 5]
float* __restrict__ rew = ep.reward.data + first;
int* __restrict__ len = ep.length.data + first;
float* __restrict__ ret = ep.returns.data + first;
bool* __restrict__ term = ep.terminated.data + first;
bool* __restrict__ trunc = ep.truncated.data + first;
bool* __restrict__ done = ep.dones.data + first;
wp::uint64 mask = 0;
HORDE_SIMD
for (int j = 0; j < lanes; ++j) {
    // physics: horde.sim.classic.cartpole_advance (a constant substep count, unrolled so the lane loop vectorizes)
    float x = st[n_state * j], x_dot = st[n_state * j + 1];
    float theta = st[n_state * j + 2], theta_dot = st[n_state * j + 3];
    for (int d = 0; d < decimation; ++d) substep(x, x_dot, theta, theta_dot, act[j]);
    st[n_state * j] = x;
    st[n_state * j + 1] = x_dot;
    st[n_state * j + 2] = theta;
    st[n_state * j + 3] = theta_dot;
    // reward terms (CARTPOLE_TERMS), failure, time-out, observations: horde.envs.cartpole.post_step_kernel,
    // horde.envs.episode.close_step
    const float a = wp::clamp(act[j], -1.0f, 1.0f);
    const bool finite = wp::abs(x) <= flt_max && wp::abs(x_dot) <= flt_max && wp::abs(theta) <= flt_max
        && wp::abs(theta_dot) <= flt_max;
    const float wrapped = theta - 6.283185307179586f * wp::floor((theta + 3.141592653589793f) * 0.15915494309189535f);
    const float angle = finite ? wrapped : 0.0f;
    x = finite ? x : 0.0f;
    x_dot = finite ? x_dot : 0.0f;
    theta_dot = finite ? theta_dot : 0.0f;
    // the configured termination terms (cart_out, pole_fallen): horde.envs.cartpole.CARTPOLE_TERMINATIONS
    const bool failed = (!finite) || (@CART_ON@ && wp::abs(x) > t.cart_limit)
        || (@POLE_ON@ && t.pole_limit > 0.0f && wp::abs(angle) > t.pole_limit);
    const float fail = failed ? 1.0f : 0.0f;
    float sin_a, cos_a;
    sin_cos(angle, sin_a, cos_a);
    const float tv[n_terms] = {1.0f - fail, 0.5f * (cos_a + 1.0f), angle * angle, x * x, x_dot * x_dot,
                               theta_dot * theta_dot, a * a, fail};
    float r = 0.0f;
    for (int k = 0; k < n_terms; ++k) {
        const float v = sc[k] * tv[k];
        tm[term_row * k + j] = tv[k];
        sums[sum_row * k + j] = sums[sum_row * k + j] + v;
        r += v;
    }
    ob[n_obs * j] = x;
    ob[n_obs * j + 1] = x_dot;
    ob[n_obs * j + 2] = cos_a;
    ob[n_obs * j + 3] = sin_a;
    ob[n_obs * j + 4] = theta_dot;
    const int length = len[j] + 1;
    const bool time_out = (length >= t.max_episode_length) && (!failed);
    rew[j] = r;
    term[j] = failed;
    trunc[j] = time_out;
    done[j] = failed || time_out;
    len[j] = length;
    ret[j] = ret[j] + r;
    mask |= (wp::uint64)(failed || time_out) << j;
}
// finished envs, in env order: horde.envs.episode.end_episode, then _draw_state and the observation terms
double* __restrict__ sts = ep.stats.data;
wp::uint32* __restrict__ seed = rng.data + first;
float* __restrict__ fin = final_obs.data + n_obs * first;         // [num_envs, 5]
for (wp::uint64 left = mask; left != 0; left &= left - 1) {
#if defined(__CUDA_ARCH__)  // never launched on CUDA, but every loaded module must compile there (compile-cuda)
    const int j = __ffsll((long long)left) - 1;
#else
    const int j = __builtin_ctzll(left);
#endif
    const float rt = ret[j];
    const int length = len[j];
    sts[@S_EPISODES@] += 1.0;
    sts[@S_RETURN@] += (double)rt;
    sts[@S_RETURN_SQ@] += (double)(rt * rt);
    sts[@S_LENGTH@] += (double)length;
    sts[@S_LENGTH_SQ@] += (double)length * (double)length;
    sts[term[j] ? @S_TERMINATIONS@ : @S_TIME_OUTS@] += 1.0;
    for (int k = 0; k < n_terms; ++k) {
        sts[@S_TERMS@ + k] += (double)sums[sum_row * k + j];
        sums[sum_row * k + j] = 0.0f;
    }
    len[j] = 0;
    ret[j] = 0.0f;
    {   // which termination terms fired (termination/<name>): their functions on the post-step state, still in st
        const float cx = st[n_state * j], cx_dot = st[n_state * j + 1];
        const float ct = st[n_state * j + 2], ct_dot = st[n_state * j + 3];
        const bool cfin = wp::abs(cx) <= flt_max && wp::abs(cx_dot) <= flt_max && wp::abs(ct) <= flt_max
            && wp::abs(ct_dot) <= flt_max;
        const float cw = ct - 6.283185307179586f * wp::floor((ct + 3.141592653589793f) * 0.15915494309189535f);
        (void)cfin;
        (void)cw;
@COUNT@    }
    for (int k = 0; k < n_obs; ++k) fin[n_obs * j + k] = ob[n_obs * j + k];
    wp::uint32 s = seed[j];
    const float x = wp::randf(s, -t.init_cart_pos_range, t.init_cart_pos_range);
    const float x_dot = wp::randf(s, -t.init_vel_range, t.init_vel_range);
    const float theta = t.init_pole_angle + wp::randf(s, -t.init_pole_angle_range, t.init_pole_angle_range);
    const float theta_dot = wp::randf(s, -t.init_vel_range, t.init_vel_range);
    seed[j] = s;
    float sin_t, cos_t;
    sin_cos(theta, sin_t, cos_t);
    st[n_state * j] = x;
    st[n_state * j + 1] = x_dot;
    st[n_state * j + 2] = theta;
    st[n_state * j + 3] = theta_dot;
    ob[n_obs * j] = x;
    ob[n_obs * j + 1] = x_dot;
    ob[n_obs * j + 2] = cos_t;
    ob[n_obs * j + 3] = sin_t;
    ob[n_obs * j + 4] = theta_dot;
}
"""
"""Envs [first, first + LANES): physics, reward terms, flags, observations, then the finished envs' resets."""


@functools.cache
def cartpole_block_kernel(decimation: int, cart_k: int = 0, pole_k: int = 1):
    """The CPU block-step kernel for ``decimation`` substeps per control step (a compile-time constant, so that the
    substeps unroll inside the vectorized lane loop; one module per value, compiled once and cached) and the
    built-in termination terms at positions ``cart_k`` (``cart_out``) and ``pole_k`` (``pole_fallen``) of the
    configured list (-1: not configured), counted into ``causes``."""
    count = "".join(f"        if (cfin && {cond}) causes.data[{k}] += 1.0;\n"
                    for k, cond in ((cart_k, "wp::abs(cx) > t.cart_limit"),
                                    (pole_k, "t.pole_limit > 0.0f && wp::abs(cw) > t.pole_limit")) if k >= 0)
    values = {"CART_ON": "true" if cart_k >= 0 else "false", "POLE_ON": "true" if pole_k >= 0 else "false",
              "COUNT": count,
              "LANES": LANES, "DECIMATION": decimation, "STATE_DIM": len(CARTPOLE_STATE), "OBS_DIM": OBS_DIM,
              "NUM_TERMS": NUM_TERMS, "S_EPISODES": STATS_EPISODES, "S_RETURN": STATS_RETURN,
              "S_RETURN_SQ": STATS_RETURN_SQ, "S_LENGTH": STATS_LENGTH, "S_LENGTH_SQ": STATS_LENGTH_SQ,
              "S_TERMINATIONS": STATS_TERMINATIONS, "S_TIME_OUTS": STATS_TIME_OUTS, "S_TERMS": STATS_TERMS}

    def native(snippet: str) -> str:
        out = _CPP_PRELUDE + snippet + "#undef HORDE_SIMD\n"
        for key, value in values.items():
            out = out.replace(f"@{key}@", str(value))
        return out

    @wp.func_native(native(_STEP_SNIPPET))
    def step_lanes(
        first: int,
        p: CartpoleParams,
        t: CartpoleTask,
        actions: wp.array2d(dtype=float),
        state: wp.array2d(dtype=float),
        rng: wp.array(dtype=wp.uint32),
        ep: Episodes,
        causes: wp.array(dtype=wp.float64),
        obs: wp.array2d(dtype=float),
        final_obs: wp.array2d(dtype=float),
    ):
        """One block of ``LANES`` envs from ``first``: the whole control step (``_STEP_SNIPPET``)."""
        ...

    @wp.kernel(enable_backward=False, module="unique")
    def cartpole_step_blocks(
        p: CartpoleParams,
        t: CartpoleTask,
        actions: wp.array2d(dtype=float),
        state: wp.array2d(dtype=float),
        rng: wp.array(dtype=wp.uint32),
        ep: Episodes,
        causes: wp.array(dtype=wp.float64),
        first_env: int,
        obs: wp.array2d(dtype=float),
        final_obs: wp.array2d(dtype=float),
    ):
        """``cartpole_advance`` then ``cartpole_post_step`` for the ``LANES`` envs of block b (from ``first_env``) on
        the full buffers. Finished envs are ended and reset in env order, so that the statistics are summed in the
        order the one-env-per-thread kernels sum them on a CPU."""
        step_lanes(first_env + wp.tid() * LANES, p, t, actions, state, rng, ep, causes, obs, final_obs)

    return cartpole_step_blocks
