"""Batched articulated worlds on Newton: a :class:`horde.sim.spec.WorldSpec` replicated ``num_envs`` times, stepped
as a recordable graph.

Model -> State/Control -> Solver, as Newton lays it out:

* :func:`horde.sim.newton_build.load_robot` reads one robot from MJCF or URDF through Newton's importers;
* :func:`horde.sim.newton_build.build_model` replicates one robot builder into ``world_count`` separate worlds
  (optionally over a ground plane) and finalizes the model on the device;
* :class:`NewtonWorld` owns the Newton model, the two swapped states, the control and the actuation arrays, exposes
  zero-copy ``[num_envs, ...]`` views of them, and holds a backend (:data:`horde.sim.spec.BACKENDS`) that steps them:
  :class:`NewtonSolverBackend` (Newton's solvers, with the collision pipeline where they need it) or
  :class:`horde.sim.mujoco_batch.MujocoCBackend` (MuJoCo's C engine);
* :meth:`NewtonWorld.simulate` launches ``substeps`` x (actuation kernel, collision, solver step) on fixed arrays
  with no allocation, host sync or branch on device values, so a task records it inside its step graph;
* :meth:`NewtonWorld.inspect` is the per-control-step health check (non-finite or out-of-bounds worlds are flagged
  and counted) and also writes base-frame root velocities;
* :meth:`NewtonWorld.reset` re-samples the joint state of masked worlds and runs forward kinematics on them.

Vocabulary: Newton's ``world_count``/``body_count`` stay inside this module; the views it hands out are shaped
``[num_envs, ...]`` with one world per env.
"""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
from dataclasses import dataclass

from typing import TYPE_CHECKING

import numpy as np
import torch
import warp as wp

from horde.sim.actuation import ACTION_MODES, MODE_NET, MODE_PD, MODE_TORQUE, actuate_joints, actuator_net_inputs
from horde.sim.fields import FieldError, bounded, choice
from horde.sim.newton_build import MAXIMAL_SOLVERS, MUJOCO_SOLVERS, SOLVERS, build_model, joint_dof_layout, make_solver
from horde.sim.scene import add_objects, add_props, reset_objects
from horde.sim.world_kernels import articulation_mask, clear_warmstart, inspect_worlds, reset_joint_state

if TYPE_CHECKING:  # newton is imported where used: importing horde.envs stays light
    import newton

    from horde.sim.spec import Backend, WorldSpec

__all__ = ["DriveArrays", "NewtonSolverBackend", "NewtonWorld", "SimConfig", "WorldArrays"]


@dataclass(kw_only=True)
class SimConfig:
    """Newton world settings of an articulated task (``task.sim.<field>=...`` on the command line)."""

    solver: str = choice(SOLVERS)
    """mujoco (MuJoCo-Warp through Newton, any device), mujoco-c (MuJoCo's C engine, ``mujoco.batch``, on a thread
    pool: cpu only; :mod:`horde.sim.mujoco_batch`), xpbd or featherstone."""
    solver_iterations: int = bounded(0, ge=0)
    """Constraint-solver iterations per substep; 0 keeps the solver's (or the MJCF option's) default."""
    max_contacts: int = bounded(40, ge=1)
    """MuJoCo-Warp contact capacity per env (nconmax): raise it for robots with many collision geoms."""
    max_constraints: int = bounded(100, ge=1)
    """MuJoCo-Warp constraint-row capacity per env (njmax)."""
    contact_ke: float = bounded(1.0e4, gt=0)
    """Contact stiffness of every shape [N/m] (used by xpbd and featherstone; MuJoCo uses its own soft contacts)."""
    cpu_threads: int = bounded(0, ge=0)
    """mujoco-c: threads of MuJoCo's batch (0: every core of the machine)."""
    mujoco_actuators: bool = False
    """mujoco-c: run the PD law as MuJoCo's own actuators, per-env gains in the batch's model fields, so that one
    ``Batch.step`` call advances a control step: the same forces as horde's kernel (the default, one call per
    substep) to rounding, 2.5-5% more training env steps per second; off by default: over ten seeds the quadruped's
    recipe tracked worse with it, for a reason not found (benchmarks/README.md, "MuJoCo's own actuators")."""
    mujoco_jacobian: str = choice(("auto", "dense", "sparse"))
    """mujoco-c: MuJoCo's constraint Jacobian and its solver's matrices (``opt.jacobian``): auto (MuJoCo's choice,
    dense below 60 dofs), dense or sparse. The same physics to rounding at another cost: sparse steps the G1's
    visited states in 0.82x the time (the G1 tasks' default) and the quadruped's and the lift's in 1.12-1.15x
    (``benchmarks/physics_options.py``; benchmarks/README.md, "MuJoCo's sparse constraint Jacobian for the G1")."""
    max_distance: float = bounded(1.0e3, gt=0)
    """Health check: a world whose body is farther than this from the origin is reset [m]."""
    max_lin_vel: float = bounded(100.0, gt=0)
    """Health check: a world with a body faster than this is reset [m/s]."""
    max_ang_vel: float = bounded(1.0e3, gt=0)
    """Health check: a world with a body spinning faster than this is reset [rad/s]."""


