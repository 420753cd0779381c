"""The velocity task's observation terms (:mod:`horde.envs.observations`): each with the Warp function that reads
its raw source, written by the observation generator (:mod:`horde.envs.obs_writer`) in the step's kernels.

Column order: base linear velocity, angular velocity (the IMU's gyro with
``task.imu``), projected gravity (in the IMU's frame with ``task.imu``), the command, every joint's angle relative to
the default pose and its rate (the robot config's joint order), the acting joints' last actions, the gait clock
(``task.gait_clock``), the height scan (``task.height_scan``: base height above the terrain minus its offset,
clipped) and the depth image (``task.depth_camera``).
"""

# no `from __future__ import annotations`: Warp reads the kernel's annotations
import dataclasses

import torch
import warp as wp

from horde.envs.obs_writer import observation_writer, raw_kernel
from horde.envs.observations import MODIFIERS, ObsTerm, modifiers
from horde.envs.velocity_terms import BASE_OBS, CLOCK_OBS, Legged
from horde.sim.terrain import height_scan

__all__ = ["ALWAYS_DRAW", "BUILTIN_OBSERVATIONS", "INTERLEAVE", "check_observation_params", "observation_sources",
           "observation_terms", "observation_writer_of", "split_params"]


@wp.func
def base_lin_vel(x: Legged, i: int, k: int) -> float:
    """Base linear velocity in the base frame [m/s]."""
    return x.root_vel_base[i, k]


@wp.func
def base_ang_vel(x: Legged, i: int, k: int) -> float:
    """Base angular velocity in the base frame [rad/s] (the fallback of :func:`ang_vel`)."""
    return x.root_vel_base[i, 3 + k]


@wp.func
def ang_vel(x: Legged, i: int, k: int) -> float:
    """The IMU's gyro with ``task.imu``, else the base's angular velocity [rad/s]."""
    if x.imu != 0:
        return x.imu_gyro[i][k]
    return x.root_vel_base[i, 3 + k]


@wp.func
def projected_gravity(x: Legged, i: int, k: int) -> float:
    """The world's unit gravity direction in the base frame (the IMU site's with ``task.imu``)."""
    frame = wp.transform_get_rotation(x.body_q[i, x.root])
    if x.imu != 0:
        frame = frame * x.imu_q
    return wp.quat_rotate_inv(frame, wp.vec3(0.0, 0.0, -1.0))[k]


@wp.func
def velocity_command(x: Legged, i: int, k: int) -> float:
    return x.command[i, k]


@wp.func
def joint_pos(x: Legged, i: int, k: int) -> float:
    """Actuated joint ``k``'s angle (the robot config's order) [rad]."""
    return x.joint_q[i, x.q_index[k]]


@wp.func
def joint_vel(x: Legged, i: int, k: int) -> float:
    return x.joint_qd[i, x.qd_index[k]]


@wp.func
def last_action(x: Legged, i: int, k: int) -> float:
    return x.last_actions[i, k]


@wp.func
def gait_clock(x: Legged, i: int, k: int) -> float:
    """sin (k = 0) and cos (k = 1) of 2 pi x the gait clock's phase."""
    if k == 0:
        return wp.sin(2.0 * wp.pi * x.gait_phase[i])
    return wp.cos(2.0 * wp.pi * x.gait_phase[i])


@wp.func
def scan_height(x: Legged, i: int, k: int) -> float:
    """The base's height above the terrain under scan point ``k`` [m]."""
    return height_scan(x.grid, x.body_q[i, x.root], x.scan[k], x.scan_yaw)


