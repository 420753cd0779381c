"""The velocity task's observation terms (:mod:`horde.envs.observations`) and their raw sources.

Column order, as ``velocity_observe`` writes it: base linear velocity, angular velocity (the IMU's gyro with
``task.imu``), projected gravity (in the IMU's frame with ``task.imu``), the command, every joint's angle relative to
the default pose and its rate (the robot config's joint order), the acting joints' last actions, the gait clock
(``task.gait_clock``), the height scan (``task.height_scan``: base height above the terrain minus its offset,
clipped) and the depth image (``task.depth_camera``).
"""

# no `from __future__ import annotations`: Warp reads the kernel's annotations
import functools

import torch
import warp as wp

from horde.envs.observations import ObsTerm, quat_rotate_inverse
from horde.envs.velocity_terms import BASE_OBS, CLOCK_OBS, Legged
from horde.sim.terrain import TerrainGrid, height_scan

__all__ = ["extra_spec", "extras_kernel", "observation_sources", "observation_terms"]

DOWN = (0.0, 0.0, -1.0)


def observation_terms(env) -> tuple:
    """The terms of a :class:`horde.envs.velocity.VelocityEnv`, in column order."""
    cfg, robot, t = env.cfg, env.robot, env._task
    imu = bool(cfg.imu)
    frame = "imu" if imu else "base"
    joints, acting = robot.joints, env.action_names
    terms = [
        ObsTerm("base_lin_vel", source="base_lin_vel", columns=BASE_OBS[0:3], unit="m/s", frame="base",
                noise=t.noise_lin),
        ObsTerm("base_ang_vel", source="imu_gyro" if imu else "base_ang_vel", columns=BASE_OBS[3:6], unit="rad/s",
                frame=frame, noise=t.noise_ang),
        ObsTerm("projected_gravity", source="imu_projected_gravity" if imu else "projected_gravity",
                columns=BASE_OBS[6:9], unit="1", frame=frame, noise=t.noise_grav),
        ObsTerm("velocity_command", source="velocity_command", columns=BASE_OBS[9:12],
                unit=("m/s", "m/s", "rad/s"), frame="base"),
        ObsTerm("joint_pos", source="joint_pos", columns=tuple(f"pos_{j}" for j in joints), unit="rad",
                frame="joint", offset=tuple(float(v) for v in robot.default_joint_pos), noise=t.noise_q,
                joints=tuple(joints)),
        ObsTerm("joint_vel", source="joint_vel", columns=tuple(f"vel_{j}" for j in joints), unit="rad/s",
                frame="joint", noise=t.noise_qd, joints=tuple(joints)),
        ObsTerm("last_action", source="last_action", columns=tuple(f"last_action_{j}" for j in acting), unit="1",
                joints=tuple(acting)),
    ]
    if cfg.gait_clock:
        terms.append(ObsTerm("gait_clock", source="gait_clock", columns=CLOCK_OBS, unit="1"))
    if t.scan_n:
        hs = cfg.height_scan
        terms.append(ObsTerm("height_scan", source="height_scan", columns=tuple(f"height_scan_{k}" for k in
                                                                                  range(t.scan_n)),
                             unit="m", frame="base_yaw" if hs.yaw_aligned else "base", offset=float(hs.offset),
                             clip=float(hs.clip), noise=t.noise_scan))
    if env.camera is not None:
        h, w = env.camera.shape
        terms.append(ObsTerm("depth_image", source="depth_image", columns=tuple(f"depth_{r}_{c}" for r in range(h)
                                                                                for c in range(w)),
                             unit="m", frame="camera"))
    terms += [e.term() for e in env.extras]
    return tuple(terms)


def extra_spec(extras) -> tuple:
    """The user's observation terms as the kernels take them: ``(function, width, offset, scale, clip or 0)``."""
    return tuple((e.func, e.width, e.offset, e.scale, e.clip or 0.0) for e in extras)


