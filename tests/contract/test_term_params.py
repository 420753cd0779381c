"""Terms with parameters (issue 71, item 2): one term function serves many configured terms, each with its own
parameter values compiled into the kernel; a config sets them in ``task.reward_params`` (``termination_params``,
``event_params``), the command line with ``task.reward_params.<term>.<param>=v``, and a mistake fails in one line."""

import dataclasses
import math
from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch
import warp as wp
import yaml

from horde.envs import get_task, make
from horde.envs.lift_terms import LIFT_TERMS, Manip
from horde.envs.reach import JOINTS, REACH_TERMS, Arm, ReachTwin
from horde.envs.terms import TermSet, UnknownTermError, term_values_torch
from horde.envs.velocity import VELOCITY_TERMS, Legged, VelocityTwin
from horde.envs.velocity_terms import VELOCITY_OBSERVATIONS
from horde.train.config import ConfigError, compose, from_container

REPO = Path(__file__).resolve().parents[2]


# --- what a user writes: one function with a parameter --------------------------------------------------------------
@REACH_TERMS.term(replace=True)
def ee_above(x: Arm, i: int, height: float = 0.0) -> float:
    """The end effector's height above ``height`` [m]."""
    return wp.transform_point(x.body_q[i, x.ee_body], x.ee_offset)[2] - height


@VELOCITY_TERMS.term(replace=True)
def base_height_from(x: Legged, i: int, target: float = 0.3) -> float:
    """(base height - target)^2 [m^2]."""
    p = wp.transform_get_translation(x.body_q[i, x.root])
    return (p[2] - target) * (p[2] - target)



def base_height_over(x: Legged, i: int, k: int, floor: float = 0.0) -> float:
    """An observation term: the base's height above ``floor`` [m] (registered by its test, so that other tests'
    lists of the registered observation terms stay theirs)."""
    return wp.transform_get_translation(x.body_q[i, x.root])[2] - floor
# ---------------------------------------------------------------------------------------------------------------------


def _reaching_values(names, params, distance: float) -> list[float]:
    """The lift's reward terms ``names`` (with ``params``) of an end effector ``distance`` m from the cube."""
    n = 1
    body_q = torch.zeros(n, 2, 7)
    body_q[:, :, 6] = 1.0  # identity rotations
    body_q[:, 1, 0] = distance  # the cube, along x from the end effector at the origin
    values = term_values_torch(Manip, LIFT_TERMS.resolve(names, params), {
        "body_q": (body_q, wp.transform), "unstable": (torch.zeros(n, dtype=torch.bool), wp.bool)},
        {"ee_body": 0, "cube_body": 1, "ee_offset": wp.vec3(0.0, 0.0, 0.0)})
    return [float(v[0]) for v in values]


def test_a_parameter_changes_the_value_as_hand_computed():
    d = 0.03
    names = ["reaching", "reaching_fine", "reaching_wide"]
    got = _reaching_values(names, {"reaching": {"std": 0.05}, "reaching_wide": {"func": "reaching", "std": 0.3}}, d)
    assert got == pytest.approx([1 - math.tanh(d / 0.05), 1 - math.tanh(d / 0.02), 1 - math.tanh(d / 0.3)],
                                rel=1e-6)
    default, = _reaching_values(["reaching"], None, d)
    assert default == pytest.approx(1 - math.tanh(d / 0.1), rel=1e-6)


