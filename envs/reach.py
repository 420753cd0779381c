"""Reach: move the end effector of horde's fixed-base 7-DoF arm (``assets/arm7.xml``) to a random target.

Observations: 7 joint angles [rad], 7 joint rates [rad/s], end-effector position [m], target position [m], target
minus end effector [m], the 7 previous actions. Actions: PD joint position targets, default pose + action x
``action_scale`` [rad] (``action_mode=pd``), or joint torques (``action_mode=torque``). 50 Hz control
(4 x 5 ms substeps), 200-step episodes (4 s); the target is drawn uniformly in a box once per episode (the
``target`` episode event of :data:`REACH_EVENTS`; ``retarget`` draws a new one every ``task.events.retarget``
seconds). The episode ends by time-out, when the physics health check flags the world, or on a termination term of
:data:`REACH_TERMINATIONS` that ``task.terminations`` lists (none by default).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import warp as wp

from horde.envs.articulated import ArticulatedTaskEnv
from horde.envs.core import TaskConfig
from horde.envs.episode import Episodes, clear_episode, close_step, weighted_reward
from horde.envs.obs_writer import observation_writer, observe_kernel, write_joint_state
from horde.envs.observations import ObsTerm, columns_of
from horde.envs import render
from horde.envs.registry import TaskSpec, register_task
from horde.envs.reach_terms import (  # noqa: F401  (re-exported: horde.envs.reach's names before the split)
    REACH_EVENTS, REACH_TERMINATIONS, REACH_TERMS, Arm, _distance, action_rate, distance, draw_target, joint_vel,
    precision, reach_observation_terms, reached)
from horde.envs.events import event_steps, interval_events_kernel, reset_events_kernel
from horde.envs.terms import term_values_torch
from horde.sim.actuation import ACTION_MODES, Actuation
from horde.sim.device import resolve_device
from horde.sim.diff import TapedRollout
from horde.sim.fields import bounded, bounded_list, choice
from horde.sim.newton_build import load_mjcf, set_joint_positions, site_frame
from horde.sim.newton_world import NewtonWorld, SimConfig
from horde.sim.spec import RobotEntity, WorldSpec, world_from_spec

ARM_MJCF = Path(__file__).resolve().parents[1] / "assets" / "arm7.xml"
JOINTS = ("shoulder_yaw", "shoulder_pitch", "arm_roll", "elbow", "forearm_roll", "wrist_pitch", "wrist_roll")
TERMS = ("distance", "precision", "action_rate", "joint_vel")
OBS_NAMES = columns_of(reach_observation_terms(JOINTS))
"""The observation's columns (:func:`reach_observation_terms`)."""


def _scales() -> dict[str, float]:
    return {"distance": -1.0, "precision": 1.0, "action_rate": -0.01, "joint_vel": -0.001}


def _sim() -> SimConfig:
    # MuJoCo-Warp. Measured on CPU, N=64, 5 ms x 4 substeps, 300 steps of random PD targets (x3, clipped):
    # mujoco 10.6k env-steps/s, stable; featherstone 3.3k, stable; xpbd 18k but every world non-finite within ~2
    # steps (it ignores joint armature, so the explicit PD law is unstable on the light wrist links).
    # auto: MuJoCo's C engine on the CPU (within 7e-6 of MuJoCo-Warp over 50 steps: tests/unit/test_mujoco_batch.py),
    # MuJoCo-Warp on a GPU
    return SimConfig(solver="auto")


