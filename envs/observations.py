"""Observation terms: what each block of a task's observation vector is, declared once.

A task lists its observation as :class:`ObsTerm` s in column order (``env.observation_terms()``). Each term reads
one *raw source*, a physical quantity a robot (or the simulator) provides, named by ``source`` and documented in
:data:`SOURCES`, and the policy sees ``clip((raw - offset) * scale, -clip, clip)`` of it. From the terms come the
observation's column names, ``policy.json``'s observation section (:func:`horde.deploy.spec.observation_spec`, read
on the robot by :mod:`horde.deploy.robot.observations`), and the contract that every task's observation vector can
be rebuilt from raw state and ``policy.json`` alone (``tests/contract/test_observation_contract.py``, through
``env.observation_sources()``, each task's reading of its raw sources from the world's state)::

    ObsTerm("joint_pos", source="joint_pos", columns=tuple(f"pos_{j}" for j in joints), unit="rad", frame="joint",
            offset=default_pose)   # the policy sees the angle relative to the default pose

The terms also write it: a term's ``func`` (a Warp function of the task's context) gives its raw value, and
:func:`horde.envs.obs_writer.observation_writer` fuses a group's terms into the step kernel with their offsets,
noise, scale, clip and fallback, so what ``policy.json`` states is what ran (every task family; the cart-pole's CPU
block step writes the same columns in C++, pinned bit for bit to its terms). The contract test holds the terms and
the raw sources together for every registered task.

A term may keep a history (``ObsTerm.history``, ``task.observation_params.<term>.history``): its last H frames,
newest first (:data:`HISTORY_LAYOUT`), kept in the observation buffer by the generator and on the robot by
:class:`horde.deploy.robot.observations.ObservationFrames`. A term may be delayed (``ObsTerm.delay``,
``task.observation_params.<term>.delay``): the policy sees its value of ``lag`` control steps before, ``lag`` drawn
per env and step from [min, max] (sensor latency, mjlab's ``delay_min_lag``/``delay_max_lag``); training only, as
noise: a robot's own latency is what it models, so the robot side adds none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any
import dataclasses
from dataclasses import dataclass

import torch
import warp as wp

__all__ = ["DELAY_NOTE", "HISTORY_LAYOUT", "MIRRORS", "MODIFIERS", "SOURCES", "ObsTerm", "ObsTermSet",
           "ObservationFunction", "columns_of", "history_column", "modifiers", "quat_rotate", "quat_rotate_inverse",
           "raw_term", "split_history_column", "term_slices"]

SOURCES: dict[str, str] = {
    # floating-base robots
    "base_lin_vel": "base linear velocity in the base frame [m/s] (x forward, y left, z up)",
    "base_ang_vel": "base angular velocity in the base frame [rad/s]",
    "imu_gyro": "the IMU's angular velocity in the IMU site's frame [rad/s]",
    "projected_gravity": "unit gravity direction (0, 0, -1) of the world in the base frame",
    "imu_projected_gravity": "unit gravity direction of the world in the IMU site's frame",
    "base_height": "height of the base (root body) origin above the world's z = 0 [m]",
    "velocity_command": "commanded base velocity: vx [m/s], vy [m/s] (base frame), yaw rate [rad/s]",
    "gait_clock": "sin and cos of 2 pi x the gait clock's phase in [0, 1)",
    "height_scan": "height of the base above the terrain under each scan point [m]",
    "depth_image": "forward depth of each pixel [m], row-major, row 0 at the top",
    # every articulated robot
    "joint_pos": "joint positions [rad or m] in the listed order",
    "joint_vel": "joint velocities [rad/s or m/s] in the listed order",
    "last_action": "the policy's previous action, clipped to [-1, 1] (zeros at an episode's start)",
    # manipulation (world frame: the robot's base stands at the origin)
    "ee_pos": "end-effector (grasp site) position in the world frame [m]",
    "object_pos": "the object's (cube's) position in the world frame [m]",
    "object_rel_ee": "object position minus end-effector position, world frame [m]",
    "goal_pos": "goal position in the world frame [m]",
    "goal_rel_object": "goal position minus object position, world frame [m]",
    "goal_rel_ee": "goal position minus end-effector position, world frame [m]",
    "object_yaw_sincos4": "sin and cos of 4 x the object's yaw relative to the hand's (a cube repeats every 90 deg)",
    "ik_lead": "the IK command's end-effector target minus the end-effector position, world frame [m]",
    "gripper_command": "the gripper law's opening command, 1 open, 0 closed (policy.json's action.command)",
}
"""The raw quantities observation terms read; a task may add its own names (classic-control state variables)."""


@dataclass(frozen=True)
class ObsTerm:
    """One block of consecutive observation columns read from one raw source."""

    name: str
    """Term name (unique in the task)."""
    source: str
    """The raw quantity it reads (:data:`SOURCES`, or a task's own state variable)."""
    columns: tuple[str, ...]
    """Column names, in order; the term's width is their count."""
    unit: str | tuple[str, ...] | None = None
    """Unit of the raw quantity, one or one per column ("1": dimensionless; None: not declared)."""
    frame: str | None = None
    """Frame of a vector quantity: "base", "base_yaw", "imu", "joint", "world", "camera"; None otherwise."""
    offset: float | tuple[float, ...] = 0.0
    """Subtracted from the raw value (one value or one per column), e.g. the default pose of joint angles."""
    scale: float | tuple[float, ...] = 1.0
    """Multiplies ``raw - offset``."""
    clip: float | None = None
    """The result is clipped to [-clip, clip] (None: not clipped)."""
    noise: float = 0.0
    """Half-width of the uniform noise added in training (not on the robot); 0: none."""
    joints: tuple[str, ...] = ()
    """For a per-joint source (``joint_pos``, ``joint_vel``, ``last_action``): the joint of each column."""
    func: Any = None
    """The Warp function ``(x: Context, i: int, k: int) -> float`` giving column ``k``'s raw value of env ``i``:
    :func:`horde.envs.obs_writer.observation_writer` writes the term from it, applying ``noise``, ``offset``,
    ``scale``, ``clip`` and ``fallback`` (None: the task's kernel writes the term itself)."""
    fallback: Any = None
    """What the generator writes in the term's columns while the env's world is not sound (NaN or flagged), instead
    of its value: one value, one per column, or a Warp function ``(x, i, k) -> float``; None: the value as
    computed."""
    history: int = 1
    """Frames kept (1: the current value only). The term's observation is ``history`` frames of its ``columns``,
    newest first (:data:`HISTORY_LAYOUT`): a frame is the value the policy saw that many steps ago, with the noise
    it had then; on an episode's start every frame holds the first value."""
    delay: tuple[int, int] = (0, 0)
    """Sensor latency in control steps, ``(min, max)``: each step the policy sees the term's value (noise, scale
    and clip applied) of ``lag`` steps before, ``lag`` drawn per env from [min, max] (both inclusive; one number
    when they are equal, no draw); an episode's first ``lag`` steps see its first value. History stacks the delayed
    frames (mjlab's order: compute, noise, clip, scale, delay, history). Training only, as ``noise``; the privileged
    critic sees the value now. (0, 0): none."""

    def __post_init__(self) -> None:
        for attr in ("offset", "scale", "unit", "fallback"):  # a function as fallback is no tuple
            v = getattr(self, attr)
            if isinstance(v, tuple) and len(v) != len(self.columns):
                raise ValueError(f"observation term '{self.name}': {attr} has {len(v)} values for "
                                 f"{len(self.columns)} columns")
        if isinstance(self.history, bool) or not isinstance(self.history, int) or self.history < 1:
            raise ValueError(f"observation term '{self.name}': history must be an int >= 1, got {self.history!r}")
        d = self.delay
        if (not isinstance(d, tuple) or len(d) != 2 or any(isinstance(v, bool) or not isinstance(v, int) for v in d)
                or not 0 <= d[0] <= d[1]):
            raise ValueError(f"observation term '{self.name}': delay must be (min, max) control steps, ints with "
                             f"0 <= min <= max, got {d!r}")

    @property
    def frame_width(self) -> int:
        """Columns of one frame: the raw source's width (``columns``)."""
        return len(self.columns)

    @property
    def past_width(self) -> int:
        """Values the generator keeps per env for the delay, beyond the observation (``delay[1]`` frames)."""
        return self.delay[1] * len(self.columns)

    @property
    def width(self) -> int:
        """Observation columns of the term: ``history`` x ``frame_width``."""
        return self.history * len(self.columns)

    @property
    def names(self) -> tuple[str, ...]:
        """The term's observation column names, ``history`` frames of ``columns``, newest first
        (:data:`HISTORY_LAYOUT`); ``columns`` when ``history`` is 1."""
        return tuple(history_column(c, f) for f in range(self.history) for c in self.columns)

    def units(self) -> list[str | None]:
        """``unit`` per column (of one frame)."""
        return list(self.unit) if isinstance(self.unit, tuple) else [self.unit] * self.frame_width

    def per_column(self, attr: str) -> list[float]:
        """``offset`` or ``scale`` as one float per column (of one frame)."""
        v = getattr(self, attr)
        return [float(v)] * self.frame_width if isinstance(v, (int, float)) else [float(x) for x in v]


HISTORY_LAYOUT = ("a term with history H observes H frames of its columns, newest first: <col> for each column "
                  "(now), then <col>@-1 for each (one step ago), ..., <col>@-(H-1); an episode's first observation "
                  "fills every frame with its value")
"""The column layout of a term with ``history`` > 1 (:attr:`ObsTerm.names`), as ``policy.json`` states it."""

DELAY_NOTE = ("a block with delay [min, max] was trained on its value of lag control steps before, lag drawn per env "
              "and step in [min, max] (simulated sensor latency, training only): a robot feeds its latest reading, "
              "whose own latency is what the delay modelled")
"""What ``policy.json`` says of a block's ``delay`` (:attr:`ObsTerm.delay`)."""


def history_column(column: str, lag: int) -> str:
    """The name of ``column``'s value ``lag`` steps ago: ``column`` itself for lag 0, else ``<column>@-<lag>``."""
    return column if lag == 0 else f"{column}@-{lag}"


def split_history_column(name: str) -> tuple[str, int]:
    """``(column, lag)`` of an observation column name (the inverse of :func:`history_column`)."""
    base, sep, lag = name.rpartition("@-")
    return (base, int(lag)) if sep and lag.isdigit() else (name, 0)


MODIFIERS = ("noise", "scale", "clip", "history", "delay")
"""Keys of ``task.observation_params.<term>`` that set how the generator writes any term (not parameters of its
function): the lift family's and the velocity family's, built-in terms and a user's."""


def modifiers(name: str, mods: Mapping[str, Any]) -> dict[str, Any]:
    """``task.observation_params.<name>``'s :data:`MODIFIERS` as :class:`ObsTerm` fields, checked (a number; noise
    >= 0, clip > 0; history an int >= 1; delay control steps, an int or [min, max]); a mistake raises
    :class:`horde.envs.terms.UnknownTermError` in one line."""
    from horde.envs.terms import UnknownTermError

    out = {}
    for key, v in mods.items():
        if key == "history":
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise UnknownTermError(f"task.observation_params.{name}.history: frames kept, an int >= 1, got {v!r}")
            out[key] = v
            continue
        if key == "delay":
            out[key] = _delay(name, v)
            continue
        try:
            v = float(v)
        except (TypeError, ValueError):
            raise UnknownTermError(f"task.observation_params.{name}.{key}: a number, got {v!r}") from None
        if (key == "noise" and v < 0) or (key == "clip" and v <= 0):
            raise UnknownTermError(f"task.observation_params.{name}.{key}: must be "
                                   f"{'>= 0' if key == 'noise' else '> 0'}, got {v}")
        out[key] = v
    return out


def _delay(name: str, v: Any) -> tuple[int, int]:
    """``task.observation_params.<name>.delay``: an int (a fixed lag) or [min, max], control steps."""
    from horde.envs.terms import UnknownTermError

    lags = list(v) if isinstance(v, (list, tuple)) or (hasattr(v, "__iter__") and not isinstance(v, str)) else [v, v]
    if (len(lags) != 2 or any(isinstance(x, bool) or not isinstance(x, int) for x in lags)
            or not 0 <= lags[0] <= lags[1]):
        raise UnknownTermError(f"task.observation_params.{name}.delay: control steps of sensor latency, an int >= 0 "
                               f"or [min, max] with 0 <= min <= max, got {v!r}")
    return (lags[0], lags[1])


MIRRORS = ("even", "odd")
"""How a user's observation term mirrors left-right (``algo.symmetry``): each column unchanged ("even": a height,
a forward speed) or negated ("odd": a lateral offset, a yaw rate); None: no mirror image (symmetry then refuses
the task in one line)."""


@dataclass(frozen=True)
class ObservationFunction:
    """A user's observation term: a Warp function ``(x: Context, i: int, k: int) -> float`` giving column ``k`` of
    env ``i``'s raw value, and how the policy sees it (one offset, scale and clip for every column)."""

    name: str
    func: wp.Function
    width: int
    unit: str | None
    frame: str | None
    offset: float
    scale: float
    clip: float | None
    mirror: str | None

    def term(self) -> ObsTerm:
        """Its :class:`ObsTerm` (source: its own name; columns ``<name>`` or ``<name>_<k>``), with its function and
        zeros while the world is not sound (what the observation generator writes)."""
        cols = (self.name,) if self.width == 1 else tuple(f"{self.name}_{k}" for k in range(self.width))
        return ObsTerm(self.name, source=self.name, columns=cols, unit=self.unit, frame=self.frame,
                       offset=self.offset, scale=self.scale, clip=self.clip, func=self.func, fallback=0.0)


class ObsTermSet:
    """Observation terms a user adds to a task family, by name: ``task.extra_observations`` lists the ones a config
    appends after the task's own columns, and the step kernel fuses them (``wp.static``, one launch)::

        @VELOCITY_OBSERVATIONS.term(width=1, unit="m", mirror="even")
        def base_height(x: Legged, i: int, k: int) -> float:
            return wp.transform_get_translation(x.body_q[i, x.root])[2]
    """

    def __init__(self, family: str, context: type) -> None:
        from horde.envs.terms import TermSet

        self.family, self.context = family, context
        self._terms: dict[str, ObservationFunction] = {}
        self._funcs = TermSet(family, context)
        """The functions and their parameters (arguments after ``(x, i, k)``; ``task.observation_params``)."""
        self._funcs.lead, self._funcs.params_field = ("x", "i", "k"), "task.observation_params"

    def term(self, func: Callable | None = None, *, name: str | None = None, width: int = 1, unit: str | None = None,
             frame: str | None = None, offset: float = 0.0, scale: float = 1.0, clip: float | None = None,
             mirror: str | None = None, replace: bool = False, params: dict | None = None,
             bounds: dict | None = None):
        """Decorator: compile ``func`` as a Warp function and register it with its layout; its arguments after
        ``(x, i, k)`` are parameters, as a reward term's (:meth:`horde.envs.terms.TermSet.term`)."""
        if mirror is not None and mirror not in MIRRORS:
            raise ValueError(f"mirror must be one of {', '.join(MIRRORS)} or None, got {mirror!r}")
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width must be a positive int, got {width!r}")

        def register(f: Callable) -> wp.Function:
            key = name or f.__name__
            if key in self._terms and not replace:
                raise ValueError(f"{self.family} term '{key}' is already registered (pass replace=True)")
            wf = self._funcs.term(f, name=key, replace=replace, params=params, bounds=bounds)
            self._terms[key] = ObservationFunction(key, wf, width, unit, frame, float(offset), float(scale),
                                                   None if clip is None else float(clip), mirror)
            return wf

        return register(func) if func is not None else register

    def names(self) -> list[str]:
        return list(self._terms)

    def resolve(self, names: Sequence[str], params: dict | None = None) -> tuple[ObservationFunction, ...]:
        """The terms of ``names``, in that order, with ``params`` (a config's ``observation_params``: per name, the
        parameter values and ``func``, the registered term it is made of); an unknown name or parameter raises one
        line listing the valid ones."""
        from horde.envs.terms import FUNC_KEY, UnknownTermError

        bases = {n: str((params or {}).get(n, {}).get(FUNC_KEY, n)) for n in names}
        missing = [n for n in names if bases[n] not in self._terms]
        if missing and not params:
            valid = ", ".join(self._terms) or "none registered"
            raise UnknownTermError(f"unknown {self.family} term{'s' if len(missing) > 1 else ''} "
                                   f"{', '.join(missing)}; valid terms: {valid}")
        return tuple(dataclasses.replace(self._terms[t.base], name=t.name, func=t.func)
                     for t in self._funcs.configure(names, params))


def raw_term(name: str, unit: str | None = None) -> ObsTerm:
    """A one-column term that feeds its source as is (classic-control state variables: source = name)."""
    return ObsTerm(name, source=name, columns=(name,), unit=unit)


def columns_of(terms: Sequence[ObsTerm]) -> tuple[str, ...]:
    """The observation's column names, in order; a duplicated term or column name raises."""
    names = [t.name for t in terms]
    if len(set(names)) != len(names):
        raise ValueError(f"observation term names repeat: {names}")
    cols = tuple(c for t in terms for c in t.names)
    if len(set(cols)) != len(cols):
        raise ValueError("observation column names repeat")
    return cols


def term_slices(terms: Sequence[ObsTerm]) -> list[tuple[ObsTerm, int, int]]:
    """Each term with its column range [start, stop) (every frame of a term with history)."""
    out, c = [], 0
    for t in terms:
        out.append((t, c, c + t.width))
        c += t.width
    return out


def quat_rotate_inverse(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``v`` [..., 3] in the frame of unit quaternions ``q`` [..., 4] (x, y, z, w): R(q)^T v (raw sources)."""
    xyz, w = q[..., :3], q[..., 3:4]
    t = 2.0 * torch.cross(xyz, v.expand_as(xyz), dim=-1)
    return v - w * t + torch.cross(xyz, t, dim=-1)


def quat_rotate(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``v`` [..., 3] rotated by unit quaternions ``q`` [..., 4] (x, y, z, w): R(q) v."""
    return quat_rotate_inverse(torch.cat((-q[..., :3], q[..., 3:4]), dim=-1), v)
