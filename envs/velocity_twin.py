"""The velocity task in MuJoCo's C engine: rung 3 of the export ladder (:mod:`horde.deploy.sim2sim`) for every
legged robot. MuJoCo's state is copied into a one-env :class:`horde.envs.velocity_terms.Legged` on the CPU and the
task's own Warp term functions compute the reward and the failure.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import warp as wp

from horde.envs.robots import resolve_robot
from horde.envs.velocity_terms import BASE_OBS, CLOCK_OBS, VELOCITY_TERMINATIONS, VELOCITY_TERMS, Legged, advance

__all__ = ["VelocityTwin", "twin_step_kernel"]


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
    and the failure: a term added to :data:`VELOCITY_TERMS` needs no edit here."""

    quantities = BASE_OBS + CLOCK_OBS
    """The base observations, then the gait clock (unused by a bundle without one): :meth:`values`' columns."""
    sources = ("base_lin_vel", "base_ang_vel", "projected_gravity", "velocity_command", "gait_clock")
    """The observation sources it reads from MuJoCo (:meth:`raw`); joints and last actions come from the sim2sim
    loop. A bundle that reads others (an IMU, a height scan, a user's term) is refused in one line."""
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
        self.cfg, self.dt = cfg, control_dt
        self.robot = robot = resolve_robot(cfg.get("robot", "quad12"))
        self.base = model.body(robot.base).id if robot.base else 1
        self.com = model.body_ipos[self.base].copy()  # horde's linear velocity is the base COM's
        feet = [mujoco_foot(model, f) for f in robot.feet]  # (body id, point in the body's frame)
        bodies = tuple(model.body(b).name for b, _ in (*feet, *(mujoco_foot(model, n) for n in
                                                                  (*robot.undesired_contacts, *robot.failure_contacts))))
        self.row = np.full(model.nbody, -1)
        for r, name in enumerate(bodies):
            self.row[model.body(name).id] = r
        self.rows = len(bodies)
        self.resample = max(int(round(cfg["command_resample_s"] / control_dt)), 0)
        self.names = tuple(cfg["reward_scales"])
        ends = list(cfg.get("terminations", ["body_contact", "tilt"]))  # bundles from before the terms: both
        self.kernel = twin_step_kernel(VELOCITY_TERMS.resolve(self.names), VELOCITY_TERMINATIONS.fused(ends))
        nj, nb = len(robot.joints), model.nbody - 1  # Newton has no world body: MuJoCo body b is Newton's b - 1
        with wp.ScopedDevice("cpu"):
            x = Legged()
            x.root, x.dt, x.sigma = self.base - 1, control_dt, cfg["tracking_sigma"]
            x.air_target, x.contact_threshold = cfg["feet_air_time_target"], cfg["contact_threshold"]
            x.cos_max_tilt, x.feet_min_distance = math.cos(cfg["max_tilt"]), cfg.get("feet_min_distance", 0.2)
            x.n_feet, x.n_undesired = len(robot.feet), len(robot.undesired_contacts)
            x.actions, x.last_actions = wp.zeros((1, nj), dtype=float), wp.zeros((1, nj), dtype=float)
            x.default_q = wp.array([0.0] * 7 + list(robot.default_joint_pos), dtype=float)
            x.deviation = wp.array(list(robot.deviation_weight or [0.0] * nj), dtype=float)
            x.feet_body = wp.array([b - 1 for b, _ in feet], dtype=int)
            # the twin's body_qd is the velocity of the body's origin: the arm to the foot is its offset
            x.feet_offset = wp.array([p for _, p in feet], dtype=wp.vec3)
            x.feet_arm = wp.array([p for _, p in feet], dtype=wp.vec3)
            x.q_index = wp.array([7 + k for k in range(nj)], dtype=int)  # joint_q holds the joints in config order
            x.joint_q, x.joint_qd = wp.zeros((1, 7 + nj), dtype=float), wp.zeros((1, 6 + nj), dtype=float)
            x.joint_f = wp.zeros((1, 6 + nj), dtype=float)
            x.body_q = wp.zeros((1, nb), dtype=wp.transform)
            x.body_qd = wp.zeros((1, nb), dtype=wp.spatial_vector)
            x.root_vel_base, x.contact = wp.zeros((1, 6), dtype=float), wp.zeros((1, self.rows), dtype=wp.vec3)
            x.unstable, x.failed = wp.zeros(1, dtype=wp.bool), wp.zeros(1, dtype=wp.bool)
            x.command, x.air_time = wp.zeros((1, 3), dtype=float), wp.zeros((1, x.n_feet), dtype=float)
            x.gait_phase = wp.zeros(1, dtype=float)
            x.gait_offset = wp.array(list(robot.foot_phase_offsets), dtype=float)
            x.gait_stance, x.swing_height = cfg.get("gait_stance", 0.55), cfg.get("feet_swing_height", 0.08)
            self.out = wp.zeros((len(self.names), 1), dtype=float)
        self.x = x
        self.command = x.command.numpy()[0]  # numpy views of the CPU arrays: writes go through
        self.steps = 0
        self.track_err: list[float] = []

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
        self.x.air_time.numpy()[:] = 0.0
        self.rng, self.steps, self.track_err = rng, 0, []

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

    def raw(self, data) -> dict[str, np.ndarray]:
        """:attr:`sources` of ``data``, in the units and frames of :data:`horde.envs.observations.SOURCES`."""
        v = self.values(data)
        return {"base_lin_vel": v[0:3], "base_ang_vel": v[3:6], "projected_gravity": v[6:9],
                "velocity_command": v[9:12], "gait_clock": v[12:14]}

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

    def _copy_state(self, model, data, joints, a: np.ndarray, last: np.ndarray, tau: np.ndarray) -> None:
        """MuJoCo's state into the Legged arrays, in Newton's conventions (quaternions xyzw, world-frame twists)."""
        import mujoco

        mujoco.mj_forward(model, data)  # after mj_step, poses and contact forces lag qpos by one step
        x = self.x
        q, qd = x.joint_q.numpy()[0], x.joint_qd.numpy()[0]
        q[:3], q[3:7], q[7:] = data.qpos[:3], data.qpos[[4, 5, 6, 3]], joints.q(data)
        rot = data.xmat[self.base].reshape(3, 3)
        w_world = rot @ data.qvel[3:6]
        qd[:3], qd[3:6], qd[6:] = data.qvel[:3] + np.cross(w_world, rot @ self.com), w_world, joints.qd(data)
        f = x.joint_f.numpy()[0]
        f[:6], f[6:] = 0.0, tau
        body_q, body_qd, v6 = x.body_q.numpy()[0], x.body_qd.numpy()[0], np.zeros(6)
        body_q[:, :3], body_q[:, 3:] = data.xpos[1:], data.xquat[1:][:, [1, 2, 3, 0]]
        for b in range(1, model.nbody):
            mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_XBODY, b, v6, 0)
            body_qd[b - 1, :3], body_qd[b - 1, 3:] = v6[3:], v6[:3]
        v, w = self.base_twist(data)
        x.root_vel_base.numpy()[0] = np.concatenate([v, w])
        x.contact.numpy()[0] = self.contact_forces(model, data)
        x.unstable.numpy()[0] = not np.isfinite(data.qpos).all()
        x.actions.numpy()[0], x.last_actions.numpy()[0] = a, last

    def terms(self, model, data, joints, a: np.ndarray, last: np.ndarray, tau: np.ndarray
              ) -> tuple[dict[str, float], bool]:
        self._copy_state(model, data, joints, a, last, tau)
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
        return {"lin_vel_tracking_error_mean_mps": float(np.mean(self.track_err)) if self.track_err else 0.0}
