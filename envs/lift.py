"""Lift: an arm with a gripper (``robot=``: an entry of :mod:`horde.envs.arms`; horde's 7-DoF arm
``assets/arm7_gripper.xml`` by default, the i2rt YAM, LeRobot's SO-101) picks a cube from a random spot on a table and
holds it at a random height above the table. The table, cube and targets are the arm entry's (:class:`ArmScene`).

The scene is the arm, one free object (the cube, :class:`horde.sim.scene.RigidObject`, placed anew on every reset)
and one static prop (the table); the target is drawn by a reset event (``task.reset_events``: terms of
:data:`LIFT_EVENTS`, ``target_above_cube`` by default; the place's pad is another). 50 Hz control (4 x 5 ms
substeps), 250-step episodes (5 s). The episode fails when the cube leaves the table (falls below its top) or the
physics health check flags the world.

Actions (``arm`` and ``gripper`` choose them; the peers' recipes, ../shared/RECIPES.md):
- ``arm=ee_delta`` (default): three actions move the end-effector target by up to ``ee_step`` [m] per control step
  in x, y, z (world frame, inside a workspace box); differential inverse kinematics (:mod:`horde.sim.diffik`, damped
  least squares on the site Jacobian, in the step kernel) turns the target, with the hand pointing down, into the
  arm's PD targets (Playground's Cartesian PandaPickCube, Isaac Lab's IK-rel variants); the entry's
  ``ik_orientation`` weighs the orientation error (the SO-101's 5 joints hold only the pointing axis).
  ``arm=joint``: one action per arm joint, PD targets default pose + action x ``action_scale`` [rad] (Isaac Lab's
  Franka lift). ``arm=joint_delta``: one action per arm joint moving its PD target by up to ``joint_step`` [rad]
  per control step (within ``ik_lead`` of the joint and its limits; ManiSkill's ``pd_joint_delta_pos``).
- ``gripper=binary`` (default): one action, open at >= 0 and closed below; ``delta``: one integrated action;
  ``independent``: one per finger (:class:`horde.sim.actuation.Gripper`, the law ``policy.json`` describes).

Observations (``obs_names``): the actuated joints' positions relative to the default pose [rad, m] (arm7: 9), their
rates,
end-effector position [m], cube position, cube minus end effector, target, target minus cube, the cube's yaw
relative to the hand as sin and cos of 4 x yaw (a cube looks the same every 90 degrees), the end-effector target
minus the end effector [m] (zeros with ``arm=joint``), the gripper's opening command [0-1], the previous actions.

Reward: ``reward_scales`` names terms of :data:`LIFT_TERMS` (Warp functions ``(x: Manip, i: int) -> float``, fused
into the step kernel), staged and dense: ``reaching`` and ``reaching_fine`` 1 - tanh(|ee - cube| / std) (std 0.1
and 0.02 m); ``grasp`` both fingers closed on the cube; ``lift_height`` the cube's height above its rest over
``lift_span``, clipped to [0, 1], while both fingers press on it; ``lifting`` the cube more than ``lift_height``
above its rest and within 5 cm of the end effector (held, not thrown); ``target_tracking`` and ``target_fine``
1 - tanh(|cube - target| / std) while lifted (std 0.3 and 0.05 m); ``action_rate`` and ``joint_vel`` penalties;
``dropped`` (1 on the step the cube leaves the table) is available but off by default.
"""

from __future__ import annotations

import functools

import torch
import warp as wp

from horde.envs import render
from horde.envs.articulated import ArticulatedTaskEnv
from horde.envs.episode import Episodes, clear_episode, close_step, weighted_reward
from horde.envs.arms import ArmRobot
from horde.envs.lift_actions import ARM_ACTIONS, GRIPPER_ACTIONS, Command, LiftTask, command_kernel
from horde.envs.lift_config import (ARM, EE_ACTIONS, FINGERS, GRIPPER_MJCF, HAND_DOWN,  # noqa: F401
                                    IK_RANGE, JOINTS, LiftConfig, _scales, _sim, action_names_of, arm_of,
                                    OBSERVATIONS)
