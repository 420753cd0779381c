"""Left-right symmetry of a legged robot: the mirror map of its observations and actions, for rsl-rl's symmetry
augmentation and mirror loss (``algo.symmetry.*``).

Nothing is written by hand per task. The map comes from the robot config and the model:

* joints pair by name (``LeggedRobot.mirror_names``: ``left``/``right``, ``FL``/``FR``, ...; a joint whose name
  names no side, such as ``waist_yaw_joint``, is its own mirror);
* a joint's sign comes from its axis at the default pose. Reflecting the robot across its sagittal (x-z) plane
  turns a rotation by ``q`` about axis ``a`` into a rotation by ``-q`` about ``M a`` (``M = diag(1, -1, 1)``), so the
  partner joint with axis ``b`` moves by ``-(b . M a) q``: pitch joints (axis along y) keep their sign, roll and yaw
  joints (x, z) flip it;
* every observation then mirrors by its name: base velocities, gravity and commands by the reflection (angular
  velocity is a pseudo-vector: x and z flip), ``pos_``/``vel_``/``last_action_<joint>`` like the joint, per-joint and
  per-foot privileged terms by the partner without a sign, height-scan points by the point at ``(x, -y)``, the
  gait clock (``gait_phase_sin``/``_cos``, the first foot's phase) by its value half a cycle on (the sign flips):
  mirroring swaps the feet, so the first foot's phase becomes its partner's, which the robot's ``gait_offsets``
  put half a cycle apart;
* a user's observation terms (``task.extra_observations``) by the rule they declare: each column its own image,
  unchanged (``mirror="even"``) or negated (``"odd"``);
* a term's past frames (``task.observation_params.<term>.history``: columns ``<column>@-<lag>``) as its current
  frame, each within its own frame (the image of ``pos_FL_hip@-2`` is the partner's ``pos_FR_hip@-2``);
* the actions (the acting joints only, under ``task.action_joints=legs``) like the joints they drive.

A name the mirror does not know fails with one line naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from horde.envs.observations import history_column, split_history_column

__all__ = ["Mirror", "joint_mirror", "mirror_name", "observation_mirror", "subset_mirror", "task_mirror"]

REFLECT = np.diag([1.0, -1.0, 1.0])
"""Reflection across the base's sagittal (x-z) plane."""

BASE_SIGNS = {"lin_vel_x": 1.0, "lin_vel_y": -1.0, "lin_vel_z": 1.0,
              "ang_vel_x": -1.0, "ang_vel_y": 1.0, "ang_vel_z": -1.0,
              "gravity_x": 1.0, "gravity_y": -1.0, "gravity_z": 1.0,
              "cmd_vx": 1.0, "cmd_vy": -1.0, "cmd_yaw_rate": -1.0}
"""Base-frame observations: each is its own mirror, with this sign."""

JOINT_SIGNED = ("pos_", "vel_", "last_action_")
"""Per-joint observations that mirror like the joint angle (partner joint, the joint's sign)."""
JOINT_UNSIGNED = ("motor_strength_", "stiffness_scale_", "damping_scale_")
"""Per-joint privileged terms: the partner joint's value, no sign."""
BODY_UNSIGNED = ("contact_force_",)
"""Per-body magnitudes: the partner body's value."""
SCALARS = ("friction", "added_base_mass", "base_height")
"""Symmetric scalars: their own mirror."""
HALF_CYCLE = ("gait_phase_sin", "gait_phase_cos")
"""The gait clock: its own column, sign flipped (sin and cos of a phase half a cycle on)."""


def mirror_name(name: str, pairs: Sequence[tuple[str, str]]) -> str:
    """``name`` with its side swapped by the first pair whose either half occurs in it; unchanged when none does."""
    for a, b in pairs:
        if a in name:
            return name.replace(a, b)
        if b in name:
            return name.replace(b, a)
    return name


