"""Push: the lift's arm pushes the cube across the table to a target on the table (a new manipulation task in one
file, from the task layer's pieces: the lift's scene and actuation, reward terms of :data:`LIFT_TERMS` written
here, a termination term and the config).

The target is the cube's initial spot moved by up to +-10 cm in x and y, at the cube's resting height; the
gripper stays a single binary action (closed, it makes a flat pusher). The episode fails when the cube leaves the
table. Reward: reach the cube, then the cube's distance to the target (coarse and fine), small action-rate and
joint-speed penalties. Evaluation: :func:`on_target` (cube within ``PUSHED`` of the target).
"""

# no `from __future__ import annotations`: Warp reads the annotations of the term functions
import torch
import warp as wp

from horde.envs import render
from horde.envs.lift import LiftConfig, LiftEnv
from horde.envs.lift_terms import Manip, cube_pos, lift_term
from horde.envs.registry import TaskSpec, register_task

__all__ = ["PUSHED", "on_target", "push_config"]

PUSHED = 0.03
"""The cube counts as on target within this distance of it, in the table's plane [m]."""


@wp.func
def _planar_error(x: Manip, i: int) -> float:
    """|target - cube| in the table's plane [m]."""
    d = x.target[i] - cube_pos(x, i)
    return wp.sqrt(d[0] * d[0] + d[1] * d[1])


@lift_term(bounds={"std": {"gt": 0}})
def push_tracking(x: Manip, i: int, std: float = 0.1) -> float:
    """1 - tanh(|target - cube|_xy / std) [std: m]: pays from the first centimetre the cube moves the right way."""
    return wp.where(x.unstable[i], 0.0, 1.0 - wp.tanh(_planar_error(x, i) / std))


lift_term(push_tracking, name="push_fine", params={"std": 0.02})
"""``push_tracking`` with std 0.02 m: the last centimetres."""


def _scales() -> dict[str, float]:
    return {"reaching": 1.0, "push_tracking": 5.0, "push_fine": 5.0, "action_rate": -1.0e-3, "joint_vel": -1.0e-4}


def push_config() -> LiftConfig:
    """The lift's config with the push's targets and rewards (every lift field stays an override): targets on the
    table (the cube's resting height: its half edge above the top, ``target_on_table``), up to 10 cm from the cube's
    initial spot."""
    cfg = LiftConfig()
    cfg.target_on_table = True
    cfg.target_xy = [0.1, 0.1]
    cfg.reward_scales = _scales()
    return cfg


def on_target(env: LiftEnv) -> torch.Tensor:
    """Per env: the cube within :data:`PUSHED` of the target in the table's plane, bool [num_envs]."""
    cube = env.observation_sources()["object_pos"]
    return torch.linalg.vector_norm((env.target - cube)[:, :2], dim=-1) < PUSHED


register_task("push", TaskSpec(env_cls=LiftEnv, config=push_config(), renderer=render.draw_lift,
                               description="horde's 7-DoF arm pushes a cube across a table to a random target on it"))
