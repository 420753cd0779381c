"""Rung 3 of the ladder: the exported ONNX policy drives the robot in plain MuJoCo (the C engine, not Newton),
with observations rebuilt from ``policy.json`` alone: the digital-twin check before a real robot.

    horde sim2sim run=<bundle dir or run dir> [episodes=16] [seed=0] [pushes=true]

Everything the loop needs comes from the bundle: the observation's blocks (each a raw source, read from MuJoCo's
state below, with its offset, scale and clip: the robot side's ``build_observation``), action names, type, scale,
offset and clip, PD gains and effort limits, the held joints (``held_joints``: joints no action drives, such as the
G1's waist and arms, under the same PD law at their hold targets), control period and substeps, episode length,
reward scales, initial-state and command ranges, randomization (``task_config``). Only the MJCF comes from horde's
assets. Reported: mean return in MuJoCo, horde's closed-loop mean return (rung 2 of the bundle's parity report), and
their ratio, with the conditions: a run trained with domain randomization runs at its nominal physics (no drawn
masses, friction, gains, motor strengths, action delay or observation noise) and with its pushes, as in training
(``pushes=false`` leaves them out).

The loop is shared; a task brings its twin in its ``TaskSpec`` (``twin``): a small class that loads the task's
MuJoCo model, draws an episode's initial state and commands, reads the task's own observation sources (``sources``,
``raw(data)``; joint angles and rates by name and the last actions are common) and computes its reward terms and
failure rule from MuJoCo state; optionally ``pre_physics`` (events before a step's physics, such as pushes). The
velocity task's twin (:class:`horde.envs.velocity.VelocityTwin`) runs the task's own Warp terms and events on
MuJoCo's state.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np

from horde.deploy.robot.observations import ObservationFrames, build_observation, required_sources
from horde.sim.files import atomic_write_text

if TYPE_CHECKING:
    from horde.deploy.verify import ProgressFn

__all__ = ["MIN_RETURN_RATIO", "SETS_MAX_ERROR_RATIO", "SETS_MIN_UP", "SetMeter", "Sim2SimError", "Sim2SimSetup",
           "conditions", "conditions_text", "load_setup", "passes", "run_sim2sim", "run_sim2sim_sets", "sets_line",
           "summary_line"]

MIN_RETURN_RATIO = 0.8
"""Rung 3 passes when MuJoCo's mean return >= horde's - (1 - this) x |horde's| (ratio >= 0.8 for positive returns)."""


class Sim2SimError(RuntimeError):
    """The bundle cannot be run in MuJoCo; one line."""


