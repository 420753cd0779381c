"""Lift: horde's 7-DoF arm with a parallel gripper (``assets/arm7_gripper.xml``) picks a cube from a random spot on
a table and holds it at a random height above the table.

The scene is the arm, one free object (the cube, :class:`horde.sim.scene.RigidObject`, placed anew on every reset)
and one static prop (the table). Observations (42): 9 joint angles relative to the default pose [rad] (7 arm
joints, 2 fingers [m]), 9 joint rates, end-effector position [m], cube position [m], cube minus end effector [m],
target position [m], target minus cube [m], the 9 previous actions. Actions: PD position targets, default pose +
action x ``action_scale`` (arm [rad], fingers [m]). 50 Hz control (4 x 5 ms substeps), 250-step episodes (5 s).
The episode fails when the cube leaves the table (falls below its top) or the physics health check flags the world.

Reward: ``reward_scales`` names terms of :data:`LIFT_TERMS` (Warp functions ``(x: Manip, i: int) -> float``, fused
into the step kernel), per control step: ``reaching`` and ``reaching_fine`` 1 - tanh(|ee - cube| / std) (std 0.1
and 0.02 m), ``grasp`` both fingers in
contact with the cube between them, ``lifting`` the cube more than ``lift_height`` above its rest and within 5 cm
of the end effector (held, not thrown),
``target_tracking`` and ``target_fine`` 1 - tanh(|cube - target| / std) while lifted (std 0.3 and 0.05 m),
``action_rate`` sum (a - a_prev)^2, ``joint_vel`` sum qd^2 of the arm; ``dropped`` (1 on the step the cube leaves
the table) is available but off by default (Isaac Lab's Franka lift terms, with horde's grasp and fine reaching
terms).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

import torch
import warp as wp

from horde.envs import render
from horde.envs.core import TaskConfig, WarpTaskEnv
from horde.envs.episode import Episodes, clear_episode, close_step, weighted_reward
from horde.envs.registry import TaskSpec, register_task
from horde.envs.terms import TermSet, clipped_action_rate
from horde.sim.actuation import Actuation
from horde.sim.device import resolve_device
from horde.sim.newton_build import load_mjcf, set_joint_positions, site_frame
from horde.sim.newton_world import NewtonWorld, SimConfig, make_world
from horde.sim.scene import RigidObject, StaticProp

GRIPPER_MJCF = Path(__file__).resolve().parents[1] / "assets" / "arm7_gripper.xml"
ARM = ("shoulder_yaw", "shoulder_pitch", "arm_roll", "elbow", "forearm_roll", "wrist_pitch", "wrist_roll")
FINGERS = ("left_finger", "right_finger")
JOINTS = ARM + FINGERS
OBS_NAMES = (*(f"pos_{j}" for j in JOINTS), *(f"vel_{j}" for j in JOINTS), "ee_x", "ee_y", "ee_z", "cube_x",
             "cube_y", "cube_z", "cube_ee_x", "cube_ee_y", "cube_ee_z", "target_x", "target_y", "target_z",
             "target_cube_x", "target_cube_y", "target_cube_z", *(f"last_action_{j}" for j in JOINTS))


def _scales() -> dict[str, float]:
    # Isaac Lab's Franka-lift weights plus a fine reaching term and the grasp term. No penalty for a dropped cube
    # (the episode just ends, as in Isaac Lab): with -10 a first CPU run kept the gripper 9 cm from the cube.
    return {"reaching": 1.0, "reaching_fine": 2.0, "grasp": 2.0, "lifting": 15.0, "target_tracking": 16.0,
            "target_fine": 5.0, "action_rate": -1.0e-3, "joint_vel": -1.0e-4}


def _sim() -> SimConfig:
    # box-box contacts (fingers and cube, cube and table) come in fours to eights: with 32 per env MuJoCo-Warp
    # reported narrowphase overflow (dropped contacts) once a policy pressed the gripper on the cube
    # auto: MuJoCo's C engine on the CPU, MuJoCo-Warp on a GPU (the capacities below are MuJoCo-Warp's)
    return SimConfig(solver="auto", max_contacts=96, max_constraints=576)


@dataclass(kw_only=True)
class LiftConfig(TaskConfig):
    """Arm and gripper actuation, the cube and table, target heights, reward terms."""

    episode_length: int = 250
    sim_dt: float = 0.005
    decimation: int = 4
    sim: SimConfig = field(default_factory=_sim)
    """Newton world: solver and its settings, health-check bounds."""
    default_joint_pos: list[float] = field(default_factory=lambda: [0.0, 0.5, 0.0, 1.6, 0.0, 1.0, 0.0, 0.03, 0.03])
    """Initial pose and PD targets at action 0: 7 arm joints [rad] (gripper above the table, pointing down), the
    two finger openings [m]."""
    action_scale: list[float] = field(default_factory=lambda: [0.5] * 7 + [0.03, 0.03])
    """Target offset at action +-1: arm [rad], fingers [m]."""
    joint_stiffness: list[float] = field(default_factory=lambda: [400.0, 400.0, 200.0, 200.0, 50.0, 50.0, 20.0,
                                                                  200.0, 200.0])
    """PD stiffness [N m/rad, N/m]."""
    joint_damping: list[float] = field(default_factory=lambda: [40.0, 40.0, 20.0, 20.0, 4.0, 4.0, 1.0, 5.0, 5.0])
    """PD damping [N m s/rad, N s/m]."""
    effort_limit: list[float] = field(default_factory=lambda: [150.0, 150.0, 80.0, 80.0, 20.0, 20.0, 10.0, 20.0,
                                                               20.0])
    """Torque [N m] and finger force [N] limits."""
    init_joint_pos_range: float = 0.1
    """Initial arm joint angles are default +- this [rad]."""
    cube_size: float = 0.05
    """Edge of the cube [m]."""
    cube_density: float = 400.0
    """[kg/m^3] (0.05 kg for a 5 cm cube)."""
    table_height: float = 0.1
    """Height of the table top [m]; the table spans x 0.25-0.75 m, y +-0.35 m in front of the arm's base."""
    cube_x: list[float] = field(default_factory=lambda: [0.42, 0.58])
    """Range (lo, hi) of the cube's initial x on the table [m] (its yaw is drawn in +-45 degrees)."""
    cube_y: list[float] = field(default_factory=lambda: [-0.1, 0.1])
    """Range (lo, hi) of the cube's initial y [m]."""
    target_height: list[float] = field(default_factory=lambda: [0.1, 0.3])
    """Range of the target's height above the table [m]; the target is above the cube's initial spot."""
    lift_height: float = 0.04
    """The cube counts as lifted more than this above its resting height [m]."""
    contact_threshold: float = 0.5
    """A finger is in contact when its contact force exceeds this [N]."""
    reward_scales: dict[str, float] = field(default_factory=_scales)
    """Reward terms of LIFT_TERMS and their weights per control step, in statistics order."""


