"""What ``horde --help``, ``horde <command> --help`` and ``horde tasks`` print, generated from the schema.

The fields of a task's or a learner's config are listed from the dataclasses that validate them: type, default
(and the value ``configs/tuned/<task>_<algo>.yaml`` sets instead), choices, bounds or file suffix
(:mod:`horde.sim.fields` metadata) and the field's docstring, read from the source with :mod:`ast` (Python keeps no
attribute docstrings at run time). Importing this module is cheap: the task list for ``horde tasks`` and
``horde --help`` is a static table (``tests/contract/test_cli_help.py`` checks it against the registry), so neither
imports torch, Warp, Newton or a task module; only a task's or learner's field list imports its config.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import textwrap
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["BUILTIN_TASKS", "LEARNERS", "LIBRARIES", "field_doc", "field_lines", "tasks_lines", "train_help"]

BUILTIN_TASKS: dict[str, tuple[str, bool]] = {
    "ant": ("Newton nv_ant: run forward along +x; fails when the torso drops below 0.31 m or flips", False),
    "cartpole": ("balance a pole on a cart from a random near-upright state; fails past 2.4 m or 0.4 rad", False),
    "cartpole-swingup": ("swing the pole up from hanging and balance it; fails only past the cart limit", True),
    "g1-velocity": ("Unitree G1 humanoid (29 DoF, mjlab wheel), flat ground, pushes: track commanded (vx, vy, yaw "
                    "rate) with its 12 leg joints, waist and arms held; gait clock, vx curriculum", False),
    "g1-velocity-rough": ("Unitree G1 on rough heightfield tiles with a terrain curriculum and domain randomization "
                          "(the recipe of g1-velocity)", False),
    "humanoid": ("Newton nv_humanoid: run forward along +x; fails when the torso drops below 0.8 m", False),
    "lift": ("horde's 7-DoF arm with a parallel gripper lifts a cube from a random spot on a table to a random "
             "height", False),
    "pendulum": ("swing a torque-limited pendulum up and hold it (Pendulum-v1 dynamics)", True),
    "push": ("horde's 7-DoF arm pushes a cube across a table to a random target on it", False),
    "quadruped": ("Go2-like quadruped, flat ground: track commanded (vx, vy, yaw rate); fails on base contact", False),
    "quadruped-rough": ("quadruped on rough heightfield tiles (noise, slopes, stairs) with a terrain curriculum and "
                        "domain randomization", False),
    "quadruped-rough-depth": ("quadruped-rough seeing the ground ahead with a 32 x 24 depth camera on its head "
                              "(Newton's SensorCamera, ray-traced in the step) and a privileged critic", False),
    "quadruped-rough-perceptive": ("quadruped-rough with a 17 x 11 height scan of the terrain around the base in its "
                                   "observations and a privileged critic (noise-free observations, randomized "
                                   "physics, foot contact forces)", False),
    "quadruped-rough-student": ("the student of quadruped-rough-perceptive (algo=distillation teacher=<its run>): "
                                "the same scan with 5x the noise; its teacher group holds the observations without "
                                "noise", False),
    "reach": ("horde's 7-DoF arm (assets/arm7.xml): bring the end effector to a random target in a box", True),
}
"""Built-in task -> (description, differentiable), as ``import horde.envs`` registers them; read without importing
the task modules (``tests/contract/test_cli_help.py`` checks it equals the registry)."""

LEARNERS = ("ppo", "shac", "distillation")
"""The ``algo=`` group (``horde.train.config.ALGORITHMS``; checked equal by the test)."""

LIBRARIES = ("horde", "rsl-rl", "skrl", "sb3", "rl-games")
"""The ``lib=`` choices (``TrainConfig.lib``; checked equal by the test)."""

WIDTH = 118


def tasks_lines(tasks: dict[str, tuple[str, bool]] = BUILTIN_TASKS) -> list[str]:
    """``horde tasks``: one line per task, name and description (``[differentiable]`` when it has a gradient
    model)."""
    return [f"{name:<26} {desc}{' [differentiable]' if diff else ''}" for name, (desc, diff) in sorted(tasks.items())]


# --- field docs ----------------------------------------------------------------------------------------------------

@functools.cache
def _class_field_docs(cls: type) -> dict[str, str]:
    """``{field: docstring}`` of the string literals written right after each annotated field of ``cls``'s body."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):  # defined in an interpreter session or a string: no docs to read
        return {}
    node = ast.parse(source).body[0]
    if not isinstance(node, ast.ClassDef):
        return {}
    docs = {}
    for stmt, after in zip(node.body, node.body[1:]):
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
            docs[stmt.target.id] = " ".join(inspect.cleandoc(after.value.value).split())
    return docs


