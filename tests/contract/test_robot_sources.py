"""Robots from other packages, described as their package ships them (issue 31): mjlab's Go1 has no foot bodies
(its feet are a geom and a site on each calf) and lists its legs FR, FL, RR, RL; horde's config names its feet by
geom or site and its joints in horde's FL, FR, RL, RR order, and the velocity task maps both onto the model."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from horde.envs import get_task, make
from horde.envs.robots import LEG_JOINTS, LeggedRobot, per_joint, register_robot

GO1 = "asset_zoo/robots/unitree_go1/xmls/go1.xml"


def _go1_xml() -> Path | None:
    spec = importlib.util.find_spec("mjlab")  # the wheel's files only: `import mjlab` needs its own dependencies
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GO1
    return path if path.exists() else None


def _go1() -> LeggedRobot:
    """mjlab's Go1 (mjlab Apache-2.0, Unitree model BSD-3) with mjlab's motor figures: rotor 1.11842e-4 kg m^2
    behind a 6:1 (hip, thigh) or 9:1 (calf) gear, gains at 10 Hz with damping ratio 2."""
    arm = per_joint(LEG_JOINTS, {r".*_calf_joint": 1.11842e-4 * 81}, default=1.11842e-4 * 36)
    omega = 2.0 * math.pi * 10.0
    stiffness = tuple(a * omega ** 2 for a in arm)
    effort = per_joint(LEG_JOINTS, {r".*_calf_joint": 35.55}, default=23.7)
    path = str(_go1_xml())
    return LeggedRobot(
        name="go1-mjlab-test", mjcf_path=lambda: path, joints=LEG_JOINTS,
        default_joint_pos=per_joint(LEG_JOINTS, {r".*_thigh_joint": 0.9, r".*_calf_joint": -1.8,
                                                 r".*R_hip_joint": 0.1, r".*L_hip_joint": -0.1}),
        stiffness=stiffness, damping=tuple(2.0 * 2.0 * a * omega for a in arm), effort_limit=effort,
        action_scale=tuple(0.25 * e / k for e, k in zip(effort, stiffness)), armature=arm,
        feet=("FL", "FR", "RL_foot_collision", "RR_foot_collision"),  # two sites, two geoms
        undesired_contacts=tuple(f"{leg}_thigh" for leg in ("FL", "FR", "RL", "RR")), failure_contacts=("trunk",),
        base="trunk", root_height=0.278, source="mjlab wheel asset_zoo/robots/unitree_go1 (test only)")


needs_go1 = pytest.mark.skipif(_go1_xml() is None, reason=f"the mjlab wheel's {GO1} is not installed")


@pytest.fixture(scope="module")
def go1_env():
    robot = _go1()
    register_robot(robot, replace=True)
    cfg = dataclasses.replace(get_task("quadruped").config, robot=robot.name)
    return make("quadruped", num_envs=4, seed=0, config=cfg)


@needs_go1
def test_per_joint_patterns_over_a_table_keep_the_unnamed_joints_entries():
    table = tuple(float(k) for k in range(len(LEG_JOINTS)))
    out = per_joint(LEG_JOINTS, {r"FL_.*": -1.0, r".*_calf_joint": -2.0}, default=table)
    for k, j in enumerate(LEG_JOINTS):
        assert out[k] == (-1.0 if j.startswith("FL_") else -2.0 if j.endswith("_calf_joint") else table[k])
    with pytest.raises(ValueError, match=r"^no value for joint 'FL_hip_joint'"):
        per_joint(LEG_JOINTS, {r".*_calf_joint": 1.0})


def test_feet_given_as_geoms_or_sites_resolve_to_the_calf_and_a_point_on_it(go1_env):
    env = go1_env
    assert [f.body for f in env.feet] == ["FL_calf", "FR_calf", "RL_calf", "RR_calf"]
    for f in env.feet:  # the site and the foot geom sit at the calf's tip
        assert f.offset == pytest.approx((0.0, 0.0, -0.213), abs=1e-6)
    for _ in range(10):
        out = env.step(torch.zeros(4, 12))
    assert torch.isfinite(out.obs).all() and torch.isfinite(out.reward).all() and not out.terminated.any()
    force = env.world.contact_forces[:, :4].norm(dim=-1)  # the feet's rows
    assert (force > 1.0).all(), force  # standing: every foot carries weight
    # the foot point is the calf's tip, on the ground (sphere radius 0.023 m), not the calf's origin ~0.13 m above it
    for f in env.feet:
        pose = env.world.body_pose[:, f.index]
        p, xyz, w = pose[:, :3], pose[:, 3:6], pose[:, 6:7]
        v = torch.tensor(f.offset).expand_as(p)
        t = 2.0 * torch.cross(xyz, v, dim=-1)
        tip = p + v + w * t + torch.cross(xyz, t, dim=-1)
        assert ((tip[:, 2] > 0.0) & (tip[:, 2] < 0.04)).all() and (p[:, 2] > 0.09).all(), (tip, p)


@needs_go1
def test_the_action_for_fl_hip_drives_the_models_fl_hip_whatever_the_mjcf_order(go1_env):
    import mujoco

    env = go1_env
    model = mujoco.MjModel.from_xml_path(str(_go1_xml()))
    adr = {j: int(model.jnt_qposadr[model.joint(j).id]) for j in LEG_JOINTS}
    assert adr["FR_hip_joint"] < adr["FL_hip_joint"]  # the MJCF is FR, FL, RR, RL: not horde's order
    env.reset()
    a = torch.zeros(4, 12)
    col = env.action_names.index("FL_hip_joint")
    assert col == 0
    a[:, col] = 1.0
    targets_before = env.pd_targets().clone()
    for _ in range(5):
        env.step(a)
    moved = (env.pd_targets() - targets_before).abs().amax(dim=0)
    assert moved[col] > 0.1 and (moved[torch.arange(12) != col] == 0).all()
    q = env.world.joint_q
    default = dict(zip(LEG_JOINTS, env.robot.default_joint_pos))
    lean = {j: float((q[:, adr[j]] - default[j]).abs().mean()) for j in ("FL_hip_joint", "FR_hip_joint")}
    assert lean["FL_hip_joint"] > 0.05 > lean["FR_hip_joint"], lean  # the model's FL hip moved, FR held
    # observations follow the config's order too: pos_FL_hip_joint is the model's FL hip
    i = env.obs_names.index("pos_FL_hip_joint")
    assert torch.allclose(env.obs[:, i], q[:, adr["FL_hip_joint"]] - default["FL_hip_joint"], atol=1e-5)


@needs_go1
def test_policy_json_observation_terms_carry_units_and_frames(go1_env):
    from horde.deploy.spec import observation_spec

    env = go1_env
    terms = {t["name"]: t for t in observation_spec(env, {"obs_names": list(env.obs_names), "task": "quadruped"},
                                                     None)["terms"]}
    assert all(t["unit"] for t in terms.values())
    assert (terms["lin_vel_x"]["unit"], terms["lin_vel_x"]["frame"]) == ("m/s", "base")
    assert (terms["gravity_z"]["unit"], terms["gravity_z"]["frame"]) == ("1", "base")
    assert (terms["pos_FL_hip_joint"]["unit"], terms["pos_FL_hip_joint"]["frame"]) == ("rad", "joint")
    assert (terms["vel_RR_calf_joint"]["unit"], terms["vel_RR_calf_joint"]["frame"]) == ("rad/s", "joint")
    assert terms["last_action_FL_hip_joint"]["frame"] is None
    assert list(terms)[12] == "pos_FL_hip_joint"  # the config's order, not the MJCF's


def test_lift_observation_units_and_frames():
    from horde.envs import make

    env = make("lift", num_envs=1)
    got = {c: (u, t.frame) for t in env.observation_terms() for c, u in zip(t.columns, t.units())}
    assert got["pos_elbow"] == ("rad", "joint") and got["vel_left_finger"] == ("m/s", "joint")
    assert got["ee_x"] == got["cube_ee_z"] == got["target_cube_y"] == got["ee_cmd_dx"] == ("m", "world")
    assert got["cube_yaw_sin4"] == got["gripper_cmd"] == got["last_action_ee_dx"] == ("1", None)


def test_a_foot_that_is_no_body_geom_or_site_fails_in_one_line():
    from horde.envs.robots import foot_frames
    from horde.sim.newton_build import load_mjcf

    builder = load_mjcf(str(Path(__file__).resolve().parents[2] / "assets" / "quad12.xml"), contact_ke=1e4,
                        solver="mujoco-c", self_collisions=False, meshes=False)
    assert foot_frames(builder, ("FL_foot",))[0].offset == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match=r"^foot 'FL_toe' is not a body, geom or site of the model; bodies: "):
        foot_frames(builder, ("FL_toe",))
    assert np.isfinite(foot_frames(builder, ("FL_foot",))[0].index)
