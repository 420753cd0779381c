"""The observation contract: for every registered task, the policy's observation vector is rebuilt from
``policy.json``'s observation blocks and raw state alone (``env.observation_sources()``, read from the world's
state, not from the observation buffer), with the robot side's numpy builder, and equals the env's to float
precision. A task whose exported offsets, scales, clips or column order differ from what its kernels write fails
here: the lift's joint offsets before 2026-11-26 (0 instead of the default pose) and the rough tasks' height scan
(offset 0 instead of the scan offset) did."""

import copy
import dataclasses

import numpy as np
import pytest
import torch

from horde.deploy.robot.observations import ObservationError, ObservationFrames, build_observation, required_sources
from horde.deploy.spec import observation_spec
from horde.envs import get_task, make, task_names
from horde.envs.observations import SOURCES, ObsTerm, columns_of

N = 4


def _quiet(task: str):
    """The task's config with observation noise off (noise is training's, not the robot's)."""
    cfg = copy.deepcopy(get_task(task).config)
    dr = getattr(cfg, "randomization", None)
    if dr is not None and hasattr(dr, "obs_noise_scale"):
        cfg.randomization = dataclasses.replace(dr, obs_noise_scale=0.0)
    if hasattr(cfg, "height_scan") and hasattr(cfg.height_scan, "noise"):
        cfg.height_scan = dataclasses.replace(cfg.height_scan, noise=0.0)
    return cfg


@pytest.mark.parametrize("task", task_names())
def test_observation_rebuilds_from_policy_json_and_raw_state(task):
    env = make(task, num_envs=N, config=_quiet(task))
    spec = observation_spec(env, env.describe(), None)
    assert [b["source"] for b in spec["sources"]] == [t.source for t in env.observation_terms()]
    g = torch.Generator().manual_seed(0)
    for step in range(6):
        raw = {k: v.detach().cpu().numpy() for k, v in env.observation_sources().items()}
        rebuilt = build_observation(spec, raw)
        np.testing.assert_allclose(rebuilt, env.obs.cpu().numpy(), rtol=1e-5, atol=2e-5,
                                   err_msg=f"{task} step {step}: obs differs from policy.json(raw state)")
        env.step(torch.rand(N, env.num_actions, generator=g) * 2 - 1)


