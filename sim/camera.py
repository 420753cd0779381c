"""Ray-traced colour frames of a Newton model with Newton's ``SensorCamera``: one chase camera per shown world.

Headless on every Warp device (no display, no OpenGL, no GPU needed). Used by ``horde play video=true`` for Newton
tasks and for the frames in ``docs/``. The camera follows the centre of each world's robot from a fixed bearing;
the ground and other static shapes get a checkerboard so that motion over flat ground is visible.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

SKY_RGBA = (0xF7 << 16) | (0xF1 << 8) | 0xEC | (0xFF << 24)
"""Clear colour of the colour image, packed RGBA as ``SensorCamera`` writes it (R in the low byte)."""


GROUND_RGB = (0.78, 0.78, 0.76)
"""Colour given to static shapes (ground, terrain, props) in the frames; it changes the model's render colour only."""


def quat_from_matrix(rot: np.ndarray) -> np.ndarray:
    """Unit quaternions (x, y, z, w) of rotation matrices, shape [V, 3, 3] -> [V, 4] (Shepperd's method)."""
    m = np.asarray(rot, np.float64)
    w = np.sqrt(np.maximum(0.0, 1.0 + m[:, 0, 0] + m[:, 1, 1] + m[:, 2, 2])) / 2
    x = np.sqrt(np.maximum(0.0, 1.0 + m[:, 0, 0] - m[:, 1, 1] - m[:, 2, 2])) / 2
    y = np.sqrt(np.maximum(0.0, 1.0 - m[:, 0, 0] + m[:, 1, 1] - m[:, 2, 2])) / 2
    z = np.sqrt(np.maximum(0.0, 1.0 - m[:, 0, 0] - m[:, 1, 1] + m[:, 2, 2])) / 2
    x = np.copysign(x, m[:, 2, 1] - m[:, 1, 2])
    y = np.copysign(y, m[:, 0, 2] - m[:, 2, 0])
    z = np.copysign(z, m[:, 1, 0] - m[:, 0, 1])
    q = np.stack([x, y, z, w], axis=1)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def look_at(eye: np.ndarray, target: np.ndarray, up: Sequence[float] = (0.0, 0.0, 1.0)) -> np.ndarray:
    """Camera transforms (px, py, pz, qx, qy, qz, qw), shape [V, 7], that put each camera at ``eye`` [V, 3] [m]
    looking at ``target`` [V, 3] [m]: the camera looks along its local -Z with +Y up (``SensorCamera``'s
    convention)."""
    eye, target = np.asarray(eye, np.float64), np.asarray(target, np.float64)
    back = eye - target
    back /= np.linalg.norm(back, axis=1, keepdims=True)  # the camera's +Z points away from what it looks at
    right = np.cross(np.broadcast_to(np.asarray(up, np.float64), back.shape), back)
    right /= np.linalg.norm(right, axis=1, keepdims=True)
    cam_up = np.cross(back, right)
    rot = np.stack([right, cam_up, back], axis=2)  # columns: the camera's axes in the world frame
    return np.concatenate([eye, quat_from_matrix(rot)], axis=1).astype(np.float32)


