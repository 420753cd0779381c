"""Cart-pole: ``cartpole`` (balance from a random near-upright state) and ``cartpole-swingup`` (from hanging).

Observations: cart position [m], cart velocity [m/s], cos and sin of the pole angle from upright, pole rate
[rad/s]. Action: cart force in [-1, 1] x ``max_force`` [N]. 50 Hz control (2 x 10 ms substeps), 500 steps. The
episode fails on a non-finite state or a termination term of :data:`CARTPOLE_TERMINATIONS` that
``task.terminations`` lists (``cart_out``: past ``cart_limit``; ``pole_fallen``: past ``pole_limit``).
Event terms: :data:`CARTPOLE_EVENTS` (``task.events``, ``task.reset_events``; none by default).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import torch
import warp as wp

from horde.envs.blocks import BlockStepEnv
from horde.envs.core import TaskConfig
from horde.envs.episode import Episodes, clear_episode, close_step, weighted_reward
from horde.envs import render
from horde.envs.obs_writer import observation_writer
from horde.envs.observations import ObsTerm
from horde.envs.registry import TaskSpec, register_task
from horde.envs.events import EventSet, configured_events, event_chain, interval_events_kernel, refuse_events
from horde.envs.terms import TerminationSet, TermSet, term_values_torch, unit_clip
from horde.sim.device import resolve_device
from horde.sim.fields import bounded
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
TERMINATIONS = ("cart_out", "pole_fallen")
"""The built-in termination terms, the ones the CPU block step (:mod:`horde.envs.cartpole_block`) runs too."""
OBS_DIM = 5
"""The observation's width (:func:`observation_terms`; the CPU block step's C++ writes the same columns)."""


def _balance_scales() -> dict[str, float]:
    return {"alive": 1.0, "upright": 0.0, "pole_angle": -1.0, "cart_pos": -0.05, "cart_vel": -0.01,
            "pole_vel": -0.005, "action": -0.001, "terminated": -2.0}


@dataclass(kw_only=True)
class CartpoleConfig(TaskConfig):
    """Cart-pole constants, limits, initial-state ranges and reward scales."""

    gravity: float = bounded(9.81, ge=0)
    """Gravity [m/s^2] (0: weightless)."""
    cart_mass: float = bounded(1.0, gt=0)
    """Cart mass [kg]."""
    pole_mass: float = bounded(0.1, gt=0)
    """Pole mass [kg]."""
    pole_half_length: float = bounded(0.5, gt=0)
    """Half the pole length [m]."""
    max_force: float = bounded(10.0, ge=0)
    """Force at action 1 [N]."""
    cart_limit: float = bounded(2.4, gt=0)
    """The episode fails when |cart position| exceeds this [m] (the ``cart_out`` termination term)."""
    pole_limit: float = bounded(0.4, ge=0)
    """The episode fails when |pole angle| exceeds this [rad] (the ``pole_fallen`` termination term); 0 disables the
    check (swing-up)."""
    init_pole_angle: float = 0.0
    """Centre of the initial pole angle [rad]: 0 upright, pi hanging."""
    init_pole_angle_range: float = bounded(0.1, ge=0)
    """Initial pole angle is centre +- this [rad]."""
    init_cart_pos_range: float = bounded(0.5, ge=0)
    """Initial cart position is +- this [m]."""
    init_vel_range: float = bounded(0.1, ge=0)
    """Initial cart [m/s] and pole [rad/s] velocities are +- this."""
    reward_scales: dict[str, float] = field(default_factory=_balance_scales)
    terminations: list[str] = field(default_factory=lambda: list(TERMINATIONS))
    """Termination terms of CARTPOLE_TERMINATIONS (a non-finite state always fails an episode); the share of
    finished episodes each one ended is logged as ``termination/<name>``. A list of other terms than the built-in
    ones runs the one-env-per-thread kernels on the CPU too (the block step's C++ runs only ``cart_out`` and
    ``pole_fallen``)."""
    termination_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the configured termination terms, by name, over their functions' defaults
    (``task.termination_params.<term>.<param>=v``; ``func`` makes a new term of a registered one)."""
    events: dict[str, float] = field(default_factory=dict)
    """Interval event terms of CARTPOLE_EVENTS by name, each with its interval [s] (run before the physics on the
    steps of an episode that are multiples of it). E.g. ``{push: 2.0}``: a push every 2 s. Events step one env per
    thread on the CPU (not the block step's C++)."""
    reset_events: list[str] = field(default_factory=list)
    """Reset event terms of CARTPOLE_EVENTS, in order: run in every reset of an env after its initial state is drawn
    and before its first observation (``[start_push]``)."""
    event_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the configured event terms, by name, over their functions' defaults
    (``task.event_params.push.speed=1.0``; ``func`` makes a new term of a registered one)."""


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
    """The ``pole_fallen`` term fails past this pole angle [rad]; 0: never (swing-up)."""
    failed: wp.array(dtype=wp.bool)
    """The episode fails on this step: a non-finite state or a configured termination term (written before the
    reward terms run)."""
    scored: bool
    """The observation terms read the state as scored (the pole angle wrapped to [-pi, pi)); False right after a
    reset, where they read it as drawn."""


CARTPOLE_TERMS = TermSet("cartpole", Cart)
"""Reward terms of the cart-pole: Warp functions ``(x: Cart, i: int) -> float``; the env's step kernel and the
differentiable model (SHAC) both call them, and the CPU block step's C++ (:mod:`horde.envs.cartpole_block`) mirrors them (pinned bit for bit by
tests/unit/test_sim.py). A non-finite state fails and is scored as zeros, so that statistics stay finite."""


CARTPOLE_EVENTS = EventSet("cartpole event", Cart)
"""Event terms of the cart-pole: Warp functions ``(x: Cart, i: int, s: wp.uint32) -> wp.uint32`` changing env
``i``'s state with random numbers from its stream ``s`` (``task.events`` by interval, ``task.reset_events`` at every
reset, ``task.event_params`` their parameters); yours is ``@CARTPOLE_EVENTS.term`` (``mode="reset"`` for a reset
event). The differentiable model (SHAC) runs none: it refuses a config that names one."""


@wp.func
def _push(x: Cart, i: int, s: wp.uint32, speed: float, rate: float) -> wp.uint32:
    x.state[i, 1] = x.state[i, 1] + wp.randf(s, -speed, speed)
    x.state[i, 3] = x.state[i, 3] + wp.randf(s, -rate, rate)
    return s


@CARTPOLE_EVENTS.term(bounds={"speed": {"ge": 0}, "rate": {"ge": 0}})
def push(x: Cart, i: int, s: wp.uint32, speed: float = 0.5, rate: float = 0.0) -> wp.uint32:
    """A shove: U(-speed, speed) [m/s] added to the cart's velocity and U(-rate, rate) [rad/s] to the pole's rate,
    on every ``task.events`` interval (``task.events: {push: 2.0}``, ``task.event_params: {push: {rate: 0.5}}``)."""
    return _push(x, i, s, speed, rate)


@CARTPOLE_EVENTS.term(mode="reset", bounds={"speed": {"ge": 0}, "rate": {"ge": 0}})
def start_push(x: Cart, i: int, s: wp.uint32, speed: float = 0.5, rate: float = 0.0) -> wp.uint32:
    """:func:`push` at every reset, after the initial state is drawn (``task.reset_events=[start_push]``)."""
    return _push(x, i, s, speed, rate)


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


# --- observation terms: (x, i, k) -> column k's raw value, written by horde.envs.obs_writer ------------------------
@wp.func
def _observed(x: Cart, i: int, k: int) -> float:
    v = x.state[i, k]
    if k == 2 and x.scored:
        v = wrap_angle(v)
    return v


@wp.func
def obs_cart_pos(x: Cart, i: int, k: int) -> float:
    """Cart position [m]."""
    return _observed(x, i, 0)


@wp.func
def obs_cart_vel(x: Cart, i: int, k: int) -> float:
    """Cart velocity [m/s]."""
    return _observed(x, i, 1)


@wp.func
def obs_pole_cos(x: Cart, i: int, k: int) -> float:
    """cos of the pole angle from upright."""
    s, c = sincos(_observed(x, i, 2))
    return c


@wp.func
def obs_pole_sin(x: Cart, i: int, k: int) -> float:
    """sin of the pole angle from upright."""
    s, c = sincos(_observed(x, i, 2))
    return s


@wp.func
def obs_pole_vel(x: Cart, i: int, k: int) -> float:
    """Pole rate [rad/s]."""
    return _observed(x, i, 3)


def observation_terms() -> tuple[ObsTerm, ...]:
    """The cart-pole's observation: the state variables as they are, the pole angle as its cos and sin; a
    non-finite state is observed as the cart centred at rest with the pole upright (the episode's final
    observation). The CPU block step's C++ (:mod:`horde.envs.cartpole_block`) writes the same columns, pinned bit
    for bit to these by tests/unit/test_sim.py."""
    def term(name, unit, func, fallback):
        return ObsTerm(name, name, (name,), unit=unit, func=func, fallback=fallback)

    return (term("cart_pos", "m", obs_cart_pos, 0.0), term("cart_vel", "m/s", obs_cart_vel, 0.0),
            term("pole_cos", "1", obs_pole_cos, 1.0), term("pole_sin", "1", obs_pole_sin, 0.0),
            term("pole_vel", "rad/s", obs_pole_vel, 0.0))


CARTPOLE_TERMINATIONS = TerminationSet("cartpole termination", Cart)
"""Termination terms of the cart-pole: Warp functions ``(x: Cart, i: int) -> bool`` (``task.terminations``); the
step kernel fuses them, the differentiable model (SHAC) ends its episodes on the same ones, and the CPU block step's
C++ mirrors the built-in two (:data:`TERMINATIONS`)."""


@CARTPOLE_TERMINATIONS.term
def cart_out(x: Cart, i: int) -> bool:
    """|cart position| > ``task.cart_limit`` [m] (a finite state)."""
    return wp.abs(_var(x, i, 0)) > x.cart_limit


@CARTPOLE_TERMINATIONS.term
def pole_fallen(x: Cart, i: int) -> bool:
    """|pole angle from upright| > ``task.pole_limit`` [rad] (a finite state; never with a limit of 0)."""
    return x.pole_limit > 0.0 and wp.abs(_var(x, i, 2)) > x.pole_limit


@CARTPOLE_TERMS.term
def alive(x: Cart, i: int) -> float:
    """1 while the episode goes on, 0 on the failing step."""
    return 1.0 - wp.where(x.failed[i], 1.0, 0.0)


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
    return wp.where(x.failed[i], 1.0, 0.0)


@functools.lru_cache(maxsize=None)
def post_step_kernel(terms: tuple[wp.Function, ...], terminations: tuple[wp.Function, wp.Function],
                     write_obs: wp.Function, reset_events: tuple[wp.Function, ...] = ()) -> wp.Kernel:
    """The one-env-per-thread step kernel (CUDA, the envs after the last CPU block, and the CPU with terminations
    or events of a config's own) for these reward terms, terminations (``(check, count)`` of
    :meth:`horde.envs.terms.TerminationSet.fused`), observation writer
    (:func:`horde.envs.obs_writer.observation_writer` of :func:`observation_terms`) and reset events (run after a
    finished env's next state is drawn), fused with ``wp.static``."""
    check, count = terminations
    chain = event_chain(Cart, reset_events)

    @wp.kernel(enable_backward=False, module="unique")
    def cartpole_post_step(
        t: CartpoleTask,
        actions: wp.array2d(dtype=float),
        state: wp.array2d(dtype=float),
        rng: wp.array(dtype=wp.uint32),
        ep: Episodes,
        causes: wp.array(dtype=wp.float64),
        failed_now: wp.array(dtype=wp.bool),
        obs: wp.array2d(dtype=float),
        final_obs: wp.array2d(dtype=float),
    ):
        """Failure, reward terms, time-out, statistics, auto-reset and observations for env i."""
        i = wp.tid()
        x = Cart()
        x.state = state
        x.actions = actions
        x.cart_limit = t.cart_limit
        x.pole_limit = t.pole_limit
        x.failed = failed_now
        x.scored = True
        hits, failed, timed_out = wp.static(check)(x, i)
        failed = failed or (not _finite(x, i))
        x.failed[i] = failed
        for k in range(wp.static(len(terms))):
            ep.terms[k, i] = wp.static(terms[k])(x, i)
        done = close_step(ep, i, weighted_reward(ep, i), failed, wp.where(timed_out, 0, t.max_episode_length))
        # the post-step state as scored (the pole angle wrapped; the terms' fallback for a non-finite state), then
        # after a reset the state as drawn
        if done:
            wp.static(count)(hits, causes)
            rng[i] = wp.static(write_obs)(x, i, _finite(x, i), rng[i], final_obs, 0)
            _sample_state(t, rng, state, i)
            x.scored = False
            if wp.static(len(reset_events) > 0):
                rng[i] = wp.static(chain)(x, i, rng[i])
        rng[i] = wp.static(write_obs)(x, i, True, rng[i], obs, 0)

    return cartpole_post_step


_write_builtin = observation_writer(Cart, observation_terms())
cartpole_post_step = post_step_kernel(CARTPOLE_TERMS.resolve(TERMS), CARTPOLE_TERMINATIONS.fused(TERMINATIONS),
                                      _write_builtin)
"""The step kernel of :data:`TERMS`, :data:`TERMINATIONS` and :func:`observation_terms` (every cart-pole task scores
all of the reward terms; ``reward_scales`` weights them)."""


@functools.lru_cache(maxsize=None)
def reset_kernel(write_obs: wp.Function, reset_events: tuple[wp.Function, ...] = ()) -> wp.Kernel:
    """Explicit reset of the envs where ``mask`` is True: a state drawn, the reset events, observed through
    ``write_obs``."""
    chain = event_chain(Cart, reset_events)

    @wp.kernel(enable_backward=False, module="unique")
    def cartpole_reset(
        t: CartpoleTask,
        mask: wp.array(dtype=wp.bool),
        state: wp.array2d(dtype=float),
        rng: wp.array(dtype=wp.uint32),
        ep: Episodes,
        obs: wp.array2d(dtype=float),
    ):
        i = wp.tid()
        if mask[i]:
            _sample_state(t, rng, state, i)
            clear_episode(ep, i)
            x = Cart()
            x.state = state
            x.scored = False
            if wp.static(len(reset_events) > 0):
                rng[i] = wp.static(chain)(x, i, rng[i])
            rng[i] = wp.static(write_obs)(x, i, True, rng[i], obs, 0)

    return cartpole_reset


class CartpoleEnv(BlockStepEnv):
    """Batched cart-pole on hand-written Warp kernels."""

    obs_names = ("cart_pos", "cart_vel", "pole_cos", "pole_sin", "pole_vel")
    action_names = ("cart_force",)
    state_names = CARTPOLE_STATE
    term_names = TERMS
    termination_set = CARTPOLE_TERMINATIONS
    """Where ``terminations``' names are looked up."""
    event_set = CARTPOLE_EVENTS
    """Where ``events``' and ``reset_events``' names are looked up."""
    action_type = "force"
    action_unit = "N"

    def observation_terms(self):
        """The state variables as they are, the pole angle as its cos and sin (:func:`observation_terms`)."""
        return observation_terms()

    def observation_sources(self) -> dict[str, torch.Tensor]:
        s = self.state
        return {"cart_pos": s[:, 0:1], "cart_vel": s[:, 1:2], "pole_cos": torch.cos(s[:, 2:3]),
                "pole_sin": torch.sin(s[:, 2:3]), "pole_vel": s[:, 3:4]}

    def __init__(self, cfg: CartpoleConfig, *, num_envs: int, device: str = "cpu", seed: int = 0) -> None:
        CARTPOLE_TERMS.configure(TERMS, cfg.reward_params)  # its terms take none: an entry fails in one line
        ends = CARTPOLE_TERMINATIONS.configure(cfg.terminations, cfg.termination_params)
        self.termination_names = tuple(cfg.terminations)
        events, reset_events, steps = configured_events(CARTPOLE_EVENTS, cfg)
        self._post_step = post_step_kernel(CARTPOLE_TERMS.resolve(TERMS),
                                           CARTPOLE_TERMINATIONS.fused(cfg.terminations, cfg.termination_params),
                                           _write_builtin, reset_events)
        self._reset = reset_kernel(_write_builtin, reset_events)
        self._pre_step = interval_events_kernel(Cart, events) if events else None
        bases = [t.base for t in ends]
        self._builtin_ends = (len(set(bases)) == len(bases) and set(bases) <= set(TERMINATIONS)
                              and not events and not reset_events)
        """The configured terminations are built-in ones the block step's C++ runs and there are no events (else:
        per-env kernels only)."""
        self.physics = physics_params(cfg)
        self._task = CartpoleTask()
        self._task.cart_limit = cfg.cart_limit
        self._task.pole_limit = cfg.pole_limit
        self._task.init_pole_angle = cfg.init_pole_angle
        self._task.init_pole_angle_range = cfg.init_pole_angle_range
        self._task.init_cart_pos_range = cfg.init_cart_pos_range
        self._task.init_vel_range = cfg.init_vel_range
        self._task.max_episode_length = cfg.episode_length
        from horde.envs.cartpole_block import cartpole_block_kernel

        self.block_kernels = ((cartpole_block_kernel(cfg.decimation, *(bases.index(n) if n in bases else -1
                                                                       for n in TERMINATIONS)),)
                              if self._builtin_ends else ())
        self.step_kernels = (cartpole_advance, self._post_step) + ((self._pre_step,) if events else ())
        d = resolve_device(device).warp
        self._failed = wp.zeros(num_envs, dtype=wp.bool, device=d)
        """Whether each env failed on the last step (what ``alive`` and ``terminated`` read; the per-env kernels)."""
        self._event_steps = wp.array(steps or [1], dtype=int, device=d)  # each interval event's period [steps]
        super().__init__(cfg, num_envs=num_envs, device=device, seed=seed)
        self._cart = c = Cart()  # the interval events' view of every env (events turn the block step off)
        c.state, c.actions, c.failed, c.cart_limit, c.pole_limit = (self._state, self._actions, self._failed,
                                                                    cfg.cart_limit, cfg.pole_limit)

    step_kernels = (cartpole_advance, cartpole_post_step)

    def _configure_cpu_path(self, *, blocks: bool, threads: int | None = None) -> None:
        super()._configure_cpu_path(blocks=blocks and self._builtin_ends, threads=threads)

    def action_scale(self) -> list[float]:
        return [self.cfg.max_force]

    def _launch_step_range(self, start: int, stop: int, stats: wp.array, causes: wp.array) -> None:
        d, mid = self.dev.warp, self._block_end(start, stop)
        if self._pre_step is not None:  # events: no block step, one range of every env
            wp.launch(self._pre_step, self.num_envs, inputs=[self._cart, self._episode_length, self._event_steps],
                      outputs=[self._rng], device=d)
        if mid > start:
            wp.launch(self.block_kernels[0], (mid - start) // LANES,
                      inputs=[self.physics, self._task, self._actions, self._state, self._rng, self.episodes(0, stats),
                              causes, start],
                      outputs=[self._obs, self._final_obs], device=d)
        if mid < stop:  # the envs after the last full block (stop is num_envs here)
            v = self._env_slice
            wp.launch(cartpole_advance, stop - mid, inputs=[self.physics, self.cfg.decimation, v(self._actions, mid)],
                      outputs=[v(self._state, mid)], device=d)
            wp.launch(self._post_step, stop - mid,
                      inputs=[self._task, v(self._actions, mid), v(self._state, mid), v(self._rng, mid),
                              self.episodes(mid, stats), causes, v(self._failed, mid)],
                      outputs=[v(self._obs, mid), v(self._final_obs, mid)], device=d)

    def _launch_reset(self) -> None:
        self._launch_masked_reset(self._reset, self._task)


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
    """Failure, bool [N], of post-step states [N, 4]: non-finite, or a failure among the configured termination
    terms (the env's own Warp functions, :data:`CARTPOLE_TERMINATIONS`: by default the cart or the pole past its
    limit)."""
    bad = ~torch.isfinite(state).all(dim=-1)
    actions = torch.zeros(state.shape[0], 1, dtype=state.dtype, device=state.device)
    fail = CARTPOLE_TERMINATIONS.failure_term(cfg.terminations, cfg.termination_params)
    (failed,) = term_values_torch(Cart, (fail,), {"state": (state.detach(), float), "actions": (actions, float)},
                                  {"cart_limit": cfg.cart_limit, "pole_limit": cfg.pole_limit})
    return bad | (failed > 0.5)


def reward_terms_from_state(state: torch.Tensor, actions: torch.Tensor, cfg: CartpoleConfig) -> dict[str, torch.Tensor]:
    """Unscaled reward terms, each [N], of post-step states [N, 4] and actions [N, 1], in ``reward_scales``' order:
    the env's own Warp terms (:data:`CARTPOLE_TERMS`) on torch tensors, differentiable
    (:func:`horde.envs.terms.term_values_torch`)."""
    names = tuple(cfg.reward_scales)
    values = term_values_torch(Cart, CARTPOLE_TERMS.resolve(names), {
        "state": (state, float), "actions": (actions, float), "failed": (failed_from_state(state, cfg), wp.bool)},
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

    refuse_events(cfg)
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
