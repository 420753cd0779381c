"""Floating-base locomotion on Newton, shared by the ant and the humanoid: run forward along +x.

A robot's own file holds what differs (its MJCF, joint names, gears, heights, reward scales and config); this module
holds what is the same. Observations (:func:`obs_names`): root height [m], gravity direction in the root frame, root
linear [m/s] and angular [rad/s] velocity in the root frame, joint angles [rad], joint rates [rad/s], the previous
actions. Reward terms (:data:`LOCOMOTION_TERMS`, Warp functions over :class:`Runner`, fused into the step kernel;
``reward_scales`` names them): root forward velocity [m/s], alive (1 until failure), control cost (sum of squared
clipped actions), terminated (1 on failure). Termination terms (a robot's own :class:`TerminationSet` over
:class:`Runner`, from :func:`locomotion_terminations`; ``terminations`` names them, ``termination_params`` sets
their thresholds): ``torso_low`` (the root below ``height``) and ``upside_down`` (its up axis's world z below
``min_up``); the physics health check always fails an episode. Event terms (:data:`LOCOMOTION_EVENTS`, shared by
the robots): interval events (``task.events``: name -> seconds; ``kick`` on offer) and reset events
(``task.reset_events``; ``start_kick``), with ``task.event_params``.

The env reads these config fields (each task's config declares them with its robot's defaults): ``sim``, ``sim_dt``,
``decimation``, ``episode_length``, ``action_mode``, ``action_scale``, ``joint_stiffness``, ``joint_damping``,
``effort_limit``, ``default_joint_pos``, ``init_joint_pos_range``, ``init_joint_vel_range``, ``terminations``,
``termination_params``, ``events``, ``reset_events``, ``event_params``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import torch
import warp as wp

from horde.envs.articulated import ArticulatedTaskEnv
from horde.envs.core import TaskConfig
from horde.envs.episode import Episodes, clear_episode, close_step, weighted_reward
from horde.envs.obs_writer import observation_writer, observe_kernel, write_joint_state
from horde.envs.observations import ObsTerm, columns_of, quat_rotate_inverse
from horde.envs.events import EventSet, configured_events, interval_events_kernel, reset_events_kernel
from horde.envs.terms import TerminationSet, TermSet
from horde.sim.actuation import Actuation
from horde.sim.device import resolve_device
from horde.sim.newton_build import joint_dof_layout, load_mjcf
from horde.sim.newton_world import NewtonWorld
from horde.sim.spec import RobotEntity, WorldSpec, world_from_spec

if TYPE_CHECKING:
    import newton

__all__ = ["LOCOMOTION_EVENTS", "LOCOMOTION_TERMS", "ROOT_COORDS", "ROOT_DOFS", "TERMINATIONS", "TERMS",
           "LocomotionEnv", "LocomotionTask",
           "Runner", "build_locomotion_world", "locomotion_terminations", "migrate_termination_fields", "obs_names",
           "torso_low", "upside_down"]

TERMS = ("forward_vel", "alive", "ctrl", "terminated")


def migrate_termination_fields(task: dict) -> dict:
    """An ant or humanoid config saved before its fields moved, as today's: ``termination_height`` and ``min_up``
    (until 2026-12-06) are the ``torso_low`` term's ``height`` and the ``upside_down`` term's ``min_up``."""
    moved = {"termination_height": ("torso_low", "height"), "min_up": ("upside_down", "min_up")}
    if not set(moved) & set(task):
        return task
    task = dict(task)
    params = {k: dict(v) for k, v in (task.get("termination_params") or {}).items()}
    for old, (term, param) in moved.items():
        if old in task:
            params[term] = {param: task.pop(old), **params.get(term, {})}
    return {**task, "termination_params": params}
"""The default reward terms, in statistics order."""
TERMINATIONS = ("torso_low", "upside_down")
"""The default termination terms."""
ROOT_COORDS = ("root_x", "root_y", "root_z", "root_qx", "root_qy", "root_qz", "root_qw")
ROOT_DOFS = 6


def obs_names(joints: Sequence[str]) -> tuple[str, ...]:
    """Observation columns of a locomotion task whose actuated joints are ``joints``
    (:func:`locomotion_observation_terms`)."""
    return columns_of(locomotion_observation_terms(tuple(joints)))


@wp.struct
class LocomotionTask:
    """Per-task constants read by the kernels."""

    root: int
    q0: int
    qd0: int
    max_episode_length: int


@wp.struct
class Runner:
    """What a locomotion reward term reads of env ``i`` (arrays ``[num_envs, ...]``)."""

    root: int
    """Body index of the floating base."""
    actions: wp.array2d(dtype=float)
    """Actions of this step (unclipped)."""
    body_qd: wp.array2d(dtype=wp.spatial_vector)
    """World-frame body twists (COM linear [m/s], angular [rad/s])."""
    body_q: wp.array2d(dtype=wp.transform)
    """World-frame body poses (position [m], quaternion xyzw)."""
    unstable: wp.array(dtype=wp.bool)
    failed: wp.array(dtype=wp.bool)
    """The episode fails on this step (written before the reward terms run)."""
    joint_q: wp.array2d(dtype=float)
    """Coordinates: the root's 7 (position [m], quaternion xyzw), then the actuated joints' [rad] from ``q0``."""
    joint_qd: wp.array2d(dtype=float)
    """Velocities: the root's 6, then the actuated joints' [rad/s] from ``qd0``."""
    q0: int
    qd0: int
    root_vel_base: wp.array2d(dtype=float)
    """The root's linear [m/s] and angular [rad/s] velocity in its own frame (zeros while unsound)."""
    last_actions: wp.array2d(dtype=float)
    """Clipped actions of the previous step."""