from horde.envs.lift_terms import LIFT_EVENTS, LIFT_TERMINATIONS, LIFT_TERMS, Manip, cube_pos, ee_pos
from horde.envs.lift_obs import LIFT_OBSERVATIONS, lift_observation_terms
from horde.envs.obs_writer import observation_writer, past_width, raw_kernel
from horde.envs.observations import ObsTerm, columns_of, quat_rotate
from horde.envs.registry import TaskSpec, register_task
from horde.sim.actuation import GRIPPER_MODES, Actuation, Gripper  # noqa: F401
from horde.sim.device import resolve_device
from horde.sim.diffik import chain_from_builder
from horde.sim.newton_build import joint_dof_layout, load_mjcf, set_joint_positions, site_frame
from horde.sim.spec import RobotEntity, Sensors, WorldSpec, world_from_spec
from horde.sim.scene import RigidObject, StaticProp

@wp.func
def _write_state(x: Manip, i: int, ok: bool, state: wp.array2d(dtype=float)):
    """The state row of env i: the actuated joints' coordinates, then the cube's position (zeros while not ok)."""
    nj = state.shape[1] - 3
    for k in range(nj):
        state[i, k] = wp.where(ok, x.joint_q[i, k], 0.0)
    c = cube_pos(x, i)
    for k in range(3):
        state[i, nj + k] = wp.where(ok, c[k], 0.0)


@functools.lru_cache(maxsize=None)
def post_step_kernel(terms: tuple[wp.Function, ...], terminations: tuple[wp.Function, wp.Function],
                     write_obs: wp.Function) -> wp.Kernel:
    """The step's kernel for these reward terms, terminations (``(check, count)`` of
    :meth:`horde.envs.terms.TerminationSet.fused`) and observation writer (:func:`observation_writer` of the
    task's terms), fused with ``wp.static``."""
    check, count = terminations

    @wp.kernel(enable_backward=False, module="unique")
    def lift_post_step(t: LiftTask, x: Manip, ep: Episodes, causes: wp.array(dtype=wp.float64),
                       rng: wp.array(dtype=wp.uint32), state: wp.array2d(dtype=float),
                       obs: wp.array2d(dtype=float), final_obs: wp.array2d(dtype=float),
                       cube_z: wp.array(dtype=float)):
        i = wp.tid()
        ok = not x.unstable[i]
        c = cube_pos(x, i)
        hits, failed, timed_out = wp.static(check)(x, i)
        failed = failed or x.unstable[i]
        x.failed[i] = failed
        for k in range(wp.static(len(terms))):
            ep.terms[k, i] = wp.static(terms[k])(x, i)
        r = weighted_reward(ep, i)
        for k in range(x.actions.shape[1]):
            x.last_actions[i, k] = wp.clamp(x.actions[i, k], -1.0, 1.0)
        cube_z[i] = wp.where(ok, c[2] - x.rest_z, 0.0)
        _write_state(x, i, ok, state)
        rng[i] = wp.static(write_obs)(x, i, ok, rng[i], obs, 0)
        done = close_step(ep, i, r, failed, wp.where(timed_out, 0, t.max_episode_length))
        if done:
            wp.static(count)(hits, causes)
            for k in range(obs.shape[1]):
                final_obs[i, k] = obs[i, k]
            for k in range(x.actions.shape[1]):
                x.last_actions[i, k] = 0.0

    return lift_post_step


