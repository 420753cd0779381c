"""The task layer from a user's side: a reward term and a robot added from outside horde, each in a few lines, and
the MuJoCo sim-to-sim twin running the new term with no edit of its own; the Unitree G1 on the velocity task."""

import dataclasses

import mujoco
import numpy as np
import pytest
import torch
import warp as wp

from horde.envs import get_task, make
from horde.envs.robots import ROBOTS, RobotNotInstalledError, resolve_robot
from horde.envs.terms import UnknownTermError
from horde.envs.velocity import VELOCITY_TERMS, Legged, VelocityTwin


# --- what a user writes (each block is the whole addition) ----------------------------------------------------------
@VELOCITY_TERMS.term
def base_height_error(x: Legged, i: int) -> float:
    """(base height - 0.3 m)^2."""
    p = wp.transform_get_translation(x.body_q[i, x.root])
    return (p[2] - 0.3) * (p[2] - 0.3)



def _heavy_quad12():
    from horde.envs.robots import register_robot

    quad = resolve_robot("quad12")
    register_robot(dataclasses.replace(quad, name="quad12-stiff", stiffness=(40.0,) * 12, damping=(1.0,) * 12),
                   replace=True)
# -------------------------------------------------------------------------------------------------------------------


def _with_term(task="quadruped"):
    cfg = get_task(task).config
    return dataclasses.replace(cfg, reward_scales={**cfg.reward_scales, "base_height_error": -5.0})


def test_a_term_from_outside_is_one_definition_and_one_config_line():
    env = make("quadruped", num_envs=4, seed=0, config=_with_term())
    assert env.term_names[-1] == "base_height_error"
    for _ in range(5):
        env.step(torch.zeros(4, 12))
    z = env.world.root_pose[:, 2]
    np.testing.assert_allclose(env.terms[:, -1].numpy(), ((z - 0.3) ** 2).numpy(), rtol=1e-5, atol=1e-7)
    stats_keys = env.pop_episode_stats()
    assert "sim/unstable_resets" in stats_keys


def test_unknown_term_lists_the_valid_ones():
    cfg = dataclasses.replace(get_task("quadruped").config, reward_scales={"track_lin_vel": 1.0, "speed": 1.0})
    with pytest.raises(UnknownTermError, match=r"^unknown velocity term speed; valid terms: track_lin_vel, "):
        make("quadruped", num_envs=2, config=cfg)


def test_the_sim2sim_twin_runs_a_new_term_with_no_edit():
    """The twin copies MuJoCo's state into Warp arrays and runs the task's own term functions: the new term is
    there, and agrees with the same quantity computed from MuJoCo directly."""
    cfg = dataclasses.asdict(_with_term())
    model = VelocityTwin.load_model(cfg)
    data = mujoco.MjData(model)
    from horde.deploy.sim2sim import Joints

    spec = {"action": {"names": list(resolve_robot("quad12").joints), "default_joint_pos": None,
                       "offset": list(resolve_robot("quad12").default_joint_pos), "scale": [0.5] * 12,
                       "clip": [-1.0, 1.0]},
            "pd_gains": {"kp": [25.0] * 12, "kd": [0.5] * 12}, "effort_limits": [45.0] * 12}
    joints = Joints(model, spec)
    twin = VelocityTwin(model, cfg, 0.02)
    twin.reset(model, data, joints, np.random.default_rng(0))
    mujoco.mj_forward(model, data)
    for _ in range(40):
        mujoco.mj_step(model, data)
    terms, failed = twin.terms(model, data, joints, np.zeros(12), np.zeros(12), np.zeros(12))
    assert list(terms) == list(cfg["reward_scales"])
    assert terms["base_height_error"] == pytest.approx((data.qpos[2] - 0.3) ** 2, rel=1e-4)
    v6 = np.zeros(6)  # MuJoCo's own [angular, linear] velocity of the base, in its frame at its origin
    mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_XBODY, twin.base, v6, 1)
    v_com = v6[3:] + np.cross(v6[:3], model.body_ipos[twin.base])  # horde's linear velocity is the base COM's
    assert terms["lin_vel_z"] == pytest.approx(v_com[2] ** 2, rel=1e-4, abs=1e-9) and not failed


