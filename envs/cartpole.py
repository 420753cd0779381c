"""Cart-pole: ``cartpole`` (balance from a random near-upright state) and ``cartpole-swingup`` (from hanging).

Observations: cart position [m], cart velocity [m/s], cos and sin of the pole angle from upright, pole rate
[rad/s]. Action: cart force in [-1, 1] x ``max_force`` [N]. 50 Hz control (2 x 10 ms substeps), 500 steps.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import torch
import warp as wp

from horde.envs.blocks import BlockStepEnv
from horde.envs.core import TaskConfig
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
    clear_episode,
    close_step,
    weighted_reward,
)
from horde.envs import render
from horde.envs.observations import raw_term
from horde.envs.registry import TaskSpec, register_task
from horde.envs.terms import TermSet, term_values_torch, unit_clip
from horde.sim.classic import (
    CARTPOLE_STATE,
    LANES,
    CartpoleParams,
    cartpole_advance,
    is_finite,
    sincos,
    wrap_angle,
)

TERMS = ("alive", "upright", "pole_angle", "cart_pos", "cart_vel", "pole_vel", "action", "terminated")
NUM_TERMS = len(TERMS)
OBS_DIM = 5

Obs = wp.types.vector(length=OBS_DIM, dtype=float)
"""The observation of one env."""


def _balance_scales() -> dict[str, float]:
    return {"alive": 1.0, "upright": 0.0, "pole_angle": -1.0, "cart_pos": -0.05, "cart_vel": -0.01,
            "pole_vel": -0.005, "action": -0.001, "terminated": -2.0}


@dataclass(kw_only=True)
class CartpoleConfig(TaskConfig):
    """Cart-pole constants, limits, initial-state ranges and reward scales."""

    gravity: float = 9.81
    """Gravity [m/s^2]."""
    cart_mass: float = 1.0
    """Cart mass [kg]."""
    pole_mass: float = 0.1
    """Pole mass [kg]."""
    pole_half_length: float = 0.5
    """Half the pole length [m]."""
    max_force: float = 10.0
    """Force at action 1 [N]."""
    cart_limit: float = 2.4
    """The episode fails when |cart position| exceeds this [m]."""
    pole_limit: float = 0.4
    """The episode fails when |pole angle| exceeds this [rad]; 0 disables the check (swing-up)."""
    init_pole_angle: float = 0.0
    """Centre of the initial pole angle [rad]: 0 upright, pi hanging."""
    init_pole_angle_range: float = 0.1
    """Initial pole angle is centre +- this [rad]."""
    init_cart_pos_range: float = 0.5
    """Initial cart position is +- this [m]."""
    init_vel_range: float = 0.1
    """Initial cart [m/s] and pole [rad/s] velocities are +- this."""
    reward_scales: dict[str, float] = field(default_factory=_balance_scales)


@wp.struct
class CartpoleTask:
    """Per-task constants read by the post-step kernel."""

    cart_limit: float
    pole_limit: float
    init_pole_angle: float
    init_pole_angle_range: float
    init_cart_pos_range: float
    init_vel_range: float
    max_episode_length: int


@wp.func
def _obs(x: float, x_dot: float, theta: float, theta_dot: float) -> Obs:
    s, c = sincos(theta)
    return Obs(x, x_dot, c, s, theta_dot)


@wp.func
def _write_obs(out: wp.array2d(dtype=float), i: int, x: float, x_dot: float, theta: float, theta_dot: float):
    o = _obs(x, x_dot, theta, theta_dot)
    for k in range(OBS_DIM):
        out[i, k] = o[k]


@wp.func
def _draw_state(t: CartpoleTask, rng: wp.array(dtype=wp.uint32), i: int):
    """A state from the reset distribution, drawn from env ``i``'s random stream."""
    s = rng[i]
    x = wp.randf(s, -t.init_cart_pos_range, t.init_cart_pos_range)
    x_dot = wp.randf(s, -t.init_vel_range, t.init_vel_range)
    theta = t.init_pole_angle + wp.randf(s, -t.init_pole_angle_range, t.init_pole_angle_range)
    theta_dot = wp.randf(s, -t.init_vel_range, t.init_vel_range)
    rng[i] = s
    return x, x_dot, theta, theta_dot


