"""A legged robot unlike horde's own is one config entry: ANYmal-style leg names (LF/RF/LH/RH), feet named
``*_toe``, and a passive joint (an unactuated tail hinge) that the task leaves to the physics."""

import copy
import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from horde.deploy.robot.observations import build_observation
from horde.deploy.spec import observation_spec
from horde.envs import get_task, make
from horde.envs.robots import register_robot, resolve_robot
from horde.envs.symmetry import task_mirror

QUAD12 = Path(__file__).resolve().parents[2] / "assets" / "quad12.xml"
SIDES = {"FL": "LF", "FR": "RF", "RL": "LH", "RR": "RH"}
TAIL = ('<body name="tail" pos="-0.2 0 0"><joint name="tail_joint" axis="0 1 0" range="-0.5 0.5" damping="0.1"/>'
        '<geom type="capsule" size="0.01" fromto="0 0 0 -0.1 0 0" mass="0.1"/></body>')


def _rename(name: str) -> str:
    for a, b in SIDES.items():
        name = name.replace(a, b)
    return name.replace("_foot", "_toe")


@pytest.fixture(scope="module")
def robot(tmp_path_factory) -> str:
    """The MJCF a user would have (written here from horde's quad12 with other names and a tail), and the entry."""
    xml = QUAD12.read_text()
    for a in SIDES:
        xml = xml.replace(f'"{a}_', f'"{SIDES[a]}_')
    imu = '<site name="imu" pos="0 0 0"/>'
    xml = xml.replace('_foot"', '_toe"').replace(imu, imu + TAIL)
    path = tmp_path_factory.mktemp("robot") / "anymal_like.xml"
    path.write_text(xml)
    quad = resolve_robot("quad12")
    # --- the whole addition: one entry -----------------------------------------------------------------------------
    register_robot(dataclasses.replace(
        quad, name="anymal-like", mjcf_path=lambda: str(path), source="test",
        joints=tuple(_rename(j) for j in quad.joints), feet=tuple(_rename(f) for f in quad.feet),
        undesired_contacts=tuple(_rename(b) for b in quad.undesired_contacts),
        mirror_names=(("LF", "RF"), ("LH", "RH"))), replace=True)
    # ---------------------------------------------------------------------------------------------------------------
    return "anymal-like"


def _env(robot: str, n: int = 4):
    cfg = copy.deepcopy(get_task("quadruped").config)
    cfg.robot = robot
    return make("quadruped", num_envs=n, seed=0, config=cfg)


def test_it_stands_acts_on_its_legs_only_and_leaves_the_tail_to_the_physics(robot):
    env = _env(robot)
    assert env.num_actions == 12 and env.action_names[0] == "LF_hip_joint"
    assert env.obs_dim == 48 and not any("tail" in n for n in env.obs_names)
    assert env.world.joint_q.shape[1] == 7 + 12 + 1  # the tail is simulated
    for _ in range(25):
        r = env.step(torch.zeros(4, 12))
        assert not r.dones.any()
    assert (env.world.root_pose[:, 2] > 0.2).all()  # standing on its *_toe feet
    assert [f.body for f in env.feet] == ["LF_toe", "RF_toe", "LH_toe", "RH_toe"]


def test_its_observation_and_mirror_follow_from_the_entry(robot):
    env = _env(robot)
    spec = observation_spec(env, env.describe(), None)
    for _ in range(3):
        raw = {k: v.numpy() for k, v in env.observation_sources().items()}
        np.testing.assert_allclose(build_observation(spec, raw), env.obs.numpy(), rtol=1e-5, atol=2e-5)
        env.step(torch.rand(4, 12) * 2 - 1)
    m = task_mirror(env, "quadruped").actions
    names = env.action_names
    assert names[int(m.perm[names.index("LF_thigh_joint")])] == "RF_thigh_joint"
    assert names[int(m.perm[names.index("LH_hip_joint")])] == "RH_hip_joint"
    assert m.sign[names.index("LF_hip_joint")] == -1.0 and m.sign[names.index("LF_thigh_joint")] == 1.0


def test_contact_sets_take_geoms_and_sites_for_their_bodies():
    """Undesired and failure contacts, like feet, may name a geom or site (mjlab's Go1 has feet and knees only as
    geoms): each stands for the body it is on, so naming the quad12's geoms instead of its bodies gives the very same
    trajectory, in horde and in the MuJoCo twin; an unknown name fails in one line."""
    import dataclasses

    from horde.envs.velocity import VelocityTwin

    quad = resolve_robot("quad12")
    register_robot(dataclasses.replace(
        quad, name="quad12-by-geoms", failure_contacts=("imu",),  # a site on the base
        undesired_contacts=tuple(f"{b}_geom" for b in quad.undesired_contacts)), replace=True)
    a, b = _env("quad12"), _env("quad12-by-geoms")
    g = torch.Generator().manual_seed(1)
    for _ in range(40):
        act = torch.rand(4, 12, generator=g) * 6 - 3
        ra, rb = a.step(act), b.step(act)
        assert torch.equal(ra.reward, rb.reward) and torch.equal(ra.dones, rb.dones)
    cfg = dataclasses.asdict(get_task("quadruped").config)
    twin = VelocityTwin(VelocityTwin.load_model({**cfg, "robot": "quad12-by-geoms"}),
                        {**cfg, "robot": "quad12-by-geoms"}, 0.02)
    model = VelocityTwin.load_model(cfg)
    assert twin.rows == 4 + 4 + 1 and twin.row[model.body("base").id] == 8  # the imu site's body is the base
    assert twin.row[model.body("FL_thigh").id] == 4
    register_robot(dataclasses.replace(quad, name="quad12-bad", failure_contacts=("no_such_geom",)), replace=True)
    with pytest.raises(ValueError, match="^failure contact 'no_such_geom' is not a body, geom or site"):
        _env("quad12-bad")
