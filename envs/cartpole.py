"""Cart-pole: ``cartpole`` (balance from a random near-upright state) and ``cartpole-swingup`` (from hanging).

Observations: cart position [m], cart velocity [m/s], cos and sin of the pole angle from upright, pole rate
[rad/s]. Action: cart force in [-1, 1] x ``max_force`` [N]. 50 Hz control (2 x 10 ms substeps), 500 steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import warp as wp

from horde.envs.core import TaskConfig, WarpTaskEnv
from horde.envs.episode import clear_episode, close_step, weighted_reward
from horde.envs.registry import TaskSpec, register_task
from horde.sim.classic import CARTPOLE_STATE, CartpoleParams, cartpole_advance, sincos, wrap_angle

TERMS = ("alive", "upright", "pole_angle", "cart_pos", "cart_vel", "pole_vel", "action", "terminated")


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
def _write_obs(out: wp.array2d(dtype=float), i: int, x: float, x_dot: float, theta: float, theta_dot: float):
    s, c = sincos(theta)
    out[i, 0] = x
    out[i, 1] = x_dot
    out[i, 2] = c
    out[i, 3] = s
    out[i, 4] = theta_dot


@wp.func
def _sample_state(t: CartpoleTask, rng: wp.array(dtype=wp.uint32), state: wp.array2d(dtype=float), i: int):
    s = rng[i]
    state[i, 0] = wp.randf(s, -t.init_cart_pos_range, t.init_cart_pos_range)
    state[i, 1] = wp.randf(s, -t.init_vel_range, t.init_vel_range)
    state[i, 2] = t.init_pole_angle + wp.randf(s, -t.init_pole_angle_range, t.init_pole_angle_range)
    state[i, 3] = wp.randf(s, -t.init_vel_range, t.init_vel_range)
    rng[i] = s


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
    x = state[i, 0]
    x_dot = state[i, 1]
    theta = state[i, 2]
    theta_dot = state[i, 3]
    a = wp.clamp(actions[i, 0], -1.0, 1.0)
    angle = wrap_angle(theta)
    finite = wp.isfinite(x) and wp.isfinite(x_dot) and wp.isfinite(theta) and wp.isfinite(theta_dot)
    failed = (not finite) or wp.abs(x) > t.cart_limit or (t.pole_limit > 0.0 and wp.abs(angle) > t.pole_limit)
    fail = wp.where(failed, 1.0, 0.0)
    if not finite:  # keep statistics finite; the env is reset below
        x = 0.0
        x_dot = 0.0
        angle = 0.0
        theta_dot = 0.0
    terms[i, 0] = 1.0 - fail
    sin_a, cos_a = sincos(angle)
    terms[i, 1] = 0.5 * (cos_a + 1.0)
    terms[i, 2] = angle * angle
    terms[i, 3] = x * x
    terms[i, 4] = x_dot * x_dot
    terms[i, 5] = theta_dot * theta_dot
    terms[i, 6] = a * a
    terms[i, 7] = fail
    r = weighted_reward(i, scales, terms, episode_sums)
    done = close_step(i, r, failed, t.max_episode_length, episode_length, episode_return, episode_sums,
                      reward, terminated, truncated, dones, stats)
    if done:
        _write_obs(final_obs, i, x, x_dot, angle, theta_dot)
        _sample_state(t, rng, state, i)
        _write_obs(obs, i, state[i, 0], state[i, 1], state[i, 2], state[i, 3])
    else:
        obs[i, 0] = x
        obs[i, 1] = x_dot
        obs[i, 2] = cos_a
        obs[i, 3] = sin_a
        obs[i, 4] = theta_dot


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

    step_kernels = (cartpole_advance, cartpole_post_step)

    def action_scale(self) -> list[float]:
        return [self.cfg.max_force]

    def _launch_step(self) -> None:
        wp.launch(cartpole_advance, self.num_envs, inputs=[self.physics, self.cfg.decimation, self._actions],
                  outputs=[self._state], device=self.dev.warp)
        self._launch_post_step(cartpole_post_step, self._task)

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
