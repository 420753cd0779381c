"""Checking and rewriting ``key=value`` overrides before and after Hydra composes them
(:func:`horde.train.config.compose`): unknown keys named with the valid ones, Hydra's errors on one line, repeated
keys, the ``robot=`` shorthand, the CPU profile's overrides, term names and parameters (:data:`TERM_PARAMS`,
:func:`check_terms`) and user modules (``imports=``). Every failure is one :class:`ConfigError` line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

__all__ = ["TERM_PARAMS", "ConfigError", "check_terms", "cpu_profile", "import_user_modules", "refuse_repeated_keys"]


class ConfigError(ValueError):
    """A bad override or config file; the message is one line meant for the user."""


def _first_line(exc: BaseException) -> str:
    """Hydra's errors span several lines; keep the headline and its cause on one line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip() and not ln.strip().startswith(("full_key", "object_type", "reference_type", "Set the environment"))]
    if exc.__cause__ is not None and len(lines) < 2:
        lines += [ln.strip() for ln in str(exc.__cause__).splitlines() if ln.strip()][:1]
    return ": ".join(lines[:2]) if lines else type(exc).__name__


def _whole_number(parsed: list, exc: BaseException) -> list[str] | None:
    """``key=1e6`` for an int field (Hydra reads a float, which OmegaConf refuses): the overrides with that value
    written as the whole number it is, to compose again; a one-line :class:`ConfigError` where it is not whole
    (``num_envs=1.5``); None for any other error."""
    import math

    if "could not be converted to Integer" not in str(exc.__cause__ or ""):
        return None
    for ov in parsed:
        if str(exc).strip() != f"Error merging override {ov.input_line}":
            continue
        value = ov.value()
        if not isinstance(value, float):
            return None
        if not (math.isfinite(value) and value.is_integer()):
            raise ConfigError(f"{ov.input_line}: {ov.key_or_group.lstrip('+~')} takes a whole number")
        key = ov.input_line.partition("=")[0]
        return [f"{key}={int(value)}" if o is ov else o.input_line for o in parsed]
    return None


def _valid_keys(node: Any) -> list[str]:
    return sorted(str(k) for k in node.keys() if k != "hydra") if isinstance(node, DictConfig) else []


def _check_key(cfg: DictConfig, key: str) -> None:
    """Fail with one line when ``key`` (dotted) is not in ``cfg``, naming the valid keys at the failing level."""
    node: Any = cfg
    walked: list[str] = []
    for part in key.split("."):
        if not isinstance(node, DictConfig) or part not in node:
            where = ".".join(walked) or "the top level"
            valid = ", ".join(_valid_keys(node)) or "(none: not a group of keys)"
            raise ConfigError(f"unknown key '{key}' ({part!r} is not in {where}); valid keys there: {valid}")
        walked.append(part)
        node = node[part]


def _flat(tree, prefix: str = "") -> dict[str, Any]:
    """``{a: {b: 1}}`` -> ``{"a.b": 1}``."""
    out = {}
    for k, v in tree.items():
        key = f"{prefix}{k}"
        out.update(_flat(v, key + ".") if isinstance(v, dict) else {key: v})
    return out


def _hydra_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_hydra_value(x) for x in v) + "]"
    return "null" if v is None else str(v)


CONFIG_GROUPS = ("task", "algo", "tuned")
"""The config groups of ``configs/train.yaml``'s defaults: ``<group>=<name>`` chooses a config, not a value."""


def cpu_profile(cfg: DictConfig, parsed) -> list[str]:
    """The CPU profile's overrides (``TrainConfig.cpu``) that apply to this composition: on a CPU device, for the
    keys the command line does not set; empty otherwise (or when the profile has been applied already)."""
    if cfg.get("profile") is not None or not str(cfg.get("device", "cpu")).startswith("cpu") or not cfg.get("cpu"):
        return []
    # a group's choice (``algo=sac``, ``task=lift``) picks a config; it sets none of its keys, so the profile's
    # ``algo.batch_size`` still applies under ``algo=sac``
    given = {ov.key_or_group.lstrip("+~") for ov in parsed} - set(CONFIG_GROUPS)
    if any(ov.key_or_group == "cpu" and not ov.value() for ov in parsed):  # cpu={}: the profile is off
        return []
    flat = _flat(OmegaConf.to_container(cfg.cpu, resolve=True))
    return [f"{k}={_hydra_value(v)}" for k, v in flat.items()
            if not any(k == g or k.startswith(g + ".") or g.startswith(k + ".") for g in given)]


