"""The lift's constants (action modes, horde's arm's joints), its config (:class:`LiftConfig`) and the arm it runs
(:func:`arm_of`: the ``robot`` entry of :mod:`horde.envs.arms` with the config's overrides), beside
:mod:`horde.envs.lift`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from horde.envs.arms import ARMS, ArmRobot, resolve_arm
from horde.envs.core import TaskConfig
from horde.envs.lift_actions import ARM_ACTIONS, EE_ACTIONS, GRIPPER_ACTIONS, IK_RANGE  # noqa: F401 (re-exported)
from horde.sim.fields import bounded, bounded_list, choice
from horde.sim.newton_world import SimConfig

__all__ = ["ARM", "EE_ACTIONS", "FINGERS", "GRIPPER_MJCF", "HAND_DOWN", "IK_RANGE", "JOINTS", "LiftConfig",
           "OBSERVATIONS", "action_names_of", "arm_of"]

GRIPPER_MJCF = Path(__file__).resolve().parents[1] / "assets" / "arm7_gripper.xml"
"""horde's own arm's MJCF (the ``arm7`` entry's)."""
ARM = ARMS["arm7"].arm_joints
"""horde's own arm's joints (``robot=arm7``); an entry's are ``arm_of(cfg).arm_joints``."""
FINGERS = ARMS["arm7"].fingers
JOINTS = ARM + FINGERS
HAND_DOWN = ARMS["arm7"].hand_down
"""Hand orientation horde's arm's IK holds (x, y, z, w): the default pose's, half a turn about y (palm z axis
down); an entry's is ``hand_down``."""


OBSERVATIONS = ("joint_pos", "joint_vel", "ee_pos", "cube_pos", "cube_rel_ee", "target_pos", "target_rel_cube",
                "cube_yaw", "ik_lead", "gripper_command", "last_action")
"""The lift family's built-in observation terms (:mod:`horde.envs.lift_obs`), the default ``task.observations``."""


def action_names_of(arm: str, gripper: str, robot: ArmRobot | str = "arm7") -> tuple[str, ...]:
    """Action columns of an ``arm`` and ``gripper`` mode on the arm ``robot`` (an entry or its name)."""
    entry = resolve_arm(robot) if isinstance(robot, str) else robot
    return (*ARM_ACTIONS.get(arm).actions(entry),
            *(entry.fingers if GRIPPER_ACTIONS.get(gripper).per_finger else ("gripper",)))


def _optional_list(*, length: tuple[int, int | None] = (1, None), **bounds: float) -> Any:
    """A list field left unset (None: the arm entry's value) whose values, when set, satisfy ``bounds``."""
    return field(default=None, metadata={"item_bounds": bounds, "length": length})


def arm_of(cfg: LiftConfig) -> ArmRobot:
    """The arm ``cfg`` runs: its ``robot`` entry with the config's set (not None) fields in place of the entry's;
    ``target_on_table`` puts the targets at the cube's resting height."""
    arm = resolve_arm(cfg.robot)
    mine = {"default_joint_pos": cfg.default_joint_pos, "action_scale": cfg.action_scale,
            "stiffness": cfg.joint_stiffness, "damping": cfg.joint_damping, "effort_limit": cfg.effort_limit,
            "gripper_open": cfg.gripper_open}
    scene = {"cube_size": cfg.cube_size, "table_height": cfg.table_height, "cube_x": cfg.cube_x, "cube_y": cfg.cube_y,
             "target_height": cfg.target_height}
    scene = {k: tuple(v) if isinstance(v, list) else v for k, v in scene.items() if v is not None}
    if cfg.target_on_table:
        half = 0.5 * scene.get("cube_size", arm.scene.cube_size)
        scene["target_height"] = (half, half)
    return dataclasses.replace(arm, scene=dataclasses.replace(arm.scene, **scene),
                               **{k: tuple(v) if isinstance(v, list) else v for k, v in mine.items() if v is not None})


def _scales() -> dict[str, float]:
    # Staged and dense (RECIPES.md): reach the cube, close on it, raise it (paid in proportion to the height while
    # both fingers press on it), then Isaac Lab's lifted bonus and goal terms gated on the lift. No penalty for a
    # dropped cube (the episode just ends, as in Isaac Lab): with -10 a first CPU run kept the gripper 9 cm away.
    return {"reaching": 1.0, "reaching_fine": 1.0, "grasp": 2.0, "lift_height": 10.0, "lifting": 15.0,
            "target_tracking": 16.0, "target_fine": 5.0, "action_rate": -1.0e-3, "joint_vel": -1.0e-4}


def _sim() -> SimConfig:
    # box-box contacts (fingers and cube, cube and table) come in fours to eights: with 32 per env MuJoCo-Warp
    # reported narrowphase overflow (dropped contacts) once a policy pressed the gripper on the cube
    # auto: MuJoCo's C engine on the CPU, MuJoCo-Warp on a GPU (the capacities below are MuJoCo-Warp's)
    return SimConfig(solver="auto", max_contacts=96, max_constraints=576)


@dataclass(kw_only=True)
class LiftConfig(TaskConfig):
    """Arm and gripper actuation, the cube and table, target heights, reward terms."""

    def __post_init__(self) -> None:
        # Only a check, nothing written: the per-joint lists' length is the chosen arm's, which the schema's own list
        # rules cannot know (an unknown robot is left to the choice check, which lists the valid ones).
        arm = ARMS.get(self.robot)
        if arm is None:
            return
        for key, joints in (("default_joint_pos", arm.joints), ("joint_stiffness", arm.joints),
                            ("joint_damping", arm.joints), ("effort_limit", arm.joints),
                            ("action_scale", arm.arm_joints)):
            value = getattr(self, key)
            if value is not None and len(value) != len(joints):
                shown = "[" + ", ".join(str(v) for v in value) + "]"
                raise ValueError(f"task.{key}={shown}: needs {len(joints)} values (one per "
                                 f"{'arm ' if joints == arm.arm_joints else ''}joint of robot={self.robot}), "
                                 f"got {len(value)}")

    episode_length: int = 250
    sim_dt: float = 0.005
    decimation: int = 4
    sim: SimConfig = field(default_factory=_sim)
    """Newton world: solver and its settings, health-check bounds."""
    robot: str = choice(lambda: tuple(ARMS), default="arm7")
    """An arm of horde.envs.arms: arm7 (horde's 7-DoF arm), yam (i2rt YAM, mjlab's wheel), so101 (LeRobot's SO-101,
    pip install horde[robots]). The fields below left null take the arm's values."""
    arm: str = choice(lambda: ARM_ACTIONS.names(), default="ee_delta")
    """Arm action term (:mod:`horde.envs.lift_actions`): ``ee_delta`` (end-effector target deltas through
    differential IK), ``joint`` (PD targets), ``joint_delta`` (PD target deltas, ``joint_step`` per control step), or
    one registered in ``ARM_ACTIONS``."""
    gripper: str = choice(lambda: GRIPPER_ACTIONS.names(), default="binary")
    """Gripper action term: ``binary`` (one, open at >= 0), ``delta`` (one, integrated), ``independent`` (per
    finger), or one registered in ``GRIPPER_ACTIONS``."""
    gripper_open: float | None = bounded(None, gt=0)
    """Finger target when open [m] (a jaw's [rad]); null: the arm's (arm7 0.045: a 9 cm opening, wider than the
    cube's 7.07 cm diagonal)."""
    gripper_rate: float = bounded(0.25, gt=0, le=1)
    """gripper=delta: opening command change per control step at action +-1 (share of the stroke)."""
    ee_step: float = bounded(0.02, gt=0, le=0.1)
    """arm=ee_delta: end-effector target step per control step at action +-1 [m]."""
    ee_lead: float = bounded(0.05, gt=0)
    """arm=ee_delta: the end-effector target stays within this of the end effector [m] (no wind-up against the
    table or the cube)."""
    ik_damping: float = bounded(0.05, gt=0)
    """arm=ee_delta: damping of the least-squares IK step [m]."""
    ik_gain: float = bounded(0.1, ge=0, le=1)
    """arm=ee_delta: share of the remaining end-effector error (position and the hand-down orientation) added to
    the joint targets per control step: the integral that removes the PD law's sag under gravity."""
    ik_lead: float = bounded(0.3, gt=0)
    """arm=ee_delta and joint_delta: joint targets stay within this of the joint positions [rad]."""
    joint_step: float = bounded(0.05, gt=0, le=0.5)
    """arm=joint_delta: a joint's target moves by up to this per control step at action +-1 [rad]."""
    default_joint_pos: list[float] | None = _optional_list()
    """Initial pose: arm joints [rad] (gripper above the table, pointing down; the PD targets at action 0 with
    arm=joint), then the driven fingers [m]; null: the arm's."""
    action_scale: list[float] | None = _optional_list(ge=0)
    """arm=joint: arm target offset at action +-1 [rad], one per arm joint; null: the arm's (arm7 0.5)."""
    joint_stiffness: list[float] | None = _optional_list(ge=0)
    """PD stiffness [N m/rad, N/m] per actuated joint; null: the arm's."""
    joint_damping: list[float] | None = _optional_list(ge=0)
    """PD damping [N m s/rad, N s/m] per actuated joint; null: the arm's."""
    effort_limit: list[float] | None = _optional_list(ge=0)
    """Torque [N m] and finger force [N] limits per actuated joint; null: the arm's."""
    init_joint_pos_range: float = bounded(0.1, ge=0)
    """Initial arm joint angles are default +- this [rad]."""
    cube_size: float | None = bounded(None, gt=0)
    """Edge of the cube [m]; null: the arm's (arm7 0.05, yam 0.04, so101 0.03)."""
    cube_density: float = bounded(400.0, gt=0)
    """[kg/m^3] (0.05 kg for a 5 cm cube)."""
    table_height: float | None = bounded(None, gt=0)
    """Height of the table top [m]; null: the arm's (arm7 0.1: the table spans x 0.25-0.75 m, y +-0.35 m in front of
    the arm's base)."""
    cube_x: list[float] | None = _optional_list(length=(2, 2))
    """Range (lo, hi) of the cube's initial x on the table [m] (its yaw is drawn in +-45 degrees); null: the arm's
    (arm7 0.42-0.58)."""
    cube_y: list[float] | None = _optional_list(length=(2, 2))
    """Range (lo, hi) of the cube's initial y [m]; null: the arm's (arm7 +-0.1)."""
    target_height: list[float] | None = _optional_list(length=(2, 2), ge=0)
    """Range of the target's height above the table [m]; the target is above the cube's initial spot; null: the
    arm's (arm7 0.1-0.3)."""
    target_on_table: bool = False
    """Targets at the cube's resting height (the push), in place of ``target_height``."""
    target_xy: list[float] = bounded_list([0.0, 0.0], ge=0, same_length=True)
    """The target's x and y are the cube's initial ones + uniform in +- these [m] (0: right above the cube)."""
    lift_height: float = bounded(0.04, ge=0)
    """The cube counts as lifted more than this above its resting height [m]."""
    lift_span: float = bounded(0.1, gt=0)
    """lift_height term: the height [m] at which it pays its full weight."""
    contact_threshold: float = bounded(0.5, ge=0)
    """A finger is in contact when its contact force exceeds this [N]."""
    reward_scales: dict[str, float] = field(default_factory=_scales)
    """Reward terms of LIFT_TERMS and their weights per control step, in statistics order."""
    terminations: list[str] = field(default_factory=lambda: ["cube_off_table"])
    """Termination terms of LIFT_TERMINATIONS (unstable physics always fails an episode); each one's share of the
    finished episodes is logged as ``termination/<name>``."""
    termination_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the configured termination terms, by name, over their functions' defaults (``func`` makes a
    new term of a registered one); ``task.termination_params.<term>.<param>=v``."""
    reset_events: list[str] = field(default_factory=lambda: ["target_above_cube"])
    """Reset event terms of LIFT_EVENTS, in order: run in every reset of an env after the cube is placed and before
    its first observation; the target draw is one (``target_above_cube``: ``target_height`` and ``target_xy``)."""
    event_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Parameters of the configured reset events, by name, over their functions' defaults (``func`` makes a new
    term of a registered one); ``task.event_params.<term>.<param>=v``."""
    observations: list[str] = field(default_factory=lambda: list(OBSERVATIONS))
    """The policy's observation terms in column order: the built-in ones (:data:`OBSERVATIONS`) and a user's of
    LIFT_OBSERVATIONS (:mod:`horde.envs.lift_obs`); ``policy.json`` and the observation contract follow them."""
    extra_observations: list[str] = field(default_factory=list)
    """A user's observation terms of LIFT_OBSERVATIONS appended after ``observations`` (as the velocity family's):
    ``task.extra_observations=[cube_height]``."""
    observation_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per observation term: its function's parameters (``func`` makes a new term of a registered one) and, for any
    term, ``noise`` (uniform half-width in raw units, training only), ``scale``, ``clip``, ``history`` (frames
    kept, newest first; an int >= 1) and ``delay`` (sensor latency in control steps, training only: an int or
    [min, max], a lag drawn per env and step); ``task.observation_params.<term>.<key>=v``."""
