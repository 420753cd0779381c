"""The Warp kernels of :class:`horde.sim.mujoco_batch.MujocoCBackend`: one env per thread between MuJoCo's float64
state rows (``mujoco.batch``) and Newton's float32 views, horde's actuation law on the rows (per substep, or as
MuJoCo's own actuators' controls and gains once per control step), contact forces, the IMU and the health check."""

from __future__ import annotations

import warp as wp

from horde.sim.actuation import MODE_NET, motor_torque, pd_target

@wp.struct
class Layout:
    """Where Newton's coordinates live in a MuJoCo state row (one world; offsets into the row)."""

    qpos: int
    qvel: int
    qfrc: int
    warm: int
    nv: int
    # 1-dof coordinates (hinges, slides, the axes of Newton's multi-dof joints): Newton index -> MuJoCo index
    q_newton: wp.array(dtype=int)
    q_mj: wp.array(dtype=int)
    q_ref: wp.array(dtype=float)
    qd_newton: wp.array(dtype=int)
    qd_mj: wp.array(dtype=int)
    # free joints: Newton coordinate and dof start, MuJoCo qpos and qvel start, child COM, anchor frames
    free_q: wp.array(dtype=int)
    free_qd: wp.array(dtype=int)
    free_mj_q: wp.array(dtype=int)
    free_mj_qd: wp.array(dtype=int)
    free_com: wp.array(dtype=wp.vec3)
    free_x_p: wp.array(dtype=wp.transform)
    free_x_c: wp.array(dtype=wp.transform)


@wp.func
def _mj_quat(row: wp.array(dtype=wp.float64), at: int) -> wp.quat:
    """MuJoCo's quaternion (w, x, y, z) at ``row[at]`` as Warp's (x, y, z, w)."""
    return wp.quat(float(row[at + 1]), float(row[at + 2]), float(row[at + 3]), float(row[at]))


@wp.kernel(enable_backward=False)
def mj_to_newton(L: Layout, state: wp.array2d(dtype=wp.float64), joint_q: wp.array2d(dtype=float),
                 joint_qd: wp.array2d(dtype=float), seen_q: wp.array2d(dtype=float),
                 seen_qd: wp.array2d(dtype=float)):
    """Env i's MuJoCo state row into Newton's joint coordinates and velocities (and the copies :func:`newton_to_mj`
    compares against to find what a task changed)."""
    i = wp.tid()
    row = state[i]
    for k in range(L.q_newton.shape[0]):
        v = float(row[L.qpos + L.q_mj[k]]) - L.q_ref[k]
        joint_q[i, L.q_newton[k]] = v
        seen_q[i, L.q_newton[k]] = v
    for k in range(L.qd_newton.shape[0]):
        v = float(row[L.qvel + L.qd_mj[k]])
        joint_qd[i, L.qd_newton[k]] = v
        seen_qd[i, L.qd_newton[k]] = v
    for f in range(L.free_q.shape[0]):
        # MuJoCo: the body's world pose, origin velocity in the world frame, angular velocity in the body frame.
        # Newton: the pose between the joint's anchors, COM velocity and angular velocity in the parent frame.
        mq, mqd = L.qpos + L.free_mj_q[f], L.qvel + L.free_mj_qd[f]
        rot = _mj_quat(row, mq + 3)
        world = wp.transform(wp.vec3(float(row[mq]), float(row[mq + 1]), float(row[mq + 2])), rot)
        rel = wp.transform_inverse(L.free_x_p[f]) * world * L.free_x_c[f]
        p, q = wp.transform_get_translation(rel), wp.transform_get_rotation(rel)
        w_world = wp.quat_rotate(rot, wp.vec3(float(row[mqd + 3]), float(row[mqd + 4]), float(row[mqd + 5])))
        v_com = (wp.vec3(float(row[mqd]), float(row[mqd + 1]), float(row[mqd + 2]))
                 + wp.cross(w_world, wp.quat_rotate(rot, L.free_com[f])))
        qp = wp.transform_get_rotation(L.free_x_p[f])
        v_com, w = wp.quat_rotate_inv(qp, v_com), wp.quat_rotate_inv(qp, w_world)
        s, sd = L.free_q[f], L.free_qd[f]
        for c in range(3):
            joint_q[i, s + c] = p[c]
            seen_q[i, s + c] = p[c]
            joint_qd[i, sd + c] = v_com[c]
            seen_qd[i, sd + c] = v_com[c]
            joint_qd[i, sd + 3 + c] = w[c]
            seen_qd[i, sd + 3 + c] = w[c]
        for c in range(4):
            joint_q[i, s + 3 + c] = q[c]
            seen_q[i, s + 3 + c] = q[c]