@wp.struct
class Manip:
    """What a lift reward term reads of env ``i`` (arrays ``[num_envs, ...]``)."""

    ee_body: int
    ee_offset: wp.vec3
    cube_body: int
    rest_z: float
    """Cube centre height resting on the table [m]."""
    lift_height: float
    contact_threshold: float
    grip_lo: float
    """A finger closed on the cube opens at least this much [m] (less: closed on nothing)."""
    grip_hi: float
    """A finger closed on the cube opens at most this much [m] (more: not closed on it)."""
    actions: wp.array2d(dtype=float)
    last_actions: wp.array2d(dtype=float)
    joint_q: wp.array2d(dtype=float)
    """Joint coordinates: 7 arm angles [rad], then the two finger openings [m]."""
    joint_qd: wp.array2d(dtype=float)
    body_q: wp.array2d(dtype=wp.transform)
    contact: wp.array2d(dtype=wp.vec3)
    """Total contact force on the left and right finger [N]."""
    target: wp.array(dtype=wp.vec3)
    unstable: wp.array(dtype=wp.bool)
    failed: wp.array(dtype=wp.bool)


LIFT_TERMS = TermSet("lift", Manip)
"""Reward terms of the lift task: Warp functions ``(x: Manip, i: int) -> float``."""
lift_term = LIFT_TERMS.term