@dataclass
class Mirror:
    """``mirrored[..., k] = sign[k] * x[..., perm[k]]``: an involution on one observation group or the actions."""

    perm: np.ndarray
    sign: np.ndarray
    _tensors: dict = field(default_factory=dict, repr=False, compare=False)

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.device, x.dtype)
        if key not in self._tensors:  # made once per device: apply runs in every PPO mini-batch
            self._tensors[key] = (torch.as_tensor(self.perm, device=x.device),
                                  torch.as_tensor(self.sign, dtype=x.dtype, device=x.device))
        perm, sign = self._tensors[key]
        return x[..., perm] * sign


def joint_mirror(robot) -> Mirror:
    """Partner and sign of every actuated joint of ``robot`` (a :class:`horde.envs.robots.LeggedRobot`), from its
    names and its MJCF's joint axes at the default pose."""
    import mujoco

    joints = list(robot.joints)
    partner = []
    for j in joints:
        m = mirror_name(j, robot.mirror_names)
        if m not in joints:
            raise ValueError(f"robot '{robot.name}': joint '{j}' mirrors to '{m}', which is not one of its joints")
        partner.append(joints.index(m))
    model = mujoco.MjSpec.from_file(robot.mjcf_path()).compile()
    data = mujoco.MjData(model)
    ids = [model.joint(j).id for j in joints]
    for jid, q in zip(ids, robot.default_joint_pos):
        data.qpos[model.jnt_qposadr[jid]] = q
    mujoco.mj_kinematics(model, data)
    axes = np.array([data.xaxis[jid] for jid in ids])
    sign = np.array([-float(axes[partner[k]] @ REFLECT @ axes[k]) for k in range(len(joints))])
    bad = [joints[k] for k in range(len(joints)) if abs(abs(sign[k]) - 1.0) > 1e-3]
    if bad:
        raise ValueError(f"robot '{robot.name}': joints {bad} have no mirror image among its joints (their axes are "
                         "not reflections of their partners'; check mirror_names)")
    return Mirror(np.array(partner), np.round(sign))


def observation_mirror(names: Sequence[str], joints: Sequence[str], joint: Mirror, pairs: Sequence[tuple[str, str]],
                       scan_points: np.ndarray | None = None, own: dict[str, float] | None = None) -> Mirror:
    """The mirror of the observation vector ``names`` (see the module docstring for the rules); ``own`` gives the
    sign of columns that are their own mirror image (a user's observation terms: +1 even, -1 odd)."""
    own = own or {}
    index = {n: k for k, n in enumerate(names)}
    jindex = {j: k for k, j in enumerate(joints)}
    scan_partner = None
    if scan_points is not None and len(scan_points):
        flipped = scan_points * np.array([1.0, -1.0], dtype=scan_points.dtype)
        d = np.abs(flipped[:, None, :] - scan_points[None, :, :]).sum(-1)
        scan_partner = d.argmin(1)
        if not np.all(d[np.arange(len(d)), scan_partner] < 1e-5):
            raise ValueError("the height-scan grid is not symmetric about the base's x axis")
    perm, sign = np.zeros(len(names), dtype=np.int64), np.ones(len(names))
    for k, full in enumerate(names):
        name, lag = split_history_column(full)  # a past frame mirrors as its term's column, to the same frame
        if name in own:
            image, sign[k] = name, own[name]
        elif name in BASE_SIGNS:
            image, sign[k] = name, BASE_SIGNS[name]
        elif name in SCALARS:
            image = name
        elif name in HALF_CYCLE:
            image, sign[k] = name, -1.0
        elif name.startswith("height_scan_") and scan_partner is not None:
            image = f"height_scan_{scan_partner[int(name.removeprefix('height_scan_'))]}"
        elif (prefix := next((p for p in JOINT_SIGNED + JOINT_UNSIGNED if name.startswith(p)), None)) is not None \
                and name.removeprefix(prefix) in jindex:
            j = jindex[name.removeprefix(prefix)]
            image = prefix + joints[int(joint.perm[j])]
            sign[k] = joint.sign[j] if prefix in JOINT_SIGNED else 1.0
        elif (prefix := next((p for p in BODY_UNSIGNED if name.startswith(p)), None)) is not None:
            image = prefix + mirror_name(name.removeprefix(prefix), pairs)
        else:
            raise ValueError(f"observation '{full}' has no known mirror image")
        perm[k] = index[history_column(image, lag)]
    return Mirror(perm, sign)