@functools.lru_cache(maxsize=None)
def observe_kernel(events: tuple[wp.Function, ...], write_obs: wp.Function) -> wp.Kernel:
    """The observe kernel for these reset events (``task.reset_events``) and observation writer, fused with
    ``wp.static``."""

    @wp.kernel(enable_backward=False, module="unique")
    def lift_observe(t: LiftTask, x: Manip, u: Command, mask: wp.array(dtype=wp.bool), clear: int,
                     rng: wp.array(dtype=wp.uint32), ep: Episodes, joint_q: wp.array2d(dtype=float),
                     state: wp.array2d(dtype=float), obs: wp.array2d(dtype=float)):
        """Envs in ``mask`` (just reset, cube placed): cleared actions and commands (the end-effector and joint
        targets where the arm is, the gripper open; counters too when ``clear``), the reset events (a new target),
        observations."""
        i = wp.tid()
        if mask[i]:
            if clear == 1:
                clear_episode(ep, i)
            for k in range(x.last_actions.shape[1]):
                x.last_actions[i, k] = 0.0
            u.ee_target[i] = ee_pos(x, i)
            for k in range(x.arm_dofs):
                u.q_target[i, k] = joint_q[i, k]
            u.grip[i] = 1.0
            s = rng[i]
            for e in range(wp.static(len(events))):
                s = wp.static(events[e])(x, i, s)
            _write_state(x, i, True, state)
            rng[i] = wp.static(write_obs)(x, i, True, s, obs, 0)

    return lift_observe


def scene(cfg: LiftConfig, arm: ArmRobot | None = None) -> tuple[RigidObject, StaticProp]:
    """The cube and the table of ``cfg`` on its arm's scene (:func:`arm_of`)."""
    sc = (arm or arm_of(cfg)).scene
    h = 0.5 * sc.cube_size
    z = sc.table_height + h + 0.002
    cube = RigidObject(name="cube", shape="box", size=(h, h, h), density=cfg.cube_density, friction=1.0,
                       x=tuple(sc.cube_x), y=tuple(sc.cube_y), z=(z, z), yaw=(-0.785, 0.785))
    table = StaticProp(name="table", shape="box", size=(*sc.table_half, 0.5 * sc.table_height),
                       pos=(sc.table_x, 0.0, 0.5 * sc.table_height), friction=1.0)
    return cube, table


def gripper_of(cfg: LiftConfig) -> Gripper:
    """The gripper law of ``cfg``."""
    arm = arm_of(cfg)
    law = GRIPPER_ACTIONS.get(cfg.gripper)
    return Gripper(mode=cfg.gripper, joints=arm.fingers, open=arm.gripper_open, closed=arm.gripper_closed,
                   rate=cfg.gripper_rate, per_finger=law.per_finger,
                   formula=None if cfg.gripper in GRIPPER_MODES else law.formula)


def actuation_of(cfg: LiftConfig) -> Actuation:
    """The PD law per actuated joint: the arm around the default pose (its action term's ``joint_scale``: IK_RANGE
    wide with arm=ee_delta and joint_delta), the fingers between closed (action -1) and open (+1)."""
    arm = arm_of(cfg)
    n = len(arm.arm_joints)
    arm_scale = list(ARM_ACTIONS.get(cfg.arm).joint_scale(arm))
    mid, half = 0.5 * (arm.gripper_open + arm.gripper_closed), 0.5 * (arm.gripper_open - arm.gripper_closed)
    f = len(arm.fingers)
    return Actuation(mode="pd", scale=arm_scale + [half] * f, offset=list(arm.default_joint_pos[:n]) + [mid] * f,
                     stiffness=list(arm.stiffness), damping=list(arm.damping), effort_limit=list(arm.effort_limit))


def _ee_frame(robot, arm: ArmRobot) -> tuple[int, tuple[float, float, float]]:
    """(body, point in that body's frame [m]) of the arm's end effector: its site (or body) plus ``ee_offset``."""
    bodies = [lbl.split("/")[-1] for lbl in robot.body_label]
    if arm.ee in bodies and not any(lbl.split("/")[-1] == arm.ee for lbl in robot.shape_label):
        body, p = bodies.index(arm.ee), (0.0, 0.0, 0.0)
    else:
        body, p = site_frame(robot, arm.ee)
    return body, tuple(float(a + b) for a, b in zip(p, arm.ee_offset)) if any(arm.ee_offset) else p


