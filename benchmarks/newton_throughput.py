"""Env-steps per second of horde's Newton tasks against raw Newton stepping of the same model, in one process.

    python benchmarks/newton_throughput.py [--json] [--quick] [--device cpu] [--tasks ant humanoid quadruped]
                                           [--num-envs 64 512 4096]

For each task (default: ant, humanoid, quadruped; ant and humanoid with ``--quick``; any entry of
``BENCH_TASKS``) and size:
  * ``horde-graph``: ``env.step(actions)`` of the horde task (actuation, physics, health check, rewards,
    auto-reset, observations), replayed as one graph;
  * ``newton-raw``: the same MJCF model built with Newton's own API (same solver and solver options, contact
    stiffness and capacities, sim_dt and substeps, no horde code), ``substeps`` x solver.step recorded as one graph
    and replayed, with fixed random joint torques in ``control.joint_f`` (torque tasks) or fixed random targets for
    Newton's own joint drives with the task's gains and effort limits (PD tasks: close to horde's explicit PD law,
    not the same integration, so only torque tasks simulate exactly the same motion);
  * horde runs with failures, time-outs and reset noise off (:func:`bench_config`), so both simulate the same
    motions from the same initial pose;
  * ``ratio:horde/newton``: horde's rate over the raw rate (1.0 = no overhead);
  * ``mujoco-c`` (tasks whose MJCF has a motor per joint): MuJoCo's C engine on the same MJCF through
    ``mujoco.rollout`` with its thread pool (one thread per core), timestep = horde's sim_dt, the MJCF's own
    integrator, solver and cone (printed), the same fixed actions as actuator controls, ``decimation`` mj_steps per
    control step (PD tasks too: MuJoCo runs their actions as motor controls, so it times a different motion);
    ``ratio:horde/mujoco-c`` compares. Stock MuJoCo rejects nv_humanoid.xml (three touch sensors name geoms as
    sites): those sensor elements are removed before compiling, and the row's ``model_changes`` says so
    (:func:`mujoco_model`).
Newton rows state the Newton solver and, for MuJoCo-Warp, the integrator, constraint solver and friction cone it
takes from the MJCF; raw rows state how the raw loop drives the joints. For PD tasks Newton's drives become MuJoCo
position actuators (an implicit integrator also differentiates their damping), horde's PD law is explicit torques:
there the ratio compares two control laws as well as horde's overhead. One control step = ``decimation`` physics
substeps in both. Each figure is the median of ``--repeats`` timed windows; horde and raw Newton run the same number
of steps per window, alternating (:func:`paired_rates`), so both time the same phase of the motion under the same
machine load. With ``--json`` each line is one JSON object (keys task, impl, device, num_envs, env_steps_per_s, or
ratio for the ratio rows). ``--quick``: N=64, short windows.
"""

from __future__ import annotations

import math
import argparse
import json
import os
import statistics
import time

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import warp as wp

from horde.envs import ant, get_task, humanoid, lift, make, reach
from horde.sim.device import resolve_device
from horde.sim.actuation import Actuation


def config_drive(cfg) -> Actuation:
    """The drive of a task whose config has horde's actuation fields (ant, humanoid, reach)."""
    return Actuation(mode=cfg.action_mode, scale=cfg.action_scale, offset=cfg.default_joint_pos,
                 stiffness=cfg.joint_stiffness, damping=cfg.joint_damping, effort_limit=cfg.effort_limit)


@dataclass(frozen=True, kw_only=True)
class BenchTask:
    """How to rebuild a task's robot with Newton's own API and with MuJoCo, and how to make its runs comparable.

    The actuated joints are the last dofs (and coordinates) of the model, in the task's action order.
    """

    mjcf: Callable[[Any], str]
    """The task config -> path of the MJCF the task loads."""
    joints: Callable[[Any], Sequence[str]]
    """The task config -> its actuated joints, in action order."""
    quiet: Callable[[Any], dict]
    """The task config -> config changes that turn failures, time-outs, initial-state noise (and anything else that
    resets or perturbs an env) off, see :func:`bench_config`."""
    drive: Callable[[Any], Actuation] = config_drive
    """The task config -> how actions become torques (the raw loop rebuilds it with Newton's own joint drives)."""
    ground: bool = True
    """The task has a ground plane."""
    root_height: Callable[[Any], float | None] = lambda cfg: None
    """The task config -> initial root height [m] where the task overrides the MJCF's."""
    add_mjcf: dict = field(default_factory=dict)
    """Extra ``ModelBuilder.add_mjcf`` arguments the task's loader uses (e.g. self-collisions off)."""
    mujoco_c: bool = True
    """The MJCF has a motor per actuated joint, so MuJoCo's C engine can run it as a reference."""
    edit_builder: Callable[[Any, Any], None] = lambda cfg, builder: None
    """(task config, robot builder) -> None: what the task adds to its robot after loading (armature, free objects
    and props of its scene), appended after the actuated joints."""


