"""The ``horde`` command line: train, play, export, verify, demo, tasks.

    horde train task=cartpole num_envs=4096 device=cpu seed=3 max_iterations=100 algo.learning_rate=3e-4
    horde train -m seed=0,1,2 task=cartpole,pendulum   # sweep: one run per combination, in turn
    horde train resume=runs/cartpole/<stamp> max_iterations=200   # continue exactly
    horde train task=cartpole lib=skrl   # another library's PPO on the same env: rsl-rl, skrl, sb3, rl-games
    horde play run=runs/cartpole/<stamp> [episodes=100]
    horde export run=runs/cartpole/<stamp> [precision=fp32|fp16] [name=<bundle name>] [sim2sim_episodes=16]
                                             # precision: default the run's algo.rollout_precision
    horde verify run=runs/cartpole/<stamp>   # re-check every bundle under <run>/exported/ (or run=<bundle dir>)
    horde sim2sim run=runs/quadruped/<stamp> [episodes=16] [pushes=true]   # reach, quadruped, g1-velocity: the
                                             # exported policy in plain MuJoCo (C engine), observations rebuilt
                                             # from policy.json; a randomized run at nominal physics, with its pushes
    horde sim2sim run=<dir> commands=sets [episodes=64]   # velocity tasks: each command set held for an episode in
                                             # MuJoCo and in horde, side by side, with the sim-to-sim floor
    horde play run=<dir> video=true [envs=4] [episodes=1] [steps=N] [render=3d|2d] [commands=sets]   # an mp4
                                             # headless until every env has ended `episodes` episodes (or for
                                             # `steps` steps); Newton tasks ray-traced in 3D, 2d: the side view
    horde play run=<dir> viewer=rerun|usd|file|viser [envs=4] [steps=N] [out=<file>] [serve=true] [port=P]
                                             # record the rollout for Newton's 3D viewers (.rrd, .usda, .json,
                                             # .viser); serve=true (rerun, viser) also serves it in a browser
    horde plot run=<dir>            # PNG of the training curves from the TensorBoard events
    horde demo                      # train cartpole on CPU, evaluate, export, verify, summarize
    horde tasks                     # registered tasks
    horde compile-cuda [archs=87,90] [tasks=a,b] [spread=true] [origin=horde]   # build every task on the CPU,
                                                  # compile its CUDA kernels (no GPU); spread: each module for one
                                                  # arch in turn; origin: only modules with a kernel of that package
    horde actuator-net data=<motor log>.npz out=<net>.onnx [history=0,1,2] [hidden=32,32,32] [epochs=60] [seed=0]
                                    # fit an actuator network to logged joints (pos_error, velocity, torque per
                                    # physics step) for task.actuator_net=<net>.onnx; data=pd-demo: a synthetic
                                    # PD motor with 2 steps of delay

Bad input (unknown task, key, run directory, corrupt checkpoint) ends with one line on stderr and exit code 2.
`horde --help` lists the commands and tasks, `horde <command> --help` a command's keys, `horde train --help
task=<name> [algo=<name>]` a task's and a learner's config fields. Output is line-buffered: a pipe or a log file
(Slurm, CI) gets each line when it is printed.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

from horde.cli_keys import (  # noqa: F401  (re-exported: cli's names before the split)
    KEYS, Key, UsageError, _at_least, _envs_fit, _existing, _kv, _output_file, _positive, _shipped, ints, modules,
    names, true_or_false)
from horde.progress import Progress, Stages  # noqa: F401 - Progress/Stages were cli's; kept importable

USAGE = __doc__


SUMMARY = {
    "train": "train a policy: Hydra overrides of the run config (task=, algo=, num_envs=, ...); -m sweeps a,b,c",
    "play": "score a run's deterministic policy; video=true records an mp4, viewer= a 3D viewer's file",
    "export": "export a run's policy to a robot bundle (ONNX, policy.json, runner), verified rung by rung",
    "verify": "re-run the checks on a run's exported bundles",
    "sim2sim": "run an exported policy in plain MuJoCo (C engine), observations rebuilt from policy.json",
    "demo": "train cartpole on the CPU, evaluate, export, verify, summarize (takes horde train overrides)",
    "tasks": "list the registered tasks",
    "plot": "PNG of a run's training curves from its TensorBoard events",
    "compile-cuda": "build every task on the CPU and compile its CUDA kernels with NVRTC (no GPU needed)",
    "actuator-net": "fit an actuator network to a motor log, for task.actuator_net=<net>.onnx",
    "video": "the same as play video=true",
    "viewer": "the same as play viewer=<rerun|usd|file|viser>",
}
"""One line per command, for ``horde --help``."""


def cmd_train(args: list[str]) -> dict:
    from horde.train.help import precheck_train  # a static table: answers a typo before torch and Warp load

    if (line := precheck_train(args)) is not None:
        raise UsageError(line)
    from horde.train.session import run_training

    return run_training(args)


def cmd_play(args: list[str]) -> dict:
    kv = _kv(args, KEYS["play"], "play")
    _shipped(kv, "play")
    if "run" not in kv:
        raise UsageError("play needs run=<run dir or checkpoint>")
    _positive(kv, "episodes")
    sets = _command_sets(kv.get("commands"))
    from horde.train.checkpoint import load_policy  # torch: after the checks above, which answer at once
    from horde.train.evaluate import evaluate

    policy, ckpt, cfg, path = load_policy(kv["run"])
    import torch

    torch.set_num_threads(cfg.torch_threads)  # as training acts (torch's default threads fight Warp's: ~30x slower)
    if sets:
        return _play_command_sets(policy, ckpt, cfg, path, kv, sets)
    _envs_fit(cfg, ckpt["task"], kv.get("episodes", 100), kv.get("device", "cpu"), "episodes")  # one env each
    print(f"play: {kv.get('episodes', 100)} envs of {ckpt['task']}, one deterministic episode each (building the "
          f"envs)", file=sys.stderr, flush=True)
    res = evaluate(policy, ckpt["task"], cfg.task, episodes=kv.get("episodes", 100),
                   device=kv.get("device", "cpu"), seed=kv.get("seed", 12345),
                   progress=Progress("playing", "steps", every=100)).summary()
    print(f"{ckpt['task']} {path.name} over {res['episodes']} deterministic episodes: "
          f"return {res['mean_return']:.2f} +- {res['std_return']:.2f}, "
          f"length {res['mean_episode_length']:.1f} +- {res['std_episode_length']:.1f}")
    return res


def _command_sets(text: str | None) -> tuple[str, ...]:
    """``commands=sets`` or a comma list of command sets (:mod:`horde.train.command_sets`), checked."""
    if not text:
        return ()
    from horde.train.command_sets import COMMAND_SETS

    sets = COMMAND_SETS if text == "sets" else tuple(names(text))
    bad = [n for n in sets if n not in COMMAND_SETS]
    if bad:
        raise UsageError(f"commands={text}: unknown set {bad[0]}; valid: sets (all), {', '.join(COMMAND_SETS)}")
    return sets


def _play_command_sets(policy, ckpt, cfg, path, kv: dict, sets: tuple[str, ...]) -> dict:
    """``horde play commands=...``: each command set with its command held and the floor's pushes, beside
    standing still (:func:`horde.train.command_sets.evaluate_command_sets`)."""
    from horde.train.command_sets import FLOOR_PUSHES, evaluate_command_sets, floor_checks

    if not hasattr(cfg.task, "command_vx"):
        raise UsageError(f"commands= plays velocity tasks (a commanded base velocity); {ckpt['task']} has none")
    envs = kv.get("episodes", 64)
    _envs_fit(cfg, ckpt["task"], envs, kv.get("device", "cpu"), "episodes")
    pushes = FLOOR_PUSHES if cfg.task.randomization.enabled else None
    print(f"play: {ckpt['task']} {path.name} on command sets {', '.join(sets)}: {envs} envs each, one 20 s episode "
          f"with the command held" + (f", pushes of up to {FLOOR_PUSHES['push_velocity']} m/s every "
                                      f"{FLOOR_PUSHES['push_interval']:g} s" if pushes else ""),
          file=sys.stderr, flush=True)
    bars: dict[str, Progress] = {}

    def bar(step: int, steps: int) -> None:  # a bar per set: its ETA from its own steps
        if step == 1:
            bars["now"] = Progress(f"playing set {len(bars)}/{len(sets)}:", "steps", every=100)
        bars["now"](step, steps)

    figs = evaluate_command_sets(policy, ckpt["task"], cfg.task, sets=sets, num_envs=envs,
                                 device=kv.get("device", "cpu"), seed=kv.get("seed", 20_000), pushes=pushes,
                                 progress=print, step_progress=bar)
    checks = floor_checks(figs)
    failed = [k for k, ok in checks.items() if not ok]
    print(f"issue 69's floors on these sets: {'all met' if not failed else 'not met: ' + ', '.join(failed)}")
    return {"sets": figs, "checks": checks}


def cmd_export(args: list[str]) -> dict:
    kv = _kv(args, KEYS["export"], "export")
    _shipped(kv, "export")
    if "run" not in kv:
        raise UsageError("export needs run=<run dir or checkpoint>")
    if kv.get("precision", "fp32") not in ("fp32", "fp16"):
        raise UsageError(f"precision={kv['precision']}: valid values: fp32, fp16")
    if kv.get("episodes", 64) < 64:
        raise UsageError(f"episodes={kv['episodes']}: the closed-loop rung needs at least 64")
    _at_least(kv, 0, "sim2sim_episodes")
    if kv.get("tolerance", 1.0) <= 0:
        raise UsageError(f"tolerance={kv['tolerance']}: must be > 0")
    progress = Stages("export")
    from horde.deploy import export_run, report_dict  # after the checks above, which answer at once

    report = export_run(kv["run"], out_dir=kv.get("out"), name=kv.get("name"), precision=kv.get("precision"),
                        tolerance=kv.get("tolerance"), episodes=kv.get("episodes", 64), progress=progress,
                        **({"sim2sim_episodes": kv["sim2sim_episodes"]} if "sim2sim_episodes" in kv else {}))
    for line in report.lines:
        print(line)
    files = ", ".join(sorted(p.name for p in Path(report.bundle_dir).iterdir()))
    print(f"wrote {report.bundle_dir}/ ({files}): PASS")
    return report_dict(report)


def cmd_verify(args: list[str]) -> dict:
    kv = _kv(args, KEYS["verify"], "verify")
    _shipped(kv, "verify")
    if "run" not in kv:
        raise UsageError("verify needs run=<run dir, or one bundle dir under <run>/exported/>")
    _existing(kv, "run", "checkpoint")
    _positive(kv, "episodes")
    _at_least(kv, 0, "sim2sim_episodes")
    progress = Stages("verify")
    from horde.deploy import ExportError, find_bundles, verify_bundle  # after the checks above, which answer at once

    results, failed = {}, []
    for bundle in find_bundles(kv["run"]):
        rep = verify_bundle(bundle, episodes=kv.get("episodes", 64), checkpoint=kv.get("checkpoint"), progress=progress,
                            **({"sim2sim_episodes": kv["sim2sim_episodes"]} if "sim2sim_episodes" in kv else {}))
        print(f"== {bundle}")
        for line in rep.lines:
            print(f"  {line}")
        results[str(bundle)] = {"passed": rep.passed, "ladder": rep.ladder, "selftest": rep.selftest}
        if not rep.passed:
            failed.append(bundle.name)
    if failed:
        raise ExportError(f"verification failed for {', '.join(failed)}")
    return results


def cmd_sim2sim(args: list[str]) -> dict:
    kv = _kv(args, KEYS["sim2sim"], "sim2sim")
    _shipped(kv, "sim2sim")
    if "run" not in kv:
        raise UsageError("sim2sim needs run=<run dir, or one bundle dir under <run>/exported/>")
    _existing(kv, "run")
    _positive(kv, "episodes")
    progress = Stages("sim2sim")
    from horde.deploy import find_bundles  # after the checks above, which answer at once
    from horde.deploy.sim2sim import run_sim2sim, summary_line

    sets = _command_sets(kv.get("commands"))
    if sets:
        return _sim2sim_command_sets(kv, sets, progress)
    results = {}
    for bundle in find_bundles(kv["run"]):
        r = run_sim2sim(bundle, episodes=kv.get("episodes", 16), seed=kv.get("seed", 0), pushes=kv.get("pushes", True),
                        progress=progress, stage=bundle.name, report_dir=_reports(kv, bundle))
        print(f"{bundle.name}: {summary_line(r)}")
        results[str(bundle)] = r
    return results


def _reports(kv: dict, bundle: Path) -> Path | None:
    """Where sim2sim writes a bundle's reports: ``runs/pretrained/<name>/sim2sim/<bundle>`` for a shipped policy,
    the bundle itself otherwise (None)."""
    return Path(kv["_reports"]) / bundle.name if "_reports" in kv else None


def _sim2sim_command_sets(kv: dict, sets: tuple[str, ...], progress) -> dict:
    """``horde sim2sim commands=...``: each set in horde (the bundle's checkpoint, ``evaluate_command_sets``) and in
    MuJoCo (the bundle's ONNX), side by side, with issue 69's sim-to-sim floor."""
    from horde.deploy import find_bundles
    from horde.deploy.bundle import bundle_checkpoint
    from horde.deploy.sim2sim import run_sim2sim_sets, sets_line
    from horde.train.checkpoint import load_policy
    from horde.train.command_sets import FLOOR_PUSHES, evaluate_command_sets

    envs = kv.get("episodes", 64)
    results = {}
    for bundle in find_bundles(kv["run"]):
        policy, ckpt, cfg, _ = load_policy(bundle_checkpoint(bundle))
        if not hasattr(cfg.task, "command_vx"):
            raise UsageError(f"commands= runs velocity tasks (a commanded base velocity); {ckpt['task']} has none")
        pushes = FLOOR_PUSHES if cfg.task.randomization.enabled else None
        progress(f"{bundle.name}: horde, sets {', '.join(sets)}: {envs} envs each, the command held")
        horde = evaluate_command_sets(policy, ckpt["task"], cfg.task, sets=sets, num_envs=envs, seed=kv.get("seed", 0),
                                      pushes=pushes, progress=lambda line: progress(f"horde, {line}"),
                                      step_progress=lambda k, n: progress("horde", k, n))
        r = run_sim2sim_sets(bundle, sets, episodes=envs, seed=kv.get("seed", 0), horde=horde, progress=progress,
                             report_dir=_reports(kv, bundle))
        for name, figs in r["sets"].items():
            print(f"{bundle.name}: {sets_line(name, figs)}")
        results[str(bundle)] = r
    return results


def cmd_demo(args: list[str]) -> dict:
    from horde.demo import run_demo

    return run_demo(args)


def cmd_video(args: list[str]) -> dict:
    from horde.train.video import record_video

    kv = _kv(args, KEYS["video"], "play video")
    _shipped(kv, "video")
    if "run" not in kv:
        raise UsageError("video needs run=<run dir or checkpoint>")
    _positive(kv, "envs", "steps", "episodes")
    _output_file(kv, "out")
    sets = _command_sets(kv.get("commands"))
    episodes = kv.get("episodes", None if "steps" in kv else 1)
    bar = Progress("rendering", seconds=Stages.SECONDS)  # 3D frames can take a second each: a line every 5 s

    def progress(frames: int, most: int, ended: int) -> None:
        bar(frames, most, f"{ended}/{episodes} episodes ended in every env" if episodes else "")

    try:
        path, frames = record_video(kv["run"], envs=kv.get("envs", len(sets) or 4), episodes=episodes,
                                    steps=kv.get("steps"), out=kv.get("out"), render=kv.get("render", "3d"),
                                    progress=progress, commands=sets)
    except ValueError as exc:
        if "render=" not in str(exc) and "commands=" not in str(exc):
            raise
        raise UsageError(str(exc)) from None
    print(f"wrote {path} ({frames} frames)")
    return {"video": str(path), "frames": frames}


def cmd_viewer(args: list[str]) -> dict:
    from horde.train.viewer import record_3d

    kv = _kv(args, KEYS["viewer"], "play viewer")
    _shipped(kv, "viewer")
    if "run" not in kv:
        raise UsageError("viewer needs run=<run dir or checkpoint>")
    _positive(kv, "envs", "steps")
    _output_file(kv, "out")
    if kv.get("serve") and kv["viewer"] not in ("rerun", "viser"):
        raise UsageError(f"serve=true serves rerun or viser, not {kv['viewer']}")
    path, frames = record_3d(kv["run"], viewer=kv["viewer"], envs=kv.get("envs", 4), steps=kv.get("steps"),
                             out=kv.get("out"), serve=kv.get("serve", False), port=kv.get("port", 0),
                             progress=Progress("recording"))
    print(f"wrote {path} ({frames} frames)")
    return {"viewer": kv["viewer"], "file": str(path), "frames": frames}


def cmd_plot(args: list[str]) -> dict:
    from horde.train.checkpoint import CheckpointError
    from horde.train.plots import plot_run

    kv = _kv(args, KEYS["plot"], "plot")
    if "run" not in kv:
        raise UsageError("plot needs run=<run dir>")
    if not Path(kv["run"]).is_dir():
        raise CheckpointError(f"{kv['run']}: no such run directory")
    _output_file(kv, "out")
    try:
        path, panels = plot_run(kv["run"], kv.get("out"))
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {path} ({', '.join(f'{k}: {len(v)} series' for k, v in panels.items())})")
    return {"plot": str(path)}


def cmd_tasks(args: list[str]) -> dict:
    from horde.train.help import tasks_lines  # the built-in tasks: a static table, no torch, Warp or task module

    kv = _kv(args, KEYS["tasks"], "tasks")
    if "imports" in kv:
        from horde.envs import TASKS
        from horde.train.config import import_user_modules

        import_user_modules(kv["imports"])
        lines = tasks_lines({name: (spec.description, spec.differentiable) for name, spec in TASKS.items()})
    else:
        lines = tasks_lines()
    for line in lines:
        print(line)
    return {}


def cmd_compile_cuda(args: list[str]) -> dict:
    from horde.train.compile_cuda import compile_tasks

    kv = _kv(args, KEYS["compile-cuda"], "compile-cuda")
    if "tasks" in kv:
        from horde.envs import get_task

        for name in kv["tasks"]:
            get_task(name)  # an unknown name stops here with the valid ones
    return compile_tasks(kv.get("tasks"), tuple(kv.get("archs") or (87, 90)), spread=kv.get("spread", False),
                         origin=kv.get("origin"))


def cmd_actuator_net(args: list[str]) -> dict:
    from horde.train.actuator_fit import fit_actuator_net, load_motor_log, pd_motor_log, plot_fit, write_actuator_net

    kv = _kv(args, KEYS["actuator-net"], "actuator-net")
    if "data" not in kv or "out" not in kv:
        raise UsageError("actuator-net needs data=<motor log>.npz (or data=pd-demo) and out=<net>.onnx")
    if kv.get("epochs", 1) < 1:
        raise UsageError(f"epochs={kv['epochs']}: at least 1")
    if not all(1 <= h <= 8192 for h in kv.get("hidden", (1,))) or len(kv.get("hidden", (1,))) > 16:
        raise UsageError(f"hidden={','.join(map(str, kv['hidden']))}: 1 to 16 layer widths, each 1 to 8192 expected")
    _output_file(kv, "out")
    if kv["data"] == "pd-demo":  # a motor whose answer is known: PD, clipped, 2 physics steps of delay
        log = pd_motor_log(stiffness=25.0, damping=0.5, effort_limit=23.7, delay=2, seed=kv.get("seed", 0))
    else:
        log = load_motor_log(kv["data"])
    e, t, j = log.torque.shape
    print(f"motor log: {e} episode(s) x {t} steps x {j} joints", flush=True)
    model, meta, report = fit_actuator_net(log, history=kv.get("history", (0, 1, 2)),
                                           hidden=kv.get("hidden", (32, 32, 32)), epochs=kv.get("epochs", 60),
                                           seed=kv.get("seed", 0), progress=Progress("fitting: epoch", "", every=5))
    out = write_actuator_net(model, meta, kv["out"], report=report)
    png = plot_fit(model, meta, log, Path(out).with_suffix(".png"))
    print(f"wrote {out} (history {meta['input_idx']} physics steps; held-out torque error {report.val_rmse:.3f} N m "
          f"= {100 * report.val_rel:.1f}% of its spread) and {png}")
    print(f"use it: horde train task=<legged task> task.actuator_net={out}")
    return {"actuator_net": str(out), "val_rmse": report.val_rmse, "val_rel": report.val_rel}


COMMANDS = {"train": cmd_train, "play": cmd_play, "export": cmd_export, "verify": cmd_verify, "demo": cmd_demo,
            "tasks": cmd_tasks, "plot": cmd_plot, "video": cmd_video, "sim2sim": cmd_sim2sim,
            "compile-cuda": cmd_compile_cuda, "viewer": cmd_viewer, "actuator-net": cmd_actuator_net}


def _user_errors() -> tuple[tuple[type, ...], tuple[type, ...]]:
    """(errors meant for the user: one line, no traceback; those of them that exit with 1 instead of 2). Imported
    only once an exception is raised, so that ``horde tasks`` and ``--help`` import nothing heavy."""
    from horde.deploy.onnx_export import ExportError
    from horde.deploy.sim2sim import Sim2SimError
    from horde.envs.registry import UnknownTaskError
    from horde.envs.robots import RobotNotInstalledError
    from horde.sim.fields import FieldError
    from horde.train.actuator_fit import MotorLogError
    from horde.train.checkpoint import CheckpointError
    from horde.train.compile_cuda import CudaCompileError
    from horde.train.config import ConfigError
    from horde.demo import DemoError
    from horde.train.session import RunDirError
    from horde.train.sweep import SweepError
    from horde.train.viewer import ViewerError

    return ((ConfigError, UsageError, CheckpointError, UnknownTaskError, ExportError, DemoError, Sim2SimError,
             RobotNotInstalledError, CudaCompileError, ViewerError, FieldError, MotorLogError, RunDirError,
             SweepError), (ExportError, DemoError, CudaCompileError, SweepError))


def _line_buffered() -> None:
    """Each printed line reaches a pipe or a file (a Slurm log, CI) at once, not when a block fills or at exit
    (Python line-buffers stdout only on a terminal; stderr always, since 3.9)."""
    for stream in (sys.stdout, sys.stderr):
        if callable(getattr(stream, "reconfigure", None)) and not getattr(stream, "line_buffering", True):
            stream.reconfigure(line_buffering=True)


def _exit_quickly() -> None:
    """Freeze the garbage collector's objects as the process's last exit handler (registered once, first).

    Python's shutdown runs the cyclic collector over every object still alive, several times over as it clears the
    modules: with torch, Warp, onnxscript and sympy loaded that is 0.6 million objects after a cartpole export and
    1.5 million after a quadruped one: 1.5-4 s between the last line and the end of the process on this busy
    2-core machine (a user's trial on a contended one measured 10-37 s). Frozen objects are skipped by those
    passes. What exit must do still runs: the other exit handlers (they run before this one), stdout and stderr
    flushed, objects freed and files closed by reference counting; only objects caught in reference cycles are
    left unfinalized, which Python does not promise to finalize at exit anyway, and nothing of horde's relies on it
    (writers, files and children are closed or joined where they are made)."""
    global _EXIT_HOOKED
    if not _EXIT_HOOKED:
        import atexit
        import gc

        atexit.register(gc.freeze)
        _EXIT_HOOKED = True


_EXIT_HOOKED = False


def _print(text: str) -> None:
    """Print help; a reader that leaves early (``horde --help | head``) ends it quietly, as for other tools."""
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit flush must not raise again


def overview() -> str:
    """``horde --help``: the commands, the tasks, the config groups and the examples of the module docstring."""
    from horde.train.help import LEARNERS, LIBRARIES, tasks_lines

    examples = __doc__.split("\n\n")[1]
    return "\n".join([
        "horde: train robot policies on Warp and Newton, play, export and verify them.", "",
        "usage: horde <command> [key=value ...]",
        "       horde <command> --help                        that command's keys",
        "       horde train --help task=<name> [algo=<name>]  a task's (and a learner's) config fields", "",
        "commands:", *(f"  {name:<14} {line}" for name, line in SUMMARY.items()), "",
        "tasks (horde train task=<name>; imports=[module] adds your own):",
        *(w for t in tasks_lines() for w in textwrap.wrap(t, 118, initial_indent="  ", subsequent_indent=" " * 29)),
        "",
        f"learners (algo=<name>): {', '.join(LEARNERS)}; libraries (lib=<name>): {', '.join(LIBRARIES)}", "",
        "examples:", examples.rstrip(), "",
        "Bad input ends with one line on stderr and exit code 2."])


def command_help(command: str, args: list[str]) -> str:
    """``horde <command> --help``: its keys with their types and meaning; ``train``: the config's fields
    (:func:`horde.train.help.train_help`)."""
    if command == "train":
        from horde.train.help import train_help

        return train_help(args)
    lines = [f"horde {command}: {SUMMARY[command]}", ""]
    if command == "demo":
        return "\n".join(lines + ["usage: horde demo [horde train overrides]   (task defaults to cartpole; "
                                   "horde train --help lists them)"])
    modes = {"video": " video=true", "viewer": " viewer=<rerun|usd|file|viser>"}
    required = ("data", "out") if command == "actuator-net" else ("run",)
    for name in [command, *(modes if command == "play" else ())]:
        keys = {k: key for k, key in KEYS[name].items() if k not in modes}  # video=, viewer=: in the usage line
        lines.append(f"usage: horde {'play' if name in modes else command}{modes.get(name, '')} "
                     + " ".join(f"{k}=<{key.kind}>" if k in required else f"[{k}=<{key.kind}>]"
                                for k, key in keys.items()))
        lines += [f"  {k + '=':<18} {key.doc}" for k, key in keys.items()]
        lines.append("")
    return "\n".join(lines).rstrip()


def main(argv: list[str] | None = None) -> int:
    _line_buffered()
    _exit_quickly()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] in ("-h", "--help", "help") and len(argv) == 1):
        _print(overview())
        return 0 if argv else 2
    if argv[0] == "help":  # horde help <command> [args]
        argv = [*argv[1:], "--help"]
    command, rest = argv[0], argv[1:]
    wants_help = any(a in ("-h", "--help") for a in rest)
    rest = [a for a in rest if a not in ("-h", "--help")]
    if command == "play" and any(a.partition("=")[0] == "video" and a.partition("=")[2].lower() in ("true", "1", "yes")
                                 for a in rest):
        command = "video"  # `horde play run=<dir> video=true` records instead of scoring
    elif command == "play" and any(a.partition("=")[0] == "viewer" for a in rest):
        command = "viewer"  # `horde play run=<dir> viewer=rerun` records for a 3D viewer
    sweep = command == "train" and any(a in ("-m", "--multirun") for a in rest)
    if sweep:
        rest = [a for a in rest if a not in ("-m", "--multirun")]
    if command not in COMMANDS:
        print(f"horde: unknown command '{command}'; valid commands: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    try:
        if wants_help:
            _print(command_help(command, rest))
        elif sweep and any(a.startswith(("hydra/launcher=", "hydra.launcher.")) for a in rest):
            from horde.train.sweep import launch

            folder = launch(rest)  # Hydra's multirun with that launcher (submitit: Slurm jobs or local processes)
            print(f"== sweep done: Hydra's sweep folder {folder}", flush=True)
        elif sweep:
            from horde.train.config import expand_sweep

            runs = expand_sweep(rest)
            for k, overrides in enumerate(runs, 1):
                print(f"== sweep run {k}/{len(runs)}: {' '.join(overrides)}", flush=True)
                COMMANDS[command](overrides)
        else:
            COMMANDS[command](rest)
    except KeyboardInterrupt as exc:  # Ctrl-C; a training run has printed its checkpoint and resume command
        if not getattr(exc, "reported", False):
            print(f"horde {command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        user, exit_1 = _user_errors() if not isinstance(exc, UsageError) else ((UsageError,), ())
        if not isinstance(exc, user):
            from horde.train.memory import out_of_memory

            if (line := out_of_memory(exc) or write_failure(exc)) is None:
                raise
            print(f"horde {command}: error: {line}", file=sys.stderr)
            return 2
        print(f"horde {command}: error: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, exit_1) else 2
    return 0


WRITE_ERRORS = ("ENOSPC", "EFBIG", "EDQUOT", "EACCES", "EPERM", "EROFS", "ENOENT", "ENOTDIR", "EISDIR")
"""The ``OSError`` kinds a full disk, a file-size limit, a quota, permissions, a read-only file system or a path
that cannot be created raise: one line naming the file and the cause, never a traceback."""


def write_failure(exc: BaseException) -> str | None:
    """The line for a file that could not be written or made (``WRITE_ERRORS``), or None. The file comes from the
    exception or from the one it was raised while handling (``with open(...)`` chains them)."""
    import errno

    for e in (exc, exc.__cause__, exc.__context__):
        if isinstance(e, OSError) and errno.errorcode.get(e.errno) in WRITE_ERRORS:
            where = e.filename or next((c.filename for c in (exc.__cause__, exc.__context__)
                                        if isinstance(c, OSError) and c.filename), None)
            return (f"could not write {where if where else 'a file'}: {e.strerror or e} "
                    f"({errno.errorcode[e.errno]})")
    return None


def print_json(data: dict) -> None:
    """Pretty JSON on stdout."""
    print(json.dumps(data, indent=2))


if __name__ == "__main__":
    raise SystemExit(main())
