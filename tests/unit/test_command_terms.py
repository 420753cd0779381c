"""Commands as terms in the velocity family (issue 71, item 3): ``task.command`` names the Warp function that draws
each env's command (``uniform_velocity`` by default), with parameters; a user's is one function and one line."""

import dataclasses

import pytest
import torch
import warp as wp

from horde.envs import get_task, make
from horde.envs.velocity_terms import VELOCITY_COMMANDS, Legged
from horde.train.config import ConfigError, compose


def straight_ahead(x: Legged, i: int, s: wp.uint32, speed: float = 0.5) -> wp.uint32:
    """vx = ``speed`` plus up to 0.1 m/s, no sideways or turning command."""
    x.command[i, 0] = speed + wp.randf(s, 0.0, 0.1)
    x.command[i, 1] = 0.0
    x.command[i, 2] = 0.0
    return s


@pytest.fixture
def registered():
    """``straight_ahead`` registered for one test, then removed: other tests list the registered commands (a choice
    field's valid values, the static table of fields)."""
    VELOCITY_COMMANDS.term(straight_ahead, replace=True)
    yield
    VELOCITY_COMMANDS._terms.pop("straight_ahead", None)


def test_a_users_command_term_draws_every_command(registered):
    cfg = dataclasses.replace(get_task("quadruped").config, command="straight_ahead",
                              command_params={"straight_ahead": {"speed": 0.7}}, command_resample_s=0.1)
    env = make("quadruped", num_envs=8, seed=0, config=cfg)
    for _ in range(6):  # a resample inside
        env.step(torch.zeros(8, env.num_actions))
        assert ((env.command[:, 0] >= 0.7) & (env.command[:, 0] <= 0.8)).all()
        assert (env.command[:, 1:] == 0).all()
    assert env.command[:, 0].std() > 0  # each env its own draw


def test_the_default_is_uniform_velocity_in_its_ranges():
    cfg = dataclasses.replace(get_task("quadruped").config, standing_fraction=0.0, command_vx=[0.2, 0.4],
                              command_vy=[-0.1, 0.1], command_yaw_rate=[0.5, 0.6])
    env = make("quadruped", num_envs=32, seed=0, config=cfg)
    c = env.command
    assert ((c[:, 0] >= 0.2) & (c[:, 0] <= 0.4)).all() and ((c[:, 2] >= 0.5) & (c[:, 2] <= 0.6)).all()
    assert c[:, 1].abs().max() <= 0.1


@pytest.mark.parametrize("overrides, message", [
    (["task.command=straight"], r"task.command=straight: not a valid choice.*uniform_velocity"),
    (["task.command=straight_ahead", "task.command_params.straight_ahead.sped=1"],
     r"^task.command_params.straight_ahead.sped: unknown parameter of velocity command term 'straight_ahead'"),
])
def test_a_mistake_is_one_line(registered, overrides, message):
    with pytest.raises(ConfigError, match=message):
        compose(["task=quadruped", *overrides])


def test_the_twin_refuses_a_command_it_cannot_draw(registered):
    from horde.envs.velocity_twin import VelocityTwin

    cfg = dataclasses.asdict(dataclasses.replace(get_task("quadruped").config, command="straight_ahead"))
    with pytest.raises(ValueError, match="the MuJoCo twin draws uniform_velocity's commands only"):
        VelocityTwin(None, cfg, 0.02)


def test_the_command_ranges_curriculum_starts_narrow_and_widens_on_good_tracking():
    cfg = dataclasses.replace(get_task("quadruped").config, standing_fraction=0.0, command_vy=[-0.5, 0.5],
                              command_yaw_rate=[-1.0, 1.0], curricula=["ranges"],
                              curriculum_params={"ranges": {"func": "command_ranges", "vy": 0.1, "yaw": 0.2,
                                                            "step_vy": 0.2, "threshold": 0.5}})
    env = make("quadruped", num_envs=32, seed=0, config=cfg)
    assert env.vy_range.tolist() == pytest.approx([-0.1, 0.1]) and env.yaw_range.tolist() == pytest.approx([-0.2, 0.2])
    assert env.command[:, 1].abs().max() <= 0.1 + 1e-6 and env.command[:, 2].abs().max() <= 0.2 + 1e-6
    best = cfg.reward_scales["track_lin_vel"] * cfg.control_dt * cfg.episode_length
    curriculum = env._curricula[0]
    curriculum(env, 1, {"reward/track_lin_vel": 0.4 * best})  # below the threshold: no change
    assert env.vy_range.tolist() == pytest.approx([-0.1, 0.1])
    out = curriculum(env, 2, {"reward/track_lin_vel": 0.6 * best})
    assert env.vy_range.tolist() == pytest.approx([-0.3, 0.3]) and env.yaw_range.tolist() == pytest.approx([-0.3, 0.3])
    assert out == {"curriculum/ranges_vy_max": pytest.approx(0.3), "curriculum/ranges_yaw_max": pytest.approx(0.3)}
    for _ in range(3):
        curriculum(env, 3, {"reward/track_lin_vel": best})
    assert env.vy_range.tolist() == pytest.approx([-0.5, 0.5])  # up to the config's range
    assert "vy_range" in env._task_state()


def test_the_command_ranges_curriculum_is_the_velocity_familys():
    from horde.sim.fields import FieldError

    cfg = dataclasses.replace(get_task("lift").config, curricula=["ranges"],
                              curriculum_params={"ranges": {"func": "command_ranges"}})
    with pytest.raises(FieldError, match="is the velocity family's curriculum"):
        make("lift", num_envs=2, seed=0, config=cfg)


def test_the_vx_widen_curriculum_widens_on_its_schedule_and_never_narrows():
    cfg = dataclasses.replace(get_task("quadruped").config, command_vx=[-1.0, 1.0], vx_curriculum=True,
                              vx_curriculum_start=[0.0, 0.5], curricula=["out"],
                              curriculum_params={"out": {"func": "vx_widen", "lo": -1.0, "hi": 2.0, "start": 10,
                                                         "ramp": 4}})
    env = make("quadruped", num_envs=8, seed=0, config=cfg)
    assert env.vx_range.tolist() == pytest.approx([0.0, 0.5])  # iteration 0: where the vx curriculum starts
    curriculum = env._curricula[0]
    assert curriculum(env, 9, {}) == {"curriculum/out_vx_min": 0.0, "curriculum/out_vx_max": 0.5}
    out = curriculum(env, 12, {})  # half way: hi clipped into command_vx
    assert env.vx_range.tolist() == pytest.approx([-0.5, 0.75]) and out["curriculum/out_vx_max"] == pytest.approx(0.75)
    env.vx_range.copy_(torch.tensor([-0.9, 0.75]))  # the vx curriculum's own rule widened it further
    curriculum(env, 13, {})
    assert env.vx_range.tolist() == pytest.approx([-0.9, 0.875])
    curriculum(env, 50, {})
    assert env.vx_range.tolist() == pytest.approx([-1.0, 1.0])
