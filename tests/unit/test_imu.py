"""The IMU (Newton's SensorIMU at the robot's IMU site, ``task.imu=true``): its accelerometer against finite
differences of the base velocity, its gyro against the base's angular velocity, and the observations it feeds."""

import copy

import pytest
import torch

from horde.envs import get_task, make

GRAVITY = torch.tensor([0.0, 0.0, -9.81])


def rotate(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate v [N, 3] by unit quaternions q [N, 4] (x, y, z, w)."""
    u, w = q[:, :3], q[:, 3:4]
    return v + 2.0 * torch.cross(u, torch.cross(u, v, dim=1) + w * v, dim=1)


def rotate_inv(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return rotate(torch.cat([-q[:, :3], q[:, 3:]], 1), v)


def imu_env(n: int = 16, **overrides):
    cfg = copy.deepcopy(get_task("quadruped").config)
    cfg.imu = True
    for key, value in overrides.items():
        setattr(cfg, key, value)
    return make("quadruped", num_envs=n, seed=0, config=cfg)


def test_accelerometer_matches_finite_differences_of_the_base_velocity():
    """One physics step per env step (decimation 1): the specific force at the IMU site (quad12: the base origin) is
    (v_site(t + dt) - v_site(t)) / dt - g, in the base frame, up to the integrator's difference from a plain finite
    difference."""
    env = imu_env(decimation=1)
    w, n, dt = env.world, env.num_envs, env.cfg.sim_dt
    com = torch.as_tensor(w.model.body_com.numpy()[w.root_body]).expand(n, 3)

    def site_velocity() -> torch.Tensor:  # v_com + w x (site - com), world frame
        r = -rotate(w.root_pose[:, 3:], com)
        return w.root_vel[:, :3] + torch.cross(w.root_vel[:, 3:], r, dim=1)

    g = torch.Generator().manual_seed(0)
    errors, moving = [], []
    for _ in range(120):
        v0 = site_velocity().clone()
        res = env.step(torch.rand(n, env.num_actions, generator=g) * 2 - 1)
        keep = ~res.dones  # a reset env's velocity jumps
        want = rotate_inv(w.root_pose[:, 3:], (site_velocity() - v0) / dt - GRAVITY)
        errors.append((w.imu_acc - want).norm(dim=1)[keep])
        moving.append((want - rotate_inv(w.root_pose[:, 3:], -GRAVITY.expand(n, 3))).norm(dim=1)[keep])
    errors, moving = torch.cat(errors), torch.cat(moving)
    assert len(errors) > 1000
    assert moving.median() > 0.5, "the base accelerates: the test does not reduce to reading gravity"
    assert errors.median() < 0.2 and errors.quantile(0.95) < 1.0, (errors.median(), errors.quantile(0.95))


def test_gyro_is_the_base_angular_velocity_and_feeds_the_observations():
    """quad12's IMU sits at the base origin, aligned: the gyro equals the base-frame angular velocity, and with
    task.imu the observation's angular velocity is the gyro reading."""
    env = imu_env(n=8)
    w = env.world
    g = torch.Generator().manual_seed(1)
    for _ in range(10):
        res = env.step(torch.rand(8, env.num_actions, generator=g) * 2 - 1)
        ok = ~res.dones
        assert torch.allclose(w.imu_gyro[ok], w.root_vel_base[ok, 3:], atol=1e-4)
        assert torch.allclose(res.obs[ok, 3:6], w.imu_gyro[ok], atol=1e-6), "no noise without randomization"
        assert w.imu_gyro.abs().max() > 0.05, "the base turns under random actions"
    before = env.obs.clone()
    env.reset()
    assert torch.count_nonzero(w.imu_gyro) == 0, "a reset zeroes the reading, as it zeroes the base twist"
    assert not torch.equal(before, env.obs)


@pytest.mark.parametrize("robot,site", [("go2", "imu"), ("g1", "imu_in_pelvis")])
def test_real_robots_use_their_mjcf_imu_site(robot, site):
    from horde.envs.robots import ROBOTS, RobotNotInstalledError

    try:
        ROBOTS[robot].mjcf_path()
    except RobotNotInstalledError:
        pytest.skip(f"{robot}'s model package is not installed (make test installs it)")
    assert ROBOTS[robot].imu_site == site
    task = "g1-velocity" if robot == "g1" else "quadruped"
    cfg = copy.deepcopy(get_task(task).config)
    cfg.imu = True
    if robot != "g1":
        cfg.robot = robot
    env = make(task, num_envs=2, seed=0, config=cfg)
    env.step(torch.zeros(2, env.num_actions))
    assert env.world.imu_rotation == (0.0, 0.0, 0.0, 1.0), "both sites are aligned with the base"
    assert torch.allclose(env.world.imu_gyro, env.world.root_vel_base[:, 3:], atol=1e-4)
    assert env.world.imu_acc.norm(dim=1).min() > 0.1


def test_imu_on_another_solver_is_a_one_line_error(tmp_path):
    from clihelp import run_cli

    proc = run_cli("train", "task=quadruped", "task.imu=true", "task.sim.solver=xpbd", "num_envs=2",
                   "max_iterations=1", f"run_root={tmp_path}", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "task.sim.solver=xpbd: " in lines[0] and "mujoco solver" in lines[0], proc.stderr
