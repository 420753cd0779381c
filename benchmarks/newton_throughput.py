"""Env-steps per second of horde's Newton tasks against raw Newton stepping of the same model, in one process.

    python benchmarks/newton_throughput.py [--json] [--quick] [--device cpu] [--tasks ant] [--num-envs 64 512 4096]

For each task and size:
  * ``horde-graph``: ``env.step(actions)`` of the horde task (actuation, physics, health check, rewards,
    auto-reset, observations), replayed as one graph;
  * ``newton-raw``: the same MJCF model built with Newton's own API (same solver and solver options, contact
    stiffness, sim_dt and substeps, no horde code), ``substeps`` x solver.step recorded as one graph and replayed,
    with fixed random joint torques in ``control.joint_f``;
  * horde runs with failures, time-outs and reset noise off (:func:`bench_config`), so both simulate the same
    motions from the same initial pose;
  * ``ratio:horde/newton``: horde's rate over the raw rate (1.0 = no overhead);
  * ``mujoco-c`` (ant only): MuJoCo's C engine on the same MJCF through ``mujoco.rollout`` with its thread pool
    (one thread per core), timestep = horde's sim_dt, the MJCF's own integrator and solver (printed), the same
    fixed actions as actuator controls, ``decimation`` mj_steps per control step; ``ratio:horde/mujoco-c`` compares.
One control step = ``decimation`` physics substeps in both. Each figure is the median of ``--repeats`` timed
windows. With ``--json`` each line is one JSON object (keys task, impl, device, num_envs, env_steps_per_s, or
ratio for the ratio rows).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import warp as wp

from horde.envs import get_task, make
from horde.sim.device import resolve_device


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sim_throughput import median_rate as _rate  # noqa: E402  (one timing method for every throughput figure)


def raw_newton_stepper(task: str, num_envs: int, device: str):
    """A step function that advances ``num_envs`` copies of the task's robot with plain Newton calls."""
    import newton
    import newton.examples

    from horde.envs import ant, reach
    from horde.sim.newton_world import make_solver

    cfg = get_task(task).config
    if cfg.action_mode != "torque":
        raise ValueError(f"the raw reference applies joint torques; task '{task}' uses {cfg.action_mode} actions")
    path = {"ant": newton.examples.get_asset("nv_ant.xml"), "reach": str(reach.ARM_MJCF)}[task]
    joints = {"ant": ant.JOINTS, "reach": reach.JOINTS}[task]
    ground = task == "ant"
    use_mujoco = cfg.sim.solver == "mujoco"
    robot = newton.ModelBuilder()
    scene = newton.ModelBuilder()
    for b in (robot, scene):
        if use_mujoco:
            newton.solvers.SolverMuJoCo.register_custom_attributes(b)
        b.default_shape_cfg.ke = cfg.sim.contact_ke
    robot.add_mjcf(path, ignore_names=["floor", "ground"])
    for name, v in zip(joints, cfg.default_joint_pos):
        j = next(k for k, lbl in enumerate(robot.joint_label) if lbl.split("/")[-1] == name)
        robot.joint_q[robot.joint_q_start[j]] = v
    if ground:
        scene.add_ground_plane()
    scene.replicate(robot, num_envs)
    with wp.ScopedDevice(device):
        model = scene.finalize()
        # the same solver constructor and options as the horde task (one shared helper: the raw loop differs, not
        # the solver settings)
        solver = make_solver(model, cfg.sim.solver, iterations=cfg.sim.solver_iterations)
        s0, s1, control = model.state(), model.state(), model.control()
        newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
        pipeline = None if use_mujoco else newton.CollisionPipeline(model)
        contacts = None if pipeline is None else pipeline.contacts()
        f = torch.zeros(num_envs, model.joint_dof_count // num_envs)
        f[:, -len(joints):] = bench_actions(num_envs, len(joints)) * torch.tensor(cfg.action_scale)
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


def mujoco_c_stepper(task: str, num_envs: int, *, chunk: int = 8):
    """A step function advancing ``num_envs`` copies of the task's MJCF ``chunk`` control steps with MuJoCo's C
    engine (``mujoco.rollout``, one worker thread per core); returns (step, settings)."""
    import mujoco
    import newton.examples
    from mujoco import rollout

    if task != "ant":
        raise ValueError("the MuJoCo C reference is wired for the ant (its MJCF has motor actuators)")
    cfg = bench_config(task)
    model = mujoco.MjModel.from_xml_path(newton.examples.get_asset("nv_ant.xml"))
    model.opt.timestep = cfg.sim_dt
    threads = max(1, os.cpu_count() or 1)
    datas = [mujoco.MjData(model) for _ in range(threads)]
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    init = np.empty(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, datas[0], init, spec)
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
                "iterations": int(model.opt.iterations), "threads": threads, "mujoco": mujoco.__version__}
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
    changes = {"episode_length": 2**30, "init_joint_pos_range": 0.0, "init_joint_vel_range": 0.0}
    if task == "ant":
        changes.update(termination_height=-1.0e3, min_up=-2.0)
    return dataclasses.replace(cfg, **changes)


