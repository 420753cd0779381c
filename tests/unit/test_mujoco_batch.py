"""MuJoCo's C engine as the articulated backend (``task.sim.solver=mujoco-c``, :mod:`horde.sim.mujoco_batch`): the
split step graph, agreement with MuJoCo-Warp, exact resume, randomization, contact forces and the IMU."""

import copy
import dataclasses

import numpy as np
import pytest
import torch
import warp as wp

from horde.envs import get_task, make
from horde.sim.fields import FieldError
from horde.sim.graph import StepGraph, host_call


def _env(task, solver, num_envs=8, seed=0, **changes):
    cfg = copy.deepcopy(get_task(task).config)
    cfg.sim = dataclasses.replace(cfg.sim, solver=solver)
    for key, value in changes.items():
        setattr(cfg, key, value)
    return make(task, num_envs=num_envs, device="cpu", seed=seed, config=cfg)


@wp.kernel
def _add(x: wp.array(dtype=float), v: float):
    x[wp.tid()] += v


def test_host_call_splits_the_recorded_graph():
    """Launches before and after a host call replay in order around it, every replay (not only the recording)."""
    x = wp.zeros(1, dtype=float, device="cpu")
    seen = []

    def step():
        wp.launch(_add, 1, inputs=[x, 1.0], device="cpu")
        host_call(lambda: seen.append(float(x.numpy()[0])))
        wp.launch(_add, 1, inputs=[x, 10.0], device="cpu")

    g = StepGraph(step, "cpu", kernels=[_add])
    for _ in range(3):
        g()
    assert g.captured
    assert seen == [1.0, 12.0, 23.0] and float(x.numpy()[0]) == 33.0


def _rollout(env, steps, seed=1):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        env.step(torch.rand(env.num_envs, env.num_actions, generator=g) * 2 - 1)
        out.append(env.world.joint_q.clone())
    return torch.stack(out)


@pytest.mark.parametrize("task,steps,tol", [("reach", 50, 5e-5), ("quadruped", 20, 1e-3), ("ant", 5, 1e-4)])
def test_backends_agree(task, steps, tol):
    """Same MuJoCo model, initial state and actions: MuJoCo's C engine (float64) and MuJoCo-Warp (float32) stay
    together. The contact-free arm within float32 noise for 50 control steps; legged robots under random actions
    diverge once contacts amplify the rounding (the ant by step ~10), so
    they are held to their first steps. Observed: reach 7e-6 (values of about 1: float32 rounding over 200
    substeps), quadruped 6e-6, ant 6e-7."""
    a = _rollout(_env(task, "mujoco"), steps)
    b = _rollout(_env(task, "mujoco-c"), steps)
    assert float((a - b).abs().max()) < tol


def test_auto_is_the_c_engine_on_cpu():
    env = make("ant", num_envs=2, device="cpu")
    assert env.world.sim.solver == "mujoco-c" and env.world.steps_mujoco_c


@pytest.mark.parametrize("task", ["quadruped-rough", "lift"])
def test_env_state_restores_exactly(task):
    """get_env_state/set_env_state continue bit for bit (MuJoCo's float64 rows and warm start are in the state),
    through resets, pushes and action delays (randomization on for the quadruped)."""
    changes = {}
    if task == "quadruped-rough":
        dr = dataclasses.replace(get_task(task).config.randomization, enabled=True, push_interval=0.1)
        changes = {"randomization": dr, "episode_length": 30}
    env = _env(task, "mujoco-c", num_envs=6, seed=2, **changes)
    _rollout(env, 25, seed=3)
    saved = env.get_env_state()
    assert "mj_state" in saved
    first = _rollout(env, 40, seed=4)
    env.set_env_state(saved)
    again = _rollout(env, 40, seed=4)
    assert torch.equal(first, again)


@pytest.mark.parametrize("task", ["ant", "reach"])
def test_graph_replay_equals_eager_stepping(task):
    """Torques (the ant: one call of held torques) and MuJoCo's own PD actuators (the arm)."""
    def run(use_graph):
        cfg = copy.deepcopy(get_task(task).config)
        cfg = dataclasses.replace(cfg, use_graph=use_graph, episode_length=20,
                                  sim=dataclasses.replace(cfg.sim, solver="mujoco-c", mujoco_actuators=True))
        env = make(task, num_envs=6, device="cpu", seed=5, config=cfg)
        return _rollout(env, 45)

    assert torch.equal(run(True), run(False))


