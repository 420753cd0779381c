"""The lift family's ``arm=joint_delta`` (issue 71, item 3): each arm action moves its joint's PD target by up to
``joint_step`` per control step, from the joint's position at the reset, within ``ik_lead`` of the joint and its
limits; ``policy.json``'s command states the law."""

import dataclasses

import pytest
import torch

from horde.envs import get_task, make
from horde.train.config import ConfigError, compose


def _env(**fields):
    cfg = dataclasses.replace(get_task("lift").config, arm="joint_delta", **fields)
    return make("lift", num_envs=2, seed=0, config=cfg)


def test_each_action_moves_its_joints_target_by_the_step():
    env = _env(joint_step=0.04)
    arm = env.arm.arm_joints
    assert env.action_names == (*arm, "gripper") and env.action_scale()[:len(arm)] == [0.04] * len(arm)
    start = env.world.joint_q[:, :len(arm)].clone()
    q_target = torch.as_tensor(env._task_state()["q_target"])
    torch.testing.assert_close(q_target, start)  # a reset starts the targets where the joints are
    a = torch.zeros(2, env.num_actions)
    a[:, 0], a[:, 1], a[:, -1] = 1.0, -0.5, 1.0  # joint 0 up, joint 1 down at half a step, gripper open
    for _ in range(3):
        env.step(a)
    q_target = env._task_state()["q_target"]
    torch.testing.assert_close(q_target[:, 0], start[:, 0] + 3 * 0.04, atol=1e-5, rtol=0)
    torch.testing.assert_close(q_target[:, 1], start[:, 1] - 3 * 0.02, atol=1e-5, rtol=0)
    torch.testing.assert_close(q_target[:, 2:], start[:, 2:], atol=1e-6, rtol=0)
    assert (env.world.joint_q[:, 0] > start[:, 0] + 0.02).all()  # the PD law follows


def test_the_target_stays_within_ik_lead_of_the_joint():
    env = _env(joint_step=0.2, ik_lead=0.1)
    start = env.world.joint_q[:, 0].clone()
    a = torch.zeros(2, env.num_actions)
    a[:, 0] = 1.0
    env.step(a)
    assert (env._task_state()["q_target"][:, 0] <= env.world.joint_q[:, 0] + 0.1 + 1e-6).all()
    assert (env._task_state()["q_target"][:, 0] > start).all()


def test_policy_json_states_the_law_and_a_wrong_mode_is_one_line():
    spec = _env().command_spec()["arm"]
    assert spec["mode"] == "joint_delta" and spec["step_rad"] == 0.05 and "q_target + joint_step" in spec["formula"]
    with pytest.raises(ConfigError, match=r"joint_dlta.*ee_delta, joint, joint_delta"):
        compose(["task=lift", "task.arm=joint_dlta"])
