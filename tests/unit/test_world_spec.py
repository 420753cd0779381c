"""The world as a spec (#71 item 5): a WorldSpec of entities that each backend builds, chosen by solver name."""

from __future__ import annotations

import dataclasses

import pytest

from horde.envs import make
from horde.sim.newton_build import SOLVERS
from horde.sim.spec import BACKENDS, RobotEntity, Sensors, WorldSpec, world_from_spec


def test_every_solver_has_a_backend_and_a_bad_one_fails_in_one_line():
    assert set(BACKENDS) == set(SOLVERS) - {"auto"}
    env = make("reach", num_envs=2)
    with pytest.raises(ValueError, match="unknown solver 'physx'; valid solvers: auto, mujoco, mujoco-c"):
        world_from_spec(env.world.spec, sim=dataclasses.replace(env.world.sim, solver="physx"), num_envs=2,
                        device="cpu")


def test_each_task_world_states_its_spec():
    """The lift's world is an arm with a cube, a table and finger contacts; the quadruped's a legged robot with its
    feet's contacts; the reach's arm has no ground."""
    lift, quad, reach = (make(t, num_envs=2).world for t in ("lift", "quadruped", "reach"))
    assert not lift.spec.robot.floating and quad.spec.robot.floating and not reach.spec.robot.floating
    assert [o.name for o in lift.spec.objects] == ["cube"] and [p.name for p in lift.spec.props] == ["table"]
    assert lift.spec.sensors.contact_bodies == lift.contact_bodies and lift.contact_forces.shape[1] == 2
    assert quad.spec.sensors.contact_bodies and quad.contact_forces.shape[1] == len(quad.spec.sensors.contact_bodies)
    assert not reach.spec.ground and reach.spec.sensors == Sensors()
    assert lift.spec.robot.actuated_joints == lift.actuated_joints
    assert (lift.sim_dt, lift.substeps) == (lift.spec.sim_dt, lift.spec.substeps)


def test_spec_fields_are_stated_types():
    robot = dataclasses.fields(RobotEntity)
    assert [f.name for f in robot][:3] == ["builder", "actuated_joints", "actuation"]
    assert {f.name for f in dataclasses.fields(WorldSpec)} == {"robot", "objects", "props", "ground", "terrain",
                                                              "sensors", "sim_dt", "substeps"}
