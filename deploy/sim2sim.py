"""Rung 3 of the ladder: the exported ONNX policy drives the robot in plain MuJoCo (the C engine, not Newton),
with observations rebuilt from ``policy.json`` alone: the digital-twin check before a real robot.

    horde sim2sim run=<bundle dir or run dir> [episodes=16] [seed=0]

Everything the loop needs comes from the bundle: observation term names (mapped to MuJoCo quantities below),
offsets, scales and clips, action names, type, scale, offset and clip, PD gains and effort limits, control period
and substeps, episode length, reward scales, initial-state and command ranges (``task_config``). Only the MJCF
comes from horde's assets. Reported: mean return in MuJoCo, horde's closed-loop mean return (rung 2 of the
bundle's parity report), and their ratio.

The loop is shared; a task is an entry in :data:`TWINS`: its MJCF and a small class that draws an episode's
initial state and commands, computes the task's own observation quantities (the joint angles, rates and last
actions are common) and its reward terms and failure rule from MuJoCo state.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Callable

import numpy as np

__all__ = ["MIN_RETURN_RATIO", "TWINS", "Sim2SimError", "Sim2SimSetup", "load_setup", "passes", "run_sim2sim",
           "summary_line"]

MIN_RETURN_RATIO = 0.8
"""Rung 3 passes when MuJoCo's mean return >= horde's - (1 - this) x |horde's| (ratio >= 0.8 for positive returns)."""


class Sim2SimError(RuntimeError):
    """The bundle cannot be run in MuJoCo; one line."""


def _mjcf_path(name: str) -> Callable[[dict], str]:
    return lambda cfg: str(resources.files("horde") / "assets" / name)


def _quadruped_mjcf(cfg: dict) -> str:
    from horde.envs.robots import resolve_robot

    return resolve_robot(cfg.get("robot", "quad12")).mjcf_path()


# --- per-task twins ------------------------------------------------------------------------------------------------
class ReachTwin:
    """Reach: end effector (site ``ee``) to a target drawn once per episode; no failure but non-finite physics."""

    quantities = ("ee_x", "ee_y", "ee_z", "target_x", "target_y", "target_z", "error_x", "error_y", "error_z")
    per_second = False
    """Reward scales apply per control step as they are."""

    def __init__(self, model, cfg: dict, control_dt: float) -> None:
        self.cfg, self.site = cfg, model.site("ee").id
        self.target, self.final_error = np.zeros(3), float("nan")

    def reset(self, model, data, joints: "Joints", rng: np.random.Generator) -> None:
        cfg = self.cfg
        joints.set_noisy_default(data, cfg["init_joint_pos_range"], cfg.get("init_joint_vel_range", 0.0), rng)
        self.target = rng.uniform(cfg["target_low"], cfg["target_high"])

    def values(self, data) -> np.ndarray:
        ee = data.site_xpos[self.site]
        return np.concatenate([ee, self.target, self.target - ee])

    def terms(self, model, data, joints: "Joints", a: np.ndarray, last: np.ndarray, tau: np.ndarray
              ) -> tuple[dict[str, float], bool]:
        dist = float(np.linalg.norm(self.target - data.site_xpos[self.site]))
        self.final_error = dist
        return ({"distance": dist, "precision": 1.0 - math.tanh(dist / self.cfg["precision_std"]),
                 "action_rate": float(np.sum((a - last) ** 2)), "joint_vel": float(np.sum(joints.qd(data) ** 2))},
                False)

    def metrics(self) -> dict[str, float]:
        """Per episode; averaged over episodes under the same key."""
        return {"final_error_mean_m": self.final_error}


