"""``policy.json``: everything a robot-side program needs to feed the ONNX graph and use its actions.

Observation layout (slices, scales, clips, units), action layout (joint names in order, type, scale, offset,
default positions, clip), PD gains and effort limits, control period, recurrent state, normalizer statistics,
provenance (checkpoint, ONNX sha256, versions) and the golden-file tolerances. ``run_policy.py`` reads it; its
schema version is :data:`horde.deploy.robot.run_policy.BUNDLE_SCHEMA`.
"""

from __future__ import annotations

import platform

import horde
from horde.deploy.robot.run_policy import BUNDLE_SCHEMA


def _per_column(env, attr: str, default, n: int) -> list:
    """An optional per-column env attribute (units, scales, clips, gains), ``default`` where a task declares none.

    Classic-control tasks declare none of these; articulated tasks are expected to (they are constants per robot).
    """
    value = getattr(env, attr, None)  # optional declarations; grep `obs_units` etc. for the tasks that set them
    if value is None:
        return [default] * n
    value = value() if callable(value) else value
    if len(value) != n:
        raise ValueError(f"{type(env).__name__}.{attr} has {len(value)} entries, expected {n}")
    return list(value)


def observation_spec(env, layout: dict, normalizer: dict | None) -> dict:
    """Observation terms in column order. ``scale`` multiplies and ``clip`` bounds the raw value *before* it
    enters the graph (1.0 and null: horde's classic tasks feed raw values; the normalizer is inside the graph)."""
    names = layout["obs_names"]
    n = len(names)
    units = _per_column(env, "obs_units", None, n)
    scales = _per_column(env, "obs_scales", 1.0, n)
    clips = _per_column(env, "obs_clip", None, n)
    terms = [{"name": name, "slice": [i, i + 1], "scale": scales[i], "clip": clips[i], "unit": units[i]}
             for i, name in enumerate(names)]
    norm = None if normalizer is None else {**normalizer, "formula": "(obs - mean) / (std + eps)", "in_graph": True}
    return {"dim": n, "terms": terms, "normalizer": norm}


# Articulated tasks (horde.sim.newton_world.Actuation) name their actuation in the task config with these fields;
# classic-control tasks have none of them. This is the one place that maps them into policy.json.
ACTION_MODE, DEFAULT_POS, KP, KD, EFFORT = ("action_mode", "default_joint_pos", "joint_stiffness", "joint_damping",
                                            "effort_limit")


def _is_pd(cfg: dict) -> bool:
    return cfg.get(ACTION_MODE) == "pd"


def action_spec(env, layout: dict) -> dict:
    """Action columns in order and how an action in [-1, 1] becomes a physical command.

    Position-target (pd) actions are offsets around the default joint positions; torque and force actions have
    no offset.
    """
    names = layout["action_names"]
    n = len(names)
    cfg = layout["config"]
    default_pos = cfg.get(DEFAULT_POS)
    offset = list(default_pos) if _is_pd(cfg) and default_pos is not None else [0.0] * n
    return {
        "names": names,
        "type": layout["action_type"],
        "unit": layout["action_unit"],
        "scale": list(layout["action_scale"]),
        "offset": offset,
        "default_joint_pos": list(default_pos) if default_pos is not None else None,
        "clip": [-1.0, 1.0],
        "formula": "command = offset + scale * clip(action, -1, 1)",
    }


def robot_spec(layout: dict) -> dict:
    """PD gains (pd action mode only) and effort limits per actuated joint, in action-column order; null where
    the task has none (classic-control tasks)."""
    cfg = layout["config"]
    pd = _is_pd(cfg)
    return {"pd_gains": {"kp": cfg.get(KP) if pd else None, "kd": cfg.get(KD) if pd else None,
                         "kp_unit": "N m/rad", "kd_unit": "N m s/rad"},
            "effort_limits": cfg.get(EFFORT), "effort_unit": "N m"}


def recurrent_spec(policy, io: dict) -> dict | None:
    """The recurrent core and its state tensors, or None for a feed-forward policy."""
    if not policy.is_recurrent:
        return None
    return {**policy.recurrent_spec(), "state": io["state"],
            "reset": "set every state row of a robot/env to initial_value (zeros) when its episode starts"}


def versions() -> dict:
    """Versions of the tools that made the bundle."""
    import onnx
    import onnxruntime
    import torch

    return {"horde": horde.__version__, "torch": torch.__version__, "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__, "python": platform.python_version()}


def policy_json(*, name: str, task: str, precision: str, env, layout: dict, policy, io: dict, onnx_info: dict,
                checkpoint: dict, golden: dict) -> dict:
    """The whole ``policy.json`` document."""
    return {
        "schema_version": BUNDLE_SCHEMA,
        "name": name,
        "task": task,
        "precision": precision,
        "onnx": {**onnx_info, "inputs": io["inputs"], "outputs": io["outputs"],
                 "graph": "obs -> normalizer (float32) -> " + ("recurrent core -> " if policy.is_recurrent else "")
                          + f"MLP ({precision}) -> Gaussian mean -> clip [-1, 1] -> actions (float32)"},
        "observation": observation_spec(env, layout, policy.normalizer_stats()),
        "action": action_spec(env, layout),
        **robot_spec(layout),
        "control": {"dt": layout["control_dt"], "decimation": layout["decimation"],
                    "sim_dt": layout["config"].get("sim_dt"), "episode_length": layout["episode_length"]},
        "recurrent": recurrent_spec(policy, io),
        "checkpoint": checkpoint,
        "golden": golden,
        "verification": {"report": "parity_report.json"},
        "task_config": layout["config"],
        "versions": versions(),
    }
