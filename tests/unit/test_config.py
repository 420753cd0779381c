"""Hydra composition into typed dataclasses, and one-line errors that list the valid choices."""

import pytest

from horde.envs import task_names
from horde.envs.cartpole import CartpoleConfig
from horde.train.config import ConfigError, PPOConfig, compose


def test_defaults_and_overrides():
    cfg, task, raw = compose(["num_envs=64", "device=cpu", "seed=3", "max_iterations=7", "algo.learning_rate=3e-4"])
    assert task == "cartpole"
    assert isinstance(cfg.task, CartpoleConfig) and isinstance(cfg.algo, PPOConfig)
    assert (cfg.num_envs, cfg.seed, cfg.max_iterations) == (64, 3, 7)
    assert cfg.algo.learning_rate == pytest.approx(3e-4)
    assert cfg.algo.policy.actor_hidden_dims == [32, 32]  # from configs/tuned/cartpole_ppo.yaml
    assert raw.num_envs == 64


def test_task_switch_takes_its_tuned_values():
    cfg, task, _ = compose(["task=pendulum", "task.max_torque=3.0"])
    assert task == "pendulum" and cfg.task.max_torque == 3.0 and cfg.algo.gamma == pytest.approx(0.98)


@pytest.mark.parametrize("overrides, expected", [
    (["task=cartpol"], "valid choices: " + ", ".join(task_names())),
    (["task=quadruped", "robot=spot"], "unknown robot 'spot'; valid robots: quad12, go2"),
    (["task=cartpole", "robot=go2"], "robot= needs a task with a robot choice (g1-velocity, g1-velocity-rough, quadruped, quadruped-rough, quadruped-rough-depth, quadruped-rough-perceptive, quadruped-rough-student)"),
    (["algo=sac"], "valid choices: distillation, ppo, shac"),
    (["num_env=4"], "valid keys there: algo, deterministic, device"),
    (["task.max_forse=3"], "max_force"),
    (["algo.policy.width=3"], "actor_hidden_dims"),
    (["num_envs=many"], "num_envs"),
    (["num_envs"], "cannot parse"),
])
def test_bad_overrides_fail_in_one_line(overrides, expected):
    with pytest.raises(ConfigError) as err:
        compose(overrides)
    assert expected in str(err.value)
    assert "\n" not in str(err.value)
