"""Cart-pole: ``cartpole`` (balance from a random near-upright state) and ``cartpole-swingup`` (from hanging).

Observations: cart position [m], cart velocity [m/s], cos and sin of the pole angle from upright, pole rate
[rad/s]. Action: cart force in [-1, 1] x ``max_force`` [N]. 50 Hz control (2 x 10 ms substeps), 500 steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import warp as wp

from horde.envs.core import TaskConfig, WarpTaskEnv
from horde.envs.episode import (
    STATS_TERMS,
    FlagLanes,
    IntLanes,
    clear_episode,
    close_step,
    record_episode,
    weighted_reward,
)
from horde.envs.registry import TaskSpec, register_task
from horde.sim.classic import (
    CARTPOLE_STATE,
    LANES,
    CartpoleParams,
    CartpoleStateBlock,
    Lanes,
    cartpole_advance,
    cartpole_substep,
    is_finite,
    sincos,
    wrap_angle,
)

TERMS = ("alive", "upright", "pole_angle", "cart_pos", "cart_vel", "pole_vel", "action", "terminated")
NUM_TERMS = len(TERMS)
OBS_DIM = 5

Terms = wp.types.vector(length=NUM_TERMS, dtype=float)
"""The reward terms of one env, in ``TERMS`` order."""
Obs = wp.types.vector(length=OBS_DIM, dtype=float)
"""The observation of one env."""
TermBlock = wp.types.matrix(shape=(LANES, NUM_TERMS), dtype=float)
"""Reward terms (or their episode sums) of a CPU block, rows as in the [num_envs, 8] arrays."""
ObsBlock = wp.types.matrix(shape=(LANES, OBS_DIM), dtype=float)
"""Observations of a CPU block, rows as in the [num_envs, 5] array."""


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


@wp.func
def _evaluate(t: CartpoleTask, x: float, x_dot: float, theta: float, theta_dot: float, action: float):
    """Failure, the unscaled reward terms and the observation of one post-step state (branch-free).

    A non-finite state fails and is reported as zeros, so that statistics stay finite; the env is reset after.
    """
    a = wp.clamp(action, -1.0, 1.0)
    finite = is_finite(x) and is_finite(x_dot) and is_finite(theta) and is_finite(theta_dot)
    angle = wp.where(finite, wrap_angle(theta), 0.0)
    x = wp.where(finite, x, 0.0)
    x_dot = wp.where(finite, x_dot, 0.0)
    theta_dot = wp.where(finite, theta_dot, 0.0)
    failed = (not finite) or wp.abs(x) > t.cart_limit or (t.pole_limit > 0.0 and wp.abs(angle) > t.pole_limit)
    fail = wp.where(failed, 1.0, 0.0)
    sin_a, cos_a = sincos(angle)
    terms = Terms(1.0 - fail, 0.5 * (cos_a + 1.0), angle * angle, x * x, x_dot * x_dot, theta_dot * theta_dot,
                  a * a, fail)
    return failed, terms, Obs(x, x_dot, cos_a, sin_a, theta_dot)


@wp.kernel(enable_backward=False)
def cartpole_post_step(
    t: CartpoleTask,
    scales: wp.array(dtype=float),
    actions: wp.array2d(dtype=float),
    state: wp.array2d(dtype=float),
    rng: wp.array(dtype=wp.uint32),
    episode_length: wp.array(dtype=wp.int32),
    episode_return: wp.array(dtype=float),
    episode_sums: wp.array2d(dtype=float),
    stats: wp.array(dtype=wp.float64),
    obs: wp.array2d(dtype=float),
    final_obs: wp.array2d(dtype=float),
    reward: wp.array(dtype=float),
    terms: wp.array2d(dtype=float),
    terminated: wp.array(dtype=wp.bool),
    truncated: wp.array(dtype=wp.bool),
    dones: wp.array(dtype=wp.bool),
):
    """Reward terms, failure, time-out, statistics, auto-reset and observations for env i."""
    i = wp.tid()
    failed, tv, ov = _evaluate(t, state[i, 0], state[i, 1], state[i, 2], state[i, 3], actions[i, 0])
    for k in range(NUM_TERMS):
        terms[i, k] = tv[k]
    r = weighted_reward(i, scales, terms, episode_sums)
    done = close_step(i, r, failed, t.max_episode_length, episode_length, episode_return, episode_sums,
                      reward, terminated, truncated, dones, stats)
    if done:
        for k in range(OBS_DIM):
            final_obs[i, k] = ov[k]
        _sample_state(t, rng, state, i)
        _write_obs(obs, i, state[i, 0], state[i, 1], state[i, 2], state[i, 3])
    else:
        for k in range(OBS_DIM):
            obs[i, k] = ov[k]


@wp.kernel(enable_backward=False)
def cartpole_step_blocks(
    p: CartpoleParams,
    decimation: int,
    t: CartpoleTask,
    scales: wp.array(dtype=float),
    actions: wp.array(dtype=Lanes),
    state: wp.array(dtype=CartpoleStateBlock),
    rng: wp.array(dtype=wp.uint32),
    episode_length: wp.array(dtype=IntLanes),
    episode_return: wp.array(dtype=Lanes),
    episode_sums: wp.array(dtype=TermBlock),
    stats: wp.array(dtype=wp.float64),
    obs: wp.array(dtype=ObsBlock),
    final_obs: wp.array2d(dtype=float),
    reward: wp.array(dtype=Lanes),
    terms: wp.array(dtype=TermBlock),
    terminated: wp.array(dtype=FlagLanes),
    truncated: wp.array(dtype=FlagLanes),
    dones: wp.array(dtype=FlagLanes),
):
    """CPU block path: ``cartpole_advance`` then ``cartpole_post_step`` for the ``LANES`` envs of block b.

    Block arrays are views of the [num_envs, ...] buffers; ``rng`` and ``final_obs`` are per env (touched only on
    episode ends). The vectorized loop is branch-free; finished episodes are handled after it, in env order.
    """
    b = wp.tid()
    a = actions[b]
    s = state[b]
    for _ in range(decimation):  # cartpole_advance on the block (inlined here: a Warp function would copy it)
        for j in range(LANES):
            x, x_dot, theta, theta_dot = cartpole_substep(p, s[j, 0], s[j, 1], s[j, 2], s[j, 3], a[j])
            s[j, 0] = x
            s[j, 1] = x_dot
            s[j, 2] = theta
            s[j, 3] = theta_dot
    length = episode_length[b]
    ret = episode_return[b]
    sums = episode_sums[b]
    scale = Terms()
    for k in range(NUM_TERMS):
        scale[k] = scales[k]
    tm = TermBlock()
    ob = ObsBlock()
    rew = Lanes()
    term = FlagLanes()
    trunc = FlagLanes()
    done = FlagLanes()
    for j in range(LANES):  # vectorized by clang (see horde.sim.classic)
        failed, tv, ov = _evaluate(t, s[j, 0], s[j, 1], s[j, 2], s[j, 3], a[j])
        r = float(0.0)
        for k in range(NUM_TERMS):
            v = scale[k] * tv[k]
            tm[j, k] = tv[k]
            sums[j, k] = sums[j, k] + v
            r += v
        for k in range(OBS_DIM):
            ob[j, k] = ov[k]
        ln = length[j] + 1
        time_out = (ln >= t.max_episode_length) and (not failed)
        rew[j] = r
        length[j] = ln
        ret[j] = ret[j] + r
        term[j] = wp.uint8(wp.where(failed, 1, 0))
        trunc[j] = wp.uint8(wp.where(time_out, 1, 0))
        done[j] = wp.uint8(wp.where(failed or time_out, 1, 0))
    for j in range(LANES):  # episode ends: statistics in env order, then auto-reset
        if done[j] != wp.uint8(0):
            i = b * LANES + j
            record_episode(stats, ret[j], length[j], term[j] != wp.uint8(0))
            for k in range(NUM_TERMS):
                wp.atomic_add(stats, STATS_TERMS + k, wp.float64(sums[j, k]))
                sums[j, k] = 0.0
            length[j] = 0
            ret[j] = 0.0
            for k in range(OBS_DIM):
                final_obs[i, k] = ob[j, k]
            x, x_dot, theta, theta_dot = _draw_state(t, rng, i)
            s[j, 0] = x
            s[j, 1] = x_dot
            s[j, 2] = theta
            s[j, 3] = theta_dot
            o = _obs(x, x_dot, theta, theta_dot)
            for k in range(OBS_DIM):
                ob[j, k] = o[k]
    state[b] = s
    episode_length[b] = length
    episode_return[b] = ret
    episode_sums[b] = sums
    obs[b] = ob
    reward[b] = rew
    terms[b] = tm
    terminated[b] = term
    truncated[b] = trunc
    dones[b] = done


@wp.kernel(enable_backward=False)
def cartpole_reset(
    t: CartpoleTask,
    mask: wp.array(dtype=wp.bool),
    state: wp.array2d(dtype=float),
    rng: wp.array(dtype=wp.uint32),
    episode_length: wp.array(dtype=wp.int32),
    episode_return: wp.array(dtype=float),
    episode_sums: wp.array2d(dtype=float),
    obs: wp.array2d(dtype=float),
    dones: wp.array(dtype=wp.bool),
):
    """Explicit reset of the envs where ``mask`` is True."""
    i = wp.tid()
    if mask[i]:
        _sample_state(t, rng, state, i)
        clear_episode(i, episode_length, episode_return, episode_sums)
        dones[i] = False
        _write_obs(obs, i, state[i, 0], state[i, 1], state[i, 2], state[i, 3])


class CartpoleEnv(WarpTaskEnv):
    """Batched cart-pole on hand-written Warp kernels."""

    obs_names = ("cart_pos", "cart_vel", "pole_cos", "pole_sin", "pole_vel")
    action_names = ("cart_force",)
    state_names = CARTPOLE_STATE
    term_names = TERMS
    action_type = "force"
    action_unit = "N"

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
        super().__init__(cfg, num_envs=num_envs, device=device, seed=seed)

    step_kernels = (cartpole_advance, cartpole_post_step, cartpole_step_blocks)
    has_block_step = True

    def action_scale(self) -> list[float]:
        return [self.cfg.max_force]

    def _launch_step(self) -> None:
        self._launch_step_range(0, self.num_envs, self._stats)

    def _launch_step_range(self, start: int, stop: int, stats: wp.array) -> None:
        d, mid = self.dev.warp, self._block_end(start, stop)
        if mid > start:
            def blk(arr, dtype):
                return self._block_view(arr, dtype, start, mid)

            wp.launch(
                cartpole_step_blocks, (mid - start) // LANES,
                inputs=[self.physics, self.cfg.decimation, self._task, self._reward_scales, blk(self._actions, Lanes),
                        blk(self._state, CartpoleStateBlock), self._env_slice(self._rng, start),
                        blk(self._episode_length, IntLanes), blk(self._episode_return, Lanes),
                        blk(self._episode_sums, TermBlock), stats],
                outputs=[blk(self._obs, ObsBlock), self._env_slice(self._final_obs, start), blk(self._reward, Lanes),
                         blk(self._terms, TermBlock), blk(self._terminated, FlagLanes), blk(self._truncated, FlagLanes),
                         blk(self._dones, FlagLanes)],
                device=d,
            )
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


register_task("cartpole", TaskSpec(
    env_cls=CartpoleEnv,
    config=CartpoleConfig(),
    description="balance a pole on a cart from a random near-upright state; fails past 2.4 m or 0.4 rad",
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
    differentiable=True,
))


# --- differentiable model: torch mirrors of the kernels above, for horde.sim.diff and SHAC ----------------------
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
    """Unscaled reward terms, each [N], of post-step states [N, 4] and actions [N, 1] (``cartpole_post_step``)."""
    x, x_dot, theta_dot = state[:, 0], state[:, 1], state[:, 3]
    angle = torch.remainder(state[:, 2] + torch.pi, 2.0 * torch.pi) - torch.pi
    fail = failed_from_state(state.detach(), cfg).to(state.dtype)
    a = torch.clamp(actions[:, 0], -1.0, 1.0)
    return {
        "alive": 1.0 - fail, "upright": 0.5 * (torch.cos(angle) + 1.0), "pole_angle": angle * angle,
        "cart_pos": x * x, "cart_vel": x_dot * x_dot, "pole_vel": theta_dot * theta_dot, "action": a * a,
        "terminated": fail,
    }


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
