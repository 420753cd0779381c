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

__all__ = ["BUILTIN_TASKS", "LEARNERS", "LIBRARIES", "TASK_FIELDS", "field_doc", "field_lines", "field_records",
           "precheck_train", "record_lines", "task_fields_table", "tasks_lines", "train_help"]

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
    "place": ("horde's 7-DoF arm (robot=: any arm entry) picks a cube and sets it down on a pad drawn on the table, "
              "released and resting", False),
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

LEARNERS = ("ppo", "shac", "distillation", "sac")
"""The ``algo=`` group (``horde.train.config.ALGORITHMS``; checked equal by the test)."""

LIBRARIES = ("horde", "rsl-rl", "skrl", "sb3", "rl-games")
"""The ``lib=`` choices (``TrainConfig.lib``; checked equal by the test)."""

WIDTH = 118


def _closest(name: str, valid) -> str:
    import difflib

    near = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
    return f" (did you mean {near[0]}?)" if near else ""


def precheck_train(args: list[str]) -> str | None:
    """The mistakes in ``horde train`` arguments that a static table answers, before torch and Warp load (they
    take 5-50 s): a bare word, an unknown task, learner or library, with the closest valid name. None when these
    look right (the config's own checks then run as before). ``imports=`` may register tasks: no task check then;
    ``resume=`` takes the run's task."""
    keys = {a.partition("=")[0].lstrip("+~") for a in args if "=" in a}
    for a in args:
        if "=" not in a and not a.startswith("-"):
            hint = (f" (did you mean task={a}?)" if a in BUILTIN_TASKS
                    else f" (did you mean algo={a}?)" if a in LEARNERS else "")
            return f"'{a}' is not key=value{hint}; e.g. horde train task=cartpole max_iterations=100"
    values = {a.partition("=")[0]: a.partition("=")[2] for a in args if "=" in a}
    if "task" in values and "imports" not in keys and "," not in values["task"]:
        task = values["task"]
        if task not in BUILTIN_TASKS:
            return (f"unknown task '{task}'{_closest(task, BUILTIN_TASKS)}; valid tasks: {', '.join(BUILTIN_TASKS)} "
                    f"(imports=[module] adds your own)")
    for key, valid in (("algo", LEARNERS), ("lib", LIBRARIES)):
        value = values.get(key)
        if value is not None and "," not in value and value not in valid:
            return f"unknown {key} '{value}'{_closest(value, valid)}; valid: {', '.join(valid)}"
    if "imports" in keys or "resume" in keys or "," in values.get("task", ""):
        return None
    return _precheck_task_keys(values.get("task", "cartpole"), values)


def _precheck_task_keys(task: str, values: dict[str, str]) -> str | None:
    """``task.<field>`` keys and a robot name of a built-in task, from the stored field table (no task import)."""
    stored = _stored_task_fields().get(task)
    if stored is None:
        return None
    records = _flat_records(stored[1])
    for key, value in values.items():
        if key == "robot":
            key = "task.robot"
        if not key.startswith("task."):
            continue
        if key not in records and not any(key.startswith(p + ".") and records[p]["type"].startswith("dict")
                                          for p in records):
            near = _closest(key, records)
            parts = key.split(".")
            params = f"task.{parts[1].removesuffix('s')}_params"  # task.rewards.<term>.<param>: a term's parameter
            if len(parts) >= 4 and params in records:
                near = f" (a term's parameter: {params}.{'.'.join(parts[2:])})"
            return f"unknown key '{key}' for task {task}{near}; `horde train --help task={task}` lists its fields"
        rule = records.get(key, {}).get("rule", "")
        if rule.startswith("{") and "," not in value:  # a choice: {a|b|c}
            valid = rule.strip("{}").split("|")
            if value not in valid:
                return f"{key}={value}: not a valid choice{_closest(value, valid)}; valid choices: {', '.join(valid)}"
    return None