@pytest.mark.parametrize("task, history", [
    ("lift", {"joint_pos": 3}),
    ("quadruped", {"base_ang_vel": 3, "joint_pos": 2}),  # joint_pos: in an interleaved group (the family's draws)
])
def test_a_history_term_rebuilds_from_policy_json_and_the_frames_the_robot_keeps(task, history):
    """``task.observation_params.<term>.history``: the env's observation, past frames included, equals the robot
    side's (``ObservationFrames``: policy.json's blocks, raw state, the frames it kept itself) over steps with an
    episode's end and start between them (env 0 times out at step 3: its frames fill with its first value)."""
    cfg = _quiet(task)
    cfg.observation_params = {name: {"history": h} for name, h in history.items()}
    env = make(task, num_envs=N, config=cfg)
    terms = {t.name: t for t in env.observation_terms()}
    assert {n: terms[n].history for n in history} == history
    spec = observation_spec(env, env.describe(), None)
    blocks = {b["term"]: b for b in spec["sources"]}
    for name, h in history.items():
        b, w = blocks[name], terms[name].frame_width
        assert b["history"] == h and b["slice"][1] - b["slice"][0] == h * w and len(b["offset"]) == w
        assert b["columns"][w] == b["columns"][0] + "@-1" and spec["terms"][b["slice"][0] + w]["lag"] == 1
    assert required_sources(spec)[blocks["joint_pos"]["source"]] == terms["joint_pos"].frame_width
    with pytest.raises(ObservationError, match="observes .* frames of its source: build the observation with "
                                               "ObservationFrames"):
        build_observation(spec, {})
    frames = ObservationFrames(spec)
    env.episode_length[0] = env.max_episode_length - 3
    g = torch.Generator().manual_seed(0)
    ended = 0
    for step in range(7):
        raw = {k: v.detach().cpu().numpy() for k, v in env.observation_sources().items()}
        rebuilt = frames.build(raw)
        np.testing.assert_allclose(rebuilt, env.obs.cpu().numpy(), rtol=1e-5, atol=2e-5,
                                   err_msg=f"{task} step {step}: obs differs from policy.json(raw state, frames)")
        r = env.step(torch.rand(N, env.num_actions, generator=g) * 2 - 1)
        frames.reset(r.dones.cpu().numpy())
        ended += int(r.dones[0])
    assert ended == 1
    lo, hi = blocks["joint_pos"]["slice"]
    assert np.abs(env.obs[1:, lo:hi].numpy() - np.tile(env.obs[1:, lo:lo + (hi - lo) // history["joint_pos"]].numpy(),
                                                       (1, history["joint_pos"]))).max() > 1e-4  # frames differ


@pytest.mark.parametrize("task, delay", [
    ("lift", {"joint_pos": [2, 2]}),
    ("quadruped", {"base_ang_vel": [1, 3], "joint_pos": [2, 2]}),  # joint_pos: in an interleaved group
])
def test_a_delayed_term_shows_the_robot_sides_value_of_lag_steps_before(task, delay):
    """``task.observation_params.<term>.delay``: the env's delayed block equals what the robot side builds from
    raw state (policy.json, which states the delay and adds none) ``lag`` steps before, within the episode (its first
    value before that; env 0 times out at step 3), lag in [min, max]; every other column is the value now, and the
    privileged critic sees the value now."""
    cfg = _quiet(task)
    cfg.observation_params = {name: {"delay": d} for name, d in delay.items()}
    env = make(task, num_envs=N, config=cfg)
    terms = {t.name: t for t in env.observation_terms()}
    assert {n: list(terms[n].delay) for n in delay} == delay
    spec = observation_spec(env, env.describe(), None)
    blocks = {b["term"]: b for b in spec["sources"]}
    assert {n: blocks[n]["delay"] for n in delay} == delay and "delay_note" in spec
    assert all("delay" not in b for n, b in blocks.items() if n not in delay)
    env.episode_length[0] = env.max_episode_length - 3
    g = torch.Generator().manual_seed(0)
    start = np.zeros(N, dtype=int)  # the step each env's episode began
    now, seen = [], []
    for step in range(8):
        raw = {k: v.detach().cpu().numpy() for k, v in env.observation_sources().items()}
        now.append(build_observation(spec, raw))
        seen.append(env.obs.cpu().numpy().copy())
        if env.critic_names:
            np.testing.assert_allclose(env.critic_obs[:, :env.obs_dim].cpu().numpy(), now[-1], rtol=1e-5, atol=2e-5)
        r = env.step(torch.rand(N, env.num_actions, generator=g) * 2 - 1)
        for e in np.flatnonzero(r.dones.cpu().numpy()):
            start[e] = step + 1
        if step == 2:
            assert start[0] == 3 and (start[1:] == 0).all()
    for step in range(8):
        for e in range(N):
            begin = start[e] if step >= start[e] else 0  # env 0's second episode began at step 3
            for name, (lo_lag, hi_lag) in delay.items():
                lo, hi = blocks[name]["slice"]
                options = [now[max(step - lag, begin)][e, lo:hi] for lag in range(lo_lag, hi_lag + 1)]
                assert any(np.allclose(seen[step][e, lo:hi], o, rtol=1e-5, atol=2e-5) for o in options), \
                    f"{task} step {step} env {e}: {name} is none of its values {lo_lag}-{hi_lag} steps before"
            rest = np.ones(spec["dim"], dtype=bool)
            for name in delay:
                rest[slice(*blocks[name]["slice"])] = False
            np.testing.assert_allclose(seen[step][e, rest], now[step][e, rest], rtol=1e-5, atol=2e-5)
    lo, hi = blocks["joint_pos"]["slice"]
    assert np.abs(seen[5][1:, lo:hi] - now[5][1:, lo:hi]).max() > 1e-4  # the delay shows
    saved = env.get_env_state()  # the waiting values are env state: a checkpoint resumes exactly
    assert "obs_past" in saved
    actions = [torch.rand(N, env.num_actions, generator=g) * 2 - 1 for _ in range(4)]
    first = [env.step(a).obs.clone() for a in actions]
    env.set_env_state(saved)
    for a, o in zip(actions, first):
        torch.testing.assert_close(env.step(a).obs, o, rtol=0, atol=0)


def test_every_term_names_a_documented_source_or_its_own_column_and_writes_itself():
    """A term's source is a documented raw quantity (SOURCES), or, for a one-column term, the column itself (a
    classic task's state variable); and every term of every task has the Warp function the observation generator
    writes it from (issue 71: no task hand-indexes an observation column)."""
    for task in task_names():
        env = make(task, num_envs=1)
        for t in env.observation_terms():
            assert t.source in SOURCES or t.columns == (t.source,), (task, t.name, t.source)
            assert t.func is not None, f"{task}: observation term '{t.name}' is not written by the generator"


def test_builder_names_what_is_missing_or_misshapen():
    terms = [ObsTerm("joint_pos", source="joint_pos", columns=("pos_a", "pos_b"), offset=(0.5, -0.5), clip=1.0)]
    spec = {"dim": 2, "sources": [{"term": "joint_pos", "source": "joint_pos", "slice": [0, 2], "offset": [0.5, -0.5],
                                   "scale": [1.0, 1.0], "clip": 1.0}]}
    assert list(columns_of(terms)) == ["pos_a", "pos_b"]
    assert required_sources(spec) == {"joint_pos": 2}
    np.testing.assert_allclose(build_observation(spec, {"joint_pos": np.array([3.0, 0.0])}), [[1.0, 0.5]])
    with pytest.raises(ObservationError, match="lacks source.*joint_pos"):
        build_observation(spec, {"joint_vel": np.zeros(2)})
    with pytest.raises(ObservationError, match="3 columns"):
        build_observation(spec, {"joint_pos": np.zeros(3)})
    with pytest.raises(ValueError, match="offset has 1 values for 2 columns"):
        ObsTerm("bad", source="joint_pos", columns=("a", "b"), offset=(0.0,))
