"""Choice and range declarations for config dataclass fields, checked in one walk over a composed config.

A choice field stays a plain ``str`` in the dataclass (and so in saved configs and checkpoints) and lists its valid
values in the field's metadata; a numeric field may carry bounds. :func:`check_fields` walks a config tree and fails
with one line naming the field, the bad value and the valid ones.

Why not ``Literal`` or ``Enum``: OmegaConf (Hydra's config layer) rejects ``Literal`` annotations, and ``Enum``
members would reach checkpoints, which ``torch.load(weights_only=True)`` then refuses to read.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["FieldError", "bounded", "bounded_list", "check_fields", "check_output_file", "check_writable_dir", "choice",
           "choice_fields", "file_path", "valid_choices"]


class FieldError(ValueError):
    """A config value outside its declared choices or bounds; the message is one line."""


def choice(values: Sequence[str | None] | Callable[[], Sequence[str]], *, default: str | None = None) -> Any:
    """A field whose value must be one of ``values`` (a sequence, or a callable returning one for choices that a
    registry extends at run time); the default is ``default`` or the first value."""
    if default is None and not callable(values):
        default = values[0]
    return dataclasses.field(default=default, metadata={"choices": values})


def bounded(default: float | int, *, gt: float | None = None, ge: float | None = None, lt: float | None = None,
            le: float | None = None) -> Any:
    """A numeric field that must satisfy the given bounds (``gt`` >, ``ge`` >=, ``lt`` <, ``le`` <=)."""
    bounds = {k: v for k, v in (("gt", gt), ("ge", ge), ("lt", lt), ("le", le)) if v is not None}
    return dataclasses.field(default=default, metadata={"bounds": bounds})


def bounded_list(default: Sequence[float], *, gt: float | None = None, ge: float | None = None,
                 lt: float | None = None, le: float | None = None, min_len: int = 0,
                 max_len: int | None = None, same_length: bool = False) -> Any:
    """A list field whose values must satisfy the given bounds and whose length must be ``min_len`` to ``max_len``
    (no upper limit when None), or with ``same_length`` exactly as many values as the class's default (a per-joint
    list: a subclass's own default sets its length); the default is a fresh copy of ``default``."""
    bounds = {k: v for k, v in (("gt", gt), ("ge", ge), ("lt", lt), ("le", le)) if v is not None}
    items = list(default)
    length = "default" if same_length else (min_len, max_len)
    return dataclasses.field(default_factory=lambda: list(items), metadata={"item_bounds": bounds, "length": length})


def file_path(*, suffix: str, hint: str = "") -> Any:
    """An optional field naming a file that must exist and end in ``suffix`` when set (default None); ``hint`` says
    where such a file comes from, in the error."""
    return dataclasses.field(default=None, metadata={"file": suffix, "hint": hint})


def _metadata(cls: type, name: str) -> dict:
    """The metadata of field ``name``, from ``cls`` or, where a subclass only changed its default, a base class."""
    for klass in cls.__mro__:
        f = getattr(klass, "__dataclass_fields__", {}).get(name)
        if f is not None and f.metadata:
            return dict(f.metadata)
    return {}


def valid_choices(cls: type, name: str) -> tuple | None:
    """The valid values of choice field ``name`` of dataclass ``cls``, or None for a field without choices."""
    values = _metadata(cls, name).get("choices")
    if values is None:
        return None
    return tuple(values() if callable(values) else values)


_SYMBOL = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}


def _rule(bounds: dict) -> str:
    return " and ".join(f"{_SYMBOL[k]} {b}" for k, b in bounds.items())


def _default_length(cls: type, name: str) -> int | None:
    """The length of field ``name``'s default when it is a non-empty list of floats, else None."""
    f = getattr(cls, "__dataclass_fields__", {}).get(name)
    factory = getattr(f, "default_factory", dataclasses.MISSING)
    if factory is dataclasses.MISSING:
        return None
    default = factory()
    if isinstance(default, list) and default and all(isinstance(v, float) for v in default):
        return len(default)
    return None


