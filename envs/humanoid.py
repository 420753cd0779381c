"""Humanoid: run forward (+x) without falling. Newton's ``nv_humanoid.xml`` (loaded from the installed newton package).

Observations: torso height [m], gravity direction in the torso frame, torso linear [m/s] and angular [rad/s]
velocity in the torso frame, 21 joint angles [rad], 21 joint rates [rad/s], the 21 previous actions. Actions: joint
torques in [-1, 1] x ``action_scale`` [N m] (``action_mode=torque``: the MJCF's motor gears), or PD position
targets (``action_mode=pd``). 50 Hz control (4 x 5 ms substeps), 1000 steps. Reward: forward velocity, an alive
bonus, a control cost, a failure penalty. The episode fails when the torso (which carries the head) drops below
``task.termination_params.torso_low.height`` or turns upside down (termination terms, :data:`HUMANOID_TERMINATIONS`),
or when the physics health check flags the world. Kernels, reward terms
and the env's launches are shared with the ant (:mod:`horde.envs.locomotion`); this file holds the humanoid's
constants and config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from horde.envs.core import TaskConfig
from horde.envs.locomotion import (ROOT_COORDS, TERMINATIONS, LocomotionEnv, build_locomotion_world,
                                   locomotion_terminations, migrate_termination_fields, obs_names)
from horde.envs import render
from horde.envs.registry import TaskSpec, register_task
from horde.sim.actuation import ACTION_MODES
from horde.sim.fields import bounded, bounded_list, choice
from horde.sim.newton_world import NewtonWorld, SimConfig

__all__ = ["GEARS", "HUMANOID_TERMINATIONS", "JOINTS", "OBS_NAMES", "HumanoidConfig", "HumanoidEnv", "build_world"]

JOINTS = ("abdomen_z", "abdomen_y", "abdomen_x", "right_hip_x", "right_hip_z", "right_hip_y", "right_knee",
          "right_ankle_y", "right_ankle_x", "left_hip_x", "left_hip_z", "left_hip_y", "left_knee", "left_ankle_y",
          "left_ankle_x", "right_shoulder1", "right_shoulder2", "right_elbow", "left_shoulder1", "left_shoulder2",
          "left_elbow")
"""Actuated hinges in model (dof) order; Newton merges each body's hinges into one multi-dof joint."""
GEARS = (67.5, 67.5, 67.5, 45.0, 45.0, 135.0, 90.0, 22.5, 22.5, 45.0, 45.0, 135.0, 90.0, 22.5, 22.5, 67.5, 67.5,
         45.0, 67.5, 67.5, 45.0)
"""nv_humanoid's motor gears per joint in ``JOINTS`` order [N m at action 1]."""
OBS_NAMES = obs_names(JOINTS)
HUMANOID_TERMINATIONS = locomotion_terminations("humanoid", height=0.8)
"""The humanoid's termination terms (``task.terminations``): the torso (which carries the head) below 0.8 m
(standing: ~1.3 m; Isaac Lab's value for this asset) or upside down."""


def _scales() -> dict[str, float]:
    # gymnasium Humanoid-v5's weights (forward 1.25, ctrl 0.1 per squared control in [-0.4, 0.4] ~ 0.016 per squared
    # action in [-1, 1]) with Isaac Lab's alive bonus for this asset (2.0, not gymnasium's 5: less reward for
    # standing still) and a failure penalty.
    return {"forward_vel": 1.25, "alive": 2.0, "ctrl": -0.01, "terminated": -2.0}


