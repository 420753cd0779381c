"""The depth camera (Newton's SensorCamera on a robot body, task.depth_camera): forward depth against a known plane,
its mount, and its place in quadruped-rough-depth's observations and step."""

import copy
import math

import numpy as np
import pytest
import torch

from horde.envs import get_task, make
from horde.sim.depth_camera import DepthCamera, DepthCameraConfig, mount_rotation


def rotate(q, v):
    """Rotate v [..., 3] by the unit quaternion q (x, y, z, w)."""
    q = np.asarray(q, np.float64)
    u, w = q[:3], q[3]
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def quat_mul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


@pytest.fixture(scope="module")
def flat_env():
    """Quadrupeds just reset on flat ground: bases upright at their spawn height."""
    return make("quadruped", num_envs=4, seed=0)


def test_mount_points_the_optical_axis_forward_and_down():
    for pitch in (0.0, 0.6, math.pi / 2):
        q = mount_rotation(pitch)
        assert np.allclose(rotate(q, np.array([0.0, 0.0, -1.0])), [math.cos(pitch), 0, -math.sin(pitch)], atol=1e-6)
        assert rotate(q, np.array([0.0, 1.0, 0.0]))[2] >= -1e-6, "the image's up is not upside down"


def test_looking_straight_down_every_pixel_reads_the_camera_height(flat_env):
    w = flat_env.world
    cam = DepthCamera(w, DepthCameraConfig(enabled=True, width=16, height=12, position=[1.0, 0.0, 0.0],
                                           pitch=math.pi / 2))
    cam.update()
    height = w.root_pose[:, 2].reshape(-1, 1, 1)  # 1 m ahead of the base: the ground only, no leg in view
    assert torch.allclose(cam.depth, height.expand_as(cam.depth), atol=1e-4)


def test_tilted_camera_matches_the_analytic_plane(flat_env):
    """Forward depth of the ground plane per pixel: the ray from the camera at height h along direction d (camera
    frame) meets z = 0 at t = h / -d_world_z, and the forward depth is t * -d_z; rays above the horizon read
    max_depth."""
    w = flat_env.world
    cfg = DepthCameraConfig(enabled=True, width=20, height=16, fov=1.2, position=[0.6, 0.1, 0.0], pitch=0.35,
                            max_depth=4.0)
    cam = DepthCamera(w, cfg)
    cam.update()
    dirs = cam.ray_directions.astype(np.float64)  # [H, W, 3], camera frame
    dirs /= np.linalg.norm(dirs, axis=-1, keepdims=True)
    for i in range(w.num_envs):
        pose = w.root_pose[i].double().numpy()
        cam_q = quat_mul(pose[3:], mount_rotation(cfg.pitch))
        cam_p = pose[:3] + rotate(pose[3:], np.array(cfg.position))
        world_dirs = np.stack([rotate(cam_q, d) for d in dirs.reshape(-1, 3)]).reshape(dirs.shape)
        down = -world_dirs[..., 2]
        t = np.where(down > 1e-9, cam_p[2] / np.maximum(down, 1e-9), np.inf)
        want = np.minimum(t * -dirs[..., 2], cfg.max_depth)
        got = cam.depth[i].double().numpy()
        assert (want < cfg.max_depth).sum() > 100 and (want >= cfg.max_depth).sum() > 10, "ground and sky in view"
        assert np.allclose(got, want, rtol=1e-4, atol=1e-4), np.abs(got - want).max()


def test_depth_task_observes_the_image_after_its_scan_free_proprioception():
    env = make("quadruped-rough-depth", num_envs=4, seed=0)
    cam = env.cfg.depth_camera
    n_img = cam.height * cam.width
    assert env.obs_names[-n_img] == "depth_0_0" and env.obs_names[-1] == f"depth_{cam.height - 1}_{cam.width - 1}"
    assert env.obs_dim == 48 + n_img and not any(name.startswith("height_scan") for name in env.obs_names)
    g = torch.Generator().manual_seed(0)
    for _ in range(5):
        res = env.step(torch.rand(4, env.num_actions, generator=g) * 2 - 1)
        assert torch.equal(res.obs[:, -n_img:].view(4, cam.height, cam.width), env.camera.depth)
    assert env.camera.depth.min() > 0 and env.camera.depth.max() <= cam.max_depth
    assert env.camera.depth.std() > 0.05, "the image shows ground at different distances"
    spec = [i for i in env.obs_images if i["name"] == "depth"]
    assert spec and spec[0]["shape"] == [cam.height, cam.width] and spec[0]["slice"] == [48, 48 + n_img]


def test_reset_envs_see_their_new_state():
    """After an episode ends, the env's image is of the state it restarts in (a second render for reset envs only),
    and the other envs keep the image of the step."""
    cfg = copy.deepcopy(get_task("quadruped-rough-depth").config)
    cfg.randomization.enabled = False  # no depth noise: images can be compared exactly
    env = make("quadruped-rough-depth", num_envs=6, seed=1, config=cfg)
    g = torch.Generator().manual_seed(0)
    for _ in range(200):
        res = env.step(torch.rand(6, env.num_actions, generator=g) * 4 - 2)  # strong actions: falls end episodes
        if res.dones.any() and not res.dones.all():
            break
    assert res.dones.any() and not res.dones.all()
    stepped = env.camera.depth.clone()
    env.camera.update()  # a fresh render of every env from the current state
    assert torch.allclose(stepped, env.camera.depth, atol=1e-6)