def _pd_rollout(env, steps, seed=1):
    g = torch.Generator().manual_seed(seed)
    q, f = [], []
    for _ in range(steps):
        env.step(torch.rand(env.num_envs, env.num_actions, generator=g) * 2 - 1)
        q.append(env.world.joint_q.clone())
        f.append(env.world.joint_f.clone())
    return torch.stack(q), torch.stack(f)


@pytest.mark.parametrize("task,steps,tol", [("reach", 50, 1e-5), ("quadruped", 20, 1e-4)])
def test_mujoco_actuators_run_horde_pd_law(task, steps, tol):
    """task.sim.mujoco_actuators: the PD law as MuJoCo's actuators with each env's own gains, strength and effort
    limit, one Batch call per control step, gives the states and torques of horde's kernel (float32, one call per
    substep) to rounding. Observed: reach 5e-7 rad and 2e-3 of 150 N m, quadruped 2e-7 rad and 4e-6 of 30 N m."""

    def env(native):
        cfg = copy.deepcopy(get_task(task).config)
        cfg.sim = dataclasses.replace(cfg.sim, solver="mujoco-c", mujoco_actuators=native)
        e = make(task, num_envs=6, device="cpu", seed=2, config=cfg)
        g = torch.Generator().manual_seed(0)  # per-env, per-joint gains and strength, as randomization draws them
        for gains in (e.world.stiffness, e.world.damping, e.world.motor_strength):
            gains.mul_(0.8 + 0.4 * torch.rand(gains.shape, generator=g))
        return e

    drives, kernel = env(True), env(False)
    assert drives.world.backend.nstep == drives.world.substeps and kernel.world.backend.nstep == 1
    assert drives.world.backend.mj_model.nu >= drives.num_actions
    q1, f1 = _pd_rollout(drives, steps)
    q0, f0 = _pd_rollout(kernel, steps)
    assert float((q1 - q0).abs().max()) < tol
    scale = float(f0.abs().max())
    assert scale > 1 and float((f1 - f0).abs().max()) < 1e-4 * scale


def test_mujoco_jacobian_changes_the_cost_not_the_physics():
    """task.sim.mujoco_jacobian: MuJoCo's dense and sparse constraint Jacobians step the quadruped (feet on the
    ground, contacts in every step) to the same states and torques to rounding; auto leaves MuJoCo's own choice; a
    bad value is refused in one line that lists the valid ones."""
    import mujoco

    def env(jacobian):
        cfg = copy.deepcopy(get_task("quadruped").config)
        cfg.sim = dataclasses.replace(cfg.sim, solver="mujoco-c", mujoco_jacobian=jacobian)
        return make("quadruped", num_envs=4, device="cpu", seed=2, config=cfg)

    sparse, dense, auto = env("sparse"), env("dense"), env("auto")
    assert sparse.world.backend.mj_model.opt.jacobian == mujoco.mjtJacobian.mjJAC_SPARSE
    assert dense.world.backend.mj_model.opt.jacobian == mujoco.mjtJacobian.mjJAC_DENSE
    assert auto.world.backend.mj_model.opt.jacobian == mujoco.mjtJacobian.mjJAC_AUTO
    (q1, f1), (q0, f0) = _pd_rollout(sparse, 20), _pd_rollout(dense, 20)
    assert float((q1 - q0).abs().max()) < 1e-4
    scale = float(f0.abs().max())
    assert scale > 1 and float((f1 - f0).abs().max()) < 1e-4 * scale
    with pytest.raises(FieldError, match="sparse") as info:
        env("sprase")
    assert len(str(info.value).splitlines()) == 1


def test_env_state_of_the_other_actuation_is_refused_in_one_line():
    """MuJoCo's rows hold the actuators' controls: a state saved with the other actuation does not fit, says which
    setting differs, and changes nothing."""
    def env(native):
        cfg = copy.deepcopy(get_task("reach").config)
        cfg.sim = dataclasses.replace(cfg.sim, solver="mujoco-c", mujoco_actuators=native)
        return make("reach", num_envs=2, device="cpu", seed=0, config=cfg)

    saved, other = env(True).get_env_state(), env(False)
    before = other.get_env_state()
    with pytest.raises(ValueError, match="mujoco_actuators"):
        other.set_env_state(saved)
    assert all(torch.equal(before[k], v) for k, v in other.get_env_state().items())


