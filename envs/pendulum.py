"""Pendulum swing-up with a torque limit, with gymnasium Pendulum-v1's constants and update rule.

Observations: cos and sin of the angle from upright, angular velocity [rad/s]. Action: torque in [-1, 1] x
``max_torque`` [N m]. 20 Hz control (one 50 ms substep), 200 steps. No failure condition but a non-finite state;
``task.terminations`` adds termination terms of :data:`PENDULUM_TERMINATIONS` (none by default), ``task.events`` and
``task.reset_events`` event terms of :data:`PENDULUM_EVENTS` (``push``, ``start_push``; none by default).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import torch
import warp as wp

from horde.envs.core import TaskConfig, WarpTaskEnv
from horde.envs.episode import Episodes, clear_episode, close_step, weighted_reward
from horde.envs import render
from horde.envs.obs_writer import observation_writer
from horde.envs.observations import ObsTerm
from horde.envs.registry import TaskSpec, register_task
from horde.envs.events import EventSet, configured_events, event_chain, interval_events_kernel, refuse_events
from horde.envs.terms import TerminationSet, TermSet, term_values_torch, unit_clip
from horde.sim.classic import PENDULUM_STATE, PendulumParams, pendulum_advance, sincos, wrap_angle
from horde.sim.fields import bounded

TERMS = ("angle", "velocity", "torque")


def _scales() -> dict[str, float]:
    # Pendulum-v1's cost: angle^2 + 0.1 vel^2 + 0.001 torque^2 (torque in N m; here the term is in action units).
    return {"angle": -1.0, "velocity": -0.1, "torque": -0.004}


@dataclass(kw_only=True)
class PendulumConfig(TaskConfig):
    """Pendulum constants, initial-state ranges and reward scales."""

    episode_length: int = 200
    sim_dt: float = 0.05
    decimation: int = 1
    gravity: float = bounded(10.0, ge=0)
    """Gravity [m/s^2] (Pendulum-v1 uses 10; 0: weightless)."""
    mass: float = bounded(1.0, gt=0)
    """Point mass [kg]."""
    length: float = bounded(1.0, gt=0)
    """Rod length [m]."""
    max_torque: float = bounded(2.0, ge=0)
    """Torque at action 1 [N m]."""
    max_speed: float = bounded(8.0, gt=0)
    """Angular speed clip [rad/s]."""
    init_angle_range: float = bounded(3.14159265, ge=0)
    """Initial angle is uniform in +- this [rad]."""
    init_vel_range: float = bounded(1.0, ge=0)
    """Initial angular velocity is uniform in +- this [rad/s]."""
    reward_scales: dict[str, float] = field(default_factory=_scales)
    terminations: list[str] = field(default_factory=list)
    """Termination terms of PENDULUM_TERMINATIONS (none by default: a non-finite state always fails an episode);
    the share of finished episodes each one ended is logged as ``termination/<name>``."""
    termination_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the configured termination terms, by name, over their functions' defaults
    (``task.termination_params.<term>.<param>=v``; ``func`` makes a new term of a registered one)."""
    events: dict[str, float] = field(default_factory=dict)
    """Interval event terms of PENDULUM_EVENTS by name, each with its interval [s] (run before the physics on the
    steps of an episode that are multiples of it). E.g. ``{push: 2.0}``: a push every 2 s."""
    reset_events: list[str] = field(default_factory=list)
    """Reset event terms of PENDULUM_EVENTS, in order: run in every reset of an env after its initial state is drawn
    and before its first observation (``[start_push]``)."""
    event_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the configured event terms, by name, over their functions' defaults
    (``task.event_params.push.rate=2.0``; ``func`` makes a new term of a registered one)."""


@wp.struct
class PendulumTask:
    """Per-task constants read by the post-step kernel."""

    init_angle_range: float
    init_vel_range: float
    max_episode_length: int


@wp.func
def _sample_state(t: PendulumTask, rng: wp.array(dtype=wp.uint32), state: wp.array2d(dtype=float), i: int):
    s = rng[i]
    state[i, 0] = wp.randf(s, -t.init_angle_range, t.init_angle_range)
    state[i, 1] = wp.randf(s, -t.init_vel_range, t.init_vel_range)
    rng[i] = s


@wp.struct
class Swing:
    """What a pendulum reward term reads of env ``i`` (arrays ``[num_envs, ...]``)."""

    state: wp.array2d(dtype=float)
    """Angle from upright [rad] and angular velocity [rad/s] after the step."""
    actions: wp.array2d(dtype=float)
    """Actions of this step (unclipped)."""


PENDULUM_TERMS = TermSet("pendulum", Swing)
"""Reward terms of the pendulum: Warp functions ``(x: Swing, i: int) -> float``; the env's step kernel and the
differentiable model (SHAC) both call them."""
PENDULUM_TERMINATIONS = TerminationSet("pendulum termination", Swing)
"""Termination terms of the pendulum: Warp functions ``(x: Swing, i: int) -> bool`` (``task.terminations``; none
built in). The step kernel fuses them; the differentiable model (SHAC) ends its episodes on the same ones."""


PENDULUM_EVENTS = EventSet("pendulum event", Swing)
"""Event terms of the pendulum: Warp functions ``(x: Swing, i: int, s: wp.uint32) -> wp.uint32`` changing env
``i``'s state with random numbers from its stream ``s`` (``task.events`` by interval, ``task.reset_events`` at every
reset, ``task.event_params`` their parameters); yours is ``@PENDULUM_EVENTS.term`` (``mode="reset"`` for a reset
event). The differentiable model (SHAC) runs none: it refuses a config that names one."""


@wp.func
def _push(x: Swing, i: int, s: wp.uint32, rate: float) -> wp.uint32:
    x.state[i, 1] = x.state[i, 1] + wp.randf(s, -rate, rate)
    return s


@PENDULUM_EVENTS.term(bounds={"rate": {"ge": 0}})
def push(x: Swing, i: int, s: wp.uint32, rate: float = 1.0) -> wp.uint32:
    """A tap: U(-rate, rate) [rad/s] added to the angular velocity, on every ``task.events`` interval
    (``task.events: {push: 2.0}``, ``task.event_params: {push: {rate: 2.0}}``)."""
    return _push(x, i, s, rate)


@PENDULUM_EVENTS.term(mode="reset", bounds={"rate": {"ge": 0}})
def start_push(x: Swing, i: int, s: wp.uint32, rate: float = 1.0) -> wp.uint32:
    """:func:`push` at every reset, after the initial state is drawn (``task.reset_events=[start_push]``)."""
    return _push(x, i, s, rate)


@wp.func
def _healthy(x: Swing, i: int) -> bool:
    return wp.isfinite(x.state[i, 0]) and wp.isfinite(x.state[i, 1])


# --- observation terms: (x, i, k) -> column k's raw value, written by horde.envs.obs_writer ------------------------
@wp.func
def cos_angle(x: Swing, i: int, k: int) -> float:
    """cos of the angle from upright (1 upright)."""
    s, c = sincos(x.state[i, 0])
    return c


@wp.func
def sin_angle(x: Swing, i: int, k: int) -> float:
    """sin of the angle from upright."""
    s, c = sincos(x.state[i, 0])
    return s


@wp.func
def angular_vel(x: Swing, i: int, k: int) -> float:
    """Angular velocity [rad/s]."""
    return x.state[i, 1]


def observation_terms() -> tuple[ObsTerm, ...]:
    """The pendulum's observation: the angle as its cos and sin, the rate as it is; a non-finite state is observed
    as upright at rest (the episode's final observation)."""
    return (ObsTerm("cos_angle", "cos_angle", ("cos_angle",), unit="1", func=cos_angle, fallback=1.0),
            ObsTerm("sin_angle", "sin_angle", ("sin_angle",), unit="1", func=sin_angle, fallback=0.0),
            ObsTerm("angular_vel", "angular_vel", ("angular_vel",), unit="rad/s", func=angular_vel, fallback=0.0))


@PENDULUM_TERMS.term
def angle(x: Swing, i: int) -> float:
    """Angle from upright, wrapped to [-pi, pi), squared [rad^2] (0 for a non-finite state)."""
    a = wrap_angle(wp.where(_healthy(x, i), x.state[i, 0], 0.0))
    return a * a


@PENDULUM_TERMS.term
def velocity(x: Swing, i: int) -> float:
    """Angular velocity squared [rad^2/s^2] (0 for a non-finite state)."""
    v = wp.where(_healthy(x, i), x.state[i, 1], 0.0)
    return v * v


@PENDULUM_TERMS.term
def torque(x: Swing, i: int) -> float:
    """Clipped action squared (torque in units of ``max_torque``)."""
    a = unit_clip(x.actions[i, 0])
    return a * a


@functools.lru_cache(maxsize=None)
def post_step_kernel(terms: tuple[wp.Function, ...], terminations: tuple[wp.Function, wp.Function],
                     write_obs: wp.Function, reset_events: tuple[wp.Function, ...] = ()) -> wp.Kernel:
    """The step's kernel for these reward terms, terminations (``(check, count)`` of
    :meth:`horde.envs.terms.TerminationSet.fused`), observation writer
    (:func:`horde.envs.obs_writer.observation_writer` of :func:`observation_terms`) and reset events (run after a
    finished env's next state is drawn), fused with ``wp.static``."""
    check, count = terminations
    chain = event_chain(Swing, reset_events)

    @wp.kernel(enable_backward=False, module="unique")
    def pendulum_post_step(
        t: PendulumTask,
        x: Swing,
        rng: wp.array(dtype=wp.uint32),
        ep: Episodes,
        causes: wp.array(dtype=wp.float64),
        obs: wp.array2d(dtype=float),
        final_obs: wp.array2d(dtype=float),
    ):
        """Reward terms, terminations, time-out, statistics, auto-reset and observations for env i."""
        i = wp.tid()
        for k in range(wp.static(len(terms))):
            ep.terms[k, i] = wp.static(terms[k])(x, i)
        bad = not _healthy(x, i)
        hits, failed, timed_out = wp.static(check)(x, i)
        done = close_step(ep, i, weighted_reward(ep, i), failed or bad, wp.where(timed_out, 0, t.max_episode_length))
        if done:
            wp.static(count)(hits, causes)
            rng[i] = wp.static(write_obs)(x, i, not bad, rng[i], final_obs, 0)
            _sample_state(t, rng, x.state, i)
            if wp.static(len(reset_events) > 0):
                rng[i] = wp.static(chain)(x, i, rng[i])
        rng[i] = wp.static(write_obs)(x, i, True, rng[i], obs, 0)

    return pendulum_post_step


@functools.lru_cache(maxsize=None)
def reset_kernel(write_obs: wp.Function, reset_events: tuple[wp.Function, ...] = ()) -> wp.Kernel:
    """Explicit reset of the envs where ``mask`` is True: a state drawn, the reset events, observed through
    ``write_obs``."""
    chain = event_chain(Swing, reset_events)

    @wp.kernel(enable_backward=False, module="unique")
    def pendulum_reset(
        t: PendulumTask,
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
            x = Swing()
            x.state = state
            if wp.static(len(reset_events) > 0):
                rng[i] = wp.static(chain)(x, i, rng[i])
            rng[i] = wp.static(write_obs)(x, i, True, rng[i], obs, 0)

    return pendulum_reset


class PendulumEnv(WarpTaskEnv):
    """Batched torque-limited pendulum on hand-written Warp kernels."""

    obs_names = ("cos_angle", "sin_angle", "angular_vel")
    action_names = ("torque",)
    state_names = PENDULUM_STATE
    term_names = TERMS
    termination_set = PENDULUM_TERMINATIONS
    """Where ``terminations``' names are looked up."""
    event_set = PENDULUM_EVENTS
    """Where ``events``' and ``reset_events``' names are looked up."""
    action_type = "torque"
    action_unit = "N m"

    def observation_terms(self):
        """The angle as its cos and sin, the rate as it is (:func:`observation_terms`)."""
        return observation_terms()

    def observation_sources(self) -> dict[str, torch.Tensor]:
        s = self.state
        return {"cos_angle": torch.cos(s[:, 0:1]), "sin_angle": torch.sin(s[:, 0:1]), "angular_vel": s[:, 1:2]}

    def __init__(self, cfg: PendulumConfig, *, num_envs: int, device: str = "cpu", seed: int = 0) -> None:
        self.physics = physics_params(cfg)
        self._task = PendulumTask()
        self._task.init_angle_range = cfg.init_angle_range
        self._task.init_vel_range = cfg.init_vel_range
        self._task.max_episode_length = cfg.episode_length
        self.termination_names = tuple(cfg.terminations)
        events, reset_events, steps = configured_events(PENDULUM_EVENTS, cfg)
        write_obs = observation_writer(Swing, observation_terms())
        self._post_step = post_step_kernel(PENDULUM_TERMS.resolve(TERMS, cfg.reward_params),
                                           PENDULUM_TERMINATIONS.fused(cfg.terminations, cfg.termination_params),
                                           write_obs, reset_events)
        self._reset = reset_kernel(observation_writer(Swing, observation_terms(), fill=True), reset_events)
        self._pre_step = interval_events_kernel(Swing, events) if events else None
        self.step_kernels = (pendulum_advance, self._post_step) + ((self._pre_step,) if events else ())
        super().__init__(cfg, num_envs=num_envs, device=device, seed=seed)
        self._swing = Swing()
        self._swing.state, self._swing.actions = self._state, self._actions
        self._event_steps = wp.array(steps or [1], dtype=int, device=self.dev.warp)

    def action_scale(self) -> list[float]:
        return [self.cfg.max_torque]

    def _launch_step(self) -> None:
        if self._pre_step is not None:
            wp.launch(self._pre_step, self.num_envs, device=self.dev.warp,
                      inputs=[self._swing, self._episode_length, self._event_steps], outputs=[self._rng])
        wp.launch(pendulum_advance, self.num_envs, inputs=[self.physics, self.cfg.decimation, self._actions],
                  outputs=[self._state], device=self.dev.warp)
        wp.launch(self._post_step, self.num_envs, inputs=[self._task, self._swing, self._rng, self.episodes(),
                                                         self._causes],
                  outputs=[self._obs, self._final_obs], device=self.dev.warp)

    def _launch_reset(self) -> None:
        self._launch_masked_reset(self._reset, self._task)


def physics_params(cfg: PendulumConfig) -> PendulumParams:
    """The Warp struct of physical constants for ``cfg``."""
    p = PendulumParams()
    p.gravity = cfg.gravity
    p.mass = cfg.mass
    p.length = cfg.length
    p.max_torque = cfg.max_torque
    p.max_speed = cfg.max_speed
    p.dt = cfg.sim_dt
    return p


# --- differentiable model, for horde.sim.diff and SHAC: the reward terms above, the rest in torch ------------------
def obs_from_state(state: torch.Tensor) -> torch.Tensor:
    """Observations [N, 3] (cos, sin of the angle, angular velocity [rad/s]) of states [N, 2], as the env writes them."""
    theta, theta_dot = state[:, 0], state[:, 1]
    return torch.stack((torch.cos(theta), torch.sin(theta), theta_dot), dim=-1)


def reward_terms_from_state(state: torch.Tensor, actions: torch.Tensor, cfg: PendulumConfig
                            ) -> dict[str, torch.Tensor]:
    """Unscaled reward terms, each [N], of post-step states [N, 2] and actions [N, 1], in ``reward_scales``' order:
    the env's own Warp terms (:data:`PENDULUM_TERMS`) on torch tensors, differentiable
    (:func:`horde.envs.terms.term_values_torch`)."""
    names = tuple(cfg.reward_scales)
    values = term_values_torch(Swing, PENDULUM_TERMS.resolve(names), {"state": (state, float),
                                                                     "actions": (actions, float)})
    return dict(zip(names, values))


def reward_from_state(state: torch.Tensor, actions: torch.Tensor, cfg: PendulumConfig) -> torch.Tensor:
    """Reward [N] = sum of ``cfg.reward_scales`` x terms, as the env computes it."""
    terms = reward_terms_from_state(state, actions, cfg)
    return sum(cfg.reward_scales[k] * v for k, v in terms.items())


def failed_from_state(state: torch.Tensor, cfg: PendulumConfig) -> torch.Tensor:
    """Failure, bool [N], of post-step states [N, 2]: a non-finite state, or a failure among the configured
    termination terms (the env's own Warp functions, :data:`PENDULUM_TERMINATIONS`; none by default)."""
    bad = ~torch.isfinite(state).all(dim=-1)
    if not cfg.terminations:
        return bad
    actions = torch.zeros(state.shape[0], 1, dtype=state.dtype, device=state.device)
    fail = PENDULUM_TERMINATIONS.failure_term(cfg.terminations, cfg.termination_params)
    (failed,) = term_values_torch(Swing, (fail,), {"state": (state.detach(), float), "actions": (actions, float)})
    return bad | (failed > 0.5)


def sample_states(cfg: PendulumConfig, num_envs: int, generator: torch.Generator,
                  device: torch.device | str = "cpu") -> torch.Tensor:
    """Initial states [num_envs, 2] from the env's reset distribution (drawn with torch, not Warp's streams)."""
    u = torch.rand(num_envs, 2, generator=generator, device=device) * 2.0 - 1.0
    return u * torch.tensor([cfg.init_angle_range, cfg.init_vel_range], device=device)


def diff_task(cfg: PendulumConfig, device: str = "cpu"):
    """The differentiable model of this task (a :class:`horde.sim.diff.DiffTask`)."""
    from horde.sim.diff import DiffRollout, DiffTask

    refuse_events(cfg)
    rollout = DiffRollout(physics_params(cfg), decimation=cfg.decimation, device=device)
    return DiffTask(
        rollout=rollout, obs=obs_from_state, reward_terms=lambda s, a: reward_terms_from_state(s, a, cfg),
        reward_scales=dict(cfg.reward_scales), failed=lambda s: failed_from_state(s, cfg),
        sample_state=lambda n, g: sample_states(cfg, n, g, rollout.device), episode_length=cfg.episode_length,
    )


register_task("pendulum", TaskSpec(
    env_cls=PendulumEnv,
    config=PendulumConfig(),
    description="swing a torque-limited pendulum up and hold it (Pendulum-v1 dynamics)",
    diff_task=diff_task,
    renderer=render.draw_pendulum,
))