@wp.func
def _sample_state(t: CartpoleTask, rng: wp.array(dtype=wp.uint32), state: wp.array2d(dtype=float), i: int):
    x, x_dot, theta, theta_dot = _draw_state(t, rng, i)
    state[i, 0] = x
    state[i, 1] = x_dot
    state[i, 2] = theta
    state[i, 3] = theta_dot


@wp.struct
class Cart:
    """What a cart-pole reward term reads of env ``i`` (arrays ``[num_envs, ...]``)."""

    state: wp.array2d(dtype=float)
    """Cart position [m], cart velocity [m/s], pole angle from upright [rad], pole rate [rad/s] after the step."""
    actions: wp.array2d(dtype=float)
    """Actions of this step (unclipped)."""
    cart_limit: float
    """The episode fails past this cart position [m]."""
    pole_limit: float
    """The episode fails past this pole angle [rad]; 0: never (swing-up)."""


CARTPOLE_TERMS = TermSet("cartpole", Cart)
"""Reward terms of the cart-pole: Warp functions ``(x: Cart, i: int) -> float``; the env's step kernel and the
differentiable model (SHAC) both call them, and the CPU block step's C++ mirrors them (pinned bit for bit by
tests/unit/test_sim.py). A non-finite state fails and is scored as zeros, so that statistics stay finite."""


@wp.func
def _finite(x: Cart, i: int) -> bool:
    return is_finite(x.state[i, 0]) and is_finite(x.state[i, 1]) and is_finite(x.state[i, 2]) and is_finite(
        x.state[i, 3])


@wp.func
def _var(x: Cart, i: int, k: int) -> float:
    """State variable ``k`` (the pole angle wrapped to [-pi, pi)), 0 for a non-finite state."""
    v = x.state[i, k]
    if k == 2:
        v = wrap_angle(v)
    return wp.where(_finite(x, i), v, 0.0)


@wp.func
def _squared(x: Cart, i: int, k: int) -> float:
    v = _var(x, i, k)
    return v * v


@wp.func
def _failed(x: Cart, i: int) -> bool:
    return (not _finite(x, i)) or wp.abs(_var(x, i, 0)) > x.cart_limit or (
        x.pole_limit > 0.0 and wp.abs(_var(x, i, 2)) > x.pole_limit)


@CARTPOLE_TERMS.term
def alive(x: Cart, i: int) -> float:
    """1 while the episode goes on, 0 on the failing step."""
    return 1.0 - wp.where(_failed(x, i), 1.0, 0.0)


@CARTPOLE_TERMS.term
def upright(x: Cart, i: int) -> float:
    """(cos(pole angle) + 1) / 2: 1 upright, 0 hanging."""
    sin_a, cos_a = sincos(_var(x, i, 2))
    return 0.5 * (cos_a + 1.0)


@CARTPOLE_TERMS.term
def pole_angle(x: Cart, i: int) -> float:
    """Pole angle from upright squared [rad^2]."""
    return _squared(x, i, 2)


@CARTPOLE_TERMS.term
def cart_pos(x: Cart, i: int) -> float:
    """Cart position squared [m^2]."""
    return _squared(x, i, 0)


@CARTPOLE_TERMS.term
def cart_vel(x: Cart, i: int) -> float:
    """Cart velocity squared [m^2/s^2]."""
    return _squared(x, i, 1)


@CARTPOLE_TERMS.term
def pole_vel(x: Cart, i: int) -> float:
    """Pole rate squared [rad^2/s^2]."""
    return _squared(x, i, 3)


@CARTPOLE_TERMS.term
def action(x: Cart, i: int) -> float:
    """Clipped action squared (force in units of ``max_force``)."""
    a = unit_clip(x.actions[i, 0])
    return a * a


@CARTPOLE_TERMS.term
def terminated(x: Cart, i: int) -> float:
    """1 on the failing step."""
    return wp.where(_failed(x, i), 1.0, 0.0)