def _newton_asset(name: str) -> Callable[[Any], str]:
    def path(cfg) -> str:
        import newton.examples

        return newton.examples.get_asset(name)
    return path


def _quiet_locomotion(cfg) -> dict:
    return {"episode_length": 2**30, "init_joint_pos_range": 0.0, "init_joint_vel_range": 0.0,
            "terminations": []}  # never fails but for the health check


def _quadruped_robot(cfg):
    from horde.envs.robots import resolve_robot

    return resolve_robot(cfg.robot)


def _legged_edit(cfg, builder) -> None:
    """The robot config's armature (the G1's reflected rotor inertias), as horde's velocity task adds it."""
    robot = _quadruped_robot(cfg)
    if robot.armature is not None:
        nj = len(robot.joints)
        for k, arm in enumerate(robot.armature):
            builder.joint_armature[builder.joint_dof_count - nj + k] = float(arm)


def _lift_edit(cfg, builder) -> None:
    """The cube and the table of the lift scene, through horde.sim.scene's builders (plain Newton calls)."""
    from horde.envs.lift import scene
    from horde.sim.scene import add_objects, add_props

    cube, table = scene(cfg)
    add_objects(builder, [cube])
    add_props(builder, [table])


def _quadruped_drive(cfg) -> Actuation:
    from horde.envs.velocity import _gains

    robot = _quadruped_robot(cfg)
    scale, stiffness, damping = _gains(cfg, robot)
    return Actuation(mode="pd", scale=scale, offset=robot.default_joint_pos, stiffness=stiffness, damping=damping,
                     effort_limit=robot.effort_limit)


BENCH_TASKS: dict[str, BenchTask] = {
    "ant": BenchTask(mjcf=_newton_asset("nv_ant.xml"), joints=lambda cfg: ant.JOINTS, quiet=_quiet_locomotion),
    "humanoid": BenchTask(mjcf=_newton_asset("nv_humanoid.xml"), joints=lambda cfg: humanoid.JOINTS,
                          quiet=_quiet_locomotion, root_height=lambda cfg: cfg.root_height),
    "reach": BenchTask(mjcf=lambda cfg: str(reach.ARM_MJCF), joints=lambda cfg: reach.JOINTS, ground=False,
                       quiet=lambda cfg: {"episode_length": 2**30, "init_joint_pos_range": 0.0,
                                          "init_joint_vel_range": 0.0}, mujoco_c=False),
    "quadruped": BenchTask(mjcf=lambda cfg: _quadruped_robot(cfg).mjcf_path(),
                           joints=lambda cfg: _quadruped_robot(cfg).joints, drive=_quadruped_drive,
                           quiet=lambda cfg: {"episode_length": 2**30, "init_joint_pos_range": 0.0,
                                              "init_yaw_range": 0.0, "max_tilt": math.pi},
                           add_mjcf={"enable_self_collisions": False, "parse_meshes": False, "parse_visuals": False}),
    "g1-velocity": BenchTask(mjcf=lambda cfg: _quadruped_robot(cfg).mjcf_path(),
                    joints=lambda cfg: _quadruped_robot(cfg).joints, drive=_quadruped_drive,
                    quiet=lambda cfg: {"episode_length": 2**30, "init_joint_pos_range": 0.0, "init_yaw_range": 0.0,
                                       "max_tilt": math.pi},
                    root_height=lambda cfg: _quadruped_robot(cfg).root_height, edit_builder=_legged_edit,
                    add_mjcf={"enable_self_collisions": False, "parse_meshes": False, "parse_visuals": False},
                    mujoco_c=False),
    "lift": BenchTask(mjcf=lambda cfg: str(lift.GRIPPER_MJCF), joints=lambda cfg: lift.JOINTS,
                      drive=lambda cfg: lift.actuation_of(cfg),
                      quiet=lambda cfg: {"episode_length": 2**30, "init_joint_pos_range": 0.0},
                      edit_builder=_lift_edit, add_mjcf={"enable_self_collisions": False}, mujoco_c=False),
}
"""Tasks this benchmark knows how to rebuild; a new task is one entry."""
DEFAULT_TASKS = ("ant", "humanoid", "quadruped")
QUICK_TASKS = ("ant", "humanoid")