def field_doc(cls: type, name: str) -> str:
    """The docstring of field ``name`` of dataclass ``cls``, one line; a subclass that only changes a default keeps
    its base class's doc."""
    for klass in cls.__mro__:
        doc = _class_field_docs(klass).get(name) if dataclasses.is_dataclass(klass) else None
        if doc:
            return doc
    return ""


# --- field lines ---------------------------------------------------------------------------------------------------

def _value(v: Any) -> str:
    """A value as it is written in an override (``null``, ``true``, ``[1, 2]``)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v if v else "''"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_value(x)}" for k, x in v.items()) + "}"
    return repr(v)


def _type(f: dataclasses.Field) -> str:
    return f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))


def _rule(cls: type, name: str) -> str:
    """Choices ``{a|b}``, bounds ``(> 0, <= 1)`` or a file suffix, from :mod:`horde.sim.fields` metadata."""
    from horde.sim.fields import _SYMBOL, _metadata, valid_choices

    choices = valid_choices(cls, name)
    if choices is not None:
        return "{" + "|".join(_value(c) for c in choices) + "}"
    meta = _metadata(cls, name)
    if meta.get("bounds"):
        return "(" + ", ".join(f"{_SYMBOL[k]} {_value(b)}" for k, b in meta["bounds"].items()) + ")"
    if meta.get("item_bounds") or meta.get("length"):  # a list field: bounds of each value, how many values
        parts = [f"each {_SYMBOL[k]} {_value(b)}" for k, b in (meta.get("item_bounds") or {}).items()]
        lo, hi = meta.get("length") or (0, None)
        parts += [f"{lo} to {hi} values" if hi is not None else f"at least {lo} values"] if lo or hi is not None else []
        return "(" + ", ".join(parts) + ")"
    if "file" in meta:
        return f"(a {meta['file']} file" + (f": {meta['hint']}" if meta.get("hint") else "") + ")"
    return ""


def _wrap(text: str, indent: int, hang: int = 0) -> list[str]:
    """``text`` wrapped at :data:`WIDTH` columns, indented, continuation lines ``hang`` further."""
    return textwrap.wrap(text.replace("``", "`"), WIDTH, initial_indent=" " * indent,
                         subsequent_indent=" " * (indent + hang), break_on_hyphens=False) or []


def field_lines(obj: Any, prefix: str, tuned: dict[str, Any] | None = None, *, skip: tuple[str, ...] = (),
                indent: int = 2) -> Iterator[str]:
    """Lines describing every field of dataclass instance ``obj`` (nested ones indented under theirs): ``path: type
    = default {choices} | (bounds)`` then the doc. ``tuned`` maps dotted paths to the tuned file's values."""
    tuned = tuned or {}
    cls = type(obj)
    for f in dataclasses.fields(obj):
        if f.name in skip:
            continue
        path = f"{prefix}.{f.name}" if prefix else f.name
        value = getattr(obj, f.name)
        doc = field_doc(cls, f.name)
        if dataclasses.is_dataclass(value):
            yield from _wrap(f"{path}: {type(value).__name__}" + (f" -- {doc}" if doc else ""), indent, 4)
            yield from field_lines(value, path, tuned, indent=indent + 2)
            continue
        shown = _value(value)
        if path in tuned:
            new = {**value, **tuned[path]} if isinstance(value, dict) and isinstance(tuned[path], dict) else tuned[path]
            if new != value:
                shown = f"{_value(new)} [tuned; schema default {_value(value)}]"
        rule = _rule(cls, f.name)
        yield from _wrap(f"{path}: {_type(f)} = {shown}" + (f"  {rule}" if rule else ""), indent, 8)
        if doc:
            yield from _wrap(doc, indent + 4)


