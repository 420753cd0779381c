"""Rung 3 of the ladder: the exported ONNX policy drives the robot in plain MuJoCo (the C engine, not Newton),
with observations rebuilt from ``policy.json`` alone: the digital-twin check before a real robot.

    horde sim2sim run=<bundle dir or run dir> [episodes=16] [seed=0]

Everything the loop needs comes from the bundle: the observation's blocks (each a raw source, read from MuJoCo's
state below, with its offset, scale and clip: the robot side's ``build_observation``), action names, type, scale,
offset and clip, PD gains and effort limits, control period and substeps, episode length, reward scales, initial-
state and command ranges (``task_config``). Only the MJCF comes from horde's assets. Reported: mean return in
MuJoCo, horde's closed-loop mean return (rung 2 of the bundle's parity report), and their ratio.

The loop is shared; a task brings its twin in its ``TaskSpec`` (``twin``): a small class that loads the task's
MuJoCo model, draws an episode's initial state and commands, reads the task's own observation sources (``sources``,
``raw(data)``; joint angles and rates by name and the last actions are common) and computes its reward terms and
failure rule from MuJoCo state. The velocity task's twin (:class:`horde.envs.velocity.VelocityTwin`) runs the task's
own Warp reward terms on MuJoCo's state.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from horde.deploy.robot.observations import build_observation, required_sources

__all__ = ["MIN_RETURN_RATIO", "Sim2SimError", "Sim2SimSetup", "load_setup", "passes", "run_sim2sim",
           "summary_line"]

MIN_RETURN_RATIO = 0.8
"""Rung 3 passes when MuJoCo's mean return >= horde's - (1 - this) x |horde's| (ratio >= 0.8 for positive returns)."""


class Sim2SimError(RuntimeError):
    """The bundle cannot be run in MuJoCo; one line."""


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
        velocity = spec.get("velocity_limits")  # the DC-motor model, when the policy trained with it
        self.velocity = np.asarray(velocity, dtype=np.float64) if velocity is not None else None
        self.scale, self.offset = np.asarray(act["scale"]), np.asarray(act["offset"])
        self.clip = act["clip"]
        """[lo, hi] the actions are clipped to, or None (a tanh-squashed task: tanh bounds them)."""
        self.squash = act.get("squash", "clip")

    def act(self, actions: np.ndarray) -> np.ndarray:
        """The policy's actions as the env takes them: clipped (when ``policy.json`` clips)."""
        return actions if self.clip is None else np.clip(actions, *self.clip)

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
        """PD target [rad] of the env's actions (tanh-squashed when ``policy.json``'s action says so), clipped to the
        joint range as horde's actuation does."""
        a = np.tanh(a) if self.squash == "tanh" else a
        return np.clip(self.offset + self.scale * a, self.lower, self.upper)

    def torque(self, data, target: np.ndarray) -> np.ndarray:
        """``clip(kp (target - q) - kd qd, -effort, effort)`` [N m], along the DC motor's torque-speed line when the
        policy trained with one (``velocity_limits``)."""
        qd = self.qd(data)
        tau = self.kp * (target - self.q(data)) - self.kd * qd
        if self.velocity is None:
            return np.clip(tau, -self.limit, self.limit)
        r = qd / self.velocity
        return np.clip(tau, np.clip(self.limit * (-1.0 - r), -self.limit, 0.0),
                       np.clip(self.limit * (1.0 - r), 0.0, self.limit))


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

    def new_twin(self):
        ctl = self.spec["control"]
        return self.twin_cls(self.model, self.spec["task_config"], ctl["sim_dt"] * ctl["decimation"])

    def observe(self, data, twin, last: np.ndarray) -> np.ndarray:
        """Observation vector [obs_dim] (float32) of ``data``: the twin's raw sources, the joints' and the last
        action, through ``policy.json``'s blocks (the robot side's :func:`build_observation`)."""
        raw = {**twin.raw(data), "last_action": last}
        for b in self.spec["observation"]["sources"]:
            if b["source"] in ("joint_pos", "joint_vel"):
                k = 0 if b["source"] == "joint_pos" else 1
                state = data.qpos if k == 0 else data.qvel
                raw[b["source"]] = np.array([state[self.joint_adr[j][k]] for j in b["joints"]])
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


def load_setup(spec: dict) -> Sim2SimSetup:
    """The MuJoCo model of a bundle's task, and its observation layout resolved from ``spec`` (policy.json)."""
    from horde.envs import TASKS

    _import_run_modules(spec)
    task = spec["task"]
    twin_cls = TASKS[task].twin if task in TASKS else None
    if twin_cls is None:
        with_twin = sorted(name for name, t in TASKS.items() if t.twin is not None)
        raise Sim2SimError(f"no sim-to-sim (MuJoCo) check for task '{task}'; tasks with one: {', '.join(with_twin)}")
    if spec["action"]["type"] != "position_target" or spec.get("recurrent"):
        raise Sim2SimError("sim-to-sim runs feed-forward position-target policies only")
    cfg, ctl = spec["task_config"], spec["control"]
    if (cfg.get("randomization") or {}).get("enabled") or (cfg.get("terrain") or {}).get("kind", "flat") != "flat":
        raise Sim2SimError("sim-to-sim runs on flat ground without domain randomization or observation noise")
    model = twin_cls.load_model(cfg)
    model.opt.timestep = ctl["sim_dt"]
    joints = Joints(model, spec)
    obs = spec["observation"]
    if not obs.get("sources"):
        raise Sim2SimError("policy.json has no observation 'sources' (a bundle exported before 2026-11-26): "
                           "re-export it with horde export")
    provided = set(twin_cls.sources) | {"joint_pos", "joint_vel", "last_action"}
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
    return Sim2SimSetup(task, spec, model, joints, twin_cls, adr)


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
        actions = joints.act(policy(obs).astype(np.float64))
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
    from horde.sim.device import init_warp

    init_warp()  # the twin's Warp term kernels: initialise without Warp's no-driver banner on a CPU machine
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
