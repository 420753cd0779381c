"""Choice and range fields of every task and learner config fail at compose time, in one line naming the valid
values; a new free-form string field, or a numeric field without a range, has to be declared as such here."""

import dataclasses
import types
import typing

import pytest

from horde.envs import TASKS, make, task_names
from horde.sim.fields import FieldError, _metadata, bounded, check_fields, choice, choice_fields
from horde.train.config import ALGORITHMS, ConfigError, TrainConfig, compose, config_dir

FREE_FORM = {"device", "run_root", "resume", "algo.teacher", "task.depth_camera.body", "wandb_project", "profile"}
"""String fields whose value is not a choice (device is checked by resolve_device, paths are paths, a W&B project
is the user's name, the profile is what compose wrote)."""

UNBOUNDED = {
    "task.reward_scales": "a weight per reward term: penalties are negative, bonuses positive",
    "task.events": "interval [s] per event term: checked > 0 when the env is built (envs/velocity.py, envs/reach.py)",
    "task.joint_gains": "[stiffness, damping] per joint pattern: checked >= 0 when the env is built (envs/velocity.py)",
    "task.default_joint_pos": "joint angles [rad] of the initial pose: either sign, within the model's joint limits",
    "task.init_pole_angle": "an angle [rad] of either sign (0 upright, pi hanging)",
    "task.command_vx": "a [lo, hi] velocity range [m/s]: backwards is negative",
    "task.command_vy": "a [lo, hi] velocity range [m/s]: right is negative",
    "task.command_yaw_rate": "a [lo, hi] yaw-rate range [rad/s]: clockwise is negative",
    "task.vx_curriculum_start": "a [lo, hi] velocity range [m/s] of either sign (clipped into command_vx)",
    "task.randomization.added_base_mass": "a [lo, hi] mass [kg] added to the base: negative removes mass (the base "
                                          "keeps at least a tenth of its own)",
    "task.cube_x": "a [lo, hi] position range [m] in the world frame",
    "task.cube_y": "a [lo, hi] position range [m] in the world frame: either sign",
    "task.target_low": "a corner [m] of the target box in the base frame: either sign",
    "task.target_high": "a corner [m] of the target box in the base frame: either sign",
    "task.height_scan.offset": "a height [m] subtracted from each scan value: either sign",
    "task.depth_camera.position": "a position [m] in the body's frame: either sign",
    "task.depth_camera.pitch": "an angle [rad]: positive tilts the camera down, negative up",
    "algo.policy.log_std_min": "a log standard deviation: either sign; checked below log_std_max at build (train/sac.py)",
    "algo.policy.log_std_max": "a log standard deviation: either sign; checked above log_std_min at build (train/sac.py)",
    "algo.v_min": "the lowest atom of the critics' support, in the critic's units: either sign; checked below v_max at "
                  "build (train/sac.py)",
    "algo.v_max": "the highest atom of the critics' support: either sign; checked above v_min at build (train/sac.py)",
    "algo.target_entropy": "an entropy [nats]: a squashed Gaussian's is negative as often as not (null: -actions)",
}
"""Numeric fields with no range, by dotted path, each with its reason: every other int, float, numeric list or
numeric dict field of a task's, a learner's or the run's config declares one with ``bounded``, ``bounded_list`` or
``choice`` (horde.sim.fields), so that a value outside it fails at compose time in one line."""


def _cases():
    for task in task_names():
        for path, choices in choice_fields(TASKS[task].config, "task"):
            yield task, "ppo", path, choices
    for algo, a in ALGORITHMS.items():
        for path, choices in choice_fields(a.config(), "algo"):
            yield "pendulum", algo, path, choices
    for path, choices in choice_fields(TrainConfig(task=None, algo=None)):
        yield "cartpole", "ppo", path, choices


CASES = list(_cases())


