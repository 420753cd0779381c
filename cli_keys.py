"""The ``horde`` command line's ``key=value`` arguments: each command's keys (:data:`KEYS`, :class:`Key`: how a value
parses and what it is), their parsing (:func:`_kv`) and the checks the commands share (positive counts, existing
paths, writable outputs, ``pretrained=``, envs that fit the device); every failure one :class:`UsageError` line.
:mod:`horde.cli` re-exports these names; its commands call them through its own namespace."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple


class UsageError(ValueError):
    """Bad command-line input; one line."""


def true_or_false(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError(text)
    return text.lower() == "true"


def ints(text: str) -> tuple[int, ...]:
    """Comma-separated integers: ``0,1,2``."""
    return tuple(int(a) for a in text.split(",") if a.strip())


def names(text: str) -> list[str]:
    """Comma-separated names: ``ant,reach``."""
    return [a for a in text.split(",") if a]


def modules(text: str) -> list[str]:
    """Python modules, ``a,b`` or ``[a,b]`` (as ``horde train imports=`` takes them)."""
    return [a.strip() for a in text.strip().strip("[]").split(",") if a.strip()]


class Key(NamedTuple):
    """One ``key=value`` argument of a command: how its value parses, and what it is (``horde <command> --help``)."""

    parse: Callable[[str], Any]
    doc: str

    @property
    def kind(self) -> str:
        return self.parse.__name__.replace("_", " ")


_RUN = Key(str, "run directory (its latest checkpoint) or a checkpoint file")
_BUNDLES = Key(str, "run directory (every bundle under <run>/exported/) or one bundle directory")
_SIM2SIM = Key(int, "MuJoCo episodes of rung 3, the sim-to-sim check (0 skips it)")
_PRETRAINED = Key(str, "true: the trained policy that ships with horde for task= (horde tasks marks them), or a "
                       "shipped policy's name; in place of run=")
_TASK = Key(str, "the task whose shipped policy pretrained=true takes")
_SHIPPED = {"pretrained": _PRETRAINED, "task": _TASK}
KEYS: dict[str, dict[str, Key]] = {
    "play": {"run": _RUN, "episodes": Key(int, "deterministic episodes to score (default 100)"),
             "device": Key(str, "cpu (default), cuda or cuda:N"),
             "seed": Key(int, "seed of the evaluation envs (default 12345)"),
             "commands": Key(str, "velocity tasks: sets (every command set) or a comma list of full, forward, "
                                  "backward, sideways, turning: one episode per env with the set's command held and "
                                  "the floor's pushes, world-frame progress beside standing still (episodes= envs "
                                  "per set, default 64)"),
             **_SHIPPED},
    "video": {"run": _RUN, "video": Key(str, "true: record an mp4 instead of scoring"),
              "envs": Key(int, "envs rendered side by side (default 4)"),
              "episodes": Key(int, "stop once every env has ended this many episodes (default 1 when steps= is not "
                                   "given)"),
              "steps": Key(int, "stop after this many control steps (with episodes=: whichever comes first)"),
              "out": Key(str, "the mp4 file (default <run>/videos/<task>_<checkpoint>.mp4)"),
              "render": Key(str, "3d (default: Newton tasks ray-traced with a chase camera) or 2d (side view)"),
              "commands": Key(str, "velocity tasks: sets (all) or a comma list of command sets, env k holding a "
                                   "command of set k (cycled), with the floors' pushes"),
              **_SHIPPED},
    "viewer": {"run": _RUN, "viewer": Key(str, "rerun, usd, file or viser: record for Newton's 3D viewer"),
               "envs": Key(int, "envs recorded (default 4)"),
               "steps": Key(int, "control steps (default one episode)"),
               "out": Key(str, "the recording (default <run>/viewer/<task>_<checkpoint>.<ext>)"),
               "serve": Key(true_or_false, "rerun, viser: also serve it in a browser"),
               "port": Key(int, "port to serve on (default: a free one)"), **_SHIPPED},
    "export": {"run": _RUN, "precision": Key(str, "fp32 or fp16 (default the run's algo.rollout_precision)"),
               "name": Key(str, "bundle name (default <task>_it<iteration>_<precision>)"),
               "out": Key(str, "bundle directory (default <run>/exported/<name>)"),
               "tolerance": Key(float, "rung 1's limit (fp32: max abs error; fp16: error relative to action std)"),
               "episodes": Key(int, "closed-loop episodes of rung 2 (default 64, at least 64)"),
               "sim2sim_episodes": _SIM2SIM, **_SHIPPED},
    "verify": {"run": _BUNDLES, "checkpoint": Key(str, "the checkpoint to check against (default the one in "
                                                       "policy.json)"),
               "episodes": Key(int, "closed-loop episodes of rung 2 (default 64)"), "sim2sim_episodes": _SIM2SIM,
               **_SHIPPED},
    "sim2sim": {"run": _BUNDLES, "episodes": Key(int, "MuJoCo episodes (default 16)"),
                "seed": Key(int, "seed (default 0)"),
                "pushes": Key(true_or_false, "false: without the pushes of the run's domain randomization (default "
                                             "true: pushed as in training; the rest of it at its nominal values)"),
                "commands": Key(str, "velocity tasks: sets (every command set) or a comma list of full, forward, "
                                     "backward, sideways, turning: each set's commands held for a whole episode with "
                                     "the floor's pushes, in MuJoCo and in horde (the bundle's checkpoint), and the "
                                     "floor (MuJoCo up >= 90%, linear error within 1.25x horde's) (episodes= per "
                                     "set, default 64)"),
                **_SHIPPED},
    "tasks": {"imports": Key(modules, "your modules to import first ([my_tasks]): the tasks they register are listed "
                                      "too (this imports every task module: seconds, not the static table's ~0.1 s)")},
    "plot": {"run": Key(str, "run directory"), "out": Key(str, "the PNG (default <run>/plots/training.png)")},
    "compile-cuda": {"archs": Key(ints, "CUDA architectures (default 87,90)"),
                     "tasks": Key(names, "tasks to build (default every registered task)"),
                     "spread": Key(true_or_false, "compile each module for one arch in turn"),
                     "origin": Key(str, "only modules with a kernel from this Python package (horde)")},
    "actuator-net": {"data": Key(str, "motor log .npz (pos_error, velocity, torque per physics step) or pd-demo "
                                      "(a synthetic PD motor with 2 steps of delay)"),
                     "out": Key(str, "the network's .onnx file"),
                     "history": Key(ints, "past physics steps the network reads (default 0,1,2)"),
                     "hidden": Key(ints, "hidden layer widths (default 32,32,32)"),
                     "epochs": Key(int, "training epochs (default 60)"), "seed": Key(int, "seed (default 0)")},
}
"""Every command's ``key=value`` arguments (``train`` and ``demo`` take config overrides instead)."""


