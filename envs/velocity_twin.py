"""The velocity task in MuJoCo's C engine: rung 3 of the export ladder (:mod:`horde.deploy.sim2sim`) for every
legged robot. MuJoCo's state is copied into a one-env :class:`horde.envs.velocity_terms.Legged` on the CPU, bound
field for field as the env binds it (:meth:`VelocityTwin._bind`), and the task's own Warp functions compute the
reward, the failure, the user's observation terms (``extra_observations``) and the interval events (the
randomization's push, ``task.events``), whose changes to the base and joint state go back into MuJoCo.

Physics is nominal: the randomization's startup and episode draws (link masses, friction, PD gains, motor
strength, action delay) and observation noise are not applied; its pushes are, at ``push_interval`` with
``push_velocity`` (a copy of the config with ``push_interval`` 0 turns them off).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import warp as wp

from horde.envs.obs_writer import raw_kernel
from horde.envs.robots import resolve_robot
from horde.envs.terms import UnknownTermError
from horde.envs.velocity_obs import split_params
from horde.envs.velocity_terms import (BASE_OBS, CLOCK_OBS, VELOCITY_EVENTS, VELOCITY_OBSERVATIONS,
                                       VELOCITY_TERMINATIONS, VELOCITY_TERMS, Legged, advance)
from horde.sim.randomize import RandomizationConfig, actuation_ranges
from horde.sim.terrain import Terrain, TerrainConfig

__all__ = ["VelocityTwin", "twin_event_kernel", "twin_step_kernel"]


@functools.lru_cache(maxsize=None)
def twin_step_kernel(terms: tuple[wp.Function, ...], terminations: tuple[wp.Function, wp.Function]) -> wp.Kernel:
    """Failure (unstable physics or a failure term of ``terminations``, :meth:`TerminationSet.fused`'s pair;
    time-out terms end the episode as the time limit does), the reward terms into ``out[T, N]`` and the state they
    move on: the env step's own functions."""
    check = terminations[0]

    @wp.kernel(enable_backward=False, module="unique")
    def velocity_twin_step(x: Legged, out: wp.array2d(dtype=float)):
        i = wp.tid()
        hits, failed, timed_out = wp.static(check)(x, i)
        x.failed[i] = failed or x.unstable[i]
        for k in range(wp.static(len(terms))):
            out[k, i] = wp.static(terms[k])(x, i)
        advance(x, i)

    return velocity_twin_step


@functools.lru_cache(maxsize=None)
def twin_event_kernel(events: tuple[wp.Function, ...]) -> wp.Kernel:
    """The interval events (:data:`VELOCITY_EVENTS`) flagged in ``due`` [len(events)], in order, on the one env,
    with the env's random state ``rng`` [1]: the env's pre-step loop (``pre_step_kernel``)."""

    @wp.kernel(enable_backward=False, module="unique")
    def velocity_twin_events(x: Legged, due: wp.array(dtype=wp.bool), rng: wp.array(dtype=wp.uint32)):
        s = rng[0]
        for e in range(wp.static(len(events))):
            if due[e]:
                s = wp.static(events[e])(x, 0, s)
        rng[0] = s

    return velocity_twin_events


def mujoco_foot(model, name: str) -> tuple[int, tuple[float, float, float]]:
    """A foot of a MuJoCo model (a body, geom or site name, as :class:`horde.envs.robots.LeggedRobot` takes it):
    its body id and its point in that body's frame [m] (zeros for a body)."""
    try:
        return model.body(name).id, (0.0, 0.0, 0.0)
    except KeyError:
        pass
    for kind, pos in (("site", model.site_pos), ("geom", model.geom_pos)):
        try:
            element = getattr(model, kind)(name)
        except KeyError:
            continue
        return int(np.asarray(element.bodyid).ravel()[0]), tuple(float(v) for v in pos[element.id])
    raise ValueError(f"foot '{name}' is not a body, geom or site of the model")


