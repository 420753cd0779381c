"""Articulated tasks on Newton (ant, reach): graph replay, health check, zero-copy views, actuation, solvers."""

import dataclasses

import numpy as np
import pytest
import torch
import warp as wp

from horde.envs import get_task, make
from horde.sim.actuation import Actuation, actuate_joints
from horde.sim.newton_world import NewtonWorld, SimConfig
from horde.sim.spec import RobotEntity, WorldSpec, world_from_spec

ARTICULATED = ["ant", "reach", "quadruped", "humanoid"]


def _config(task, **changes):
    base = get_task(task).config
    return dataclasses.replace(base, **changes)


def _random_actions(n, a, g, scale=1.0):
    return (torch.rand(n, a, generator=g) * 2 - 1) * scale


@pytest.mark.parametrize("task", ARTICULATED)
def test_graph_replay_equals_eager_stepping(task):
    trajs = []
    for use_graph in (True, False):
        env = make(task, num_envs=16, seed=5, config=_config(task, use_graph=use_graph))
        g = torch.Generator().manual_seed(0)
        obs, rew = [], []
        for _ in range(120):
            r = env.step(_random_actions(16, env.num_actions, g))
            obs.append(r.obs.clone())
            rew.append(r.reward.clone())
        assert env._graph.captured is use_graph
        trajs.append((torch.stack(obs), torch.stack(rew)))
    assert torch.equal(trajs[0][0], trajs[1][0])
    assert torch.equal(trajs[0][1], trajs[1][1])


@pytest.mark.parametrize("task", ARTICULATED)
def test_health_check_resets_and_counts_a_broken_world(task):
    env = make(task, num_envs=8, seed=0)
    zeros = torch.zeros(8, env.num_actions)
    for _ in range(3):
        env.step(zeros)
    env.world.joint_qd[3, -1] = float("nan")
    env.world.body_pose[3, -1, 0] = float("nan")
    env.world.body_vel[3, -1, 0] = float("nan")
    env.world.joint_q[5, -1] = float("inf")
    env.world.body_vel[5, -1, 1] = 1.0e6  # finite but out of bounds
    r = env.step(zeros)
    assert r.dones[3] and r.dones[5] and r.terminated[3] and not r.truncated[3]
    assert not r.dones[[0, 1, 2, 4, 6, 7]].any()
    assert torch.isfinite(r.obs).all() and torch.isfinite(r.reward).all() and torch.isfinite(env.final_obs).all()
    assert env.world.unstable[[3, 5]].all() and not env.world.unstable[[0, 1, 2, 4, 6, 7]].any()
    assert torch.isfinite(env.world.joint_q).all() and torch.isfinite(env.world.body_pose).all()
    assert env.episode_length[3] == 0 and env.episode_length[0] == 4
    env.step(zeros)
    assert not env.dones.any()
    assert env.pop_episode_stats()["sim/unstable_resets"] == 2


def test_world_views_are_zero_copy_and_shaped_per_env():
    env = make("ant", num_envs=4, seed=0)
    w = env.world
    assert w.joint_q.shape == (4, 15) and w.joint_qd.shape == (4, 14)
    assert w.body_pose.shape == (4, w.bodies, 7) and w.body_vel.shape == (4, w.bodies, 6)
    assert w.root_pose.shape == (4, 7) and w.root_vel.shape == (4, 6) and w.root_vel_base.shape == (4, 6)
    assert w.joint_q.data_ptr() == w.state_0.joint_q.ptr
    assert w.body_pose.data_ptr() == w.state_0.body_q.ptr
    w.joint_q[2, 0] = 12.5
    assert w.state_0.joint_q.numpy()[2 * 15] == 12.5
    # the torso starts upright at its MJCF height; the state summary mirrors the joint coordinates
    assert torch.allclose(w.root_pose[:, 2], torch.full((4,), 0.75))
    assert torch.equal(env.state[[0, 1, 3]], w.joint_q[[0, 1, 3]])


