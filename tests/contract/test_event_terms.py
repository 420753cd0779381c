"""Event terms from a user's side: an interval event added from outside horde is one definition and one config line
(``task.events: {name: seconds}``), runs on the steps its interval names and nowhere else, draws from the env's own
random stream, and sits beside the push that randomization adds (itself an event term now; the trajectory digests
in benchmarks/README.md did not change when the push moved out of the kernel). An episode event
(``task.episode_events``) draws the next episode's parameters with the command, after the randomization's own
``action_delay`` and ``actuation`` (event terms too; the digests did not change when they moved out of the
kernels). A reset event (``task.reset_events``) runs in every reset, explicit or inside the step, after the world
wrote the joint state; a startup event (``task.startup_events``) is a host function over the world's model, run once while the env is built,
after the randomization's own ``link_mass`` and ``friction``."""

import dataclasses

import numpy as np
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


@VELOCITY_EVENTS.term(mode="reset")
def toss_up(x: Legged, i: int, s: wp.uint32) -> wp.uint32:
    """Every episode starts with the base moving up at 1 to 2 m/s."""
    x.joint_qd[i, 2] = wp.randf(s, 1.0, 2.0)
    return s


@VELOCITY_EVENTS.term(mode="episode")
def soft_knees(x: Legged, i: int, s: wp.uint32) -> wp.uint32:
    """Each episode, the first joint's PD stiffness is its nominal one times U(0.5, 0.6)."""
    x.kp[i, 0] = x.kp0[0] * wp.randf(s, 0.5, 0.6)
    return s


@VELOCITY_EVENTS.term(mode="startup")
def payload(world, randomization, rng: np.random.Generator) -> dict:
    """A payload of 1 to 2 kg on every env's base (body 0), drawn once."""
    mass = world.model.body_mass.numpy()
    extra = rng.uniform(1.0, 2.0, size=world.num_envs)
    mass[0::world.bodies] += extra
    world.model.body_mass.assign(mass)
    return {"payload": extra}
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
    with pytest.raises(ValueError, match="event mode 'sometimes'; valid modes: startup, episode, reset, interval"):
        VELOCITY_EVENTS.term(lambda x, i, s: s, name="never", mode="sometimes")


def test_a_user_reset_event_runs_in_every_reset_after_the_joint_state():
    """Explicit resets and the time-outs inside the step both start the base moving up (each env its own draw);
    episodes of 3 steps end inside the step."""
    cfg = dataclasses.replace(get_task("quadruped").config, reset_events=["toss_up"], episode_length=3)
    tossed = make("quadruped", num_envs=4, seed=0, config=cfg)
    plain = make("quadruped", num_envs=4, seed=0, config=dataclasses.replace(cfg, reset_events=[]))
    assert tossed.reset_event_names == ("toss_up",) and plain.reset_event_names == ()
    for env in (tossed, plain):
        env.reset()
    vz = tossed.world.joint_qd[:, 2].clone()
    assert ((vz >= 1.0) & (vz <= 2.0)).all() and vz.unique().numel() == 4, vz
    assert plain.world.joint_qd[:, 2].abs().max() < 1e-6
    for step in range(3):
        tossed.step(torch.zeros(4, 12))
    assert bool(tossed.episode_length.eq(0).all()), "the 3-step episodes did not end in the step"
    again = tossed.world.joint_qd[:, 2]
    assert ((again >= 1.0) & (again <= 2.0)).all() and not torch.equal(again, vz), again