def tuned_values(task: str, algo: str) -> tuple[dict[str, Any], str | None]:
    """The dotted-path values ``configs/tuned/<task>_<algo>.yaml`` sets (``{}`` and None without one)."""
    import yaml

    path = Path(str(resources.files("horde") / "configs" / "tuned" / f"{task}_{algo}.yaml"))
    if not path.is_file():
        return {}, None
    flat: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict) and (not prefix or not prefix.endswith("reward_scales")):
            for k, v in node.items():
                walk(v, f"{prefix}.{k}" if prefix else str(k))
        else:
            flat[prefix] = node

    walk(yaml.safe_load(path.read_text()) or {}, "")
    return flat, f"configs/tuned/{path.name}"


# --- horde train --help --------------------------------------------------------------------------------------------

def train_help(args: list[str]) -> str:
    """``horde train --help [task=<name>] [algo=<name>] [imports=[...]]``: without a task or learner, the run's
    top-level fields and the groups; with ``task=``, that task's fields (``task.*``); with ``algo=``, the learner's
    (``algo.*``). Values tuned for the pair (algo ppo when not given) are shown beside the schema defaults."""
    from horde.train.config import ALGORITHMS, ConfigError, TrainConfig, import_user_modules

    chosen: dict[str, str] = {}
    for a in args:
        key, sep, value = a.partition("=")
        if not sep or key not in ("task", "algo", "imports"):
            raise ConfigError(f"train --help takes task=<name>, algo=<name> and imports=[...]; got '{a}'")
        chosen[key] = value
    if "imports" in chosen:
        import_user_modules([n.strip() for n in chosen["imports"].strip("[]").split(",") if n.strip()])
    task, algo = chosen.get("task"), chosen.get("algo")
    if algo is not None and algo not in ALGORITHMS:
        raise ConfigError(f"unknown algo '{algo}'; valid choices: {', '.join(ALGORITHMS)}")
    out: list[str] = []
    if task is None and algo is None:
        out += ["usage: horde train [-m] [key=value ...]   (Hydra overrides of the run config; -m: sweep a,b,c)",
                "       horde train --help task=<name> | algo=<name>   (that task's or learner's fields)", "",
                "config groups:",
                *_wrap(f"task=<name>  one of: {', '.join(sorted(BUILTIN_TASKS))} (default cartpole; imports=[module] "
                       "adds your own)", 2, 13),
                f"  algo=<name>  one of: {', '.join(ALGORITHMS)}  (default ppo)",
                "  lib=<name>   horde's learner or another library's PPO (below)", "",
                "run fields (configs/tuned/<task>_<algo>.yaml may set other values; horde train --help task=<name> "
                "shows them):"]
        out += field_lines(TrainConfig(task=None, algo=None), "", skip=("task", "algo"))
        return "\n".join(out)
    tuned, tuned_file = tuned_values(task, algo or "ppo") if task else ({}, None)
    if task is not None:
        from horde.envs import get_task

        spec = get_task(task)
        out += _wrap(f"task={task}: {spec.description}" + (" [differentiable]" if spec.differentiable else ""), 0)
        out += [f"fields of task.* ({type(spec.config).__name__}), set with task.<field>=<value>"
                + (f"; [tuned] values come from {tuned_file}" if tuned_file else "") + ":"]
        out += field_lines(spec.config, "task", tuned)
        run_tuned = {k: v for k, v in tuned.items() if "." not in k}
        if run_tuned:
            out += ["", f"run fields {tuned_file} sets: " + ", ".join(f"{k}={_value(v)}" for k, v in run_tuned.items())]
    if algo is not None:
        cls = ALGORITHMS[algo].config
        doc = " ".join((inspect.getdoc(cls) or "").split())
        out += ([""] if out else []) + _wrap(f"algo={algo}: {doc}", 0)
        out += [f"fields of algo.* ({cls.__name__}), set with algo.<field>=<value>:"]
        out += field_lines(cls(), "algo", tuned)
    elif task is not None:
        out += ["", f"the learner's fields: horde train --help task={task} algo=<{'|'.join(ALGORITHMS)}>"]
    return "\n".join(out)