# --- the shared part -----------------------------------------------------------------------------------------------
class Joints:
    """The actuated joints of the bundle: the action columns (:attr:`names`, in column order), then the held joints
    (:attr:`held_names`, ``policy.json``'s ``held_joints``), and the PD law of ``policy.json`` for all of them."""

    def __init__(self, model, spec: dict) -> None:
        act, held = spec["action"], spec.get("held_joints") or {}
        self.names = list(act["names"])
        self.held_names = list(held.get("names") or [])
        self.all_names = self.names + self.held_names
        """The joints :meth:`torques` drives: the acting ones, then the held ones."""
        ids = []
        for k, j in enumerate(self.all_names):
            try:
                ids.append(model.joint(j).id)
            except KeyError as exc:
                raise Sim2SimError(f"{'action' if k < len(self.names) else 'held'} joint not in the MJCF: "
                                   f"{exc}") from None
        n = len(self.names)
        self.all_qadr = np.array([model.jnt_qposadr[j] for j in ids], dtype=int)
        self.all_dadr = np.array([model.jnt_dofadr[j] for j in ids], dtype=int)
        self.qadr, self.dadr = self.all_qadr[:n], self.all_dadr[:n]
        limited = np.array([bool(model.jnt_limited[j]) for j in ids], dtype=bool)
        self.all_lower = np.where(limited, [model.jnt_range[j][0] for j in ids], -np.inf) if ids else np.zeros(0)
        self.all_upper = np.where(limited, [model.jnt_range[j][1] for j in ids], np.inf) if ids else np.zeros(0)
        self.lower, self.upper = self.all_lower[:n], self.all_upper[:n]
        self.default = np.asarray(act["default_joint_pos"] or act["offset"], dtype=np.float64)
        self.kp, self.kd = np.asarray(spec["pd_gains"]["kp"]), np.asarray(spec["pd_gains"]["kd"])
        self.limit = np.asarray(spec["effort_limits"])
        self.hold = np.asarray(held.get("target") or [], dtype=np.float64)
        """Held joints' PD targets [rad] (their default pose)."""
        self.all_kp = np.concatenate([self.kp, np.asarray(held.get("kp") or [], dtype=np.float64)])
        self.all_kd = np.concatenate([self.kd, np.asarray(held.get("kd") or [], dtype=np.float64)])
        self.all_limit = np.concatenate([self.limit, np.asarray(held.get("effort_limits") or [], dtype=np.float64)])
        velocity = spec.get("velocity_limits")  # the DC-motor model, when the policy trained with it
        self.velocity = np.asarray(velocity, dtype=np.float64) if velocity is not None else None
        self.all_velocity = (None if self.velocity is None else
                             np.concatenate([self.velocity, self._held_velocity_limits(spec)]))
        self.scale, self.offset = np.asarray(act["scale"]), np.asarray(act["offset"])
        self.clip = act["clip"]
        """[lo, hi] the actions are clipped to, or None (a tanh-squashed task: tanh bounds them)."""
        self.squash = act.get("squash", "clip")

    def _held_velocity_limits(self, spec: dict) -> np.ndarray:
        """The DC motor's no-load speed of each held joint [rad/s]: the robot config's (``held_joints`` has none)."""
        if not self.held_names:
            return np.zeros(0)
        from horde.envs.robots import resolve_robot

        robot = resolve_robot((spec.get("task_config") or {}).get("robot", "quad12"))
        return np.array([robot.velocity_limit[robot.joints.index(j)] for j in self.held_names], dtype=np.float64)

    def act(self, actions: np.ndarray) -> np.ndarray:
        """The policy's actions as the env takes them: clipped (when ``policy.json`` clips)."""
        return actions if self.clip is None else np.clip(actions, *self.clip)

    def q(self, data) -> np.ndarray:
        return data.qpos[self.qadr]

    def qd(self, data) -> np.ndarray:
        return data.qvel[self.dadr]

    def set_noisy_default(self, data, pos_range: float, vel_range: float, rng: np.random.Generator) -> None:
        """Default pose + U(-pos_range, pos_range) clipped to the joint range, rates U(-vel_range, vel_range): the
        acting joints, then the held ones (at their hold targets), as the env resets every actuated joint."""
        n = len(self.all_qadr)
        default = np.concatenate([self.default, self.hold])
        data.qpos[self.all_qadr] = np.clip(default + rng.uniform(-pos_range, pos_range, n), self.all_lower,
                                           self.all_upper)
        data.qvel[self.all_dadr] = rng.uniform(-vel_range, vel_range, n) if vel_range > 0 else 0.0

    def target(self, a: np.ndarray) -> np.ndarray:
        """PD target [rad] of the env's actions (tanh-squashed when ``policy.json``'s action says so), clipped to the
        joint range as horde's actuation does."""
        a = np.tanh(a) if self.squash == "tanh" else a
        return np.clip(self.offset + self.scale * a, self.lower, self.upper)

    def torque(self, data, target: np.ndarray) -> np.ndarray:
        """``clip(kp (target - q) - kd qd, -effort, effort)`` [N m] of the acting joints, along the DC motor's
        torque-speed line when the policy trained with one (``velocity_limits``)."""
        return _pd(self.q(data), self.qd(data), target, self.kp, self.kd, self.limit, self.velocity)

    def torques(self, data, target: np.ndarray) -> np.ndarray:
        """:meth:`torque` of every joint in :attr:`all_names`: the acting joints towards ``target``, the held ones
        towards their hold (clipped to the joint range), with their own gains and effort limits."""
        q, qd = data.qpos[self.all_qadr], data.qvel[self.all_dadr]
        n = len(self.names)
        hold = np.clip(self.hold, self.all_lower[n:], self.all_upper[n:])
        return _pd(q, qd, np.concatenate([target, hold]), self.all_kp, self.all_kd, self.all_limit,
                   self.all_velocity)