LOCOMOTION_TERMS = TermSet("locomotion", Runner)
"""Reward terms of the ant and the humanoid: Warp functions ``(x: Runner, i: int) -> float``."""


# --- observation terms: (x, i, k) -> column k's raw value, written by horde.envs.obs_writer ------------------------
@wp.func
def _obs_base_height(x: Runner, i: int, k: int) -> float:
    return wp.transform_get_translation(x.body_q[i, x.root])[2]


@wp.func
def _obs_gravity(x: Runner, i: int, k: int) -> float:
    return wp.quat_rotate_inv(wp.transform_get_rotation(x.body_q[i, x.root]), wp.vec3(0.0, 0.0, -1.0))[k]


@wp.func
def _obs_lin_vel(x: Runner, i: int, k: int) -> float:
    return x.root_vel_base[i, k]


@wp.func
def _obs_ang_vel(x: Runner, i: int, k: int) -> float:
    return x.root_vel_base[i, 3 + k]


@wp.func
def _obs_joint_pos(x: Runner, i: int, k: int) -> float:
    return x.joint_q[i, x.q0 + k]


@wp.func
def _obs_joint_vel(x: Runner, i: int, k: int) -> float:
    return x.joint_qd[i, x.qd0 + k]


@wp.func
def _obs_last_action(x: Runner, i: int, k: int) -> float:
    return x.last_actions[i, k]