TERM_PARAMS = ("reward_params", "termination_params", "event_params", "observation_params", "curriculum_params",
               "command_params")
"""Task fields that hold the parameters of configured terms (``{term: {param: value, func: registered term}}``)."""


def _term_params_key(key: str) -> bool:
    """``task.<x>_params.<term>[.<param>]``: an override that sets a term's parameters, added where the config does not
    hold it yet (Hydra's ``++``: the term and parameter names are checked against its function by check_terms)."""
    parts = key.lstrip("+~").split(".")
    return len(parts) >= 3 and parts[0] == "task" and parts[1] in TERM_PARAMS


def import_user_modules(modules: Any) -> None:
    """Import each named module (``imports=[a,b]``): what it registers (tasks, robots, terms) becomes available.
    A module that cannot be found fails in one line saying it must be importable; a module that raises while it
    imports (any exception: an import it needs, a bug, a ``sys.exit``), in one line naming it, the exception and
    the line of the plugin that raised it."""
    import importlib

    names = [modules] if isinstance(modules, str) else list(modules or [])
    for name in names:
        name = str(name)
        try:
            importlib.import_module(name)
        except (Exception, SystemExit) as exc:
            missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
            if missing and (name == missing or name.startswith(missing + ".")):  # itself, not what it imports
                raise ConfigError(f"imports: cannot import '{name}': {exc}; the module must be importable: put "
                                  f"its folder on PYTHONPATH or install its package (pip install -e <package dir>)"
                                  ) from None
            text = exc.msg if isinstance(exc, SyntaxError) else str(exc)  # str() of a SyntaxError holds its place
            what = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
            where = _raised_at(exc, name)
            raise ConfigError(f"imports=[{','.join(map(str, names))}]: importing {name} raised "
                              f"{' '.join(what.split())}{f' ({where})' if where else ''}") from None


