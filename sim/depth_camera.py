"""A depth camera per env on a robot body, ray-traced by Newton's ``SensorCamera`` inside the step.

Each env's camera sits on one body of its robot (offset and downward pitch from config) and sees its own world plus
the global shapes (terrain, ground). The image is the forward (z) depth that depth cameras such as the RealSense
report [m], clipped to ``[0, max_depth]`` (no hit reads ``max_depth``), with optional uniform noise, as
``[num_envs, height, width]``. Every launch works on preallocated arrays, so the update is recorded in the step's
graph with the physics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import warp as wp

from horde.sim.fields import FieldError, bounded


@dataclass(kw_only=True)
class DepthCameraConfig:
    """A body-mounted depth camera (off unless ``enabled``)."""

    enabled: bool = False
    """Render a depth image per env every control step and append it to the observations."""
    width: int = bounded(ge=1, default=32)
    """Image width [px]."""
    height: int = bounded(ge=1, default=24)
    """Image height [px]."""
    fov: float = bounded(gt=0.0, lt=math.pi, default=1.0)
    """Vertical field of view [rad]."""
    body: str = ""
    """Body the camera is mounted on; empty: the robot's root body."""
    position: list[float] = field(default_factory=lambda: [0.35, 0.0, 0.0])
    """Camera position in the body's frame [m] (x forward, y left, z up); the default is just ahead of quad12's head."""
    pitch: float = 0.6
    """Downward tilt of the optical axis from the body's x axis [rad]."""
    max_depth: float = bounded(gt=0.0, default=3.0)
    """Depths are clipped to this [m]; rays that hit nothing read it too."""
    noise: float = bounded(ge=0.0, default=0.0)
    """Uniform depth noise amplitude [m] (scaled by the randomization's observation-noise scale)."""


def mount_rotation(pitch: float) -> tuple[float, float, float, float]:
    """Quaternion (x, y, z, w) of a camera frame (looks along -Z, +Y up) in a body frame (x forward, z up) whose
    optical axis is the body's +x tilted down by ``pitch`` [rad]."""
    fwd = np.array([math.cos(pitch), 0.0, -math.sin(pitch)])
    up = np.array([math.sin(pitch), 0.0, math.cos(pitch)])
    rot = np.stack([np.cross(up, -fwd), up, -fwd], axis=1)  # columns: camera x, y, z in the body frame
    from horde.sim.camera import quat_from_matrix

    return tuple(float(v) for v in quat_from_matrix(rot[None])[0])


@wp.kernel(enable_backward=False)
def camera_poses(body_q: wp.array2d(dtype=wp.transform), body: int, mount: wp.transform,
                 poses: wp.array(dtype=wp.transformf)):
    """World pose of env i's camera: its body's pose times the mount."""
    i = wp.tid()
    poses[i] = body_q[i, body] * mount


@wp.kernel(enable_backward=False)
def select_views(mask: wp.array(dtype=wp.bool), skip: int, views: wp.array(dtype=wp.int32)):
    """View i renders world i where ``mask`` is set; elsewhere it is skipped and keeps its image."""
    i = wp.tid()
    views[i] = wp.where(mask[i], i, skip)


@wp.kernel(enable_backward=False)
def finish_depth(raw: wp.array3d(dtype=float), mask: wp.array(dtype=wp.bool), max_depth: float, noise: float,
                 rng: wp.array(dtype=wp.uint32), depth: wp.array3d(dtype=float)):
    """Clip (no hit: ``max_depth``) and add noise for the envs in ``mask``, one thread per env: the noise comes
    from the env's own random stream (seeded, re-seeded and checkpointed with the env's)."""
    i = wp.tid()
    if not mask[i]:
        return
    s = rng[i]
    for r in range(depth.shape[1]):
        for c in range(depth.shape[2]):
            d = raw[i, r, c]
            d = wp.where(d > 0.0, wp.min(d, max_depth), max_depth)
            if noise > 0.0:
                d = wp.clamp(d + wp.randf(s, -noise, noise), 0.0, max_depth)
            depth[i, r, c] = d
    rng[i] = s


