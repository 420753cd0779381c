"""The lift family's observation terms: each a Warp function ``(x: Manip, i: int, k: int) -> float`` (column ``k``'s
raw value of env ``i``) with its columns, units and frame, written by the generator of :mod:`horde.envs.obs_writer`
in the order of ``task.observations``. The built-in terms (:func:`lift_observation_terms`) take their widths from
the arm entry; a user's terms are registered in :data:`LIFT_OBSERVATIONS` and named in ``task.extra_observations``
(appended) or ``task.observations`` (any order, with the built-in ones)::

    @LIFT_OBSERVATIONS.term(width=1, unit="m")
    def cube_height(x: Manip, i: int, k: int, above: float = 0.0) -> float:
        return cube_pos(x, i)[2] - x.table_z - above

    # task.extra_observations=[cube_height] task.observation_params.cube_height.above=0.02

``task.observation_params.<term>`` also sets any term's ``noise`` (uniform, raw units, training only), ``scale``,
``clip``, ``history`` (frames kept, newest first) and ``delay`` (sensor latency, training only); ``policy.json``
states them.
"""
# no `from __future__ import annotations`: Warp reads the annotations of the term functions

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import warp as wp

from horde.envs.lift_config import OBSERVATIONS
from horde.envs.lift_terms import Manip, cube_pos, ee_pos
from horde.envs.observations import MODIFIERS, ObsTerm, ObsTermSet, modifiers
from horde.envs.terms import FUNC_KEY, UnknownTermError

__all__ = ["BUILTIN_OBSERVATIONS", "LIFT_OBSERVATIONS", "MODIFIERS", "lift_observation_terms"]

LIFT_OBSERVATIONS = ObsTermSet("lift observation", Manip)
"""A user's observation terms for the lift family (lift, push, place): ``task.observations`` names them."""


@wp.func
def _joint_pos(x: Manip, i: int, k: int) -> float:
    return x.joint_q[i, k]


@wp.func
def _joint_vel(x: Manip, i: int, k: int) -> float:
    return x.joint_qd[i, k]


@wp.func
def _ee_pos(x: Manip, i: int, k: int) -> float:
    return ee_pos(x, i)[k]


@wp.func
def _cube_pos(x: Manip, i: int, k: int) -> float:
    return cube_pos(x, i)[k]


@wp.func
def _cube_rel_ee(x: Manip, i: int, k: int) -> float:
    return cube_pos(x, i)[k] - ee_pos(x, i)[k]


@wp.func
def _target_pos(x: Manip, i: int, k: int) -> float:
    return x.target[i][k]


@wp.func
def _target_rel_cube(x: Manip, i: int, k: int) -> float:
    return x.target[i][k] - cube_pos(x, i)[k]


@wp.func
def _cube_yaw(x: Manip, i: int, k: int) -> float:
    """sin (k = 0) and cos (k = 1) of 4 x the cube's yaw relative to the hand's (a cube repeats every 90 degrees)."""
    cube_x_axis = wp.quat_rotate(wp.transform_get_rotation(x.body_q[i, x.cube_body]), wp.vec3(1.0, 0.0, 0.0))
    hand_x_axis = wp.quat_rotate(wp.transform_get_rotation(x.body_q[i, x.ee_body]), wp.vec3(1.0, 0.0, 0.0))
    yaw = wp.atan2(cube_x_axis[1], cube_x_axis[0]) - wp.atan2(hand_x_axis[1], hand_x_axis[0])
    return wp.where(k == 0, wp.sin(4.0 * yaw), wp.cos(4.0 * yaw))


@wp.func
def _ik_lead(x: Manip, i: int, k: int) -> float:
    return wp.where(x.ee_mode == 1, x.ee_target[i][k] - ee_pos(x, i)[k], 0.0)


@wp.func
def _gripper_command(x: Manip, i: int, k: int) -> float:
    return x.grip[i]


@wp.func
def _last_action(x: Manip, i: int, k: int) -> float:
    return x.last_actions[i, k]


BUILTIN_OBSERVATIONS = OBSERVATIONS
"""The lift family's own terms, in the default order of ``task.observations``."""


