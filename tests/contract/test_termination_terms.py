"""Termination terms from a user's side: a failure and a time-out added from outside horde, each one definition
and one config line; per-cause statistics; the default terms keep the task's behaviour (the trajectory digests in
benchmarks/README.md did not change when the hard-coded failure became two terms)."""

import dataclasses

import pytest
import torch
import warp as wp

from horde.envs import get_task, make
from horde.envs.terms import UnknownTermError
from horde.envs.velocity import Legged, VelocityTwin
from horde.envs.velocity_terms import VELOCITY_TERMINATIONS


# --- what a user writes (each block is the whole addition) ----------------------------------------------------------
@VELOCITY_TERMINATIONS.term
def base_below(x: Legged, i: int) -> bool:
    """The base drops below 1 m: always true for the quadruped (standing height ~0.3 m)."""
    return wp.transform_get_translation(x.body_q[i, x.root])[2] < 1.0


@VELOCITY_TERMINATIONS.term(time_out=True)
def far_enough(x: Legged, i: int) -> bool:
    """A time-out once the base is below 1 m (so: at once); Isaac Lab's time_out=True kind."""
    return wp.transform_get_translation(x.body_q[i, x.root])[2] < 1.0
# -------------------------------------------------------------------------------------------------------------------


def _with(*names):
    cfg = get_task("quadruped").config
    return dataclasses.replace(cfg, terminations=[*cfg.terminations, *names])


def test_a_failure_term_from_outside_ends_every_episode_as_a_failure_and_is_counted():
    env = make("quadruped", num_envs=8, seed=0, config=_with("base_below"))
    env.pop_episode_stats()
    r = env.step(torch.zeros(8, 12))
    assert r.terminated.all() and not r.truncated.any()
    stats = env.pop_episode_stats()
    assert stats["episodes"] == 8 and stats["termination/base_below"] == 1.0
    assert stats["termination/body_contact"] == 0.0 and stats["termination/tilt"] == 0.0
    from horde.train.tblog import iteration_scalars

    logged = iteration_scalars(stats=stats, losses={}, split={}, steps=1, iter_s=1.0, learning_rate=0.0, noise_std=0.0)
    assert logged["Termination/base_below"] == 1.0  # TensorBoard's tag


def test_a_time_out_term_truncates_and_is_counted():
    env = make("quadruped", num_envs=8, seed=0, config=_with("far_enough"))
    env.pop_episode_stats()
    r = env.step(torch.zeros(8, 12))
    assert r.truncated.all() and not r.terminated.any()
    assert env.pop_episode_stats()["termination/far_enough"] == 1.0


def test_default_terms_report_each_cause_of_the_episodes_they_ended():
    """Random actions for 100 steps: episodes end by tilt or trunk contact; each cause's share is in [0, 1] and the
    failure causes cover every failed episode (a failure has at least one cause; unstable physics aside)."""
    env = make("quadruped", num_envs=32, seed=0)
    env.pop_episode_stats()
    g = torch.Generator().manual_seed(0)
    for _ in range(100):
        env.step(torch.rand(32, 12, generator=g) * 6 - 3)
    s = env.pop_episode_stats()
    assert s["episodes"] > 0 and s["termination_rate"] > 0
    assert all(0.0 <= s[f"termination/{n}"] <= 1.0 for n in ("body_contact", "tilt"))
    assert s["termination/body_contact"] + s["termination/tilt"] >= s["termination_rate"] - 1e-9


def test_unknown_termination_lists_the_valid_ones():
    cfg = dataclasses.replace(get_task("quadruped").config, terminations=["tilt", "fell_over"])
    with pytest.raises(UnknownTermError, match=r"^unknown velocity termination term fell_over; valid terms: "
                                               r"body_contact, tilt"):
        make("quadruped", num_envs=2, config=cfg)
    from horde.train.config import ConfigError, check_terms

    with pytest.raises(ConfigError, match=r"^task.terminations: unknown velocity termination term fell_over; "):
        check_terms(cfg, "quadruped")  # what horde train prints, in one line, before building anything


def test_the_twin_fails_on_the_same_terms():
    """The sim-to-sim twin resolves the bundle's termination list: a new failure term needs no edit there."""
    import mujoco
    import numpy as np

    from horde.deploy.sim2sim import Joints
    from horde.envs.robots import resolve_robot

    quad = resolve_robot("quad12")
    spec = {"action": {"names": list(quad.joints), "default_joint_pos": None, "offset": list(quad.default_joint_pos),
                       "scale": [0.5] * 12, "clip": [-1.0, 1.0]},
            "pd_gains": {"kp": [25.0] * 12, "kd": [0.5] * 12}, "effort_limits": [45.0] * 12}
    for extra, fails in (((), False), (("base_below",), True), (("far_enough",), False)):
        cfg = dataclasses.asdict(_with(*extra))
        model = VelocityTwin.load_model(cfg)
        data = mujoco.MjData(model)
        joints = Joints(model, spec)
        twin = VelocityTwin(model, cfg, 0.02)
        twin.reset(model, data, joints, np.random.default_rng(0))
        mujoco.mj_forward(model, data)
        _, failed = twin.terms(model, data, joints, np.zeros(12), np.zeros(12), np.zeros(12))
        assert failed == fails, extra


def test_the_lift_family_has_termination_terms_too():
    """The lift's (and push's) episode fails when the cube leaves the table: a term, counted per cause; a user's
    term joins it with one config line."""
    from horde.envs.lift_terms import LIFT_TERMINATIONS, Manip

    @LIFT_TERMINATIONS.term(name="cube_below_2m", replace=True)
    def cube_below_2m(x: Manip, i: int) -> bool:  # always true: the cube rests at 0.125 m
        return wp.transform_get_translation(x.body_q[i, x.cube_body])[2] < 2.0

    for task in ("lift", "push"):
        cfg = dataclasses.replace(get_task(task).config, terminations=["cube_off_table", "cube_below_2m"])
        env = make(task, num_envs=4, seed=0, config=cfg)
        env.pop_episode_stats()
        r = env.step(torch.zeros(4, env.num_actions))
        assert r.terminated.all()
        s = env.pop_episode_stats()
        assert s["termination/cube_below_2m"] == 1.0 and s["termination/cube_off_table"] == 0.0
    assert make("lift", num_envs=1).termination_names == ("cube_off_table",)


def test_each_termination_list_is_fused_once_under_its_own_stable_name():
    """``TerminationSet.fused`` is the one place a step kernel gets its termination check from: the same list gives
    the same functions (one compile), another list other functions under another name (two tasks in one process
    never resolve each other's check); the name is a digest of the terms' names, not of object ids (Warp's
    kernel cache holds across processes)."""
    a = VELOCITY_TERMINATIONS.fused(["body_contact", "tilt"])
    assert VELOCITY_TERMINATIONS.fused(["body_contact", "tilt"]) is a
    b = VELOCITY_TERMINATIONS.fused(["body_contact", "tilt", "far_enough"])
    c = VELOCITY_TERMINATIONS.fused(["body_contact", "tilt", "base_below"])
    keys = {f.key for pair in (a, b, c) for f in pair}
    assert len(keys) == 6
    assert all(k.startswith(("termination_check_", "termination_count_")) for k in keys)
    tag = a[0].key.removeprefix("termination_check_")
    assert len(tag) == 12 and a[1].key == f"termination_count_{tag}"