def test_every_choice_field_is_found():
    paths = {(task, path) for task, _, path, _ in CASES}
    assert ("ant", "task.sim.solver") in paths and ("quadruped-rough", "task.terrain.kind") in paths
    assert ("quadruped", "task.robot") in paths and ("reach", "task.action_mode") in paths
    assert {p for _, algo, p, _ in CASES if algo == "ppo"} >= {"algo.schedule", "algo.policy.rnn_type",
                                                              "algo.policy.activation", "algo.policy.action_squash"}
    assert ("pendulum", "algo.lr_schedule") in paths and ("cartpole", "dist_backend") in paths


@pytest.mark.parametrize("task,algo,path,choices", CASES, ids=[f"{t}-{a}-{p}" for t, a, p, _ in CASES])
def test_a_bad_choice_fails_in_one_line_listing_the_valid_ones(task, algo, path, choices, tmp_path):
    shown = ", ".join("null" if c is None else str(c) for c in choices)
    with pytest.raises(ConfigError, match=f"^{path}=not_a_choice: not a valid choice; valid choices: {shown}$"):
        compose([f"task={task}", f"algo={algo}", f"{path}=not_a_choice", f"run_root={tmp_path}"])


GROUPS = sorted({(task, algo) for task, algo, _, _ in CASES})


@pytest.mark.parametrize("task,algo", GROUPS, ids=[f"{t}-{a}" for t, a in GROUPS])
def test_every_listed_value_composes(task, algo, tmp_path):
    """Every value a one-line error lists composes. The fields of one task and learner take their i-th values
    together, one compose per i (each compose costs ~0.4 s, Hydra deep-copying its store: with one compose per
    value this file took 75 s in one process on the 2-core EPYC, 50 s with these rounds)."""
    def check(picked):
        cfg, _, _ = compose([f"task={task}", f"algo={algo}", *picked, f"run_root={tmp_path}"])
        for item in picked:
            path, value = item.split("=", 1)
            node = cfg
            for part in path.split("."):
                node = getattr(node, part)
            assert str(node) == value, (item, node)

    fields = [(path, [c for c in choices if c is not None]) for t, a, path, choices in CASES if (t, a) == (task, algo)]
    for i in range(max(len(values) for _, values in fields)):
        picked = [f"{path}={values[i]}" for path, values in fields if i < len(values)]
        try:
            check(picked)
        except ConfigError:  # two values that do not go together (logger=wandb with lib=rsl-rl): each on its own
            for item in picked:
                check([item])


def _string_fields(obj, prefix=""):
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        path = f"{prefix}.{f.name}" if prefix else f.name
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            yield from _string_fields(value, path)
        elif hints.get(f.name) in (str, str | None) and "file" not in f.metadata:  # file_path(): checked as a path
            yield path


def test_every_string_field_is_a_choice_or_declared_free_form():
    declared = {p for _, _, p, _ in CASES}
    objs = [(TASKS[t].config, "task") for t in task_names()] + [(a.config(), "algo") for a in ALGORITHMS.values()]
    objs.append((TrainConfig(task=None, algo=None), ""))
    for obj, prefix in objs:
        for path in _string_fields(obj, prefix):
            assert path in declared or path in FREE_FORM, f"{path} is a str: declare its choices with choice()"


def test_bounds_and_devices_fail_at_compose_time(tmp_path):
    for override, message in [("algo.learning_rate=-1", "algo.learning_rate=-1.0: must be > 0"),
                              ("algo.gamma=1.5", "algo.gamma=1.5: must be > 0 and <= 1"),
                              ("num_envs=0", "num_envs=0: must be >= 1"),
                              ("task.decimation=0", "task.decimation=0: must be >= 1"),
                              ("algo.policy.init_noise_std=nan", "algo.policy.init_noise_std=nan: must be > 0"),
                              ("device=tpu", "device=tpu: unknown device 'tpu'")]:
        with pytest.raises(ConfigError, match=f"^{message}"):
            compose(["task=cartpole", override, f"run_root={tmp_path}"])


