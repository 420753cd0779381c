"""A user's termination for ``ant`` and a user's event for ``reach``, each from a module outside horde (importable by
``PYTHONPATH`` only): one function and one config line, run as a user runs them (the CLI in a subprocess). The
termination ends the episodes of a one-iteration training run and shows as ``termination/<name>`` in its episode
statistics; the event moves the target in a run of the env from the user's own script and trains through the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from clihelp import run_cli

import yaml

ANT_PLUGIN = '''"""A user's termination: the torso above a configurable height (set low here: every episode ends)."""
import warp as wp
from horde.envs.ant import ANT_TERMINATIONS
from horde.envs.locomotion import Runner


@ANT_TERMINATIONS.term
def torso_high(x: Runner, i: int, height: float = 2.0) -> bool:
    return wp.transform_get_translation(x.body_q[i, x.root])[2] > height
'''

REACH_PLUGIN = '''"""A user's event: the target climbs ``dz`` [m] each time it runs."""
import warp as wp
from horde.envs.reach import REACH_EVENTS, Arm


@REACH_EVENTS.term(mode="interval")
def climb(x: Arm, i: int, s: wp.uint32, dz: float = 0.01) -> wp.uint32:
    x.target[i] = x.target[i] + wp.vec3(0.0, 0.0, dz)
    return s
'''

REACH_SCRIPT = '''import dataclasses, torch
import my_reach_events  # noqa: F401  (registers climb)
from horde.envs import get_task, make

cfg = dataclasses.replace(get_task("reach").config, events={"climb": 0.02}, event_params={"climb": {"dz": 0.05}})
env = make("reach", num_envs=3, seed=0, config=cfg)
env.reset()
before = env.target.clone()
for _ in range(4):
    env.step(torch.zeros(3, 7))
print("DZ", (env.target - before)[:, 2].tolist())
'''


def _env(plugins: Path) -> dict:
    path = [str(plugins), *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": os.pathsep.join(path)}


def _horde(*args: str, plugins: Path, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd, plugins=plugins, timeout=900)


def _last_line(proc: subprocess.CompletedProcess) -> str:
    return [ln for ln in proc.stderr.strip().splitlines() if ln.strip()][-1]


def test_a_plugin_termination_ends_ant_episodes_and_is_counted(tmp_path):
    plugins, project = tmp_path / "plugins", tmp_path / "project"
    plugins.mkdir()
    project.mkdir()
    (plugins / "my_ant_terms.py").write_text(ANT_PLUGIN)
    base = ["train", "imports=[my_ant_terms]", "task=ant", "task.terminations=[torso_low,upside_down,torso_high]"]

    bad = _horde("train", "imports=[my_ant_terms]", "task=ant", "task.terminations=[torso_low,torso_hihg]",
                 plugins=plugins, cwd=project)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert _last_line(bad).endswith("task.terminations: unknown ant termination term torso_hihg; valid terms: "
                                    "torso_low, upside_down, torso_high"), bad.stderr[-2000:]

    ok = _horde(*base, "task.termination_params.torso_high.height=0.05", "num_envs=8", "max_iterations=1",
                f"run_root={tmp_path / 'runs'}", plugins=plugins, cwd=project)
    assert ok.returncode == 0, ok.stderr[-3000:]
    (run,) = (tmp_path / "runs" / "ant").iterdir()
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["task"]["terminations"] == ["torso_low", "upside_down", "torso_high"]
    assert saved["task"]["termination_params"] == {"torso_high": {"height": 0.05}}
    stats = json.loads((run / "train_summary.json").read_text())["last_train_episodes"]
    assert stats["termination/torso_high"] == 1.0, stats  # the torso starts above 5 cm: every episode ends on it
    assert stats["length_mean"] == 1.0 and stats["termination_rate"] == 1.0


def test_a_plugin_event_moves_the_reach_target_and_trains(tmp_path):
    plugins, project = tmp_path / "plugins", tmp_path / "project"
    plugins.mkdir()
    project.mkdir()
    (plugins / "my_reach_events.py").write_text(REACH_PLUGIN)
    (project / "check.py").write_text(REACH_SCRIPT)

    moved = subprocess.run([sys.executable, "check.py"], cwd=project, env=_env(plugins), capture_output=True,
                           text=True, timeout=900)
    assert moved.returncode == 0, moved.stderr[-3000:]
    (line,) = [ln for ln in moved.stdout.splitlines() if ln.startswith("DZ")]
    assert all(abs(v - 0.2) < 1e-5 for v in json.loads(line[3:])), line  # every step (20 ms) for 4 steps: 4 x 5 cm

    bad = _horde("train", "imports=[my_reach_events]", "task=reach", "+task.events.climb=0.02",
                 "task.event_params.climb.dx=0.1", plugins=plugins, cwd=project)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert _last_line(bad).endswith("task.event_params.climb.dx: unknown parameter of reach event term 'climb'; "
                                    "valid parameters: dz (default 0.01)"), bad.stderr[-2000:]

    ok = _horde("train", "imports=[my_reach_events]", "task=reach", "+task.events.climb=0.1",
                "task.event_params.climb.dz=0.001", "num_envs=8", "max_iterations=1",
                f"run_root={tmp_path / 'runs'}", plugins=plugins, cwd=project)
    assert ok.returncode == 0, ok.stderr[-3000:]
    (run,) = (tmp_path / "runs" / "reach").iterdir()
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["task"]["events"] == {"climb": 0.1}
    assert saved["task"]["event_params"] == {"climb": {"dz": 0.001}}
    assert saved["task"]["episode_events"] == ["target"]