def locomotion_observation_terms(joints: tuple[str, ...]) -> tuple[ObsTerm, ...]:
    """Torso height, gravity in the torso frame, base velocities, joint angles (absolute) and rates, the last
    actions; while a world is unsound the pose columns read 0 (its velocities are zeroed by the health check)."""
    xyz = ("x", "y", "z")
    return (ObsTerm("base_height", source="base_height", columns=("torso_z",), unit="m", frame="world",
                    func=_obs_base_height, fallback=0.0),
            ObsTerm("projected_gravity", source="projected_gravity", columns=tuple(f"gravity_{a}" for a in xyz),
                    unit="1", frame="base", func=_obs_gravity, fallback=0.0),
            ObsTerm("base_lin_vel", source="base_lin_vel", columns=tuple(f"lin_vel_{a}" for a in xyz), unit="m/s",
                    frame="base", func=_obs_lin_vel),
            ObsTerm("base_ang_vel", source="base_ang_vel", columns=tuple(f"ang_vel_{a}" for a in xyz),
                    unit="rad/s", frame="base", func=_obs_ang_vel),
            ObsTerm("joint_pos", source="joint_pos", columns=tuple(f"pos_{j}" for j in joints), unit="rad",
                    frame="joint", joints=joints, func=_obs_joint_pos, fallback=0.0),
            ObsTerm("joint_vel", source="joint_vel", columns=tuple(f"vel_{j}" for j in joints), unit="rad/s",
                    frame="joint", joints=joints, func=_obs_joint_vel, fallback=0.0),
            ObsTerm("last_action", source="last_action", columns=tuple(f"last_action_{j}" for j in joints),
                    unit="1", joints=joints, func=_obs_last_action))


@LOCOMOTION_TERMS.term
def forward_vel(x: Runner, i: int) -> float:
    """Root velocity along +x [m/s] (world frame)."""
    return wp.where(x.unstable[i], 0.0, wp.spatial_top(x.body_qd[i, x.root])[0])


@LOCOMOTION_TERMS.term
def alive(x: Runner, i: int) -> float:
    """1 on every step that does not fail."""
    return 1.0 - wp.where(x.failed[i], 1.0, 0.0)


@LOCOMOTION_TERMS.term
def ctrl(x: Runner, i: int) -> float:
    """sum of squared clipped actions."""
    c = float(0.0)
    for k in range(x.actions.shape[1]):
        a = wp.clamp(x.actions[i, k], -1.0, 1.0)
        c += a * a
    return c


@LOCOMOTION_TERMS.term
def terminated(x: Runner, i: int) -> float:
    """1 on the step the episode fails."""
    return wp.where(x.failed[i], 1.0, 0.0)


@wp.func
def torso_low(x: Runner, i: int, height: float = 0.31) -> bool:
    """The root (torso) is lower than ``height`` [m] above the world's origin."""
    return wp.transform_get_translation(x.body_q[i, x.root])[2] < height


@wp.func
def upside_down(x: Runner, i: int, min_up: float = 0.0) -> bool:
    """The root's up axis has a world-z component below ``min_up`` (0: upside down; -1: never)."""
    rot = wp.transform_get_rotation(x.body_q[i, x.root])
    return 1.0 - 2.0 * (rot[0] * rot[0] + rot[1] * rot[1]) < min_up


LOCOMOTION_EVENTS = EventSet("locomotion event", Runner)
"""Event terms of the ant and the humanoid: Warp functions ``(x: Runner, i: int, s: wp.uint32) -> wp.uint32``
changing env ``i``'s state with random numbers from its stream ``s`` (``task.events`` by interval,
``task.reset_events`` at every reset, ``task.event_params`` their parameters); yours is ``@LOCOMOTION_EVENTS.term``
(``mode="reset"`` for a reset event)."""


@wp.func
def _kick(x: Runner, i: int, s: wp.uint32, speed: float) -> wp.uint32:
    x.joint_qd[i, 0] = x.joint_qd[i, 0] + wp.randf(s, -1.0, 1.0) * speed
    x.joint_qd[i, 1] = x.joint_qd[i, 1] + wp.randf(s, -1.0, 1.0) * speed
    return s


@LOCOMOTION_EVENTS.term(bounds={"speed": {"ge": 0}})
def kick(x: Runner, i: int, s: wp.uint32, speed: float = 0.5) -> wp.uint32:
    """A push: U(-speed, speed) [m/s] added to the root's x and y velocity (world frame), on every ``task.events``
    interval (``task.events: {kick: 2.0}``, ``task.event_params: {kick: {speed: 1.0}}``)."""
    return _kick(x, i, s, speed)


