"""Heading commands in the velocity family (``task.heading_fraction``, Isaac Lab's and mjlab's): a heading env's
yaw-rate command is ``heading_stiffness`` x its heading error each step, clipped to the yaw range; evaluations that
hold their own commands turn it off."""

import dataclasses
import math

import torch
import warp as wp

from horde.envs import get_task, make
from horde.train.command_sets import eval_config


def _yaw(q: torch.Tensor) -> torch.Tensor:  # xyzw
    x, y, z, w = q.unbind(-1)
    return torch.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def test_a_heading_env_commands_the_yaw_rate_that_turns_it_to_its_heading():
    cfg = dataclasses.replace(get_task("quadruped").config, heading_fraction=1.0, standing_fraction=0.0,
                              heading_stiffness=0.8, command_yaw_rate=[-0.5, 0.5])
    env = make("quadruped", num_envs=16, seed=0, config=cfg)
    for _ in range(3):
        env.step(torch.zeros(16, env.num_actions))
    heading = wp.to_torch(env._cmd.heading)
    assert (heading[:, 1] == 1.0).all() and heading[:, 0].abs().max() <= math.pi
    assert heading[:, 0].std() > 0.5  # drawn per env
    err = heading[:, 0] - _yaw(env.world.root_pose[:, 3:7])
    err = torch.remainder(err + math.pi, 2 * math.pi) - math.pi
    expected = (0.8 * err).clamp(-0.5, 0.5)
    torch.testing.assert_close(env.command[:, 2], expected, atol=1e-4, rtol=0)
    assert "heading" in env._task_state()


def test_no_heading_without_the_fraction_and_none_in_evaluations():
    cfg = get_task("g1-velocity").config
    assert cfg.heading_fraction == 0.0
    assert eval_config(dataclasses.replace(cfg, heading_fraction=0.3), None).heading_fraction == 0.0
    env = make("quadruped", num_envs=4, seed=0)
    assert "heading" not in env._task_state()