def bench(task: str, impl: str, num_envs: int, device: str, *, seconds: float, repeats: int) -> float:
    dev = resolve_device(device)
    sync = torch.cuda.synchronize if dev.is_cuda else (lambda: None)
    if impl == "mujoco-c":
        step, chunk, _ = mujoco_c_stepper(task, num_envs)
        return _rate(step, num_envs * chunk, sync, seconds=seconds, repeats=repeats)
    if impl == "newton-raw":
        return _rate(raw_newton_stepper(task, num_envs, dev.warp), num_envs, sync, seconds=seconds, repeats=repeats)
    env = make(task, num_envs=num_envs, device=device, seed=0, config=bench_config(task))
    actions = bench_actions(num_envs, env.num_actions).to(env.device)
    return _rate(lambda: env.step(actions), num_envs, sync, seconds=seconds, repeats=repeats)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--quick", action="store_true", help="one small size, short windows (CI smoke)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--tasks", nargs="+", default=["ant"])
    ap.add_argument("--num-envs", nargs="+", type=int, default=[64, 512, 4096])
    ap.add_argument("--seconds", type=float, default=2.0, help="length of one timed window")
    ap.add_argument("--repeats", type=int, default=3, help="timed windows per figure (median reported)")
    ap.add_argument("--no-mujoco", action="store_true", help="skip the MuJoCo C engine reference")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    sizes, seconds, repeats = args.num_envs, args.seconds, args.repeats
    if args.quick:
        sizes, seconds, repeats = [64], 0.3, 2
    rows = []
    for task in args.tasks:
        cfg = get_task(task).config
        for n in sizes:
            rates = {}
            for impl in ("newton-raw", "horde-graph"):
                rates[impl] = bench(task, impl, n, args.device, seconds=seconds, repeats=repeats)
                row = {"task": task, "impl": impl, "device": args.device, "num_envs": n, "solver": cfg.sim.solver,
                       "sim_dt": cfg.sim_dt, "substeps": cfg.decimation, "env_steps_per_s": round(rates[impl], 1),
                       "repeats": repeats}
                rows.append(row)
                if args.json:
                    print(json.dumps(row), flush=True)
            ratio = rates["horde-graph"] / rates["newton-raw"]
            row = {"task": task, "impl": "ratio:horde/newton", "device": args.device, "num_envs": n,
                   "ratio": round(ratio, 3)}
            rows.append(row)
            if args.json:
                print(json.dumps(row), flush=True)
            if task == "ant" and not args.no_mujoco:
                rate = bench(task, "mujoco-c", n, "cpu", seconds=seconds, repeats=repeats)
                settings = mujoco_c_stepper(task, 1)[2]
                mj = {"task": task, "impl": "mujoco-c", "device": "cpu", "num_envs": n, "sim_dt": cfg.sim_dt,
                      "substeps": cfg.decimation, "env_steps_per_s": round(rate, 1), "repeats": repeats, **settings}
                cmp = {"task": task, "impl": "ratio:horde/mujoco-c", "device": args.device, "num_envs": n,
                       "ratio": round(rates["horde-graph"] / rate, 3)}
                rows += [mj, cmp]
                if args.json:
                    print(json.dumps(mj), flush=True)
                    print(json.dumps(cmp), flush=True)
    if not args.json:
        print(f"{'task':<8}{'solver':<13}{'num_envs':>9}{'newton raw':>14}{'horde':>12}{'ratio':>8}{'mujoco C':>12}")
        for task in args.tasks:
            for n in sizes:
                r = {x["impl"]: x for x in rows if x["task"] == task and x["num_envs"] == n}
                mj = f"{r['mujoco-c']['env_steps_per_s']:>12,.0f}" if "mujoco-c" in r else f"{'-':>12}"
                print(f"{task:<8}{r['horde-graph']['solver']:<13}{n:>9}{r['newton-raw']['env_steps_per_s']:>14,.0f}"
                      f"{r['horde-graph']['env_steps_per_s']:>12,.0f}{r['ratio:horde/newton']['ratio']:>8.2f}{mj}")
        if "mujoco-c" in {x["impl"] for x in rows}:
            mj = next(x for x in rows if x["impl"] == "mujoco-c")
            print(f"MuJoCo C: mujoco {mj['mujoco']}, {mj['integrator']} integrator, {mj['solver']} solver "
                  f"({mj['iterations']} iterations), {mj['threads']} threads, timestep {mj['sim_dt']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
