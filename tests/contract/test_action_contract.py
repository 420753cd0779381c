"""The action contract: for every registered task, ``policy.json``'s action and robot sections state the actuation
law the world ran (its :class:`horde.sim.actuation.Actuation`), column by column, and every actuated joint is either
an action column or a held joint with its hold. Before 2026-11-26 deploy read them from config key names and the
robot's all-joint tuples: the G1's legs-only bundle listed 29 gains for 12 columns and no held joints, and the Unitree
deploy left the waist and arm motors uncommanded."""

import pytest
import torch

from horde.deploy.spec import action_spec, robot_spec
from horde.envs import make, task_names


@pytest.mark.parametrize("task", task_names())
def test_policy_json_states_the_actuation_that_ran(task):
    env = make(task, num_envs=2)
    layout = env.describe()
    a, r = action_spec(env, layout), robot_spec(env, layout)
    assert len(a["scale"]) == len(a["offset"]) == len(a["names"]) == env.num_actions
    world = getattr(env, "world", None)
    act = getattr(world, "actuation", None)
    if act is None or "command" in a:  # classic control; the lift's IK command and gripper (its command_spec)
        assert r["held_joints"] is None
        return
    joints = list(world.actuated_joints)
    idx = [joints.index(n) for n in a["names"]]
    assert a["scale"] == pytest.approx([act.scale[i] for i in idx])
    assert r["effort_limits"] == pytest.approx([act.effort_limit[i] for i in idx])
    if act.mode == "pd":
        assert a["offset"] == pytest.approx([act.offset[i] for i in idx])
        assert r["pd_gains"]["kp"] == pytest.approx([act.stiffness[i] for i in idx])
        assert r["pd_gains"]["kd"] == pytest.approx([act.damping[i] for i in idx])
    else:
        assert a["offset"] == [0.0] * len(idx) and r["pd_gains"]["kp"] is None
    held = r["held_joints"]
    held_names = list(held["names"]) if held else []
    assert sorted(held_names + list(a["names"])) == sorted(joints), "every actuated joint: a column or held"
    for k, j in enumerate(held_names):
        i = joints.index(j)
        assert (held["target"][k], held["kp"][k], held["kd"][k]) == pytest.approx(
            (act.offset[i], act.stiffness[i], act.damping[i]))


def test_the_g1s_targets_are_what_policy_json_says():
    """Behaviour, not only bookkeeping: after a step, the PD targets the G1's world applied equal policy.json's
    formula for the acting joints (offset + scale * tanh(a), a not clipped: the env squashes what it is given, and
    the exported graph does not clip a tanh task's mean) and the hold for the held ones."""
    import copy
    import dataclasses

    from horde.envs import get_task

    cfg = copy.deepcopy(get_task("g1-velocity").config)
    cfg.randomization = dataclasses.replace(cfg.randomization, enabled=False)  # no action delay
    env = make("g1-velocity", num_envs=2, config=cfg)
    layout = env.describe()
    a, r = action_spec(env, layout), robot_spec(env, layout)
    assert a["squash"] == "tanh" and a["clip"] is None and r["held_joints"] is not None
    actions = torch.rand(2, env.num_actions, generator=torch.Generator().manual_seed(0)) * 3 - 1.5
    env.step(actions)
    targets = env.pd_targets()
    joints = list(env.robot.joints)
    want = torch.tensor(a["offset"]) + torch.tensor(a["scale"]) * torch.tanh(actions)
    got = targets[:, [joints.index(n) for n in a["names"]]]
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    held = targets[:, [joints.index(n) for n in r["held_joints"]["names"]]]
    torch.testing.assert_close(held, torch.tensor(r["held_joints"]["target"]).expand_as(held), rtol=0, atol=1e-6)


def test_a_tanh_tasks_deterministic_policy_is_not_clipped_before_the_squash():
    """The policy trained on tanh(a) of unclipped samples; its deterministic mean is exported unclipped so that the
    robot and the evaluations get tanh(mean), not tanh(clip(mean)) (at most tanh(1) = 76% of each joint's range)."""
    from horde.envs import get_task
    from horde.policies import ActorCriticConfig, build_actor, clips_actions, make_inference_policy

    assert not clips_actions(get_task("g1-velocity").config) and clips_actions(get_task("quadruped").config)
    actor = build_actor(ActorCriticConfig(actor_hidden_dims=[8]), 3, 2)
    with torch.no_grad():
        actor.mlp[-1].bias.fill_(3.0)
    obs = torch.zeros(1, 3)
    assert make_inference_policy(actor)(obs).max() == 1.0
    assert make_inference_policy(actor, clip=False)(obs).min() > 2.0