def _builtin(joints: Sequence[str], joint_units: Sequence[str], default_pos: Sequence[float],
             action_names: Sequence[str]) -> dict[str, ObsTerm]:
    xyz = ("x", "y", "z")
    world = {"unit": "m", "frame": "world", "fallback": 0.0}

    def vec(name, source, prefix, func, **kw):
        return ObsTerm(name, source=source, columns=tuple(f"{prefix}_{a}" for a in xyz), func=func, **{**world, **kw})

    return {t.name: t for t in (
        ObsTerm("joint_pos", source="joint_pos", columns=tuple(f"pos_{j}" for j in joints), unit=tuple(joint_units),
                frame="joint", offset=tuple(default_pos), joints=tuple(joints), func=_joint_pos, fallback=0.0),
        ObsTerm("joint_vel", source="joint_vel", columns=tuple(f"vel_{j}" for j in joints),
                unit=tuple(u + "/s" for u in joint_units), frame="joint", joints=tuple(joints), func=_joint_vel,
                fallback=0.0),
        vec("ee_pos", "ee_pos", "ee", _ee_pos),
        vec("cube_pos", "object_pos", "cube", _cube_pos),
        vec("cube_rel_ee", "object_rel_ee", "cube_ee", _cube_rel_ee),
        vec("target_pos", "goal_pos", "target", _target_pos, fallback=None),
        vec("target_rel_cube", "goal_rel_object", "target_cube", _target_rel_cube),
        ObsTerm("cube_yaw", source="object_yaw_sincos4", columns=("cube_yaw_sin4", "cube_yaw_cos4"), unit="1",
                func=_cube_yaw, fallback=(0.0, 1.0)),
        ObsTerm("ik_lead", source="ik_lead", columns=("ee_cmd_dx", "ee_cmd_dy", "ee_cmd_dz"), unit="m",
                frame="world", func=_ik_lead, fallback=0.0),
        ObsTerm("gripper_command", source="gripper_command", columns=("gripper_cmd",), unit="1",
                func=_gripper_command),
        ObsTerm("last_action", source="last_action", columns=tuple(f"last_action_{a}" for a in action_names),
                unit="1", func=_last_action))}


def lift_observation_terms(names: Sequence[str], params: Mapping[str, Mapping[str, Any]] | None, *,
                           joints: Sequence[str], joint_units: Sequence[str], default_pos: Sequence[float],
                           action_names: Sequence[str]) -> tuple[ObsTerm, ...]:
    """The observation's terms in column order: ``names`` (``task.observations``) from the built-in terms (widths
    from the arm entry's ``joints``, offsets from its ``default_pos``) and :data:`LIFT_OBSERVATIONS`, with
    ``params`` (``task.observation_params``: a user term's function parameters and ``func``; any term's
    :data:`MODIFIERS`). Every mistake raises one line."""
    builtin = _builtin(joints, joint_units, default_pos, action_names)
    params = {str(k): dict(v or {}) for k, v in (params or {}).items()}
    if len(set(names)) != len(names):
        raise UnknownTermError(f"task.observations and task.extra_observations name a term twice: {list(names)}")
    unused = [n for n in params if n not in names]
    if unused:
        raise UnknownTermError(f"task.observation_params.{unused[0]}: not an observation term of the task "
                               f"({', '.join(names)})")
    mods = {n: {m: params[n].pop(m) for m in MODIFIERS if m in params.get(n, {})} for n in names}
    user = [n for n in names if n not in builtin]
    clash = [n for n in LIFT_OBSERVATIONS.names() if n in builtin]
    if clash:
        raise UnknownTermError(f"lift observation term '{clash[0]}' is a built-in term's name; register it under "
                               "another")
    for n in names:
        if n in builtin and params.get(n):
            raise UnknownTermError(f"task.observation_params.{n}: the built-in term takes only "
                                   f"{', '.join(MODIFIERS)}; got {', '.join(params[n])}")
    valid = ", ".join([*BUILTIN_OBSERVATIONS, *LIFT_OBSERVATIONS.names()])
    unknown = [n for n in user if str(params.get(n, {}).get(FUNC_KEY, n)) not in LIFT_OBSERVATIONS.names()]
    if unknown:
        raise UnknownTermError(f"unknown lift observation term '{unknown[0]}'; valid terms: {valid}")
    funcs = {f.name: f for f in LIFT_OBSERVATIONS.resolve(user, {n: params[n] for n in user if params.get(n)})}
    out = []
    for n in names:
        t = builtin[n] if n in builtin else funcs[n].term()
        out.append(dataclasses.replace(t, **modifiers(n, mods[n])))
    return tuple(out)