@LOCOMOTION_EVENTS.term(mode="reset", bounds={"speed": {"ge": 0}})
def start_kick(x: Runner, i: int, s: wp.uint32, speed: float = 0.5) -> wp.uint32:
    """:func:`kick` at every reset, after the world has drawn the initial state (``task.reset_events=[start_kick]``):
    episodes start moving."""
    return _kick(x, i, s, speed)


def locomotion_terminations(robot: str, *, height: float) -> TerminationSet:
    """The termination terms of one locomotion robot: :func:`torso_low` with the robot's ``height`` [m] and
    :func:`upside_down`, failures (``task.termination_params.torso_low.height=0.25``); a user's own term joins the
    set with ``@ANT_TERMINATIONS.term``."""
    ends = TerminationSet(f"{robot} termination", Runner)
    ends.term(torso_low, params={"height": height})
    ends.term(upside_down, bounds={"min_up": {"ge": -1.0, "le": 1.0}})
    return ends


@functools.lru_cache(maxsize=None)
def post_step_kernel(terms: tuple[wp.Function, ...], terminations: tuple[wp.Function, wp.Function],
                     write_obs: wp.Function) -> wp.Kernel:
    """The step's kernel for these reward terms and terminations (``(check, count)`` of
    :meth:`horde.envs.terms.TerminationSet.fused`), fused with ``wp.static``."""
    check, count = terminations

    @wp.kernel(enable_backward=False, module="unique")
    def locomotion_post_step(
        t: LocomotionTask,
        x: Runner,
        joint_q: wp.array2d(dtype=float),
        joint_qd: wp.array2d(dtype=float),
        body_q: wp.array2d(dtype=wp.transform),
        root_vel_base: wp.array2d(dtype=float),
        ep: Episodes,
        causes: wp.array(dtype=wp.float64),
        rng: wp.array(dtype=wp.uint32),
        last_actions: wp.array2d(dtype=float),
        state: wp.array2d(dtype=float),
        obs: wp.array2d(dtype=float),
        final_obs: wp.array2d(dtype=float),
    ):
        """Failure, reward terms, time-out, statistics and observations of env i (its physics reset comes next)."""
        i = wp.tid()
        ok = not x.unstable[i]
        hits, failed, timed_out = wp.static(check)(x, i)
        failed = failed or (not ok)
        x.failed[i] = failed
        for k in range(wp.static(len(terms))):
            ep.terms[k, i] = wp.static(terms[k])(x, i)
        for k in range(x.actions.shape[1]):
            last_actions[i, k] = wp.clamp(x.actions[i, k], -1.0, 1.0)
        r = weighted_reward(ep, i)
        write_joint_state(i, ok, joint_q, state)
        rng[i] = wp.static(write_obs)(x, i, ok, rng[i], obs, 0)
        done = close_step(ep, i, r, failed, wp.where(timed_out, 0, t.max_episode_length))
        if done:
            wp.static(count)(hits, causes)
            for k in range(obs.shape[1]):
                final_obs[i, k] = obs[i, k]
            for k in range(x.actions.shape[1]):
                last_actions[i, k] = 0.0

    return locomotion_post_step


@wp.kernel(enable_backward=False)
def locomotion_reset_episode(
    mask: wp.array(dtype=wp.bool),
    ep: Episodes,
    last_actions: wp.array2d(dtype=float),
):
    """Explicit reset of the episode counters of the envs in ``mask``."""
    i = wp.tid()
    if mask[i]:
        clear_episode(ep, i)
        for k in range(last_actions.shape[1]):
            last_actions[i, k] = 0.0