def _pd(q: np.ndarray, qd: np.ndarray, target: np.ndarray, kp: np.ndarray, kd: np.ndarray, limit: np.ndarray,
        velocity: np.ndarray | None) -> np.ndarray:
    """horde's actuation law (:mod:`horde.sim.actuation`): PD torque [N m] within +- effort, or within the DC motor's
    torque-speed line with ``velocity`` (no-load speeds [rad/s])."""
    tau = kp * (target - q) - kd * qd
    if velocity is None:
        return np.clip(tau, -limit, limit)
    r = qd / velocity
    return np.clip(tau, np.clip(limit * (-1.0 - r), -limit, 0.0), np.clip(limit * (1.0 - r), 0.0, limit))


@dataclass
class Sim2SimSetup:
    """A bundle's ``policy.json`` mapped onto a MuJoCo model: the observation builder, PD law and reward."""

    task: str
    spec: dict
    model: object
    joints: Joints
    twin_cls: type
    joint_adr: dict
    """qpos and qvel address of every joint the observation's joint blocks name."""
    cfg: dict
    """The task config the twins run: ``policy.json``'s, without the pushes when they are switched off."""
    conditions: dict
    """What the MuJoCo episodes run with (:func:`conditions`)."""

    def new_twin(self):
        ctl = self.spec["control"]
        return self.twin_cls(self.model, self.cfg, ctl["sim_dt"] * ctl["decimation"])

    def observe(self, data, twin, last: np.ndarray, frames: ObservationFrames | None = None) -> np.ndarray:
        """Observation vector [obs_dim] (float32) of ``data``: the twin's raw sources, the joints' and the last
        action, through ``policy.json``'s blocks (the robot side's :func:`build_observation`; ``frames``: the
        episode's :class:`ObservationFrames`, which keeps the frames of terms with history, as a robot does)."""
        raw = {**twin.raw(data), "last_action": last}
        for b in self.spec["observation"]["sources"]:
            if b["source"] in ("joint_pos", "joint_vel"):
                k = 0 if b["source"] == "joint_pos" else 1
                state = data.qpos if k == 0 else data.qvel
                raw[b["source"]] = np.array([state[self.joint_adr[j][k]] for j in b["joints"]])
        if frames is not None:
            return frames.build(raw)[0]
        return build_observation(self.spec["observation"], raw)[0]


def _import_run_modules(spec: dict) -> None:
    """Import the modules the bundle's run was trained with (``imports=[...]``: in ``policy.json``'s checkpoint entry,
    or for older bundles in the checkpoint's config), so that a plugin's task, robot or terms are known."""
    from horde.train.checkpoint import load_checkpoint
    from horde.train.config import import_user_modules

    entry = spec.get("checkpoint") or {}
    if "imports" in entry:
        import_user_modules(entry["imports"] or None)
        return
    ckpt = Path(entry.get("file") or "")
    if ckpt.is_file():
        import_user_modules(load_checkpoint(ckpt)["config"].get("imports"))


def conditions(cfg: dict, pushes: dict | None) -> dict:
    """What the MuJoCo episodes of a run trained with ``cfg`` (``task_config``) run with: ``physics`` "nominal" when
    it trained with domain randomization (its draws of masses, friction, PD gains, motor strength and action delay
    and its observation noise are left out), else "as trained"; ``pushes`` the twin's (interval [s], largest
    velocity change [m/s]) or None; ``pushes_off`` when the run pushes and ``pushes=false`` left them out."""
    dr = cfg.get("randomization") or {}
    trained_pushes = bool(dr.get("enabled")) and dr.get("push_interval", 0.0) > 0
    return {"physics": "nominal" if dr.get("enabled") else "as trained", "pushes": pushes,
            "pushes_off": trained_pushes and pushes is None}


