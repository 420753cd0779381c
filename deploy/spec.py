"""``policy.json``: everything a robot-side program needs to feed the ONNX graph and use its actions.

Observation layout (slices, scales, clips, units, frames), action layout (joint names in order, type, scale,
offset, default positions, clip), PD gains and effort limits, the robot model trained on, control period, recurrent
state, normalizer statistics, provenance (checkpoint, ONNX sha256, versions) and the golden-file tolerances.
``run_policy.py`` reads it; its schema version is :data:`horde.deploy.robot.run_policy.BUNDLE_SCHEMA`.
"""

from __future__ import annotations

import platform

import horde
from horde.deploy.robot.run_policy import BUNDLE_SCHEMA


def observation_spec(env, layout: dict, normalizer: dict | None) -> dict:
    """The observation from the task's terms (``env.observation_terms()``, :mod:`horde.envs.observations`):
    ``sources``, one block per term (the raw quantity it reads, its columns' slice, offset, scale and clip; what
    :func:`horde.deploy.robot.observations.build_observation` reads; ``training_noise``, the half-width of the
    uniform noise added to the raw value in training only, where a term has it), and ``terms``, the same per column.
    The value fed to the graph is ``clip((raw - offset) * scale, -clip, clip)``; the normalizer is inside the
    graph.

    A term with ``history`` H > 1 (``ObsTerm.history``) states it in its block: the slice spans H frames of the
    source, newest first (``history_layout``), ``columns`` names them all and ``offset``, ``scale`` and ``unit``
    are one frame's; each column of ``terms`` gives its ``lag`` (steps ago, 0: now). The robot keeps the frames
    (:class:`horde.deploy.robot.observations.ObservationFrames`). A delayed term (``ObsTerm.delay``) states its
    ``delay`` [min, max] (control steps, training only) and the observation its ``delay_note``: the robot feeds its
    latest reading."""
    from horde.envs.observations import DELAY_NOTE, HISTORY_LAYOUT, columns_of, raw_term, term_slices

    names = layout["obs_names"]
    declared = getattr(env, "observation_terms", None)  # an env that is no WarpTaskEnv: each column as it is
    terms = declared() if callable(declared) else tuple(raw_term(n) for n in names)
    if list(columns_of(terms)) != list(names):
        raise ValueError(f"{type(env).__name__}: observation terms name columns {list(columns_of(terms))[:6]}..., "
                         f"the env's obs_names {list(names)[:6]}...")
    blocks, columns = [], []
    for t, lo, hi in term_slices(terms):
        offsets, scales, units = t.per_column("offset"), t.per_column("scale"), t.units()
        blocks.append({"term": t.name, "source": t.source, "slice": [lo, hi], "columns": list(t.names),
                       "offset": offsets, "scale": scales, "clip": t.clip, "unit": units, "frame": t.frame,
                       "joints": list(t.joints) or None, "history": t.history,
                       **({"training_noise": t.noise} if t.noise > 0 else {}),
                       **({"delay": list(t.delay)} if t.delay[1] > 0 else {})})
        w = t.frame_width
        columns += [{"name": c, "slice": [lo + k, lo + k + 1], "term": t.name, "source": t.source,
                     "offset": offsets[k % w], "scale": scales[k % w], "clip": t.clip, "unit": units[k % w],
                     "frame": t.frame, "lag": k // w}
                    for k, c in enumerate(t.names)]
    norm = None if normalizer is None else {**normalizer, "formula": "(obs - mean) / (std + eps)", "in_graph": True}
    out = {"dim": len(names), "sources": blocks, "terms": columns,
           "formula": "obs = clip((raw - offset) * scale, -clip, clip)", "normalizer": norm}
    if any(t.history > 1 for t in terms):
        out["history_layout"] = HISTORY_LAYOUT
    if any(t.delay[1] > 0 for t in terms):
        out["delay_note"] = DELAY_NOTE
    images = list(getattr(env, "obs_images", ()) or ())
    if images:  # images travel flattened in the observation vector; this says how to lay them out
        out["images"] = images
    return out


# Tasks without a world whose actuation policy.json could read (classic control; an env that is no WarpTaskEnv) may
# name it in their config with these fields; :func:`actuation` falls back on them.
ACTION_MODE, DEFAULT_POS, KP, KD, EFFORT = ("action_mode", "default_joint_pos", "joint_stiffness", "joint_damping",
                                            "effort_limit")
SCALAR_GAINS = {KP: "stiffness", KD: "damping"}
"""Velocity-tracking configs may override every joint's gain with one value under these names."""
VELOCITY = "velocity_limit"


def ran_actuation(env, layout: dict):
    """``(Actuation, actuated joint names)`` of the world that ran the task (:attr:`NewtonWorld.actuation`), when
    every action column is one of its joints; else None (classic control; the lift, whose columns are an IK
    command and a gripper: its ``command_spec`` says how they become joint targets)."""
    world = getattr(env, "world", None)
    act, joints = getattr(world, "actuation", None), getattr(world, "actuated_joints", None)
    if act is None or joints is None or callable(getattr(env, "command_spec", None)):
        return None
    return (act, list(joints)) if set(layout["action_names"]) <= set(joints) else None


def actuation(layout: dict, env=None) -> dict:
    """Default pose, PD gains, effort and DC-motor velocity limits per action column (None where the task has none).

    From the :class:`horde.sim.actuation.Actuation` the env's world ran (the law the physics applied, gains
    overridden in the config included), taken at each action column's joint; for envs without one, from the task
    config (its fields above, or the robot it names)."""
    ran = ran_actuation(env, layout) if env is not None else None
    if ran is not None:
        act, joints = ran
        idx = [joints.index(j) for j in layout["action_names"]]

        def pick(values):
            return None if values is None else [float(values[i]) for i in idx]

        return {DEFAULT_POS: pick(act.offset), KP: pick(act.stiffness), KD: pick(act.damping),
                EFFORT: pick(act.effort_limit), VELOCITY: pick(act.velocity_limit), ACTION_MODE: act.mode}
    cfg, n = layout["config"], len(layout["action_names"])
    out = {k: cfg.get(k) for k in (DEFAULT_POS, KP, KD, EFFORT)}
    for key, scalar in SCALAR_GAINS.items():
        if out[key] is None and isinstance(cfg.get(scalar), (int, float)):
            out[key] = [float(cfg[scalar])] * n
    from horde.envs.robots import ROBOTS

    robot = ROBOTS.get(cfg.get("robot"))
    if robot is not None:
        out[DEFAULT_POS] = out[DEFAULT_POS] or list(robot.default_joint_pos)
        out[EFFORT] = out[EFFORT] or list(robot.effort_limit)
        out[KP] = out[KP] or list(robot.stiffness)
        out[KD] = out[KD] or list(robot.damping)
    out = {k: list(v) if v is not None else None for k, v in out.items()}
    out[VELOCITY] = _dc_motor_velocity_limits(layout)
    out[ACTION_MODE] = cfg.get(ACTION_MODE)
    return out


def held_joints(env, layout: dict) -> dict | None:
    """The actuated joints no action column drives (the G1's waist and arms under ``action_joints=legs``): the PD
    law holds each at its target (the Actuation's offset) with its gains, every physics substep, as in training; a
    robot-side program must command them too. None when every actuated joint is an action column."""
    ran = ran_actuation(env, layout) if env is not None else None
    if ran is None:
        return None
    act, joints = ran
    held = [k for k, j in enumerate(joints) if j not in layout["action_names"]]
    if not held:
        return None
    return {"names": [joints[k] for k in held], "target": [float(act.offset[k]) for k in held],
            "kp": [float(act.stiffness[k]) for k in held], "kd": [float(act.damping[k]) for k in held],
            "effort_limits": [float(act.effort_limit[k]) for k in held],
            "law": "tau = clip(kp * (target - q) - kd * qd, -effort, effort), every physics substep"}


def _is_pd(layout: dict, env=None) -> bool:
    """PD position targets: the Actuation that ran says so, else the config's ``action_mode``, else (tasks without
    one) the action type."""
    ran = ran_actuation(env, layout) if env is not None else None
    if ran is not None:
        return ran[0].mode == "pd"
    mode = layout["config"].get(ACTION_MODE)
    return mode == "pd" if mode is not None else layout.get("action_type") == "position_target"


def action_spec(env, layout: dict) -> dict:
    """Action columns in order and how an action in [-1, 1] becomes a physical command.

    Position-target (pd) actions are offsets around the default joint positions; torque and force actions have
    no offset.
    """
    names = layout["action_names"]
    n = len(names)
    command = getattr(env, "command_spec", None)
    if callable(command):  # a task whose actions are not one per joint (the lift: IK deltas, a coupled gripper)
        return {"names": names, "type": layout["action_type"], "unit": layout["action_unit"],
                "scale": list(layout["action_scale"]), "offset": [0.0] * n, "clip": [-1.0, 1.0],
                "default_joint_pos": actuation(layout, env)[DEFAULT_POS], "command": command(),
                "formula": "scale * clip(action, -1, 1) is a step of the command's state (see command)"}
    default_pos = actuation(layout, env)[DEFAULT_POS]
    offset = list(default_pos) if _is_pd(layout, env) and default_pos is not None else [0.0] * n
    return {
        "names": names,
        "type": layout["action_type"],
        "unit": layout["action_unit"],
        "scale": list(layout["action_scale"]),
        "offset": offset,
        "default_joint_pos": default_pos,
        "clip": [-1.0, 1.0],
        **_squash(layout),
    }


def _squash(layout: dict) -> dict:
    """How an action becomes the fraction of ``scale`` applied: clipped to [-1, 1], or through tanh
    (``task.action_squash=tanh``, the velocity task's option; the env applies it before the actuation law, to the
    unclipped action it is given: the graph does not clip then, and ``clip`` is null)."""
    if layout["config"].get("action_squash") == "tanh":
        return {"squash": "tanh", "clip": None, "formula": "command = offset + scale * tanh(action)"}
    return {"squash": "clip", "formula": "command = offset + scale * clip(action, -1, 1)"}


def robot_spec(env, layout: dict) -> dict:
    """PD gains (pd action mode only) and effort limits per action column, null where the task has none (classic
    control), and the held joints (:func:`held_joints`). PD law, every physics substep:
    ``tau = clip(kp * (target - q) - kd * qd, -effort, effort)`` with the target clipped to the joint's range.
    With the DC-motor model (``task.dc_motor``), ``velocity_limits`` holds each motor's no-load speed and the clip is
    ``[effort * (-1 - qd / v), effort * (1 - qd / v)]`` within +- effort; null without it."""
    act = actuation(layout, env)
    pd = _is_pd(layout, env)
    velocity = act[VELOCITY]
    out = {"pd_gains": {"kp": act[KP] if pd else None, "kd": act[KD] if pd else None,
                        "kp_unit": "N m/rad", "kd_unit": "N m s/rad"},
           "effort_limits": act[EFFORT], "effort_unit": "N m", "velocity_limits": velocity,
           "held_joints": held_joints(env, layout)}
    if velocity is not None:
        out["torque_speed"] = "clip(tau, max(-effort, effort * (-1 - qd / v)), min(effort, effort * (1 - qd / v)))"
    return out


def _dc_motor_velocity_limits(layout: dict) -> list[float] | None:
    """No-load joint speeds [rad/s] when the task simulated DC motors (``task.dc_motor``), else None."""
    cfg = layout["config"]
    if not cfg.get("dc_motor"):
        return None
    from horde.envs.robots import ROBOTS

    robot = ROBOTS.get(cfg.get("robot"))
    return list(robot.velocity_limit) if robot is not None and robot.velocity_limit is not None else None


def robot_model(layout: dict) -> dict | None:
    """The robot model the policy was trained on: the config's ``robot`` (a legged robot of
    :data:`horde.envs.robots.ROBOTS` or an arm of :data:`horde.envs.arms.ARMS`) and where its model comes from, so
    that a robot-side program can refuse a policy trained on another model (horde's ``quad12`` has the Go2's joint
    names, not its model); None for tasks that name no registered robot."""
    from horde.envs.arms import ARMS
    from horde.envs.robots import ROBOTS

    name = layout["config"].get("robot")
    robot = (ROBOTS.get(name) or ARMS.get(name)) if isinstance(name, str) else None
    return None if robot is None else {"name": robot.name, "source": robot.source}


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
                          + f"MLP ({precision}) -> Gaussian mean -> "
                          + ("tanh -> " if getattr(policy, "squash", None) == "tanh" else "")
                          + ("clip [-1, 1] -> " if policy.clip else "") + "actions (float32)",
                 "action_squash": getattr(policy, "squash", None)},
        "observation": observation_spec(env, layout, policy.normalizer_stats()),
        "action": action_spec(env, layout),
        **robot_spec(env, layout),
        "robot_model": robot_model(layout),
        "control": {"dt": layout["control_dt"], "decimation": layout["decimation"],
                    "sim_dt": layout["config"].get("sim_dt"), "episode_length": layout["episode_length"]},
        "recurrent": recurrent_spec(policy, io),
        "checkpoint": checkpoint,
        "golden": golden,
        "verification": {"report": "parity_report.json"},
        "task_config": layout["config"],
        "versions": versions(),
    }
