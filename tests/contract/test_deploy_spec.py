"""policy.json's action and robot sections, from hand-written task layouts (no simulator needed)."""

from horde.deploy.spec import action_spec, observation_spec, robot_model, robot_spec


def _layout(**config):
    return {"action_names": ["hip", "knee"], "action_type": "position_target", "action_unit": "rad",
            "action_scale": [0.5, 0.25], "obs_names": ["q_hip", "q_knee", "qd_hip"], "config": config}


def test_pd_actions_are_offsets_around_default_positions_with_gains():
    layout = _layout(action_mode="pd", default_joint_pos=[0.1, -0.8], joint_stiffness=[20.0, 30.0],
                     joint_damping=[1.0, 1.5], effort_limit=[15.0, 10.0])
    a = action_spec(object(), layout)
    assert a["offset"] == [0.1, -0.8] and a["default_joint_pos"] == [0.1, -0.8] and a["scale"] == [0.5, 0.25]
    # hand-worked: command = offset + scale * a for a = (1, -1)
    assert [o + s * x for o, s, x in zip(a["offset"], a["scale"], (1.0, -1.0))] == [0.6, -1.05]
    r = robot_spec(object(), layout)
    assert r["pd_gains"]["kp"] == [20.0, 30.0] and r["pd_gains"]["kd"] == [1.0, 1.5]
    assert r["effort_limits"] == [15.0, 10.0]


def test_torque_actions_have_no_offset_and_no_gains():
    layout = _layout(action_mode="torque", default_joint_pos=[0.1, -0.8], joint_stiffness=[20.0, 30.0],
                     joint_damping=[1.0, 1.5], effort_limit=[15.0, 10.0])
    assert action_spec(object(), layout)["offset"] == [0.0, 0.0]
    r = robot_spec(object(), layout)
    assert r["pd_gains"]["kp"] is None and r["pd_gains"]["kd"] is None and r["effort_limits"] == [15.0, 10.0]


def test_the_actuation_that_ran_wins_and_held_joints_are_listed():
    """A world's Actuation (what the physics applied) gives the action columns' pose and gains, whatever the config
    says; actuated joints no column drives are listed with their hold, for the robot side to command."""
    from types import SimpleNamespace

    from horde.sim.actuation import Actuation

    act = Actuation(mode="pd", scale=[0.5, 0.25, 0.1], offset=[0.1, -0.8, 0.3], stiffness=[20.0, 30.0, 40.0],
                    damping=[1.0, 1.5, 2.0], effort_limit=[15.0, 10.0, 5.0])
    env = SimpleNamespace(world=SimpleNamespace(actuation=act, actuated_joints=("waist", "hip", "knee")))
    layout = _layout(default_joint_pos=[9.0, 9.0], joint_stiffness=[9.0, 9.0])  # stale config keys lose
    a, r = action_spec(env, layout), robot_spec(env, layout)
    assert a["offset"] == [-0.8, 0.3] and r["pd_gains"]["kp"] == [30.0, 40.0] and r["effort_limits"] == [10.0, 5.0]
    assert r["held_joints"] == {"names": ["waist"], "target": [0.1], "kp": [20.0], "kd": [1.0],
                                "effort_limits": [15.0], "law": r["held_joints"]["law"]}
    assert robot_spec(object(), layout)["held_joints"] is None


def test_the_robot_model_is_the_configs_registered_robot():
    """policy.json names the robot model trained on, so a robot-side program can refuse another robot's model."""
    from horde.envs.robots import ROBOTS

    assert robot_model(_layout(robot="quad12")) == {"name": "quad12", "source": ROBOTS["quad12"].source}
    assert robot_model(_layout(robot="quad12"))["source"].startswith("horde ")
    assert robot_model(_layout(robot="go2"))["name"] == "go2"
    assert robot_model(_layout()) is None and robot_model(_layout(robot="not_registered")) is None


def test_observation_terms_take_declared_units_else_null():
    from horde.envs.observations import ObsTerm

    names = tuple(_layout()["obs_names"])

    class Declares:
        def observation_terms(self):
            return (ObsTerm("joint_pos", source="joint_pos", columns=names[:2], unit="rad", offset=(0.5, 0.0)),
                    ObsTerm("joint_vel", source="joint_vel", columns=names[2:], unit="rad/s", scale=0.1, clip=5.0))

    spec = observation_spec(Declares(), _layout(), None)
    terms = spec["terms"]
    assert [t["unit"] for t in terms] == ["rad", "rad", "rad/s"] and terms[2]["slice"] == [2, 3]
    assert [t["offset"] for t in terms] == [0.5, 0.0, 0.0] and (terms[2]["scale"], terms[2]["clip"]) == (0.1, 5.0)
    assert [(b["source"], b["slice"]) for b in spec["sources"]] == [("joint_pos", [0, 2]), ("joint_vel", [2, 3])]
    terms = observation_spec(object(), _layout(), {"mean": [0.0] * 3, "std": [1.0] * 3, "eps": 0.01})["terms"]
    assert [t["unit"] for t in terms] == [None] * 3 and all(t["scale"] == 1.0 and t["clip"] is None for t in terms)


def test_a_tanh_squash_reaches_policy_json_and_the_robot_side_command():
    """A task trained with ``action_squash=tanh`` applies tanh before the PD law: the bundle must say so and the
    standalone runner must apply it, or the robot gets clip(a) where the policy was trained on tanh(a)."""
    import numpy as np

    from horde.deploy.robot.run_policy import PolicyRunner

    layout = _layout(action_mode="pd", default_joint_pos=[0.1, -0.8], action_squash="tanh")
    a = action_spec(object(), layout)
    assert a["squash"] == "tanh" and "tanh" in a["formula"]
    assert action_spec(object(), _layout(action_mode="pd", default_joint_pos=[0.1, -0.8]))["squash"] == "clip"
    runner = object.__new__(PolicyRunner)
    runner._offset, runner._scale = np.array(a["offset"], np.float32), np.array(a["scale"], np.float32)
    runner._clip, runner._squash = a["clip"], a["squash"]
    got = runner.command(np.array([[0.5, -3.0]], np.float32))  # tanh of the action as the env applies it: no clip
    np.testing.assert_allclose(got, [[0.1 + 0.5 * np.tanh(0.5), -0.8 - 0.25 * np.tanh(3.0)]], rtol=1e-6)