def load_setup(spec: dict, *, pushes: bool = True) -> Sim2SimSetup:
    """The MuJoCo model of a bundle's task, and its observation layout resolved from ``spec`` (policy.json); with
    ``pushes`` False, without the pushes of the run's randomization."""
    from horde.envs import TASKS
    from horde.envs.terms import UnknownTermError

    _import_run_modules(spec)
    task = spec["task"]
    twin_cls = TASKS[task].twin if task in TASKS else None
    if twin_cls is None:
        with_twin = sorted(name for name, t in TASKS.items() if t.twin is not None)
        raise Sim2SimError(f"no sim-to-sim (MuJoCo) check for task '{task}'; tasks with one: {', '.join(with_twin)}")
    if spec["action"]["type"] != "position_target" or spec.get("recurrent"):
        raise Sim2SimError("sim-to-sim runs feed-forward position-target policies only")
    cfg, ctl = spec["task_config"], spec["control"]
    if (cfg.get("terrain") or {}).get("kind", "flat") != "flat":
        raise Sim2SimError("sim-to-sim runs on flat ground only")
    if not pushes and (cfg.get("randomization") or {}).get("push_interval", 0.0) > 0:
        cfg = {**cfg, "randomization": {**cfg["randomization"], "push_interval": 0.0}}
    model = twin_cls.load_model(cfg)
    model.opt.timestep = ctl["sim_dt"]
    joints = Joints(model, spec)
    obs = spec["observation"]
    if not obs.get("sources"):
        raise Sim2SimError("policy.json has no observation 'sources' (a bundle exported before 2026-11-26): "
                           "re-export it with horde export")
    try:  # a twin as the episodes build it: the sources, joints and events of this run's config
        probe = twin_cls(model, cfg, ctl["sim_dt"] * ctl["decimation"])
    except UnknownTermError as exc:
        raise Sim2SimError(str(exc)) from None
    acting = getattr(probe, "acting", None)
    if acting is not None and sorted(acting) != sorted(joints.names):
        raise Sim2SimError(f"policy.json's actions drive {', '.join(joints.names)}; the run's acting joints are "
                           f"{', '.join(acting)}")
    unheld = [j for j in getattr(probe, "joint_names", ()) if j not in joints.all_names]
    if unheld:
        raise Sim2SimError(f"policy.json neither drives nor holds joints {', '.join(unheld)} (no 'held_joints': a "
                           "bundle exported before they were recorded): re-export it with horde export")
    provided = set(probe.sources) | {"joint_pos", "joint_vel", "last_action"}
    missing = [s for s in required_sources(obs) if s not in provided]
    if missing:
        raise Sim2SimError(f"observation sources with no MuJoCo counterpart here: {', '.join(missing)}")
    adr = {}
    for b in obs["sources"]:
        if b["source"] not in ("joint_pos", "joint_vel"):
            continue
        for j in b.get("joints") or ():
            try:
                jid = model.joint(j).id
            except KeyError:
                raise Sim2SimError(f"observed joint '{j}' is not in the MJCF") from None
            adr[j] = (int(model.jnt_qposadr[jid]), int(model.jnt_dofadr[jid]))
    return Sim2SimSetup(task, spec, model, joints, twin_cls, adr, cfg,
                        conditions(spec["task_config"], getattr(probe, "pushes", None)))