def test_the_python_api_checks_the_same_fields():
    cfg = dataclasses.replace(TASKS["ant"].config, action_mode="pdd")
    with pytest.raises(FieldError, match="task.action_mode=pdd: not a valid choice; valid choices: pd, torque"):
        make("ant", num_envs=2, config=cfg)


def test_subclass_defaults_keep_the_base_declaration():
    @dataclasses.dataclass(kw_only=True)
    class Base:
        mode: str = choice(("a", "b"))
        rate: float = bounded(1.0, gt=0, le=2)

    @dataclasses.dataclass(kw_only=True)
    class Child(Base):
        mode: str = "b"
        rate: float = 2.0

    check_fields(Child())
    with pytest.raises(FieldError, match=r"^mode=c: not a valid choice; valid choices: a, b$"):
        check_fields(Child(mode="c"))
    with pytest.raises(FieldError, match=r"^rate=2.5: must be > 0 and <= 2$"):
        check_fields(Child(rate=2.5))
    assert list(choice_fields(Child())) == [("mode", ("a", "b"))]


def _numeric(hint) -> bool:
    """An int or float (optional), a list or tuple of them, or a dict of them (or of lists of them); not a bool."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    origin = typing.get_origin(hint)
    if hint in (int, float):
        return True
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _numeric(args[0])
    if origin in (list, tuple):
        return bool(args) and all(a is Ellipsis or _numeric(a) for a in args)
    if origin is dict:
        return len(args) == 2 and _numeric(args[1])
    return False


def _numeric_fields(obj, prefix=""):
    """``(dotted path, has a range)`` for every numeric field of dataclass ``obj``, recursively."""
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        path = f"{prefix}.{f.name}" if prefix else f.name
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            yield from _numeric_fields(value, path)
        elif _numeric(hints.get(f.name)):
            meta = _metadata(type(obj), f.name)
            yield path, bool(meta.get("bounds") or meta.get("item_bounds") or meta.get("choices"))


def _all_numeric_fields():
    objs = [(TASKS[t].config, "task", t) for t in task_names()] + [(a.config(), "algo", n)
                                                                    for n, a in ALGORITHMS.items()]
    objs.append((TrainConfig(task=None, algo=None), "", "run"))
    return [(owner, path, ranged) for obj, prefix, owner in objs for path, ranged in _numeric_fields(obj, prefix)]


def test_every_numeric_field_has_a_range_or_a_reason():
    """Issue 72: 80 of 143 numeric fields had no range, so ``task.standing_fraction=5`` trained silently."""
    fields = _all_numeric_fields()
    paths = {p for _, p, _ in fields}
    assert {"num_envs", "task.standing_fraction", "task.randomization.push_interval", "task.sim.max_contacts",
            "task.terrain.num_levels", "algo.adam_betas", "algo.policy.actor_hidden_dims",
            "task.joint_stiffness", "task.reward_scales"} <= paths, "the walk finds ints, floats, lists and dicts"
    missing = sorted({f"{p} ({owner})" for owner, p, ranged in fields if not ranged and p not in UNBOUNDED})
    assert not missing, ("numeric fields with neither a range (bounded/bounded_list/choice in horde.sim.fields) nor "
                         f"a reason in UNBOUNDED: {', '.join(missing)}")
    unranged = {p for _, p, ranged in fields if not ranged}
    assert not set(UNBOUNDED) - unranged, f"UNBOUNDED names fields that have a range now: {set(UNBOUNDED) - unranged}"
    assert all(reason.strip() for reason in UNBOUNDED.values())


@pytest.mark.parametrize("tuned", sorted(p.stem for p in (config_dir() / "tuned").glob("*.yaml")))
def test_every_tuned_config_is_within_the_ranges(tuned, tmp_path):
    """The values a tuned file sets, with its CPU profile and without (what a GPU run gets), are inside the ranges."""
    task, algo = tuned.rsplit("_", 1)
    for extra in ([], ["cpu={}"]):
        compose([f"task={task}", f"algo={algo}", f"run_root={tmp_path}", *extra])