@wp.func
def depth_pixel(x: Legged, i: int, k: int) -> float:
    """Pixel ``k`` of the depth image, row-major [m]."""
    w = x.depth.shape[2]
    return x.depth[i, k // w, k % w]


INTERLEAVE = (("base_lin_vel", "base_ang_vel", "projected_gravity", "velocity_command"), ("joint_pos", "joint_vel"))
"""The velocity family's noise draws column by column across the base terms and across the joint terms (its
stream since the first recipes: :func:`horde.envs.obs_writer.observation_writer`'s ``interleave``)."""
ALWAYS_DRAW = ("base_lin_vel", "base_ang_vel", "projected_gravity", "joint_pos", "joint_vel", "height_scan")
"""The terms that draw their noise number even with the noise off (randomization off): the family's stream."""


BUILTIN_OBSERVATIONS = ("base_lin_vel", "base_ang_vel", "projected_gravity", "velocity_command", "joint_pos",
                        "joint_vel", "last_action", "gait_clock", "height_scan", "depth_image")
"""The family's own terms (the last three with ``gait_clock``, ``height_scan``, ``depth_camera``)."""


def split_params(params) -> tuple[dict[str, dict], dict[str, dict]]:
    """``task.observation_params`` as each term's :data:`~horde.envs.observations.MODIFIERS` (noise, scale, clip,
    history: any term, built-in or a user's) and the rest (a user term's function parameters and ``func``)."""
    mods, rest = {}, {}
    for name, kv in (params or {}).items():
        kv = dict(kv or {})
        mods[str(name)] = {k: kv.pop(k) for k in MODIFIERS if k in kv}
        if kv or str(name) not in BUILTIN_OBSERVATIONS:
            rest[str(name)] = kv
    return mods, rest


def check_observation_params(cfg) -> None:
    """``task.extra_observations`` and ``task.observation_params`` name the config's terms and their parameters; a
    built-in term takes only the modifiers (one line each: :class:`horde.envs.terms.UnknownTermError`)."""
    from horde.envs.terms import UnknownTermError
    from horde.envs.velocity_terms import VELOCITY_OBSERVATIONS

    mods, rest = split_params(cfg.observation_params)
    own = [*BUILTIN_OBSERVATIONS[:7], *(["gait_clock"] if cfg.gait_clock else []),
           *(["height_scan"] if cfg.height_scan.enabled else []),
           *(["depth_image"] if cfg.depth_camera.enabled else [])]
    for name, kv in rest.items():
        if name in BUILTIN_OBSERVATIONS:
            raise UnknownTermError(f"task.observation_params.{name}: the built-in term takes only "
                                   f"{', '.join(MODIFIERS)}; got {', '.join(kv)}")
    for name, kv in mods.items():
        if name not in own and name not in cfg.extra_observations:
            raise UnknownTermError(f"task.observation_params.{name}: not an observation term of the task "
                                   f"({', '.join([*own, *cfg.extra_observations])})")
        modifiers(name, kv)
        if name == "depth_image" and kv.get("history", 1) != 1:  # the image encoder reads one image's slice
            raise UnknownTermError("task.observation_params.depth_image.history: the depth image keeps no history "
                                   "(its encoder reads one frame)")
    VELOCITY_OBSERVATIONS.resolve(list(cfg.extra_observations),
                                  {n: kv for n, kv in rest.items() if n not in BUILTIN_OBSERVATIONS})


def observation_terms(env, clean: bool = False, cfg=None) -> tuple:
    """The terms of a :class:`horde.envs.velocity.VelocityEnv`, in column order, each with its function (what
    :func:`horde.envs.obs_writer.observation_writer` writes); ``clean``: without noise (the privileged critic's
    copy)."""
    cfg, robot, scan_n = cfg or env.cfg, env.robot, len(env.scan_points)
    noise = {} if clean else env.obs_noise
    imu = bool(cfg.imu)
    frame = "imu" if imu else "base"
    joints, acting = robot.joints, env.action_names
    terms = [
        ObsTerm("base_lin_vel", source="base_lin_vel", columns=BASE_OBS[0:3], unit="m/s", frame="base",
                noise=noise.get("base_lin_vel", 0.0), func=base_lin_vel),
        ObsTerm("base_ang_vel", source="imu_gyro" if imu else "base_ang_vel", columns=BASE_OBS[3:6], unit="rad/s",
                frame=frame, noise=noise.get("base_ang_vel", 0.0), func=ang_vel, fallback=base_ang_vel),
        ObsTerm("projected_gravity", source="imu_projected_gravity" if imu else "projected_gravity",
                columns=BASE_OBS[6:9], unit="1", frame=frame, noise=noise.get("projected_gravity", 0.0),
                func=projected_gravity, fallback=0.0),
        ObsTerm("velocity_command", source="velocity_command", columns=BASE_OBS[9:12],
                unit=("m/s", "m/s", "rad/s"), frame="base", func=velocity_command),
        ObsTerm("joint_pos", source="joint_pos", columns=tuple(f"pos_{j}" for j in joints), unit="rad",
                frame="joint", offset=tuple(float(v) for v in robot.default_joint_pos),
                noise=noise.get("joint_pos", 0.0), joints=tuple(joints), func=joint_pos, fallback=0.0),
        ObsTerm("joint_vel", source="joint_vel", columns=tuple(f"vel_{j}" for j in joints), unit="rad/s",
                frame="joint", noise=noise.get("joint_vel", 0.0), joints=tuple(joints), func=joint_vel,
                fallback=0.0),
        ObsTerm("last_action", source="last_action", columns=tuple(f"last_action_{j}" for j in acting), unit="1",
                joints=tuple(acting), func=last_action),
    ]
    if cfg.gait_clock:
        terms.append(ObsTerm("gait_clock", source="gait_clock", columns=CLOCK_OBS, unit="1", func=gait_clock))
    if scan_n:
        hs = cfg.height_scan
        terms.append(ObsTerm("height_scan", source="height_scan", columns=tuple(f"height_scan_{k}" for k in
                                                                                  range(scan_n)),
                             unit="m", frame="base_yaw" if hs.yaw_aligned else "base", offset=float(hs.offset),
                             clip=float(hs.clip), noise=noise.get("height_scan", 0.0), func=scan_height,
                             fallback=0.0))
    if env.camera is not None:
        h, w = env.camera.shape
        terms.append(ObsTerm("depth_image", source="depth_image", columns=tuple(f"depth_{r}_{c}" for r in range(h)
                                                                                for c in range(w)),
                             unit="m", frame="camera", func=depth_pixel, fallback=0.0))
    terms += [e.term() for e in env.extras]
    mods, _ = split_params(cfg.observation_params)  # task.observation_params.<term>.noise|scale|clip
    terms = [dataclasses.replace(t, **{**modifiers(t.name, mods.get(t.name, {})), **({"noise": 0.0, "delay": (0, 0)} if clean else {})})
             for t in terms]
    return tuple(terms)


def observation_writer_of(env, cfg, clean: bool = False, fill: bool = False) -> wp.Function:
    """The env's observation group as one Warp function (:func:`horde.envs.obs_writer.observation_writer`; ``cfg``:
    the env's config, before the env holds it; ``fill``: the writer for envs just reset, every frame of a term with
    history the first value)."""
    return observation_writer(Legged, observation_terms(env, clean, cfg), interleave=INTERLEAVE,
                              always_draw=() if clean else ALWAYS_DRAW, fill=fill)


def observation_sources(env) -> dict[str, torch.Tensor]:
    """The raw sources of :func:`observation_terms`, read from the world's state now by the terms' own functions
    (one source per quantity: what the step writes, before offset, noise, scale, clip)."""
    terms = observation_terms(env, clean=True)
    raw = wp.zeros((env.num_envs, sum(t.frame_width for t in terms)), dtype=float, device=env.dev.warp)
    wp.launch(raw_kernel(Legged, terms), env.num_envs, device=env.dev.warp, inputs=[env.legged], outputs=[raw])
    out, c = {}, 0
    for t in terms:
        out[t.source] = wp.to_torch(raw)[:, c:c + t.frame_width]
        c += t.frame_width
    return out
