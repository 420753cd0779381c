"""Plugins round-trip with a robot and a reward term (#31): a legged robot (``register_robot``) and a velocity reward
term (``VELOCITY_TERMS``) defined in a module outside horde, made importable by ``PYTHONPATH`` only, train with
``imports=[...]`` and then export (its closed-loop and sim2sim rungs play the policy; the sim2sim rung is
``horde sim2sim``'s ``run_sim2sim(bundle)``, whose import of a bundle's plugins test_plugins.py checks) from
another working directory, each a subprocess as a user would run it. `play`, `verify` and `train resume=` load a run
the same way (the run's config imports its ``imports`` before it checks its choices): the cartpole variant in
tests/contract/test_plugins.py runs them; this one builds the quadruped in every process (15-20 s each on 2 cores),
so it keeps the commands whose robot side differs: the MuJoCo twin built from the plugin's robot, and the bundle's
own record of the imports."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from clihelp import plugin_project, run_cli

PLUGIN = '''"""A user's robot and reward term."""
import dataclasses

import warp as wp

from horde.envs.robots import register_robot, resolve_robot
from horde.envs.velocity_terms import VELOCITY_TERMS, Legged

register_robot(dataclasses.replace(resolve_robot("quad12"), name="my-quad", source="a user's plugin"))


@VELOCITY_TERMS.term
def base_height_error(x: Legged, i: int) -> float:
    p = wp.transform_get_translation(x.body_q[i, x.root])
    return (p[2] - 0.3) * (p[2] - 0.3)
'''


def horde(*args: str, cwd: Path, plugins: Path) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd, plugins=plugins)


def test_a_plugin_robot_and_reward_term_train_and_export(tmp_path):
    plugins, project, elsewhere = plugin_project(tmp_path, "my_quad", PLUGIN)
    runs = tmp_path / "runs"
    train = horde("train", "imports=[my_quad]", "task=quadruped", "task.robot=my-quad",
                  "+task.reward_scales.base_height_error=-5.0", "num_envs=8", "max_iterations=1",
                  "task.episode_length=50", f"run_root={runs}", cwd=project, plugins=plugins)
    assert train.returncode == 0, train.stderr[-2000:]
    (run,) = (runs / "quadruped").iterdir()

    export = horde("export", f"run={run}", "sim2sim_episodes=2", cwd=elsewhere, plugins=plugins)
    assert export.returncode == 0, export.stderr[-2000:]
    (bundle,) = (run / "exported").iterdir()
    spec = json.loads((bundle / "policy.json").read_text())
    assert spec["task_config"]["robot"] == "my-quad" and "base_height_error" in spec["task_config"]["reward_scales"]
    assert spec["checkpoint"]["imports"] == ["my_quad"]