class VelocityTwin:
    """The velocity task in MuJoCo's C engine: commands drawn per episode and every ``command_resample_s``; contact
    forces of the robot's contact bodies from ``mj_contactForce``. MuJoCo's state is copied into a one-env
    :class:`Legged` on the CPU and the task's own Warp term functions (``reward_scales``' keys) compute the reward
    and the failure: a term added to :data:`VELOCITY_TERMS` needs no edit here. Every robot joint is read by name:
    the acting ones (``action_joints``) take the policy's actions, the held ones only their PD hold (the sim2sim
    loop's :class:`horde.deploy.sim2sim.Joints`)."""

    quantities = BASE_OBS + CLOCK_OBS
    """The base observations, then the gait clock (unused by a bundle without one): :meth:`values`' columns."""
    sources = ("base_lin_vel", "base_ang_vel", "projected_gravity", "velocity_command", "gait_clock")
    """The observation sources every velocity twin reads from MuJoCo (:meth:`raw`); an instance adds the IMU's
    (``imu``) and the user's terms (``extra_observations``). Joints and last actions come from the sim2sim loop; a
    bundle that reads others (a height scan, a depth image) is refused in one line."""
    per_second = True
    """Reward scales are per second: multiplied by the control period, as horde does."""

    @staticmethod
    def load_model(cfg: dict):
        """The robot's MJCF as horde simulates it: a ground plane, contacts between the robot and the ground only,
        the robot config's armature, and Newton's solver options and contact parameters
        (:func:`horde.sim.mujoco_model.match_newton`)."""
        import mujoco

        robot = resolve_robot(cfg.get("robot", "quad12"))
        spec = mujoco.MjSpec.from_file(robot.mjcf_path())
        if not any(g.type == mujoco.mjtGeom.mjGEOM_PLANE for g in spec.worldbody.geoms):
            spec.worldbody.add_geom(name="horde_ground", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05])
        model = spec.compile()
        robot_geom = model.geom_bodyid > 0
        model.geom_contype[robot_geom], model.geom_conaffinity[robot_geom] = 0, 1
        model.geom_contype[~robot_geom], model.geom_conaffinity[~robot_geom] = 1, 1
        if robot.armature is not None:
            for j, arm in zip(robot.joints, robot.armature):
                model.dof_armature[model.jnt_dofadr[model.joint(j).id]] = arm
        # like for like: the solver options and contact parameters horde's MuJoCo (C engine or MuJoCo-Warp, both
        # Newton's conversion) simulates with, e.g. contact damping ratio 0.5 where the MJCF keeps MuJoCo's 1.0
        from horde.sim.mujoco_model import match_newton, newton_mujoco_model
        from horde.sim.newton_build import load_mjcf

        ke = float((cfg.get("sim") or {}).get("contact_ke", 1.0e4))
        builder = load_mjcf(robot.mjcf_path(), contact_ke=ke, solver="mujoco", self_collisions=False, meshes=False)
        match_newton(model, newton_mujoco_model(builder, ground=True, contact_ke=ke)[1].mj_model)
        return model

    def __init__(self, model, cfg: dict, control_dt: float) -> None:
        self.model, self.cfg, self.dt = model, cfg, control_dt
        if cfg.get("command", "uniform_velocity") != "uniform_velocity":
            raise ValueError(f"task.command={cfg['command']}: the MuJoCo twin draws uniform_velocity's commands "
                             "only (a user's command term has no MuJoCo counterpart here)")
        self.robot = robot = resolve_robot(cfg.get("robot", "quad12"))
        self.joint_names = robot.joints
        """The robot's actuated joints, config order: each acts (:attr:`acting`) or is held by PD."""
        self.acting = robot.leg_joints if cfg.get("action_joints", "all") == "legs" else robot.joints
        """The joints the actions drive, in action-column order (the env's ``action_names``)."""
        try:
            ids = [model.joint(j).id for j in robot.joints]
        except KeyError as exc:
            raise ValueError(f"robot '{robot.name}': joint {exc} is not in its MJCF") from None
        self.qadr = np.array([model.jnt_qposadr[j] for j in ids])
        self.dadr = np.array([model.jnt_dofadr[j] for j in ids])
        self.base = model.body(robot.base).id if robot.base else 1
        self.com = model.body_ipos[self.base].copy()  # horde's linear velocity is the base COM's
        self.imu = bool(cfg.get("imu", False))
        self.imu_site = model.site(robot.imu_site).id if self.imu and robot.imu_site else None
        """MuJoCo site of the IMU (``imu``), or None: the base body's frame (a robot without a named IMU site)."""
        self.extras = self._extras(cfg)
        self.sources = (self.sources + (("imu_gyro", "imu_projected_gravity") if self.imu else ())
                        + tuple(e.name for e in self.extras))
        dr = cfg.get("randomization") or {}
        push = bool(dr.get("enabled")) and dr.get("push_interval", 0.0) > 0
        self.pushes = ({"interval_s": float(dr["push_interval"]), "velocity_mps": float(dr["push_velocity"])}
                       if push else None)
        """The randomization's pushes this twin runs (the env's ``push`` event), or None."""
        self.event_names = (("push",) if push else ()) + tuple(cfg.get("events") or {})
        """Interval events in the env's order: the randomization's push, then ``task.events``."""
        self.event_steps = (([int(round(dr["push_interval"] / control_dt))] if push else [])
                            + [max(int(round(float(v) / control_dt)), 1) for v in (cfg.get("events") or {}).values()])
        events = VELOCITY_EVENTS.resolve_mode(self.event_names, "interval", "task.events", cfg.get("event_params"))
        self.event_kernel = twin_event_kernel(events) if events else None
        feet = [mujoco_foot(model, f) for f in robot.feet]  # (body id, point in the body's frame)
        others = (mujoco_foot(model, n) for n in (*robot.undesired_contacts, *robot.failure_contacts))
        bodies = tuple(model.body(b).name for b, _ in (*feet, *others))
        self.row = np.full(model.nbody, -1)
        for r, name in enumerate(bodies):
            self.row[model.body(name).id] = r
        self.rows = len(bodies)
        self.resample = max(int(round(cfg["command_resample_s"] / control_dt)), 0)
        self.names = tuple(cfg["reward_scales"])
        ends = list(cfg.get("terminations", ["body_contact", "tilt"]))  # bundles from before the terms: both
        self.kernel = twin_step_kernel(VELOCITY_TERMS.resolve(self.names, cfg.get("reward_params")),
                                       VELOCITY_TERMINATIONS.fused(ends, cfg.get("termination_params")))
        self.x = self._bind(model, cfg, control_dt, feet)
        with wp.ScopedDevice("cpu"):
            self.out = wp.zeros((len(self.names), 1), dtype=float)
            self.extra_out = wp.zeros((1, max(sum(e.width for e in self.extras), 1)), dtype=float)
            self.due = wp.zeros(max(len(events), 1), dtype=wp.bool)
            self.rng_state = wp.zeros(1, dtype=wp.uint32)
        self.extra_kernel = raw_kernel(Legged, tuple(e.term() for e in self.extras)) if self.extras else None
        self.command = self.x.command.numpy()[0]  # numpy views of the CPU arrays: writes go through
        self.steps, self.pushed = 0, 0
        self.track_err: list[float] = []
        self._columns: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}

    @staticmethod
    def _extras(cfg: dict) -> tuple:
        """The user's observation terms (``extra_observations``); one that this process does not know fails in one
        line naming it."""
        names = list(cfg.get("extra_observations") or [])
        params = split_params(cfg.get("observation_params") or {})[1]  # without noise, scale, clip: policy.json's
        try:
            return VELOCITY_OBSERVATIONS.resolve(names, params)
        except UnknownTermError:
            bases = [str(params.get(n, {}).get("func", n)) for n in names]
            missing = [b for b in bases if b not in VELOCITY_OBSERVATIONS.names()]
            if not missing:  # a parameter mistake: its own line
                raise
            raise UnknownTermError(
                f"observation term {', '.join(repr(n) for n in missing)} (task.extra_observations) is not registered "
                "in this process, so the MuJoCo twin cannot compute it: import the module that defines it (the run's "
                "imports=[...])") from None

    def _bind(self, model, cfg: dict, control_dt: float, feet: list) -> Legged:
        """A one-env :class:`Legged` on the CPU with every field the env's ``_context`` binds, at the nominal values
        of what the randomization draws (PD gains, motor strength, no action delay)."""
        robot = self.robot
        nj, na, nb = len(robot.joints), len(self.acting), model.nbody - 1  # Newton has no world body
        q0 = model.qpos0
        root = [*q0[:2], robot.root_height if robot.root_height is not None else q0[2], *q0[[4, 5, 6, 3]]]
        kp0, kd0 = self._nominal_gains(cfg)
        dr = dict(cfg.get("randomization") or {})
        nominal = RandomizationConfig(**{k: v for k, v in dr.items() if k in RandomizationConfig.__dataclass_fields__})
        ranges = actuation_ranges(nominal)
        ranges.enabled = 0  # nominal physics: the episode's gains are the nominal ones
        with wp.ScopedDevice("cpu"):
            x = Legged()
            x.root, x.dt, x.sigma = self.base - 1, control_dt, cfg["tracking_sigma"]
            x.air_target, x.contact_threshold = cfg["feet_air_time_target"], cfg["contact_threshold"]
            x.cos_max_tilt, x.feet_min_distance = math.cos(cfg["max_tilt"]), cfg.get("feet_min_distance", 0.2)
            x.n_feet, x.n_undesired = len(robot.feet), len(robot.undesired_contacts)
            x.actions, x.last_actions = wp.zeros((1, na), dtype=float), wp.zeros((1, na), dtype=float)
            x.default_q = wp.array(root + list(robot.default_joint_pos), dtype=float)
            x.deviation = wp.array(list(robot.deviation_weight or [0.0] * nj), dtype=float)
            x.q_index = wp.array([7 + k for k in range(nj)], dtype=int)  # joint_q holds the joints in config order
            x.feet_body = wp.array([b - 1 for b, _ in feet], dtype=int)
            # the twin's body_qd is the velocity of the body's origin: the arm to the foot is its offset
            x.feet_offset = wp.array([p for _, p in feet], dtype=wp.vec3)
            x.feet_arm = wp.array([p for _, p in feet], dtype=wp.vec3)
            x.joint_q, x.joint_qd = wp.zeros((1, 7 + nj), dtype=float), wp.zeros((1, 6 + nj), dtype=float)
            x.joint_f = wp.zeros((1, 6 + nj), dtype=float)
            x.imu_gyro = wp.zeros(1, dtype=wp.vec3)  # zeros without an IMU, as the env's
            x.depth = wp.zeros((1, 1, 1), dtype=float)  # the env's without a camera (a camera bundle is refused)
            x.body_q = wp.zeros((1, nb), dtype=wp.transform)
            x.body_qd = wp.zeros((1, nb), dtype=wp.spatial_vector)
            x.root_vel_base, x.contact = wp.zeros((1, 6), dtype=float), wp.zeros((1, self.rows), dtype=wp.vec3)
            x.unstable, x.failed = wp.zeros(1, dtype=wp.bool), wp.zeros(1, dtype=wp.bool)
            x.command, x.air_time = wp.zeros((1, 3), dtype=float), wp.zeros((1, x.n_feet), dtype=float)
            x.contact_time = wp.zeros((1, x.n_feet), dtype=float)
            x.gait_phase = wp.zeros(1, dtype=float)
            x.gait_offset = wp.array(list(robot.foot_phase_offsets), dtype=float)
            x.gait_stance, x.swing_height = cfg.get("gait_stance", 0.55), cfg.get("feet_swing_height", 0.08)
            x.push_velocity = wp.array([float(dr.get("push_velocity", 0.0))], dtype=float)  # the full push
            x.delay, x.max_delay, x.ranges = wp.zeros(1, dtype=wp.int32), 0, ranges
            x.kp0, x.kd0 = wp.array(kp0, dtype=float), wp.array(kd0, dtype=float)
            x.kp, x.kd = wp.array([kp0], dtype=float), wp.array([kd0], dtype=float)
            x.strength = wp.ones((1, nj), dtype=float)
            c = x.cmd
            c.vx = wp.array(list(cfg["command_vx"]), dtype=float)
            c.vy = wp.array(list(cfg["command_vy"]), dtype=float)
            c.yaw = wp.array(list(cfg["command_yaw_rate"]), dtype=float)
            c.standing_fraction, c.heading_fraction = cfg["standing_fraction"], 0.0  # the twin holds yaw rates
            c.heading_stiffness, c.heading = cfg.get("heading_stiffness", 0.5), wp.zeros((1, 2), dtype=float)
            x.cmd = c
            # the observation's own sources, for a user term that reads them: the joints in config order, no IMU
            # (the twin reads its IMU in numpy), flat ground, no scan (a rough or scanning bundle is refused)
            x.qd_index = wp.array([6 + k for k in range(nj)], dtype=int)
            x.imu, x.imu_q = 0, wp.quat_identity()
            x.grid, x.scan = Terrain(TerrainConfig()).grid("cpu"), wp.zeros(1, dtype=wp.vec2)
            x.scan_yaw = int(dict(cfg.get("height_scan") or {}).get("yaw_aligned", True))
            x.obs_past = wp.zeros((1, 1), dtype=float)  # the twin observes through the robot side: no delay
        return x

    def _nominal_gains(self, cfg: dict) -> tuple[list[float], list[float]]:
        """PD stiffness and damping per robot joint as the env computes them (the robot's, the config's overrides)."""
        from types import SimpleNamespace

        from horde.envs.velocity import _gains  # here: velocity.py imports this module

        over = SimpleNamespace(robot=cfg.get("robot", "quad12"), action_scale=cfg.get("action_scale"),
                               stiffness=cfg.get("stiffness"), damping=cfg.get("damping"),
                               joint_gains=dict(cfg.get("joint_gains") or {}))
        _, kp, kd = _gains(over, self.robot)
        return kp, kd

    def draw_command(self, rng: np.random.Generator) -> None:
        cfg = self.cfg
        stand = rng.uniform() < cfg["standing_fraction"]
        cmd = [rng.uniform(*cfg["command_vx"]), rng.uniform(*cfg["command_vy"]), rng.uniform(*cfg["command_yaw_rate"])]
        self.command[:] = 0.0 if stand else np.array(cmd)

    def reset(self, model, data, joints, rng: np.random.Generator) -> None:
        import mujoco

        joints.set_noisy_default(data, self.cfg["init_joint_pos_range"], 0.0, rng)
        if self.robot.root_height is not None:
            data.qpos[2] = self.robot.root_height
        yaw = rng.uniform(-1.0, 1.0) * self.cfg["init_yaw_range"]
        q0 = data.qpos[3:7].copy()
        mujoco.mju_mulQuat(data.qpos[3:7], np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]), q0)
        self.draw_command(rng)
        x = self.x
        for arr in (x.air_time, x.contact_time, x.actions, x.last_actions, x.gait_phase):
            arr.zero_()
        if self.event_kernel is not None:  # drawn last: a twin without events keeps its random stream
            self.rng_state.numpy()[0] = rng.integers(1, 2**32)
        self.rng, self.steps, self.pushed, self.track_err = rng, 0, 0, []

    def base_twist(self, data) -> tuple[np.ndarray, np.ndarray]:
        """Base-frame linear velocity of the base COM [m/s] and angular velocity [rad/s] (MuJoCo's free-joint qvel
        is the world-frame velocity of the body origin and the body-frame angular velocity)."""
        rot = data.xmat[self.base].reshape(3, 3)
        w = data.qvel[3:6]
        return rot.T @ data.qvel[0:3] + np.cross(w, self.com), w.copy()

    def phase(self, steps: int) -> float:
        """The gait clock's phase ``steps`` control steps into the episode (the env's ``clock_phase``)."""
        c = steps * self.dt / self.cfg.get("gait_period", 0.8)
        return c - math.floor(c)

    def imu_reading(self, data) -> tuple[np.ndarray, np.ndarray]:
        """The IMU's angular velocity [rad/s] and gravity direction in its frame (the base's without a site)."""
        import mujoco

        v6 = np.zeros(6)
        if self.imu_site is None:
            mujoco.mj_objectVelocity(self.model, data, mujoco.mjtObj.mjOBJ_XBODY, self.base, v6, 1)
            rot = data.xmat[self.base].reshape(3, 3)
        else:
            mujoco.mj_objectVelocity(self.model, data, mujoco.mjtObj.mjOBJ_SITE, self.imu_site, v6, 1)
            rot = data.site_xmat[self.imu_site].reshape(3, 3)
        return v6[:3].copy(), -rot[2].copy()

    def raw(self, data) -> dict[str, np.ndarray]:
        """:attr:`sources` of ``data``, in the units and frames of :data:`horde.envs.observations.SOURCES`. The
        user's terms run on the state as it is, with the actions of the last :meth:`terms` (zeros after a reset)."""
        v = self.values(data)
        out = {"base_lin_vel": v[0:3], "base_ang_vel": v[3:6], "projected_gravity": v[6:9],
               "velocity_command": v[9:12], "gait_clock": v[12:14]}
        if self.imu:
            out["imu_gyro"], out["imu_projected_gravity"] = self.imu_reading(data)
        if self.extra_kernel is not None:
            self._copy_state(data)
            self.x.gait_phase.numpy()[0] = self.phase(self.steps)
            wp.launch(self.extra_kernel, 1, inputs=[self.x], outputs=[self.extra_out],
                      device="cpu")
            row, c = self.extra_out.numpy()[0], 0
            for e in self.extras:
                out[e.name] = row[c:c + e.width].astype(np.float64)
                c += e.width
        return out

    def values(self, data) -> np.ndarray:
        v, w = self.base_twist(data)
        gravity = -data.xmat[self.base].reshape(3, 3)[2]  # R^T (0, 0, -1)
        p = 2.0 * math.pi * self.phase(self.steps)
        return np.concatenate([v, w, gravity, self.command, [math.sin(p), math.cos(p)]])

    def contact_forces(self, model, data) -> np.ndarray:
        """Total contact force [N] on each contact row's body, world frame, [rows, 3]."""
        import mujoco

        out, f6 = np.zeros((self.rows, 3)), np.zeros(6)
        for i in range(data.ncon):
            c = data.contact[i]
            r1, r2 = self.row[model.geom_bodyid[c.geom1]], self.row[model.geom_bodyid[c.geom2]]
            if r1 < 0 and r2 < 0:
                continue
            mujoco.mj_contactForce(model, data, i, f6)
            f = c.frame.reshape(3, 3).T @ f6[:3]  # the force geom1 exerts on geom2, world frame
            if r2 >= 0:
                out[r2] += f
            if r1 >= 0:
                out[r1] -= f
        return out

    def _copy_state(self, data) -> None:
        """MuJoCo's state into the Legged arrays, in Newton's conventions (quaternions xyzw, world-frame twists)."""
        import mujoco

        model = self.model
        mujoco.mj_forward(model, data)  # after mj_step, poses and contact forces lag qpos by one step
        x = self.x
        q, qd = x.joint_q.numpy()[0], x.joint_qd.numpy()[0]
        q[:3], q[3:7], q[7:] = data.qpos[:3], data.qpos[[4, 5, 6, 3]], data.qpos[self.qadr]
        rot = data.xmat[self.base].reshape(3, 3)
        w_world = rot @ data.qvel[3:6]
        qd[:3], qd[3:6], qd[6:] = data.qvel[:3] + np.cross(w_world, rot @ self.com), w_world, data.qvel[self.dadr]
        body_q, body_qd, v6 = x.body_q.numpy()[0], x.body_qd.numpy()[0], np.zeros(6)
        body_q[:, :3], body_q[:, 3:] = data.xpos[1:], data.xquat[1:][:, [1, 2, 3, 0]]
        for b in range(1, model.nbody):
            mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_XBODY, b, v6, 0)
            body_qd[b - 1, :3], body_qd[b - 1, 3:] = v6[3:], v6[:3]
        v, w = self.base_twist(data)
        x.root_vel_base.numpy()[0] = np.concatenate([v, w])
        if self.imu:
            x.imu_gyro.numpy()[0] = self.imu_reading(data)[0]
        x.contact.numpy()[0] = self.contact_forces(model, data)
        x.unstable.numpy()[0] = not np.isfinite(data.qpos).all()

    def _columns_of(self, joints) -> tuple[np.ndarray, np.ndarray]:
        """For the sim2sim loop's ``joints``: the action column of each of :attr:`acting`, and the robot joint of
        each torque column (``joints.all_names``: the acting joints, then the held ones), matched by name."""
        names = tuple(joints.names)
        all_names = tuple(getattr(joints, "all_names", names))
        key = (names, all_names)
        if key not in self._columns:
            missing = [j for j in self.acting if j not in names]
            if missing or len(names) != len(self.acting):
                raise ValueError(f"the actions drive {', '.join(names)}; the run's acting joints are "
                                 f"{', '.join(self.acting)}")
            unknown = [j for j in all_names if j not in self.joint_names]
            if unknown:
                raise ValueError(f"joints {', '.join(unknown)} are not robot '{self.robot.name}''s")
            self._columns[key] = (np.array([names.index(j) for j in self.acting]),
                                  np.array([self.joint_names.index(j) for j in all_names], dtype=int))
        return self._columns[key]

    def _set_actions(self, joints, a: np.ndarray, last: np.ndarray, tau: np.ndarray | None) -> None:
        """This step's actions and the previous (clipped) ones, columns of ``joints.names``, into the acting joints'
        columns; ``tau`` (columns of ``joints.all_names``) into each robot joint's torque."""
        cols, torque_rows = self._columns_of(joints)
        x = self.x
        x.actions.numpy()[0], x.last_actions.numpy()[0] = np.asarray(a)[cols], np.asarray(last)[cols]
        if tau is not None:
            f = x.joint_f.numpy()[0]
            f[:] = 0.0
            f[6 + torque_rows] = tau

    def pre_physics(self, data, joints, a: np.ndarray, last: np.ndarray) -> None:
        """Before this step's physics: the interval events due on it (the env's pre-step: the push every
        ``push_interval``), run on MuJoCo's state; what they change of the base and joints goes back into
        ``data``."""
        step = self.steps + 1
        due = [n > 0 and step % n == 0 for n in self.event_steps]
        if self.event_kernel is None or not any(due):
            return
        self._copy_state(data)
        self._set_actions(joints, a, last, None)
        x = self.x
        q, qd = x.joint_q.numpy()[0], x.joint_qd.numpy()[0]
        q0, qd0 = q.copy(), qd.copy()
        self.due.numpy()[:] = due
        wp.launch(self.event_kernel, 1, inputs=[x, self.due, self.rng_state], device="cpu")
        self.pushed += int(self.pushes is not None and due[0])
        dq, dqd = q.astype(np.float64) - q0, qd.astype(np.float64) - qd0  # only what the events changed goes back
        if dq.any():
            data.qpos[:3] += dq[:3]
            if dq[3:7].any():
                quat = q[[6, 3, 4, 5]].astype(np.float64)
                data.qpos[3:7] = quat / np.linalg.norm(quat)
            data.qpos[self.qadr] += dq[7:]
        if dqd.any():
            rot = data.xmat[self.base].reshape(3, 3)
            data.qvel[3:6] += rot.T @ dqd[3:6]  # MuJoCo: the body-frame angular velocity ...
            data.qvel[:3] += dqd[:3] - np.cross(dqd[3:6], rot @ self.com)  # ... and the origin's linear velocity
            data.qvel[self.dadr] += dqd[6:]

    def terms(self, model, data, joints, a: np.ndarray, last: np.ndarray, tau: np.ndarray
              ) -> tuple[dict[str, float], bool]:
        """The reward terms and failure of the step just taken: ``a`` this step's actions and ``last`` the previous
        step's (clipped), columns of ``joints.names``; ``tau`` the torques of the last substep [N m], columns of
        ``joints.all_names`` (acting, then held joints)."""
        self._copy_state(data)
        self._set_actions(joints, a, last, tau)
        self.x.gait_phase.numpy()[0] = self.phase(self.steps + 1)  # the clock of the step just taken
        wp.launch(self.kernel, 1, inputs=[self.x], outputs=[self.out], device="cpu")
        values = self.out.numpy()[:, 0]
        failed = bool(self.x.failed.numpy()[0])
        v, _ = self.base_twist(data)
        self.track_err.append(float(np.hypot(self.command[0] - v[0], self.command[1] - v[1])))
        self.steps += 1
        if self.resample > 0 and self.steps % self.resample == 0:
            self.draw_command(self.rng)
        return {k: float(val) for k, val in zip(self.names, values)}, failed

    def metrics(self) -> dict[str, float]:
        """Per episode; averaged over episodes under the same key."""
        out = {"lin_vel_tracking_error_mean_mps": float(np.mean(self.track_err)) if self.track_err else 0.0}
        if self.pushes is not None:
            out["pushes"] = float(self.pushed)
        return out