def rollout(setup: Sim2SimSetup, policy: Callable[[np.ndarray], np.ndarray], *, episodes: int, seed: int,
            progress: ProgressFn | None = None, stage: str = "sim-to-sim", commands: np.ndarray | None = None,
            settle: int = 50) -> dict:
    """``episodes`` MuJoCo episodes side by side (one ``MjData`` each, one batched policy call per control step);
    ``progress(stage, step, episode_length, "<k>/<episodes> episodes running")`` after each control step. With
    ``commands`` [episodes, 3] (a velocity task), episode ``e`` holds command ``e`` throughout (no resampling) and the
    result's ``sets`` holds the command-set figures of :mod:`horde.train.command_sets` (:class:`SetMeter`, from
    control step ``settle`` on)."""
    import mujoco

    model, joints, spec = setup.model, setup.joints, setup.spec
    ctl, scales = spec["control"], spec["task_config"]["reward_scales"]
    dt = ctl["sim_dt"] * ctl["decimation"]
    rng = np.random.default_rng(seed)
    datas = [mujoco.MjData(model) for _ in range(episodes)]
    twins = [setup.new_twin() for _ in range(episodes)]
    frames = [ObservationFrames(spec["observation"]) for _ in range(episodes)]  # each episode's first obs fills
    weight = {k: v * (dt if twins[0].per_second else 1.0) for k, v in scales.items()}
    events = hasattr(twins[0], "pre_physics")  # a twin with events before the physics (the velocity twin's pushes)
    for e, (data, twin) in enumerate(zip(datas, twins)):
        twin.reset(model, data, joints, np.random.default_rng(rng.integers(2**63)))
        if commands is not None:
            twin.command[:] = commands[e]
            twin.resample = 0
        mujoco.mj_forward(model, data)
    meter = SetMeter(commands, dt, settle) if commands is not None else None
    n = len(joints.qadr)
    last = np.zeros((episodes, n))
    returns, lengths, failed = np.zeros(episodes), np.zeros(episodes, dtype=int), np.zeros(episodes, dtype=bool)
    alive = np.ones(episodes, dtype=bool)
    term_sums: dict[str, float] = {}
    steps, done = ctl["episode_length"], 0
    for _ in range(steps):
        rows = np.flatnonzero(alive)
        if rows.size == 0:
            break
        obs = np.stack([setup.observe(datas[e], twins[e], last[e], frames[e]) for e in rows])
        actions = joints.act(policy(obs).astype(np.float64))
        for a, e in zip(actions, rows):
            data, twin = datas[e], twins[e]
            if events:
                twin.pre_physics(data, joints, a, last[e])  # the pushes, before the step's physics as in horde
            target = joints.target(a)
            for _ in range(ctl["decimation"]):
                tau = joints.torques(data, target)  # the acting joints and the held ones, every substep
                data.qfrc_applied[joints.all_dadr] = tau
                mujoco.mj_step(model, data)
            terms, fail = twin.terms(model, data, joints, a, last[e], tau)
            if terms.keys() != scales.keys():
                raise Sim2SimError(f"reward terms {sorted(terms)} differ from policy.json's {sorted(scales)}")
            returns[e] += sum(weight[k] * v for k, v in terms.items())
            for k, v in terms.items():
                term_sums[k] = term_sums.get(k, 0.0) + weight[k] * v
            lengths[e] += 1
            last[e] = np.clip(a, -1.0, 1.0)  # the env observes its last actions clipped (tanh-squashed ones too)
            if fail:
                alive[e], failed[e] = False, True
            if meter is not None:
                meter.update(e, done, data, twin, up=not fail and done < steps - 1)  # horde: the time-out step is not up
        done += 1
        if progress is not None:
            progress(stage, done, steps, f"{int(alive.sum())}/{episodes} episodes running")
    if progress is not None and 0 < done < steps:  # every episode failed early: the loop's end, as its total
        progress(stage, done, done, f"0/{episodes} episodes running")
    metrics = {k: float(np.mean([t.metrics()[k] for t in twins])) for k in twins[0].metrics()}
    return {"returns": returns, "lengths": lengths, "failed": failed, "metrics": metrics,
            "term_means": {k: v / episodes for k, v in term_sums.items()},
            **({"sets": meter.figures(failed)} if meter is not None else {})}


def _yaw(q: np.ndarray) -> float:
    """Yaw [rad] of a MuJoCo quaternion (w, x, y, z)."""
    w, x, y, z = q
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def _wrap(a: float) -> float:
    return (a + math.pi) % (2.0 * math.pi) - math.pi


