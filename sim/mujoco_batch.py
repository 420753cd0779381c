"""Articulated worlds on MuJoCo's C engine: ``mujoco.batch`` steps the envs on a thread pool (``solver=mujoco-c``).

Warp runs a CPU kernel's threads one after another in one OS thread, so MuJoCo-Warp on the CPU is 4-10x slower
than MuJoCo's C engine on the same cores (``benchmarks/mujoco_batch.py``). :class:`MujocoCBackend` is the backend
of a :class:`horde.sim.newton_world.NewtonWorld` (which keeps the Newton model, its ``[num_envs, ...]`` views, the
actuation arrays, resets, the health check) that steps it on MuJoCo's C engine instead of a Newton solver:

* the MuJoCo model is the one Newton's ``SolverMuJoCo`` builds from the same Newton model for MuJoCo-Warp (same
  timestep, integrator, solver, cone, iterations, solref/solimp, friction, margins, terrain), so both backends step
  the same model; horde adds one acceleration-stage sensor so that MuJoCo computes ``cfrc_ext`` (the contact
  forces on named bodies), and an accelerometer and gyro at the IMU site when the task has one;
* ``mujoco.batch.Batch`` holds one float64 state row per env. The world's public views stay Newton's float32
  layout (quaternions xyzw, a free joint's velocity at the COM in the world frame): one kernel converts MuJoCo's
  rows into them after every substep, and one writes back only what the task changed (a push, a reset);
* with ``task.sim.mujoco_actuators`` (off by default) PD actuation runs as MuJoCo's own actuators: Newton's conversion
  gives every actuated joint a position actuator, one kernel per control step writes the targets into ``ctrl`` and
  each env's gains (stiffness x strength, damping x strength, the effort limit; randomizable) into the batch's
  per-simulation actuator fields, and one ``Batch.step`` call runs the ``decimation`` substeps. The forces are
  horde's PD law to rounding; the model integrates with Euler so that the law's damping stays explicit, as horde's
  kernel applies it (implicitfast would integrate it implicitly; the joints' own damping is implicit in both);
* otherwise (the default; torques, the DC-motor line, an actuator network) each substep is one
  launch of horde's actuation law (the function MuJoCo-Warp's path runs) from the MuJoCo rows into
  ``qfrc_applied`` and one ``Batch.step`` call (torques that do not depend on the state, torque mode without the
  DC-motor line, are held: one call of ``decimation`` steps). A ``Batch`` call is host code:
  :func:`horde.sim.graph.host_call` splits the task's recorded step around it, so the step still replays as graphs
  with no Python per env;
* body poses and velocities come from Newton's forward kinematics of the new joint state (MuJoCo's derived fields
  lag one substep behind the state), contact forces and the IMU from MuJoCo's last substep, as on MuJoCo-Warp.

Exact resume: :meth:`physics_state` includes the batch's state rows (float64, warm start included).
The kernels live in :mod:`horde.sim.mujoco_batch_kernels`.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING

import numpy as np
import torch
import warp as wp

from horde.sim.fields import FieldError
from horde.sim.graph import host_call
from horde.sim.actuation import MODE_TORQUE
from horde.sim.mujoco_batch_kernels import (Layout, actuate_rows, actuator_net_rows, drive_forces, drive_rows,
                                            flag_failed, gather_vec3, imu_readings, mj_to_newton, newton_to_mj)
from horde.sim.mujoco_model import extra_sensors, newton_mujoco_model
from horde.sim.newton_build import joint_dof_layout
from horde.sim.newton_world import IMU_SITE

if TYPE_CHECKING:
    import mujoco
    import newton

    from horde.sim.newton_world import NewtonWorld

__all__ = ["MujocoCBackend"]


# --- the world -----------------------------------------------------------------------------------------------------
def _as_warp(arr: np.ndarray) -> wp.array:
    """A float64 Warp view of a C-contiguous numpy array (MuJoCo's memory, no copy)."""
    assert arr.flags.c_contiguous and arr.dtype == np.float64
    return wp.array(ptr=arr.ctypes.data, shape=arr.shape, dtype=wp.float64, device="cpu")


class _BatchSolver:
    """What :class:`NewtonWorld` and the randomization ask of a solver, over a ``mujoco.batch.Batch``: pushes the
    Newton model's per-env masses, inertias and friction into the batch's per-simulation model fields."""

    def __init__(self, backend: MujocoCBackend, world: NewtonWorld) -> None:
        self._backend, self._world = backend, world

    def notify_model_changed(self, flags: int) -> None:  # noqa: ARG002 - every randomized field is pushed
        self._backend.push_model(self._world)


class MujocoCBackend:
    """A :class:`NewtonWorld` stepped by MuJoCo's C engine (``mujoco.batch``) on ``sim.cpu_threads`` threads."""

    steps_mujoco_c = True

    def build(self, world: NewtonWorld, robot: newton.ModelBuilder) -> _BatchSolver:
        import mujoco
        from mujoco.batch import Batch

        if not wp.get_device(world.device).is_cpu:
            raise FieldError(f"task.sim.solver=mujoco-c runs on the cpu device, not {world.device}: use "
                             "task.sim.solver=mujoco (MuJoCo-Warp) on a GPU")
        sim = world.sim
        # Newton's conversion of one world: the model MuJoCo-Warp would get (global shapes: ground, terrain)
        self._imu_label = world.imu_site or ("horde_imu" if world.imu_site == "" else None)
        act = world.actuation
        # horde's PD law as MuJoCo's actuators: a position drive per actuated joint, gains set per env in the batch
        self._drives = sim.mujoco_actuators and act.mode == "pd" and act.network is None and act.velocity_limit is None
        drive_dofs = joint_dof_layout(robot, world.actuated_joints)[1] if self._drives else []
        with extra_sensors(self._add_sensors):
            one, conv = newton_mujoco_model(robot, ground=world.spec.ground, contact_ke=sim.contact_ke,
                                            terrain=world.spec.terrain, max_contacts=sim.max_contacts,
                                            max_constraints=sim.max_constraints, iterations=sim.solver_iterations,
                                            drives=drive_dofs)
        mj = conv.mj_model
        mj.opt.timestep = world.sim_dt
        self._drive_ids = self._drive_actuators(conv, drive_dofs) if self._drives else []
        if self._drives:
            ids = self._drive_ids
            # the template's drives exert nothing (the batch's per-env fields hold the gains): a fresh Batch of this
            # model, as the benchmarks make, steps under qfrc_applied alone
            mj.actuator_gainprm[ids], mj.actuator_biasprm[ids] = 0.0, 0.0
            mj.actuator_forcelimited[ids], mj.actuator_ctrllimited[ids] = 1, 0
            mj.jnt_actfrclimited[mj.actuator_trnid[ids, 0]] = 0  # the effort limit is horde's, per env, as above
            # Euler keeps the PD law's damping explicit, as horde's kernel applies it; implicitfast would integrate
            # the drives' velocity term implicitly. Without drives both integrate the joints' own damping implicitly
            # and give the same steps (benchmarks/README.md, "MuJoCo's own actuators").
            mj.opt.integrator = int(mujoco.mjtIntegrator.mjINT_EULER)
        if sim.mujoco_jacobian != "auto":  # the same physics to rounding at another cost (SimConfig.mujoco_jacobian)
            mj.opt.jacobian = int(getattr(mujoco.mjtJacobian, f"mjJAC_{sim.mujoco_jacobian.upper()}"))
        # a bad state stays bad, as on MuJoCo-Warp, so that the health check sees it, resets the env and counts it
        # (MuJoCo's own reset to qpos0 would hide it and teleport the robot)
        mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_AUTORESET)
        # one constraint problem per env, as MuJoCo-Warp solves it
        mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_ISLAND)
        self.mj_model: mujoco.MjModel = mj
        """The MuJoCo model every env steps (the template; per-env fields live in the batch)."""
        threads = sim.cpu_threads or os.cpu_count() or 1
        self.batch = Batch(mj, world.num_envs, nthread=threads)
        """The ``mujoco.batch.Batch`` of the envs (one simulation per env)."""
        self._one = one
        self._layout_np = self._layout(one, conv)
        self._geom_shape = conv.mjc_geom_to_newton_shape.numpy()[0]
        self._body_newton = conv.mjc_body_to_newton.numpy()[0]
        if self._drives:  # Warp views of the drives' per-simulation fields (expanding more fields keeps them in place)
            self._gain, self._bias, self._force_range = (_as_warp(self.batch.expand(f)) for f in (
                "actuator_gainprm", "actuator_biasprm", "actuator_forcerange"))
        return _BatchSolver(self, world)

    @staticmethod
    def _drive_actuators(conv, dofs: list[int]) -> list[int]:
        """The MuJoCo actuator Newton's conversion made of each drive dof's position target (``dofs`` order)."""
        source = conv.mjc_actuator_ctrl_source.numpy()
        newton_dof = conv.mjc_actuator_to_newton_idx.numpy()
        by_dof = {int(newton_dof[a]): a for a in range(len(source)) if source[a] == 0 and newton_dof[a] >= 0}
        missing = [d for d in dofs if d not in by_dof]
        if missing:
            raise RuntimeError(f"Newton's MuJoCo conversion made no position actuator for dofs {missing}: run with "
                               "task.sim.mujoco_actuators=false")
        return [int(by_dof[d]) for d in dofs]

    def _add_sensors(self, spec: mujoco.MjSpec) -> None:
        """An acceleration-stage sensor on the first body (MuJoCo then computes ``cfrc_ext``, the contact forces),
        and the IMU's accelerometer when the task has one (its gyro is read from the state, :func:`imu_readings`)."""
        import mujoco

        bodies = [b for b in spec.bodies if b.name != "world"]
        spec.add_sensor(name="horde_cfrc", type=mujoco.mjtSensor.mjSENS_FRAMELINACC, objtype=mujoco.mjtObj.mjOBJ_BODY,
                        objname=bodies[0].name)
        if self._imu_label is not None:
            sites = [st.name for st in spec.sites if st.name.split("/")[-1].rsplit("_", 1)[0] == self._imu_label
                     or st.name.split("/")[-1] == self._imu_label]
            if not sites:
                raise ValueError(f"IMU site '{self._imu_label}' not in the MuJoCo model; sites: "
                                 f"{', '.join(st.name for st in spec.sites) or 'none'}")
            spec.add_sensor(name="horde_imu_acc", type=mujoco.mjtSensor.mjSENS_ACCELEROMETER,
                            objtype=mujoco.mjtObj.mjOBJ_SITE, objname=sites[0])

    @staticmethod
    def _layout(one: newton.Model, conv) -> dict:
        """Newton coordinate and dof -> MuJoCo qpos and qvel index, for world 0."""
        import newton

        jt = one.joint_type.numpy()
        q_start, qd_start = one.joint_q_start.numpy(), one.joint_qd_start.numpy()
        mj_q, mj_qd = conv.mj_q_start.numpy(), conv.mj_qd_start.numpy()
        x_p, x_c, com = one.joint_X_p.numpy(), one.joint_X_c.numpy(), one.body_com.numpy()
        child = one.joint_child.numpy()
        dof_ref = getattr(one, "dof_ref", None)
        ref = dof_ref.numpy() if dof_ref is not None else np.zeros(one.joint_dof_count)
        out = {k: [] for k in ("q_newton", "q_mj", "q_ref", "qd_newton", "qd_mj", "free_q", "free_qd", "free_mj_q",
                               "free_mj_qd", "free_com", "free_x_p", "free_x_c")}
        for j in range(one.joint_count):
            nq, nqd = q_start[j + 1] - q_start[j], qd_start[j + 1] - qd_start[j]
            if nqd == 0:
                continue
            if mj_q[j] < 0:
                raise ValueError(f"joint {one.joint_label[j]} has no MuJoCo coordinates (loop joints are not "
                                 "supported by task.sim.solver=mujoco-c)")
            if jt[j] == int(newton.JointType.FREE):
                for key, v in (("free_q", q_start[j]), ("free_qd", qd_start[j]), ("free_mj_q", mj_q[j]),
                               ("free_mj_qd", mj_qd[j]), ("free_com", com[child[j]]), ("free_x_p", x_p[j]),
                               ("free_x_c", x_c[j])):
                    out[key].append(v)
            elif nq == nqd:  # hinges, slides and the axes of multi-dof joints: one coordinate per dof
                for k in range(nq):
                    out["q_newton"].append(q_start[j] + k)
                    out["q_mj"].append(mj_q[j] + k)
                    out["q_ref"].append(float(ref[qd_start[j] + k]))
                    out["qd_newton"].append(qd_start[j] + k)
                    out["qd_mj"].append(mj_qd[j] + k)
            else:
                raise ValueError(f"joint {one.joint_label[j]} (type {jt[j]}) is not supported by "
                                 "task.sim.solver=mujoco-c: free, hinge and slide joints are")
        return out

    def attach_sensors(self, world: NewtonWorld) -> None:
        """Contact forces and the IMU from MuJoCo's arrays (the IMU site checked and its rotation set by the world),
        then the Warp views of the batch's rows, the Newton <-> MuJoCo index maps and the per-env buffers (every
        array on the world's device: Warp's default device is cuda:0 on a GPU machine, and the H200 run of
        2026-11-26 crashed in the first CPU kernel that read this Layout's arrays from GPU memory)."""
        import mujoco

        if world.imu_site is not None:
            world.imu_site_rows(world.imu_site or IMU_SITE)
        n, b = world.num_envs, self.batch
        state = b.state
        base = state.ctypes.data
        if b.state.ctypes.data != base or not state.flags.c_contiguous:
            raise RuntimeError(f"mujoco {mujoco.__version__}: Batch.state is not one persistent C-contiguous array "
                               "here; horde's mujoco-c backend reads and writes MuJoCo's rows in place and needs it")
        self._state_np = state  # the Warp view below borrows this memory: keep its owner alive

        def offset(field: str) -> int:
            at = (b.bind(field).ctypes.data - base) // state.itemsize
            if not 0 <= at < state.shape[1]:
                raise RuntimeError(f"mujoco {mujoco.__version__}: Batch.bind('{field}') is not inside Batch.state "
                                   "here; horde's mujoco-c backend needs MuJoCo's rows in one array")
            return at

        lay = self._layout_np
        L = Layout()
        L.qpos, L.qvel, L.qfrc, L.warm, L.nv = (offset("qpos"), offset("qvel"), offset("qfrc_applied"),
                                                offset("qacc_warmstart"), self.mj_model.nv)
        ints = lambda key: wp.array(np.asarray(lay[key], np.int32).reshape(-1), dtype=int)  # noqa: E731
        for key in ("q_newton", "q_mj", "qd_newton", "qd_mj", "free_q", "free_qd", "free_mj_q", "free_mj_qd"):
            setattr(L, key, ints(key))
        L.q_ref = wp.array(np.asarray(lay["q_ref"], np.float32), dtype=float)
        L.free_com = wp.array(np.asarray(lay["free_com"], np.float32).reshape(-1, 3), dtype=wp.vec3)
        L.free_x_p = wp.array(np.asarray(lay["free_x_p"], np.float32).reshape(-1, 7), dtype=wp.transform)
        L.free_x_c = wp.array(np.asarray(lay["free_x_c"], np.float32).reshape(-1, 7), dtype=wp.transform)
        self._L = L
        # the actuated joints' places in the MuJoCo row
        q_at = dict(zip(lay["q_newton"], zip(lay["q_mj"], lay["q_ref"])))
        qd_at = dict(zip(lay["qd_newton"], lay["qd_mj"]))
        q_index, qd_index = world.drive.q_index.numpy(), world.drive.qd_index.numpy()
        self._act_mj_q = wp.array([q_at[int(c)][0] for c in q_index], dtype=int)
        self._act_ref = wp.array([q_at[int(c)][1] for c in q_index], dtype=float)
        self._act_mj_qd = wp.array([qd_at[int(d)] for d in qd_index], dtype=int)
        # torques that do not depend on the state (torque mode, no DC-motor line) hold for every substep: one call
        # and so do MuJoCo's own actuators, which run the PD law inside every substep
        self.nstep = (world.substeps if self._drives or (world.drive.mode == MODE_TORQUE and not world.drive.dc_motor)
                      else 1)
        """MuJoCo steps per ``Batch.step`` call (a control step's substeps when the forces hold for all of them)."""
        if self._drives:
            self._ctrl_at = offset("ctrl")
            self._act = wp.array(self._drive_ids, dtype=int)
            self._actuator_force = _as_warp(b.bind("actuator_force"))
        self._state = _as_warp(state)
        self._seen_q = wp.zeros((n, world.coords), dtype=float)
        self._seen_qd = wp.zeros((n, world.dofs), dtype=float)
        self._failed_np = np.zeros(n, dtype=bool)
        self._failed = wp.array(self._failed_np, dtype=wp.bool, copy=False)
        self._no_mask = wp.zeros(1, dtype=wp.bool)
        # contact forces on the named bodies: the force half of MuJoCo's cfrc_ext (torque, force), world frame
        self._cfrc = _as_warp(b.bind("cfrc_ext").reshape(n, -1))
        names = {self._mj_body_name(k): k for k in range(self.mj_model.nbody)}
        missing = [c for c in world.contact_bodies if c not in names]
        if missing:
            raise ValueError(f"contact bodies not in the model: {', '.join(missing)}; bodies: "
                             f"{', '.join(sorted(names))}")
        self._contact_index = wp.array([6 * names[c] + 3 for c in world.contact_bodies] or [0], dtype=int)
        k = len(world.contact_bodies)
        self._contact_wp = wp.zeros((n, max(k, 1)), dtype=wp.vec3)
        world.contact_forces = wp.to_torch(self._contact_wp)[:, :k].view(n, k, 3) if k else torch.zeros(n, 0, 3)
        self._sensordata = _as_warp(b.bind("sensordata").reshape(n, -1))
        if self._imu_label is not None:
            self._imu_at = int(self.mj_model.sensor_adr[self.mj_model.sensor("horde_imu_acc").id])
            self._imu_acc, self._imu_gyro = wp.zeros(n, dtype=wp.vec3), wp.zeros(n, dtype=wp.vec3)
            world.imu_acc, world.imu_gyro = wp.to_torch(self._imu_acc), wp.to_torch(self._imu_gyro)
            world.arrays = dataclasses.replace(world.arrays, imu_acc=self._imu_acc, imu_gyro=self._imu_gyro)
        # every env from the Newton state the world was built with
        all_envs = wp.ones(n, dtype=wp.bool)
        wp.launch(newton_to_mj, n, inputs=[L, all_envs, 1, world.arrays.joint_q, world.arrays.joint_qd],
                  outputs=[self._seen_q, self._seen_qd, self._state])

    def _mj_body_name(self, k: int) -> str:
        """The MJCF name of MuJoCo body k (Newton labels bodies by their path; the conversion joins it with '_')."""
        nb = int(self._body_newton[k])
        return self._one.body_label[nb].split("/")[-1] if nb >= 0 else "world"

    def kernels(self, world: NewtonWorld) -> tuple:
        return (mj_to_newton, newton_to_mj, actuate_rows, drive_rows, drive_forces, gather_vec3, imu_readings,
                flag_failed, *((actuator_net_rows,) if world.actuator_net is not None else ()))

    # --- the step --------------------------------------------------------------------------------------------------
    def _advance(self) -> None:
        """One ``Batch.step`` call of ``nstep`` MuJoCo steps (a host call of the recorded step)."""
        from mujoco.batch import SimulationError

        try:
            self.batch.step(nstep=self.nstep)
        except SimulationError as exc:  # those envs kept their state: flag them for the health check
            self._failed_np[exc.ids] = True

    def simulate(self, world: NewtonWorld, actions: wp.array2d) -> None:
        """``substeps`` MuJoCo steps under ``actions``: per substep the actuation law into ``qfrc_applied`` and one
        ``Batch.step`` (a :func:`host_call`); then Newton's views, FK, contact forces and the IMU."""
        import newton

        w, dr, arr = world, world.drive, world.arrays
        n, a, L, d = w.num_envs, len(w.actuated_joints), self._L, w.device
        wp.launch(newton_to_mj, n, device=d, inputs=[L, self._no_mask, 0, arr.joint_q, arr.joint_qd],
                  outputs=[self._seen_q, self._seen_qd, self._state])
        if self._drives:
            wp.launch(drive_rows, (n, a), device=d, inputs=[
                self._ctrl_at, actions, self._act, self._act_ref, dr.scale, dr.offset, dr.lower, dr.upper,
                dr.stiffness, dr.damping, dr.strength, dr.effort], outputs=[
                self._state, self._gain, self._bias, self._force_range])
            host_call(self._advance)
            wp.launch(drive_forces, (n, a), device=d, inputs=[self._actuator_force, self._act, dr.qd_index],
                      outputs=[arr.joint_f])
        for _ in range(0 if self._drives else w.substeps // self.nstep):
            if w.actuator_net is not None:
                net = w.actuator_net
                wp.launch(actuator_net_rows, (n, a), device=d, inputs=[
                    L, actions, self._act_mj_q, self._act_mj_qd, self._act_ref, dr.scale, dr.offset,
                    dr.lower, dr.upper, self._state], outputs=[net.q, net.qd, net.target])
                net.compute()
            wp.launch(actuate_rows, (n, a), device=d, inputs=[
                L, dr.mode, actions, self._act_mj_q, self._act_mj_qd, self._act_ref, dr.qd_index, dr.scale,
                dr.offset, dr.stiffness, dr.damping, dr.strength, dr.effort, dr.dc_motor,
                dr.velocity_limit, dr.lower, dr.upper, dr.net_effort], outputs=[self._state, arr.joint_f])
            host_call(self._advance)
        wp.launch(flag_failed, n, device=d, inputs=[self._failed, self._state, L.qvel])
        wp.launch(mj_to_newton, n, device=d, inputs=[L, self._state],
                  outputs=[arr.joint_q, arr.joint_qd, self._seen_q, self._seen_qd])
        newton.eval_fk(w.model, w.state_0.joint_q, w.state_0.joint_qd, w.state_0)
        if w.contact_bodies:
            wp.launch(gather_vec3, (n, len(w.contact_bodies)), device=d, inputs=[self._cfrc, self._contact_index],
                      outputs=[self._contact_wp])
        if self._imu_label is not None:
            wp.launch(imu_readings, n, device=d, inputs=[
                self._sensordata, self._imu_at, arr.body_q, arr.body_qd, w.root_body,
                wp.quat(*w.imu_rotation)], outputs=[self._imu_acc, self._imu_gyro])

    def snapshot(self, world: NewtonWorld) -> tuple:
        return self.batch.state.copy(), wp.clone(self._seen_q), wp.clone(self._seen_qd)

    def restore(self, world: NewtonWorld, saved: tuple) -> None:
        state, seen_q, seen_qd = saved
        self.batch.state[:] = state
        self._seen_q.assign(seen_q)
        self._seen_qd.assign(seen_qd)

    def after_reset(self, world: NewtonWorld, mask: wp.array) -> None:
        wp.launch(newton_to_mj, world.num_envs, device=world.device, inputs=[
            self._L, mask, 1, world.arrays.joint_q, world.arrays.joint_qd],
            outputs=[self._seen_q, self._seen_qd, self._state])

    # --- host side -------------------------------------------------------------------------------------------------
    def push_model(self, world: NewtonWorld) -> None:
        """The Newton model's per-env body masses, inertias (as a scale of MuJoCo's principal inertia) and shape
        friction into the batch's per-simulation model fields, then MuJoCo's derived constants."""
        n, nb = world.num_envs, world.bodies
        m = world.model
        body_world = m.body_world.numpy()
        first = int(np.argmax(body_world >= 0))
        mass = m.body_mass.numpy()[first:first + n * nb].reshape(n, nb)
        inertia = m.body_inertia.numpy()[first:first + n * nb].reshape(n, nb, 3, 3)
        nominal = self._one.body_inertia.numpy()
        trace0 = np.trace(nominal, axis1=1, axis2=2)
        scale = np.trace(inertia, axis1=2, axis2=3) / np.where(trace0 > 0, trace0, 1.0)
        mj_mass, mj_inertia = self.batch.expand("body_mass"), self.batch.expand("body_inertia")
        inertia0 = self.mj_model.body_inertia
        for k, nbody in enumerate(self._body_newton):
            if nbody >= 0:
                mj_mass[:, k] = mass[:, nbody]
                mj_inertia[:, k] = inertia0[k] * scale[:, nbody, None]
        shape_world = m.shape_world.numpy()
        mu = m.shape_material_mu.numpy()
        own = np.nonzero(shape_world == 0)[0]
        one_world = self._one.shape_world.numpy()
        one_own = list(np.nonzero(one_world == 0)[0])
        friction = self.batch.expand("geom_friction")
        robot = np.nonzero(shape_world >= 0)[0]  # world-major, the same count per world
        per_world = robot[np.argsort(shape_world[robot], kind="stable")].reshape(n, len(own))
        for g, shape in enumerate(self._geom_shape):
            if shape >= 0 and one_world[shape] == 0:
                friction[:, g, 0] = mu[per_world[:, one_own.index(shape)]]
        self.batch.set_const()

    def physics_state(self, world: NewtonWorld) -> dict[str, torch.Tensor]:
        return {"mj_state": torch.from_numpy(self.batch.state), "seen_q": wp.to_torch(self._seen_q),
                "seen_qd": wp.to_torch(self._seen_qd)}
