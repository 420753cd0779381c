"""Ant: run forward (+x) as fast as possible. Newton's ``nv_ant.xml`` (loaded from the installed newton package).

Observations: torso height [m], gravity direction in the torso frame, torso linear [m/s] and angular [rad/s]
velocity in the torso frame, 8 joint angles [rad], 8 joint rates [rad/s], the 8 previous actions. Actions: joint
torques in [-1, 1] x ``action_scale`` [N m] (``action_mode=torque``, the classic Ant), or PD position targets
(``action_mode=pd``). 50 Hz control (2 x 10 ms substeps), 1000 steps. The episode fails when the torso drops below
``task.termination_params.torso_low.height`` or turns upside down (termination terms, :data:`ANT_TERMINATIONS`), or
when the physics health check flags the world. Kernels, reward terms
and the env's launches are shared with the humanoid (:mod:`horde.envs.locomotion`); this file holds the ant's
constants and config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from horde.envs.core import TaskConfig
from horde.envs.locomotion import (ROOT_COORDS, ROOT_DOFS, TERMINATIONS, TERMS, LocomotionEnv, build_locomotion_world,
                                   locomotion_terminations, migrate_termination_fields, obs_names)
from horde.envs import render
from horde.envs.registry import TaskSpec, register_task
from horde.sim.actuation import ACTION_MODES
from horde.sim.fields import bounded, bounded_list, choice
from horde.sim.newton_world import NewtonWorld, SimConfig

JOINTS = ("hip_1", "ankle_1", "hip_2", "ankle_2", "hip_3", "ankle_3", "hip_4", "ankle_4")
OBS_NAMES = obs_names(JOINTS)
ANT_TERMINATIONS = locomotion_terminations("ant", height=0.31)
"""The ant's termination terms: Warp functions ``(x: Runner, i: int) -> bool`` (``task.terminations``); a term of
your own is ``@ANT_TERMINATIONS.term`` on such a function plus its name in ``task.terminations``."""
__all__ = ["ANT_TERMINATIONS", "JOINTS", "OBS_NAMES", "ROOT_COORDS", "ROOT_DOFS", "TERMS", "AntConfig", "AntEnv",
           "build_world"]


def _scales() -> dict[str, float]:
    return {"forward_vel": 1.0, "alive": 0.5, "ctrl": -0.05, "terminated": -1.0}


def _sim() -> SimConfig:
    # MuJoCo-Warp: the only solver measured stable on this ant under full random torques at a 10 ms substep
    # (XPBD and Featherstone went non-finite within 20 control steps at 5 ms and 2 ms: the ant's light limbs
    # rely on joint armature, which XPBD ignores); see benchmarks/newton_throughput.py and the report.
    # auto = MuJoCo: the C engine on the CPU (mujoco-c: 5.6x MuJoCo-Warp at N=4096, 0 health-check resets in the
    # contract's 1,000 random steps), MuJoCo-Warp on a GPU; benchmarks/mujoco_batch.py
    return SimConfig(solver="auto")


@dataclass(kw_only=True)
class AntConfig(TaskConfig):
    """Ant model, actuation, termination and reward scales."""

    episode_length: int = 1000
    sim_dt: float = 0.01
    decimation: int = 2
    sim: SimConfig = field(default_factory=_sim)
    """Newton world: solver and its settings, health-check bounds."""
    action_mode: str = choice(ACTION_MODES, default="torque")
    """torque (the classic Ant: action x action_scale N m) or pd (position targets around default_joint_pos)."""
    action_scale: list[float] = bounded_list([15.0] * 8, ge=0, same_length=True)
    """Per joint: torque at action +1 [N m] (torque mode; nv_ant's motor gear) or target offset [rad] (pd mode)."""
    joint_stiffness: list[float] = bounded_list([20.0] * 8, ge=0, same_length=True)
    """PD stiffness per joint [N m/rad] (pd mode)."""
    joint_damping: list[float] = bounded_list([1.0] * 8, ge=0, same_length=True)
    """PD damping per joint [N m s/rad] (pd mode)."""
    effort_limit: list[float] = bounded_list([15.0] * 8, ge=0, same_length=True)
    """Joint torques are clipped to +- this [N m]."""
    default_joint_pos: list[float] = field(default_factory=lambda: [0.0, 1.0, 0.0, -1.0, 0.0, -1.0, 0.0, 1.0])
    """Joint angles of the initial pose [rad] (nv_ant's init_qpos), in ``JOINTS`` order."""
    init_joint_pos_range: float = bounded(0.1, ge=0)
    """Initial joint angles are default +- this [rad] (clipped to the joint limits)."""
    init_joint_vel_range: float = bounded(0.1, ge=0)
    """Initial joint and root velocities are +- this [rad/s, m/s]."""
    terminations: list[str] = field(default_factory=lambda: list(TERMINATIONS))
    """Termination terms of ANT_TERMINATIONS (unstable physics always fails an episode); the share of finished
    episodes each one ended is logged as ``termination/<name>``."""
    termination_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the configured termination terms, by name, over their functions' defaults
    (``task.termination_params.torso_low.height=0.25``; ``func`` makes a new term of a registered one)."""
    events: dict[str, float] = field(default_factory=dict)
    """Interval event terms of LOCOMOTION_EVENTS by name, each with its interval [s] (run before the physics on the
    steps of an episode that are multiples of it). E.g. ``{kick: 2.0}``: a push every 2 s."""
    reset_events: list[str] = field(default_factory=list)
    """Reset event terms of LOCOMOTION_EVENTS, in order: run in every reset of an env after the world has drawn its
    initial state and before its first observation (``[start_kick]``)."""
    event_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the configured event terms, by name, over their functions' defaults
    (``task.event_params.kick.speed=1.0``; ``func`` makes a new term of a registered one)."""
    reward_scales: dict[str, float] = field(default_factory=_scales)

    @staticmethod
    def migrate(task: dict) -> dict:
        """A config saved before ``termination_height`` and ``min_up`` became term parameters, as today's."""
        return migrate_termination_fields(task)


def build_world(cfg: AntConfig, num_envs: int, device: str) -> NewtonWorld:
    """The batched ant world of ``cfg`` on ``device``."""
    import newton.examples

    return build_locomotion_world(cfg, mjcf=newton.examples.get_asset("nv_ant.xml"), joints=JOINTS,
                                  num_envs=num_envs, device=device)


class AntEnv(LocomotionEnv):
    """Batched Ant on a Newton solver (``cfg.sim.solver``)."""

    joints = JOINTS
    termination_set = ANT_TERMINATIONS
    obs_names = OBS_NAMES
    action_names = JOINTS
    state_names = ROOT_COORDS + JOINTS

    def _build_world(self, cfg: AntConfig, num_envs: int, device: str) -> NewtonWorld:
        return build_world(cfg, num_envs, device)


register_task("ant", TaskSpec(
    env_cls=AntEnv,
    config=AntConfig(),
    description="Newton nv_ant: run forward along +x; fails when the torso drops below 0.31 m or flips",
    renderer=render.draw_ant,
))