@wp.func
def ee_pos(x: Manip, i: int) -> wp.vec3:
    return wp.transform_point(x.body_q[i, x.ee_body], x.ee_offset)


@wp.func
def cube_pos(x: Manip, i: int) -> wp.vec3:
    return wp.transform_get_translation(x.body_q[i, x.cube_body])


@wp.func
def lifted(x: Manip, i: int) -> float:
    """1 while the cube is more than ``lift_height`` above its rest and within 5 cm of the end effector: in the
    gripper, not thrown (a first CPU run learned to bat the cube 14 cm up within 2 minutes)."""
    c = cube_pos(x, i)
    near = wp.length(c - ee_pos(x, i)) < 0.05
    return wp.where(c[2] > x.rest_z + x.lift_height and near and not x.unstable[i], 1.0, 0.0)


@lift_term
def reaching(x: Manip, i: int) -> float:
    """1 - tanh(|ee - cube| / 0.1)."""
    return wp.where(x.unstable[i], 0.0, 1.0 - wp.tanh(wp.length(cube_pos(x, i) - ee_pos(x, i)) / 0.1))


@lift_term
def reaching_fine(x: Manip, i: int) -> float:
    """1 - tanh(|ee - cube| / 0.02): the last centimetres, where the fingers can close on the cube."""
    return wp.where(x.unstable[i], 0.0, 1.0 - wp.tanh(wp.length(cube_pos(x, i) - ee_pos(x, i)) / 0.02))


@lift_term
def grasp(x: Manip, i: int) -> float:
    """1 when both fingers press sideways (more than down), the cube is between them (within 3 cm of the end
    effector) and each finger's opening fits the cube's width: closed on the cube, not pressing on the table
    beside it (a first CPU run collected a looser grasp term that way without ever lifting)."""
    near = wp.length(cube_pos(x, i) - ee_pos(x, i)) < 0.03
    squeeze = bool(True)
    for f in range(2):
        c = x.contact[i, f]
        side = wp.sqrt(c[0] * c[0] + c[1] * c[1])  # pressing sideways on the cube, not down on the table
        q = x.joint_q[i, 7 + f]
        squeeze = squeeze and side > x.contact_threshold and side > wp.abs(c[2]) and q > x.grip_lo and q < x.grip_hi
    return wp.where(squeeze and near and not x.unstable[i], 1.0, 0.0)


@lift_term
def lifting(x: Manip, i: int) -> float:
    """1 while the cube is more than ``lift_height`` above its resting height."""
    return lifted(x, i)


@lift_term
def target_tracking(x: Manip, i: int) -> float:
    """1 - tanh(|cube - target| / 0.3) while lifted."""
    return lifted(x, i) * (1.0 - wp.tanh(wp.length(x.target[i] - cube_pos(x, i)) / 0.3))


@lift_term
def target_fine(x: Manip, i: int) -> float:
    """1 - tanh(|cube - target| / 0.05) while lifted."""
    return lifted(x, i) * (1.0 - wp.tanh(wp.length(x.target[i] - cube_pos(x, i)) / 0.05))


@lift_term
def action_rate(x: Manip, i: int) -> float:
    """sum (a - a_prev)^2 of clipped actions."""
    return clipped_action_rate(x.actions, x.last_actions, i)


