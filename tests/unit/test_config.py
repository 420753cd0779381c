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


def test_a_whole_number_written_as_a_float_literal_is_that_number():
    cfg, _, raw = compose(["max_iterations=1e3", "num_envs=2e2"])
    assert (cfg.max_iterations, cfg.num_envs) == (1000, 200) and isinstance(cfg.max_iterations, int)
    assert raw.max_iterations == 1000


def test_task_switch_takes_its_tuned_values():
    cfg, task, _ = compose(["task=pendulum", "task.max_torque=3.0"])
    assert task == "pendulum" and cfg.task.max_torque == 3.0 and cfg.algo.gamma == pytest.approx(0.98)


@pytest.mark.parametrize("overrides, expected", [
    (["task=cartpol"], "valid choices: " + ", ".join(task_names())),
    (["task=quadruped", "robot=spot"], "unknown robot 'spot'; valid robots: quad12, go2"),
    (["task=cartpole", "robot=go2"], "robot= needs a task with a robot choice (g1-velocity, g1-velocity-rough, lift, place, push, quadruped, quadruped-rough, quadruped-rough-depth, quadruped-rough-perceptive, quadruped-rough-student)"),
    (["algo=sacc"], "valid choices: distillation, ppo, sac, shac"),
    (["num_env=4"], "valid keys there: algo, cpu, deterministic, device"),
    (["task.max_forse=3"], "max_force"),
    (["algo.policy.width=3"], "actor_hidden_dims"),
    (["num_envs=many"], "num_envs"),
    (["num_envs"], "cannot parse"),
    (["task=quadruped", "task.standing_fraction=5"], "task.standing_fraction=5.0: must be >= 0 and <= 1"),
    (["task=quadruped", "task.randomization.push_interval=-1"], "task.randomization.push_interval=-1.0: must be >= 0"),
    (["task=cartpole", "max_iterations=1e11"], "max_iterations=100000000000: must be >= 1 and <= 1000000000"),
    (["task=cartpole", "max_iterations=1.5"], "max_iterations=1.5: max_iterations takes a whole number"),
    (["task=cartpole", "seed=-1"], "seed=-1: must be >= 0"),
])
def test_bad_overrides_fail_in_one_line(overrides, expected):
    with pytest.raises(ConfigError) as err:
        compose(overrides)
    assert expected in str(err.value)
    assert "\n" not in str(err.value)


def test_a_tuned_configs_cpu_profile_applies_on_the_cpu_under_the_command_line():
    """Issue 72: a bare `horde train task=g1-velocity` on a CPU is the CPU recipe, not 4096 envs; a key the user
    sets wins, cpu={} turns the profile off, and the config says which values applied."""
    cfg = compose(["task=g1-velocity"])[0]
    assert (cfg.num_envs, cfg.max_iterations, cfg.algo.num_learning_epochs) == (512, 1500, 3)
    assert cfg.profile == "cpu: num_envs=512 max_iterations=1500 algo.num_learning_epochs=3"
    named = compose(["task=g1-velocity", "algo=ppo"])[0]  # choosing the algo group sets none of its keys
    assert (named.num_envs, named.algo.num_learning_epochs, named.profile) == (512, 3, cfg.profile)
    cfg = compose(["task=g1-velocity", "num_envs=64"])[0]
    assert cfg.num_envs == 64 and cfg.algo.num_learning_epochs == 3 and "num_envs" not in cfg.profile
    cfg = compose(["task=g1-velocity", "cpu={}"])[0]
    assert (cfg.num_envs, cfg.max_iterations, cfg.algo.num_learning_epochs, cfg.profile) == (4096, 3000, 5, None)
    cfg = compose(["task=quadruped", "algo.policy.actor_hidden_dims=[64,64]"])[0]
    assert cfg.algo.policy.actor_hidden_dims == [64, 64] and cfg.algo.policy.critic_hidden_dims == [128, 64, 32]
    assert compose(["task=cartpole"])[0].profile is None  # no profile in its tuned config