class QuadrupedTwin:
    """Quadruped velocity tracking on flat ground (``envs/quadruped.py``): commands drawn per episode and every
    ``command_resample_s``; contact forces of feet, thighs and base from ``mj_contactForce``; fails on base contact
    or a tilt past ``max_tilt``."""

    quantities = ("lin_vel_x", "lin_vel_y", "lin_vel_z", "ang_vel_x", "ang_vel_y", "ang_vel_z", "gravity_x",
                  "gravity_y", "gravity_z", "cmd_vx", "cmd_vy", "cmd_yaw_rate")
    per_second = True
    """Reward scales are per second: multiplied by the control period, as horde does."""

    def __init__(self, model, cfg: dict, control_dt: float) -> None:
        from horde.envs.robots import LEGS

        self.cfg, self.dt = cfg, control_dt
        self.base = model.body("base").id
        self.com = model.body_ipos[self.base].copy()  # horde's linear velocity is the base COM's
        # contact rows as horde's: 4 feet, 4 thighs, the base (base and head geoms)
        bodies = [f"{leg}_foot" for leg in LEGS] + [f"{leg}_thigh" for leg in LEGS] + ["base"]
        self.row = np.full(model.nbody, -1)
        for r, name in enumerate(bodies):
            self.row[model.body(name).id] = r
        self.resample = max(int(round(cfg["command_resample_s"] / control_dt)), 0)
        self.cos_tilt = math.cos(cfg["max_tilt"])
        self.command = np.zeros(3)
        self.air = np.zeros(4)
        self.steps = 0
        self.track_err: list[float] = []

    def draw_command(self, rng: np.random.Generator) -> None:
        cfg = self.cfg
        stand = rng.uniform() < cfg["standing_fraction"]
        cmd = [rng.uniform(*cfg["command_vx"]), rng.uniform(*cfg["command_vy"]), rng.uniform(*cfg["command_yaw_rate"])]
        self.command = np.zeros(3) if stand else np.array(cmd)

    def reset(self, model, data, joints: "Joints", rng: np.random.Generator) -> None:
        import mujoco

        joints.set_noisy_default(data, self.cfg["init_joint_pos_range"], 0.0, rng)
        yaw = rng.uniform(-1.0, 1.0) * self.cfg["init_yaw_range"]
        q0 = data.qpos[3:7].copy()
        mujoco.mju_mulQuat(data.qpos[3:7], np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]), q0)
        self.draw_command(rng)
        self.rng, self.air[:], self.steps, self.track_err = rng, 0.0, 0, []

    def base_twist(self, data) -> tuple[np.ndarray, np.ndarray]:
        """Base-frame linear velocity of the base COM [m/s] and angular velocity [rad/s] (MuJoCo's free-joint qvel
        is the world-frame velocity of the body origin and the body-frame angular velocity)."""
        rot = data.xmat[self.base].reshape(3, 3)
        w = data.qvel[3:6]
        return rot.T @ data.qvel[0:3] + np.cross(w, self.com), w.copy()

    def values(self, data) -> np.ndarray:
        v, w = self.base_twist(data)
        gravity = -data.xmat[self.base].reshape(3, 3)[2]  # R^T (0, 0, -1)
        return np.concatenate([v, w, gravity, self.command])

    def contact_forces(self, model, data) -> np.ndarray:
        """Total contact force [N] on each contact row's body, world frame, [9, 3]."""
        import mujoco

        out, f6 = np.zeros((9, 3)), np.zeros(6)
        for i in range(data.ncon):
            c = data.contact[i]
            r1, r2 = self.row[model.geom_bodyid[c.geom1]], self.row[model.geom_bodyid[c.geom2]]
            if r1 < 0 and r2 < 0:
                continue
            mujoco.mj_contactForce(model, data, i, f6)
            f = c.frame.reshape(3, 3).T @ f6[:3]  # the force geom1 exerts on geom2, world frame
            if r2 >= 0:
                out[r2] += f
            if r1 >= 0:
                out[r1] -= f
        return out

    def terms(self, model, data, joints: "Joints", a: np.ndarray, last: np.ndarray, tau: np.ndarray
              ) -> tuple[dict[str, float], bool]:
        cfg, thr = self.cfg, self.cfg["contact_threshold"]
        force = self.contact_forces(model, data)
        rot = data.xmat[self.base].reshape(3, 3)
        v, w = self.base_twist(data)
        g = -rot[2]
        failed = bool(np.linalg.norm(force[8]) > thr or rot[2, 2] < self.cos_tilt
                      or not np.isfinite(data.qpos).all())
        cmd, sig2 = self.command, cfg["tracking_sigma"] ** 2
        touch = force[:4, 2] > thr
        air = float(np.sum(np.where(touch & (self.air > 0.0), self.air - cfg["feet_air_time_target"], 0.0)))
        self.air = np.where(touch, 0.0, self.air + self.dt)
        moving = np.abs(cmd).sum() > 0.1
        self.track_err.append(float(np.hypot(cmd[0] - v[0], cmd[1] - v[1])))
        terms = {"track_lin_vel": math.exp(-((cmd[0] - v[0]) ** 2 + (cmd[1] - v[1]) ** 2) / sig2),
                 "track_ang_vel": math.exp(-((cmd[2] - w[2]) ** 2) / sig2),
                 "lin_vel_z": v[2] ** 2, "ang_vel_xy": w[0] ** 2 + w[1] ** 2, "orientation": g[0] ** 2 + g[1] ** 2,
                 "torques": float(np.sum(tau ** 2)), "action_rate": float(np.sum((a - last) ** 2)),
                 "feet_air_time": air if moving else 0.0,
                 "undesired_contacts": float(np.sum(np.linalg.norm(force[4:8], axis=1) > thr)),
                 "terminated": float(failed)}
        self.steps += 1
        if self.resample > 0 and self.steps % self.resample == 0:
            self.draw_command(self.rng)
        return terms, failed

    def metrics(self) -> dict[str, float]:
        """Per episode; averaged over episodes under the same key."""
        return {"lin_vel_tracking_error_mean_mps": float(np.mean(self.track_err)) if self.track_err else 0.0}