class DepthCamera:
    """One depth camera per env of a :class:`horde.sim.newton_world.NewtonWorld` (see the module docstring).

    ``depth`` is the image [num_envs, height, width] [m] (zero-copy torch view), written by :meth:`update`.
    """

    def __init__(self, world, cfg: DepthCameraConfig, *, noise_scale: float = 1.0) -> None:
        from newton.sensors import SensorCamera

        self.world, self.cfg = world, cfg
        n, device = world.num_envs, world.device
        labels = [lbl.split("/")[-1] for lbl in world.model.body_label[:world.robot_bodies]]
        if cfg.body and cfg.body not in labels:
            raise FieldError(f"task.depth_camera.body={cfg.body}: not a body of the robot; bodies: {', '.join(labels)}")
        self.body = labels.index(cfg.body) if cfg.body else world.root_body
        self.mount = wp.transform(wp.vec3(*cfg.position), wp.quat(*mount_rotation(cfg.pitch)))
        self.noise = float(cfg.noise * noise_scale)
        self._sensor = SensorCamera(world.model, load_textures=False)
        self._rays = SensorCamera.compute_camera_rays_pinhole(cfg.width, cfg.height, camera_fov=float(cfg.fov),
                                                              device=device)
        self._poses = wp.zeros(n, dtype=wp.transformf, device=device)
        self._raw = self._sensor.allocate_image_depth_forward(n, cfg.width, cfg.height)
        self._depth = wp.zeros((n, cfg.height, cfg.width), dtype=float, device=device)
        self._no_rng = wp.zeros(n, dtype=wp.uint32, device=device)
        self._all = wp.full(n, True, dtype=wp.bool, device=device)
        self._views = wp.zeros(n, dtype=wp.int32, device=device)
        self._skip = int(SensorCamera.WorldRenderFlag.DISABLE_PRESERVE)
        self.image = self._depth
        """The same image as a Warp array, for task kernels."""
        self.depth = wp.to_torch(self._depth)
        """Depth image [num_envs, height, width] [m] (forward depth, clipped, with noise)."""
        self.shape = (cfg.height, cfg.width)

    @property
    def kernels(self) -> tuple:
        return (camera_poses, select_views, finish_depth)

    @property
    def ray_directions(self) -> np.ndarray:
        """Per-pixel ray directions in the camera frame [height, width, 3] (camera looks along -Z)."""
        return self._rays.numpy()[:, :, 0, 1]

    def update(self, mask: wp.array | None = None, rng: wp.array | None = None) -> None:
        """Render the cameras of the envs in ``mask`` (default: all) from the world's current state; the others keep
        their images. ``rng`` (uint32 [num_envs]) holds the per-env random streams the noise draws from (needed when
        ``noise`` > 0). Launches only: recordable in a graph."""
        w, cfg = self.world, self.cfg
        state = w.state_0
        mask = self._all if mask is None else mask
        wp.launch(camera_poses, w.num_envs, device=w.device, inputs=[w.arrays.body_q, self.body, self.mount],
                  outputs=[self._poses])
        wp.launch(select_views, w.num_envs, device=w.device, inputs=[mask, self._skip], outputs=[self._views])
        w.model.bvh_refit_shapes(state)
        self._sensor.update(state, self._poses, self._rays, forward_depth_image=self._raw, world_indices=self._views)
        if self.noise > 0.0 and rng is None:
            raise ValueError("a noisy depth camera needs the env's random streams (rng=)")
        wp.launch(finish_depth, w.num_envs, device=w.device,
                  inputs=[self._raw, mask, float(cfg.max_depth), self.noise],
                  outputs=[self._no_rng if rng is None else rng, self._depth])