def raw_newton_stepper(task: str, num_envs: int, device: str):
    """A step function that advances ``num_envs`` copies of the task's robot with plain Newton calls."""
    import newton

    from horde.sim.newton_build import make_solver

    spec, cfg = BENCH_TASKS[task], bench_config(task)
    joints, drive = spec.joints(cfg), spec.drive(cfg)
    use_mujoco = cfg.sim.solver == "mujoco"
    robot = newton.ModelBuilder()
    scene = newton.ModelBuilder()
    for b in (robot, scene):
        if use_mujoco:
            newton.solvers.SolverMuJoCo.register_custom_attributes(b)
        b.default_shape_cfg.ke = cfg.sim.contact_ke
    robot.add_mjcf(spec.mjcf(cfg), ignore_names=["floor", "ground"], **spec.add_mjcf)
    nj, dof0 = len(joints), robot.joint_dof_count - len(joints)  # actuated hinges: the last dofs and coordinates
    robot.joint_q[-nj:] = [float(v) for v in drive.offset]
    if drive.mode == "pd":  # Newton's own joint drives (torque tasks: joint_f below)
        for k in range(nj):
            d = dof0 + k
            robot.joint_target_ke[d] = float(drive.stiffness[k])
            robot.joint_target_kd[d] = float(drive.damping[k])
            robot.joint_target_mode[d] = int(newton.JointTargetMode.POSITION)
            robot.joint_effort_limit[d] = float(drive.effort_limit[k])
    if spec.root_height(cfg) is not None:
        robot.joint_q[2] = float(spec.root_height(cfg))
    spec.edit_builder(cfg, robot)
    if spec.ground:
        scene.add_ground_plane()
    scene.replicate(robot, num_envs)
    with wp.ScopedDevice(device):
        model = scene.finalize()
        # the same solver constructor and options as the horde task (one shared helper: the raw loop differs, not
        # the solver settings)
        solver = make_solver(model, cfg.sim.solver, iterations=cfg.sim.solver_iterations,
                             max_contacts=cfg.sim.max_contacts, max_constraints=cfg.sim.max_constraints)
        s0, s1, control = model.state(), model.state(), model.control()
        newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
        pipeline = None if use_mujoco else newton.CollisionPipeline(model)
        contacts = None if pipeline is None else pipeline.contacts()
        a = bench_actions(num_envs, nj) * torch.tensor(drive.scale)
        if drive.mode == "pd":
            target = control.joint_target_q.numpy().reshape(num_envs, -1)
            lower = np.asarray(robot.joint_limit_lower[dof0:dof0 + nj], np.float32)
            upper = np.asarray(robot.joint_limit_upper[dof0:dof0 + nj], np.float32)
            target[:, dof0:dof0 + nj] = np.clip(np.asarray(drive.offset, np.float32) + a.numpy(), lower, upper)
            control.joint_target_q.assign(target.reshape(-1))
        else:
            f = torch.zeros(num_envs, model.joint_dof_count // num_envs)
            f[:, dof0:dof0 + nj] = a
            control.joint_f.assign(wp.from_torch(f.reshape(-1).to(resolve_device(device).torch)))

        def simulate():
            a, b = s0, s1
            for _ in range(cfg.decimation):
                a.clear_forces()
                if pipeline is not None:
                    pipeline.collide(a, contacts)
                solver.step(a, b, control, contacts, cfg.sim_dt)
                a, b = b, a
            if cfg.decimation % 2:
                s0.assign(s1)

        start = model.state()
        start.assign(s0)
        simulate()  # compile and allocate lazily created buffers before recording, then rewind
        s0.assign(start)
        s1.assign(start)
        with wp.ScopedCapture(device=device) as cap:
            simulate()
    graph = cap.graph

    def step() -> None:
        wp.capture_launch(graph)

    step.state = s0  # for checks that both sides simulate the same motion
    return step


MUJOCO_INTEGRATORS = {0: "Euler", 1: "RK4", 2: "implicit", 3: "implicitfast"}
MUJOCO_SOLVERS = {0: "PGS", 1: "CG", 2: "Newton"}
MUJOCO_CONES = {0: "pyramidal", 1: "elliptic"}
_SENSOR_REFS = ("site", "body", "joint")
"""Sensor attributes that name an element of the same tag."""


def mujoco_model(path: str):
    """(MjModel, notes) of the MJCF at ``path`` for MuJoCo's C engine.

    Stock MuJoCo rejects an MJCF whose sensor names a missing object (nv_humanoid's ``head_touch`` and hand touch
    sensors name geoms as sites; Newton parses it): such sensor elements are removed from the parsed XML, which is
    then compiled with ``MjModel.from_xml_string``, mesh and texture directories resolved against the file's.
    ``notes`` lists what was removed (empty when the file loads as it is).
    """
    import xml.etree.ElementTree as ET

    import mujoco

    try:
        return mujoco.MjModel.from_xml_path(path), []
    except ValueError:
        pass
    root = ET.parse(path).getroot()
    names = {tag: {e.get("name") for e in root.iter(tag) if e.get("name")} for tag in _SENSOR_REFS}
    removed = []
    for sensors in root.iter("sensor"):
        for s in list(sensors):
            missing = [f"{k}={s.get(k)}" for k in _SENSOR_REFS if s.get(k) is not None and s.get(k) not in names[k]]
            if missing:
                sensors.remove(s)
                removed.append(f"{s.tag} '{s.get('name')}' ({', '.join(missing)})")
    compiler = root.find("compiler")
    if compiler is None:
        compiler = ET.Element("compiler")
        root.insert(0, compiler)
    directory = os.path.dirname(os.path.abspath(path))
    for key in ("meshdir", "texturedir"):  # relative to the file, as from_xml_path would resolve them
        compiler.set(key, os.path.join(directory, compiler.get(key, compiler.get("assetdir", ""))))
    model = mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode"))
    return model, [f"removed sensor {r}" for r in removed]


def mujoco_c_stepper(task: str, num_envs: int, *, chunk: int = 8):
    """A step function advancing ``num_envs`` copies of the task's MJCF ``chunk`` control steps with MuJoCo's C
    engine (``mujoco.rollout``, one worker thread per core); returns (step, chunk, settings)."""
    import mujoco
    from mujoco import rollout

    spec = BENCH_TASKS[task]
    if not spec.mujoco_c:
        raise ValueError(f"task '{task}' has no MuJoCo C reference (its MJCF has no motor per joint)")
    cfg = bench_config(task)
    model, notes = mujoco_model(spec.mjcf(cfg))
    model.opt.timestep = cfg.sim_dt
    threads = max(1, os.cpu_count() or 1)
    datas = [mujoco.MjData(model) for _ in range(threads)]
    if spec.root_height(cfg) is not None:  # the same initial pose as horde (the MJCF's root free joint: qpos 0..6)
        for d in datas:
            d.qpos[2] = spec.root_height(cfg)
    state_spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    init = np.empty(mujoco.mj_stateSize(model, state_spec))
    mujoco.mj_getState(model, datas[0], init, state_spec)
    nstep = chunk * cfg.decimation
    ctrl = np.repeat(bench_actions(num_envs, model.nu).numpy()[:, None, :].astype(np.float64), nstep, axis=1)
    state0 = np.tile(init, (num_envs, 1))
    out_state = np.empty((num_envs, nstep, init.size))
    sensors = np.empty((num_envs, nstep, model.nsensordata))

    def step() -> None:
        rollout.rollout(model, datas, state0, ctrl, nstep=nstep, state=out_state, sensordata=sensors,
                        persistent_pool=True)

    settings = {"integrator": MUJOCO_INTEGRATORS.get(int(model.opt.integrator), str(model.opt.integrator)),
                "solver": MUJOCO_SOLVERS.get(int(model.opt.solver), str(model.opt.solver)),
                "cone": MUJOCO_CONES.get(int(model.opt.cone), str(model.opt.cone)),
                "iterations": int(model.opt.iterations), "threads": threads, "mujoco": mujoco.__version__,
                "model_changes": notes}
    return step, chunk, settings


def bench_actions(num_envs: int, num_actions: int) -> torch.Tensor:
    """The fixed actions both sides apply, [num_envs, num_actions] in [-0.3, 0.3]."""
    g = torch.Generator(device="cpu").manual_seed(0)
    return (torch.rand(num_envs, num_actions, generator=g) * 2 - 1) * 0.3


def bench_config(task: str):
    """The task's default config with failures, time-outs and initial-state noise off, so that horde simulates
    exactly the motions of the raw loop (which never resets, from the default pose): MuJoCo's solver time depends on
    the contact state, so different motions would time different physics. The reset and observation kernels
    still run every step, on empty masks."""
    import dataclasses

    cfg = get_task(task).config
    if cfg.sim.solver == "auto":  # this script times the Newton path (MuJoCo-Warp); mujoco_batch.py the C engine
        cfg = dataclasses.replace(cfg, sim=dataclasses.replace(cfg.sim, solver="mujoco"))
    return dataclasses.replace(cfg, **BENCH_TASKS[task].quiet(cfg))


def paired_rates(steps: dict[str, Callable[[], None]], num_envs: int, sync, *, seconds: float,
                 repeats: int) -> dict[str, float]:
    """Median env-steps/s of each stepper over ``repeats`` rounds; in each round every stepper runs the same number
    of steps (a window of about ``seconds`` for the slowest), one after the other. Equal step counts keep the
    steppers at the same phase of the motion (MuJoCo's cost follows the contact state), and alternating windows
    share out the load of a busy machine instead of charging it to whichever ran during it."""
    for step in steps.values():  # warm-up
        for _ in range(3):
            step()
    sync()
    per_step = 0.0
    for step in steps.values():
        t0 = time.perf_counter()
        for _ in range(3):
            step()
        sync()
        per_step = max(per_step, (time.perf_counter() - t0) / 3)
    n = max(3, int(seconds / max(per_step, 1e-9)))
    rates: dict[str, list[float]] = {k: [] for k in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            t0 = time.perf_counter()
            for _ in range(n):
                step()
            sync()
            rates[name].append(num_envs * n / (time.perf_counter() - t0))
    return {k: statistics.median(v) for k, v in rates.items()}


def bench_pair(task: str, num_envs: int, device: str, *, seconds: float, repeats: int) -> dict[str, float]:
    """``newton-raw`` and ``horde-graph`` env-steps/s of ``task``, timed in alternating windows."""
    dev = resolve_device(device)
    sync = torch.cuda.synchronize if dev.is_cuda else (lambda: None)
    raw = raw_newton_stepper(task, num_envs, dev.warp)
    env = make(task, num_envs=num_envs, device=device, seed=0, config=bench_config(task))
    actions = bench_actions(num_envs, env.num_actions).to(env.device)
    return paired_rates({"newton-raw": raw, "horde-graph": lambda: env.step(actions)}, num_envs, sync,
                        seconds=seconds, repeats=repeats)


def bench_mujoco_c(task: str, num_envs: int, *, seconds: float, repeats: int) -> float:
    """MuJoCo C env-steps/s of ``task`` (CPU, its thread pool)."""
    step, chunk, _ = mujoco_c_stepper(task, num_envs)
    return paired_rates({"mujoco-c": step}, num_envs * chunk, lambda: None, seconds=seconds,
                        repeats=repeats)["mujoco-c"]


def _emit(rows: list, row: dict, as_json: bool) -> None:
    rows.append(row)
    if as_json:
        print(json.dumps(row), flush=True)


def newton_settings(task: str) -> dict:
    """Solver, integrator and constraint solver of the task's Newton world (MuJoCo-Warp reads the MJCF's options)."""
    cfg = bench_config(task)
    out = {"solver": cfg.sim.solver, "sim_dt": cfg.sim_dt, "substeps": cfg.decimation}
    if cfg.sim.solver == "mujoco":
        model, _ = mujoco_model(BENCH_TASKS[task].mjcf(cfg))
        out.update(integrator=MUJOCO_INTEGRATORS.get(int(model.opt.integrator), str(model.opt.integrator)),
                   mj_solver=MUJOCO_SOLVERS.get(int(model.opt.solver), str(model.opt.solver)),
                   cone=MUJOCO_CONES.get(int(model.opt.cone), str(model.opt.cone)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--quick", action="store_true", help="N=64 only, short windows (CI smoke)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--tasks", nargs="+", choices=sorted(BENCH_TASKS),
                    help=f"default: {' '.join(DEFAULT_TASKS)} ({' '.join(QUICK_TASKS)} with --quick)")
    ap.add_argument("--num-envs", nargs="+", type=int, default=[64, 512, 4096])
    ap.add_argument("--seconds", type=float, default=2.0, help="length of one timed window")
    ap.add_argument("--repeats", type=int, default=3, help="timed windows per figure (median reported)")
    ap.add_argument("--no-mujoco", action="store_true", help="skip the MuJoCo C engine reference")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    sizes, seconds, repeats = args.num_envs, args.seconds, args.repeats
    tasks = args.tasks or list(QUICK_TASKS if args.quick else DEFAULT_TASKS)
    if args.quick:
        sizes, seconds, repeats = [64], 0.3, 2
    rows: list[dict] = []
    for task in tasks:
        settings = newton_settings(task)
        pd = BENCH_TASKS[task].drive(get_task(task).config).mode == "pd"
        raw_control = "newton joint drives (PD targets)" if pd else "joint_f torques"
        use_mujoco = BENCH_TASKS[task].mujoco_c and not args.no_mujoco
        for n in sizes:
            rates = bench_pair(task, n, args.device, seconds=seconds, repeats=repeats)
            for impl in ("newton-raw", "horde-graph"):
                extra = {"raw_control": raw_control} if impl == "newton-raw" else {}
                _emit(rows, {"task": task, "impl": impl, "device": args.device, "num_envs": n, **settings, **extra,
                             "env_steps_per_s": round(rates[impl], 1), "repeats": repeats}, args.json)
            _emit(rows, {"task": task, "impl": "ratio:horde/newton", "device": args.device, "num_envs": n,
                         "ratio": round(rates["horde-graph"] / rates["newton-raw"], 3)}, args.json)
            if use_mujoco:
                rate = bench_mujoco_c(task, n, seconds=seconds, repeats=repeats)
                mj = mujoco_c_stepper(task, 1)[2]
                _emit(rows, {"task": task, "impl": "mujoco-c", "device": "cpu", "num_envs": n,
                             "sim_dt": settings["sim_dt"], "substeps": settings["substeps"],
                             "env_steps_per_s": round(rate, 1), "repeats": repeats, **mj}, args.json)
                _emit(rows, {"task": task, "impl": "ratio:horde/mujoco-c", "device": args.device, "num_envs": n,
                             "ratio": round(rates["horde-graph"] / rate, 3)}, args.json)
    if not args.json:
        w = max(len(t) for t in tasks) + 2
        print(f"{'task':<{w}}{'solver':<9}{'num_envs':>9}{'newton raw':>14}{'horde':>12}{'ratio':>8}{'mujoco C':>12}")
        for task in tasks:
            for n in sizes:
                r = {x["impl"]: x for x in rows if x["task"] == task and x["num_envs"] == n}
                mj = f"{r['mujoco-c']['env_steps_per_s']:>12,.0f}" if "mujoco-c" in r else f"{'-':>12}"
                print(f"{task:<{w}}{r['horde-graph']['solver']:<9}{n:>9}{r['newton-raw']['env_steps_per_s']:>14,.0f}"
                      f"{r['horde-graph']['env_steps_per_s']:>12,.0f}{r['ratio:horde/newton']['ratio']:>8.2f}{mj}")
        for task in tasks:
            h = next(x for x in rows if x["task"] == task and x["impl"] == "horde-graph")
            raw = next(x for x in rows if x["task"] == task and x["impl"] == "newton-raw")
            line = (f"{task}: Newton solver {h['solver']}, {h['substeps']} x {h['sim_dt']} s substeps, "
                    f"raw loop drives: {raw['raw_control']}")
            if "integrator" in h:
                line += f" (MuJoCo-Warp: {h['integrator']} integrator, {h['mj_solver']} solver, {h['cone']} cones)"
            print(line)
            mj = next((x for x in rows if x["task"] == task and x["impl"] == "mujoco-c"), None)
            if mj is not None:
                print(f"  MuJoCo C: mujoco {mj['mujoco']}, {mj['integrator']} integrator, {mj['solver']} solver "
                      f"({mj['iterations']} iterations), {mj['cone']} cones, {mj['threads']} threads, timestep "
                      f"{mj['sim_dt']} s" + "".join(f"; {c}" for c in mj["model_changes"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
