"""Terminations and events as terms in the ant, humanoid, cart-pole, pendulum and reach families: each default
termination term fires exactly where the old hard-coded kernel condition did (hand-made states), a parameter moves
its threshold, unknown names fail in one line listing the valid ones, a saved config with the old fields loads, and
reach's target draw is an event (``target`` per episode, ``retarget`` on an interval)."""

import dataclasses
import math

import numpy as np
import pytest
import torch
import warp as wp

from horde.envs import get_task, make
from horde.envs.ant import ANT_TERMINATIONS, AntConfig
from horde.envs.cartpole import CARTPOLE_TERMINATIONS, Cart, CartpoleConfig, failed_from_state
from horde.envs.humanoid import HUMANOID_TERMINATIONS
from horde.envs.locomotion import Runner
from horde.envs.pendulum import PENDULUM_TERMINATIONS
from horde.envs.reach import REACH_EVENTS, REACH_TERMINATIONS
from horde.envs.terms import UnknownTermError, term_values_kernel
from horde.train.config import ConfigError, compose, from_container, to_container


def _fires(term_set, context, names, params=None, **fields) -> list[bool]:
    """Whether a failure among the terminations ``names`` fires for each env of a context made of ``fields``."""
    x = context()
    n = 0
    for name, value in fields.items():
        setattr(x, name, value)
        n = max(n, value.shape[0] if isinstance(value, wp.array) else 0)
    out = wp.zeros((1, n), dtype=float)
    wp.launch(term_values_kernel(context, (term_set.failure_term(names, params),)), n, inputs=[x], outputs=[out])
    return [bool(v > 0.5) for v in out.numpy()[0]]


def _torso(z: list[float], tilt: list[float]) -> wp.array:
    """Root poses [N, 1]: height ``z`` [m], rotated by ``tilt`` [rad] about x."""
    q = [(math.sin(a / 2), 0.0, 0.0, math.cos(a / 2)) for a in tilt]
    return wp.array(np.array([[(0.0, 0.0, h, *r)] for h, r in zip(z, q)], np.float32), dtype=wp.transform)


def _old_locomotion(body_q: wp.array, height: float, min_up: float) -> list[bool]:
    """The kernel condition before the terms: ``z < termination_height or up_z < min_up`` (float32)."""
    p = body_q.numpy()[:, 0]
    up = np.float32(1.0) - np.float32(2.0) * (p[:, 3] * p[:, 3] + p[:, 4] * p[:, 4])
    return list((p[:, 2] < np.float32(height)) | (up < np.float32(min_up)))


@pytest.mark.parametrize("term_set, height", [(ANT_TERMINATIONS, 0.31), (HUMANOID_TERMINATIONS, 0.8)])
def test_locomotion_terms_fire_where_the_old_condition_did(term_set, height):
    h = np.float32(height)
    z = [np.nextafter(h, np.float32(0)), h, np.nextafter(h, np.float32(2)), 1.5, 1.5, 1.5, 1.5, -1.0]
    tilt = [0.0, 0.0, 0.0, math.pi / 2 - 1e-3, math.pi / 2 + 1e-3, math.pi, 0.3, 0.0]
    body_q = _torso(z, tilt)
    fields = {"root": 0, "body_q": body_q}
    got = _fires(term_set, Runner, ["torso_low", "upside_down"], **fields)
    assert got == _old_locomotion(body_q, height, 0.0)
    assert got == [True, False, False, False, True, True, False, True]
    # a parameter moves the threshold, as the old config field did
    params = {"torso_low": {"height": 0.2}, "upside_down": {"min_up": 0.5}}
    assert _fires(term_set, Runner, ["torso_low", "upside_down"], params, **fields) == _old_locomotion(body_q, 0.2, 0.5)
    assert _fires(term_set, Runner, ["upside_down"], **fields) == [False] * 4 + [True, True, False, False]
    assert _fires(term_set, Runner, [], **fields) == [False] * len(z)