class SetMeter:
    """The command-set figures of :func:`horde.train.command_sets.run_command_set` (up share, linear and yaw-rate
    tracking errors while up after ``settle``, world-frame progress along the commanded displacement, yaw turned
    against the command, heading drift) measured on MuJoCo's state, the base's twist as the twin reads it."""

    def __init__(self, commands: np.ndarray, dt: float, settle: int) -> None:
        n = len(commands)
        self.cmd, self.dt, self.settle = np.asarray(commands, dtype=np.float64), dt, settle
        self.lin, self.yaw_err, self.count = np.zeros(n), np.zeros(n), np.zeros(n)
        self.p0, self.psi0, self.last_yaw = np.zeros((n, 2)), np.zeros(n), np.zeros(n)
        self.disp, self.cmd_disp, self.turned = np.zeros((n, 2)), np.zeros((n, 2)), np.zeros(n)

    def update(self, e: int, k: int, data, twin, *, up: bool) -> None:
        """After control step ``k`` (0-based) of episode ``e``; ``up``: it did not fail on this step."""
        psi = _yaw(data.qpos[3:7])
        if k == self.settle - 1 or (k == 0 and self.settle <= 0):
            self.p0[e], self.psi0[e], self.last_yaw[e] = data.qpos[:2], psi, psi
        if k < self.settle or not up:
            return
        c = self.cmd[e]
        v, w = twin.base_twist(data)
        self.lin[e] += math.hypot(c[0] - v[0], c[1] - v[1])
        self.yaw_err[e] += abs(c[2] - w[2])
        self.count[e] += 1
        self.turned[e] += _wrap(psi - self.last_yaw[e])
        self.last_yaw[e] = psi
        self.disp[e] = data.qpos[:2] - self.p0[e]
        heading = self.psi0[e] + c[2] * self.count[e] * self.dt
        ch, sh = math.cos(heading), math.sin(heading)
        self.cmd_disp[e] += np.array([ch * c[0] - sh * c[1], sh * c[0] + ch * c[1]]) * self.dt

    def figures(self, failed: np.ndarray) -> dict:
        from horde.train.command_sets import MIN_DISTANCE_M, MIN_TURN_RAD

        stayed = ~failed
        seconds = self.count * self.dt
        turn_cmd = self.cmd[:, 2] * seconds
        drift = np.degrees(np.abs(self.turned - turn_cmd))
        cmd_len = np.linalg.norm(self.cmd_disp, axis=1)
        moving = stayed & (cmd_len >= MIN_DISTANCE_M)
        along = (self.disp * self.cmd_disp).sum(axis=1) / np.maximum(cmd_len, 1e-9)
        turning = stayed & (np.abs(turn_cmd) >= MIN_TURN_RAD)
        ups = self.count.sum()

        def mean(x: np.ndarray) -> float | None:
            return float(x.mean()) if x.size else None

        return {"up_fraction": float(stayed.mean()),
                "lin_vel_error_mps": float(self.lin.sum() / ups) if ups else None,
                "yaw_rate_error_rps": float(self.yaw_err.sum() / ups) if ups else None,
                "progress": mean(along[moving] / cmd_len[moving]),
                "turn_progress": mean(self.turned[turning] / turn_cmd[turning]),
                "heading_drift_deg": mean(drift[stayed & (self.count > 0)])}


def passes(mujoco_return: float, horde_return: float | None) -> bool | None:
    """Rung 3's rule (:data:`MIN_RETURN_RATIO`); None without horde's figure."""
    if horde_return is None:
        return None
    return bool(mujoco_return >= horde_return - (1.0 - MIN_RETURN_RATIO) * abs(horde_return))


def _report_dir(bundle: Path, report_dir: str | Path | None) -> Path:
    """Where a report goes: ``report_dir`` (made) or the bundle."""
    if report_dir is None:
        return Path(bundle)
    Path(report_dir).mkdir(parents=True, exist_ok=True)
    return Path(report_dir)