# --- model ---------------------------------------------------------------------------------------------------------
IMU_SITE = "horde_imu"
"""Label of the site horde adds at the root body's origin when a robot names no IMU site."""


@dataclass(frozen=True)
class WorldArrays:
    """The Warp arrays of a :class:`NewtonWorld` that task kernels read and write: the same memory as the world's
    torch views, created once, valid for the world's lifetime. Rows are envs (Newton's worlds)."""

    joint_q: wp.array2d
    """Joint coordinates [num_envs, coords] [m, rad]; a floating base starts with its position [m] and quaternion
    (x, y, z, w)."""
    joint_qd: wp.array2d
    """Joint velocities [num_envs, dofs] [m/s, rad/s]; a floating base starts with its linear and angular velocity."""
    body_q: wp.array2d
    """Body poses (``wp.transform``) [num_envs, bodies] in the world frame [m]."""
    body_qd: wp.array2d
    """Body twists (``wp.spatial_vector``) [num_envs, bodies] in the world frame [m/s, rad/s]."""
    joint_f: wp.array2d
    """Generalized forces applied by the actuation law [num_envs, dofs] [N, N m]."""
    root_vel_base: wp.array2d
    """Base-frame root twist [num_envs, 6] (linear [m/s], angular [rad/s]) from the last health check."""
    unstable: wp.array
    """Bool [num_envs]: worlds flagged (and reset) by the last health check."""
    default_joint_q: wp.array
    """Default joint coordinates [coords] (the model's initial pose)."""
    stiffness: wp.array2d
    """PD stiffness per env and actuated joint [num_envs, actuated] [N m/rad] (randomization writes it)."""
    damping: wp.array2d
    """PD damping per env and actuated joint [num_envs, actuated] [N m s/rad]."""
    motor_strength: wp.array2d
    """Torque multiplier per env and actuated joint [num_envs, actuated]."""
    nominal_stiffness: wp.array
    """The actuation config's stiffness [actuated] [N m/rad]."""
    nominal_damping: wp.array
    """The actuation config's damping [actuated] [N m s/rad]."""
    imu_acc: wp.array | None = None
    """IMU specific force (``wp.vec3``) [num_envs] [m/s^2], site frame (zeros without an IMU)."""
    imu_gyro: wp.array | None = None
    """IMU angular velocity (``wp.vec3``) [num_envs] [rad/s], site frame (zeros without an IMU)."""


@dataclass(frozen=True)
class DriveArrays:
    """The actuation law's arrays of a :class:`NewtonWorld` (``world.drive``): what every backend's actuation kernel
    reads. Per actuated joint unless stated; per-env rows are the same memory as the world's torch views."""

    mode: int
    """``MODE_PD``, ``MODE_TORQUE`` or ``MODE_NET`` (:mod:`horde.sim.actuation`)."""
    q_index: wp.array
    """Each actuated joint's coordinate in ``joint_q`` [actuated]."""
    qd_index: wp.array
    """Each actuated joint's dof in ``joint_qd`` [actuated]."""
    scale: wp.array
    offset: wp.array
    stiffness: wp.array2d
    """[num_envs, actuated] [N m/rad] (randomization writes it)."""
    damping: wp.array2d
    strength: wp.array2d
    """Torque multiplier [num_envs, actuated]."""
    effort: wp.array2d
    """Effort limit [num_envs, actuated] [N m]."""
    dc_motor: int
    """1: the DC-motor torque-speed line (``velocity_limit``) caps the torque."""
    velocity_limit: wp.array
    lower: wp.array
    """Joint limits [actuated] [m, rad]."""
    upper: wp.array
    net_effort: wp.array
    """The actuator network's output [num_envs, actuated] (a 1-element placeholder without one)."""


