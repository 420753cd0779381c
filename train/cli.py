"""The ``horde`` command line: train, play, export, verify, demo, tasks.

    horde train task=cartpole num_envs=4096 device=cpu seed=3 max_iterations=100 algo.learning_rate=3e-4
    horde train -m seed=0,1,2 task=cartpole,pendulum   # sweep: one run per combination, in turn
    horde train resume=runs/cartpole/<stamp> max_iterations=200   # continue exactly
    horde train task=cartpole lib=skrl   # another library's PPO on the same env: rsl-rl, skrl, sb3, rl-games
    horde play run=runs/cartpole/<stamp> [episodes=100]
    horde export run=runs/cartpole/<stamp> [precision=fp32|fp16] [name=<bundle name>] [sim2sim_episodes=16]
                                             # precision: default the run's algo.rollout_precision
    horde verify run=runs/cartpole/<stamp>   # re-check every bundle under <run>/exported/ (or run=<bundle dir>)
    horde sim2sim run=runs/quadruped/<stamp> [episodes=16]   # reach, quadruped: the exported policy in plain
                                             # MuJoCo (C engine), observations rebuilt from policy.json
    horde play run=<dir> video=true [envs=4] [steps=N] [render=3d|2d]   # mp4 of the policy, rendered headless
                                             # (Newton tasks ray-traced in 3D; 2d: the side view)
    horde play run=<dir> viewer=rerun|usd|file|viser [envs=4] [steps=N] [out=<file>] [serve=true] [port=P]
                                             # record the rollout for Newton's 3D viewers (.rrd, .usda, .json,
                                             # .viser); serve=true (rerun, viser) also serves it in a browser
    horde plot run=<dir>            # PNG of the training curves from the TensorBoard events
    horde demo                      # train cartpole on CPU, evaluate, export, verify, summarize
    horde tasks                     # registered tasks
    horde compile-cuda [archs=87,90] [tasks=a,b] [spread=true]   # build every task on the CPU, compile its CUDA
                                                  # kernels (no GPU); spread: each module for one arch in turn
    horde actuator-net data=<motor log>.npz out=<net>.onnx [history=0,1,2] [hidden=32,32,32] [epochs=60] [seed=0]
                                    # fit an actuator network to logged joints (pos_error, velocity, torque per
                                    # physics step) for task.actuator_net=<net>.onnx; data=pd-demo: a synthetic
                                    # PD motor with 2 steps of delay

Bad input (unknown task, key, run directory, corrupt checkpoint) ends with one line on stderr and exit code 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

USAGE = __doc__


class UsageError(ValueError):
    """Bad command-line input; one line."""


def _kv(args: list[str], allowed: dict[str, type], command: str) -> dict:
    out = {}
    for a in args:
        key, sep, value = a.partition("=")
        if not sep:
            raise UsageError(f"'{a}' is not key=value; {command} takes: {', '.join(f'{k}=' for k in allowed)}")
        if key not in allowed:
            raise UsageError(f"unknown key '{key}' for {command}; valid keys: {', '.join(allowed)}")
        try:
            out[key] = allowed[key](value)
        except ValueError:
            raise UsageError(f"{key}={value}: expected {allowed[key].__name__}") from None
    return out


def cmd_train(args: list[str]) -> dict:
    from horde.train.config import compose
    from horde.train.ppo import PPOTrainer
    from horde.train.shac import SHACConfig, SHACTrainer

    cfg, task, raw = compose(args)
    if cfg.lib != "horde":
        from horde.train.libs import train_with_library

        return train_with_library(cfg, task, raw)
    from horde.train.config import DistillationConfig
    from horde.train.distill import DistillationTrainer

    from horde.train.session import teardown_distributed

    trainer_cls = (SHACTrainer if isinstance(cfg.algo, SHACConfig)
                   else DistillationTrainer if isinstance(cfg.algo, DistillationConfig) else PPOTrainer)
    summary = trainer_cls(cfg, task, raw).learn()
    teardown_distributed()  # every rank leaves gloo/NCCL together (left to exit, a rank aborted once under load)
    return summary


def cmd_play(args: list[str]) -> dict:
    from horde.deploy import load_policy
    from horde.train.evaluate import evaluate

    kv = _kv(args, {"run": str, "episodes": int, "device": str, "seed": int}, "play")
    if "run" not in kv:
        raise UsageError("play needs run=<run dir or checkpoint>")
    policy, ckpt, cfg, path = load_policy(kv["run"])
    res = evaluate(policy, ckpt["task"], cfg.task, episodes=kv.get("episodes", 100),
                   device=kv.get("device", "cpu"), seed=kv.get("seed", 12345)).summary()
    print(f"{ckpt['task']} {path.name} over {res['episodes']} deterministic episodes: "
          f"return {res['mean_return']:.2f} +- {res['std_return']:.2f}, "
          f"length {res['mean_episode_length']:.1f} +- {res['std_episode_length']:.1f}")
    return res


def cmd_export(args: list[str]) -> dict:
    from horde.deploy import export_run, report_dict

    kv = _kv(args, {"run": str, "precision": str, "name": str, "out": str, "tolerance": float, "episodes": int,
                    "sim2sim_episodes": int}, "export")
    if "run" not in kv:
        raise UsageError("export needs run=<run dir or checkpoint>")
    if kv.get("precision", "fp32") not in ("fp32", "fp16"):
        raise UsageError(f"precision={kv['precision']}: valid values: fp32, fp16")
    report = export_run(kv["run"], out_dir=kv.get("out"), name=kv.get("name"), precision=kv.get("precision"),
                        tolerance=kv.get("tolerance"), episodes=kv.get("episodes", 64),
                        **({"sim2sim_episodes": kv["sim2sim_episodes"]} if "sim2sim_episodes" in kv else {}))
    for line in report.lines:
        print(line)
    files = ", ".join(sorted(p.name for p in Path(report.bundle_dir).iterdir()))
    print(f"wrote {report.bundle_dir}/ ({files}): PASS")
    return report_dict(report)


def cmd_verify(args: list[str]) -> dict:
    from horde.deploy import ExportError, find_bundles, verify_bundle

    kv = _kv(args, {"run": str, "checkpoint": str, "episodes": int, "sim2sim_episodes": int}, "verify")
    if "run" not in kv:
        raise UsageError("verify needs run=<run dir, or one bundle dir under <run>/exported/>")
    results, failed = {}, []
    for bundle in find_bundles(kv["run"]):
        rep = verify_bundle(bundle, episodes=kv.get("episodes", 64), checkpoint=kv.get("checkpoint"),
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
    from horde.deploy import find_bundles
    from horde.deploy.sim2sim import run_sim2sim, summary_line

    kv = _kv(args, {"run": str, "episodes": int, "seed": int}, "sim2sim")
    if "run" not in kv:
        raise UsageError("sim2sim needs run=<run dir, or one bundle dir under <run>/exported/>")
    results = {}
    for bundle in find_bundles(kv["run"]):
        r = run_sim2sim(bundle, episodes=kv.get("episodes", 16), seed=kv.get("seed", 0))
        print(f"{bundle.name}: {summary_line(r)}")
        results[str(bundle)] = r
    return results


def cmd_demo(args: list[str]) -> dict:
    from horde.train.demo import run_demo

    return run_demo(args)


def cmd_video(args: list[str]) -> dict:
    from horde.train.video import record_video

    kv = _kv(args, {"run": str, "video": str, "envs": int, "steps": int, "out": str, "render": str}, "play video")
    if "run" not in kv:
        raise UsageError("video needs run=<run dir or checkpoint>")
    _positive(kv, "envs", "steps")
    try:
        path, frames = record_video(kv["run"], envs=kv.get("envs", 4), steps=kv.get("steps"), out=kv.get("out"),
                                    render=kv.get("render", "3d"))
    except ValueError as exc:
        if "render=" not in str(exc):
            raise
        raise UsageError(str(exc)) from None
    print(f"wrote {path} ({frames} frames)")
    return {"video": str(path), "frames": frames}


def _positive(kv: dict, *keys: str) -> None:
    for key in keys:
        if key in kv and kv[key] < 1:
            raise UsageError(f"{key}={kv[key]}: must be at least 1")


def cmd_viewer(args: list[str]) -> dict:
    from horde.train.viewer import record_3d

    def flag(text: str) -> bool:
        if text.lower() not in ("true", "false"):
            raise ValueError(text)
        return text.lower() == "true"

    kv = _kv(args, {"run": str, "viewer": str, "envs": int, "steps": int, "out": str, "serve": flag, "port": int},
             "play viewer")
    if "run" not in kv:
        raise UsageError("viewer needs run=<run dir or checkpoint>")
    _positive(kv, "envs", "steps")
    if kv.get("serve") and kv["viewer"] not in ("rerun", "viser"):
        raise UsageError(f"serve=true serves rerun or viser, not {kv['viewer']}")
    path, frames = record_3d(kv["run"], viewer=kv["viewer"], envs=kv.get("envs", 4), steps=kv.get("steps"),
                             out=kv.get("out"), serve=kv.get("serve", False), port=kv.get("port", 0),
                             progress=_progress_line("recording"))
    print(f"wrote {path} ({frames} frames)")
    return {"viewer": kv["viewer"], "file": str(path), "frames": frames}


def _progress_line(label: str, unit: str = "frames", every: int = 50):
    """A callback printing ``label k/n unit`` on one refreshed stderr line, for long work."""
    def show(done: int, total: int) -> None:
        if done == total or done % every == 0:
            end = "\n" if done == total else "\r"
            print(f"{label} {done}/{total} {unit}".rstrip(), end=end, file=sys.stderr, flush=True)
    return show


def cmd_plot(args: list[str]) -> dict:
    from horde.train.checkpoint import CheckpointError
    from horde.train.plots import plot_run

    kv = _kv(args, {"run": str, "out": str}, "plot")
    if "run" not in kv:
        raise UsageError("plot needs run=<run dir>")
    if not Path(kv["run"]).is_dir():
        raise CheckpointError(f"{kv['run']}: no such run directory")
    try:
        path, panels = plot_run(kv["run"], kv.get("out"))
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {path} ({', '.join(f'{k}: {len(v)} series' for k, v in panels.items())})")
    return {"plot": str(path)}


def cmd_tasks(args: list[str]) -> dict:
    from horde.envs import TASKS

    for name in sorted(TASKS):
        spec = TASKS[name]
        tag = " [differentiable]" if spec.differentiable else ""
        print(f"{name:<18} {spec.description}{tag}")
    return {}


def cmd_compile_cuda(args: list[str]) -> dict:
    from horde.train.compile_cuda import compile_tasks

    def comma_separated_ints(text: str) -> list[int]:
        return [int(a) for a in text.split(",") if a]

    def comma_separated_names(text: str) -> list[str]:
        return [a for a in text.split(",") if a]

    def flag(text: str) -> bool:
        if text.lower() not in ("true", "false"):
            raise ValueError(text)
        return text.lower() == "true"

    kv = _kv(args, {"archs": comma_separated_ints, "tasks": comma_separated_names, "spread": flag}, "compile-cuda")
    if "tasks" in kv:
        from horde.envs import get_task

        for name in kv["tasks"]:
            get_task(name)  # an unknown name stops here with the valid ones
    return compile_tasks(kv.get("tasks"), tuple(kv.get("archs") or (87, 90)), spread=kv.get("spread", False))


def cmd_actuator_net(args: list[str]) -> dict:
    from horde.train.actuator_fit import (fit_actuator_net, load_motor_log, parse_ints, pd_motor_log, plot_fit,
                                          write_actuator_net)

    def ints(text: str) -> tuple[int, ...]:
        return parse_ints(text)

    kv = _kv(args, {"data": str, "out": str, "history": ints, "hidden": ints, "epochs": int, "seed": int},
             "actuator-net")
    if "data" not in kv or "out" not in kv:
        raise UsageError("actuator-net needs data=<motor log>.npz (or data=pd-demo) and out=<net>.onnx")
    if kv.get("epochs", 1) < 1:
        raise UsageError(f"epochs={kv['epochs']}: at least 1")
    if any(h < 1 for h in kv.get("hidden", (1,))):
        raise UsageError(f"hidden={','.join(map(str, kv['hidden']))}: layer widths >= 1 expected")
    if kv["data"] == "pd-demo":  # a motor whose answer is known: PD, clipped, 2 physics steps of delay
        log = pd_motor_log(stiffness=25.0, damping=0.5, effort_limit=23.7, delay=2, seed=kv.get("seed", 0))
    else:
        log = load_motor_log(kv["data"])
    e, t, j = log.torque.shape
    print(f"motor log: {e} episode(s) x {t} steps x {j} joints", flush=True)
    model, meta, report = fit_actuator_net(log, history=kv.get("history", (0, 1, 2)),
                                           hidden=kv.get("hidden", (32, 32, 32)), epochs=kv.get("epochs", 60),
                                           seed=kv.get("seed", 0), progress=_progress_line("fitting: epoch", "", every=5))
    out = write_actuator_net(model, meta, kv["out"], report=report)
    png = plot_fit(model, meta, log, Path(out).with_suffix(".png"))
    print(f"wrote {out} (history {meta['input_idx']} physics steps; held-out torque error {report.val_rmse:.3f} N m "
          f"= {100 * report.val_rel:.1f}% of its spread) and {png}")
    print(f"use it: horde train task=<legged task> task.actuator_net={out}")
    return {"actuator_net": str(out), "val_rmse": report.val_rmse, "val_rel": report.val_rel}


COMMANDS = {"train": cmd_train, "play": cmd_play, "export": cmd_export, "verify": cmd_verify, "demo": cmd_demo,
            "tasks": cmd_tasks, "plot": cmd_plot, "video": cmd_video, "sim2sim": cmd_sim2sim,
            "compile-cuda": cmd_compile_cuda, "viewer": cmd_viewer, "actuator-net": cmd_actuator_net}


def main(argv: list[str] | None = None) -> int:
    from horde.deploy.onnx_export import ExportError
    from horde.envs.registry import UnknownTaskError
    from horde.envs.robots import RobotNotInstalledError
    from horde.train.checkpoint import CheckpointError
    from horde.train.config import ConfigError
    from horde.deploy.sim2sim import Sim2SimError
    from horde.train.compile_cuda import CudaCompileError
    from horde.train.demo import DemoError
    from horde.train.viewer import ViewerError
    from horde.sim.fields import FieldError
    from horde.train.actuator_fit import MotorLogError

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
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
        if sweep:
            from horde.train.config import expand_sweep

            runs = expand_sweep(rest)
            for k, overrides in enumerate(runs, 1):
                print(f"== sweep run {k}/{len(runs)}: {' '.join(overrides)}", flush=True)
                COMMANDS[command](overrides)
        else:
            COMMANDS[command](rest)
    except (ConfigError, UsageError, CheckpointError, UnknownTaskError, ExportError, DemoError, Sim2SimError,
            RobotNotInstalledError, CudaCompileError, ViewerError, FieldError, MotorLogError) as exc:
        print(f"horde {command}: error: {exc}", file=sys.stderr)
        return 2 if not isinstance(exc, (ExportError, DemoError, CudaCompileError)) else 1
    except KeyboardInterrupt:
        print(f"horde {command}: interrupted", file=sys.stderr)
        return 130
    return 0


def print_json(data: dict) -> None:
    """Pretty JSON on stdout."""
    print(json.dumps(data, indent=2))


if __name__ == "__main__":
    raise SystemExit(main())