def test_cartpole_terms_fire_where_the_old_condition_did():
    for cfg in (CartpoleConfig(), get_task("cartpole-swingup").config):
        rows = [(2.39, 0, 0.0, 0), (2.41, 0, 0.0, 0), (-2.41, 0, 0.0, 0), (0.0, 0, 0.39, 0), (0.0, 0, -0.41, 0),
                (0.0, 0, 2 * math.pi + 0.41, 0), (0.0, 0, math.pi, 0), (math.nan, 0, 0.0, 0), (0.0, 0, 0.0, math.inf)]
        state = torch.tensor(rows, dtype=torch.float32)
        angle = torch.remainder(state[:, 2] + math.pi, 2 * math.pi) - math.pi
        old = (~torch.isfinite(state).all(dim=-1)) | (state[:, 0].abs() > cfg.cart_limit) | (
            (cfg.pole_limit > 0) & (angle.abs() > cfg.pole_limit))
        assert failed_from_state(state, cfg).tolist() == old.tolist()
    assert CartpoleConfig().terminations == ["cart_out", "pole_fallen"]


def test_cartpole_env_counts_each_cause_and_a_term_of_its_own_leaves_the_block_step(monkeypatch):
    cfg = dataclasses.replace(CartpoleConfig(), terminations=["pole_fallen"])
    env = make("cartpole", num_envs=96, seed=1, config=cfg)
    assert env._use_blocks
    env.reset()
    env.state[:, 0] = 3.0  # every cart past its limit, every pole upright: only cart_out would fire
    env.step(torch.zeros(96, 1))
    assert not env.terminated.any()

    for attr in ("_terms", "_time_out"):  # the test's own term leaves the set as it found it
        monkeypatch.setattr(CARTPOLE_TERMINATIONS, attr, dict(getattr(CARTPOLE_TERMINATIONS, attr)))

    @CARTPOLE_TERMINATIONS.term
    def cart_fast(x: Cart, i: int, speed: float = 1.0) -> bool:
        return wp.abs(x.state[i, 1]) > speed

    cfg = dataclasses.replace(CartpoleConfig(), terminations=["cart_out", "pole_fallen", "cart_fast"],
                              termination_params={"cart_fast": {"speed": 0.5}})
    env = make("cartpole", num_envs=96, seed=1, config=cfg)
    assert not env._use_blocks, "the block step's C++ cannot run a term of the config's own"
    env.reset()
    env.state[:48, 1] = 0.8
    env.state[48:, 1] = 0.2
    env.step(torch.zeros(96, 1))
    assert env.terminated[:48].all() and not env.terminated[48:].any()
    stats = env.pop_episode_stats()
    assert stats["termination/cart_fast"] == 1.0 and stats["termination/cart_out"] == 0.0


def test_pendulum_and_reach_have_none_by_default_and_reach_offers_reached():
    assert get_task("pendulum").config.terminations == [] and get_task("reach").config.terminations == []
    from horde.envs.reach import Arm

    target = wp.array([(0.5, 0.0, 0.0)] * 3, dtype=wp.vec3)
    body_q = wp.array(np.array([[(0.5 - d, 0.0, 0.0, 0, 0, 0, 1)] for d in (0.01, 0.019, 0.03)], np.float32),
                      dtype=wp.transform)
    fields = {"ee_body": 0, "ee_offset": wp.vec3(), "body_q": body_q, "target": target,
              "unstable": wp.zeros(3, dtype=wp.bool)}
    assert _fires(REACH_TERMINATIONS, Arm, ["reached"], **fields) == [True, True, False]
    assert _fires(REACH_TERMINATIONS, Arm, ["reached"], {"reached": {"distance": 0.015}}, **fields) == [
        True, False, False]


@pytest.mark.parametrize("term_set, task, valid", [
    (ANT_TERMINATIONS, "ant", "torso_low, upside_down"),
    (HUMANOID_TERMINATIONS, "humanoid", "torso_low, upside_down"),
    (CARTPOLE_TERMINATIONS, "cartpole", "cart_out, pole_fallen"),
    (REACH_TERMINATIONS, "reach", "reached"),
])
def test_an_unknown_termination_fails_in_one_line_listing_the_valid_ones(term_set, task, valid):
    with pytest.raises(UnknownTermError, match=f"^unknown {task} termination term torso_hihg; valid terms: {valid}"):
        term_set.configure(["torso_hihg"])
    with pytest.raises(ConfigError, match=f"^task.terminations: unknown {task} termination term torso_hihg; "
                                          f"valid terms: {valid}") as err:
        compose([f"task={task}", "task.terminations=[torso_hihg]"])
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match=r"^task.termination_params.torso_low.hieght: unknown parameter"):
        compose(["task=ant", "task.termination_params.torso_low.hieght=0.2"])
    with pytest.raises(ConfigError, match=r"^task.termination_params.upside_down.min_up=2.0: must be "):
        compose(["task=ant", "task.termination_params.upside_down.min_up=2.0"])
    assert PENDULUM_TERMINATIONS.configure([]) == ()