def build_world(cfg: LiftConfig, num_envs: int, device: str):
    """The batched arm + cube + table world, the end-effector site's (body index, offset in that body [m]), the
    arm's kinematic chain (:class:`horde.sim.diffik.Chain`), the arm joints' limits, the actuated joints' units and
    the ``joint_q`` column of each finger body's opening joint."""
    import newton

    arm = arm_of(cfg)
    robot = load_mjcf(arm.mjcf_path(), contact_ke=cfg.sim.contact_ke, solver=cfg.sim.solver,
                      self_collisions=False, meshes=arm.meshes, show_colliders=True)
    q_idx, qd_idx = joint_dof_layout(robot, arm.joints)
    if list(q_idx) != list(range(len(arm.joints))):
        raise ValueError(f"arm '{arm.name}': the MJCF must list the joints {', '.join(arm.joints)} first, in this "
                         "order (arm, then fingers)")
    defaults = dict(zip(arm.joints, arm.default_joint_pos))
    coupled = {j: ratio * defaults[leader] for j, leader, ratio in arm.coupled}
    set_joint_positions(robot, (*arm.joints, *coupled), (*arm.default_joint_pos, *coupled.values()))
    for d, a in zip(qd_idx, arm.armature or ()):
        robot.joint_armature[d] = a
    ee_body, ee_offset = _ee_frame(robot, arm)
    chain = chain_from_builder(robot, arm.arm_joints, resolve_device(device).warp)
    cube, table = scene(cfg, arm)
    n_arm = len(arm.arm_joints)
    spec = WorldSpec(
        robot=RobotEntity(builder=robot, actuated_joints=tuple(arm.joints), actuation=actuation_of(cfg),
                          q_noise=(cfg.init_joint_pos_range,) * n_arm + (0.0,) * (robot.joint_coord_count - n_arm),
                          qd_noise=(0.0,) * robot.joint_dof_count),
        objects=(cube,), props=(table,), sensors=Sensors(contact_bodies=tuple(arm.finger_bodies)),
        sim_dt=cfg.sim_dt, substeps=cfg.decimation)
    world = world_from_spec(spec, sim=cfg.sim, num_envs=num_envs, device=device)
    limits = [(robot.joint_limit_lower[d], robot.joint_limit_upper[d]) for d in qd_idx[:n_arm]]
    units = tuple("m" if robot.joint_type[robot.joint_label.index(next(lbl for lbl in robot.joint_label
                                                                         if lbl.split("/")[-1] == j))]
                  == newton.JointType.PRISMATIC else "rad" for j in arm.joints)
    opening, _ = joint_dof_layout(robot, [j for j, _, _ in arm.opening])
    return world, ee_body, ee_offset, chain, limits, units, tuple(opening)