@lift_term
def joint_vel(x: Manip, i: int) -> float:
    """sum qd^2 over the 7 arm joints [rad^2/s^2]."""
    v = float(0.0)
    for k in range(7):
        v += x.joint_qd[i, k] * x.joint_qd[i, k]
    return wp.where(x.unstable[i], 0.0, v)


@lift_term
def dropped(x: Manip, i: int) -> float:
    """1 on the step the episode fails (the cube left the table, or unstable physics)."""
    return wp.where(x.failed[i], 1.0, 0.0)


@wp.struct
class LiftTask:
    """Per-task constants of the kernels."""

    max_episode_length: int
    table_z: float
    target_lo: float
    target_hi: float


@wp.func
def _write_obs(x: Manip, i: int, ok: bool, joint_q: wp.array2d(dtype=float), default_q: wp.array(dtype=float),
               target: wp.array(dtype=wp.vec3), state: wp.array2d(dtype=float), obs: wp.array2d(dtype=float)):
    nj = x.last_actions.shape[1]
    for k in range(nj):
        obs[i, k] = wp.where(ok, joint_q[i, k] - default_q[k], 0.0)
        obs[i, nj + k] = wp.where(ok, x.joint_qd[i, k], 0.0)
        obs[i, 2 * nj + 15 + k] = x.last_actions[i, k]
        state[i, k] = wp.where(ok, joint_q[i, k], 0.0)
    ee = ee_pos(x, i)
    c = cube_pos(x, i)
    g = target[i]
    for k in range(3):
        obs[i, 2 * nj + k] = wp.where(ok, ee[k], 0.0)
        obs[i, 2 * nj + 3 + k] = wp.where(ok, c[k], 0.0)
        obs[i, 2 * nj + 6 + k] = wp.where(ok, c[k] - ee[k], 0.0)
        obs[i, 2 * nj + 9 + k] = g[k]
        obs[i, 2 * nj + 12 + k] = wp.where(ok, g[k] - c[k], 0.0)
    for k in range(3):
        state[i, nj + k] = wp.where(ok, c[k], 0.0)


@wp.func
def _new_target(t: LiftTask, x: Manip, i: int, s: wp.uint32) -> wp.uint32:
    """Above the cube's (new) spot, at a random height over the table."""
    c = cube_pos(x, i)
    x.target[i] = wp.vec3(c[0], c[1], t.table_z + wp.randf(s, t.target_lo, t.target_hi))
    return s


@functools.lru_cache(maxsize=None)
def post_step_kernel(terms: tuple[wp.Function, ...]) -> wp.Kernel:
    """The step's kernel for this list of reward terms (fused with ``wp.static``)."""

    @wp.kernel(enable_backward=False, module="unique")
    def lift_post_step(t: LiftTask, x: Manip, joint_q: wp.array2d(dtype=float), default_q: wp.array(dtype=float),
                       ep: Episodes, state: wp.array2d(dtype=float), obs: wp.array2d(dtype=float),
                       final_obs: wp.array2d(dtype=float), cube_z: wp.array(dtype=float)):
        i = wp.tid()
        ok = not x.unstable[i]
        c = cube_pos(x, i)
        failed = x.unstable[i] or c[2] < t.table_z
        x.failed[i] = failed
        for k in range(wp.static(len(terms))):
            ep.terms[k, i] = wp.static(terms[k])(x, i)
        r = weighted_reward(ep, i)
        for k in range(x.actions.shape[1]):
            x.last_actions[i, k] = wp.clamp(x.actions[i, k], -1.0, 1.0)
        cube_z[i] = wp.where(ok, c[2] - x.rest_z, 0.0)
        _write_obs(x, i, ok, joint_q, default_q, x.target, state, obs)
        done = close_step(ep, i, r, failed, t.max_episode_length)
        if done:
            for k in range(obs.shape[1]):
                final_obs[i, k] = obs[i, k]
            for k in range(x.actions.shape[1]):
                x.last_actions[i, k] = 0.0

    return lift_post_step