# --- model ---------------------------------------------------------------------------------------------------------
def build_locomotion_world(cfg: TaskConfig, *, mjcf: str, joints: Sequence[str], num_envs: int, device: str,
                           root_height: float | None = None) -> NewtonWorld:
    """The batched world of a floating-base robot from ``mjcf`` (its floor ignored) over a ground plane;
    ``root_height`` [m] overrides the MJCF's initial root height."""
    robot = load_mjcf(mjcf, contact_ke=cfg.sim.contact_ke, solver=cfg.sim.solver)
    q_idx, _ = joint_dof_layout(robot, joints)
    if len(cfg.default_joint_pos) != len(joints):
        raise ValueError(f"{len(cfg.default_joint_pos)} default joint positions for {len(joints)} joints")
    for qi, v in zip(q_idx, cfg.default_joint_pos):
        robot.joint_q[qi] = float(v)
    if root_height is not None:
        robot.joint_q[2] = float(root_height)
    expected = len(ROOT_COORDS) + len(joints)
    if robot.joint_coord_count != expected:
        raise ValueError(f"{mjcf} has {robot.joint_coord_count} coordinates; this task expects {expected}")
    nj = len(joints)
    actuation = Actuation(mode=cfg.action_mode, scale=cfg.action_scale, offset=cfg.default_joint_pos,
                          stiffness=cfg.joint_stiffness, damping=cfg.joint_damping, effort_limit=cfg.effort_limit)
    qr, vr = cfg.init_joint_pos_range, cfg.init_joint_vel_range
    spec = WorldSpec(robot=RobotEntity(builder=robot, actuated_joints=tuple(joints), actuation=actuation,
                                       q_noise=(0.0,) * len(ROOT_COORDS) + (qr,) * nj,
                                       qd_noise=(vr,) * (ROOT_DOFS + nj)),
                     sim_dt=cfg.sim_dt, substeps=cfg.decimation)
    world = world_from_spec(spec, sim=cfg.sim, num_envs=num_envs, device=device)
    return world