def test_an_ant_run_saved_with_termination_height_loads_it_as_the_terms_parameter():
    _, _, raw = compose(["task=ant"])
    saved = to_container(raw)
    for key in ("terminations", "termination_params"):
        del saved["task"][key]
    saved["task"]["termination_height"], saved["task"]["min_up"] = 0.25, -0.5
    cfg = from_container(saved, "ant")
    assert cfg.task.terminations == ["torso_low", "upside_down"]
    assert cfg.task.termination_params == {"torso_low": {"height": 0.25}, "upside_down": {"min_up": -0.5}}
    assert AntConfig.migrate({"episode_length": 5}) == {"episode_length": 5}
    with pytest.raises(ConfigError, match=r"^unknown key 'task.termination_height'"):
        compose(["task=ant", "task.termination_height=0.2"])


def test_reach_target_is_an_episode_event_and_retarget_an_interval_one():
    base = get_task("reach").config
    assert base.episode_events == ["target"]
    assert REACH_EVENTS.modes(["target", "retarget"]) == ("episode", "interval")
    env = make("reach", num_envs=4, seed=2, config=dataclasses.replace(base, events={"retarget": 0.1}))
    env.reset()
    lo, hi = torch.tensor(base.target_low), torch.tensor(base.target_high)
    assert ((env.target >= lo) & (env.target <= hi)).all()
    first = env.target.clone()
    for step in range(1, 6):  # 0.1 s = 5 control steps of 20 ms: a new target on the 5th
        env.step(torch.zeros(4, 7))
        assert (env.target == first).all() == (step < 5), step
    assert ((env.target >= lo) & (env.target <= hi)).all()
    with pytest.raises(UnknownTermError, match=r"^task.events takes interval events; not target \(episode\)"):
        make("reach", num_envs=2, config=dataclasses.replace(base, events={"target": 1.0}))
    with pytest.raises(ConfigError, match=r"^task.episode_events: unknown reach event term targte; valid terms: "
                                          r"target, retarget"):
        compose(["task=reach", "task.episode_events=[targte]"])


def test_pendulum_time_out_and_failure_terms_end_episodes_in_the_env_and_the_differentiable_model(monkeypatch):
    from horde.envs.pendulum import Swing, failed_from_state as pendulum_failed

    for attr in ("_terms", "_time_out"):
        monkeypatch.setattr(PENDULUM_TERMINATIONS, attr, dict(getattr(PENDULUM_TERMINATIONS, attr)))

    @PENDULUM_TERMINATIONS.term(time_out=True)
    def spinning(x: Swing, i: int, speed: float = 1.0) -> bool:
        return wp.abs(x.state[i, 1]) > speed

    @PENDULUM_TERMINATIONS.term
    def tipped(x: Swing, i: int, angle: float = 3.0) -> bool:
        return wp.abs(x.state[i, 0]) > angle

    base = get_task("pendulum").config
    cfg = dataclasses.replace(base, terminations=["spinning", "tipped"],
                              termination_params={"spinning": {"speed": 4.0}})
    env = make("pendulum", num_envs=3, seed=0, config=cfg)
    env.reset()
    env.state.copy_(torch.tensor([[0.0, 6.0], [-3.1, 0.0], [0.5, 0.0]]))
    r = env.step(torch.zeros(3, 1))
    assert r.truncated.tolist() == [True, False, False] and r.terminated.tolist() == [False, True, False]
    stats = env.pop_episode_stats()
    assert stats["termination/spinning"] == 0.5 and stats["termination/tipped"] == 0.5
    state = torch.tensor([[0.0, 6.0], [-3.1, 0.0], [0.5, 0.0], [math.nan, 0.0]])
    assert pendulum_failed(state, cfg).tolist() == [False, True, False, True], "a time-out is no failure"
    assert pendulum_failed(state, base).tolist() == [False, False, False, True]
