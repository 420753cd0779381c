"""Run the ``horde`` command line in a subprocess, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_cli(*args: str, cwd: Path, timeout: int = 600, plugins: Path | None = None) -> subprocess.CompletedProcess:
    """``horde <args>`` in ``cwd``, with ``plugins`` (a folder of the user's modules) first on PYTHONPATH; returns
    the finished process with text stdout and stderr."""
    path = ([str(plugins)] if plugins else []) + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **({"PYTHONPATH": os.pathsep.join(path)} if path else {})}
    return subprocess.run([sys.executable, "-m", "horde.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def run_main(*args: str) -> int:
    """``horde <args>`` through the command line's entry point in this process; its exit code. For tests whose
    subject is what the command makes (a run, a bundle), not the process: no process of its own saves the 5-10 s of
    imports one costs (test_cli.py and the plugin tests run real processes)."""
    from horde.cli import main

    return main(list(args))


def plugin_project(tmp_path: Path, module: str, text: str) -> tuple[Path, Path, Path]:
    """A user's plugin folder holding ``<module>.py`` (``text``), a project folder and another folder, all under
    ``tmp_path``: (plugins, project, elsewhere)."""
    plugins, project, elsewhere = tmp_path / "my_pkg", tmp_path / "project", tmp_path / "elsewhere"
    for d in (plugins, project, elsewhere):
        d.mkdir()
    (plugins / f"{module}.py").write_text(text)
    return plugins, project, elsewhere
