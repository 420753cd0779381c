"""Scenes with a free object and a static prop (``horde.sim.scene``) and the cube-lift task built on them."""

import newton
import numpy as np
import pytest
import torch

from horde.envs import get_task, make
from horde.sim.scene import RigidObject, StaticProp


@pytest.fixture(scope="module")
def env():
    return make("lift", num_envs=8, seed=0)


def test_the_world_holds_a_fixed_arm_a_free_cube_and_a_table(env):
    w = env.world
    assert not w.floating  # a fixed-base arm, although the world now has free-joint coordinates
    assert (w.coords, w.dofs) == (w.robot_coords + 7, w.robot_dofs + 6) == (9 + 7, 9 + 6)
    assert w.object_pose.shape == (8, 1, 7) and w.object_index("cube") == 0
    with pytest.raises(ValueError, match="no object 'ball'; objects: cube"):
        w.object_index("ball")


@pytest.mark.parametrize("solver", ["mujoco", "mujoco-c"])
def test_a_partial_reset_poses_every_reset_cube_and_arm(solver):
    """Newton's FK masks articulations, and each lift env holds two (the arm and the free cube): an env mask passed
    as is left reset cubes at stale poses (or posed other envs'), so observations right after a reset differed from
    run to run. Every body pose must follow its env's joint coordinates after a masked reset."""
    import dataclasses

    cfg = get_task("lift").config
    e = make("lift", num_envs=12, seed=1, config=dataclasses.replace(cfg, sim=dataclasses.replace(cfg.sim,
                                                                                                solver=solver)))
    for _ in range(5):
        e.step(torch.rand(12, e.num_actions) * 2 - 1)
    mask = torch.zeros(12, dtype=torch.bool)
    mask[[1, 6, 7, 11]] = True
    e.reset(mask)
    w = e.world
    c = w.robot_coords
    np.testing.assert_array_equal(w.object_pose[:, 0].numpy(), w.joint_q[:, c:c + 7].numpy())


def test_every_reset_places_the_cube_within_its_ranges_on_the_table(env):
    cfg = env.cfg
    env.reset()
    p = env.world.object_pose[:, 0, :3]
    lo = torch.tensor([cfg.cube_x[0], cfg.cube_y[0]])
    hi = torch.tensor([cfg.cube_x[1], cfg.cube_y[1]])
    assert ((p[:, :2] >= lo) & (p[:, :2] <= hi)).all() and p[:, 0].std() > 0.01
    first = p.clone()
    env.reset()
    assert not torch.allclose(env.world.object_pose[:, 0, :3], first)
    for _ in range(15):
        env.step(torch.zeros(8, 9))
    z = env.world.object_pose[:, 0, 2]
    rest = cfg.table_height + 0.5 * cfg.cube_size
    assert torch.allclose(z, torch.full_like(z, rest), atol=3e-3), z  # resting on the table, not on the ground
    assert (env.target[:, 2] >= cfg.table_height + cfg.target_height[0] - 1e-5).all()


def test_a_grasped_cube_rises_with_the_gripper_and_the_terms_see_it():
    """Put the cube between the open fingers, close them, raise the arm: the cube goes up, held by friction."""
    env = make("lift", num_envs=2, seed=1)
    w = env.world
    a = torch.zeros(2, 9)
    a[:, 7:] = 1.0  # fingers open
    for _ in range(20):
        env.step(a)
    c = w.robot_coords
    w.joint_q[:, c:c + 3] = env.obs[:, 18:21]  # the end-effector observation
    w.joint_q[:, c + 3:c + 7] = torch.tensor([0.0, 0.0, 0.0, 1.0])
    w.joint_qd[:, w.robot_dofs:] = 0.0
    newton.eval_fk(w.model, w.state_0.joint_q, w.state_0.joint_qd, w.state_0)
    a[:, 7:] = -1.0  # close
    for _ in range(15):
        env.step(a)
    a[:, 1] = -0.6  # shoulder pitch back: the gripper rises
    for _ in range(25):
        r = env.step(a)
    assert not r.terminated.any()
    assert (env.cube_height > 0.15).all(), env.cube_height
    terms = dict(zip(env.term_names, env.terms.T))
    assert (terms["grasp"] == 1.0).all() and (terms["lifting"] == 1.0).all()
    assert (terms["target_tracking"] > 0).all() and (terms["reaching_fine"] > 0.3).all()


def test_scene_items_refuse_bad_shapes():
    from horde.sim.scene import add_objects, add_props

    b = newton.ModelBuilder()
    with pytest.raises(ValueError, match="unknown shape 'cone'; valid shapes: box, sphere, capsule"):
        add_objects(b, [RigidObject(name="x", shape="cone")])
    with pytest.raises(ValueError, match="a sphere takes 1 size values, got 3"):
        add_props(b, [StaticProp(name="p", shape="sphere", size=(1.0, 1.0, 1.0))])


def test_lift_renders(env):
    from horde.envs.render import render_frame

    frame = render_frame(env, [0, 1], size=(60, 80))
    assert frame.shape == (60, 160, 3) and frame.dtype == np.uint8
    assert (frame == np.array([40, 160, 60], np.uint8)).all(axis=-1).any()  # the cube is drawn
    assert get_task("lift").description.startswith("horde's 7-DoF arm")