def run_sim2sim(bundle: str | Path, *, episodes: int = 16, seed: int = 0, horde_return: float | None = None,
                write_report: bool = True, pushes: bool = True, progress: ProgressFn | None = None,
                stage: str = "sim-to-sim", report_dir: str | Path | None = None) -> dict:
    """Run ``episodes`` episodes of the bundle's policy in MuJoCo; returns the figures and, with ``write_report``,
    writes them to ``sim2sim_report.json`` in the bundle (or in ``report_dir``: a shipped bundle stays as shipped). ``horde_return`` defaults to rung 2's ONNX mean return in
    the bundle's ``parity_report.json``. A run trained with domain randomization runs at its nominal physics, with
    its pushes unless ``pushes`` is False (:func:`conditions`, reported as ``physics`` and ``pushes``).
    ``progress`` (:class:`horde.deploy.verify.ProgressFn`) hears ``stage`` start, then each control step."""
    import mujoco

    from horde.deploy.verify import ort_session, say
    from horde.sim.device import init_warp

    init_warp()  # the twin's Warp term kernels: initialise without Warp's no-driver banner on a CPU machine
    bundle = Path(bundle)
    spec = json.loads((bundle / "policy.json").read_text())
    setup = load_setup(spec, pushes=pushes)  # a bundle it cannot run fails here, before any line
    sess = ort_session(bundle / spec["onnx"]["file"])
    say(progress, f"{stage}: {episodes} MuJoCo episodes of {spec['task']}, up to {spec['control']['episode_length']} "
                  f"steps each")
    res = rollout(setup, lambda obs: sess.run(None, {"obs": obs})[0], episodes=episodes, seed=seed,
                  progress=progress, stage=f"{stage} ({episodes} MuJoCo episodes)")
    report_path = bundle / "parity_report.json"
    if horde_return is None and report_path.is_file():
        horde_return = json.loads(report_path.read_text()).get("closed_loop", {}).get("onnx_mean_return")
    returns = res["returns"]
    mean = float(np.mean(returns))
    ci = 1.96 * float(np.std(returns, ddof=1)) / math.sqrt(episodes) if episodes > 1 else float("inf")
    out = {"task": setup.task, "episodes": episodes, "seed": seed, "mujoco": mujoco.__version__, **setup.conditions,
           "mujoco_mean_return": mean, "mujoco_return_std": float(np.std(returns)), "mujoco_return_ci95": ci,
           "mujoco_mean_length": float(np.mean(res["lengths"])), "mujoco_failures": int(res["failed"].sum()),
           **{f"mujoco_{k}": v for k, v in res["metrics"].items()},
           "mujoco_term_means": {k: float(v) for k, v in res["term_means"].items()},
           "horde_mean_return": horde_return,
           "return_ratio": mean / horde_return if horde_return else None,
           "min_return_ratio": MIN_RETURN_RATIO,
           "rule": f"MuJoCo mean return >= horde's - {1 - MIN_RETURN_RATIO:.1f} x |horde's|",
           "passed": passes(mean, horde_return)}
    if write_report:
        atomic_write_text(_report_dir(bundle, report_dir) / "sim2sim_report.json", json.dumps(out, indent=2))
    return out


SETS_MIN_UP = 0.90
"""Issue 69's sim-to-sim floor on a command set: at least this share of MuJoCo's episodes stay up ..."""
SETS_MAX_ERROR_RATIO = 1.25
"""... and MuJoCo's linear tracking error is at most this times horde's on the same commands."""


def run_sim2sim_sets(bundle: str | Path, sets: tuple[str, ...], *, episodes: int = 64, seed: int = 0,
                     settle: int = 50, horde: dict[str, dict] | None = None, progress: ProgressFn | None = None,
                     write_report: bool = True, report_dir: str | Path | None = None) -> dict:
    """The command sets ``sets`` (:mod:`horde.train.command_sets`) in MuJoCo: ``episodes`` episodes per set, episode
    ``e`` holding the set's command ``e`` for a whole episode, at nominal physics with the G1 floors' pushes
    (``FLOOR_PUSHES``, a run trained with randomization; none otherwise), as ``horde play commands=`` measures them
    in horde. ``horde``: horde's figures per set on the same commands (``evaluate_command_sets``), for the floor:
    MuJoCo keeps at least :data:`SETS_MIN_UP` up and a linear error within :data:`SETS_MAX_ERROR_RATIO` x horde's.
    Writes ``sim2sim_sets_report.json`` in the bundle (or in ``report_dir``) with ``write_report``."""
    from horde.deploy.verify import ort_session, say
    from horde.sim.device import init_warp
    from horde.train.command_sets import FLOOR_PUSHES, command_set

    init_warp()
    bundle = Path(bundle)
    spec = json.loads((bundle / "policy.json").read_text())
    cfg = spec["task_config"]
    if "command_vx" not in cfg:
        raise Sim2SimError(f"commands= runs velocity tasks (a commanded base velocity); {spec['task']} has none")
    dr = cfg.get("randomization") or {}
    pushes = bool(dr.get("enabled"))
    if pushes:
        spec = {**spec, "task_config": {**cfg, "randomization": {**dr, **FLOOR_PUSHES}}}
    setup = load_setup(spec, pushes=pushes)
    sess = ort_session(bundle / spec["onnx"]["file"])
    out: dict = {"task": setup.task, "episodes": episodes, "seed": seed, "settle": settle,
                 "pushes": FLOOR_PUSHES if pushes else None, "physics": setup.conditions.get("physics"), "sets": {}}
    for name in sets:
        command = command_set(name, episodes).numpy()
        stage = f"MuJoCo, set {name}"
        say(progress, f"{stage}: {episodes} episodes of {spec['control']['episode_length']} steps, each command held")
        res = rollout(setup, lambda obs: sess.run(None, {"obs": obs.astype(np.float32)})[0], episodes=episodes,
                      seed=seed, progress=progress, stage=stage, commands=command, settle=settle)
        figs = res["sets"]
        h = (horde or {}).get(name)
        if h is not None:
            figs["horde"] = {k: h.get(k) for k in figs}
            ratio = (figs["lin_vel_error_mps"] / h["lin_vel_error_mps"]
                     if figs["lin_vel_error_mps"] is not None and h.get("lin_vel_error_mps") else None)
            figs["lin_error_ratio"] = ratio
            figs["passed"] = bool(figs["up_fraction"] >= SETS_MIN_UP and ratio is not None
                                  and ratio <= SETS_MAX_ERROR_RATIO)
        out["sets"][name] = figs
        say(progress, f"{stage}: {sets_line(name, figs)}")
    if write_report:
        atomic_write_text(_report_dir(bundle, report_dir) / "sim2sim_sets_report.json", json.dumps(out, indent=2))
    return out