class NewtonWorld:
    """``num_envs`` copies of a :class:`horde.sim.spec.WorldSpec` on a Newton model, stepped by a backend (Newton's
    solvers, :class:`NewtonSolverBackend`, or MuJoCo's C engine, :class:`horde.sim.mujoco_batch.MujocoCBackend`),
    with the step split into recordable launches. Build it with :func:`horde.sim.spec.world_from_spec`.

    Views (zero-copy torch, one world per env; valid for the life of the world):
    ``joint_q`` [num_envs, coords] (root position [m] and quaternion xyzw first for a floating base, then joint
    angles [rad]), ``joint_qd`` [num_envs, dofs] (root linear [m/s] and angular [rad/s] velocity first, then joint
    rates [rad/s]), ``body_pose`` [num_envs, bodies, 7] (position [m], quaternion xyzw, world frame),
    ``body_vel`` [num_envs, bodies, 6] (COM linear [m/s], angular [rad/s], world frame), ``root_pose`` [num_envs, 7],
    ``root_vel`` [num_envs, 6] (world frame), ``root_vel_base`` [num_envs, 6] (base frame, written by
    :meth:`inspect`), ``joint_f`` [num_envs, dofs] (applied joint torques [N m]), ``unstable`` bool [num_envs],
    ``contact_forces`` [num_envs, len(contact_bodies), 3] (total contact force on each named body in the last
    substep [N], world frame; MuJoCo solvers only).

    Free objects and static props (:mod:`horde.sim.scene`, the spec's ``objects``/``props``) follow the robot in
    every env: ``object_pose`` [num_envs, objects, 7] and ``object_vel`` [num_envs, objects, 6] are views of their
    bodies; their coordinates follow the robot's in ``joint_q`` (7 each) and ``joint_qd`` (6 each), and every reset
    places them within their initial-state ranges.

    Per-env actuation (writable views, for domain randomization): ``stiffness``, ``damping``, ``motor_strength``
    (torque multiplier) and ``effort_limit``, each [num_envs, num_actions]; ``spawn_origin`` [num_envs, 3] is where
    a floating base is placed on reset (terrain tiles).
    """

    def __init__(self, spec: WorldSpec, *, sim: SimConfig, num_envs: int, device: str, backend: Backend) -> None:
        import newton

        if sim.solver not in SOLVERS or sim.solver == "auto":
            raise ValueError(f"solver '{sim.solver}': build the world with horde.sim.spec.world_from_spec")
        entity = spec.robot
        robot, actuation, actuated_joints = entity.builder, entity.actuation, entity.actuated_joints
        if actuation.mode not in ACTION_MODES:
            raise ValueError(f"unknown action mode '{actuation.mode}'; valid modes: {', '.join(ACTION_MODES)}")
        n = num_envs
        self.spec = spec
        """The :class:`horde.sim.spec.WorldSpec` this world was built from."""
        self.backend = backend
        """What steps the physics (:data:`horde.sim.spec.BACKENDS`)."""
        self.num_envs, self.device, self.sim = n, device, sim
        self.sim_dt, self.substeps = spec.sim_dt, spec.substeps
        self.actuation = actuation
        """The actuation law this world applies (:class:`horde.sim.actuation.Actuation`, nominal values; per-env
        randomized gains live in ``stiffness``/``damping``/``motor_strength``): what ``policy.json`` states."""
        self.actuated_joints = tuple(actuated_joints)
        """The joints ``actuation`` drives, in its order."""
        self.maximal = sim.solver in MAXIMAL_SOLVERS
        # the robot first, then each free object (7 coordinates, 6 dofs, 1 body each)
        self.robot_coords, self.robot_dofs, self.robot_bodies = (robot.joint_coord_count, robot.joint_dof_count,
                                                                 robot.body_count)
        self.floating = robot.joint_coord_count == robot.joint_dof_count + 1  # a free joint: 7 coords, 6 dofs
        self.objects = tuple(spec.objects)
        imu_site = spec.sensors.imu_site
        self.imu_site = imu_site
        if imu_site == "":  # no named site: an IMU at the root body's origin, aligned with it
            robot.add_site(entity.root_body, label=IMU_SITE)
        add_objects(robot, self.objects)
        add_props(robot, spec.props)
        self.coords, self.dofs, self.bodies = robot.joint_coord_count, robot.joint_dof_count, robot.body_count
        self.root_body = entity.root_body
        q_idx, qd_idx = joint_dof_layout(robot, actuated_joints)
        a = len(actuated_joints)
        for key in ("scale", "offset", "stiffness", "damping", "effort_limit", "velocity_limit"):
            if getattr(actuation, key) is not None and len(getattr(actuation, key)) != a:
                raise ValueError(f"actuation.{key} has {len(getattr(actuation, key))} values for {a} joints")
        lower = [robot.joint_limit_lower[d] for d in qd_idx]
        upper = [robot.joint_limit_upper[d] for d in qd_idx]
        default_q = list(robot.joint_q)
        # Coordinate limits for resets: hinge coordinates share their dof's limits; others are unbounded.
        q_lower, q_upper = [-1.0e9] * self.coords, [1.0e9] * self.coords
        for qi, di in zip(q_idx, qd_idx):
            q_lower[qi], q_upper[qi] = robot.joint_limit_lower[di], robot.joint_limit_upper[di]

        self.yaw_range = float(entity.yaw_range)
        self.model = build_model(robot, world_count=n, device=device, solver=sim.solver, ground=spec.ground,
                                 contact_ke=sim.contact_ke, terrain=spec.terrain)
        self.solver = backend.build(self, robot)
        """The backend's solver (randomization calls its ``notify_model_changed``)."""
        self.state_0, self.state_1 = self.model.state(), self.model.state()
        self.control = self.model.control()
        newton.eval_fk(self.model, self.state_0.joint_q, self.state_0.joint_qd, self.state_0)

        s = self.state_0
        self._joint_q = s.joint_q.reshape((n, self.coords))
        self._joint_qd = s.joint_qd.reshape((n, self.dofs))
        self._body_q = s.body_q.reshape((n, self.bodies))
        self._body_qd = s.body_qd.reshape((n, self.bodies))
        self._joint_f = self.control.joint_f.reshape((n, self.dofs))
        q_noise, qd_noise = entity.q_noise, entity.qd_noise

        with wp.ScopedDevice(device):
            mode = MODE_PD if actuation.mode == "pd" else MODE_TORQUE
            self.actuator_net = None
            if actuation.network is not None:
                if actuation.mode != "pd":
                    raise ValueError("an actuator network needs action mode 'pd' (it reads position targets)")
                from horde.sim.actuator_net import ActuatorNet

                self.actuator_net = ActuatorNet(actuation.network, num_envs=n, num_actions=a, device=device)
                mode = MODE_NET
            per_env = lambda v: wp.array(np.tile(np.asarray(v, dtype=np.float32), (n, 1)), dtype=float)  # noqa: E731
            self._stiffness0 = wp.array(actuation.stiffness, dtype=float)
            self._damping0 = wp.array(actuation.damping, dtype=float)
            self.drive = DriveArrays(
                mode=mode, q_index=wp.array(q_idx, dtype=int), qd_index=wp.array(qd_idx, dtype=int),
                scale=wp.array(actuation.scale, dtype=float), offset=wp.array(actuation.offset, dtype=float),
                stiffness=per_env(actuation.stiffness), damping=per_env(actuation.damping), strength=per_env([1.0] * a),
                effort=per_env(actuation.effort_limit), dc_motor=int(actuation.velocity_limit is not None),
                velocity_limit=wp.array(list(actuation.velocity_limit or [1.0] * a), dtype=float),
                lower=wp.array(lower, dtype=float), upper=wp.array(upper, dtype=float),
                net_effort=(self.actuator_net.effort if self.actuator_net is not None else wp.zeros(1, dtype=float)))
            """The actuation law's arrays (:class:`DriveArrays`), for the backends' actuation kernels."""
            self._origin = wp.zeros(n, dtype=wp.vec3)
            self._default_q = wp.array(default_q, dtype=float)
            self._default_qd = wp.zeros(self.dofs, dtype=float)
            pad_q, pad_qd = [0.0] * (self.coords - self.robot_coords), [0.0] * (self.dofs - self.robot_dofs)
            self._q_noise = wp.array(list(q_noise) + pad_q if q_noise is not None else [0.0] * self.coords,
                                     dtype=float)
            self._qd_noise = wp.array(list(qd_noise) + pad_qd if qd_noise is not None else [0.0] * self.dofs,
                                      dtype=float)
            k = len(self.objects)
            self._obj_coord = wp.array([self.robot_coords + 7 * j for j in range(k)], dtype=int)
            self._obj_dof = wp.array([self.robot_dofs + 6 * j for j in range(k)], dtype=int)
            self._obj_low = wp.array([o.low for o in self.objects], dtype=wp.vec3)
            self._obj_high = wp.array([o.high for o in self.objects], dtype=wp.vec3)
            self._obj_yaw_low = wp.array([o.yaw[0] for o in self.objects], dtype=float)
            self._obj_yaw_high = wp.array([o.yaw[1] for o in self.objects], dtype=float)
            self._q_lower = wp.array(q_lower, dtype=float)
            self._q_upper = wp.array(q_upper, dtype=float)
            self._unstable = wp.zeros(n, dtype=wp.bool)
            self._articulation_mask = wp.zeros(self.model.articulation_count, dtype=wp.bool)
            self._unstable_count = wp.zeros(1, dtype=wp.float64)
            self._root_vel_base = wp.zeros((n, 6), dtype=float)
        if len(self._q_noise) != self.coords or len(self._qd_noise) != self.dofs:
            raise ValueError(f"q_noise needs {self.coords} values and qd_noise {self.dofs}")

        d = self.drive
        self.arrays = WorldArrays(
            joint_q=self._joint_q, joint_qd=self._joint_qd, body_q=self._body_q, body_qd=self._body_qd,
            joint_f=self._joint_f, root_vel_base=self._root_vel_base, unstable=self._unstable,
            default_joint_q=self._default_q, stiffness=d.stiffness, damping=d.damping,
            motor_strength=d.strength, nominal_stiffness=self._stiffness0, nominal_damping=self._damping0)
        """Warp arrays for task kernels (:class:`WorldArrays`); tasks use these and the torch views, nothing private."""
        self.joint_q = wp.to_torch(self._joint_q)
        self.joint_qd = wp.to_torch(self._joint_qd)
        self.body_pose = wp.to_torch(self._body_q)
        self.body_vel = wp.to_torch(self._body_qd)
        self.root_pose = self.body_pose[:, self.root_body]
        self.root_vel = self.body_vel[:, self.root_body]
        self.root_vel_base = wp.to_torch(self._root_vel_base)
        self.joint_f = wp.to_torch(self._joint_f)
        self.unstable = wp.to_torch(self._unstable)
        self.stiffness, self.damping = wp.to_torch(d.stiffness), wp.to_torch(d.damping)
        self.motor_strength, self.effort_limit = wp.to_torch(d.strength), wp.to_torch(d.effort)
        self.spawn_origin = wp.to_torch(self._origin)
        b0 = self.robot_bodies
        self.object_pose = self.body_pose[:, b0:b0 + len(self.objects)]
        """Poses of the free objects [num_envs, objects, 7] (position [m], quaternion xyzw), world frame."""
        self.object_vel = self.body_vel[:, b0:b0 + len(self.objects)]
        """Twists of the free objects [num_envs, objects, 6] (COM linear [m/s], angular [rad/s]), world frame."""
        self.contact_bodies = tuple(spec.sensors.contact_bodies)
        self.imu_rotation = (0.0, 0.0, 0.0, 1.0)
        """Rotation (quaternion xyzw) of the IMU site in the root body's frame; identity without an IMU."""
        # the backend's sensors: contact_forces [num_envs, len(contact_bodies), 3] [N] (world frame), imu_acc (specific
        # force at the IMU site [num_envs, 3] [m/s^2], site frame, +9.81 up at rest) and imu_gyro (angular velocity
        # at the site [num_envs, 3] [rad/s], site frame), from the last substep; zeros without an IMU
        self.contact_forces = torch.zeros(n, 0, 3, device=self.joint_q.device)
        zeros = wp.zeros(n, dtype=wp.vec3, device=device)
        self.arrays = dataclasses.replace(self.arrays, imu_acc=zeros, imu_gyro=zeros)
        self.imu_acc = self.imu_gyro = wp.to_torch(zeros).view(n, 3)
        with wp.ScopedDevice(device):
            backend.attach_sensors(self)

    @property
    def steps_mujoco_c(self) -> bool:
        """True when MuJoCo's C engine steps this world (``solver=mujoco-c``)."""
        return self.backend.steps_mujoco_c

    def require_mujoco(self, what: str) -> None:
        """Newton's solver observables (contact forces, body accelerations) come from MuJoCo here."""
        if self.sim.solver not in MUJOCO_SOLVERS:
            raise FieldError(f"task.sim.solver={self.sim.solver}: {what}, which need the mujoco solver")

    def imu_site_rows(self, label: str) -> list[int]:
        """The shape rows of site ``label`` in every world (world order), checked to sit on the root body; sets
        :attr:`imu_rotation` from it."""
        labels = [lbl.split("/")[-1] for lbl in self.model.shape_label]
        worlds = self.model.shape_world.numpy()
        rows = [s for s, (lbl, w) in enumerate(zip(labels, worlds)) if lbl == label and w >= 0]
        rows.sort(key=lambda s: worlds[s])
        if len(rows) != self.num_envs:
            sites = sorted({lbl for lbl, w in zip(labels, worlds) if w == 0})
            raise ValueError(f"IMU site '{label}' found in {len(rows)} of {self.num_envs} worlds; shapes and sites "
                             f"of world 0: {', '.join(sites)}")
        body = int(self.model.shape_body.numpy()[rows[0]])
        if body != self.root_body:
            raise ValueError(f"IMU site '{label}' is on body {self.model.body_label[body]}, not on the root body")
        self.imu_rotation = tuple(float(v) for v in self.model.shape_transform.numpy()[rows[0]][3:7])
        return rows

    @property
    def kernels(self) -> tuple:
        """This module's kernels that the step launches, then the backend's (Newton's own load on first use)."""

        from horde.sim.actuator_net import clear_history

        return ((actuate_joints, inspect_worlds, reset_joint_state, clear_warmstart, articulation_mask)
                + ((reset_objects,) if self.objects else ())
                + ((actuator_net_inputs, clear_history) if self.actuator_net is not None else ())
                + self.backend.kernels(self))

    def object_index(self, name: str) -> int:
        """Position of the free object ``name`` in ``objects`` (and in ``object_pose``'s second axis)."""
        names = [o.name for o in self.objects]
        if name not in names:
            raise ValueError(f"no object '{name}'; objects: {', '.join(names) or 'none'}")
        return names.index(name)

    def object_body(self, name: str) -> int:
        """Body index of the free object ``name`` (for ``arrays.body_q`` in task kernels)."""
        return self.robot_bodies + self.object_index(name)

    # --- the step --------------------------------------------------------------------------------------------------
    def simulate(self, actions: wp.array2d) -> None:
        """``substeps`` physics steps under ``actions`` [num_envs, num_actions] in [-1, 1] (the backend's); result
        in ``state_0`` and the views."""
        self.backend.simulate(self, actions)

    def warm_up(self) -> None:
        """One throw-away step with zero actions, state restored after: compiles every module the step uses and lets
        solvers allocate their lazy buffers, so that a later graph recording sees only launches."""
        backend_saved = self.backend.snapshot(self)
        saved = self.model.state()
        saved.assign(self.state_0)
        history = ({k: v.clone() for k, v in self.actuator_net.physics_state().items()}
                   if self.actuator_net is not None else {})
        self.simulate(wp.zeros((self.num_envs, len(self.actuated_joints)), dtype=float, device=self.device))
        self.state_0.assign(saved)
        self.state_1.assign(saved)
        self._joint_f.zero_()
        if history:
            for k, v in self.actuator_net.physics_state().items():
                v.copy_(history[k])
        self.backend.restore(self, backend_saved)

    def inspect(self) -> None:
        """Health check: flag (``unstable``) and count worlds that are non-finite or out of bounds; base-frame twist."""
        wp.launch(inspect_worlds, self.num_envs, device=self.device, inputs=[
            self.root_body, self.sim.max_distance, self.sim.max_lin_vel, self.sim.max_ang_vel, self._joint_q,
            self._joint_qd, self._body_q, self._body_qd],
            outputs=[self._unstable_count, self._unstable, self._root_vel_base])

    def reset(self, mask: wp.array, rng: wp.array, on_reset: Callable[[wp.array, wp.array], None] | None = None
              ) -> None:
        """Default joint state + noise (drawn from the per-env ``rng`` streams) in masked worlds, ``on_reset(mask,
        rng)`` (the task's reset events), then their FK and the backend's copy."""
        import newton

        wp.launch(reset_joint_state, self.num_envs, device=self.device, inputs=[
            mask, self._default_q, self._default_qd, self._q_noise, self._qd_noise, self._q_lower, self._q_upper,
            int(self.floating), self.yaw_range, self._origin, rng],
            outputs=[self._joint_q, self._joint_qd, self._joint_f])
        if self.objects:
            wp.launch(reset_objects, self.num_envs, device=self.device, inputs=[
                mask, self._obj_coord, self._obj_dof, self._obj_low, self._obj_high, self._obj_yaw_low,
                self._obj_yaw_high, self._origin], outputs=[rng, self._joint_q, self._joint_qd])
        if on_reset is not None:
            on_reset(mask, rng)
        wp.launch(articulation_mask, self.model.articulation_count, device=self.device,
                  inputs=[mask, self.model.articulation_world], outputs=[self._articulation_mask])
        newton.eval_fk(self.model, self.state_0.joint_q, self.state_0.joint_qd, self.state_0,
                       mask=self._articulation_mask)
        if self.actuator_net is not None:
            self.actuator_net.reset(mask)
        self.backend.after_reset(self, mask)

    # --- host side -------------------------------------------------------------------------------------------------
    def pop_unstable_count(self) -> float:
        """Worlds reset by the health check since the last call (syncs with the device)."""
        c = float(self._unstable_count.numpy()[0])
        self._unstable_count.zero_()
        return c

    def physics_state(self) -> dict[str, torch.Tensor]:
        """Views of everything that determines the next physics step (for exact env save/restore)."""
        return {"joint_q": self.joint_q, "joint_qd": self.joint_qd, "body_q": self.body_pose,
                "body_qd": self.body_vel, "joint_f": self.joint_f, "stiffness": self.stiffness, "damping": self.damping,
                "motor_strength": self.motor_strength, "effort_limit": self.effort_limit,
                **(self.actuator_net.physics_state() if self.actuator_net is not None else {}),
                **self.backend.physics_state(self)}


