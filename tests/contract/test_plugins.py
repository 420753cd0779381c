"""Plugins round-trip (#31): a run trained with a user's module (``imports=[...]``) works with every command that
reads the run, from another working directory, because loading a run's config imports the run's ``imports`` first.

The plugin is a task variant of cartpole (its kernels are cartpole's: nothing new to compile), in a folder outside
horde that only ``PYTHONPATH`` makes importable. Every command runs in a subprocess, as a user would run it, so the
plugin never registers anything in this test process. A plugin robot on the quadruped (``register_robot``) goes the
same way, sim2sim included; it is not run here because one quadruped export takes a minute on a 2-core machine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from clihelp import run_cli

PLUGIN = '''"""A user's plugin: a cartpole with a longer pole, registered as a task of its own."""
from horde.envs.cartpole import CartpoleConfig, CartpoleEnv
from horde.envs.registry import TaskSpec, register_task

register_task("cartpole-longpole", TaskSpec(
    env_cls=CartpoleEnv, config=CartpoleConfig(pole_half_length=0.75),
    description="balance a 1.5 m pole on a cart (a plugin's task)"))
'''


def horde(*args: str, cwd: Path, plugins: Path | None) -> subprocess.CompletedProcess:
    """``horde <args>`` in ``cwd``, with ``plugins`` (a folder) on PYTHONPATH or, when None, without it."""
    return run_cli(*args, cwd=cwd, plugins=plugins, timeout=300)


@pytest.fixture(scope="module")
def plugin_run(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(plugin folder, a working directory that is neither it nor horde's, the 1-iteration run trained with it)."""
    root = tmp_path_factory.mktemp("plugins")
    plugins, project, elsewhere = root / "my_robots_pkg", root / "project", root / "elsewhere"
    for d in (plugins, project, elsewhere):
        d.mkdir()
    (plugins / "my_cartpoles.py").write_text(PLUGIN)
    proc = horde("train", "imports=[my_cartpoles]", "task=cartpole-longpole", "num_envs=8", "max_iterations=1",
                 f"run_root={root / 'runs'}", cwd=project, plugins=plugins)
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = list((root / "runs" / "cartpole-longpole").iterdir())
    assert len(runs) == 1
    return plugins, elsewhere, runs[0]


def test_play_export_verify_and_resume_import_the_runs_plugin(plugin_run):
    plugins, elsewhere, run = plugin_run
    play = horde("play", f"run={run}", "episodes=2", cwd=elsewhere, plugins=plugins)
    assert play.returncode == 0, play.stderr[-2000:]
    assert play.stdout.startswith("cartpole-longpole model_1.pt over 2 deterministic episodes")

    export = horde("export", f"run={run}", cwd=elsewhere, plugins=plugins)
    assert export.returncode == 0, export.stderr[-2000:]
    assert (run / "exported" / "cartpole-longpole_it1_fp32" / "policy.json").is_file()

    verify = horde("verify", f"run={run}", cwd=elsewhere, plugins=plugins)
    assert verify.returncode == 0, verify.stderr[-2000:]

    resume = horde("train", f"resume={run}", "max_iterations=2", cwd=elsewhere, plugins=plugins)
    assert resume.returncode == 0, resume.stderr[-2000:]
    assert (run / "model_2.pt").is_file()


def test_a_missing_plugin_fails_in_one_line_naming_it(plugin_run, capsys, tmp_path):
    """In this process (where the plugin is not importable): the command line's error, as one line."""
    import shutil

    from horde.cli import main

    plugins, elsewhere, run = plugin_run
    if not (run / "exported").is_dir():  # the export test ran in another pytest worker: verify needs a bundle
        run = Path(shutil.copytree(run, tmp_path / run.name))
        assert horde("export", f"run={run}", cwd=elsewhere, plugins=plugins).returncode == 0
    for command in (["play", f"run={run}", "episodes=1"], ["export", f"run={run}"], ["verify", f"run={run}"],
                    ["sim2sim", f"run={run}"], ["train", f"resume={run}", "max_iterations=3"]):
        assert main(command) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"horde {command[0]}: error: imports: cannot import 'my_cartpoles': "), lines[0]
        assert "must be importable" in lines[0] and "PYTHONPATH" in lines[0] and "pip install -e" in lines[0]


def test_a_plugin_whose_own_import_fails_is_named_with_the_cause(tmp_path, monkeypatch):
    """A module that is found but cannot import what it needs: one line naming it and the missing dependency (not
    the advice to put the plugin itself on PYTHONPATH)."""
    from horde.train.config import ConfigError, import_user_modules

    (tmp_path / "my_broken_plugin.py").write_text("import no_such_dependency_of_the_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=r"^imports=\[my_broken_plugin\]: importing my_broken_plugin raised "
                                          r"ModuleNotFoundError: No module named 'no_such_dependency_of_the_plugin' "
                                          r"\(my_broken_plugin.py:1\)$"):
        import_user_modules(["my_broken_plugin"])


@pytest.mark.parametrize("files, expected", [
    ({"my_tasks.py": "import math\nscale = 1.0\nbroken = scale / 0\n"},
     "importing my_tasks raised ZeroDivisionError: float division by zero (my_tasks.py:3)"),
    ({"my_tasks/__init__.py": "from my_tasks import robots\n",
      "my_tasks/robots.py": "def build():\n    raise RuntimeError('no MJCF for\\n  my_quad')\n\nbuild()\n"},
     "importing my_tasks raised RuntimeError: no MJCF for my_quad (my_tasks/robots.py:2)"),
    ({"my_tasks.py": "import sys\nsys.exit('my_tasks: not configured')\n"},
     "importing my_tasks raised SystemExit: my_tasks: not configured (my_tasks.py:2)"),
    ({"my_tasks.py": "x = (\n"}, "importing my_tasks raised SyntaxError: '(' was never closed (my_tasks.py:1)"),
])
def test_a_plugin_that_raises_ends_in_one_line(tmp_path, monkeypatch, capsys, files, expected):
    """Any exception while a plugin imports (not only ImportError): one line naming the module, the exception and
    the plugin's line that raised it, exit code 2, no traceback."""
    from horde.cli import main

    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main(["train", "imports=[json,my_tasks]", "task=cartpole"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("horde train: error: imports=[json,my_tasks]: ") and expected in lines[0], lines[0]
    assert "my_tasks" not in sys.modules and not (tmp_path / "runs").exists()


def test_sim2sim_imports_a_bundles_plugins_from_policy_json_without_its_checkpoint():
    """A bundle names its run's ``imports`` in policy.json, so sim2sim knows a plugin's robot or task even when the
    checkpoint is no longer beside it; a module that is not importable fails in one line."""
    import sys

    from horde.deploy.sim2sim import _import_run_modules
    from horde.train.config import ConfigError

    _import_run_modules({"checkpoint": {"file": "/nonexistent/model_3.pt", "imports": ["json"]}})
    assert "json" in sys.modules
    with pytest.raises(ConfigError, match="imports: cannot import 'horde_no_such_plugin'.*must be importable"):
        _import_run_modules({"checkpoint": {"file": "/nonexistent/model_3.pt", "imports": ["horde_no_such_plugin"]}})
