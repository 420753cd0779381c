"""The manipulation family's action terms (#71 item 3): built-in arm and gripper laws are registered terms, and a
user's law is one Warp function and one registration that the lift runs, describes and checks."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import warp as wp

from horde.envs import get_task, make
from horde.envs.lift_actions import (ARM_ACTIONS, GRIPPER_ACTIONS, ArmAction, Command, GripperAction, LiftTask,
                                     ik_scale)
from horde.envs.lift_terms import Manip
from horde.sim.diffik import Chain


@wp.func
def _joint_velocity(t: LiftTask, x: Manip, u: Command, chain: Chain, i: int):
    for k in range(x.arm_dofs):
        qt = wp.clamp(u.q_target[i, k] + 0.02 * wp.clamp(x.actions[i, k], -1.0, 1.0), u.lower[k], u.upper[k])
        u.q_target[i, k] = qt
        u.joint_actions[i, k] = (qt - u.offset[k]) / u.scale[k]


@wp.func
def _always_shut(t: LiftTask, x: Manip, u: Command, i: int):
    u.grip[i] = 0.0
    for f in range(u.joint_actions.shape[1] - x.arm_dofs):
        u.joint_actions[i, x.arm_dofs + f] = -1.0


def test_the_built_in_laws_are_terms():
    assert ARM_ACTIONS.names()[:3] == ("ee_delta", "joint", "joint_delta")
    assert GRIPPER_ACTIONS.names()[:3] == ("binary", "delta", "independent")
    assert [ARM_ACTIONS.get(n).code for n in ("joint", "ee_delta", "joint_delta")] == [0, 1, 2]
    with pytest.raises(ValueError, match="task.arm=ik: not a arm action; valid: ee_delta, joint, joint_delta"):
        ARM_ACTIONS.get("ik")


def test_a_registered_arm_and_gripper_law_run_in_the_lift():
    ARM_ACTIONS.register(ArmAction(name="joint_velocity", func=_joint_velocity, joint_scale=ik_scale,
                                   describe=lambda cfg, arm: {"mode": "joint_velocity", "formula": "q += 0.02 a"}))
    GRIPPER_ACTIONS.register(GripperAction(name="shut", func=_always_shut, formula="command = 0"))
    try:
        cfg = dataclasses.replace(get_task("lift").config, arm="joint_velocity", gripper="shut")
        env = make("lift", num_envs=4, seed=0, config=cfg)
        assert env.action_names[:7] == env.arm.arm_joints and env.action_names[-1] == "gripper"
        assert env.command_spec()["arm"] == {"mode": "joint_velocity", "formula": "q += 0.02 a"}
        assert env.command_spec()["gripper"]["formula"].startswith("command = 0;")
        q0 = env.world.joint_q[:, :7].clone()
        actions = torch.ones(4, env.num_actions)
        env.step(actions)
        q_target = wp.to_torch(env._command.q_target)
        torch.testing.assert_close(q_target, q0 + 0.02, atol=1e-5, rtol=0)  # reset where the arm is, then one step
        assert (env.joint_actions[:, 7:] == -1.0).all()  # the fingers shut whatever the action
    finally:
        ARM_ACTIONS.unregister("joint_velocity")
        GRIPPER_ACTIONS.unregister("shut")
    assert "joint_velocity" not in ARM_ACTIONS.names()