def test_the_old_pairs_are_one_function_each_with_their_old_constants():
    terms = {t.name: t for t in LIFT_TERMS.configure(["reaching", "reaching_fine", "target_tracking", "target_fine",
                                                      "push_tracking", "push_fine", "grasp"])}
    assert {n: (LIFT_TERMS.function(t.base).key, t.params) for n, t in terms.items()} == {
        "reaching": ("reaching", {"std": 0.1}), "reaching_fine": ("reaching", {"std": 0.02}),
        "target_tracking": ("target_tracking", {"std": 0.3}), "target_fine": ("target_tracking", {"std": 0.05}),
        "push_tracking": ("push_tracking", {"std": 0.1}), "push_fine": ("push_tracking", {"std": 0.02}),
        "grasp": ("grasp", {})}
    # one compiled function per (function, values): the same values give the same function, a term without
    # parameters is its own function
    again = LIFT_TERMS.configure(["reaching_x"], {"reaching_x": {"func": "reaching", "std": 0.02}})[0]
    assert again.func is terms["reaching_fine"].func and terms["grasp"].func is LIFT_TERMS.resolve(["grasp"])[0]


def test_old_reward_scales_configs_and_overrides_still_load():
    """A run saved before parameters (its config.yaml names reaching_fine and target_fine in reward_scales, and has
    no reward_params) loads and configures the same terms; ``task.reward_scales.<x>=`` still overrides a weight."""
    saved = yaml.safe_load((REPO / "assets" / "pretrained" / "lift" / "config.yaml").read_text())
    assert "reward_params" not in saved["task"] and "reaching_fine" in saved["task"]["reward_scales"]
    cfg = from_container(saved, "lift")
    fine = LIFT_TERMS.configure(list(cfg.task.reward_scales), cfg.task.reward_params)[1]
    assert (fine.name, LIFT_TERMS.function(fine.base).key, fine.params) == ("reaching_fine", "reaching", {"std": 0.02})
    cfg, _, _ = compose(["task=lift", "task.reward_scales.reaching_fine=2.0", "task.reward_params.reaching.std=0.05"])
    assert cfg.task.reward_scales["reaching_fine"] == 2.0 and cfg.task.reward_params == {"reaching": {"std": 0.05}}


@pytest.mark.parametrize("override,message", [
    ("task.reward_params.reaching.sdt=0.05",
     r"task.reward_params.reaching.sdt: unknown parameter of lift term 'reaching'; valid parameters: std "
     r"\(default 0.1\)"),
    ("task.reward_params.reaching.std=wide", r"task.reward_params.reaching.std='wide': takes a float"),
    ("task.reward_params.grasp.std=0.1", r"task.reward_params.grasp.std: unknown parameter of lift term 'grasp'; "
                                         r"it takes none"),
    ("task.reward_params.reachng.std=0.1", r"task.reward_params.reachng: not a configured lift term; configured: "
                                           r"reaching, reaching_fine, "),
    ("task.reward_params.reaching_fine.std=0", r"task.reward_params.reaching_fine.std=0: must be > 0$"),
    ("task.termination_params.cube_off_table.height=0.1",
     r"task.termination_params.cube_off_table.height: unknown parameter of lift termination term "),
])
def test_a_bad_parameter_fails_in_one_line_listing_the_valid_ones(override, message):
    with pytest.raises(ConfigError, match=f"^{message}") as err:
        compose(["task=lift", override])
    assert "\n" not in str(err.value)


def test_a_term_parameter_declares_its_type_and_range():
    with pytest.raises(TypeError, match=r"^test term 'f': parameter std must be annotated float, int or bool"):
        TermSet("test", Arm).term(lambda x, i, std=0.1: 0.0, name="f")
    with pytest.raises(ValueError, match=r"^test term 'g': unknown parameter 'sd'; valid parameters: height "
                                         r"\(default 0.0\)$"):
        TermSet("test", Arm).term(ee_above.func, name="g", params={"sd": 0.1})
    with pytest.raises(ValueError, match=r"^test term 'h' parameter height=-1.0: must be >= 0$"):
        TermSet("test", Arm).term(ee_above.func, name="h", params={"height": -1.0}, bounds={"height": {"ge": 0}})


