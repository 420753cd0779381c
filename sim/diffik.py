"""Differential inverse kinematics of a serial chain of hinge joints, per env inside a step kernel.

:class:`Chain` describes the chain once (each joint's child body, the joint frame in that body, the joint axis);
:func:`site_jacobian` is the geometric Jacobian of a site on the chain's last body from the bodies' world poses
(``body_q``), :func:`dls_step` the damped-least-squares joint step ``J^T (J J^T + lambda^2 I)^-1 e`` for a
6-D task error ``e`` (position [m], then rotation vector [rad]) and :func:`orientation_error` that rotation vector.
Everything reads the poses the physics already wrote, so the same code runs on every backend and device and inside a
recorded graph. Newton's ``newton.ik`` solves absolute targets iteratively (Levenberg-Marquardt over a model); a task
that turns end-effector deltas into joint targets every control step needs one linear solve per env, which these
functions do in the task's own kernel. :func:`chain_from_builder` reads a chain from a Newton model builder.
"""

from __future__ import annotations

from collections.abc import Sequence

from typing import TYPE_CHECKING

import warp as wp

if TYPE_CHECKING:  # newton's import costs seconds; a process that never builds a chain skips it
    import newton

__all__ = ["MAX_CHAIN", "Chain", "chain_from_builder", "dls_step", "mat6", "orientation_error", "site_jacobian",
           "vec6"]

MAX_CHAIN = 7
"""Joints a chain may have (the matrix types below are sized for it)."""

mat6 = wp.types.matrix(shape=(6, 6), dtype=float)
vec6 = wp.types.vector(length=6, dtype=float)
mat67 = wp.types.matrix(shape=(6, MAX_CHAIN), dtype=float)
vec7 = wp.types.vector(length=MAX_CHAIN, dtype=float)


@wp.struct
class Chain:
    """A serial chain of hinge joints, base to tip (arrays of length ``count``)."""

    count: int
    body: wp.array(dtype=int)
    """Child body of each joint (index into one env's row of ``body_q``)."""
    frame: wp.array(dtype=wp.transform)
    """Joint frame in the child body's frame."""
    axis: wp.array(dtype=wp.vec3)
    """Joint axis in the joint frame (unit)."""


def chain_from_builder(builder: newton.ModelBuilder, joints: Sequence[str], device) -> Chain:
    """The chain of the hinge joints labelled ``joints`` (label suffixes, base to tip) of one env's builder."""
    import newton

    if len(joints) > MAX_CHAIN:
        raise ValueError(f"a chain has at most {MAX_CHAIN} joints, got {len(joints)}")
    labels = [lbl.split("/")[-1] for lbl in builder.joint_label]
    body, frame, axis = [], [], []
    for name in joints:
        if name not in labels:
            raise ValueError(f"no joint '{name}'; joints: {', '.join(labels)}")
        j = labels.index(name)
        if builder.joint_type[j] != newton.JointType.REVOLUTE:
            raise ValueError(f"joint '{name}' is not a hinge")
        body.append(builder.joint_child[j])
        frame.append(builder.joint_X_c[j])
        axis.append(builder.joint_axis[builder.joint_qd_start[j]])
    c = Chain()
    c.count = len(joints)
    c.body = wp.array(body, dtype=int, device=device)
    c.frame = wp.array(frame, dtype=wp.transform, device=device)
    c.axis = wp.array(axis, dtype=wp.vec3, device=device)
    return c


@wp.func
def site_jacobian(c: Chain, body_q: wp.array2d(dtype=wp.transform), i: int, site: wp.vec3) -> mat67:
    """Geometric Jacobian of world point ``site`` [m] (on the chain's last body) of env ``i``: rows 0-2 the point's
    linear velocity, rows 3-5 the body's angular velocity, per unit joint rate; columns beyond ``count`` are 0."""
    J = mat67()
    for k in range(c.count):
        f = body_q[i, c.body[k]] * c.frame[k]
        a = wp.transform_vector(f, c.axis[k])
        v = wp.cross(a, site - wp.transform_get_translation(f))
        for r in range(3):
            J[r, k] = v[r]
            J[r + 3, k] = a[r]
    return J


@wp.func
def orientation_error(current: wp.quat, desired: wp.quat) -> wp.vec3:
    """Rotation vector [rad] that turns ``current`` into ``desired`` (world frame, shortest way)."""
    d = desired * wp.quat_inverse(current)
    if d[3] < 0.0:
        d = -d
    v = wp.vec3(d[0], d[1], d[2])
    s = wp.length(v)
    angle = 2.0 * wp.atan2(s, d[3])
    return wp.where(s > 1.0e-9, v * (angle / wp.max(s, 1.0e-9)), v * 2.0)


@wp.func
def dls_step(J: mat67, e: vec6, damping: float) -> vec7:
    """Joint step ``J^T (J J^T + damping^2 I)^-1 e`` (damped least squares; a Cholesky solve of the 6x6 system)."""
    A = mat6()
    for r in range(6):
        for s in range(6):
            acc = float(0.0)
            for k in range(MAX_CHAIN):
                acc += J[r, k] * J[s, k]
            A[r, s] = acc
        A[r, r] = A[r, r] + damping * damping
    # Cholesky A = L L^T, in place in the lower triangle
    L = mat6()
    for r in range(6):
        for s in range(r + 1):
            acc = A[r, s]
            for k in range(s):
                acc -= L[r, k] * L[s, k]
            if r == s:
                L[r, r] = wp.sqrt(wp.max(acc, 1.0e-12))
            else:
                L[r, s] = acc / L[s, s]
    y = vec6()
    for r in range(6):  # L y = e
        acc = e[r]
        for k in range(r):
            acc -= L[r, k] * y[k]
        y[r] = acc / L[r, r]
    x = vec6()
    for rr in range(6):  # L^T x = y
        r = 5 - rr
        acc = y[r]
        for k in range(r + 1, 6):
            acc -= L[k, r] * x[k]
        x[r] = acc / L[r, r]
    dq = vec7()
    for k in range(MAX_CHAIN):
        acc = float(0.0)
        for r in range(6):
            acc += J[r, k] * x[r]
        dq[k] = acc
    return dq