@wp.kernel(enable_backward=False)
def lift_observe(t: LiftTask, x: Manip, mask: wp.array(dtype=wp.bool), clear: int, rng: wp.array(dtype=wp.uint32),
                 ep: Episodes, joint_q: wp.array2d(dtype=float), default_q: wp.array(dtype=float),
                 state: wp.array2d(dtype=float), obs: wp.array2d(dtype=float)):
    """Envs in ``mask`` (just reset, cube placed): a new target, cleared actions (and counters when ``clear``),
    observations."""
    i = wp.tid()
    if mask[i]:
        if clear == 1:
            clear_episode(ep, i)
        for k in range(x.last_actions.shape[1]):
            x.last_actions[i, k] = 0.0
        rng[i] = _new_target(t, x, i, rng[i])
        _write_obs(x, i, True, joint_q, default_q, x.target, state, obs)


def scene(cfg: LiftConfig) -> tuple[RigidObject, StaticProp]:
    """The cube and the table of ``cfg``."""
    h = 0.5 * cfg.cube_size
    z = cfg.table_height + h + 0.002
    cube = RigidObject(name="cube", shape="box", size=(h, h, h), density=cfg.cube_density, friction=1.0,
                       x=tuple(cfg.cube_x), y=tuple(cfg.cube_y), z=(z, z), yaw=(-0.785, 0.785))
    table = StaticProp(name="table", shape="box", size=(0.25, 0.35, 0.5 * cfg.table_height),
                       pos=(0.5, 0.0, 0.5 * cfg.table_height), friction=1.0)
    return cube, table


def build_world(cfg: LiftConfig, num_envs: int, device: str) -> tuple[NewtonWorld, int, tuple[float, float, float]]:
    """The batched arm + cube + table world, and the end-effector site's (body index, offset in that body [m])."""
    robot = load_mjcf(str(GRIPPER_MJCF), contact_ke=cfg.sim.contact_ke, solver=cfg.sim.solver,
                      self_collisions=False)
    set_joint_positions(robot, JOINTS, cfg.default_joint_pos)
    ee_body, ee_offset = site_frame(robot, "ee")
    actuation = Actuation(mode="pd", scale=cfg.action_scale, offset=cfg.default_joint_pos,
                          stiffness=cfg.joint_stiffness, damping=cfg.joint_damping, effort_limit=cfg.effort_limit)
    cube, table = scene(cfg)
    world = make_world(robot, num_envs=num_envs, device=device, sim=cfg.sim, sim_dt=cfg.sim_dt,
                        substeps=cfg.decimation, ground=True, actuated_joints=JOINTS, actuation=actuation,
                        root_body=0, q_noise=[cfg.init_joint_pos_range] * len(ARM) + [0.0] * len(FINGERS),
                        qd_noise=[0.0] * len(JOINTS), contact_bodies=FINGERS, objects=[cube], props=[table])
    return world, ee_body, ee_offset


