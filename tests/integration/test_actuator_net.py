"""Actuator networks: fitting one to a motor log, its ONNX file in Newton's neural-drive format, the drive's history
in the step, and a quadruped driven by a network fitted to its own PD law."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import numpy as np
import pytest
import torch
import warp as wp

from horde.envs import get_task, make
from horde.sim.device import init_warp
from horde.train.actuator_fit import (MotorLogError, fit_actuator_net, load_motor_log, pd_motor_log,
                                      write_actuator_net)


@pytest.fixture(scope="module")
def pd_net(tmp_path_factory):
    """A network fitted to the quadruped's PD law (kp 25, kd 0.5), wide effort limit: horde's own clip applies."""
    log = pd_motor_log(stiffness=25.0, damping=0.5, effort_limit=200.0, delay=0, episodes=8, steps=2000)
    model, meta, report = fit_actuator_net(log, history=(0,), epochs=30)
    return write_actuator_net(model, meta, tmp_path_factory.mktemp("net") / "pd.onnx", report=report)


def test_fit_recovers_a_delayed_pd_motor_and_needs_the_history_to():
    """A PD motor with 2 physics steps of delay: a network reading steps 0, 1, 2 fits the held-out torques within
    5% of their spread; one reading only the present cannot (the delayed torque is not a function of it)."""
    log = pd_motor_log(stiffness=25.0, damping=0.5, effort_limit=23.7, delay=2, episodes=6, steps=1500)
    _, meta, with_history = fit_actuator_net(log, history=(0, 1, 2), epochs=25)
    _, _, present_only = fit_actuator_net(log, history=(0,), epochs=25)
    assert meta["input_idx"] == [0, 1, 2] and meta["input_order"] == "pos_vel"
    assert with_history.val_rel < 0.05, with_history
    assert present_only.val_rel > 2 * with_history.val_rel, (present_only, with_history)


def test_onnx_file_matches_the_network_and_carries_newtons_metadata(tmp_path):
    import onnx
    import onnxruntime as ort

    log = pd_motor_log(stiffness=25.0, damping=0.5, effort_limit=23.7, delay=1, episodes=3, steps=600)
    model, meta, report = fit_actuator_net(log, history=(0, 1), epochs=3)
    path = write_actuator_net(model, meta, tmp_path / "net.onnx", report=report)
    proto = onnx.load(str(path))
    stored = json.loads({p.key: p.value for p in proto.metadata_props}["metadata"])
    assert stored["input_idx"] == [0, 1] and stored["pos_scale"] == pytest.approx(meta["pos_scale"])
    assert stored["horde_fit"]["val_rmse"] == pytest.approx(report.val_rmse)
    assert not proto.graph.input[0].type.tensor_type.shape.dim[0].HasField("dim_value")  # symbolic batch
    x = np.random.default_rng(0).normal(size=(9, 4)).astype(np.float32)
    got = ort.InferenceSession(str(path)).run(None, {"input": x})[0]
    np.testing.assert_allclose(got, model(torch.from_numpy(x)).detach().numpy(), atol=1e-5)


@pytest.mark.parametrize("backend", ["warp", "onnxruntime"])
def test_drive_reads_the_history_it_declares_and_reset_clears_one_env(tmp_path, backend):
    """Both backends (Newton's drive on Warp-NN; onnxruntime in a host call): after 4 substeps the torque equals the
    network on the present and the two previous errors and velocities, computed here by hand; a reset clears only
    the masked env's history."""
    import onnxruntime as ort

    from horde.sim.actuator_net import ActuatorNet

    init_warp()
    log = pd_motor_log(stiffness=25.0, damping=0.5, effort_limit=23.7, delay=2, episodes=3, steps=600)
    model, meta, _ = fit_actuator_net(log, history=(0, 1, 2), epochs=2)
    path = write_actuator_net(model, meta, tmp_path / "net.onnx")
    net = ActuatorNet(path, num_envs=2, num_actions=3, device="cpu", backend=backend)
    assert net.backend == backend
    assert net.history_steps == 3
    rng = np.random.default_rng(1)
    seen = []
    for _ in range(4):
        q, qd, target = (rng.normal(size=6).astype(np.float32) for _ in range(3))
        net.q.assign(q)
        net.qd.assign(qd)
        net.target.assign(target)
        net.compute()
        seen.append((target - q, qd))
    x = np.concatenate([np.stack([seen[3 - k][0] for k in (0, 1, 2)], 1) * meta["pos_scale"],
                        np.stack([seen[3 - k][1] for k in (0, 1, 2)], 1) * meta["vel_scale"]], 1)
    want = ort.InferenceSession(str(path)).run(None, {"input": x.astype(np.float32)})[0][:, 0] * meta["effort_scale"]
    np.testing.assert_allclose(net.effort.numpy(), want, rtol=1e-4, atol=1e-4)
    history = net.physics_state()["actuator_net_pos_error"]
    assert history.shape == (3, 6) and (history != 0).all()
    net.reset(wp.array([False, True], dtype=wp.bool, device="cpu"))
    assert (history[:, 3:] == 0).all() and (history[:, :3] != 0).all()


def _joint_trajectory(config, steps: int = 50, check_backend: str | None = None) -> torch.Tensor:
    env = make("quadruped", num_envs=8, seed=0, config=config)
    if check_backend is not None:
        assert env.world.actuator_net.backend == check_backend
    g = torch.Generator().manual_seed(0)
    out = []
    for _ in range(steps):
        env.step(torch.randn(8, 12, generator=g) * 0.3)
        out.append(env.world.joint_q[:, 7:].clone())
    return torch.stack(out)


@pytest.mark.parametrize("solver,backend", [("mujoco-c", "onnxruntime"), ("mujoco", "warp")])
def test_quadruped_on_a_network_fitted_to_its_pd_law_walks_the_pd_trajectory(pd_net, solver, backend, monkeypatch):
    """Same seed and actions for 50 env steps: the network fitted to the PD law stays within 0.15 rad of the PD
    run on every joint (measured 0.08 on both physics backends), while halving the PD stiffness departs further
    (0.84). MuJoCo-Warp runs the network on Warp-NN here, as it does on a GPU."""
    from horde.sim.actuator_net import ActuatorNet

    monkeypatch.setattr(ActuatorNet.__init__, "__kwdefaults__", {"backend": backend})
    cfg = copy.deepcopy(get_task("quadruped").config)
    cfg.sim.solver = solver
    pd = _joint_trajectory(cfg)
    soft = copy.deepcopy(cfg)
    soft.stiffness = 12.5
    net = copy.deepcopy(cfg)
    net.actuator_net = str(pd_net)
    with_net = _joint_trajectory(net, check_backend=backend)
    assert (with_net - pd).abs().max() < 0.15
    assert (_joint_trajectory(soft) - pd).abs().max() > 0.15


def test_recorded_step_and_resume_keep_the_actuator_history(tmp_path):
    """The drive runs inside the recorded step graph (replay equals eager stepping bit for bit), and its history is
    env state: restoring a saved state replays the same steps bit for bit (a network reading 3 substeps back, so a
    lost history would change the torques)."""
    log = pd_motor_log(stiffness=25.0, damping=0.5, effort_limit=200.0, delay=2, episodes=4, steps=1000)
    model, meta, _ = fit_actuator_net(log, history=(0, 1, 2), epochs=10)
    cfg = copy.deepcopy(get_task("quadruped").config)
    cfg.actuator_net = str(write_actuator_net(model, meta, tmp_path / "delayed.onnx"))
    eager_cfg = copy.deepcopy(cfg)
    eager_cfg.use_graph = False
    env, eager = (make("quadruped", num_envs=4, seed=0, config=c) for c in (cfg, eager_cfg))
    actions = torch.randn(10, 4, 12, generator=torch.Generator().manual_seed(0)) * 0.3
    for a in actions[:5]:
        assert torch.equal(env.step(a).obs, eager.step(a).obs)
    assert env._graph.captured and not eager._graph.captured
    saved = env.get_env_state()
    assert "actuator_net_pos_error" in saved and (saved["actuator_net_pos_error"] != 0).any()
    first = [env.step(a).obs.clone() for a in actions[5:]]
    env.set_env_state(saved)
    again = [env.step(a).obs.clone() for a in actions[5:]]
    for x, y in zip(first, again):
        assert torch.equal(x, y)


def test_motor_log_errors_are_one_line(tmp_path):
    with pytest.raises(MotorLogError, match="no such file"):
        load_motor_log(tmp_path / "missing.npz")
    np.savez(tmp_path / "bad.npz", pos_error=np.zeros((10, 2)), velocity=np.zeros((10, 2)))
    with pytest.raises(MotorLogError, match="missing arrays torque"):
        load_motor_log(tmp_path / "bad.npz")
    np.savez(tmp_path / "shape.npz", pos_error=np.zeros((10, 2)), velocity=np.zeros((10, 3)), torque=np.zeros((10, 2)))
    with pytest.raises(MotorLogError, match="share one"):
        load_motor_log(tmp_path / "shape.npz")


def test_cli_fits_the_demo_motor_and_refuses_a_missing_network(tmp_path, capsys):
    out = tmp_path / "demo.onnx"
    r = subprocess.run([sys.executable, "-m", "horde.cli", "actuator-net", "data=pd-demo", f"out={out}",
                        "epochs=2"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert out.is_file() and out.with_suffix(".png").is_file() and "held-out torque error" in r.stdout
    from horde.cli import main

    for args, needle in ((["actuator-net", f"data={tmp_path / 'none.npz'}", f"out={out}"], "no such file"),
                         (["actuator-net", "data=pd-demo", f"out={out}", "history=0,x"], "history=0,x: expected ints"),
                         (["train", "task=quadruped", f"task.actuator_net={tmp_path / 'none.onnx'}"],
                          "task.actuator_net=")):
        capsys.readouterr()
        assert main(args) == 2, args
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], err