def _check_list(path: str, value: Any, cls: type, name: str, meta: dict) -> None:
    """Bounds and length of a list field (:func:`bounded_list`), or a float list's fixed length."""
    if not isinstance(value, (list, tuple)):
        return
    shown = "[" + ", ".join(str(v) for v in value) + "]"
    if "length" in meta:
        if meta["length"] == "default":
            n = _default_length(cls, name)
            lo, hi, why = (0, None, "") if n is None else (n, n, " (as many as its default)")
        else:
            (lo, hi), why = meta["length"], ""
        if len(value) < lo or (hi is not None and len(value) > hi):
            want = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi is not None else f"at least {lo}"
            raise FieldError(f"{path}={shown}: needs {want} values{why}, got {len(value)}")
        bounds = meta.get("item_bounds") or {}
        bad = [v for v in value if not _in_bounds(v, bounds)] if bounds else []
        if bad:
            raise FieldError(f"{path}={shown}: each value must be {_rule(bounds)} (got {bad[0]})")
        return
    n = _default_length(cls, name)
    if n is not None and len(value) != n:
        raise FieldError(f"{path}={shown}: needs {n} values (as many as its default), got {len(value)}")


def _in_bounds(value: float, bounds: dict) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
        return False
    return all({"gt": value > b, "ge": value >= b, "lt": value < b, "le": value <= b}[k] for k, b in bounds.items())


def check_fields(obj: Any, prefix: str = "") -> None:
    """Raise :class:`FieldError` for the first field of dataclass ``obj`` (recursively) outside its choices or
    bounds; ``prefix`` is the dotted path of ``obj`` in the command line (``task``, ``algo.policy``)."""
    if not dataclasses.is_dataclass(obj):
        return
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        path = f"{prefix}.{f.name}" if prefix else f.name
        choices = valid_choices(type(obj), f.name)
        if choices is not None and value not in choices:
            shown = ", ".join("null" if c is None else str(c) for c in choices)
            raise FieldError(f"{path}={value}: not a valid choice; valid choices: {shown}")
        meta = _metadata(type(obj), f.name)
        bounds = meta.get("bounds")
        if bounds and value is not None and not _in_bounds(value, bounds):  # None: an optional field left unset
            raise FieldError(f"{path}={value}: must be {_rule(bounds)}")
        _check_list(path, value, type(obj), f.name, meta)
        if "file" in meta and value is not None:
            from pathlib import Path

            hint = f" ({meta['hint']})" if meta["hint"] else ""
            if not Path(str(value)).expanduser().is_file():
                raise FieldError(f"{path}={value}: no such file{hint}")
            if not str(value).lower().endswith(meta["file"]):
                raise FieldError(f"{path}={value}: expected a {meta['file']} file{hint}")
        if dataclasses.is_dataclass(value):
            check_fields(value, path)


def check_writable_dir(label: str, value: Any, path: Any = None) -> None:
    """The folder ``path`` (default ``value``, what the user gave as ``label=value``) exists or can be created, and
    this process can write it; else a one-line :class:`FieldError` naming the part that is a file or read-only."""
    from pathlib import Path

    p = Path(str(value if path is None else path)).expanduser()
    probe = p
    while not (probe.exists() or probe.is_symlink()) and probe.parent != probe:
        probe = probe.parent  # the deepest part that exists: the folders below it will be created
    if not probe.is_dir():
        what = "" if probe == p else f"{probe} "
        raise FieldError(f"{label}={value}: {what}is a file, not a folder" if probe.exists() else
                         f"{label}={value}: {probe} is a broken link")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise FieldError(f"{label}={value}: {'' if probe == p else f'{probe} '}is not writable by this user")


def check_output_file(label: str, value: Any) -> None:
    """``value`` (given as ``label=value``) can be written as a file: not a folder, in a folder that can be written;
    else a one-line :class:`FieldError`."""
    from pathlib import Path

    p = Path(str(value)).expanduser()
    if p.is_dir():
        raise FieldError(f"{label}={value}: is a folder; give a file name")
    check_writable_dir(label, value, p.parent)
    if p.exists() and not os.access(p, os.W_OK):
        raise FieldError(f"{label}={value}: exists and is not writable by this user")


def choice_fields(obj: Any, prefix: str = "") -> Iterator[tuple[str, tuple]]:
    """Every choice field of dataclass ``obj`` (recursively) as ``(dotted path, valid values)``."""
    for f in dataclasses.fields(obj):
        path = f"{prefix}.{f.name}" if prefix else f.name
        choices = valid_choices(type(obj), f.name)
        if choices is not None:
            yield path, choices
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            yield from choice_fields(value, path)