def test_startup_randomization_reaches_every_simulation():
    base = get_task("quadruped").config
    env = _env("quadruped", "mujoco-c", num_envs=5, seed=1,
               randomization=dataclasses.replace(base.randomization, enabled=True))
    w = env.world
    mass = w.backend.batch.expand("body_mass")
    m = w.model.body_mass.numpy().reshape(5, -1)
    np.testing.assert_allclose(mass[:, 1:], m, rtol=1e-6)
    assert np.ptp(mass[:, 1]) > 0.1  # base masses differ between envs
    friction = w.backend.batch.expand("geom_friction")[:, :, 0]
    drawn = env.randomization["friction"]
    robot = w.backend.mj_model.geom_bodyid > 0
    np.testing.assert_allclose(friction[:, robot], np.repeat(drawn[:, None], robot.sum(), 1), rtol=1e-6)


def test_contact_forces_and_imu_match_mujoco_warp():
    """Go2 standing under zero actions (PD to the default pose): the contact forces on the feet carry its weight and
    the IMU reads gravity, on both backends alike."""
    out = {}
    for solver in ("mujoco", "mujoco-c"):
        env = _env("quadruped-rough", solver, num_envs=4, imu=True,
                   terrain=dataclasses.replace(get_task("quadruped-rough").config.terrain, kind="flat"))
        w, readings = env.world, []
        for k in range(100):
            env.step(torch.zeros(4, env.num_actions))
            if k >= 60:  # settled: the mean over 40 steps (0.8 s) evens out the last sway
                readings.append(torch.cat([w.contact_forces[:, :4].sum(1), w.imu_acc, w.imu_gyro], 1))
        mean = torch.stack(readings).mean(0)
        feet = mean[:, :3]
        out[solver] = (feet, mean[:, 3:6], mean[:, 6:])
        weight = w.model.body_mass.numpy().reshape(4, -1).sum(1) * 9.81  # per env: base masses are randomized
        np.testing.assert_allclose(feet[:, 2].numpy(), weight, rtol=0.05)
        np.testing.assert_allclose(mean[:, 5].numpy(), 9.81, atol=0.3)
    for a, b in zip(out["mujoco"], out["mujoco-c"]):
        assert float((a - b).abs().max()) < 0.5


def test_the_backend_is_a_part_of_the_world_not_a_subclass():
    """One world class; MuJoCo's C engine is its backend (``world.backend``), chosen by world_from_spec, not a
    subclass with a flag; a world built around the factory with an unresolved solver is refused in one line."""
    from horde.sim.mujoco_batch import MujocoCBackend
    from horde.sim.newton_world import NewtonSolverBackend, NewtonWorld

    env = _env("ant", "mujoco-c", num_envs=2)
    assert type(env.world) is NewtonWorld and isinstance(env.world.backend, MujocoCBackend)
    assert env.world.steps_mujoco_c and env.world.spec.robot.actuated_joints == env.world.actuated_joints
    warp_env = _env("ant", "mujoco", num_envs=2)
    assert type(warp_env.world) is NewtonWorld and isinstance(warp_env.world.backend, NewtonSolverBackend)
    assert not NewtonWorld.__subclasses__()
    with pytest.raises(ValueError, match="world_from_spec"):
        NewtonWorld(env.world.spec, num_envs=1, device="cpu", sim=dataclasses.replace(env.world.sim, solver="auto"),
                    backend=MujocoCBackend())


def test_env_state_of_another_backend_is_refused_in_one_line():
    saved = _env("ant", "mujoco-c", num_envs=2).get_env_state()
    other = _env("ant", "mujoco", num_envs=2)
    with pytest.raises(ValueError, match="missing nothing; unexpected mj_state, seen_q, seen_qd"):
        other.set_env_state(saved)


def test_mujoco_hands_the_solver_every_contact_it_detects_on_the_rough_terrain():
    """No contact gap in the MuJoCo models (C and Warp): with Newton's 0.1 m gap MuJoCo detected hundreds of contacts
    per quadruped on the heightfield (up to 50 per geom pair) that its solver left out, and stepped 6x slower
    (benchmarks/physics_options.py); now every contact it makes is one the solver uses."""
    import mujoco

    env = _env("quadruped-rough", "mujoco-c", num_envs=4)
    assert not env.world.backend.mj_model.geom_gap.any()
    g = torch.Generator().manual_seed(0)
    made = 0
    for _ in range(30):
        env.step(torch.rand(4, env.num_actions, generator=g) * 2 - 1)
        for i in range(4):
            d = env.world.backend.batch.get_data(i)
            mujoco.mj_forward(env.world.backend.mj_model, d)
            made += d.ncon
            assert all(d.contact[j].exclude == 0 for j in range(d.ncon)), "a contact the solver does not use"
    assert made > 0
    warp_env = _env("quadruped-rough", "mujoco", num_envs=2)
    assert not warp_env.world.solver.mjw_model.geom_gap.numpy().any()