def test_episode_events_draw_each_episodes_gains_and_delay_in_every_reset():
    """The randomization's own episode events (the G1: gains, motor strength and action delay randomized) and a
    user's, after them: explicit resets and the ends of episodes inside the step draw new parameters per env."""
    cfg = get_task("g1-velocity").config
    r = cfg.randomization
    env = make("g1-velocity", num_envs=8, seed=0,
               config=dataclasses.replace(cfg, episode_events=["soft_knees"], episode_length=3))
    assert env.episode_event_names == ("action_delay", "actuation", "soft_knees")
    env.reset()
    w = env.world

    def scales():
        return (w.stiffness / wp.to_torch(w.arrays.nominal_stiffness)).clone(), (
            w.damping / wp.to_torch(w.arrays.nominal_damping)).clone()

    kp, kd = scales()
    assert ((kp[:, 1:] >= r.stiffness_scale[0] - 1e-6) & (kp[:, 1:] <= r.stiffness_scale[1] + 1e-6)).all()
    assert ((kd >= r.damping_scale[0] - 1e-6) & (kd <= r.damping_scale[1] + 1e-6)).all()
    assert kp[:, 1:].unique().numel() > 8, "every env and joint draws its own gain"
    assert ((kp[:, 0] >= 0.5 - 1e-6) & (kp[:, 0] <= 0.6 + 1e-6)).all(), "the user's event runs after the actuation's"
    delay = wp.to_torch(env._delay).clone()
    assert ((delay >= 0) & (delay <= r.max_action_delay)).all()
    for _ in range(3):
        env.step(torch.zeros(8, env.num_actions))
    assert bool(env.episode_length.eq(0).all()), "the 3-step episodes did not end in the step"
    again, _ = scales()
    assert not torch.equal(again, kp) and ((again[:, 0] >= 0.5 - 1e-6) & (again[:, 0] <= 0.6 + 1e-6)).all()
    plain = make("quadruped", num_envs=2, seed=0)  # randomization off: nominal gains, no delay
    plain.reset()
    nominal = wp.to_torch(plain.world.arrays.nominal_stiffness)
    assert torch.equal(plain.world.stiffness, nominal.expand_as(plain.world.stiffness))
    assert int(wp.to_torch(plain._delay).abs().max()) == 0


def test_a_user_startup_event_changes_the_model_once_after_the_randomizations():
    base = dataclasses.replace(get_task("quadruped").config, startup_events=["payload"])
    env = make("quadruped", num_envs=3, seed=0, config=base)
    plain = make("quadruped", num_envs=3, seed=0)
    assert env.startup_event_names == ("payload",) and plain.startup_event_names == ()
    extra = env.randomization["payload"]
    nb = env.world.bodies
    added = env.world.model.body_mass.numpy()[0::nb] - plain.world.model.body_mass.numpy()[0::nb]
    np.testing.assert_allclose(added, extra, rtol=1e-5)
    assert ((extra >= 1.0) & (extra <= 2.0)).all()
    g1 = make("g1-velocity", num_envs=2, seed=0, config=dataclasses.replace(get_task("g1-velocity").config,
                                                                           startup_events=["payload"]))
    assert g1.startup_event_names == ("link_mass", "friction", "payload")
    assert {"mass", "friction", "base_mass_delta", "payload"} <= set(g1.randomization)


def test_an_event_in_the_field_of_another_mode_fails_in_one_line():
    from horde.envs.terms import UnknownTermError as Unknown
    from horde.train.config import ConfigError, check_terms

    cfg = dataclasses.replace(get_task("quadruped").config, reset_events=["kick_up"])
    with pytest.raises(Unknown, match=r"^task.reset_events takes reset events; not kick_up \(interval\): interval "
                                      r"events go in task.events$"):
        make("quadruped", num_envs=2, config=cfg)
    with pytest.raises(ConfigError, match=r"^task.reset_events takes reset events; not kick_up \(interval\)"):
        check_terms(cfg, "quadruped")
    with pytest.raises(ConfigError, match=r"^task.events takes interval events; not payload \(startup\): startup "
                                          r"events go in task.startup_events$"):
        check_terms(dataclasses.replace(get_task("quadruped").config, events={"payload": 1.0}), "quadruped")


# --- the locomotion family (ant, humanoid): interval and reset events -----------------------------------------------
def _root_vxy(env) -> torch.Tensor:
    return env.world.joint_qd[:, 0:2].clone()


