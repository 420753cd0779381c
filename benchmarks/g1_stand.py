"""Does a legged robot stand under zero actions? Plain MuJoCo, no horde code in the loop: the robot's own MJCF (as
horde's registry resolves it), held at its default pose by the PD law of its task (stiffness, damping, effort limit
and armature from the robot entry), from rest on flat ground, one robot, no pushes and no noise.

    python benchmarks/g1_stand.py [--task g1-velocity] [--seconds 4] [--kp-scale 1 2 4] [--kp 100] [--json]

For each variant it prints when the base first tilts past the task's ``max_tilt`` (the task's fall termination) or
"up", the centre of mass's height and its lead over the ankles at the start, and the inverted-pendulum estimate
``m g h`` [N m/rad] beside the summed stiffness of the ankle pitch joints: a stiffness below ``m g h`` cannot hold
the pose against gravity, so zero actions fall and standing is learned. ``--kp-scale`` multiplies every joint's
stiffness (and damping), ``--kp`` sets every joint's stiffness to one value (damping unchanged).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import mujoco
import numpy as np


def build(task: str):
    """(model, robot entry, task config, PD gains) of ``task``'s robot."""
    from horde.envs import get_task
    from horde.envs.robots import resolve_robot
    from horde.envs.velocity import _gains

    from horde.envs import TASKS
    from horde.envs.velocity import VelocityEnv

    cfg = get_task(task).config
    if not issubclass(get_task(task).env_cls, VelocityEnv):
        legged = sorted(n for n, t in TASKS.items() if issubclass(t.env_cls, VelocityEnv))
        raise ValueError(f"not a legged velocity task; they are: {', '.join(legged)}")
    robot = resolve_robot(cfg.robot)
    spec = mujoco.MjSpec.from_file(str(robot.mjcf_path()))
    if not any(g.type == mujoco.mjtGeom.mjGEOM_PLANE for g in spec.worldbody.geoms):  # mjlab's G1 comes without one
        spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1])
    model = spec.compile()
    model.opt.timestep = cfg.sim_dt
    _, kp, kd = _gains(cfg, robot)
    return model, robot, cfg, np.array(kp), np.array(kd)


def stand(model, robot, cfg, kp, kd, seconds: float) -> dict:
    """Hold the default pose with PD from rest; when the base tilts past ``cfg.max_tilt`` (or never)."""
    data = mujoco.MjData(model)
    qadr = np.array([model.jnt_qposadr[model.joint(j).id] for j in robot.joints])
    dadr = np.array([model.jnt_dofadr[model.joint(j).id] for j in robot.joints])
    if robot.armature is not None:
        model.dof_armature[dadr] = robot.armature
    q0 = np.array(robot.default_joint_pos)
    effort = np.array(robot.effort_limit)
    data.qpos[qadr] = q0
    if robot.root_height is not None:
        data.qpos[2] = robot.root_height
    mujoco.mj_forward(model, data)
    base = model.body(robot.base).id
    ankles = [model.body(f).id for f in robot.feet]
    com0 = data.subtree_com[base].copy()
    lead = float(com0[0] - np.mean([data.xpos[a][0] for a in ankles]))
    height = float(com0[2] - np.mean([data.xpos[a][2] for a in ankles]))
    mass = float(model.body_subtreemass[base])
    fall_s, max_tilt = None, 0.0
    for k in range(int(seconds / model.opt.timestep)):
        q, qd = data.qpos[qadr], data.qvel[dadr]
        data.qfrc_applied[dadr] = np.clip(kp * (q0 - q) - kd * qd, -effort, effort)
        mujoco.mj_step(model, data)
        tilt = math.acos(max(-1.0, min(1.0, float(data.xmat[base][8]))))
        max_tilt = max(max_tilt, tilt)
        if fall_s is None and tilt > cfg.max_tilt:
            fall_s = (k + 1) * model.opt.timestep
            break
    return {"fall_s": fall_s, "max_tilt": max_tilt, "com_height": float(com0[2]), "com_lead_over_ankles": lead,
            "mass": mass, "mgh": mass * 9.81 * height, "final_base_height": float(data.xpos[base][2])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="g1-velocity", help="a legged task (its robot, gains and max_tilt)")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--kp-scale", type=float, nargs="+", default=[1.0, 2.0, 4.0])
    ap.add_argument("--kp", type=float, nargs="*", default=[100.0], help="every joint's stiffness [N m/rad]")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from horde.envs import UnknownTaskError
    from horde.envs.robots import RobotNotInstalledError

    try:
        model, robot, cfg, kp, kd = build(args.task)
    except (UnknownTaskError, RobotNotInstalledError, ValueError) as exc:
        print(f"g1_stand.py: --task {args.task}: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    ankle = [k for k, j in enumerate(robot.joints) if "ankle_pitch" in j]
    variants = [(f"stiffness x{s:g}", kp * s, kd * s) for s in args.kp_scale]
    variants += [(f"stiffness {v:g} everywhere", np.full_like(kp, v), kd) for v in args.kp]
    for name, p, d in variants:
        row = {"task": args.task, "variant": name, "ankle_pitch_stiffness_sum": float(p[ankle].sum()),
               **stand(model, robot, cfg, p, d, args.seconds)}
        if args.json:
            print(json.dumps(row), flush=True)
            continue
        fell = f"falls at {row['fall_s']:.2f} s" if row["fall_s"] is not None else f"up for {args.seconds:g} s"
        ankles = (f"ankle pitch stiffness {row['ankle_pitch_stiffness_sum']:.0f} N m/rad vs " if ankle else "")
        print(f"{name:26s} {fell:16s} (max tilt {row['max_tilt']:.2f} rad)  {ankles}m g h {row['mgh']:.0f} "
              f"(mass {row['mass']:.1f} kg, COM {row['com_height']:.2f} m up and "
              f"{100 * row['com_lead_over_ankles']:.1f} cm ahead of the feet; base {row['final_base_height']:.2f} m up "
              "at the end)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