@dataclass(frozen=True)
class TwinSpec:
    """A task with a sim-to-sim check: where its MJCF is (from the task config) and its per-task twin."""

    mjcf: Callable[[dict], str]
    twin: type


TWINS: dict[str, TwinSpec] = {
    "reach": TwinSpec(_mjcf_path("arm7.xml"), ReachTwin),
    "quadruped": TwinSpec(_quadruped_mjcf, QuadrupedTwin),
}
"""Tasks with a sim-to-sim check. Flat ground, no observation noise, no domain randomization: the rough quadruped
(heightfield tiles, randomization on) is not here."""


# --- the shared part -----------------------------------------------------------------------------------------------
class Joints:
    """The actuated joints of the bundle, in action-column order, and the PD law of ``policy.json``."""

    def __init__(self, model, spec: dict) -> None:
        act = spec["action"]
        try:
            ids = [model.joint(j).id for j in act["names"]]
        except KeyError as exc:
            raise Sim2SimError(f"action joint not in the MJCF: {exc}") from None
        self.qadr = np.array([model.jnt_qposadr[j] for j in ids])
        self.dadr = np.array([model.jnt_dofadr[j] for j in ids])
        limited = np.array([bool(model.jnt_limited[j]) for j in ids])
        self.lower = np.where(limited, [model.jnt_range[j][0] for j in ids], -np.inf)
        self.upper = np.where(limited, [model.jnt_range[j][1] for j in ids], np.inf)
        self.default = np.asarray(act["default_joint_pos"] or act["offset"], dtype=np.float64)
        self.kp, self.kd = np.asarray(spec["pd_gains"]["kp"]), np.asarray(spec["pd_gains"]["kd"])
        self.limit = np.asarray(spec["effort_limits"])
        self.scale, self.offset = np.asarray(act["scale"]), np.asarray(act["offset"])
        self.clip = act["clip"]

    def q(self, data) -> np.ndarray:
        return data.qpos[self.qadr]

    def qd(self, data) -> np.ndarray:
        return data.qvel[self.dadr]

    def set_noisy_default(self, data, pos_range: float, vel_range: float, rng: np.random.Generator) -> None:
        """Default pose + U(-pos_range, pos_range) clipped to the joint range, rates U(-vel_range, vel_range)."""
        n = len(self.qadr)
        data.qpos[self.qadr] = np.clip(self.default + rng.uniform(-pos_range, pos_range, n), self.lower, self.upper)
        data.qvel[self.dadr] = rng.uniform(-vel_range, vel_range, n) if vel_range > 0 else 0.0

    def target(self, a: np.ndarray) -> np.ndarray:
        """PD target [rad] of clipped actions, clipped to the joint range as horde's actuation does."""
        return np.clip(self.offset + self.scale * a, self.lower, self.upper)

    def torque(self, data, target: np.ndarray) -> np.ndarray:
        """``clip(kp (target - q) - kd qd, -effort, effort)`` [N m]."""
        return np.clip(self.kp * (target - self.q(data)) - self.kd * self.qd(data), -self.limit, self.limit)