def _sim() -> SimConfig:
    # MuJoCo-Warp: the only solver measured both stable and usable. CPU, N=64, 1000 control steps of uniform random
    # torques at full gear, 4 x 5 ms substeps, health-check resets counted: mujoco 0; xpbd ~11k (worlds flagged from
    # the first 50 steps on, as with the ant and the arm); featherstone ~5k at 5 ms, 0 at 10 x 2 ms (300 steps) but
    # ~25x slower than mujoco (52 vs ~1,400 env-steps/s). 5 ms, not 10 ms (also 0 resets, 2x cheaper): the MJCF's
    # contact time constant (solref 0.015 s) needs a timestep <= 7.5 ms, or MuJoCo softens its contacts.
    # Capacity: a fallen humanoid touches the floor and itself with most of its 16 capsules (up to ~2 contacts each);
    # the ant-sized default (40 contacts, 100 rows per env) dropped contacts and worlds blew up (53 resets).
    # auto: MuJoCo's C engine on the CPU (9.8x MuJoCo-Warp at N=4096, the same model and contact capacities),
    # MuJoCo-Warp on a GPU; benchmarks/mujoco_batch.py
    return SimConfig(solver="auto", max_contacts=120, max_constraints=400)


@dataclass(kw_only=True)
class HumanoidConfig(TaskConfig):
    """Humanoid model, actuation, termination and reward scales."""

    episode_length: int = 1000
    sim_dt: float = 0.005
    decimation: int = 4
    sim: SimConfig = field(default_factory=_sim)
    """Newton world: solver and its settings, health-check bounds."""
    action_mode: str = choice(ACTION_MODES, default="torque")
    """torque (action x action_scale N m, the MJCF's motors) or pd (position targets around default_joint_pos)."""
    action_scale: list[float] = bounded_list(GEARS, ge=0, same_length=True)
    """Per joint: torque at action +1 [N m] (torque mode; nv_humanoid's motor gears) or target offset [rad] (pd)."""
    joint_stiffness: list[float] = bounded_list([200.0] * 21, ge=0, same_length=True)
    """PD stiffness per joint [N m/rad] (pd mode; a starting point, not tuned or measured)."""
    joint_damping: list[float] = bounded_list([10.0] * 21, ge=0, same_length=True)
    """PD damping per joint [N m s/rad] (pd mode; a starting point, not tuned or measured)."""
    effort_limit: list[float] = bounded_list(GEARS, ge=0, same_length=True)
    """Joint torques are clipped to +- this [N m]."""
    default_joint_pos: list[float] = field(default_factory=lambda: [0.0] * 21)
    """Joint angles of the initial pose [rad], in ``JOINTS`` order."""
    root_height: float = bounded(1.34, gt=0)
    """Initial torso height [m]: the MJCF puts the torso at 0 (feet in the floor); at 1.34 the feet start ~5 cm up."""
    init_joint_pos_range: float = bounded(0.1, ge=0)
    """Initial joint angles are default +- this [rad] (clipped to the joint limits)."""
    init_joint_vel_range: float = bounded(0.1, ge=0)
    """Initial joint and root velocities are +- this [rad/s, m/s]."""
    terminations: list[str] = field(default_factory=lambda: list(TERMINATIONS))
    """Termination terms of HUMANOID_TERMINATIONS (unstable physics always fails an episode); the share of finished
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


def build_world(cfg: HumanoidConfig, num_envs: int, device: str) -> NewtonWorld:
    """The batched humanoid world of ``cfg`` on ``device``."""
    import newton.examples

    return build_locomotion_world(cfg, mjcf=newton.examples.get_asset("nv_humanoid.xml"), joints=JOINTS,
                                  num_envs=num_envs, device=device, root_height=cfg.root_height)


class HumanoidEnv(LocomotionEnv):
    """Batched humanoid on a Newton solver (``cfg.sim.solver``)."""

    joints = JOINTS
    termination_set = HUMANOID_TERMINATIONS
    obs_names = OBS_NAMES
    action_names = JOINTS
    state_names = ROOT_COORDS + JOINTS

    def _build_world(self, cfg: HumanoidConfig, num_envs: int, device: str) -> NewtonWorld:
        return build_world(cfg, num_envs, device)


register_task("humanoid", TaskSpec(
    env_cls=HumanoidEnv,
    config=HumanoidConfig(),
    description="Newton nv_humanoid: run forward along +x; fails when the torso drops below 0.8 m",
    renderer=render.draw_humanoid,
))