def sets_line(name: str, f: dict) -> str:
    """One line of a set's MuJoCo figures beside horde's (when measured) and the floor's verdict."""
    def fmt(v, pct=False, digits=2):
        return "-" if v is None else (f"{100 * v:.0f}%" if pct else f"{v:.{digits}f}")

    h = f.get("horde") or {}
    line = (f"{name}: MuJoCo up {fmt(f['up_fraction'], True)}, lin error {fmt(f['lin_vel_error_mps'])} m/s, yaw "
            f"error {fmt(f['yaw_rate_error_rps'])} rad/s, progress {fmt(f['progress'], True)}, heading drift "
            f"{fmt(f['heading_drift_deg'], digits=0)} deg")
    if h:
        line += (f"; horde up {fmt(h.get('up_fraction'), True)}, lin error {fmt(h.get('lin_vel_error_mps'))} m/s, "
                 f"progress {fmt(h.get('progress'), True)}; ratio {fmt(f.get('lin_error_ratio'))} (floor: up >= "
                 f"{100 * SETS_MIN_UP:.0f}%, ratio <= {SETS_MAX_ERROR_RATIO}): {'PASS' if f['passed'] else 'FAIL'}")
    return line


def summary_line(r: dict) -> str:
    """One line of figures for a sim-to-sim result."""
    ratio = f"{r['return_ratio']:.3f}" if r["return_ratio"] is not None else "n/a"
    horde = f"{r['horde_mean_return']:.2f}" if r["horde_mean_return"] is not None else "n/a"
    verdict = {True: "PASS", False: "FAIL", None: "no horde figure"}[r["passed"]]
    return (f"MuJoCo {r['mujoco']} C engine, {r['episodes']} episodes ({conditions_text(r)}): return "
            f"{r['mujoco_mean_return']:.2f} +- {r['mujoco_return_ci95']:.2f} (95% CI, mean length "
            f"{r['mujoco_mean_length']:.0f}, {r['mujoco_failures']} failed) vs horde {horde}, ratio {ratio} (pass: "
            f"{r['rule']}): {verdict}")


def conditions_text(r: dict) -> str:
    """The physics and pushes of a result (:func:`conditions`) in words."""
    physics = r.get("physics", "as trained")
    words = ("nominal physics (randomization's draws and observation noise left out)" if physics == "nominal"
             else "physics as trained")
    p = r.get("pushes")
    if p:
        words += (f", pushes every {p['interval_s']:g} s up to {p['velocity_mps']:g} m/s"
                  + (f" ({r['mujoco_pushes']:g} per episode)" if "mujoco_pushes" in r else ""))
    elif r.get("pushes_off"):
        words += ", no pushes (pushes=false)"
    return words
