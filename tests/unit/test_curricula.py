"""Curricula as terms (issue 71, item 3): a registered host function run once per training iteration moves a task
setting; the built-in ``reward_weight`` ramps a reward term's weight; the schedule resumes exactly; every mistake is
one line."""

import dataclasses

import pytest
import torch
import warp as wp

from horde.envs import get_task, make
from horde.envs.curricula import CURRICULA
from horde.train.config import ConfigError, compose


def _lift(**fields):
    return make("lift", num_envs=2, seed=0, config=dataclasses.replace(get_task("lift").config, **fields))


def test_reward_weight_ramps_the_weight_the_step_uses():
    env = _lift(curricula=["rate_up"], curriculum_params={"rate_up": {
        "func": "reward_weight", "term": "action_rate", "weight": -0.1, "start": 2, "ramp": 2}})
    k = env.term_names.index("action_rate")
    w0 = env.cfg.reward_scales["action_rate"]
    seen = [env.pop_episode_stats()["curriculum/rate_up"] for _ in range(5)]
    assert seen == pytest.approx([w0, w0 + 0.0 * (-0.1 - w0), w0 + 0.5 * (-0.1 - w0), -0.1, -0.1])
    assert float(wp.to_torch(env._reward_scales)[k]) == pytest.approx(-0.1)
    a = torch.ones(2, env.num_actions)
    env.step(a)
    env.step(-a)  # an action change: the action-rate term is non-zero
    torch.testing.assert_close(env.reward, (env.terms * wp.to_torch(env._reward_scales)).sum(1))


def test_the_velocity_familys_weights_stay_per_second_and_the_schedule_resumes():
    cfg = dataclasses.replace(get_task("quadruped").config, curricula=["track_more"],
                              curriculum_params={"track_more": {"func": "reward_weight", "term": "track_lin_vel",
                                                                "weight": 3.0}})
    env = make("quadruped", num_envs=2, seed=0, config=cfg)
    assert env.pop_episode_stats()["curriculum/track_more"] == 3.0
    k = env.term_names.index("track_lin_vel")
    assert float(wp.to_torch(env._reward_scales)[k]) == pytest.approx(3.0 * cfg.control_dt)
    saved = env.get_env_state()
    assert int(saved["curriculum_iteration"]) == 1
    other = make("quadruped", num_envs=2, seed=1, config=cfg)
    other.set_env_state(saved)
    assert int(other._curriculum_iteration) == 1
    assert float(wp.to_torch(other._reward_scales)[k]) == pytest.approx(3.0 * cfg.control_dt)


def test_a_users_curriculum_is_one_function_and_config_lines():
    @CURRICULA.term(replace=True)
    def pushes_off_after(env, iteration: int, stats: dict, *, name: str, after: int = 1) -> dict[str, float]:
        assert iteration == 0 or "episodes" in stats  # iteration 0: when the env is built, no statistics
        return {f"curriculum/{name}": float(iteration > after)}

    try:
        env = _lift(curricula=["pushes_off_after"], curriculum_params={"pushes_off_after": {"after": 1}})
        assert [env.pop_episode_stats()["curriculum/pushes_off_after"] for _ in range(2)] == [0.0, 1.0]
    finally:  # other tests list the registered curricula
        CURRICULA._funcs.pop("pushes_off_after", None)


@pytest.mark.parametrize("overrides, message", [
    (["task.curricula=[ramp]"], r"^unknown curriculum 'ramp'; valid curricula: reward_weight"),
    (["task.curricula=[r]", "task.curriculum_params.r.func=reward_weight", "task.curriculum_params.r.term=rate",
      "task.curriculum_params.r.weight=1"], r"^task.curriculum_params.r.term: 'rate' is not a reward term of the task"),
    (["task.curricula=[r]", "task.curriculum_params.r.func=reward_weight", "task.curriculum_params.r.term=action_rate"],
     r"^task.curriculum_params.r.weight: curriculum 'reward_weight' needs it$"),
    (["task.curricula=[r]", "task.curriculum_params.r.func=reward_weight", "task.curriculum_params.r.term=action_rate",
      "task.curriculum_params.r.weight=1", "task.curriculum_params.r.strat=3"],
     r"^task.curriculum_params.r.strat: unknown parameter of curriculum 'reward_weight'; valid parameters: term "),
    (["task.curricula=[r]", "task.curriculum_params.r.func=reward_weight", "task.curriculum_params.r.term=action_rate",
      "task.curriculum_params.r.weight=1", "task.curriculum_params.r.start=1.5"],
     r"^task.curriculum_params.r.start: expected int, got 1.5$"),
])
def test_a_mistake_is_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message):
        compose(["task=lift", *overrides])