def test_a_robot_from_outside_is_one_config_entry():
    _heavy_quad12()
    cfg = dataclasses.replace(get_task("quadruped").config, robot="quad12-stiff")
    env = make("quadruped", num_envs=2, seed=0, config=cfg)
    assert (env.world.stiffness == 40.0).all() and (env.world.damping == 1.0).all()
    env.step(torch.zeros(2, 12))
    assert torch.isfinite(env.obs).all()
    ROBOTS.pop("quad12-stiff")


def test_g1_velocity_builds_from_the_mjlab_wheel():
    env = make("g1-velocity", num_envs=4, seed=0)
    robot = resolve_robot("g1")
    # the recipe's 12 leg joints act; every joint is observed, then the 12 last actions and the gait clock
    assert env.num_actions == 12 and env.obs_dim == 12 + 2 * 29 + 12 + 2
    assert env.world.contact_forces.shape == (4, len(robot.feet) + len(robot.undesired_contacts) + 2, 3)
    # the default pose, the legs at Unitree's gains, the rest armature-derived (10 Hz against the reflected
    # inertia), action scales from the motors' 10 Hz stiffness, and the knees-bent height
    assert env.world.joint_q[0, 7:].tolist() == pytest.approx(list(robot.default_joint_pos), abs=0.051)
    k, w = robot.joints.index("left_knee_joint"), robot.joints.index("waist_pitch_joint")
    assert (robot.stiffness[k], robot.damping[k]) == (150.0, 4.0) and robot.effort_limit[k] == 139.0
    assert robot.action_scale[k] == pytest.approx(0.25 * 139.0 / 99.1, rel=0.01)
    assert robot.stiffness[w] == pytest.approx(28.5, rel=0.01)
    assert env.world.root_pose[:, 2].tolist() == pytest.approx([0.76] * 4, abs=1e-3)
    for _ in range(10):
        r = env.step(torch.zeros(4, 12))
    assert torch.isfinite(r.obs).all() and not r.terminated.any()
    feet = env.world.contact_forces[:, :2, 2]
    assert (feet > 0).all(), feet  # standing on both feet
    assert set(env.term_names) >= {"joint_deviation", "feet_slip", "feet_distance", "gait_contact"}


def test_g1_without_mjlab_fails_in_one_line(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mjlab" else real(name))
    with pytest.raises(RobotNotInstalledError, match=r'^robot \'g1\' needs the mjlab package\'s model files: '
                                                     r'pip install --no-deps "mjlab==1\.6\.0"$'):
        resolve_robot("g1").mjcf_path()


def test_a_term_is_one_command_line_override_and_a_bad_one_is_one_line():
    from horde.train.config import ConfigError, compose

    cfg, _, _ = compose(["task=quadruped", "+task.reward_scales.alive=0.5"])
    assert list(cfg.task.reward_scales)[-1] == "alive" and cfg.task.reward_scales["alive"] == 0.5
    with pytest.raises(ConfigError, match=r"^task.reward_scales: unknown velocity term speed; valid terms: "):
        compose(["task=quadruped", "+task.reward_scales.speed=1.0"])


def test_imports_bring_a_users_terms_and_robots_to_the_command_line(tmp_path, monkeypatch):
    from horde.train.config import ConfigError, compose

    (tmp_path / "my_horde_terms.py").write_text(
        "import warp as wp\n"
        "from horde.envs.velocity import VELOCITY_TERMS, Legged\n\n"
        "@VELOCITY_TERMS.term(replace=True)\n"
        "def feet_up(x: Legged, i: int) -> float:\n"
        "    return x.air_time[i, 0]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg, _, _ = compose(["imports=[my_horde_terms]", "task=quadruped", "+task.reward_scales.feet_up=0.1"])
    assert cfg.imports == ["my_horde_terms"] and cfg.task.reward_scales["feet_up"] == 0.1
    with pytest.raises(ConfigError, match=r"^imports: cannot import 'no_such_module': "):
        compose(["imports=[no_such_module]", "task=quadruped"])
