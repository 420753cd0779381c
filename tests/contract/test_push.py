"""A new manipulation task with a free object is one file: ``envs/push.py`` (the cube pushed to a target on the
table) from the lift's scene and actuation, its own reward terms and config, at most 150 lines."""

from pathlib import Path

import numpy as np
import torch

from horde.envs import get_task, make
from horde.envs.push import PUSHED, on_target


def test_the_task_is_one_file_of_at_most_150_lines():
    lines = (Path(__file__).resolve().parents[2] / "envs" / "push.py").read_text().splitlines()
    assert len(lines) <= 150
    assert get_task("push").config.reward_scales.keys() >= {"push_tracking", "push_fine"}


def test_targets_lie_on_the_table_within_reach_of_the_cube_and_its_terms_measure_the_distance():
    env = make("push", num_envs=64, seed=0)
    cube = env.observation_sources()["object_pos"]
    d = env.target - cube
    assert (d[:, :2].abs() <= 0.1 + 1e-6).all() and d[:, :2].abs().max() > 0.05  # drawn in +-10 cm
    scene = env.arm.scene  # the arm entry's (arm7's by default)
    np.testing.assert_allclose(env.target[:, 2].numpy(), scene.table_height + scene.cube_size / 2, atol=1e-6)
    env.step(torch.zeros(64, env.num_actions))
    cube = env.observation_sources()["object_pos"]
    planar = torch.linalg.vector_norm((env.target - cube)[:, :2], dim=-1)
    names = list(env.term_names)
    np.testing.assert_allclose(env.terms[:, names.index("push_tracking")].numpy(),
                               (1 - torch.tanh(planar / 0.1)).numpy(), atol=1e-5)
    np.testing.assert_allclose(env.terms[:, names.index("push_fine")].numpy(),
                               (1 - torch.tanh(planar / 0.02)).numpy(), atol=1e-5)
    assert torch.equal(on_target(env), planar < PUSHED)
