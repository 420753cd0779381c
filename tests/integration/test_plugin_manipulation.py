"""A user's manipulation work from a module outside horde (importable by ``PYTHONPATH`` only), each step a
subprocess as a user runs it (issue 71, item 9): an arm entry from the user's own MJCF file path (here horde's arm
file standing in for one), a lift observation term with a parameter, and a new manipulation task written only as
term lists over the lift family (a reward term and the config's lists); it trains on the user's arm with the term's
parameter set on the command line, then exports from another folder: the bundle names the user's arm, its
observation's last column is the term, its parameter stated, and the bundle's self-test passes (export exits 0 only
then)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from clihelp import plugin_project, run_cli

PLUGIN = '''"""A user's arm, observation term and task."""
import warp as wp

from horde.envs import render
from horde.envs.arms import arm_from_mjcf, register_arm, resolve_arm
from horde.envs.lift import LiftConfig, LiftEnv
from horde.envs.lift_config import GRIPPER_MJCF
from horde.envs.lift_obs import LIFT_OBSERVATIONS
from horde.envs.lift_terms import Manip, cube_pos, lift_term
from horde.envs.registry import TaskSpec, register_task

arm7 = resolve_arm("arm7")
register_arm(arm_from_mjcf(GRIPPER_MJCF, name="my-arm", arm_joints=arm7.arm_joints, fingers=arm7.fingers,
                           finger_bodies=("left_finger", "right_finger"), ee="ee",
                           default_joint_pos=arm7.default_joint_pos, gripper_open=0.04, hand_down=arm7.hand_down,
                           scene=arm7.scene))


@LIFT_OBSERVATIONS.term(width=1, unit="m")
def cube_above(x: Manip, i: int, k: int, above: float = 0.0) -> float:
    return cube_pos(x, i)[2] - x.table_z - above


@lift_term
def cube_to_target(x: Manip, i: int, std: float = 0.1) -> float:
    return 1.0 - wp.tanh(wp.length(x.target[i] - cube_pos(x, i)) / std)


config = LiftConfig()
config.reward_scales = {"reaching": 1.0, "grasp": 2.0, "cube_to_target": 4.0, "action_rate": -1.0e-3}
register_task("my-nudge", TaskSpec(env_cls=LiftEnv, config=config, renderer=render.draw_lift,
                                   description="a user's task: bring the cube to the lift's target"))
'''


def test_a_plugin_arm_observation_term_and_task_train_and_export(tmp_path):
    plugins, project, elsewhere = plugin_project(tmp_path, "my_manip", PLUGIN)
    runs = tmp_path / "runs"
    train = run_cli("train", "imports=[my_manip]", "task=my-nudge", "robot=my-arm",
                    "task.extra_observations=[cube_above]", "task.observation_params.cube_above.above=0.02",
                    "task.reward_params.cube_to_target.std=0.05", "num_envs=8", "max_iterations=1",
                    "task.episode_length=40", f"run_root={runs}", cwd=project, plugins=plugins)
    assert train.returncode == 0, train.stderr[-2000:]
    (run,) = (runs / "my-nudge").iterdir()
    saved = yaml.safe_load((run / "config.yaml").read_text())["task"]
    assert saved["robot"] == "my-arm" and saved["observation_params"] == {"cube_above": {"above": 0.02}}
    assert saved["reward_params"] == {"cube_to_target": {"std": 0.05}}

    export = run_cli("export", f"run={run}", cwd=elsewhere, plugins=plugins)
    assert export.returncode == 0, export.stderr[-2000:]
    (bundle,) = (run / "exported").iterdir()
    spec = json.loads(Path(bundle, "policy.json").read_text())
    assert spec["task_config"]["robot"] == "my-arm" and spec["checkpoint"]["imports"] == ["my_manip"]
    last = spec["observation"]["sources"][-1]
    dim = spec["observation"]["dim"]
    assert (last["term"], last["columns"], last["slice"]) == ("cube_above", ["cube_above"], [dim - 1, dim])
    assert spec["task_config"]["observation_params"] == {"cube_above": {"above": 0.02}}
