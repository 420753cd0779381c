"""Place: the lift's arm picks the cube and sets it down on a pad drawn on the table, released and resting (a
manipulation task in one file, written as term lists over the lift family: any arm entry, ``robot=``).

The pad is a reset event (:func:`pad_on_table`, in place of the lift's ``target_above_cube``): uniform in the
cube's spawn area, at the cube's resting height, at least 1.5 cube edges from the cube, so that an arm at rest never
scores. The target observation columns show the pad. The episode fails when the cube leaves the table (the lift's
``cube_off_table``). Reward, staged and dense: the lift's ``reaching``, ``reaching_fine``, ``grasp`` and
``lift_height``; :func:`carry` (coarse and fine) pays the cube's closeness to the pad while both fingers hold it;
:func:`placed` pays the cube resting on the pad with neither finger touching it; small action-rate and joint-speed
penalties. Evaluation: :func:`on_pad` (the ``placed`` measure at :data:`PAD_RADIUS`).
"""

# no `from __future__ import annotations`: Warp reads the annotations of the term functions
import torch
import warp as wp

from horde.envs import render
from horde.envs.lift import LiftConfig, LiftEnv
from horde.envs.lift_terms import LIFT_EVENTS, LIFT_TERMS, Manip, cube_pos, lift_term, pinched
from horde.envs.registry import TaskSpec, register_task
from horde.envs.terms import term_values_kernel

__all__ = ["PAD_RADIUS", "on_pad", "place_config"]

PAD_RADIUS = 0.03
"""The cube counts as on the pad with its centre within this of the pad's in the table's plane [m]."""


@LIFT_EVENTS.term(mode="reset", bounds={"min_edges": {"ge": 0}, "tries": {"ge": 1}})
def pad_on_table(x: Manip, i: int, s: wp.uint32, min_edges: float = 1.5, tries: int = 16) -> wp.uint32:
    """The pad: uniform in the cube's spawn area, at its resting height, at least ``min_edges`` cube edges from the
    cube in the table's plane (the first of ``tries`` draws that is; else the farthest of them)."""
    c = cube_pos(x, i)
    need = min_edges * 2.0 * (x.rest_z - x.table_z)
    best = wp.vec3(c[0], c[1], x.rest_z)
    far = float(-1.0)
    for _ in range(tries):
        p = wp.vec3(wp.randf(s, x.spawn_lo[0], x.spawn_hi[0]), wp.randf(s, x.spawn_lo[1], x.spawn_hi[1]), x.rest_z)
        d = wp.length(wp.vec3(p[0] - c[0], p[1] - c[1], 0.0))
        if far < need and d > far:
            best = p
            far = d
    x.target[i] = best
    return s


@lift_term(bounds={"std": {"gt": 0}})
def carry(x: Manip, i: int, std: float = 0.1) -> float:
    """1 - tanh(|pad - cube| / std) while both fingers hold the cube [std: m]: over the pad, then down onto it."""
    return wp.where(pinched(x, i), 1.0 - wp.tanh(wp.length(x.target[i] - cube_pos(x, i)) / std), 0.0)


lift_term(carry, name="carry_fine", params={"std": 0.02})
"""``carry`` with std 0.02 m: the last centimetres."""


@lift_term(bounds={"radius": {"gt": 0}, "height": {"gt": 0}, "speed": {"gt": 0}})
def placed(x: Manip, i: int, radius: float = 0.03, height: float = 0.01, speed: float = 0.05) -> float:
    """1 while the cube rests on the pad: its centre within ``radius`` of the pad's in the table's plane and within
    ``height`` of its resting height [m], slower than ``speed`` [m/s], and neither finger touching anything."""
    d = x.target[i] - cube_pos(x, i)
    free = bool(True)
    for f in range(2):
        free = free and wp.length(x.contact[i, f]) < x.contact_threshold
    still = wp.length(wp.spatial_top(x.body_qd[i, x.cube_body])) < speed
    on = wp.sqrt(d[0] * d[0] + d[1] * d[1]) < radius and wp.abs(d[2]) < height
    return wp.where(on and still and free and not x.unstable[i], 1.0, 0.0)


def _scales() -> dict[str, float]:
    # holding the cube on the pad pays about 20 per step (reaching 2, grasp 2, carry 8 + 8); set down and released
    # about 2 + 30: opening the gripper there is the better move
    return {"reaching": 1.0, "reaching_fine": 1.0, "grasp": 2.0, "lift_height": 2.0, "carry": 8.0, "carry_fine": 8.0,
            "placed": 30.0, "action_rate": -1.0e-3, "joint_vel": -1.0e-4}


def place_config() -> LiftConfig:
    """The lift's config with the pad draw and the place's rewards (every lift field stays an override); 300-step
    episodes (6 s: pick, carry, set down, release)."""
    cfg = LiftConfig()
    cfg.episode_length = 300
    cfg.reset_events = ["pad_on_table"]
    cfg.reward_scales = _scales()
    return cfg


_MEASURE = LIFT_TERMS.resolve(["placed"], {"placed": {"radius": PAD_RADIUS}})


def on_pad(env: LiftEnv) -> torch.Tensor:
    """Per env: the cube resting on the pad and released now (:func:`placed` at :data:`PAD_RADIUS`, whatever the
    config's reward parameters), bool [num_envs]."""
    out = wp.zeros((1, env.num_envs), dtype=float, device=env.dev.warp)
    wp.launch(term_values_kernel(Manip, _MEASURE), env.num_envs, inputs=[env.manip], outputs=[out],
              device=env.dev.warp)
    return wp.to_torch(out)[0] > 0.5


register_task("place", TaskSpec(env_cls=LiftEnv, config=place_config(), renderer=render.draw_lift,
                                description="horde's 7-DoF arm (robot=: any arm entry) picks a cube and sets it down "
                                            "on a pad drawn on the table, released and resting"))