def _flat_records(records: list[dict]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for r in records:
        out.update(_flat_records(r["fields"]) if "fields" in r else {r["path"]: r})
    return out


def tasks_lines(tasks: dict[str, tuple[str, bool]] = BUILTIN_TASKS) -> list[str]:
    """``horde tasks``: one line per task, name and description (``[differentiable]`` when it has a gradient
    model, ``[pretrained]`` when a trained policy ships for it: ``horde play task=<name> pretrained=true``)."""
    from horde.train.pretrained import tasks_with_pretrained  # json files only: no torch

    shipped = tasks_with_pretrained()
    return [f"{name:<26} {desc}{' [differentiable]' if diff else ''}{' [pretrained]' if name in shipped else ''}"
            for name, (desc, diff) in sorted(tasks.items())]


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
        length = meta.get("length") or (0, None)
        lo, hi = (0, None) if length == "default" else length  # same_length: as many as the default shows
        parts += [f"{lo} to {hi} values" if hi is not None else f"at least {lo} values"] if lo or hi is not None else []
        return "(" + ", ".join(parts) + ")"
    if "file" in meta:
        return f"(a {meta['file']} file" + (f": {meta['hint']}" if meta.get("hint") else "") + ")"
    return ""


def _wrap(text: str, indent: int, hang: int = 0) -> list[str]:
    """``text`` wrapped at :data:`WIDTH` columns, indented, continuation lines ``hang`` further."""
    return textwrap.wrap(text.replace("``", "`"), WIDTH, initial_indent=" " * indent,
                         subsequent_indent=" " * (indent + hang), break_on_hyphens=False) or []


def field_records(obj: Any, prefix: str, *, skip: tuple[str, ...] = ()) -> list[dict]:
    """Every field of dataclass instance ``obj`` as plain data (JSON-able: what :func:`field_lines` prints, and what
    the static table of the built-in tasks' fields holds): a nested dataclass as a group of its own records."""
    cls, out = type(obj), []
    for f in dataclasses.fields(obj):
        if f.name in skip:
            continue
        path = f"{prefix}.{f.name}" if prefix else f.name
        value = getattr(obj, f.name)
        doc = field_doc(cls, f.name)
        if dataclasses.is_dataclass(value):
            out.append({"path": path, "type": type(value).__name__, "doc": doc,
                        "fields": field_records(value, path)})
        else:
            out.append({"path": path, "type": _type(f), "value": _encode(value), "rule": _rule(cls, f.name),
                        "doc": doc})
    return out


def _encode(v: Any) -> Any:
    """A default as JSON (a tuple tagged, so that it compares as the schema's tuple again)."""
    if isinstance(v, tuple):
        return {"__tuple__": [_encode(x) for x in v]}
    if isinstance(v, list):
        return [_encode(x) for x in v]
    if isinstance(v, dict):
        return {k: _encode(x) for k, x in v.items()}
    return v


def _decode(v: Any) -> Any:
    if isinstance(v, dict):
        return tuple(_decode(x) for x in v["__tuple__"]) if set(v) == {"__tuple__"} else {
            k: _decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_decode(x) for x in v]
    return v


def record_lines(records: list[dict], tuned: dict[str, Any] | None = None, *, indent: int = 2) -> Iterator[str]:
    """Lines describing ``records`` (:func:`field_records`; nested ones indented under theirs): ``path: type =
    default {choices} | (bounds)`` then the doc. ``tuned`` maps dotted paths to the tuned file's values."""
    tuned = tuned or {}
    for r in records:
        path, doc = r["path"], r["doc"]
        if "fields" in r:
            yield from _wrap(f"{path}: {r['type']}" + (f" -- {doc}" if doc else ""), indent, 4)
            yield from record_lines(r["fields"], tuned, indent=indent + 2)
            continue
        value = _decode(r["value"])
        shown = _value(value)
        if path in tuned:
            new = {**value, **tuned[path]} if isinstance(value, dict) and isinstance(tuned[path], dict) else tuned[path]
            if new != value:
                shown = f"{_value(new)} [tuned; schema default {_value(value)}]"
        yield from _wrap(f"{path}: {r['type']} = {shown}" + (f"  {r['rule']}" if r["rule"] else ""), indent, 8)
        if doc:
            yield from _wrap(doc, indent + 4)


def field_lines(obj: Any, prefix: str, tuned: dict[str, Any] | None = None, *, skip: tuple[str, ...] = (),
                indent: int = 2) -> Iterator[str]:
    """:func:`record_lines` of dataclass instance ``obj``'s fields."""
    return record_lines(field_records(obj, prefix, skip=skip), tuned, indent=indent)


# --- the built-in tasks' fields, read without importing the tasks --------------------------------------------------

TASK_FIELDS = Path(__file__).with_name("task_fields.json")
"""The built-in tasks' fields, written by ``python -m horde.train.help`` from the registry: each config class's
:func:`field_records` (its defaults) and, per task, its class and the values it sets otherwise. ``horde train --help
task=<built-in>`` reads it instead of importing the task modules (~10 s); ``tests/contract/test_cli_help.py`` checks
it equals what the registry gives."""


def _flat_values(records: list[dict]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r in records:
        out.update(_flat_values(r["fields"]) if "fields" in r else {r["path"]: r["value"]})
    return out


def _with_values(records: list[dict], values: dict[str, Any]) -> list[dict]:
    return [{**r, "fields": _with_values(r["fields"], values)} if "fields" in r
            else ({**r, "value": values[r["path"]]} if r["path"] in values else r) for r in records]


def task_fields_table() -> dict[str, dict]:
    """What :data:`TASK_FIELDS` should hold (imports every built-in task)."""
    from horde.envs import get_task

    classes: dict[str, list[dict]] = {}
    tasks: dict[str, dict] = {}
    for name in sorted(BUILTIN_TASKS):
        config = get_task(name).config
        cls = type(config).__name__
        base = classes.setdefault(cls, field_records(type(config)(), "task"))
        default = _flat_values(base)
        values = {k: v for k, v in _flat_values(field_records(config, "task")).items() if default.get(k) != v}
        tasks[name] = {"config": cls, "values": values}
    return {"classes": classes, "tasks": tasks}


@functools.cache
def _stored_task_fields() -> dict[str, tuple[str, list[dict]]]:
    """Built-in task -> (config class, field records), from :data:`TASK_FIELDS` ({} when it cannot be read)."""
    import json

    try:
        table = json.loads(TASK_FIELDS.read_text())
        return {name: (t["config"], _with_values(table["classes"][t["config"]], t["values"]))
                for name, t in table["tasks"].items()}
    except (OSError, ValueError, KeyError):
        return {}


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
        stored = _stored_task_fields().get(task) if "imports" not in chosen else None
        if stored is not None:  # a built-in task: its fields from the static table, no task module imported
            (description, differentiable), (config, records) = BUILTIN_TASKS[task], stored
        else:
            from horde.envs import get_task

            spec = get_task(task)
            description, differentiable = spec.description, spec.differentiable
            config, records = type(spec.config).__name__, field_records(spec.config, "task")
        out += _wrap(f"task={task}: {description}" + (" [differentiable]" if differentiable else ""), 0)
        out += [f"fields of task.* ({config}), set with task.<field>=<value>"
                + (f"; [tuned] values come from {tuned_file}" if tuned_file else "") + ":"]
        out += record_lines(records, tuned)
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


if __name__ == "__main__":  # python -m horde.train.help: rewrite the static table of the built-in tasks' fields
    import json

    TASK_FIELDS.write_text(json.dumps(task_fields_table(), indent=0) + "\n")
    print(f"wrote {TASK_FIELDS}")