@functools.lru_cache(maxsize=None)
def post_step_kernel(terms: tuple[wp.Function, ...]) -> wp.Kernel:
    """The one-env-per-thread step kernel (CUDA, and the envs after the last CPU block) for these reward terms,
    fused with ``wp.static``."""

    @wp.kernel(enable_backward=False, module="unique")
    def cartpole_post_step(
        t: CartpoleTask,
        actions: wp.array2d(dtype=float),
        state: wp.array2d(dtype=float),
        rng: wp.array(dtype=wp.uint32),
        ep: Episodes,
        obs: wp.array2d(dtype=float),
        final_obs: wp.array2d(dtype=float),
    ):
        """Reward terms, failure, time-out, statistics, auto-reset and observations for env i."""
        i = wp.tid()
        x = Cart()
        x.state = state
        x.actions = actions
        x.cart_limit = t.cart_limit
        x.pole_limit = t.pole_limit
        for k in range(wp.static(len(terms))):
            ep.terms[k, i] = wp.static(terms[k])(x, i)
        failed = _failed(x, i)
        done = close_step(ep, i, weighted_reward(ep, i), failed, t.max_episode_length)
        # the post-step state as scored: the pole angle wrapped, zeros for a non-finite state
        v0, v1, v2, v3 = _var(x, i, 0), _var(x, i, 1), _var(x, i, 2), _var(x, i, 3)
        if done:
            _write_obs(final_obs, i, v0, v1, v2, v3)
            _sample_state(t, rng, state, i)
            _write_obs(obs, i, state[i, 0], state[i, 1], state[i, 2], state[i, 3])
        else:
            _write_obs(obs, i, v0, v1, v2, v3)

    return cartpole_post_step


cartpole_post_step = post_step_kernel(CARTPOLE_TERMS.resolve(TERMS))
"""The step kernel of :data:`TERMS` (every cart-pole task scores all of them; ``reward_scales`` weights them)."""

# --- CPU fast path: LANES envs per Warp thread in native code that clang vectorizes --------------------------------
# Warp runs a CPU kernel's threads one after another in one OS thread, so a fast CPU step must fill the SIMD lanes
# within a thread. Warp's kernel language can do that only through fixed-size vector and matrix *values*, copied in and
# out of every block, and clang does not vectorize loops over Warp arrays, whose strides are run-time values: measured
# at 4096 envs, the best Warp-only block kernel took 34-38 us a step, this native one 17 us. Each Warp thread calls one
# native function for its block: a vectorized loop over the block's envs (physics substeps, reward terms, failure,
# time-out, observations) reading and writing the env buffers in place through raw pointers, then the few finished envs
# in env order (statistics, final observation, a fresh state from the env's random stream). Reward terms and episode
# sums are term-major ([num_terms, num_envs], see horde.envs.core), so those stores are contiguous across lanes.
# The C++ mirrors, statement for statement, ``sincos``, ``is_finite``, ``wrap_angle`` and ``cartpole_substep``
# (horde.sim.classic), the reward terms, ``_failed``, ``_draw_state`` and ``_obs`` above, and ``weighted_reward``, ``close_step`` and
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
    const bool failed = (!finite) || wp::abs(x) > t.cart_limit
        || (t.pole_limit > 0.0f && wp::abs(angle) > t.pole_limit);
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
// finished envs, in env order: horde.envs.episode.end_episode, then _draw_state and _obs above
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
def cartpole_block_kernel(decimation: int):
    """The CPU block-step kernel for ``decimation`` substeps per control step (a compile-time constant, so that the
    substeps unroll inside the vectorized lane loop; one module per value, compiled once and cached)."""
    values = {"LANES": LANES, "DECIMATION": decimation, "STATE_DIM": len(CARTPOLE_STATE), "OBS_DIM": OBS_DIM,
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
        first_env: int,
        obs: wp.array2d(dtype=float),
        final_obs: wp.array2d(dtype=float),
    ):
        """``cartpole_advance`` then ``cartpole_post_step`` for the ``LANES`` envs of block b (from ``first_env``) on
        the full buffers. Finished envs are ended and reset in env order, so that the statistics are summed in the
        order the one-env-per-thread kernels sum them on a CPU."""
        step_lanes(first_env + wp.tid() * LANES, p, t, actions, state, rng, ep, obs, final_obs)

    return cartpole_step_blocks