class ChaseCamera:
    """RGB frames of ``worlds`` of a Newton model, one view each, from a camera that follows a target point.

    ``distance`` [m] from the target, ``azimuth`` and ``elevation`` [rad] give the bearing (azimuth 0 looks along
    +x from behind, i.e. the camera sits at -x); ``fov`` [rad] is the vertical field of view.
    """

    def __init__(self, model, worlds: Sequence[int], *, width: int = 320, height: int = 240, fov: float = 0.8,
                 distance: float = 2.5, azimuth: float = -2.2, elevation: float = 0.45) -> None:
        import warp as wp
        from newton.sensors import SensorCamera

        self.model, self.width, self.height = model, int(width), int(height)
        self.worlds = [int(w) for w in worlds]
        self.distance, self.azimuth, self.elevation = float(distance), float(azimuth), float(elevation)
        device = model.device
        self._config = SensorCamera.RenderConfig(enable_shadows=True, enable_textures=True)
        self._sensor = SensorCamera(model, load_textures=False,
                                    default_clear_data=SensorCamera.ClearData(clear_color=SKY_RGBA),
                                    default_render_config=self._config)
        self._sensor.create_default_light(enable_shadows=True)
        self._sensor.set_ambient_light((0.45, 0.45, 0.5), (0.15, 0.15, 0.17))
        static = np.flatnonzero(model.shape_body.numpy() < 0)  # ground, terrain and props
        if len(static) and model.shape_color is not None:  # light grey under the checkerboard, whatever the MJCF says
            colors = model.shape_color.numpy()
            colors[static] = GROUND_RGB
            model.shape_color.assign(colors)
        if len(static):
            self._sensor.assign_checkerboard_material(shape_indices=static, resolution=64, checker_size=16)
        self._rays = SensorCamera.compute_camera_rays_pinhole(self.width, self.height, camera_fov=float(fov),
                                                              device=device)
        v = len(self.worlds)
        self._color = self._sensor.allocate_image_color(v, self.width, self.height)
        self._world_ids = wp.array(np.asarray(self.worlds, np.int32), dtype=wp.int32, device=device)
        self._transforms = wp.zeros(v, dtype=wp.transformf, device=device)

    def eye(self, target: np.ndarray) -> np.ndarray:
        """Camera positions [V, 3] [m] for targets [V, 3]."""
        ce = np.cos(self.elevation)
        offset = self.distance * np.array([-np.cos(self.azimuth) * ce, -np.sin(self.azimuth) * ce,
                                           np.sin(self.elevation)])
        return np.asarray(target, np.float64) + offset

    def render(self, state, target: np.ndarray) -> np.ndarray:
        """Frames of the shown worlds in ``state``: uint8 [V, height, width, 3]; ``target`` [V, 3] [m] is the point
        each camera looks at."""
        self.model.bvh_refit_shapes(state)  # bodies moved since the last frame
        self._transforms.assign(look_at(self.eye(target), target))
        self._sensor.update(state, self._transforms, self._rays, color_image=self._color,
                            world_indices=self._world_ids)
        rgba = self._color.numpy().view(np.uint8).reshape(len(self.worlds), self.height, self.width, 4)
        return np.ascontiguousarray(rgba[..., :3])


def tile(frames: np.ndarray, columns: int | None = None) -> np.ndarray:
    """Views [V, H, W, 3] laid out in a grid (``columns`` wide, default all in one row), uint8 [H', W', 3]."""
    v, h, w, c = frames.shape
    columns = columns or v
    rows = -(-v // columns)
    out = np.full((rows * h, columns * w, c), 255, np.uint8)
    for k in range(v):
        r, col = divmod(k, columns)
        out[r * h:(r + 1) * h, col * w:(col + 1) * w] = frames[k]
    return out


def robot_centres(world) -> np.ndarray:
    """Mean position of each world's robot bodies, shape [num_envs, 3] [m], from a :class:`NewtonWorld`'s current
    state (host copy: for rendering, not for the step)."""
    q = world.state_0.body_q.numpy().reshape(world.num_envs, world.bodies, 7)
    return q[:, :world.robot_bodies, :3].mean(axis=1)


def robot_extent(world) -> float:
    """Largest distance [m] from world 0's robot centre to one of its bodies' origins: the robot's size."""
    q = world.state_0.body_q.numpy().reshape(world.num_envs, world.bodies, 7)[0, :world.robot_bodies, :3]
    return float(np.linalg.norm(q - q.mean(axis=0), axis=1).max())


def chase_camera(world, worlds: Sequence[int], **kwargs) -> ChaseCamera:
    """A :class:`ChaseCamera` on a :class:`NewtonWorld` at a distance that fits its robot in the frame."""
    kwargs.setdefault("distance", max(1.2, 4.0 * robot_extent(world)))
    return ChaseCamera(world.model, worlds, **kwargs)
