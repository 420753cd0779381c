"""The lift family's observation is its term list (issue 71, items 1 and 9): the generator writes every column
from ``task.observations`` and ``task.extra_observations``, a user's term with a parameter is one function and one
config line, and noise, scale and clip set on any term are what the step applies and what ``policy.json`` states."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
import warp as wp
from clihelp import run_cli

from horde.deploy.robot.observations import build_observation
from horde.deploy.spec import observation_spec
from horde.envs import get_task, make
from horde.envs.lift_obs import LIFT_OBSERVATIONS
from horde.envs.lift_terms import Manip, cube_pos
from horde.envs.terms import UnknownTermError
from horde.train.config import ConfigError, compose


def cube_above(x: Manip, i: int, k: int, above: float = 0.0) -> float:
    """The cube's height above the table top, less ``above`` [m] (registered by its test)."""
    return cube_pos(x, i)[2] - x.table_z - above


def _env(**fields):
    LIFT_OBSERVATIONS.term(cube_above, unit="m", replace=True)
    return make("lift", num_envs=4, seed=0, config=dataclasses.replace(get_task("lift").config, **fields))


def test_a_users_term_with_a_parameter_is_one_function_and_one_config_line():
    env = _env(extra_observations=["cube_above"], observation_params={"cube_above": {"above": 0.02}})
    assert env.obs_names[-2:] == ("last_action_gripper", "cube_above") and env.obs.shape[1] == len(env.obs_names)
    for _ in range(3):
        env.step(torch.zeros(4, env.num_actions))
    z = env.observation_sources()["object_pos"][:, 2]
    np.testing.assert_allclose(env.obs[:, -1].numpy(), (z - env.manip.table_z - 0.02).numpy(), atol=1e-6)
    spec = observation_spec(env, env.describe(), None)
    raw = {k: v.numpy() for k, v in env.observation_sources().items()}
    np.testing.assert_allclose(build_observation(spec, raw), env.obs.numpy(), rtol=1e-5, atol=2e-5)


def test_noise_scale_and_clip_set_on_a_built_in_term_are_applied_and_stated():
    quiet = _env()
    noisy = _env(observation_params={"joint_vel": {"noise": 0.5}, "ee_pos": {"scale": 10.0, "clip": 2.0}})
    nj = len(quiet.arm.joints)
    vel = slice(nj, 2 * nj)
    raw = noisy.observation_sources()
    diff = noisy.obs[:, vel] - raw["joint_vel"]
    assert diff.abs().max() <= 0.5 + 1e-6 and diff.std() > 0.1
    np.testing.assert_allclose(noisy.obs[:, 2 * nj:2 * nj + 3].numpy(),
                               np.clip(raw["ee_pos"].numpy() * 10.0, -2.0, 2.0), rtol=1e-6)
    blocks = {b["term"]: b for b in observation_spec(noisy, noisy.describe(), None)["sources"]}
    assert blocks["joint_vel"]["training_noise"] == 0.5 and "training_noise" not in blocks["joint_pos"]
    assert blocks["ee_pos"]["scale"] == [10.0] * 3 and blocks["ee_pos"]["clip"] == 2.0
    np.testing.assert_array_equal(quiet.obs[:, vel].numpy(), quiet.observation_sources()["joint_vel"].numpy())


def test_the_observation_list_can_drop_and_reorder_built_in_terms():
    env = _env(observations=["cube_rel_ee", "joint_pos", "last_action"])
    nj = len(env.arm.joints)
    assert env.obs_names[:3] == ("cube_ee_x", "cube_ee_y", "cube_ee_z") and env.obs_dim == 3 + nj + env.num_actions
    raw = env.observation_sources()
    np.testing.assert_allclose(env.obs[:, :3].numpy(), raw["object_rel_ee"].numpy(), atol=1e-6)


@pytest.mark.parametrize("override, message", [
    ("task.extra_observations=[cube_abve]", r"^unknown lift observation term 'cube_abve'; valid terms: joint_pos, "),
    ("task.observation_params.ee_pos.std=1", r"^task.observation_params.ee_pos: the built-in term takes only noise, "
                                             r"scale, clip, history, delay; got std$"),
    ("task.observation_params.joint_pos.history=0", r"^task.observation_params.joint_pos.history: frames kept, an int "
                                                    r">= 1, got 0$"),
    ("task.observation_params.cube_above.history=2.5", r"^task.observation_params.cube_above.history: frames kept, "
                                                       r"an int >= 1, got 2.5$"),
    ("task.observation_params.joint_vel.noise=-1", r"^task.observation_params.joint_vel.noise: must be >= 0"),
    ("task.observation_params.cube_pos.noise=0.1", r"^task.observation_params.cube_pos: not an observation term"),
])
def test_a_mistake_is_one_line(override, message):
    LIFT_OBSERVATIONS.term(cube_above, unit="m", replace=True)
    overrides = ["task=lift", override]
    if "cube_pos" in override:
        overrides.append("task.observations=[joint_pos]")
    if "cube_above" in override:
        overrides.append("task.extra_observations=[cube_above]")
    with pytest.raises(ConfigError, match=message):
        compose(overrides)


def test_a_built_in_name_cannot_be_registered_as_a_users_term():
    @wp.func
    def ee_pos(x: Manip, i: int, k: int) -> float:
        return 0.0

    LIFT_OBSERVATIONS.term(ee_pos, replace=True)
    try:
        with pytest.raises(UnknownTermError, match="built-in term's name"):
            _env()
    finally:
        LIFT_OBSERVATIONS._terms.pop("ee_pos")


PLUGIN = '''"""A user's plugin: an observation term with a parameter for the lift family."""
import warp as wp

from horde.envs.lift_obs import LIFT_OBSERVATIONS
from horde.envs.lift_terms import Manip, cube_pos


@LIFT_OBSERVATIONS.term(width=1, unit="m")
def cube_height(x: Manip, i: int, k: int, above: float = 0.0) -> float:
    """The cube's height above the table top, less ``above`` [m]."""
    return cube_pos(x, i)[2] - x.table_z - above
'''


def test_a_plugin_term_trains_from_the_command_line(tmp_path):
    """The journey from outside the package: a module on PYTHONPATH, ``imports=``, one override for the term and one
    for its parameter, in a subprocess as a user runs it."""
    (tmp_path / "my_lift_obs.py").write_text(PLUGIN)
    out = run_cli("train", "task=lift", "imports=[my_lift_obs]", "task.extra_observations=[cube_height]",
                  "task.observation_params.cube_height.above=0.02", "num_envs=8", "max_iterations=1",
                  f"run_root={tmp_path / 'runs'}", cwd=tmp_path, plugins=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    saved = next(Path(tmp_path / "runs" / "lift").glob("*/config.yaml")).read_text()
    assert "cube_height" in saved and "above: 0.02" in saved