def _kv(args: list[str], allowed: dict[str, Key], command: str) -> dict:
    out = {}
    for a in args:
        key, sep, value = a.partition("=")
        if not sep:
            raise UsageError(f"'{a}' is not key=value; {command} takes: {', '.join(f'{k}=' for k in allowed)}")
        if key not in allowed:
            raise UsageError(f"unknown key '{key}' for {command}; valid keys: {', '.join(allowed)}")
        try:
            out[key] = allowed[key].parse(value)
        except ValueError:
            raise UsageError(f"{key}={value}: expected {allowed[key].kind}") from None
    return out


def _shipped(kv: dict, command: str) -> None:
    """``pretrained=true task=<name>`` (or ``pretrained=<name>``): ``run=`` becomes the shipped policy's folder
    (:mod:`horde.train.pretrained`), and what the command writes goes under ``runs/pretrained/<name>/`` unless
    ``out=`` says otherwise (the package's folder may not be writable)."""
    if "pretrained" not in kv:
        if "task" in kv:
            raise UsageError(f"task= goes with pretrained=true (the task's shipped policy); for a run of yours give "
                             f"run=<run dir>")
        return
    if kv["pretrained"].lower() == "false":
        kv.pop("pretrained")
        return _shipped(kv, command)
    if "run" in kv:
        raise UsageError("give run=<run dir> or pretrained=..., not both")
    from horde.train.pretrained import PretrainedError, resolve

    try:
        folder = resolve(kv["pretrained"], kv.get("task"))
    except PretrainedError as exc:
        raise UsageError(str(exc)) from None
    kv["run"] = str(folder)
    mine = Path("runs") / "pretrained" / folder.name
    if command == "export" and "out" not in kv:
        kv["out"] = str(mine / "exported" / (kv.get("name") or f"{folder.name}_{kv.get('precision') or 'fp32'}"))
    elif command == "video" and "out" not in kv:
        kv["out"] = str(mine / "videos" / f"{folder.name}.mp4")
    elif command == "viewer" and "out" not in kv:
        from horde.train.viewer import SUFFIX

        kv["out"] = str(mine / "viewer" / f"{folder.name}{SUFFIX.get(kv.get('viewer'), '')}")
    elif command == "sim2sim":
        kv["_reports"] = str(mine / "sim2sim")  # the reports, beside the shipped bundle rather than in it


def _positive(kv: dict, *keys: str) -> None:
    _at_least(kv, 1, *keys)


def _at_least(kv: dict, least: int, *keys: str) -> None:
    for key in keys:
        if key in kv and kv[key] < least:
            raise UsageError(f"{key}={kv[key]}: must be at least {least}")


def _existing(kv: dict, *keys: str) -> None:
    """Each of ``keys`` given names a file or folder that exists."""
    for key in keys:
        if key in kv and not Path(kv[key]).expanduser().exists():
            raise UsageError(f"{key}={kv[key]}: no such file or directory")


def _output_file(kv: dict, key: str) -> None:
    """``key=`` (when given) can be written as a file: not a folder, in a writable folder."""
    from horde.sim.fields import check_output_file

    if key in kv:
        check_output_file(key, kv[key])


def _envs_fit(cfg, task: str, num_envs: int, device: str, what: str) -> None:
    """``num_envs`` envs of ``task`` fit in ``device``'s memory (:mod:`horde.train.memory`), or one line."""
    from horde.train.memory import check_fits, estimate

    check_fits(estimate(cfg, task, num_envs=num_envs, device=device, training=False), what=what)