class LiftEnv(WarpTaskEnv):
    """Batched cube lifting with horde's arm and gripper on Newton (MuJoCo-Warp)."""

    obs_names = OBS_NAMES
    action_names = JOINTS
    state_names = (*JOINTS, "cube_x", "cube_y", "cube_z")
    action_type = "position_target"
    action_unit = "rad (arm), m (fingers)"
    term_set = LIFT_TERMS
    """Where ``reward_scales``' keys are looked up."""

    def __init__(self, cfg: LiftConfig, *, num_envs: int, device: str = "cpu", seed: int = 0) -> None:
        d = resolve_device(device).warp
        terms = LIFT_TERMS.resolve(list(cfg.reward_scales))
        self.term_names = tuple(cfg.reward_scales)
        self.world, ee_body, ee_offset = build_world(cfg, num_envs, d)
        self.world.warm_up()
        w = self.world
        t = self._task = LiftTask()
        t.max_episode_length, t.table_z = cfg.episode_length, cfg.table_height
        t.target_lo, t.target_hi = cfg.target_height
        with wp.ScopedDevice(d):
            self._last_actions = wp.zeros((num_envs, len(JOINTS)), dtype=float)
            self._target = wp.zeros(num_envs, dtype=wp.vec3)
            self._failed = wp.zeros(num_envs, dtype=wp.bool)
            self._cube_height = wp.zeros(num_envs, dtype=float)
            self._contact = wp.from_torch(w.contact_forces, dtype=wp.vec3)
        self.target = wp.to_torch(self._target)
        """Target cube positions [m], world frame, [num_envs, 3]."""
        self.cube_height = wp.to_torch(self._cube_height)
        """Cube height above its resting height after the last step [m], [num_envs]."""
        self._ee = (ee_body, ee_offset)
        self._post_step = post_step_kernel(terms)
        self.step_kernels = (self._post_step, lift_observe) + w.kernels
        self.manip = self._context(cfg, ee_body, ee_offset)
        super().__init__(cfg, num_envs=num_envs, device=device, seed=seed)
        self.manip.actions = self._actions  # created by the core

    def _context(self, cfg: LiftConfig, ee_body: int, ee_offset) -> Manip:
        a = self.world.arrays
        x = Manip()
        x.ee_body, x.ee_offset = ee_body, wp.vec3(*ee_offset)
        x.cube_body = self.world.object_body("cube")
        x.rest_z = cfg.table_height + 0.5 * cfg.cube_size
        x.lift_height, x.contact_threshold = cfg.lift_height, cfg.contact_threshold
        # a finger's inner face is at its opening: holding the cube, each opens about half the cube's width
        half = 0.5 * cfg.cube_size
        x.grip_lo, x.grip_hi = half - 0.008, half + 0.003
        x.actions, x.last_actions = self._last_actions, self._last_actions  # actions bound after the core's init
        x.joint_q, x.joint_qd, x.body_q, x.contact = a.joint_q, a.joint_qd, a.body_q, self._contact
        x.target, x.unstable, x.failed = self._target, a.unstable, self._failed
        return x

    def action_scale(self) -> list[float]:
        return list(self.cfg.action_scale)

    def _launch_step(self) -> None:
        w, n, d = self.world, self.num_envs, self.dev.warp
        w.simulate(self._actions)
        w.inspect()
        wp.launch(self._post_step, n, device=d, inputs=[
            self._task, self.manip, w.arrays.joint_q, w.arrays.default_joint_q, self.episodes()],
            outputs=[self._state, self._obs, self._final_obs, self._cube_height])
        w.reset(self._dones, self._rng)
        self._observe(self._dones, clear=False)

    def _observe(self, mask: wp.array, *, clear: bool) -> None:
        w = self.world
        wp.launch(lift_observe, self.num_envs, device=self.dev.warp, inputs=[
            self._task, self.manip, mask, int(clear), self._rng, self.episodes(), w.arrays.joint_q,
            w.arrays.default_joint_q], outputs=[self._state, self._obs])

    def _launch_reset(self) -> None:
        self.world.reset(self._reset_mask, self._rng)
        self._observe(self._reset_mask, clear=True)

    # --- host side -------------------------------------------------------------------------------------------------
    def pop_episode_stats(self) -> dict[str, float]:
        out = super().pop_episode_stats()
        out["sim/unstable_resets"] = self.world.pop_unstable_count()
        return out

    def _resumable(self) -> dict[str, torch.Tensor]:
        return {**super()._resumable(), **self.world.physics_state(), "last_actions": wp.to_torch(self._last_actions),
                "target": self.target}


register_task("lift", TaskSpec(
    env_cls=LiftEnv,
    config=LiftConfig(),
    description="horde's 7-DoF arm with a parallel gripper lifts a cube from a random spot on a table to a random "
                "height",
    renderer=render.draw_lift,
))
