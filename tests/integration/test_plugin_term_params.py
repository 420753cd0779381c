"""A user's reward term with a parameter, from a module outside horde (importable by ``PYTHONPATH`` only): one
function, one config line, its parameter set on the command line; a training run in a subprocess, as a user runs it,
saves the parameter with the run, and a misspelt parameter ends the command in one line before anything is built."""

from __future__ import annotations

import subprocess
from pathlib import Path

from clihelp import run_cli

import yaml

PLUGIN = '''"""A user's term: the end effector's height above a configurable floor."""
import warp as wp
from horde.envs.reach import REACH_TERMS, Arm


@REACH_TERMS.term
def ee_above(x: Arm, i: int, height: float = 0.0) -> float:
    return wp.transform_point(x.body_q[i, x.ee_body], x.ee_offset)[2] - height
'''


def _horde(*args: str, plugins: Path, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd, plugins=plugins)


def test_a_plugin_term_with_a_parameter_trains_and_a_bad_parameter_is_one_line(tmp_path):
    plugins, project = tmp_path / "my_terms_pkg", tmp_path / "project"
    plugins.mkdir()
    project.mkdir()
    (plugins / "my_reach_terms.py").write_text(PLUGIN)
    base = ["train", "imports=[my_reach_terms]", "task=reach", "+task.reward_scales.ee_above=0.5"]

    bad = _horde(*base, "task.reward_params.ee_above.hieght=0.3", plugins=plugins, cwd=project)
    assert bad.returncode != 0
    lines = [ln for ln in bad.stderr.strip().splitlines() if ln.strip()]
    assert lines[-1].endswith("task.reward_params.ee_above.hieght: unknown parameter of reach term 'ee_above'; "
                              "valid parameters: height (default 0.0)"), bad.stderr[-2000:]
    assert "Traceback" not in bad.stderr

    ok = _horde(*base, "task.reward_params.ee_above.height=0.3", "num_envs=8", "max_iterations=1",
                f"run_root={tmp_path / 'runs'}", plugins=plugins, cwd=project)
    assert ok.returncode == 0, ok.stderr[-2000:]
    (run,) = (tmp_path / "runs" / "reach").iterdir()
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["task"]["reward_params"] == {"ee_above": {"height": 0.3}}
    assert saved["task"]["reward_scales"]["ee_above"] == 0.5