# --- the env -------------------------------------------------------------------------------------------------------
class LocomotionEnv(ArticulatedTaskEnv):
    """A batched floating-base robot on a Newton solver (``cfg.sim.solver``); subclasses give the robot."""

    joints: ClassVar[tuple[str, ...]]
    """Actuated joints, in action and observation order."""
    term_set = LOCOMOTION_TERMS
    """Where ``reward_scales``' keys are looked up."""
    termination_set: ClassVar[TerminationSet]
    """Where ``terminations``' names are looked up (the robot's own set: :func:`locomotion_terminations`)."""
    event_set = LOCOMOTION_EVENTS
    """Where ``events``' and ``reset_events``' names are looked up."""

    def __init__(self, cfg: TaskConfig, *, num_envs: int, device: str = "cpu", seed: int = 0) -> None:
        d = resolve_device(device).warp
        self.term_names = tuple(cfg.reward_scales)
        self.termination_names = tuple(cfg.terminations)
        events, reset_events, steps = configured_events(LOCOMOTION_EVENTS, cfg)
        self._pre_step = interval_events_kernel(Runner, events) if events else None
        reset_kernel = reset_events_kernel(Runner, reset_events) if reset_events else None
        if reset_kernel is not None:
            self._reset_events = lambda mask, rng: wp.launch(reset_kernel, self.num_envs, device=self.dev.warp,
                                                             inputs=[self.runner, mask], outputs=[rng])
        self._obs_terms = locomotion_observation_terms(tuple(self.joints))
        write_obs = observation_writer(Runner, self._obs_terms)
        self._post_step = post_step_kernel(LOCOMOTION_TERMS.resolve(list(cfg.reward_scales), cfg.reward_params),
                                           self.termination_set.fused(cfg.terminations, cfg.termination_params),
                                           write_obs)
        self._observe_kernel = observe_kernel(Runner, observation_writer(Runner, self._obs_terms, fill=True),
                                              clear_root_twist=True)
        self.world = self._build_world(cfg, num_envs, d)
        self.world.warm_up()
        self.action_type = "position_target" if cfg.action_mode == "pd" else "torque"
        self.action_unit = "rad" if cfg.action_mode == "pd" else "N m"
        self._task = LocomotionTask()
        self._task.root = self.world.root_body
        self._task.q0 = len(ROOT_COORDS)
        self._task.qd0 = ROOT_DOFS
        self._task.max_episode_length = cfg.episode_length
        self._last_actions = wp.zeros((num_envs, len(self.joints)), dtype=float, device=d)
        self._failed = wp.zeros(num_envs, dtype=wp.bool, device=d)
        self._event_steps = wp.array(steps or [1], dtype=int, device=d)
        self.step_kernels = ((self._post_step, self._observe_kernel) + self.world.kernels
                             + tuple(k for k in (self._pre_step, reset_kernel) if k is not None))
        super().__init__(cfg, num_envs=num_envs, device=device, seed=seed)

    def _bind(self) -> None:
        x = self.runner = Runner()
        """The reward terms' view of the state (:class:`Runner`)."""
        x.root, x.actions, x.body_qd = self.world.root_body, self._actions, self.world.arrays.body_qd
        a = self.world.arrays
        x.body_q = a.body_q
        x.unstable, x.failed = a.unstable, self._failed
        x.joint_q, x.joint_qd, x.q0, x.qd0 = a.joint_q, a.joint_qd, self._task.q0, self._task.qd0
        x.root_vel_base, x.last_actions = a.root_vel_base, self._last_actions

    def _build_world(self, cfg: TaskConfig, num_envs: int, device: str) -> NewtonWorld:
        raise NotImplementedError

    def action_scale(self) -> list[float]:
        return list(self.cfg.action_scale)

    def observation_terms(self) -> tuple[ObsTerm, ...]:
        """Torso height, gravity in the torso frame, base velocities, joint angles (absolute) and rates, the last
        actions (:func:`locomotion_observation_terms`: what the step's kernels write)."""
        return self._obs_terms

    def observation_sources(self) -> dict[str, torch.Tensor]:
        a, t, nj = self.world.arrays, self._task, len(self.joints)
        root = wp.to_torch(a.body_q)[:, t.root]
        vel = wp.to_torch(a.root_vel_base)
        down = torch.tensor((0.0, 0.0, -1.0), device=root.device).expand(self.num_envs, 3)
        return {"base_height": root[:, 2:3], "projected_gravity": quat_rotate_inverse(root[:, 3:7], down),
                "base_lin_vel": vel[:, 0:3], "base_ang_vel": vel[:, 3:6],
                "joint_pos": wp.to_torch(a.joint_q)[:, t.q0:t.q0 + nj],
                "joint_vel": wp.to_torch(a.joint_qd)[:, t.qd0:t.qd0 + nj],
                "last_action": wp.to_torch(self._last_actions)}

    def _pre_physics(self) -> None:
        if self._pre_step is not None:
            wp.launch(self._pre_step, self.num_envs, device=self.dev.warp,
                      inputs=[self.runner, self._episode_length, self._event_steps], outputs=[self._rng])

    def _post_physics(self) -> None:
        w = self.world
        wp.launch(self._post_step, self.num_envs, device=self.dev.warp, inputs=[
            self._task, self.runner, w.arrays.joint_q, w.arrays.joint_qd, w.arrays.body_q, w.arrays.root_vel_base,
            self.episodes(), self._causes, self._rng], outputs=[self._last_actions, self._state, self._obs,
                                                                self._final_obs])

    def _observe(self, mask: wp.array) -> None:
        wp.launch(self._observe_kernel, self.num_envs, device=self.dev.warp, inputs=[self.runner, mask, self._rng],
                  outputs=[self._state, self._obs])

    def _reset_task(self) -> None:
        wp.launch(locomotion_reset_episode, self.num_envs, device=self.dev.warp,
                  inputs=[self._reset_mask, self.episodes()], outputs=[self._last_actions])
