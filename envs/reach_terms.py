"""The reach family's terms: what a term reads of an env (:class:`Arm`), its reward terms (:data:`REACH_TERMS`),
terminations (:data:`REACH_TERMINATIONS`: :func:`reached` on offer) and events (:data:`REACH_EVENTS`: the target
draw, ``target`` and ``retarget``), Warp functions ``(x: Arm, i: int, <parameters>)`` fused into the step kernels of
:mod:`horde.envs.reach` (its interval and reset events through :mod:`horde.envs.terms`' kernels)."""

from __future__ import annotations

import warp as wp

from horde.envs.observations import ObsTerm
from horde.envs.events import EventSet
from horde.envs.terms import TerminationSet, TermSet, clipped_action_rate

__all__ = ["REACH_EVENTS", "REACH_TERMINATIONS", "REACH_TERMS", "Arm", "action_rate", "distance", "draw_target",
           "joint_vel", "precision", "reach_observation_terms", "reached"]


@wp.struct
class Arm:
    """What a reach reward term reads of env ``i`` (arrays ``[num_envs, ...]``)."""

    ee_body: int
    ee_offset: wp.vec3
    actions: wp.array2d(dtype=float)
    """Actions of this step (unclipped)."""
    last_actions: wp.array2d(dtype=float)
    """Clipped actions of the previous step."""
    joint_qd: wp.array2d(dtype=float)
    body_q: wp.array2d(dtype=wp.transform)
    target: wp.array(dtype=wp.vec3)
    """Target position of each env [m], world frame."""
    unstable: wp.array(dtype=wp.bool)
    target_low: wp.vec3
    """Lower corner of the target box [m] (``task.target_low``)."""
    target_high: wp.vec3
    """Upper corner of the target box [m] (``task.target_high``)."""
    joint_q: wp.array2d(dtype=float)
    """Joint angles [rad] (events may write them in a reset event)."""


REACH_TERMS = TermSet("reach", Arm)
"""Reward terms of reach: Warp functions ``(x: Arm, i: int) -> float``."""
REACH_TERMINATIONS = TerminationSet("reach termination", Arm)
"""Termination terms of reach: Warp functions ``(x: Arm, i: int) -> bool`` (``task.terminations``; none built in,
:func:`reached` on offer). The step kernel fuses them; the differentiable model and the MuJoCo twin end their
episodes on the same ones."""
REACH_EVENTS = EventSet("reach event", Arm)
"""Event terms of reach: Warp functions ``(x: Arm, i: int, s: wp.uint32) -> wp.uint32`` by mode
(:data:`horde.envs.events.EVENT_MODES`; startup events are not run by reach): ``task.episode_events``,
``task.events`` (interval), ``task.reset_events``."""


@wp.func
def draw_target(x: Arm, i: int, s: wp.uint32) -> wp.uint32:
    """A target uniform in the box ``task.target_low`` to ``task.target_high`` [m]."""
    px = wp.randf(s, x.target_low[0], x.target_high[0])
    py = wp.randf(s, x.target_low[1], x.target_high[1])
    pz = wp.randf(s, x.target_low[2], x.target_high[2])
    x.target[i] = wp.vec3(px, py, pz)
    return s


REACH_EVENTS.term(draw_target, name="target", mode="episode")
REACH_EVENTS.term(draw_target, name="retarget", mode="interval")
"""The target draw, once per episode (``target``, in ``task.episode_events`` by default) or every ``task.events``
seconds (``retarget``: a moving target)."""


@wp.func
def _distance(x: Arm, i: int) -> float:
    ee = wp.transform_point(x.body_q[i, x.ee_body], x.ee_offset)
    return wp.where(x.unstable[i], 0.0, wp.length(x.target[i] - ee))


@REACH_TERMS.term
def distance(x: Arm, i: int) -> float:
    """End effector to target [m]."""
    return _distance(x, i)


@REACH_TERMS.term(bounds={"std": {"gt": 0}})
def precision(x: Arm, i: int, std: float = 0.05) -> float:
    """1 - tanh(distance / std) [std: m] (``task.reward_params.precision.std``)."""
    return wp.where(x.unstable[i], 0.0, 1.0 - wp.tanh(_distance(x, i) / std))


@REACH_TERMS.term
def action_rate(x: Arm, i: int) -> float:
    """sum (a - a_prev)^2 of clipped actions."""
    return clipped_action_rate(x.actions, x.last_actions, i)


@REACH_TERMS.term
def joint_vel(x: Arm, i: int) -> float:
    """sum qd^2 [rad^2/s^2]."""
    vel = float(0.0)
    for k in range(x.joint_qd.shape[1]):
        vel += wp.where(x.unstable[i], 0.0, x.joint_qd[i, k] * x.joint_qd[i, k])
    return vel


@REACH_TERMINATIONS.term(bounds={"distance": {"gt": 0}})
def reached(x: Arm, i: int, distance: float = 0.02) -> bool:
    """A success that ends the episode: the end effector within ``distance`` [m] of the target (add it to
    ``task.terminations``)."""
    return _distance(x, i) < distance and not x.unstable[i]




# --- observation terms: (x, i, k) -> column k's raw value, written by horde.envs.obs_writer ------------------------
@wp.func
def _ee(x: Arm, i: int) -> wp.vec3:
    return wp.transform_point(x.body_q[i, x.ee_body], x.ee_offset)


@wp.func
def _obs_joint_pos(x: Arm, i: int, k: int) -> float:
    return x.joint_q[i, k]


@wp.func
def _obs_joint_vel(x: Arm, i: int, k: int) -> float:
    return x.joint_qd[i, k]


@wp.func
def _obs_ee_pos(x: Arm, i: int, k: int) -> float:
    return _ee(x, i)[k]


@wp.func
def _obs_target_pos(x: Arm, i: int, k: int) -> float:
    return x.target[i][k]


@wp.func
def _obs_target_rel_ee(x: Arm, i: int, k: int) -> float:
    return x.target[i][k] - _ee(x, i)[k]


@wp.func
def _obs_last_action(x: Arm, i: int, k: int) -> float:
    return x.last_actions[i, k]


def reach_observation_terms(joints: tuple[str, ...]) -> tuple[ObsTerm, ...]:
    """Joint angles (absolute) and rates, end effector, target and their difference, the last actions; while a
    world is unsound its physics columns read 0 (the error: the target)."""
    xyz = ("x", "y", "z")
    return (ObsTerm("joint_pos", source="joint_pos", columns=tuple(f"pos_{j}" for j in joints), unit="rad",
                    frame="joint", joints=joints, func=_obs_joint_pos, fallback=0.0),
            ObsTerm("joint_vel", source="joint_vel", columns=tuple(f"vel_{j}" for j in joints), unit="rad/s",
                    frame="joint", joints=joints, func=_obs_joint_vel, fallback=0.0),
            ObsTerm("ee_pos", source="ee_pos", columns=tuple(f"ee_{a}" for a in xyz), unit="m", frame="world",
                    func=_obs_ee_pos, fallback=0.0),
            ObsTerm("target_pos", source="goal_pos", columns=tuple(f"target_{a}" for a in xyz), unit="m",
                    frame="world", func=_obs_target_pos),
            ObsTerm("target_rel_ee", source="goal_rel_ee", columns=tuple(f"error_{a}" for a in xyz), unit="m",
                    frame="world", func=_obs_target_rel_ee, fallback=_obs_target_pos),
            ObsTerm("last_action", source="last_action", columns=tuple(f"last_action_{j}" for j in joints), unit="1",
                    joints=joints, func=_obs_last_action))