@dataclass
class Sim2SimSetup:
    """A bundle's ``policy.json`` mapped onto a MuJoCo model: the observation builder, PD law and reward."""

    task: str
    spec: dict
    model: object
    joints: Joints
    twin_cls: type
    index: np.ndarray
    """Position of each observation term in the raw vector ``[twin quantities, pos_*, vel_*, last_action_*]``."""
    offset: np.ndarray
    scale: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def new_twin(self):
        ctl = self.spec["control"]
        return self.twin_cls(self.model, self.spec["task_config"], ctl["sim_dt"] * ctl["decimation"])

    def observe(self, data, twin, last: np.ndarray) -> np.ndarray:
        """Observation vector [obs_dim] (float32) of ``data`` as ``policy.json`` lays it out."""
        raw = np.concatenate([twin.values(data), self.joints.q(data), self.joints.qd(data), last])
        return np.clip((raw[self.index] - self.offset) * self.scale, self.lo, self.hi).astype(np.float32)


def load_setup(spec: dict) -> Sim2SimSetup:
    """The MuJoCo model of a bundle's task, and its observation layout resolved from ``spec`` (policy.json)."""
    import mujoco

    task = spec["task"]
    if task not in TWINS:
        raise Sim2SimError(f"no sim-to-sim (MuJoCo) check for task '{task}'; tasks with one: {', '.join(TWINS)}")
    if spec["action"]["type"] != "position_target" or spec.get("recurrent"):
        raise Sim2SimError("sim-to-sim runs feed-forward position-target policies only")
    cfg, ctl = spec["task_config"], spec["control"]
    if (cfg.get("randomization") or {}).get("enabled") or (cfg.get("terrain") or {}).get("kind", "flat") != "flat":
        raise Sim2SimError("sim-to-sim runs on flat ground without domain randomization or observation noise")
    entry = TWINS[task]
    model = mujoco.MjModel.from_xml_path(entry.mjcf(cfg))
    model.opt.timestep = ctl["sim_dt"]
    joints = Joints(model, spec)
    names = list(entry.twin.quantities)
    for prefix in ("pos_", "vel_", "last_action_"):
        names += [prefix + j for j in spec["action"]["names"]]
    terms = spec["observation"]["terms"]
    missing = [t["name"] for t in terms if t["name"] not in names]
    if missing:
        raise Sim2SimError(f"observation terms with no MuJoCo counterpart here: {', '.join(missing)}")
    clip = [t.get("clip") or (-np.inf, np.inf) for t in terms]
    return Sim2SimSetup(
        task, spec, model, joints, entry.twin, np.array([names.index(t["name"]) for t in terms]),
        np.array([t.get("offset") or 0.0 for t in terms]), np.array([t.get("scale", 1.0) for t in terms]),
        np.array([c[0] for c in clip], dtype=np.float64), np.array([c[1] for c in clip], dtype=np.float64))


