"""A typo in a task, learner or library name is answered from a static table before torch and Warp load (issue 72:
13-49 s on a contended machine before), with the closest valid name; the check runs in-process here (no torch
import is asserted through ``sys.modules`` in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from horde.train.help import precheck_train


@pytest.mark.parametrize("args, line", [
    (["task=quadrupe"], "unknown task 'quadrupe' (did you mean quadruped?); valid tasks: ant, "),
    (["quadruped"], "'quadruped' is not key=value (did you mean task=quadruped?)"),
    (["task=cartpole", "algo=sacc"], "unknown algo 'sacc' (did you mean sac?); valid: ppo, shac, distillation, sac"),
    (["task=cartpole", "lib=skrll"], "unknown lib 'skrll' (did you mean skrl?)"),
    (["task=zzz"], "unknown task 'zzz'; valid tasks:"),
    (["task=quadruped", "robot=go3"], "task.robot=go3: not a valid choice (did you mean go2?); valid choices: quad12, go2, g1"),
    (["task=g1-velocity", "task.comand_vx=[0,1]"], "unknown key 'task.comand_vx' for task g1-velocity (did you mean "
                                                  "task.command_vx?)"),
    (["task.episode_lenght=5"], "unknown key 'task.episode_lenght' for task cartpole (did you mean "
                                "task.episode_length?)"),
])
def test_a_typo_is_named_with_the_closest_valid_name(args, line):
    assert line in precheck_train(args)


@pytest.mark.parametrize("args", [["task=cartpole"], ["task=my_task", "imports=[mine]"], ["task=cartpole,pendulum"],
                                  ["task=g1-velocity", "task.reward_scales.track_lin_vel=3", "robot=g1"],
                                  ["task=quadruped", "task.sim.solver=mujoco-c", "+task.reward_scales.mine=1.0"],
                                  ["resume=runs/x", "max_iterations=5"], ["task=lift", "algo=ppo", "lib=skrl"]])
def test_what_may_be_right_is_left_to_the_config(args):
    assert precheck_train(args) is None


def test_the_answer_comes_before_torch_loads():
    code = ("import sys\nfrom horde.cli import main\nrc = main(['train', 'task=quadrupe'])\n"
            "print(rc, 'torch' in sys.modules, 'warp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["2", "False", "False"], out.stdout + out.stderr
    assert "did you mean quadruped?" in out.stderr
