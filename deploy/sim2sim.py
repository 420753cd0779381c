"""Rung 3 of the ladder: the exported ONNX policy drives the robot in plain MuJoCo (the C engine, not Newton),
with observations rebuilt from ``policy.json`` alone: the digital-twin check before a real robot.

    horde sim2sim run=<bundle dir or run dir> [episodes=16] [seed=0]

Everything the loop needs comes from the bundle: observation term names (mapped to MuJoCo quantities below),
action names, type, scale, offset and clip, PD gains and effort limits, control period and substeps, episode
length, reward scales, initial-state ranges. Only the MJCF comes from horde's assets. Reported: mean return in
MuJoCo, horde's closed-loop mean return from the bundle's parity report, and their ratio.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np

MJCF = {"reach": "arm7.xml"}
"""Tasks with a sim-to-sim check, and the MJCF in horde's assets that both simulators load."""


class Sim2SimError(RuntimeError):
    """The bundle cannot be run in MuJoCo; one line."""


def _observe(names: list[str], data, joints: dict, site: int, target: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Observation vector from MuJoCo state, term by term, following ``policy.json``'s names."""
    ee = data.site_xpos[site]
    out = np.empty(len(names), np.float32)
    for k, name in enumerate(names):
        kind, _, rest = name.partition("_")
        if name.startswith("last_action_"):
            out[k] = last[list(joints).index(name[len("last_action_"):])]
        elif kind == "pos":
            out[k] = data.qpos[joints[rest][0]]
        elif kind == "vel":
            out[k] = data.qvel[joints[rest][1]]
        elif kind in ("ee", "target", "error"):
            axis = "xyz".index(rest)
            out[k] = {"ee": ee[axis], "target": target[axis], "error": target[axis] - ee[axis]}[kind]
        else:
            raise Sim2SimError(f"observation term '{name}' has no MuJoCo counterpart here")
    return out


def run_sim2sim(bundle: str | Path, *, episodes: int = 16, seed: int = 0) -> dict:
    """Run ``episodes`` episodes of the bundle's policy in MuJoCo; returns the figures (and writes them to
    ``sim2sim_report.json`` in the bundle)."""
    import mujoco
    import onnxruntime as ort

    bundle = Path(bundle)
    spec = json.loads((bundle / "policy.json").read_text())
    task = spec["task"]
    if task not in MJCF:
        raise Sim2SimError(f"no sim-to-sim check for task '{task}'; tasks with one: {', '.join(MJCF)}")
    if spec["action"]["type"] != "position_target" or spec.get("recurrent"):
        raise Sim2SimError("sim-to-sim runs feed-forward position-target policies only")
    cfg, ctl = spec["task_config"], spec["control"]
    model = mujoco.MjModel.from_xml_path(str(resources.files("horde") / "assets" / MJCF[task]))
    model.opt.timestep = ctl["sim_dt"]
    data = mujoco.MjData(model)
    names = [t["name"] for t in spec["observation"]["terms"]]
    act = spec["action"]
    joints = {j: (model.joint(j).qposadr[0], model.joint(j).dofadr[0]) for j in act["names"]}
    qadr = np.array([a for a, _ in joints.values()])
    dadr = np.array([d for _, d in joints.values()])
    kp, kd = np.array(spec["pd_gains"]["kp"]), np.array(spec["pd_gains"]["kd"])
    limit, scale, offset = np.array(spec["effort_limits"]), np.array(act["scale"]), np.array(act["offset"])
    site = model.site("ee").id
    scales = cfg["reward_scales"]
    sess = ort.InferenceSession(str(bundle / spec["onnx"]["file"]), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed)
    returns, errors = [], []
    for _ in range(episodes):
        mujoco.mj_resetData(model, data)
        data.qpos[qadr] = np.array(cfg["default_joint_pos"]) + rng.uniform(
            -cfg["init_joint_pos_range"], cfg["init_joint_pos_range"], len(qadr))
        mujoco.mj_forward(model, data)
        target = rng.uniform(cfg["target_low"], cfg["target_high"])
        last = np.zeros(len(qadr))
        ret = 0.0
        for _ in range(ctl["episode_length"]):
            obs = _observe(names, data, joints, site, target, last)
            a = np.clip(sess.run(None, {"obs": obs[None]})[0][0].astype(np.float64), *act["clip"])
            command = offset + scale * a
            for _ in range(ctl["decimation"]):
                tau = kp * (command - data.qpos[qadr]) - kd * data.qvel[dadr]
                data.qfrc_applied[dadr] = np.clip(tau, -limit, limit)
                mujoco.mj_step(model, data)
            dist = float(np.linalg.norm(target - data.site_xpos[site]))
            terms = {"distance": dist, "precision": 1.0 - np.tanh(dist / cfg["precision_std"]),
                     "action_rate": float(np.sum((a - last) ** 2)), "joint_vel": float(np.sum(data.qvel[dadr] ** 2))}
            ret += sum(scales[k] * v for k, v in terms.items())
            last = a
        returns.append(ret)
        errors.append(dist)
    report_path = bundle / "parity_report.json"
    horde_return = None
    if report_path.is_file():
        horde_return = json.loads(report_path.read_text()).get("closed_loop", {}).get("onnx_mean_return")
    mean = float(np.mean(returns))
    out = {"task": task, "episodes": episodes, "mujoco": mujoco.__version__, "mujoco_mean_return": mean,
           "mujoco_return_std": float(np.std(returns)), "mujoco_final_error_mean_m": float(np.mean(errors)),
           "horde_mean_return": horde_return,
           "return_ratio": mean / horde_return if horde_return else None}
    (bundle / "sim2sim_report.json").write_text(json.dumps(out, indent=2))
    return out