def test_the_locomotion_family_runs_interval_and_reset_events_and_nothing_without_them():
    """``task.events: {kick: s}`` pushes the ant's root on the steps its interval names (and only when asked: the
    same trajectory as without an event until then); ``task.reset_events=[start_kick]`` starts every humanoid episode
    moving (the world's initial velocity noise is 0.1 m/s at most); a wrong name or mode is one line."""
    from horde.envs.locomotion import LOCOMOTION_EVENTS
    from horde.train.config import ConfigError, compose

    cfg = get_task("ant").config
    plain = make("ant", num_envs=4, seed=0, config=cfg)
    kicked = make("ant", num_envs=4, seed=0, config=dataclasses.replace(cfg, events={"kick": 0.06},
                                                                        event_params={"kick": {"speed": 2.0}}))
    period = round(0.06 / (cfg.sim_dt * cfg.decimation))
    assert period == 3
    zero = torch.zeros(4, plain.num_actions)
    for step in range(1, 2 * period + 1):
        a, b = plain.step(zero).obs, kicked.step(zero).obs
        if step < period:
            torch.testing.assert_close(a, b, rtol=0, atol=0)
        elif step == period:
            assert (a - b).abs().max() > 0.5  # 2 m/s pushes: a jump no drift makes
    hum = get_task("humanoid").config
    env = make("humanoid", num_envs=8, seed=0, config=dataclasses.replace(hum, reset_events=["start_kick"],
                                                                          event_params={"start_kick": {"speed": 3.0}}))
    env.reset()
    assert _root_vxy(env).abs().amax(dim=1).min() > 0.1 and _root_vxy(env).abs().max() > 1.0
    with pytest.raises(UnknownTermError, match=r"^task.reset_events takes reset events; not kick \(interval\)"):
        LOCOMOTION_EVENTS.resolve_mode(["kick"], "reset", "task.reset_events", {})
    for overrides, message in ((["task=ant", "+task.events.kik=1.0"], r"kik"),
                               (["task=humanoid", "task.event_params.kick.sped=1.0", "+task.events.kick=1.0"],
                                r"sped")):
        with pytest.raises(ConfigError, match=message) as info:
            compose(overrides)
        assert "\n" not in str(info.value), str(info.value)


# --- the classic family (pendulum, cart-pole): interval and reset events ---------------------------------------------
@pytest.mark.parametrize("task, params", [("pendulum", {"rate": 3.0}), ("cartpole", {"speed": 3.0}),
                                          ("cartpole-swingup", {"speed": 3.0})])
def test_the_classic_tasks_run_interval_and_reset_events_and_nothing_without_them(task, params):
    """``task.events: {push: s}`` shoves the state on the steps its interval names (the same trajectory as without
    an event until then; the cart-pole leaves its block step for the per-env kernels, whose trajectory is the same);
    ``task.reset_events=[start_push]`` starts every episode, explicit reset or auto-reset inside the step, beyond the
    reset distribution's velocity range; SHAC's differentiable model refuses events in one line."""
    from horde.envs import make_diff_task
    from horde.sim.fields import FieldError

    cfg = get_task(task).config
    plain = make(task, num_envs=8, seed=0, config=cfg)
    pushed = make(task, num_envs=8, seed=0, config=dataclasses.replace(cfg, events={"push": 0.2},
                                                                       event_params={"push": params}))
    period = round(0.2 / (cfg.sim_dt * cfg.decimation))
    assert period >= 3
    zero = torch.zeros(8, plain.num_actions)
    plain.reset(), pushed.reset()
    for step in range(1, period + 1):
        a, b = plain.step(zero).obs, pushed.step(zero).obs
        if step < period:
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert (a - b).abs().max() > 0.5  # 3 m/s (rad/s) shoves: a jump no drift makes
    vel = 1  # the velocity the push changes: the pendulum's rate, the cart's speed
    limit = cfg.init_vel_range
    env = make(task, num_envs=64, seed=0, config=dataclasses.replace(cfg, reset_events=["start_push"],
                                                                     event_params={"start_push": params}))
    env.reset()
    assert env.state[:, vel].abs().max() > 2 * limit
    seen = torch.zeros(64, dtype=torch.bool)
    for _ in range(cfg.episode_length):
        out = env.step(torch.zeros(64, env.num_actions))
        done = out.terminated | out.truncated
        fresh = env.state[done, vel].abs()
        seen[done] |= fresh > 2 * limit
        if seen.sum() >= 8:
            break
    assert seen.sum() >= 8, "auto-resets inside the step do not run the reset events"
    if get_task(task).diff_task is None:
        return
    with pytest.raises(FieldError, match=r"algo=shac\) runs no event terms; drop push") as info:
        make_diff_task(task, config=dataclasses.replace(cfg, events={"push": 1.0}))
    assert "\n" not in str(info.value)