@wp.func
def _write_free(L: Layout, f: int, i: int, row: wp.array(dtype=wp.float64), joint_q: wp.array2d(dtype=float),
                joint_qd: wp.array2d(dtype=float), pose: bool, twist: bool):
    s, sd = L.free_q[f], L.free_qd[f]
    mq, mqd = L.qpos + L.free_mj_q[f], L.qvel + L.free_mj_qd[f]
    rel = wp.transform(wp.vec3(joint_q[i, s], joint_q[i, s + 1], joint_q[i, s + 2]),
                       wp.normalize(wp.quat(joint_q[i, s + 3], joint_q[i, s + 4], joint_q[i, s + 5],
                                            joint_q[i, s + 6])))
    world = L.free_x_p[f] * rel * wp.transform_inverse(L.free_x_c[f])
    rot = wp.transform_get_rotation(world)
    if pose:
        p = wp.transform_get_translation(world)
        for c in range(3):
            row[mq + c] = wp.float64(p[c])
        row[mq + 3] = wp.float64(rot[3])
        for c in range(3):
            row[mq + 4 + c] = wp.float64(rot[c])
    else:  # the velocity of the pose MuJoCo holds
        rot = _mj_quat(row, mq + 3)
    if twist:
        qp = wp.transform_get_rotation(L.free_x_p[f])
        v_com = wp.quat_rotate(qp, wp.vec3(joint_qd[i, sd], joint_qd[i, sd + 1], joint_qd[i, sd + 2]))
        w_world = wp.quat_rotate(qp, wp.vec3(joint_qd[i, sd + 3], joint_qd[i, sd + 4], joint_qd[i, sd + 5]))
        v = v_com - wp.cross(w_world, wp.quat_rotate(rot, L.free_com[f]))
        w = wp.quat_rotate_inv(rot, w_world)
        for c in range(3):
            row[mqd + c] = wp.float64(v[c])
            row[mqd + 3 + c] = wp.float64(w[c])


@wp.kernel(enable_backward=False)
def newton_to_mj(L: Layout, mask: wp.array(dtype=wp.bool), use_mask: int, joint_q: wp.array2d(dtype=float),
                 joint_qd: wp.array2d(dtype=float), seen_q: wp.array2d(dtype=float),
                 seen_qd: wp.array2d(dtype=float), state: wp.array2d(dtype=wp.float64)):
    """Newton's joint state into env i's MuJoCo row: every value of a masked env (``use_mask``: a reset, which also
    clears MuJoCo's warm start), otherwise only the values a task changed since :func:`mj_to_newton` (a push), so
    MuJoCo's float64 state is not rounded to float32 every control step."""
    i = wp.tid()
    row = state[i]
    full = use_mask != 0 and mask[i]
    if use_mask != 0 and not full:
        return
    for k in range(L.q_newton.shape[0]):
        c = L.q_newton[k]
        if full or joint_q[i, c] != seen_q[i, c]:
            row[L.qpos + L.q_mj[k]] = wp.float64(joint_q[i, c] + L.q_ref[k])
            seen_q[i, c] = joint_q[i, c]
    for k in range(L.qd_newton.shape[0]):
        c = L.qd_newton[k]
        if full or joint_qd[i, c] != seen_qd[i, c]:
            row[L.qvel + L.qd_mj[k]] = wp.float64(joint_qd[i, c])
            seen_qd[i, c] = joint_qd[i, c]
    for f in range(L.free_q.shape[0]):
        s, sd = L.free_q[f], L.free_qd[f]
        pose, twist = full, full
        for c in range(7):
            if joint_q[i, s + c] != seen_q[i, s + c]:
                pose = True
            seen_q[i, s + c] = joint_q[i, s + c]
        for c in range(6):
            if joint_qd[i, sd + c] != seen_qd[i, sd + c]:
                twist = True
            seen_qd[i, sd + c] = joint_qd[i, sd + c]
        if pose or twist:
            _write_free(L, f, i, row, joint_q, joint_qd, pose, pose or twist)
    if full:
        for d in range(L.nv):
            row[L.warm + d] = wp.float64(0.0)
            row[L.qfrc + d] = wp.float64(0.0)