def _raised_at(exc: BaseException, module: str) -> str | None:
    """``file:line`` where importing ``module`` raised ``exc``: the innermost frame of the plugin's own package
    (its path from the folder that holds the package), else the innermost frame; a syntax error's own place."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{Path(exc.filename).name}:{exc.lineno}"
    top = module.split(".")[0]
    own, last = None, None
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        file, name = frame.f_code.co_filename, str(frame.f_globals.get("__name__", ""))
        if not file.startswith("<"):  # not importlib's frozen frames
            last = (file, tb.tb_lineno)
            if name == top or name.startswith(top + "."):
                own = (file, tb.tb_lineno, name)
        tb = tb.tb_next
    if own is not None:
        file, line, name = own
        root = Path(file).parent
        for _ in range(name.count(".") + (Path(file).name == "__init__.py")):
            root = root.parent
        shown = Path(file).relative_to(root) if Path(file).is_relative_to(root) else Path(file).name
        return f"{shown}:{line}"
    return f"{Path(last[0]).name}:{last[1]}" if last else None


def refuse_repeated_keys(overrides: list[str]) -> None:
    """A key given twice on the command line (``seed=1 seed=2``) is refused in one line naming it: Hydra would keep
    the last value silently."""
    seen: dict[str, str] = {}
    for arg in overrides:
        key, sep, _ = arg.partition("=")
        key = key.lstrip("+~")
        if not sep or not key:
            continue
        if key in seen:
            raise ConfigError(f"{key} is given twice ({seen[key]} and {arg}); give each key once")
        seen[key] = arg


def check_terms(task_cfg: Any, task_name: str) -> None:
    """The reward, termination, observation and event terms a task config names exist in its env's term sets
    (tasks whose env has them), and their parameters (``reward_params``, ``termination_params``, ``event_params``)
    are parameters of their functions, of the right type; each mistake as one line."""
    from horde.envs import get_task
    from horde.envs.terms import UnknownTermError

    env_cls = get_task(task_name).env_cls
    for attr, field, mode, params in (
            ("term_set", "reward_scales", None, "reward_params"),
            ("termination_set", "terminations", None, "termination_params"),
            ("observation_set", "extra_observations", None, "observation_params"),
            ("event_set", "events", "interval", "event_params"),
            ("event_set", "episode_events", "episode", "event_params"),
            ("event_set", "reset_events", "reset", "event_params"),
            ("event_set", "startup_events", "startup", "event_params")):
        term_set = getattr(env_cls, attr, None)
        if attr == "observation_set" and hasattr(env_cls, "check_observations"):
            continue  # the family checks its own list (below)
        if term_set is not None and hasattr(task_cfg, field):
            try:
                names = list(getattr(task_cfg, field))
                values = getattr(task_cfg, params, None) if params else None
                if mode is None:
                    term_set.resolve(names, values) if params else term_set.resolve(names)
                else:
                    term_set.resolve_mode(names, mode, f"task.{field}", values)
            except UnknownTermError as exc:
                msg = str(exc)
                raise ConfigError(msg if msg.startswith("task.") else f"task.{field}: {msg}") from None
    if getattr(task_cfg, "curricula", None) or getattr(task_cfg, "curriculum_params", None):
        from horde.envs.curricula import CURRICULA

        try:
            CURRICULA.configure(task_cfg.curricula, task_cfg.curriculum_params, list(task_cfg.reward_scales))
        except UnknownTermError as exc:
            raise ConfigError(str(exc)) from None
    commands = getattr(env_cls, "command_set", None)
    if hasattr(task_cfg, "command"):
        try:
            if commands is None:
                raise UnknownTermError(f"task.command: task {task_name} has no command terms")
            commands.resolve([task_cfg.command], task_cfg.command_params)
        except UnknownTermError as exc:
            msg = str(exc)
            raise ConfigError(msg if msg.startswith("task.") else f"task.command: {msg}") from None
    check_observations = getattr(env_cls, "check_observations", None)
    if check_observations is not None:  # a family whose observation list mixes its own terms and a user's
        try:
            check_observations(task_cfg)
        except UnknownTermError as exc:
            raise ConfigError(str(exc)) from None
    events = getattr(env_cls, "event_set", None)
    if events is not None and getattr(task_cfg, "event_params", None):
        # the env adds events of its own (the randomization's): their parameters may be set too
        named = [n for f in ("events", "episode_events", "reset_events", "startup_events")
                 for n in getattr(task_cfg, f, ())] + list(getattr(env_cls, "own_events", ()))
        try:
            events.check_params(named, task_cfg.event_params)
        except UnknownTermError as exc:
            raise ConfigError(str(exc)) from None
    for params in TERM_PARAMS[:4]:  # curriculum_params: every family (checked above)
        if getattr(task_cfg, params, None) and not hasattr(env_cls, {"reward_params": "term_set",
                                                                     "termination_params": "termination_set",
                                                                     "event_params": "event_set",
                                                                     "observation_params": "observation_set"}[params]):
            raise ConfigError(f"task.{params}: task {task_name} has no {params.split('_')[0]} terms with parameters")


def _robot_shorthand(parsed: list) -> list[str]:
    """``robot=go2`` is short for ``task.robot=go2`` on tasks that have a robot choice (velocity tracking; the lift
    and push, whose robots are arm entries)."""
    from horde.envs import TASKS
    from horde.envs.robots import ROBOTS
    from horde.sim.fields import valid_choices

    task = next((str(ov.value()) for ov in parsed if ov.key_or_group == "task"), None)
    with_robot = sorted(n for n, spec in TASKS.items() if hasattr(spec.config, "robot"))
    out = []
    for ov in parsed:
        if ov.key_or_group != "robot":
            out.append(ov.input_line)
            continue
        if task not in with_robot:
            raise ConfigError(f"robot= needs a task with a robot choice ({', '.join(with_robot)}); got task={task}")
        # the task's own robot choice: a legged robot for velocity tracking, an arm entry for the lift and push
        choices = valid_choices(type(TASKS[task].config), "robot") or tuple(ROBOTS)
        if str(ov.value()) not in choices:
            raise ConfigError(f"unknown robot '{ov.value()}'; valid robots: {', '.join(choices)}")
        out.append(f"task.robot={ov.value()}")
    return out