@wp.kernel(enable_backward=False)
def cartpole_reset(
    t: CartpoleTask,
    mask: wp.array(dtype=wp.bool),
    state: wp.array2d(dtype=float),
    rng: wp.array(dtype=wp.uint32),
    ep: Episodes,
    obs: wp.array2d(dtype=float),
):
    """Explicit reset of the envs where ``mask`` is True."""
    i = wp.tid()
    if mask[i]:
        _sample_state(t, rng, state, i)
        clear_episode(ep, i)
        _write_obs(obs, i, state[i, 0], state[i, 1], state[i, 2], state[i, 3])


class CartpoleEnv(BlockStepEnv):
    """Batched cart-pole on hand-written Warp kernels."""

    obs_names = ("cart_pos", "cart_vel", "pole_cos", "pole_sin", "pole_vel")
    action_names = ("cart_force",)
    state_names = CARTPOLE_STATE
    term_names = TERMS
    action_type = "force"
    action_unit = "N"

    def observation_terms(self):
        """The state variables as they are, the pole angle as its cos and sin."""
        return (raw_term("cart_pos", "m"), raw_term("cart_vel", "m/s"), raw_term("pole_cos", "1"),
                raw_term("pole_sin", "1"), raw_term("pole_vel", "rad/s"))

    def observation_sources(self) -> dict[str, torch.Tensor]:
        s = self.state
        return {"cart_pos": s[:, 0:1], "cart_vel": s[:, 1:2], "pole_cos": torch.cos(s[:, 2:3]),
                "pole_sin": torch.sin(s[:, 2:3]), "pole_vel": s[:, 3:4]}

    def __init__(self, cfg: CartpoleConfig, *, num_envs: int, device: str = "cpu", seed: int = 0) -> None:
        self.physics = physics_params(cfg)
        self._task = CartpoleTask()
        self._task.cart_limit = cfg.cart_limit
        self._task.pole_limit = cfg.pole_limit
        self._task.init_pole_angle = cfg.init_pole_angle
        self._task.init_pole_angle_range = cfg.init_pole_angle_range
        self._task.init_cart_pos_range = cfg.init_cart_pos_range
        self._task.init_vel_range = cfg.init_vel_range
        self._task.max_episode_length = cfg.episode_length
        self.block_kernels = (cartpole_block_kernel(cfg.decimation),)
        super().__init__(cfg, num_envs=num_envs, device=device, seed=seed)

    step_kernels = (cartpole_advance, cartpole_post_step)

    def action_scale(self) -> list[float]:
        return [self.cfg.max_force]

    def _launch_step_range(self, start: int, stop: int, stats: wp.array) -> None:
        d, mid = self.dev.warp, self._block_end(start, stop)
        if mid > start:
            wp.launch(self.block_kernels[0], (mid - start) // LANES,
                      inputs=[self.physics, self._task, self._actions, self._state, self._rng, self.episodes(0, stats),
                              start],
                      outputs=[self._obs, self._final_obs], device=d)
        if mid < stop:  # the envs after the last full block (stop is num_envs here)
            wp.launch(cartpole_advance, stop - mid,
                      inputs=[self.physics, self.cfg.decimation, self._env_slice(self._actions, mid)],
                      outputs=[self._env_slice(self._state, mid)], device=d)
            self._launch_post_step(cartpole_post_step, self._task, start=mid, stats=stats)

    def _launch_reset(self) -> None:
        self._launch_masked_reset(cartpole_reset, self._task)


def physics_params(cfg: CartpoleConfig) -> CartpoleParams:
    """The Warp struct of physical constants for ``cfg``."""
    p = CartpoleParams()
    p.gravity = cfg.gravity
    p.cart_mass = cfg.cart_mass
    p.pole_mass = cfg.pole_mass
    p.pole_half_length = cfg.pole_half_length
    p.max_force = cfg.max_force
    p.dt = cfg.sim_dt
    return p


# --- differentiable model, for horde.sim.diff and SHAC: the reward terms above, the rest in torch ------------------
def obs_from_state(state: torch.Tensor) -> torch.Tensor:
    """Observations [N, 5] (cart pos [m], cart vel [m/s], pole cos, pole sin, pole rate [rad/s]) of states [N, 4]."""
    theta = state[:, 2]
    return torch.stack((state[:, 0], state[:, 1], torch.cos(theta), torch.sin(theta), state[:, 3]), dim=-1)