@wp.kernel(enable_backward=False)
def actuate_rows(L: Layout, mode: int, actions: wp.array2d(dtype=float), mj_q: wp.array(dtype=int),
                 mj_qd: wp.array(dtype=int), ref: wp.array(dtype=float), qd_index: wp.array(dtype=int),
                 scale: wp.array(dtype=float), offset: wp.array(dtype=float), stiffness: wp.array2d(dtype=float),
                 damping: wp.array2d(dtype=float), strength: wp.array2d(dtype=float), effort: wp.array2d(dtype=float),
                 dc_motor: int, velocity_limit: wp.array(dtype=float), lower: wp.array(dtype=float),
                 upper: wp.array(dtype=float), net_effort: wp.array(dtype=float),
                 state: wp.array2d(dtype=wp.float64), joint_f: wp.array2d(dtype=float)):
    """horde's actuation law (:func:`horde.sim.actuation.motor_torque`, the kernel MuJoCo-Warp's path runs) on
    actuated joint k of env i, reading the joint's state from the MuJoCo row and writing its ``qfrc_applied`` (and
    Newton's ``joint_f`` view, which reward terms read)."""
    i, k = wp.tid()
    row = state[i]
    net_tau = float(0.0)
    if mode == MODE_NET:
        net_tau = net_effort[i * actions.shape[1] + k]
    tau = motor_torque(mode, actions[i, k], scale[k], offset[k], stiffness[i, k], damping[i, k], strength[i, k],
                       effort[i, k], dc_motor, velocity_limit[k], lower[k], upper[k],
                       float(row[L.qpos + mj_q[k]]) - ref[k], float(row[L.qvel + mj_qd[k]]), net_tau)
    joint_f[i, qd_index[k]] = tau
    row[L.qfrc + mj_qd[k]] = wp.float64(tau)


@wp.kernel(enable_backward=False)
def drive_rows(ctrl_at: int, actions: wp.array2d(dtype=float), act: wp.array(dtype=int),
               ref: wp.array(dtype=float), scale: wp.array(dtype=float), offset: wp.array(dtype=float),
               lower: wp.array(dtype=float), upper: wp.array(dtype=float), stiffness: wp.array2d(dtype=float),
               damping: wp.array2d(dtype=float), strength: wp.array2d(dtype=float), effort: wp.array2d(dtype=float),
               state: wp.array2d(dtype=wp.float64), gain: wp.array3d(dtype=wp.float64),
               bias: wp.array3d(dtype=wp.float64), force_range: wp.array3d(dtype=wp.float64)):
    """horde's PD law for actuated joint k of env i as MuJoCo actuator ``act[k]``: the target as its control and
    the env's gains in its per-simulation parameters, force = s kp target + s kp ref - s kp qpos - s kd qvel =
    s (kp (target - q) - kd qd) with q = qpos - ref, clipped to the effort limit (:func:`horde.sim.actuation.
    motor_torque` without the DC-motor line)."""
    i, k = wp.tid()
    a = act[k]
    target = pd_target(wp.clamp(actions[i, k], -1.0, 1.0), scale[k], offset[k], lower[k], upper[k])
    kp = wp.float64(stiffness[i, k]) * wp.float64(strength[i, k])
    kd = wp.float64(damping[i, k]) * wp.float64(strength[i, k])
    state[i, ctrl_at + a] = wp.float64(target)
    gain[i, a, 0] = kp
    bias[i, a, 0] = kp * wp.float64(ref[k])
    bias[i, a, 1] = -kp
    bias[i, a, 2] = -kd
    force_range[i, a, 0] = -wp.float64(effort[i, k])
    force_range[i, a, 1] = wp.float64(effort[i, k])


