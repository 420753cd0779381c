"""Choice and range fields of every task and learner config fail at compose time, in one line naming the valid
values; a new free-form string field has to be declared as such here."""

import dataclasses
import typing

import pytest

from horde.envs import TASKS, make, task_names
from horde.sim.fields import FieldError, bounded, check_fields, choice, choice_fields
from horde.train.config import ALGORITHMS, ConfigError, TrainConfig, compose

FREE_FORM = {"device", "run_root", "resume", "algo.teacher", "task.depth_camera.body", "wandb_project", "profile"}
"""String fields whose value is not a choice (device is checked by resolve_device, paths are paths, a W&B project
is the user's name, the profile is what compose wrote)."""


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