class NewtonSolverBackend:
    """Newton's own solvers (MuJoCo-Warp, XPBD, Featherstone): each substep the actuation law, the collision
    pipeline (solvers other than MuJoCo detect contacts with it) and one solver step, states swapped through
    locals; Newton's ``SensorContact`` and ``SensorIMU`` read the solver's observables of the last substep."""

    steps_mujoco_c = False

    def build(self, world: NewtonWorld, robot: newton.ModelBuilder) -> object:
        import newton

        sim = world.sim
        solver = make_solver(world.model, sim.solver, iterations=sim.solver_iterations,
                             max_contacts=sim.max_contacts, max_constraints=sim.max_constraints)
        # MuJoCo-Warp's per-world warm start (None for other solvers), cleared for reset worlds in after_reset()
        self._warmstart = getattr(getattr(solver, "mjw_data", None), "qacc_warmstart", None)
        if sim.solver in MUJOCO_SOLVERS:  # MuJoCo detects contacts itself
            self.collision, self.contacts = None, None
        else:
            self.collision = newton.CollisionPipeline(world.model)
            self.contacts = self.collision.contacts()
        self.solver = solver
        return solver

    def attach_sensors(self, world: NewtonWorld) -> None:
        n = world.num_envs
        # the same 2-D views of the scratch state, for the actuation kernel of odd substeps
        self._views = ((world.arrays.joint_q, world.arrays.joint_qd),
                       (world.state_1.joint_q.reshape((n, world.coords)),
                        world.state_1.joint_qd.reshape((n, world.dofs))))
        self._sensor, self._imu, self._observables = None, None, None
        if world.contact_bodies:
            self._make_contact_sensor(world)
        if world.imu_site is not None:
            self._make_imu(world, world.imu_site or IMU_SITE)
        if self._sensor is not None or self._imu is not None:
            kinds = set()
            for sensor in (self._sensor, self._imu):
                kinds |= set(sensor.solver_observable_kinds) if sensor is not None else set()
            self._observables = self.solver.observables(
                kinds=frozenset(kinds), **({"contacts": self._contact_out} if self._sensor is not None else {}))
        if self._sensor is not None:
            world.contact_forces = wp.to_torch(self._sensor.total_force).view(n, len(world.contact_bodies), 3)
        if self._imu is not None:
            world.arrays = dataclasses.replace(world.arrays, imu_acc=self._imu.accelerometer,
                                               imu_gyro=self._imu.gyroscope)
            world.imu_acc = wp.to_torch(self._imu.accelerometer).view(n, 3)
            world.imu_gyro = wp.to_torch(self._imu.gyroscope).view(n, 3)

    def _make_contact_sensor(self, world: NewtonWorld) -> None:
        """A SensorContact over the named bodies of every world (world-major rows) fed by the solver's contact
        forces of the last substep."""
        import newton
        from newton.sensors import SensorContact

        world.require_mujoco("this task reads contact forces")
        model = world.model
        labels = [lbl.split("/")[-1] for lbl in model.body_label]
        worlds = model.body_world.numpy()
        index = {}
        for b_idx, (lbl, w) in enumerate(zip(labels, worlds)):
            if w >= 0:
                index[(int(w), lbl)] = b_idx
        missing = [name for name in world.contact_bodies if (0, name) not in index]
        if missing:
            raise ValueError(f"contact bodies not in the model: {', '.join(missing)}; bodies: "
                             f"{', '.join(sorted({lbl for (w, lbl) in index if w == 0}))}")
        rows = [index[(w, name)] for w in range(world.num_envs) for name in world.contact_bodies]
        self._sensor = SensorContact(model, sensing_bodies=rows, request_contact_attributes=False)
        self._contact_out = newton.CollisionPipeline(
            model, rigid_contact_max=self.solver.get_max_contact_count(), soft_contact_max=0).contacts()

    def _make_imu(self, world: NewtonWorld, label: str) -> None:
        """Newton's SensorIMU at the site ``label`` of every world (rows in world order), fed by the solver's body
        accelerations of the last substep."""
        from newton.sensors import SensorIMU

        world.require_mujoco("the IMU needs body accelerations")
        self._imu = SensorIMU(world.model, sites=world.imu_site_rows(label), request_state_attributes=False)

    def kernels(self, world: NewtonWorld) -> tuple:
        return ()

    def simulate(self, world: NewtonWorld, actions: wp.array2d) -> None:
        """``substeps`` x (actuation law, collision, solver step); result in ``state_0``.

        States swap every substep through locals only: the Python attributes never change, so a recorded graph
        keeps reading and writing the same memory. An odd substep count ends with one copy back into ``state_0``.
        """
        import newton

        d, w = world.drive, world
        n, a = w.num_envs, len(w.actuated_joints)
        s_in, s_out = w.state_0, w.state_1
        for k in range(w.substeps):
            jq, jqd = self._views[k % 2]
            if w.maximal and k > 0:  # xpbd leaves joint coordinates stale: the PD law needs them
                newton.eval_ik(w.model, s_in, s_in.joint_q, s_in.joint_qd)
            if w.actuator_net is not None:
                net = w.actuator_net
                wp.launch(actuator_net_inputs, (n, a), device=w.device, inputs=[
                    actions, d.q_index, d.qd_index, d.scale, d.offset, d.lower, d.upper, jq, jqd],
                    outputs=[net.q, net.qd, net.target])
                net.compute()
            wp.launch(actuate_joints, (n, a), device=w.device, inputs=[
                d.mode, actions, d.q_index, d.qd_index, d.scale, d.offset, d.stiffness, d.damping, d.strength,
                d.effort, d.dc_motor, d.velocity_limit, d.lower, d.upper, jq, jqd, d.net_effort],
                outputs=[w.arrays.joint_f])
            s_in.clear_forces()
            if self.collision is not None:
                self.collision.collide(s_in, self.contacts)
            if self._observables is not None and k == w.substeps - 1:  # sensors read the last substep
                self.solver.step(s_in, s_out, w.control, self._contact_out if self._sensor is not None else
                                 self.contacts, w.sim_dt, observables=self._observables)
                if self._sensor is not None:
                    self._sensor.update(None, self._contact_out, observables=self._observables)
                if self._imu is not None:
                    self._imu.update(s_out, observables=self._observables)
            else:
                self.solver.step(s_in, s_out, w.control, self.contacts, w.sim_dt)
            s_in, s_out = s_out, s_in
        if w.substeps % 2 == 1:
            w.state_0.assign(w.state_1)
        if w.maximal:
            newton.eval_ik(w.model, w.state_0, w.state_0.joint_q, w.state_0.joint_qd)

    def after_reset(self, world: NewtonWorld, mask: wp.array) -> None:
        if self._warmstart is not None:
            wp.launch(clear_warmstart, self._warmstart.shape, device=world.device, inputs=[mask],
                      outputs=[self._warmstart])

    def snapshot(self, world: NewtonWorld) -> None:
        return None

    def restore(self, world: NewtonWorld, saved: None) -> None:
        pass

    def physics_state(self, world: NewtonWorld) -> dict:
        return {}