def failed_from_state(state: torch.Tensor, cfg: CartpoleConfig) -> torch.Tensor:
    """Failure, bool [N], of post-step states [N, 4]: non-finite, cart past its limit, or pole past its limit."""
    angle = torch.remainder(state[:, 2] + torch.pi, 2.0 * torch.pi) - torch.pi
    failed = ~torch.isfinite(state).all(dim=-1) | (state[:, 0].abs() > cfg.cart_limit)
    if cfg.pole_limit > 0.0:
        failed = failed | (angle.abs() > cfg.pole_limit)
    return failed


def reward_terms_from_state(state: torch.Tensor, actions: torch.Tensor, cfg: CartpoleConfig) -> dict[str, torch.Tensor]:
    """Unscaled reward terms, each [N], of post-step states [N, 4] and actions [N, 1], in ``reward_scales``' order:
    the env's own Warp terms (:data:`CARTPOLE_TERMS`) on torch tensors, differentiable
    (:func:`horde.envs.terms.term_values_torch`)."""
    names = tuple(cfg.reward_scales)
    values = term_values_torch(Cart, CARTPOLE_TERMS.resolve(names), {"state": (state, float), "actions": (actions, float)},
                               {"cart_limit": cfg.cart_limit, "pole_limit": cfg.pole_limit})
    return dict(zip(names, values))


def reward_from_state(state: torch.Tensor, actions: torch.Tensor, cfg: CartpoleConfig) -> torch.Tensor:
    """Reward [N] = sum of ``cfg.reward_scales`` x terms, as the env computes it."""
    terms = reward_terms_from_state(state, actions, cfg)
    return sum(cfg.reward_scales[k] * v for k, v in terms.items())


def sample_states(cfg: CartpoleConfig, num_envs: int, generator: torch.Generator,
                  device: torch.device | str = "cpu") -> torch.Tensor:
    """Initial states [num_envs, 4] from the env's reset distribution (drawn with torch, not Warp's streams)."""
    u = torch.rand(num_envs, 4, generator=generator, device=device) * 2.0 - 1.0
    half = torch.tensor([cfg.init_cart_pos_range, cfg.init_vel_range, cfg.init_pole_angle_range, cfg.init_vel_range],
                        device=device)
    return u * half + torch.tensor([0.0, 0.0, cfg.init_pole_angle, 0.0], device=device)


def diff_task(cfg: CartpoleConfig, device: str = "cpu"):
    """The differentiable model of this task (a :class:`horde.sim.diff.DiffTask`)."""
    from horde.sim.diff import DiffRollout, DiffTask

    rollout = DiffRollout(physics_params(cfg), decimation=cfg.decimation, device=device)
    return DiffTask(
        rollout=rollout, obs=obs_from_state, reward_terms=lambda s, a: reward_terms_from_state(s, a, cfg),
        reward_scales=dict(cfg.reward_scales), failed=lambda s: failed_from_state(s, cfg),
        sample_state=lambda n, g: sample_states(cfg, n, g, rollout.device), episode_length=cfg.episode_length,
    )


register_task("cartpole", TaskSpec(
    env_cls=CartpoleEnv,
    config=CartpoleConfig(),
    description="balance a pole on a cart from a random near-upright state; fails past 2.4 m or 0.4 rad",
    renderer=render.draw_cartpole,
))


register_task("cartpole-swingup", TaskSpec(
    env_cls=CartpoleEnv,
    config=CartpoleConfig(
        pole_limit=0.0, init_pole_angle=3.14159265, init_pole_angle_range=0.2, init_cart_pos_range=0.2,
        max_force=20.0,
        reward_scales={"alive": 0.0, "upright": 1.0, "pole_angle": 0.0, "cart_pos": -0.05, "cart_vel": -0.01,
                       "pole_vel": -0.002, "action": -0.01, "terminated": -10.0},
    ),
    description="swing the pole up from hanging and balance it; fails only past the cart limit",
    diff_task=diff_task,
    renderer=render.draw_cartpole,
))
