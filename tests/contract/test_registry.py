"""The task registry is typed, extensible from outside, and fails with the list of valid names."""

import dataclasses

import pytest

from horde.envs import TASKS, TaskSpec, UnknownTaskError, get_task, make, register_task, task_names
from horde.envs.cartpole import CartpoleConfig, CartpoleEnv
from horde.envs.pendulum import PendulumConfig


def test_builtin_tasks():
    assert {"cartpole", "cartpole-swingup", "pendulum"} <= set(task_names())


def test_unknown_task_lists_valid_names():
    with pytest.raises(UnknownTaskError) as err:
        get_task("cartpol")
    msg = str(err.value)
    assert "cartpol" in msg and "cartpole-swingup" in msg and "pendulum" in msg and "\n" not in msg


def test_register_from_outside_and_train_config_sees_it():
    name = "test-long-cartpole"
    spec = TaskSpec(env_cls=CartpoleEnv, config=CartpoleConfig(episode_length=1000), description="longer")
    register_task(name, spec)
    try:
        with pytest.raises(ValueError, match="already registered"):
            register_task(name, spec)
        env = make(name, num_envs=2)
        assert env.max_episode_length == 1000
        from horde.train.config import compose

        cfg, task, _ = compose([f"task={name}"])
        assert task == name and cfg.task.episode_length == 1000
    finally:
        TASKS.pop(name)


def test_make_rejects_the_wrong_config_type():
    with pytest.raises(TypeError, match="CartpoleConfig"):
        make("cartpole", num_envs=2, config=PendulumConfig())


def test_reward_scale_keys_must_match_terms():
    cfg = dataclasses.replace(CartpoleConfig(), reward_scales={"alive": 1.0})
    with pytest.raises(ValueError, match="reward_scales keys"):
        make("cartpole", num_envs=2, config=cfg)