def test_base_frame_velocity_is_the_world_twist_rotated_into_the_torso():
    env = make("ant", num_envs=8, seed=1)
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        env.step(_random_actions(8, 8, g))
    w = env.world
    w.inspect()
    q = w.root_pose[:, 3:]  # xyzw
    u, s = -q[:, :3], q[:, 3:]  # inverse rotation

    def rotate(v):
        return v + 2.0 * torch.cross(u, torch.cross(u, v, dim=-1) + s * v, dim=-1)

    torch.testing.assert_close(w.root_vel_base[:, :3], rotate(w.root_vel[:, :3]), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(w.root_vel_base[:, 3:], rotate(w.root_vel[:, 3:]), atol=1e-4, rtol=1e-4)


def test_pd_and_torque_actuation_hand_worked_numbers():
    """tau = clip(kp (clip(offset + a scale, lo, hi) - q) - kd qd, +-effort); torque mode: clip(a scale, +-effort)."""
    actions = wp.array([[0.5, 3.0]], dtype=float)
    q = wp.array([[0.0, 0.1, 0.2]], dtype=float)
    qd = wp.array([[0.0, 1.0, -2.0]], dtype=float)
    per_env = lambda *v: wp.array([list(v)], dtype=float)  # noqa: E731  [num_envs=1, joints]
    args = [wp.array([1, 2], dtype=int), wp.array([1, 2], dtype=int), wp.array([0.4, 1.0], dtype=float),
            wp.array([0.1, 0.0], dtype=float), per_env(10.0, 100.0), per_env(1.0, 2.0), per_env(1.0, 1.0),
            per_env(5.0, 50.0), 0, wp.array([1.0, 1.0], dtype=float), wp.array([-1.0, -0.5], dtype=float),
            wp.array([1.0, 0.5], dtype=float)]
    no_net = wp.zeros(1, dtype=float)  # no actuator network: the kernel never reads it
    # pd, joint 1: target 0.1 + 0.5 x 0.4 = 0.3 -> 10 (0.3 - 0.1) - 1 x 1 = 1.0
    # pd, joint 2: action clipped to 1, target clip(0 + 1, -0.5, 0.5) = 0.5 -> 100 (0.5 - 0.2) - 2 x (-2) = 34
    # torque: 0.5 x 0.4 = 0.2 and 1 x 1.0 = 1.0; dof 0 (not actuated) keeps 0
    for mode, expected in ((0, [0.0, 1.0, 34.0]), (1, [0.0, 0.2, 1.0])):
        f = wp.zeros((1, 3), dtype=float)
        wp.launch(actuate_joints, (1, 2), inputs=[mode, actions, *args, q, qd, no_net], outputs=[f], device="cpu")
        np.testing.assert_allclose(f.numpy()[0], expected, rtol=1e-5)
    # motor strength scales the torque before the effort clip: 0.5 x 34 = 17 (joint 2), 0.5 x 1.0 (joint 1)
    f = wp.zeros((1, 3), dtype=float)
    args[6] = per_env(0.5, 0.5)
    wp.launch(actuate_joints, (1, 2), inputs=[0, actions, *args, q, qd, no_net], outputs=[f], device="cpu")
    np.testing.assert_allclose(f.numpy()[0], [0.0, 0.5, 17.0], rtol=1e-5)
    # actuator-network mode (2): the network's torques (30 and 80) replace the PD law, then strength and clip:
    # 0.5 x 30 = 15 clipped to joint 1's limit 5; 0.5 x 80 = 40 within joint 2's 50
    f = wp.zeros((1, 3), dtype=float)
    wp.launch(actuate_joints, (1, 2), inputs=[2, actions, *args, q, qd, wp.array([30.0, 80.0], dtype=float)],
              outputs=[f], device="cpu")
    np.testing.assert_allclose(f.numpy()[0], [0.0, 5.0, 40.0], rtol=1e-6)


def test_dc_motor_clips_along_the_torque_speed_line():
    """DC motor, limit e and no-load speed v: tau in [e (-1 - qd / v), e (1 - qd / v)], within +- e."""
    actions = wp.array([[0.5, 3.0, 1.0]], dtype=float)
    q = wp.array([[0.0, 0.1, 0.2, 0.0]], dtype=float)
    qd = wp.array([[0.0, 1.0, -2.0, 3.0]], dtype=float)
    per_env = lambda *v: wp.array([list(v)], dtype=float)  # noqa: E731
    idx = wp.array([1, 2, 3], dtype=int)
    args = [idx, idx, wp.array([0.4, 1.0, 10.0], dtype=float), wp.array([0.1, 0.0, 0.0], dtype=float),
            per_env(10.0, 100.0, 0.0), per_env(1.0, 2.0, 0.0), per_env(1.0, 1.0, 1.0), per_env(5.0, 50.0, 8.0), 1,
            wp.array([1.1, 4.0, 2.0], dtype=float), wp.array([-1.0, -0.5, -1.0], dtype=float),
            wp.array([1.0, 0.5, 1.0], dtype=float)]
    # joint 1: PD 1.0, qd 1.0 of 1.1 rad/s: at most 5 (1 - 1/1.1) = 0.4545
    # joint 2: PD 34, qd -2 of 4 rad/s (moving against the torque): [-25, 50] -> 34 unclipped
    # joint 3 (torque mode is per world; here PD with zero gains): 0 within [8 (-1 - 1.5), 8 (1 - 1.5)] clipped
    # to [-8, 0]: 0
    no_net = wp.zeros(1, dtype=float)  # no actuator network: the kernel never reads it
    f = wp.zeros((1, 4), dtype=float)
    wp.launch(actuate_joints, (1, 3), inputs=[0, actions, *args, q, qd, no_net], outputs=[f], device="cpu")
    np.testing.assert_allclose(f.numpy()[0], [0.0, 5.0 * (1 - 1 / 1.1), 34.0, 0.0], rtol=1e-5)
    # torque mode: joint 3 asks 10 while turning at 1.5x its no-load speed: no torque along the motion is left,
    # and -10 (braking) is clipped to -8
    f = wp.zeros((1, 4), dtype=float)
    wp.launch(actuate_joints, (1, 3), inputs=[1, actions, *args, q, qd, no_net], outputs=[f], device="cpu")
    assert f.numpy()[0, 3] == 0.0
    actions = wp.array([[0.5, 3.0, -1.0]], dtype=float)
    wp.launch(actuate_joints, (1, 3), inputs=[1, actions, *args, q, qd, no_net], outputs=[f], device="cpu")
    np.testing.assert_allclose(f.numpy()[0, 3], -8.0, rtol=1e-6)


def test_reach_target_is_resampled_each_episode_and_error_recorded():
    env = make("reach", num_envs=8, seed=0, config=_config("reach", episode_length=5))
    first = env.target.clone()
    assert (env.final_error == -1).all()
    lo, hi = torch.tensor(env.cfg.target_low), torch.tensor(env.cfg.target_high)
    assert ((first >= lo) & (first <= hi)).all()
    for _ in range(5):
        env.step(torch.zeros(8, 7))
    assert env.dones.all() and env.truncated.all()
    assert not torch.equal(env.target, first)
    assert ((env.final_error > 0) & (env.final_error < 2.0)).all()
    torch.testing.assert_close(env.obs[:, 14:17], env.ee_position(), atol=1e-5, rtol=0)
    torch.testing.assert_close(env.obs[:, 20:23], env.target - env.ee_position(), atol=1e-5, rtol=0)


def test_xpbd_keeps_joint_coordinates_current():
    """Maximal-coordinate solvers advance body poses only: the world refreshes joint_q with eval_ik every step."""
    cfg = _config("reach", sim=SimConfig(solver="xpbd"), action_mode="torque", action_scale=[0.0] * 7)
    env = make("reach", num_envs=2, seed=0, config=cfg)
    q0 = env.world.joint_q.clone()
    for _ in range(5):
        env.step(torch.zeros(2, 7))  # no torque: the arm sags under gravity
    assert not torch.allclose(env.world.joint_q, q0, atol=1e-3)
    assert torch.equal(env.obs[:, :7], env.world.joint_q)


def test_unknown_solver_and_action_mode_fail_with_the_valid_names():
    with pytest.raises(ValueError, match="task.sim.solver=physx: not a valid choice; valid choices: auto, mujoco, "
                                         "mujoco-c, xpbd, featherstone"):
        make("reach", num_envs=2, config=_config("reach", sim=SimConfig(solver="physx")))
    with pytest.raises(ValueError, match="task.action_mode=velocity: not a valid choice; valid choices: pd, torque"):
        make("reach", num_envs=2, config=_config("reach", action_mode="velocity"))


def test_urdf_robot_builds_a_batched_world_that_stands():
    """URDF through Newton's importer (the newton wheel's ANYmal-like quadruped.urdf): replicated, PD-actuated,
    stepped as a graph-ready world, every view finite and the base still above the ground."""
    import newton.examples

    from horde.sim.newton_build import load_robot

    robot = load_robot(newton.examples.get_asset("quadruped.urdf"), contact_ke=1e4, solver="mujoco", floating=True)
    joints = [lbl.split("/")[-1] for lbl in robot.joint_label][1:]
    assert len(joints) == 12 and robot.joint_coord_count == 19
    robot.joint_q[2] = 0.7
    act = Actuation(mode="pd", scale=[0.3] * 12, offset=[0.0] * 12, stiffness=[150.0] * 12, damping=[5.0] * 12,
                    effort_limit=[80.0] * 12)
    spec = WorldSpec(robot=RobotEntity(builder=robot, actuated_joints=tuple(joints), actuation=act), sim_dt=0.005,
                     substeps=4)
    w = world_from_spec(spec, sim=SimConfig(solver="mujoco"), num_envs=4, device="cpu")
    assert type(w) is NewtonWorld and w.spec is spec and spec.robot.floating
    w.warm_up()
    zeros = wp.zeros((4, 12), dtype=float)
    for _ in range(50):
        w.simulate(zeros)
        w.inspect()
    assert w.joint_q.shape == (4, 19) and torch.isfinite(w.joint_q).all() and not w.unstable.any()
    assert (w.root_pose[:, 2] > 0.2).all()


def test_world_arrays_are_the_memory_of_the_torch_views_and_tasks_use_nothing_private():
    """Task kernels take ``world.arrays`` (WorldArrays): the same memory as the world's torch views. No task file reads
    a NewtonWorld's private attributes."""
    import dataclasses
    import re
    from pathlib import Path

    import warp as wp

    w = make("quadruped", num_envs=4).world
    a = w.arrays
    for name, view in (("joint_q", w.joint_q), ("joint_qd", w.joint_qd), ("body_q", w.body_pose),
                       ("body_qd", w.body_vel), ("joint_f", w.joint_f), ("root_vel_base", w.root_vel_base),
                       ("unstable", w.unstable), ("stiffness", w.stiffness), ("damping", w.damping),
                       ("motor_strength", w.motor_strength)):
        assert wp.to_torch(getattr(a, name)).data_ptr() == view.data_ptr(), name
    assert all(getattr(a, f.name).shape[0] == 4 for f in dataclasses.fields(a)
               if f.name not in ("default_joint_q", "nominal_stiffness", "nominal_damping"))
    envs_dir = Path(__file__).resolve().parents[2] / "envs"
    private = [(p.name, m.group(0)) for p in envs_dir.glob("*.py")
               for m in re.finditer(r"\b(?:w|world)\._[a-z]\w*", p.read_text())]
    assert not private, private
    # nor does a backend (sim/spec.py's BACKENDS): each reads the world's public members only
    sim_dir = envs_dir.parent / "sim"
    backends = [(sim_dir / "mujoco_batch.py").read_text(),
                (sim_dir / "newton_world.py").read_text().split("class NewtonSolverBackend")[1]]
    assert not [m.group(0) for text in backends for m in re.finditer(r"\b(?:w|world)\._[a-z]\w*", text)]


def test_quadruped_with_dc_motors_stays_on_the_torque_speed_line():
    """task.dc_motor=true, one physics step per env step: every applied torque lies within the DC envelope of the
    joint speed it was computed from, and the envelope binds below the flat effort limit (it is not vacuous)."""
    import copy

    from horde.envs import get_task

    cfg = copy.deepcopy(get_task("quadruped").config)
    cfg.dc_motor, cfg.decimation = True, 1
    env = make("quadruped", num_envs=16, seed=0, config=cfg)
    w = env.world
    effort = torch.tensor(env.robot.effort_limit)
    vmax = torch.tensor(env.robot.velocity_limit)
    g = torch.Generator().manual_seed(0)
    bound = 0
    for _ in range(100):
        qd = w.joint_qd[:, 6:].clone()
        res = env.step(torch.rand(16, 12, generator=g) * 8 - 4)  # large actions: targets far from the pose
        keep = ~res.dones
        tau = w.joint_f[keep, 6:]
        r = qd[keep] / vmax
        hi = torch.clamp(effort * (1 - r), min=torch.zeros(12), max=effort)
        lo = torch.clamp(effort * (-1 - r), min=-effort, max=torch.zeros(12))
        assert (tau <= hi + 1e-4).all() and (tau >= lo - 1e-4).all()
        bound += int((((tau - hi).abs() < 1e-4) & (hi < effort - 1e-3)).sum())
        bound += int((((tau - lo).abs() < 1e-4) & (lo > -effort + 1e-3)).sum())
    assert bound > 50, "the speed-dependent limit binds"