@wp.kernel(enable_backward=False)
def drive_forces(force: wp.array2d(dtype=wp.float64), act: wp.array(dtype=int), qd_index: wp.array(dtype=int),
                 joint_f: wp.array2d(dtype=float)):
    """Newton's ``joint_f`` view (reward terms read it) from MuJoCo's actuator forces of the last substep."""
    i, k = wp.tid()
    joint_f[i, qd_index[k]] = float(force[i, act[k]])


@wp.kernel(enable_backward=False)
def actuator_net_rows(L: Layout, actions: wp.array2d(dtype=float), mj_q: wp.array(dtype=int),
                      mj_qd: wp.array(dtype=int), ref: wp.array(dtype=float), scale: wp.array(dtype=float),
                      offset: wp.array(dtype=float), lower: wp.array(dtype=float), upper: wp.array(dtype=float),
                      state: wp.array2d(dtype=wp.float64), q: wp.array(dtype=float), qd: wp.array(dtype=float),
                      target: wp.array(dtype=float)):
    """The actuator network's inputs for joint k of env i from the MuJoCo row (as
    :func:`horde.sim.actuation.actuator_net_inputs` from Newton's state)."""
    i, k = wp.tid()
    row = state[i]
    j = i * actions.shape[1] + k
    q[j] = float(row[L.qpos + mj_q[k]]) - ref[k]
    qd[j] = float(row[L.qvel + mj_qd[k]])
    target[j] = pd_target(wp.clamp(actions[i, k], -1.0, 1.0), scale[k], offset[k], lower[k], upper[k])


@wp.kernel(enable_backward=False)
def gather_vec3(src: wp.array2d(dtype=wp.float64), index: wp.array(dtype=int), out: wp.array2d(dtype=wp.vec3)):
    """``out[i, k]`` = the 3 values at ``src[i, index[k]]`` (the contact forces out of ``cfrc_ext``)."""
    i, k = wp.tid()
    at = index[k]
    out[i, k] = wp.vec3(float(src[i, at]), float(src[i, at + 1]), float(src[i, at + 2]))


@wp.kernel(enable_backward=False)
def imu_readings(sensordata: wp.array2d(dtype=wp.float64), acc_at: int, body_q: wp.array2d(dtype=wp.transform),
                 body_qd: wp.array2d(dtype=wp.spatial_vector), root: int, site: wp.quat,
                 acc: wp.array(dtype=wp.vec3), gyro: wp.array(dtype=wp.vec3)):
    """The IMU of env i: MuJoCo's accelerometer of the last substep (site frame, gravity read as +g up) and the
    root's angular velocity at the end of the step in the site frame (as Newton's SensorIMU reads it)."""
    i = wp.tid()
    acc[i] = wp.vec3(float(sensordata[i, acc_at]), float(sensordata[i, acc_at + 1]),
                     float(sensordata[i, acc_at + 2]))
    rot = wp.transform_get_rotation(body_q[i, root])
    gyro[i] = wp.quat_rotate_inv(site, wp.quat_rotate_inv(rot, wp.spatial_bottom(body_qd[i, root])))


@wp.kernel(enable_backward=False)
def flag_failed(failed: wp.array(dtype=wp.bool), state: wp.array2d(dtype=wp.float64), qvel: int):
    """Envs whose MuJoCo step raised keep their old state; a NaN velocity makes the health check reset them."""
    i = wp.tid()
    if failed[i]:
        state[i, qvel] = wp.float64(wp.nan)
        failed[i] = False
