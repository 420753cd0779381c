"""Event terms from a user's side: an interval event added from outside horde is one definition and one config line
(``task.events: {name: seconds}``), runs on the steps its interval names and nowhere else, draws from the env's own
random stream, and sits beside the push that randomization adds (itself an event term now; the trajectory digests
in benchmarks/README.md did not change when the push moved out of the kernel)."""

import dataclasses

import pytest
import torch
import warp as wp

from horde.envs import get_task, make
from horde.envs.terms import UnknownTermError
from horde.envs.velocity import Legged
from horde.envs.velocity_terms import VELOCITY_EVENTS


# --- what a user writes (the whole addition) -----------------------------------------------------------------------
@VELOCITY_EVENTS.term
def kick_up(x: Legged, i: int, s: wp.uint32) -> wp.uint32:
    """An upward kick of 2 to 3 m/s on the base (a random draw from the env's stream)."""
    x.joint_qd[i, 2] = x.joint_qd[i, 2] + wp.randf(s, 2.0, 3.0)
    return s
# -------------------------------------------------------------------------------------------------------------------


def _base_vz(env) -> torch.Tensor:
    return env.world.root_vel_base[:, 2].clone()


def test_a_user_event_runs_on_its_interval_only():
    """Every 3rd control step (0.06 s at 50 Hz) the base is kicked upwards; on the other steps it is not."""
    cfg = dataclasses.replace(get_task("quadruped").config, events={"kick_up": 0.06})
    kicked = make("quadruped", num_envs=4, seed=0, config=cfg)
    plain = make("quadruped", num_envs=4, seed=0)
    assert kicked.event_names == ("kick_up",) and plain.event_names == ()
    for step in range(1, 7):
        kicked.step(torch.zeros(4, 12))
        plain.step(torch.zeros(4, 12))
        jump = (_base_vz(kicked) - _base_vz(plain)).abs().max().item()
        if step == 3:
            assert jump > 1.0, f"step {step}: the kick did not happen ({jump:.3f} m/s)"
        elif step < 3:
            assert jump < 1e-5, f"step {step}: the kick came early ({jump:.3g} m/s)"


def test_the_push_is_an_event_term_and_user_events_follow_it():
    cfg = get_task("g1-velocity").config  # randomization on: pushes every push_interval seconds
    assert cfg.randomization.enabled and cfg.randomization.push_interval > 0
    env = make("g1-velocity", num_envs=2, seed=0, config=dataclasses.replace(cfg, events={"kick_up": 1.0}))
    assert env.event_names == ("push", "kick_up")
    assert env.event_set.names()[:1] == ["push"]


def test_unknown_events_and_bad_intervals_fail_in_one_line():
    cfg = dataclasses.replace(get_task("quadruped").config, events={"shove": 1.0})
    with pytest.raises(UnknownTermError, match=r"^unknown velocity event term shove; valid terms: push"):
        make("quadruped", num_envs=2, config=cfg)
    from horde.train.config import ConfigError, check_terms

    with pytest.raises(ConfigError, match=r"^task.events: unknown velocity event term shove; "):
        check_terms(cfg, "quadruped")
    from horde.sim.fields import FieldError

    with pytest.raises(FieldError, match=r"task.events: every interval must be > 0 seconds, got kick_up=0"):
        make("quadruped", num_envs=2, config=dataclasses.replace(cfg, events={"kick_up": 0.0}))
    with pytest.raises(ValueError, match="event mode 'startup'"):
        VELOCITY_EVENTS.term(lambda x, i, s: s, name="never", mode="startup")