def test_the_command_line_reaches_the_kernel_and_the_twin():
    """``task.reward_params.<term>.<param>=v`` from the command line is the value the env's fused step kernel and
    the MuJoCo twin (sim-to-sim) compute with."""
    cfg, _, _ = compose(["task=reach", "+task.reward_scales.ee_above=1.0", "task.reward_params.ee_above.height=0.25"])
    env = make("reach", num_envs=2, seed=0, config=cfg.task)
    env.step(torch.zeros(2, 7))
    ee_z = env.observation_sources()["ee_pos"][:, 2]
    np.testing.assert_allclose(env.terms[:, -1].numpy(), (ee_z - 0.25).numpy(), rtol=1e-5, atol=1e-6)

    spec = dataclasses.asdict(cfg.task)
    model = ReachTwin.load_model(spec)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    twin = ReachTwin(model, spec, 0.02)

    class Joints:
        def qd(self, data):
            return data.qvel[[model.joint(j).dofadr[0] for j in JOINTS]]

    terms, _ = twin.terms(model, data, Joints(), np.zeros(7), np.zeros(7), np.zeros(7))
    assert terms["ee_above"] == pytest.approx(data.site_xpos[model.site("ee").id][2] - 0.25, abs=1e-5)


def test_the_velocity_twin_runs_a_parameterized_term():
    cfg = dataclasses.asdict(get_task("quadruped").config)
    cfg["reward_scales"] = {**cfg["reward_scales"], "base_height_from": -1.0, "base_height_low": -1.0}
    cfg["reward_params"] = {"base_height_from": {"target": 0.25},
                            "base_height_low": {"func": "base_height_from", "target": 0.1}}
    model = VelocityTwin.load_model(cfg)
    data = mujoco.MjData(model)
    from horde.deploy.sim2sim import Joints
    from horde.envs.robots import resolve_robot

    quad = resolve_robot("quad12")
    spec = {"action": {"names": list(quad.joints), "default_joint_pos": None, "offset": list(quad.default_joint_pos),
                       "scale": [0.5] * 12, "clip": [-1.0, 1.0]},
            "pd_gains": {"kp": [25.0] * 12, "kd": [0.5] * 12}, "effort_limits": [45.0] * 12}
    joints = Joints(model, spec)
    twin = VelocityTwin(model, cfg, 0.02)
    twin.reset(model, data, joints, np.random.default_rng(0))
    mujoco.mj_forward(model, data)
    terms, _ = twin.terms(model, data, joints, np.zeros(12), np.zeros(12), np.zeros(12))
    z = data.qpos[2]
    assert terms["base_height_from"] == pytest.approx((z - 0.25) ** 2, rel=1e-4)
    assert terms["base_height_low"] == pytest.approx((z - 0.1) ** 2, rel=1e-4)


def test_an_unknown_term_in_the_params_of_an_env_is_one_line():
    cfg = dataclasses.replace(get_task("reach").config, reward_params={"precison": {"std": 0.1}})
    with pytest.raises(UnknownTermError, match=r"^task.reward_params.precison: not a configured reach term; "
                                               r"configured: distance, precision, "):
        make("reach", num_envs=2, config=cfg)


def test_a_termination_parameter_sets_its_threshold_in_the_step():
    """``base_height_below`` with its height above the standing quadruped's base ends every episode at once;
    at its default (0.15 m) none ends within a few steps."""
    cfg = get_task("quadruped").config
    for height, ended in ((1.0, 1.0), (0.15, None)):
        env = make("quadruped", num_envs=4, seed=0, config=dataclasses.replace(
            cfg, terminations=[*cfg.terminations, "base_height_below"],
            termination_params={"base_height_below": {"height": height}}))
        for _ in range(3):
            env.step(torch.zeros(4, 12))
        stats = env.pop_episode_stats()
        assert stats.get("termination/base_height_below") == ended