def rollout(setup: Sim2SimSetup, policy: Callable[[np.ndarray], np.ndarray], *, episodes: int, seed: int) -> dict:
    """``episodes`` MuJoCo episodes side by side (one ``MjData`` each, one batched policy call per control step)."""
    import mujoco

    model, joints, spec = setup.model, setup.joints, setup.spec
    ctl, scales = spec["control"], spec["task_config"]["reward_scales"]
    dt = ctl["sim_dt"] * ctl["decimation"]
    rng = np.random.default_rng(seed)
    datas = [mujoco.MjData(model) for _ in range(episodes)]
    twins = [setup.new_twin() for _ in range(episodes)]
    weight = {k: v * (dt if twins[0].per_second else 1.0) for k, v in scales.items()}
    for data, twin in zip(datas, twins):
        twin.reset(model, data, joints, np.random.default_rng(rng.integers(2**63)))
        mujoco.mj_forward(model, data)
    n = len(joints.qadr)
    last = np.zeros((episodes, n))
    returns, lengths, failed = np.zeros(episodes), np.zeros(episodes, dtype=int), np.zeros(episodes, dtype=bool)
    alive = np.ones(episodes, dtype=bool)
    term_sums: dict[str, float] = {}
    for _ in range(ctl["episode_length"]):
        rows = np.flatnonzero(alive)
        if rows.size == 0:
            break
        obs = np.stack([setup.observe(datas[e], twins[e], last[e]) for e in rows])
        actions = np.clip(policy(obs).astype(np.float64), *joints.clip)
        for a, e in zip(actions, rows):
            data = datas[e]
            target = joints.target(a)
            for _ in range(ctl["decimation"]):
                tau = joints.torque(data, target)
                data.qfrc_applied[joints.dadr] = tau
                mujoco.mj_step(model, data)
            terms, fail = twins[e].terms(model, data, joints, a, last[e], tau)
            if terms.keys() != scales.keys():
                raise Sim2SimError(f"reward terms {sorted(terms)} differ from policy.json's {sorted(scales)}")
            returns[e] += sum(weight[k] * v for k, v in terms.items())
            for k, v in terms.items():
                term_sums[k] = term_sums.get(k, 0.0) + weight[k] * v
            lengths[e] += 1
            last[e] = a
            if fail:
                alive[e], failed[e] = False, True
    metrics = {k: float(np.mean([t.metrics()[k] for t in twins])) for k in twins[0].metrics()}
    return {"returns": returns, "lengths": lengths, "failed": failed, "metrics": metrics,
            "term_means": {k: v / episodes for k, v in term_sums.items()}}


def passes(mujoco_return: float, horde_return: float | None) -> bool | None:
    """Rung 3's rule (:data:`MIN_RETURN_RATIO`); None without horde's figure."""
    if horde_return is None:
        return None
    return bool(mujoco_return >= horde_return - (1.0 - MIN_RETURN_RATIO) * abs(horde_return))


def run_sim2sim(bundle: str | Path, *, episodes: int = 16, seed: int = 0, horde_return: float | None = None,
                write_report: bool = True) -> dict:
    """Run ``episodes`` episodes of the bundle's policy in MuJoCo; returns the figures and, with ``write_report``,
    writes them to ``sim2sim_report.json`` in the bundle. ``horde_return`` defaults to rung 2's ONNX mean return in
    the bundle's ``parity_report.json``."""
    import mujoco

    from horde.deploy.verify import ort_session

    bundle = Path(bundle)
    spec = json.loads((bundle / "policy.json").read_text())
    setup = load_setup(spec)
    sess = ort_session(bundle / spec["onnx"]["file"])
    res = rollout(setup, lambda obs: sess.run(None, {"obs": obs})[0], episodes=episodes, seed=seed)
    report_path = bundle / "parity_report.json"
    if horde_return is None and report_path.is_file():
        horde_return = json.loads(report_path.read_text()).get("closed_loop", {}).get("onnx_mean_return")
    returns = res["returns"]
    mean = float(np.mean(returns))
    ci = 1.96 * float(np.std(returns, ddof=1)) / math.sqrt(episodes) if episodes > 1 else float("inf")
    out = {"task": setup.task, "episodes": episodes, "seed": seed, "mujoco": mujoco.__version__,
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
        (bundle / "sim2sim_report.json").write_text(json.dumps(out, indent=2))
    return out


def summary_line(r: dict) -> str:
    """One line of figures for a sim-to-sim result."""
    ratio = f"{r['return_ratio']:.3f}" if r["return_ratio"] is not None else "n/a"
    horde = f"{r['horde_mean_return']:.2f}" if r["horde_mean_return"] is not None else "n/a"
    verdict = {True: "PASS", False: "FAIL", None: "no horde figure"}[r["passed"]]
    return (f"MuJoCo {r['mujoco']} C engine, {r['episodes']} episodes: return {r['mujoco_mean_return']:.2f} +- "
            f"{r['mujoco_return_ci95']:.2f} (95% CI, mean length {r['mujoco_mean_length']:.0f}, "
            f"{r['mujoco_failures']} failed) vs horde {horde}, ratio {ratio} (pass: {r['rule']}): {verdict}")
