"""The Newton world's per-step kernels besides actuation: the health check, partial resets of joint state, and
MuJoCo-Warp's warm start (:class:`horde.sim.newton_world.NewtonWorld` launches them)."""

from __future__ import annotations

import warp as wp

__all__ = ["clear_warmstart", "inspect_worlds", "reset_joint_state"]


@wp.func
def _vec_finite(v: wp.vec3) -> bool:
    return wp.isfinite(v[0]) and wp.isfinite(v[1]) and wp.isfinite(v[2])


@wp.kernel(enable_backward=False)
def inspect_worlds(
    root: int,
    max_distance: float,
    max_lin_vel: float,
    max_ang_vel: float,
    joint_q: wp.array2d(dtype=float),
    joint_qd: wp.array2d(dtype=float),
    body_q: wp.array2d(dtype=wp.transform),
    body_qd: wp.array2d(dtype=wp.spatial_vector),
    unstable_count: wp.array(dtype=wp.float64),
    unstable: wp.array(dtype=wp.bool),
    root_vel_base: wp.array2d(dtype=float),
):
    """Health check of world i (non-finite or out of bounds -> ``unstable``, counted) and its base-frame root twist."""
    i = wp.tid()
    ok = bool(True)
    for k in range(joint_q.shape[1]):
        ok = ok and wp.isfinite(joint_q[i, k])
    for k in range(joint_qd.shape[1]):
        ok = ok and wp.isfinite(joint_qd[i, k])
    for b in range(body_q.shape[1]):
        p = wp.transform_get_translation(body_q[i, b])
        r = wp.transform_get_rotation(body_q[i, b])
        v = wp.spatial_top(body_qd[i, b])
        w = wp.spatial_bottom(body_qd[i, b])
        finite = _vec_finite(p) and _vec_finite(v) and _vec_finite(w) and wp.isfinite(r[3])
        ok = ok and finite and wp.length(p) < max_distance and wp.length(v) < max_lin_vel
        ok = ok and wp.length(w) < max_ang_vel
    unstable[i] = not ok
    if not ok:
        wp.atomic_add(unstable_count, 0, wp.float64(1.0))
        for k in range(6):
            root_vel_base[i, k] = 0.0
    else:
        rot = wp.transform_get_rotation(body_q[i, root])
        v = wp.quat_rotate_inv(rot, wp.spatial_top(body_qd[i, root]))
        w = wp.quat_rotate_inv(rot, wp.spatial_bottom(body_qd[i, root]))
        for k in range(3):
            root_vel_base[i, k] = v[k]
            root_vel_base[i, 3 + k] = w[k]


@wp.kernel(enable_backward=False)
def reset_joint_state(
    mask: wp.array(dtype=wp.bool),
    default_q: wp.array(dtype=float),
    default_qd: wp.array(dtype=float),
    q_noise: wp.array(dtype=float),
    qd_noise: wp.array(dtype=float),
    lower: wp.array(dtype=float),
    upper: wp.array(dtype=float),
    floating: int,
    yaw_range: float,
    origin: wp.array(dtype=wp.vec3),
    rng: wp.array(dtype=wp.uint32),
    joint_q: wp.array2d(dtype=float),
    joint_qd: wp.array2d(dtype=float),
    joint_f: wp.array2d(dtype=float),
):
    """Masked worlds get default coordinates + U(-q_noise, q_noise) (clipped to limits) and U(-qd_noise, qd_noise);
    a floating base is moved to the env's spawn ``origin`` and turned by a yaw in U(-yaw_range, yaw_range)."""
    i = wp.tid()
    if mask[i]:
        s = rng[i]
        for k in range(joint_q.shape[1]):
            q = default_q[k] + wp.randf(s, -1.0, 1.0) * q_noise[k]
            joint_q[i, k] = wp.clamp(q, lower[k], upper[k])
        for k in range(joint_qd.shape[1]):
            joint_qd[i, k] = default_qd[k] + wp.randf(s, -1.0, 1.0) * qd_noise[k]
            joint_f[i, k] = 0.0
        if floating == 1:
            o = origin[i]
            for k in range(3):
                joint_q[i, k] = joint_q[i, k] + o[k]
            if yaw_range > 0.0:
                yaw = wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), wp.randf(s, -1.0, 1.0) * yaw_range)
                q0 = wp.normalize(wp.quat(joint_q[i, 3], joint_q[i, 4], joint_q[i, 5], joint_q[i, 6]))
                qn = yaw * q0
                for k in range(4):
                    joint_q[i, 3 + k] = qn[k]
        rng[i] = s


@wp.kernel(enable_backward=False)
def clear_warmstart(mask: wp.array(dtype=wp.bool), qacc_warmstart: wp.array2d(dtype=float)):
    """MuJoCo-Warp warm-starts each step from the last accelerations: a world reset after a blow-up must not
    inherit its NaNs."""
    i, k = wp.tid()
    if mask[i]:
        qacc_warmstart[i, k] = 0.0


@wp.kernel(enable_backward=False)
def articulation_mask(env_mask: wp.array(dtype=wp.bool), articulation_world: wp.array(dtype=wp.int32),
                      out: wp.array(dtype=wp.bool)):
    """Newton's FK masks articulations, not worlds: articulation a is selected when its env is (a free object is an
    articulation of its own, so the lift has two per env)."""
    a = wp.tid()
    w = articulation_world[a]
    out[a] = w >= 0 and env_mask[w]