@functools.lru_cache(maxsize=None)
def extras_kernel(extras: tuple) -> wp.Kernel:
    """Writes the user's observation terms (:func:`extra_spec`) into ``out[:, base:]`` of the envs in ``mask`` (every
    env unless ``masked``); ``raw`` writes the functions' values without offset, scale and clip (the raw sources).
    The step's own kernel runs the same loop for the envs it steps."""

    @wp.kernel(enable_backward=False, module="unique")
    def velocity_extra_obs(x: Legged, mask: wp.array(dtype=wp.bool), masked: int, base: int, raw: int,
                           out: wp.array2d(dtype=float)):
        i = wp.tid()
        if masked == 0 or mask[i]:
            ok = not x.unstable[i]
            c = base
            for e in range(wp.static(len(extras))):
                for j in range(wp.static(extras[e][1])):
                    v = wp.static(extras[e][0])(x, i, j)
                    if raw == 0:
                        v = (v - wp.static(extras[e][2])) * wp.static(extras[e][3])
                        if wp.static(extras[e][4] > 0.0):
                            v = wp.clamp(v, -wp.static(extras[e][4]), wp.static(extras[e][4]))
                        v = wp.where(ok, v, 0.0)
                    out[i, c + j] = v
                c = c + wp.static(extras[e][1])

    return velocity_extra_obs


@wp.kernel(enable_backward=False)
def scan_heights(g: TerrainGrid, body_q: wp.array2d(dtype=wp.transform), root: int,
                 points: wp.array(dtype=wp.vec2), yaw_aligned: int, out: wp.array2d(dtype=float)):
    """The raw height scan: base height above the terrain at each scan point [num_envs, points] [m]."""
    i, k = wp.tid()
    out[i, k] = height_scan(g, body_q[i, root], points[k], yaw_aligned)


def observation_sources(env) -> dict[str, torch.Tensor]:
    """The raw sources of :func:`observation_terms`, read from the world's state now."""
    w, a, t = env.world, env.world.arrays, env._task
    body_q = wp.to_torch(a.body_q)
    rot = body_q[:, w.root_body, 3:7]
    vel = wp.to_torch(a.root_vel_base)
    down = torch.tensor(DOWN, device=rot.device).expand(rot.shape[0], 3)
    joint_q, joint_qd = wp.to_torch(a.joint_q), wp.to_torch(a.joint_qd)
    out = {"base_lin_vel": vel[:, 0:3], "base_ang_vel": vel[:, 3:6],
           "projected_gravity": quat_rotate_inverse(rot, down),
           "velocity_command": env.command,
           "joint_pos": joint_q[:, wp.to_torch(t.q_index).long()],
           "joint_vel": joint_qd[:, wp.to_torch(t.qd_index).long()],
           "last_action": wp.to_torch(env._last_actions),
           "gait_clock": torch.stack((torch.sin(2 * torch.pi * env.gait_phase),
                                      torch.cos(2 * torch.pi * env.gait_phase)), dim=-1)}
    if env.cfg.imu:
        imu_q = torch.tensor(w.imu_rotation, dtype=rot.dtype, device=rot.device).expand_as(rot)
        out["imu_gyro"] = w.imu_gyro
        out["imu_projected_gravity"] = quat_rotate_inverse(imu_q, out["projected_gravity"])
    if t.scan_n:
        heights = wp.zeros((env.num_envs, t.scan_n), dtype=float, device=env.dev.warp)
        wp.launch(scan_heights, dim=(env.num_envs, t.scan_n), device=env.dev.warp,
                  inputs=[env._grid, a.body_q, w.root_body, env._scan, t.scan_yaw, heights])
        out["height_scan"] = wp.to_torch(heights)
    if env.camera is not None:
        out["depth_image"] = wp.to_torch(env.camera.image).reshape(env.num_envs, -1)
    if env.extras:
        raw = wp.zeros((env.num_envs, t.extra_n), dtype=float, device=env.dev.warp)
        wp.launch(env._extras, env.num_envs, device=env.dev.warp, inputs=[env.legged, env._reset_mask, 0, 0, 1],
                  outputs=[raw])
        c = 0
        for e in env.extras:
            out[e.name] = wp.to_torch(raw)[:, c:c + e.width]
            c += e.width
    return out
