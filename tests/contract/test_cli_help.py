"""A CLI that explains itself: ``--help`` lists commands, tasks, groups and every config field with its type,
default, choices or bounds and doc; ``horde tasks`` and ``--help`` import nothing heavy; output is line-buffered in a
pipe; ``play video=true`` shows progress and stops after ``episodes=``."""

from __future__ import annotations

import dataclasses
import os
import re
import select
import subprocess
import sys
import textwrap

import pytest

import horde
from horde.envs import TASKS, task_names
from horde.sim.fields import valid_choices
from horde import cli
from horde.train.config import ALGORITHMS, TrainConfig
from horde.train.help import BUILTIN_TASKS, LEARNERS, LIBRARIES, tasks_lines

HEAVY = ("torch", "warp", "newton", "mujoco", "omegaconf", "hydra", "horde.envs", "horde.sim", "horde.train.config")


def _python(code: str, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=120, **kw)


def _help(capsys, *argv: str) -> str:
    capsys.readouterr()
    assert cli.main(list(argv)) == 0, argv
    return capsys.readouterr().out


def test_tasks_and_help_import_nothing_heavy(tmp_path):
    """``horde tasks``, ``--help``, a command's ``--help`` and the run's and a learner's fields answer from static
    tables and the config's dataclasses (under 2 s on 2 cores: ``benchmarks/cli_time.py``; the time itself is a
    benchmark figure, not asserted)."""
    proc = _python("""
        import sys
        from horde.cli import main
        for argv in (["tasks"], ["--help"], ["play", "--help"], ["export", "--help"], ["help", "verify"]):
            assert main(argv) == 0, argv
        print("LOADED", sorted(m for m in sys.modules if m.startswith(%r)))
    """ % (HEAVY,), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "LOADED []", proc.stdout.splitlines()[-1]
    proc = _python("""
        import sys
        from horde.cli import main
        for argv in (["train", "--help"], ["train", "--help", "algo=shac"], ["train", "--help", "algo=ppo"],
                     ["train", "--help", "task=g1-velocity"], ["train", "--help", "task=lift", "algo=ppo"]):
            assert main(argv) == 0, argv
        print("LOADED", sorted(m for m in sys.modules if m.startswith(%r)))
    """ % (("torch", "warp", "newton", "mujoco", "rsl_rl", "horde.envs"),), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "LOADED []", proc.stdout.splitlines()[-1]


def test_static_tables_match_the_registry_and_schema(capsys):
    builtin = {n: (s.description, s.differentiable) for n, s in TASKS.items() if n in horde._BUILTIN_TASKS}
    assert BUILTIN_TASKS == builtin and set(BUILTIN_TASKS) == set(horde._BUILTIN_TASKS)
    assert LEARNERS == tuple(ALGORITHMS)
    assert LIBRARIES == valid_choices(TrainConfig, "lib")
    assert _help(capsys, "tasks").splitlines() == tasks_lines()
    assert set(cli.SUMMARY) == set(cli.COMMANDS)


def test_the_static_task_fields_match_the_registry(monkeypatch):
    """``horde train --help task=<built-in>`` reads the tasks' fields from a static table
    (``train/task_fields.json``); it must be what the registry gives (refresh: ``python -m horde.train.help``), and
    the help printed from it the same as from the live config, tuned values included."""
    import json

    from horde.train import help as help_mod

    assert json.loads(help_mod.TASK_FIELDS.read_text()) == json.loads(json.dumps(help_mod.task_fields_table())), (
        "train/task_fields.json is stale: run python -m horde.train.help")
    stored = {(t, a): help_mod.train_help([f"task={t}", *([f"algo={a}"] if a else [])])
              for t in ("lift", "quadruped", "reach") for a in ("", "shac")}
    monkeypatch.setattr(help_mod, "_stored_task_fields", lambda: {})  # the live config instead
    for (t, a), text in stored.items():
        assert text == help_mod.train_help([f"task={t}", *([f"algo={a}"] if a else [])]), (t, a)


def test_help_lists_commands_tasks_and_groups(capsys):
    out = _help(capsys, "--help")
    for command in cli.COMMANDS:
        assert re.search(rf"^  {re.escape(command)} ", out, re.M), command
    for task in task_names():
        if task in BUILTIN_TASKS:
            assert re.search(rf"^  {re.escape(task)} ", out, re.M), task
    assert "algo=<name>): ppo, shac, distillation" in out and "horde train --help task=<name>" in out
    train = _help(capsys, "train", "--help")
    assert "task=<name>  one of: ant, cartpole" in train and "algo=<name>  one of: ppo, shac, distillation" in train
    assert re.search(r"^  num_envs: int = 1024  \(>= 1\)$", train, re.M)
    assert re.search(r"^  lib: str = horde  \{horde\|rsl-rl\|skrl\|sb3\|rl-games\}$", train, re.M)
    assert re.search(r"^  dist_backend: str \| None = null  \{null\|gloo\|nccl\|mpi\}$", train, re.M)


def test_every_command_help_lists_its_keys(capsys):
    for command, keys in cli.KEYS.items():
        out = _help(capsys, command, "--help")
        for key, spec in keys.items():
            if key not in ("video", "viewer"):
                assert f"  {key}=" in out and spec.doc[:40] in out.replace("\n", " "), (command, key)
    play = _help(capsys, "play", "--help")
    assert "usage: horde play video=true run=<str>" in play and "[episodes=<int>]" in play.split("video=true")[1]
    assert _help(capsys, "help", "export") == _help(capsys, "export", "--help")


def test_a_tasks_fields_show_type_default_choices_bounds_and_doc(capsys):
    out = _help(capsys, "train", "--help", "task=lift")
    assert out == _help(capsys, "train", "task=lift", "--help")  # either order
    lines = out.splitlines()
    k = lines.index("  task.gripper: str = binary  {binary|delta|independent}")
    assert lines[k + 1].startswith("      Gripper action term: `binary` (one, open at >= 0)")
    assert "  task.gripper_open: float | None = null  (> 0)" in lines  # null: the arm entry's
    assert "  task.robot: str = arm7  {arm7|yam|so101}" in lines
    k = lines.index("  task.episode_length: int = 250  (>= 1)")  # the task's default, the base class's bound and doc
    assert lines[k + 1] == "      Control steps before a time-out."
    assert "    task.sim.solver: str = auto  {auto|mujoco|mujoco-c|xpbd|featherstone}" in lines  # nested, indented
    assert "algo.learning_rate" not in out and "algo=<ppo|shac|distillation|sac>" in out
    both = _help(capsys, "train", "--help", "task=quadruped", "algo=ppo")
    assert "  algo.schedule: str = adaptive  {adaptive|fixed}" in both
    assert re.search(r"^  algo\.gamma: float = [0-9.]+.*\(> 0, <= 1\)$", both, re.M)
    assert "[tuned; schema default" in both and "configs/tuned/quadruped_ppo.yaml" in both
    assert "task.robot: str = quad12  {quad12|go2|g1" in both  # choices a registry extends at run time
    shac = _help(capsys, "train", "--help", "algo=shac")
    assert "algo=shac:" in shac and "algo.lr_schedule" in shac and "task." not in shac


def _leaf_paths(obj, prefix):
    for f in dataclasses.fields(obj):
        value, path = getattr(obj, f.name), f"{prefix}.{f.name}"
        yield path, dataclasses.is_dataclass(value)
        if dataclasses.is_dataclass(value):
            yield from _leaf_paths(value, path)


@pytest.mark.parametrize("task", sorted(BUILTIN_TASKS))
def test_every_field_of_every_task_and_learner_is_listed_with_a_doc(task, capsys):
    """Generated from the schema, so complete; and every field has a docstring (STYLE.md rule 3) to show."""
    algo = "distillation" if task == "quadruped-rough-student" else "ppo"
    lines = _help(capsys, "train", "--help", f"task={task}", f"algo={algo}").splitlines()
    heads = {ln.strip().split(":")[0]: k for k, ln in enumerate(lines) if re.match(r"^ +(task|algo)\.[\w.]+: ", ln)}
    for obj, prefix in ((TASKS[task].config, "task"), (ALGORITHMS[algo].config(), "algo")):
        for path, nested in _leaf_paths(obj, prefix):
            assert path in heads, f"{path} missing from horde train --help task={task}"
            k = heads[path]
            depth = len(lines[k]) - len(lines[k].lstrip())
            doc = " -- " in lines[k] if nested else (k + 1 < len(lines) and lines[k + 1].startswith(" " * (depth + 4))
                                                      and lines[k + 1].strip())
            assert doc, f"{path} has no docstring: {lines[k]}"


def test_help_of_an_unknown_task_fails_in_one_line(capsys):
    capsys.readouterr()
    assert cli.main(["train", "--help", "task=lifft"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "unknown task 'lifft'; valid tasks: ant, cartpole" in err[0], err


def test_output_is_line_buffered_through_a_pipe(tmp_path):
    """A command's first line reaches a pipe while the command still runs (a Slurm log, CI), without
    PYTHONUNBUFFERED: the child prints a line, then waits for the test to have read it before it goes on."""
    code = textwrap.dedent("""
        import sys
        from horde import cli

        def long_work(args):
            print("first line")
            sys.stdin.readline()
            print("second line, stdout line-buffered:", sys.stdout.line_buffering)
            return {}

        cli.COMMANDS["tasks"] = long_work
        raise SystemExit(cli.main(["tasks"]))
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "no line arrived through the pipe while the command ran (block-buffered stdout)"
        assert proc.stdout.readline() == "first line\n"
        out, err = proc.communicate("go\n", timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert out == "second line, stdout line-buffered: True\n"


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    """A 1-iteration cartpole run whose episodes time out after 8 steps (made in this process: no import cost)."""
    root = tmp_path_factory.mktemp("short")
    assert cli.main(["train", "task=cartpole", "num_envs=8", "max_iterations=1", "algo.num_steps_per_env=8",
                     "task.episode_length=8", f"run_root={root}"]) == 0
    (run,) = (root / "cartpole").iterdir()
    return run


def test_video_stops_after_episodes(short_run, tmp_path):
    """8-step episodes (time-outs: 8 steps of a barely trained cartpole do not fail it): one frame per control step
    plus the first, until every env has ended ``episodes`` episodes; ``steps`` cuts it shorter."""
    from horde.train.video import record_video

    calls = []
    _, frames = record_video(short_run, envs=2, episodes=2, render="2d", out=tmp_path / "a.mp4",
                             progress=lambda *a: calls.append(a))
    assert frames == 1 + 2 * 8
    assert calls[-1] == (17, 17, 2) and calls[0] == (2, 17, 0) and (9, 17, 1) in calls
    assert record_video(short_run, envs=2, render="2d", out=tmp_path / "b.mp4")[1] == 1 + 8  # default: one
    assert record_video(short_run, envs=2, episodes=3, steps=5, render="2d", out=tmp_path / "c.mp4")[1] == 6


def test_play_video_shows_progress_and_eta(short_run, tmp_path, capsys):
    capsys.readouterr()
    out = tmp_path / "v.mp4"
    assert cli.main(["play", f"run={short_run}", "video=true", "envs=2", "episodes=3", "render=2d",
                     f"out={out}"]) == 0
    captured = capsys.readouterr()
    assert f"wrote {out} (25 frames)" in captured.out
    progress = captured.err.splitlines()  # not a terminal: one line each, no carriage returns
    assert progress[0] == "rendering 2/25 frames, 0/3 episodes ended in every env"  # a rate needs two points
    assert re.fullmatch(r"rendering 9/25 frames, 1/3 episodes ended in every env, ETA \d+s", progress[1])
    assert progress[2].startswith("rendering 17/25 frames, 2/3 episodes ended in every env, ETA")
    assert re.fullmatch(r"rendering 25/25 frames, 3/3 episodes ended in every env, \d+s", progress[-1])
    assert "\r" not in captured.err
    capsys.readouterr()
    assert cli.main(["play", f"run={short_run}", "video=true", "episodes=0"]) == 2
    assert "episodes=0: must be at least 1" in capsys.readouterr().err


def test_list_bounds_are_shown():
    """A list field with bounds on each value and on its length (``bounded_list``'s metadata) shows both."""
    from horde.train.help import field_lines

    @dataclasses.dataclass(kw_only=True)
    class Net:
        widths: list[int] = dataclasses.field(default_factory=lambda: [64, 64],
                                              metadata={"item_bounds": {"ge": 1}, "length": (1, 8)})
        """Hidden layer widths."""

    assert list(field_lines(Net(), "algo.policy")) == ["  algo.policy.widths: list[int] = [64, 64]  (each >= 1, 1 to 8 "
                                                       "values)", "      Hidden layer widths."]


def test_tasks_with_imports_lists_a_plugins_tasks_and_help_shows_its_fields(tmp_path, monkeypatch, capsys):
    (tmp_path / "help_plugin_tasks.py").write_text(textwrap.dedent('''
        import dataclasses
        from horde.envs.cartpole import CartpoleConfig, CartpoleEnv
        from horde.envs.registry import TaskSpec, register_task
        from horde.sim.fields import bounded

        @dataclasses.dataclass(kw_only=True)
        class LongCartpoleConfig(CartpoleConfig):
            """A longer cart track."""

            track: float = bounded(4.8, gt=0)
            """Cart track length [m]."""

        register_task("help-plugin-cartpole", TaskSpec(env_cls=CartpoleEnv, config=LongCartpoleConfig(),
                                                       description="a plugin's cartpole"))
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        out = _help(capsys, "tasks", "imports=[help_plugin_tasks]")
        assert re.search(r"^help-plugin-cartpole +a plugin's cartpole$", out, re.M) and "\ncartpole " in out
        fields = _help(capsys, "train", "--help", "imports=[help_plugin_tasks]", "task=help-plugin-cartpole")
        assert "  task.track: float = 4.8  (> 0)\n      Cart track length [m]." in fields
    finally:
        TASKS.pop("help-plugin-cartpole", None)
        sys.modules.pop("help_plugin_tasks", None)