def subset_mirror(joint: Mirror, joints: Sequence[str], names: Sequence[str]) -> Mirror:
    """``joint`` (the mirror of every joint in ``joints``) restricted to the columns ``names``, a subset of the
    joints closed under mirroring (the acting joints)."""
    index = {n: k for k, n in enumerate(names)}
    perm, sign = np.zeros(len(names), dtype=np.int64), np.ones(len(names))
    for k, name in enumerate(names):
        j = list(joints).index(name)
        partner = joints[int(joint.perm[j])]
        if partner not in index:
            raise ValueError(f"action joint '{name}' mirrors to '{partner}', which does not act")
        perm[k], sign[k] = index[partner], joint.sign[j]
    return Mirror(perm, sign)


def _check_gait_offsets(robot) -> None:
    """The gait clock's mirror rule holds when every foot is half a cycle from its mirror image."""
    feet, offsets = list(robot.feet), robot.foot_phase_offsets
    for f, foot in enumerate(feet):
        partner = mirror_name(foot, robot.mirror_names)
        if partner not in feet or abs((offsets[feet.index(partner)] - offsets[f]) % 1.0 - 0.5) > 1e-6:
            raise ValueError(f"robot '{robot.name}': foot '{foot}' is not half a gait cycle from its mirror image "
                             f"'{partner}' (gait_offsets {offsets}): the gait clock has no mirror image")


class TaskMirror:
    """rsl-rl's ``data_augmentation_func`` for one env: appends the mirrored samples of every observation group
    and of the actions (``[B, ...]`` in, ``[2B, ...]`` out)."""

    def __init__(self, groups: dict[str, Mirror], actions: Mirror) -> None:
        self.groups, self.actions = groups, actions

    def __call__(self, env=None, obs=None, actions: torch.Tensor | None = None):
        out_obs = None
        if obs is not None:
            mirrored = obs.clone()
            for key, m in self.groups.items():
                if key in mirrored.keys():
                    mirrored[key] = m.apply(obs[key])
            out_obs = torch.cat([obs, mirrored], dim=0)
        out_actions = None if actions is None else torch.cat([actions, self.actions.apply(actions)], dim=0)
        return out_obs, out_actions


def task_mirror(core, task: str = "") -> TaskMirror:
    """The mirror of a velocity-tracking env core (every legged robot): its ``policy`` and ``critic`` groups and its
    actions. Other tasks have no left-right mirror: a one-line error says so."""
    robot = getattr(core, "robot", None)
    if robot is None or not hasattr(robot, "mirror_names"):
        name = task or type(core).__name__
        raise ValueError(f"task '{name}' has no left-right mirror: symmetry works on the legged velocity tasks "
                         "(quadruped, quadruped-rough, quadruped-rough-perceptive, g1-velocity)")
    joint = joint_mirror(robot)
    if any(name in HALF_CYCLE for name in core.obs_names):
        _check_gait_offsets(robot)
    scan = getattr(core, "scan_points", None)
    own = {}
    for e in getattr(core, "extras", ()):  # the user's observation terms, by their declared mirror rule
        if e.mirror is None:
            raise ValueError(f"observation term '{e.name}' declares no mirror (mirror='even' or 'odd' in its "
                             "registration): symmetry needs one")
        own.update({c: 1.0 if e.mirror == "even" else -1.0 for c in e.term().columns})
    groups = {"policy": observation_mirror(core.obs_names, robot.joints, joint, robot.mirror_names, scan, own)}
    if core.critic_names:
        groups["critic"] = observation_mirror(core.critic_names, robot.joints, joint, robot.mirror_names, scan, own)
    actions = (joint if tuple(core.action_names) == tuple(robot.joints)
               else subset_mirror(joint, robot.joints, core.action_names))
    return TaskMirror(groups, actions)