@dataclass(kw_only=True)
class ReachConfig(TaskConfig):
    """Arm actuation, target box, reward scales."""

    episode_length: int = 200
    sim_dt: float = 0.005
    decimation: int = 4
    sim: SimConfig = field(default_factory=_sim)
    """Newton world: solver and its settings, health-check bounds."""
    action_mode: str = choice(ACTION_MODES, default="pd")
    """pd (position targets around default_joint_pos) or torque (action x action_scale N m)."""
    action_scale: list[float] = bounded_list([2.0, 1.5, 2.0, 1.5, 2.0, 1.5, 2.0], ge=0, same_length=True)
    """Per joint: target offset at action +1 [rad] (pd mode) or torque at action +1 [N m] (torque mode)."""
    joint_stiffness: list[float] = bounded_list([400.0, 400.0, 200.0, 200.0, 50.0, 50.0, 20.0], ge=0,
                                                same_length=True)
    """PD stiffness per joint [N m/rad]."""
    joint_damping: list[float] = bounded_list([40.0, 40.0, 20.0, 20.0, 4.0, 4.0, 1.0], ge=0, same_length=True)
    """PD damping per joint [N m s/rad]."""
    effort_limit: list[float] = bounded_list([150.0, 150.0, 80.0, 80.0, 20.0, 20.0, 10.0], ge=0, same_length=True)
    """Joint torques are clipped to +- this [N m]."""
    default_joint_pos: list[float] = field(default_factory=lambda: [0.0, 0.6, 0.0, 1.4, 0.0, 0.8, 0.0])
    """Joint angles of the initial pose and PD targets at action 0 [rad], in ``JOINTS`` order."""
    init_joint_pos_range: float = bounded(0.2, ge=0)
    """Initial joint angles are default +- this [rad]."""
    init_joint_vel_range: float = bounded(0.0, ge=0)
    """Initial joint rates are +- this [rad/s]."""
    target_low: list[float] = field(default_factory=lambda: [0.3, -0.35, 0.15])
    """Lower corner of the target box in the base frame [m]."""
    target_high: list[float] = field(default_factory=lambda: [0.65, 0.35, 0.65])
    """Upper corner of the target box in the base frame [m]."""
    reward_scales: dict[str, float] = field(default_factory=_scales)
    terminations: list[str] = field(default_factory=list)
    """Termination terms of REACH_TERMINATIONS (none by default: the episode ends by time-out; unstable physics always
    fails it); the share of finished episodes each one ended is logged as ``termination/<name>``."""
    termination_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the configured termination terms, by name, over their functions' defaults
    (``task.termination_params.<term>.<param>=v``; ``func`` makes a new term of a registered one)."""
    episode_events: list[str] = field(default_factory=lambda: ["target"])
    """Episode event terms of REACH_EVENTS, in order: drawn once per episode, before the world resets the env's
    state (``target``: the episode's target, uniform in the box)."""
    events: dict[str, float] = field(default_factory=dict)
    """Interval event terms of REACH_EVENTS by name, each with its interval [s] (run before the physics on the steps
    of an episode that are multiples of it). E.g. ``{retarget: 1.0}``: a new target every second."""
    reset_events: list[str] = field(default_factory=list)
    """Reset event terms of REACH_EVENTS, in order: run in every reset of an env after the world has reset its joint
    state and before its first observation."""
    event_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the configured event terms (any mode), by name, over their functions' defaults
    (``task.event_params.<term>.<param>=v``; ``func`` makes a new term of a registered one)."""

    @staticmethod
    def migrate(task: dict) -> dict:
        """A reach config saved before its fields moved (a run's config, a bundle's ``task_config``), as today's:
        ``precision_std`` (until 2026-12-06) is the ``precision`` term's ``std`` (``reward_params.precision.std``)."""
        if "precision_std" not in task:
            return task
        task = dict(task)
        std = task.pop("precision_std")
        params = {k: dict(v) for k, v in (task.get("reward_params") or {}).items()}
        params["precision"] = {"std": std, **params.get("precision", {})}
        return {**task, "reward_params": params}


@wp.struct
class ReachTask:
    """Per-task constants read by the kernels."""

    ee_body: int
    ee_offset: wp.vec3
    max_episode_length: int


@functools.lru_cache(maxsize=None)
def post_step_kernel(terms: tuple[wp.Function, ...], terminations: tuple[wp.Function, wp.Function],
                     episode_events: tuple[wp.Function, ...], write_obs: wp.Function) -> wp.Kernel:
    """The step's kernel for these reward terms, terminations (``(check, count)`` of
    :meth:`horde.envs.terms.TerminationSet.fused`), episode events (a finished env's next episode: its target) and
    observation writer (:func:`horde.envs.obs_writer.observation_writer`), fused with ``wp.static``."""
    check, count = terminations

    @wp.kernel(enable_backward=False, module="unique")
    def reach_post_step(
        t: ReachTask,
        x: Arm,
        joint_q: wp.array2d(dtype=float),
        ep: Episodes,
        causes: wp.array(dtype=wp.float64),
        rng: wp.array(dtype=wp.uint32),
        final_error: wp.array(dtype=float),
        state: wp.array2d(dtype=float),
        obs: wp.array2d(dtype=float),
        final_obs: wp.array2d(dtype=float),
    ):
        """Reward terms, terminations, time-out, statistics and observations of env i; a finished env's episode
        events (its new target)."""
        i = wp.tid()
        ok = not x.unstable[i]
        dist = _distance(x, i)
        hits, failed, timed_out = wp.static(check)(x, i)
        for k in range(wp.static(len(terms))):
            ep.terms[k, i] = wp.static(terms[k])(x, i)
        for k in range(x.actions.shape[1]):
            x.last_actions[i, k] = wp.clamp(x.actions[i, k], -1.0, 1.0)
        r = weighted_reward(ep, i)
        write_joint_state(i, ok, joint_q, state)
        rng[i] = wp.static(write_obs)(x, i, ok, rng[i], obs, 0)
        done = close_step(ep, i, r, failed or (not ok), wp.where(timed_out, 0, t.max_episode_length))
        if done:
            wp.static(count)(hits, causes)
            final_error[i] = wp.where(ok, dist, -1.0)
            for k in range(obs.shape[1]):
                final_obs[i, k] = obs[i, k]
            for k in range(x.actions.shape[1]):
                x.last_actions[i, k] = 0.0
            s = rng[i]
            for e in range(wp.static(len(episode_events))):
                s = wp.static(episode_events[e])(x, i, s)
            rng[i] = s

    return reach_post_step


@functools.lru_cache(maxsize=None)
def reset_episode_kernel(episode_events: tuple[wp.Function, ...]) -> wp.Kernel:
    """The explicit reset's task draws for these episode events (the target), fused with ``wp.static``."""

    @wp.kernel(enable_backward=False, module="unique")
    def reach_reset_episode(x: Arm, mask: wp.array(dtype=wp.bool), rng: wp.array(dtype=wp.uint32), ep: Episodes):
        """Explicit reset of the envs in ``mask``: counters cleared, the episode events (a new target)."""
        i = wp.tid()
        if mask[i]:
            clear_episode(ep, i)
            for k in range(x.last_actions.shape[1]):
                x.last_actions[i, k] = 0.0
            s = rng[i]
            for e in range(wp.static(len(episode_events))):
                s = wp.static(episode_events[e])(x, i, s)
            rng[i] = s

    return reach_reset_episode


def build_world(cfg: ReachConfig, num_envs: int, device: str) -> tuple[NewtonWorld, int, tuple[float, float, float]]:
    """The batched arm world of ``cfg``, and the end-effector site's (body index, offset in that body [m])."""
    robot = load_mjcf(str(ARM_MJCF), contact_ke=cfg.sim.contact_ke, solver=cfg.sim.solver)
    set_joint_positions(robot, JOINTS, cfg.default_joint_pos)
    ee_body, ee_offset = site_frame(robot, "ee")
    actuation = Actuation(mode=cfg.action_mode, scale=cfg.action_scale, offset=cfg.default_joint_pos,
                          stiffness=cfg.joint_stiffness, damping=cfg.joint_damping, effort_limit=cfg.effort_limit)
    nj = len(JOINTS)
    spec = WorldSpec(robot=RobotEntity(builder=robot, actuated_joints=tuple(JOINTS), actuation=actuation,
                                       q_noise=(cfg.init_joint_pos_range,) * nj,
                                       qd_noise=(cfg.init_joint_vel_range,) * nj),
                     ground=False, sim_dt=cfg.sim_dt, substeps=cfg.decimation)
    world = world_from_spec(spec, sim=cfg.sim, num_envs=num_envs, device=device)
    return world, ee_body, ee_offset


class ReachEnv(ArticulatedTaskEnv):
    """Batched 7-DoF arm reaching on a Newton solver (``cfg.sim.solver``)."""

    obs_names = OBS_NAMES
    action_names = JOINTS
    state_names = JOINTS
    term_set = REACH_TERMS
    """Where ``reward_scales``' keys are looked up."""
    termination_set = REACH_TERMINATIONS
    """Where ``terminations``' names are looked up."""
    event_set = REACH_EVENTS
    """Where ``episode_events``', ``events``' and ``reset_events``' names are looked up."""

    def __init__(self, cfg: ReachConfig, *, num_envs: int, device: str = "cpu", seed: int = 0) -> None:
        d = resolve_device(device).warp
        self.term_names = tuple(cfg.reward_scales)
        self.termination_names = tuple(cfg.terminations)
        params = cfg.event_params
        episode_events = REACH_EVENTS.resolve_mode(cfg.episode_events, "episode", "task.episode_events", params)
        events = REACH_EVENTS.resolve_mode(list(cfg.events), "interval", "task.events", params)
        reset_events = REACH_EVENTS.resolve_mode(cfg.reset_events, "reset", "task.reset_events", params)
        REACH_EVENTS.check_params([*cfg.episode_events, *cfg.events, *cfg.reset_events], params)
        steps = event_steps(cfg.events, cfg.sim_dt * cfg.decimation)
        self._obs_terms = reach_observation_terms(JOINTS)
        write_obs = observation_writer(Arm, self._obs_terms)
        self._post_step = post_step_kernel(REACH_TERMS.resolve(list(cfg.reward_scales), cfg.reward_params),
                                           REACH_TERMINATIONS.fused(cfg.terminations, cfg.termination_params),
                                           episode_events, write_obs)
        self._observe_kernel = observe_kernel(Arm, observation_writer(Arm, self._obs_terms, fill=True))
        self._reset_episode = reset_episode_kernel(episode_events)
        self._pre_step = interval_events_kernel(Arm, events) if events else None
        reset_kernel = reset_events_kernel(Arm, reset_events) if reset_events else None
        if reset_kernel is not None:
            self._reset_events = lambda mask, rng: wp.launch(reset_kernel, self.num_envs, device=self.dev.warp,
                                                             inputs=[self.arm, mask], outputs=[rng])
        self.world, ee_body, ee_offset = build_world(cfg, num_envs, d)
        self.world.warm_up()
        self.action_type = "position_target" if cfg.action_mode == "pd" else "torque"
        self.action_unit = "rad" if cfg.action_mode == "pd" else "N m"
        t = self._task = ReachTask()
        t.ee_body, t.ee_offset = ee_body, wp.vec3(*ee_offset)
        t.max_episode_length = cfg.episode_length
        with wp.ScopedDevice(d):
            self._event_steps = wp.array(steps or [1], dtype=int)
            self._last_actions = wp.zeros((num_envs, len(JOINTS)), dtype=float)
            self._target = wp.zeros(num_envs, dtype=wp.vec3)
            self._final_error = wp.full(num_envs, -1.0, dtype=float)
        self.target = wp.to_torch(self._target)
        """Target positions [m], world frame, shape [num_envs, 3]."""
        self.final_error = wp.to_torch(self._final_error)
        """End-effector distance to the target at the last step of each env's last finished episode [m] (-1: none)."""
        self.step_kernels = ((self._post_step, self._observe_kernel) + self.world.kernels
                             + tuple(k for k in (self._pre_step, reset_kernel) if k is not None))
        super().__init__(cfg, num_envs=num_envs, device=device, seed=seed)

    def _bind(self) -> None:
        t = self._task
        x = self.arm = Arm()
        """The reward terms' view of the state (:class:`Arm`)."""
        x.ee_body, x.ee_offset = t.ee_body, t.ee_offset
        x.actions, x.last_actions, x.target = self._actions, self._last_actions, self._target
        w = self.world.arrays
        x.joint_qd, x.body_q, x.unstable = w.joint_qd, w.body_q, w.unstable
        x.joint_q = w.joint_q
        x.target_low, x.target_high = wp.vec3(*self.cfg.target_low), wp.vec3(*self.cfg.target_high)

    def action_scale(self) -> list[float]:
        return list(self.cfg.action_scale)

    def observation_terms(self) -> tuple[ObsTerm, ...]:
        """Joint angles (absolute) and rates, end effector, target and their difference, the last actions
        (:func:`reach_observation_terms`: what the step's kernels write)."""
        return self._obs_terms

    def observation_sources(self) -> dict[str, torch.Tensor]:
        a, nj, ee = self.world.arrays, len(JOINTS), self.ee_position()
        return {"joint_pos": wp.to_torch(a.joint_q)[:, :nj], "joint_vel": wp.to_torch(a.joint_qd)[:, :nj],
                "ee_pos": ee, "goal_pos": self.target, "goal_rel_ee": self.target - ee,
                "last_action": wp.to_torch(self._last_actions)}

    def ee_position(self) -> torch.Tensor:
        """End-effector positions [num_envs, 3] [m] (a new tensor; host-side helper for evaluation)."""
        body = self.world.body_pose[:, self._task.ee_body]
        p, q = body[:, :3], body[:, 3:]  # quaternion xyzw
        off = torch.tensor(list(self._task.ee_offset), device=self.device).expand_as(p)
        u, w = q[:, :3], q[:, 3:]
        return p + off + 2.0 * torch.cross(u, torch.cross(u, off, dim=-1) + w * off, dim=-1)

    def _pre_physics(self) -> None:
        if self._pre_step is not None:
            wp.launch(self._pre_step, self.num_envs, device=self.dev.warp,
                      inputs=[self.arm, self._episode_length, self._event_steps], outputs=[self._rng])

    def _post_physics(self) -> None:
        wp.launch(self._post_step, self.num_envs, device=self.dev.warp, inputs=[
            self._task, self.arm, self.world.arrays.joint_q, self.episodes(), self._causes, self._rng],
            outputs=[self._final_error, self._state, self._obs, self._final_obs])

    def _observe(self, mask: wp.array) -> None:
        wp.launch(self._observe_kernel, self.num_envs, device=self.dev.warp, inputs=[self.arm, mask, self._rng],
                  outputs=[self._state, self._obs])

    def _reset_task(self) -> None:
        wp.launch(self._reset_episode, self.num_envs, device=self.dev.warp,
                  inputs=[self.arm, self._reset_mask, self._rng, self.episodes()])

    def _task_state(self) -> dict[str, torch.Tensor]:
        return {"target": self.target}


# --- differentiable model: the arm on Featherstone (horde.sim.diff_articulation), the task's terms in torch ----------
NJ = len(JOINTS)
DIFF_STATE = {"joint_q": slice(0, NJ), "joint_qd": slice(NJ, 2 * NJ), "ee": slice(2 * NJ, 2 * NJ + 3),
              "target": slice(2 * NJ + 3, 2 * NJ + 6), "last_actions": slice(2 * NJ + 6, 3 * NJ + 6),
              "prev_actions": slice(3 * NJ + 6, 4 * NJ + 6)}
"""Columns of reach's differentiable state [N, 34]: joint angles [rad], rates [rad/s], end-effector position [m],
target [m] (world frame), the last clipped actions (observed), and the clipped actions of the step before (what
:data:`Arm`'s ``last_actions`` holds while the reward terms run: the action rate is their difference)."""
DIFF_STATE_DIM = 4 * NJ + 6


class ReachRollout(TapedRollout):
    """reach's differentiable control step on the :data:`DIFF_STATE` layout: the arm's physics through
    :class:`horde.sim.diff_articulation.ArticulationDiffRollout`, the task's own columns in torch (``rollout``,
    with its gradient truncation, is :class:`horde.sim.diff.TapedRollout`'s)."""

    state_dim = DIFF_STATE_DIM
    action_dim = NJ

    def __init__(self, physics) -> None:
        self.physics = physics
        self.device = physics.device
        self.dev = physics.dev

    @property
    def bytes_per_env_step(self) -> int:
        """Memory a control step holds per env until backward (the physics' Warp buffers dominate)."""
        return self.physics.bytes_per_env_step + 8 * (self.state_dim - self.physics.state_dim)

    def step(self, state: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Next state [N, 34] after one control step under ``actions`` [N, 7] in [-1, 1]."""
        if state.shape[1:] != (self.state_dim,):
            raise ValueError(f"expected state [N, {self.state_dim}], got {tuple(state.shape)}")
        arm = self.physics.step(state[:, : DIFF_STATE["ee"].stop], actions)
        a = actions.clamp(-1.0, 1.0)
        return torch.cat([arm, state[:, DIFF_STATE["target"]], a, state[:, DIFF_STATE["last_actions"]]], dim=-1)


def obs_from_state(state: torch.Tensor) -> torch.Tensor:
    """Observations [N, 30] of differentiable states [N, 34], in ``OBS_NAMES`` order (:func:`reach_observation_terms`)."""
    ee, target = state[:, DIFF_STATE["ee"]], state[:, DIFF_STATE["target"]]
    return torch.cat([state[:, DIFF_STATE["joint_q"]], state[:, DIFF_STATE["joint_qd"]], ee, target, target - ee,
                      state[:, DIFF_STATE["last_actions"]]], dim=-1)


_IDENTITY_ROTATION = torch.tensor([0.0, 0.0, 0.0, 1.0])


def reward_terms_from_state(state: torch.Tensor, actions: torch.Tensor, cfg: ReachConfig) -> dict[str, torch.Tensor]:
    """Unscaled reward terms, each [N], of post-step states [N, 34] and this step's actions, in ``reward_scales``'
    order: reach's own Warp term functions (:data:`REACH_TERMS`, as ``reach_post_step`` calls them) on an
    :class:`Arm` built from the states, differentiable (:func:`horde.envs.terms.term_values_torch`); a healthy
    world. The end effector is a body of its own at the site, as in :class:`ReachTwin`."""
    names = tuple(cfg.reward_scales)
    ee = state[:, DIFF_STATE["ee"]]
    body_q = torch.cat([ee, _IDENTITY_ROTATION.to(ee).expand(ee.shape[0], 4)], dim=-1).unsqueeze(1)
    values = term_values_torch(Arm, REACH_TERMS.resolve(names, cfg.reward_params), {
        "actions": (actions, float), "last_actions": (state[:, DIFF_STATE["prev_actions"]], float),
        "joint_qd": (state[:, DIFF_STATE["joint_qd"]], float), "body_q": (body_q, wp.transform),
        "target": (state[:, DIFF_STATE["target"]], wp.vec3), "joint_q": (state[:, DIFF_STATE["joint_q"]], float),
        "unstable": (torch.zeros(ee.shape[0], dtype=torch.bool, device=ee.device), wp.bool)},
        {"ee_body": 0, "ee_offset": wp.vec3(0.0, 0.0, 0.0)})
    return dict(zip(names, values))


def failed_from_state(state: torch.Tensor, cfg: ReachConfig) -> torch.Tensor:
    """Failure, bool [N], of post-step states [N, 34]: a non-finite state, or a failure among the configured
    termination terms (the env's own Warp functions, :data:`REACH_TERMINATIONS`, on an :class:`Arm` built from the
    states as :func:`reward_terms_from_state` builds it; none by default)."""
    bad = ~torch.isfinite(state).all(dim=-1)
    if not cfg.terminations:
        return bad
    state = state.detach()
    ee = state[:, DIFF_STATE["ee"]]
    body_q = torch.cat([ee, _IDENTITY_ROTATION.to(ee).expand(ee.shape[0], 4)], dim=-1).unsqueeze(1)
    (failed,) = term_values_torch(Arm, (REACH_TERMINATIONS.failure_term(cfg.terminations, cfg.termination_params),), {
        "actions": (state[:, DIFF_STATE["last_actions"]], float),  # the step's (clipped) actions
        "last_actions": (state[:, DIFF_STATE["prev_actions"]], float),
        "joint_qd": (state[:, DIFF_STATE["joint_qd"]], float), "body_q": (body_q, wp.transform),
        "joint_q": (state[:, DIFF_STATE["joint_q"]], float), "target": (state[:, DIFF_STATE["target"]], wp.vec3),
        "unstable": (bad, wp.bool)}, {"ee_body": 0, "ee_offset": wp.vec3(0.0, 0.0, 0.0)})
    return bad | (failed > 0.5)


def sample_states(cfg: ReachConfig, rollout: ReachRollout, num_envs: int, generator: torch.Generator) -> torch.Tensor:
    """Initial states [num_envs, 28] from the env's reset distribution (drawn with torch, not Warp's streams):
    default pose + uniform noise, rates +- ``init_joint_vel_range``, a target uniform in the box, no last action."""
    dev = rollout.device

    def uniform(lo, hi, cols: int) -> torch.Tensor:
        u = torch.rand(num_envs, cols, generator=generator, device=dev)
        return torch.as_tensor(lo, dtype=torch.float32, device=dev) + u * (torch.as_tensor(hi, device=dev) - lo)

    q0 = torch.tensor(cfg.default_joint_pos, dtype=torch.float32, device=dev)
    q = q0 + uniform(-cfg.init_joint_pos_range, cfg.init_joint_pos_range, NJ)
    qd = uniform(-cfg.init_joint_vel_range, cfg.init_joint_vel_range, NJ)
    target = uniform(torch.tensor(cfg.target_low, device=dev), torch.tensor(cfg.target_high, device=dev), 3)
    ee = rollout.physics.sites(q)
    zeros = torch.zeros(num_envs, 2 * NJ, device=dev)  # no last action, none before it
    return torch.cat([q, qd, ee, target, zeros], dim=-1)


def diff_task(cfg: ReachConfig, device: str = "cpu"):
    """The differentiable model of this task (a :class:`horde.sim.diff.DiffTask`): the arm on Featherstone, whose
    gradients match finite differences (``tests/unit/test_diff_reach.py``); MuJoCo-Warp, the env's default solver, gives
    none. Train and evaluate with ``task.sim.solver=featherstone`` for the same dynamics."""
    from horde.sim.diff import DiffTask
    from horde.sim.diff_articulation import ArticulationDiffRollout

    robot = load_mjcf(str(ARM_MJCF), contact_ke=cfg.sim.contact_ke, solver="featherstone")
    set_joint_positions(robot, JOINTS, cfg.default_joint_pos)
    ee_body, ee_offset = site_frame(robot, "ee")
    actuation = Actuation(mode=cfg.action_mode, scale=cfg.action_scale, offset=cfg.default_joint_pos,
                          stiffness=cfg.joint_stiffness, damping=cfg.joint_damping, effort_limit=cfg.effort_limit)
    physics = ArticulationDiffRollout(robot, actuated_joints=JOINTS, actuation=actuation, sim_dt=cfg.sim_dt,
                                      decimation=cfg.decimation, sites=[(ee_body, ee_offset)], device=device)
    rollout = ReachRollout(physics)
    return DiffTask(
        rollout=rollout, obs=obs_from_state, reward_terms=lambda s, a: reward_terms_from_state(s, a, cfg),
        reward_scales=dict(cfg.reward_scales),
        failed=lambda s: failed_from_state(s, cfg),
        sample_state=lambda n, g: sample_states(cfg, rollout, n, g), episode_length=cfg.episode_length,
        env_settings={"sim.solver": "featherstone"},
    )


# --- the MuJoCo sim-to-sim twin (horde.deploy.sim2sim) ---------------------------------------------------------------
class ReachTwin:
    """Reach: end effector (site ``ee``) to a target drawn once per episode; no failure but non-finite physics and
    the configured termination terms. MuJoCo's state is copied into a one-env :class:`Arm` on the CPU and the task's
    own Warp term functions (``reward_scales``' keys, ``terminations``) score it: a term added to
    :data:`REACH_TERMS` or :data:`REACH_TERMINATIONS` needs no edit here. The target is drawn with numpy from the
    same box (the ``target`` event's; events of a config's own do not run in the twin)."""

    sources = ("ee_pos", "goal_pos", "goal_rel_ee")
    """The observation sources it reads from MuJoCo (``raw``); joints and last actions come from the sim2sim loop."""
    per_second = False
    """Reward scales apply per control step as they are."""

    @staticmethod
    def load_model(cfg: dict):
        """horde's arm MJCF in MuJoCo."""
        import mujoco

        return mujoco.MjModel.from_xml_path(str(ARM_MJCF))

    def __init__(self, model, cfg: dict, control_dt: float) -> None:
        from horde.envs.terms import term_values_kernel

        cfg = ReachConfig.migrate(cfg)  # a bundle exported before precision_std became the term's std
        self.cfg, self.site = cfg, model.site("ee").id
        self.target, self.final_error = np.zeros(3), float("nan")
        self.names = tuple(cfg["reward_scales"])
        # the reward terms, then (where the config lists terminations) 1 on a failure among them
        ends = list(cfg.get("terminations") or ())
        fail = (REACH_TERMINATIONS.failure_term(ends, cfg.get("termination_params")),) if ends else ()
        self.kernel = term_values_kernel(Arm, REACH_TERMS.resolve(self.names, cfg.get("reward_params")) + fail)
        nj = len(JOINTS)
        with wp.ScopedDevice("cpu"):
            x = self.x = Arm()
            # the end effector as a body of its own at the site, no offset: transform_point gives the site
            x.ee_body, x.ee_offset = 0, wp.vec3(0.0, 0.0, 0.0)
            x.actions, x.last_actions = wp.zeros((1, nj), dtype=float), wp.zeros((1, nj), dtype=float)
            x.joint_qd, x.body_q = wp.zeros((1, nj), dtype=float), wp.zeros((1, 1), dtype=wp.transform)
            x.target, x.unstable = wp.zeros(1, dtype=wp.vec3), wp.zeros(1, dtype=wp.bool)
            x.joint_q = wp.zeros((1, nj), dtype=float)
            x.target_low, x.target_high = wp.vec3(*cfg["target_low"]), wp.vec3(*cfg["target_high"])
            self.out = wp.zeros((len(self.names) + len(fail), 1), dtype=float)

    def reset(self, model, data, joints: "horde.deploy.sim2sim.Joints", rng: np.random.Generator) -> None:
        cfg = self.cfg
        joints.set_noisy_default(data, cfg["init_joint_pos_range"], cfg.get("init_joint_vel_range", 0.0), rng)
        self.target = rng.uniform(cfg["target_low"], cfg["target_high"])

    def raw(self, data) -> dict[str, np.ndarray]:
        ee = data.site_xpos[self.site].copy()
        return {"ee_pos": ee, "goal_pos": self.target, "goal_rel_ee": self.target - ee}

    def terms(self, model, data, joints: "horde.deploy.sim2sim.Joints", a: np.ndarray, last: np.ndarray, tau: np.ndarray
              ) -> tuple[dict[str, float], bool]:
        ee = data.site_xpos[self.site]
        self.final_error = float(np.linalg.norm(self.target - ee))
        x = self.x
        x.actions.numpy()[0], x.last_actions.numpy()[0], x.joint_qd.numpy()[0] = a, last, joints.qd(data)
        x.joint_q.numpy()[0] = data.qpos[:len(JOINTS)]  # the arm's MJCF has these hinges only, in this order
        x.body_q.numpy()[0, 0] = (*ee, 0.0, 0.0, 0.0, 1.0)
        x.target.numpy()[0] = self.target
        x.unstable.numpy()[0] = not bool(np.isfinite(data.qpos).all() and np.isfinite(data.qvel).all())
        wp.launch(self.kernel, 1, inputs=[x], outputs=[self.out], device="cpu")
        out = self.out.numpy()[:, 0]
        return dict(zip(self.names, (float(v) for v in out))), bool(out[len(self.names):].sum() > 0.5)

    def metrics(self) -> dict[str, float]:
        """Per episode; averaged over episodes under the same key."""
        return {"final_error_mean_m": self.final_error}


register_task("reach", TaskSpec(
    twin=ReachTwin,
    env_cls=ReachEnv,
    config=ReachConfig(),
    description="horde's 7-DoF arm (assets/arm7.xml): bring the end effector to a random target in a box",
    diff_task=diff_task,
    renderer=render.draw_reach,
))