def test_an_event_made_of_another_keeps_its_mode_and_takes_its_values():
    from horde.envs.velocity_terms import VELOCITY_EVENTS

    params = {"kick_hard": {"func": "kick", "speed": 2.0}, "kick": {"speed": 0.0}}
    terms = VELOCITY_EVENTS.configure(["kick", "kick_hard"], params)
    assert [t.params for t in terms] == [{"speed": 0.0}, {"speed": 2.0}]
    assert VELOCITY_EVENTS.modes(["kick", "kick_hard"], params) == ("interval", "interval")
    with pytest.raises(UnknownTermError, match=r"^task.reset_events takes reset events; not kick_hard \(interval\)"):
        VELOCITY_EVENTS.resolve_mode(["kick_hard"], "reset", "task.reset_events", params)


def test_a_reach_run_saved_with_precision_std_loads_it_as_the_terms_parameter():
    """Reach's ``precision_std`` (a config field threaded through six sites until 2026-12-06) is the ``precision``
    term's ``std`` now; a run or bundle saved with it reads as ``reward_params.precision.std``."""
    from horde.train.config import to_container

    _, _, raw = compose(["task=reach"])
    saved = to_container(raw)
    del saved["task"]["reward_params"]
    saved["task"]["precision_std"] = 0.08
    cfg = from_container(saved, "reach")
    assert cfg.task.reward_params == {"precision": {"std": 0.08}}
    assert REACH_TERMS.configure(["precision"], cfg.task.reward_params)[0].params == {"std": 0.08}
    with pytest.raises(ConfigError, match=r"^unknown key 'task.precision_std'"):
        compose(["task=reach", "task.precision_std=0.1"])


def test_an_observation_parameter_reaches_the_column_and_the_twin():
    VELOCITY_OBSERVATIONS.term(base_height_over, unit="m", mirror="even", replace=True)
    cfg = dataclasses.replace(
        get_task("quadruped").config, extra_observations=["base_height_over", "base_height_over_low"],
        observation_params={"base_height_over": {"floor": 0.2},
                            "base_height_over_low": {"func": "base_height_over", "floor": -0.1}})
    env = make("quadruped", num_envs=2, seed=0, config=cfg)
    assert env.obs_names[-2:] == ("base_height_over", "base_height_over_low")
    env.step(torch.zeros(2, 12))
    z = env.world.root_pose[:, 2]
    np.testing.assert_allclose(env.obs[:, -2].numpy(), (z - 0.2).numpy(), atol=1e-6)
    np.testing.assert_allclose(env.obs[:, -1].numpy(), (z + 0.1).numpy(), atol=1e-6)
    twin_extras = VelocityTwin._extras(dataclasses.asdict(cfg))
    assert [(e.name, e.func) for e in twin_extras] == [(e.name, e.func) for e in env.extras]
    with pytest.raises(ConfigError, match=r"^task.observation_params.base_height_over.flor: unknown parameter of "
                                          r"velocity observation term 'base_height_over'; valid parameters: floor"):
        compose(["task=quadruped", "task.extra_observations=[base_height_over]",
                 "task.observation_params.base_height_over.flor=0.1"])


def test_the_fast_check_points_a_misplaced_parameter_to_its_field_and_classic_tasks_refuse_them():
    from horde.train.help import precheck_train

    assert precheck_train(["task=lift", "task.rewards.reaching.std=0.05"]) == (
        "unknown key 'task.rewards.reaching.std' for task lift (a term's parameter: task.reward_params.reaching.std); "
        "`horde train --help task=lift` lists its fields")
    assert precheck_train(["task=lift", "task.reward_params.reaching.std=0.05"]) is None
    with pytest.raises(ConfigError, match=r"^task.reward_params: task pendulum has no reward terms with parameters$"):
        compose(["task=pendulum", "task.reward_params.angle.std=0.1"])
    for task in ("pendulum", "cartpole"):
        cfg = dataclasses.replace(get_task(task).config, reward_params={"angle": {"std": 0.1}})
        with pytest.raises(UnknownTermError, match=r"^task.reward_params.angle"):
            make(task, num_envs=2, config=cfg)