class LiftEnv(ArticulatedTaskEnv):
    """Batched cube lifting with an arm entry's arm and gripper on Newton (MuJoCo's C engine or MuJoCo-Warp)."""

    action_type = "position_target"
    term_set = LIFT_TERMS
    """Where ``reward_scales``' keys are looked up."""
    termination_set = LIFT_TERMINATIONS
    """Where ``terminations``' names are looked up."""
    event_set = LIFT_EVENTS
    """Where ``reset_events``' names are looked up."""
    observation_set = LIFT_OBSERVATIONS
    """Where a user's terms of ``observations`` are looked up (beside the built-in ones of :mod:`lift_obs`)."""

    @staticmethod
    def check_observations(cfg: LiftConfig) -> None:
        """``task.observations`` and ``task.observation_params`` name known terms and parameters (one line each:
        :class:`horde.envs.terms.UnknownTermError`), checked before an env is built."""
        lift_observation_terms([*cfg.observations, *cfg.extra_observations], cfg.observation_params,
                               joints=("j",), joint_units=("rad",),
                               default_pos=(0.0,), action_names=("a",))

    def __init__(self, cfg: LiftConfig, *, num_envs: int, device: str = "cpu", seed: int = 0) -> None:
        d = resolve_device(device).warp
        arm = self.arm = arm_of(cfg)
        """The arm entry this env runs (:func:`arm_of`: ``cfg.robot`` with the config's overrides)."""
        self.state_names = (*arm.joints, "cube_x", "cube_y", "cube_z")
        law = self.arm_action = ARM_ACTIONS.get(cfg.arm)
        """The arm action term (:class:`horde.envs.lift_actions.ArmAction`, ``task.arm``)."""
        self.action_names = action_names_of(cfg.arm, cfg.gripper, arm)
        self.action_type = law.action_type or law.name
        self.action_unit = law.unit
        self.gripper = gripper_of(cfg)
        """The gripper law (``policy.json`` describes it)."""
        terms = LIFT_TERMS.resolve(list(cfg.reward_scales), cfg.reward_params)
        self.term_names = tuple(cfg.reward_scales)
        self.world, ee_body, ee_offset, self._chain, limits, self._units, self._opening_columns = build_world(
            cfg, num_envs, d)
        self.world.warm_up()
        w = self.world
        nj = len(arm.joints)
        self._obs_terms = lift_observation_terms(
            [*cfg.observations, *cfg.extra_observations], cfg.observation_params, joints=arm.joints, joint_units=self._units,
            default_pos=[float(v) for v in w.arrays.default_joint_q.numpy()[:nj]], action_names=self.action_names)
        """The observation's terms in column order (``task.observations``, then ``task.extra_observations``); the
        generator writes them."""
        self.obs_names = columns_of(self._obs_terms)
        write_obs = observation_writer(Manip, self._obs_terms)
        t = self._task = LiftTask()
        sc = arm.scene
        t.max_episode_length, t.table_z = cfg.episode_length, sc.table_height
        grip_law = GRIPPER_ACTIONS.get(cfg.gripper)
        t.ee_mode, t.gripper_mode, t.gripper_rate = law.code, grip_law.code, cfg.gripper_rate
        t.joint_step = cfg.joint_step
        t.ee_step, t.ee_lead = cfg.ee_step, cfg.ee_lead
        t.ee_lo = wp.vec3(sc.ee_lo[0], sc.ee_lo[1], sc.table_height + sc.ee_lo[2])
        t.ee_hi = wp.vec3(sc.ee_hi[0], sc.ee_hi[1], sc.table_height + sc.ee_hi[2])
        t.ik_damping, t.ik_gain, t.ik_lead = cfg.ik_damping, cfg.ik_gain, cfg.ik_lead
        t.hand, t.ik_weight = wp.quat(*arm.hand_down), wp.vec3(*arm.ik_orientation)
        act = actuation_of(cfg)
        with wp.ScopedDevice(d):
            self._last_actions = wp.zeros((num_envs, len(self.action_names)), dtype=float)
            self._past_width = past_width(self._obs_terms)
            """Values per env the delayed observation terms keep (0: none is delayed)."""
            self._obs_past = wp.zeros((num_envs, max(1, self._past_width)), dtype=float)
            self._target = wp.zeros(num_envs, dtype=wp.vec3)
            self._failed = wp.zeros(num_envs, dtype=wp.bool)
            self._cube_height = wp.zeros(num_envs, dtype=float)
            self._contact = wp.from_torch(w.contact_forces, dtype=wp.vec3)
            u = self._command = Command()
            u.ee_target = wp.zeros(num_envs, dtype=wp.vec3)
            u.q_target = wp.zeros((num_envs, len(arm.arm_joints)), dtype=float)
            u.grip = wp.ones(num_envs, dtype=float)
            u.offset = wp.array(list(act.offset), dtype=float)
            u.scale = wp.array(list(act.scale), dtype=float)
            u.lower = wp.array([lo for lo, _ in limits], dtype=float)
            u.upper = wp.array([hi for _, hi in limits], dtype=float)
            u.joint_actions = wp.zeros((num_envs, len(arm.joints)), dtype=float)
        self.target = wp.to_torch(self._target)
        """Target cube positions [m], world frame, [num_envs, 3]."""
        self.cube_height = wp.to_torch(self._cube_height)
        """Cube height above its resting height after the last step [m], [num_envs]."""
        self.ee_target = wp.to_torch(u.ee_target)
        """End-effector targets [m], world frame, [num_envs, 3] (arm=ee_delta)."""
        self.joint_actions = wp.to_torch(u.joint_actions)
        """What the actuation law ran in the last step: one action per actuated joint [num_envs, arm + fingers]."""
        self._ee = (ee_body, ee_offset)
        self.termination_names = tuple(cfg.terminations)
        self._post_step = post_step_kernel(terms, LIFT_TERMINATIONS.fused(cfg.terminations, cfg.termination_params),
                                           write_obs)
        self.reset_event_names = tuple(cfg.reset_events)
        """Reset events in the order they run (``task.reset_events``)."""
        LIFT_EVENTS.check_params(cfg.reset_events, cfg.event_params)
        self._observe_kernel = observe_kernel(LIFT_EVENTS.resolve_mode(cfg.reset_events, "reset", "task.reset_events",
                                                                       cfg.event_params),
                                              observation_writer(Manip, self._obs_terms, fill=True))
        self._command_kernel = command_kernel(law.func, grip_law.func)
        self.step_kernels = (self._command_kernel, self._post_step, self._observe_kernel) + w.kernels
        super().__init__(cfg, num_envs=num_envs, device=device, seed=seed)

    def _bind(self) -> None:
        self.manip = self._context(self.cfg, *self._ee)
        """The reward terms' view of the state (:class:`Manip`)."""

    def observation_terms(self) -> tuple[ObsTerm, ...]:
        """The observation's terms in column order (``task.observations``, :mod:`horde.envs.lift_obs`): what the
        step's kernels write, through :func:`horde.envs.obs_writer.observation_writer`."""
        return self._obs_terms

    def observation_sources(self) -> dict[str, torch.Tensor]:
        a = self.world.arrays
        body_q = wp.to_torch(a.body_q)
        ee_body, ee_offset = self._ee
        hand, cube = body_q[:, ee_body], body_q[:, self.manip.cube_body]
        offset = torch.tensor(ee_offset, dtype=hand.dtype, device=hand.device).expand(self.num_envs, 3)
        ee = hand[:, :3] + quat_rotate(hand[:, 3:7], offset)
        c = cube[:, :3]
        x_axis = torch.tensor((1.0, 0.0, 0.0), device=hand.device).expand(self.num_envs, 3)
        cube_x, hand_x = quat_rotate(cube[:, 3:7], x_axis), quat_rotate(hand[:, 3:7], x_axis)
        yaw = torch.atan2(cube_x[:, 1], cube_x[:, 0]) - torch.atan2(hand_x[:, 1], hand_x[:, 0])
        lead = self.ee_target - ee if self.arm_action.code == 1 else torch.zeros_like(ee)
        nj = len(self.arm.joints)
        builtin = {"joint_pos": wp.to_torch(a.joint_q)[:, :nj], "joint_vel": wp.to_torch(a.joint_qd)[:, :nj],
                   "ee_pos": ee, "object_pos": c, "object_rel_ee": c - ee, "goal_pos": self.target,
                   "goal_rel_object": self.target - c,
                   "object_yaw_sincos4": torch.stack((torch.sin(4 * yaw), torch.cos(4 * yaw)), dim=-1),
                   "ik_lead": lead, "gripper_command": wp.to_torch(self._command.grip)[:, None],
                   "last_action": wp.to_torch(self._last_actions)}
        user = [t for t in self._obs_terms if t.name in LIFT_OBSERVATIONS.names() or t.source not in builtin]
        if user:  # a user's terms: their functions' raw values (Warp, the same functions the step runs)
            raw = wp.zeros((self.num_envs, sum(t.frame_width for t in user)), dtype=float, device=self.dev.warp)
            wp.launch(raw_kernel(Manip, tuple(user)), self.num_envs, device=self.dev.warp, inputs=[self.manip],
                      outputs=[raw])
            raw, c0 = wp.to_torch(raw), 0
            for t in user:
                builtin[t.source], c0 = raw[:, c0:c0 + t.frame_width], c0 + t.frame_width
        return builtin

    def command_spec(self) -> dict:
        """How the actions become the actuated joints' PD targets, for ``policy.json``: the arm mode, the gripper law
        and the actuation that ran (per actuated joint: target at action 0, target offset at action 1, gains)."""
        cfg, act = self.cfg, actuation_of(self.cfg)
        entry = self.arm
        arm = self.arm_action.describe(cfg, entry)
        return {"arm": arm, "gripper": self.gripper.describe(), "joints": list(entry.joints),
                "joint_offset": list(act.offset), "joint_scale": list(act.scale), "kp": list(act.stiffness),
                "kd": list(act.damping), "effort_limit": list(act.effort_limit),
                "joint_formula": "target = joint_offset + joint_scale * joint_action, joint_action in [-1, 1]"}

    def _context(self, cfg: LiftConfig, ee_body: int, ee_offset) -> Manip:
        a = self.world.arrays
        x = Manip()
        x.ee_body, x.ee_offset = ee_body, wp.vec3(*ee_offset)
        x.cube_body = self.world.object_body("cube")
        sc, arm = self.arm.scene, self.arm
        x.rest_z, x.table_z = sc.table_height + 0.5 * sc.cube_size, sc.table_height
        x.lift_height, x.lift_span, x.contact_threshold = cfg.lift_height, cfg.lift_span, cfg.contact_threshold
        # a finger's inner face is at its opening: holding the cube, each opens about half the cube's width
        half = 0.5 * sc.cube_size
        x.grip_lo, x.grip_hi = half - 0.008, half + 0.003
        x.arm_dofs = len(arm.arm_joints)
        (j0, s0, z0), (j1, s1, z1) = arm.opening
        x.finger_q = wp.vec2i(*self._opening_columns)
        x.finger_scale, x.finger_zero = wp.vec2(s0, s1), wp.vec2(z0, z1)
        x.target_lo, x.target_hi = sc.target_height
        x.target_dx, x.target_dy = cfg.target_xy
        x.spawn_lo, x.spawn_hi = wp.vec2(sc.cube_x[0], sc.cube_y[0]), wp.vec2(sc.cube_x[1], sc.cube_y[1])
        x.actions, x.last_actions = self._actions, self._last_actions
        x.joint_q, x.joint_qd, x.body_q, x.body_qd, x.contact = a.joint_q, a.joint_qd, a.body_q, a.body_qd, \
            self._contact
        x.target, x.unstable, x.failed = self._target, a.unstable, self._failed
        x.ee_mode, x.ee_target, x.grip = ARM_ACTIONS.get(cfg.arm).code, self._command.ee_target, self._command.grip
        x.obs_past = self._obs_past
        return x

    def action_scale(self) -> list[float]:
        return list(self.arm_action.scale(self.cfg, self.arm)) + [self.arm.gripper_open] * self.gripper.num_actions

    def _pre_physics(self) -> None:
        wp.launch(self._command_kernel, self.num_envs, device=self.dev.warp,
                  inputs=[self._task, self.manip, self._command, self._chain])

    def _joint_actions(self) -> wp.array:
        return self._command.joint_actions

    def _post_physics(self) -> None:
        wp.launch(self._post_step, self.num_envs, device=self.dev.warp, inputs=[
            self._task, self.manip, self.episodes(), self._causes],
            outputs=[self._rng, self._state, self._obs, self._final_obs, self._cube_height])

    def _observe_step(self) -> None:
        self._observe(self._dones, clear=False)

    def _observe(self, mask: wp.array, *, clear: bool) -> None:
        w = self.world
        wp.launch(self._observe_kernel, self.num_envs, device=self.dev.warp, inputs=[
            self._task, self.manip, self._command, mask, int(clear), self._rng, self.episodes(), w.arrays.joint_q],
            outputs=[self._state, self._obs])

    def _observe_reset(self) -> None:
        self._observe(self._reset_mask, clear=True)

    def _task_state(self) -> dict[str, torch.Tensor]:
        u = self._command
        return {"target": self.target, "ee_target": self.ee_target, "q_target": wp.to_torch(u.q_target),
                "grip": wp.to_torch(u.grip),
                **({"obs_past": wp.to_torch(self._obs_past)} if self._past_width else {})}

register_task("lift", TaskSpec(
    env_cls=LiftEnv,
    config=LiftConfig(),
    description="horde's 7-DoF arm with a parallel gripper lifts a cube from a random spot on a table to a random "
                "height",
    renderer=render.draw_lift,
))
