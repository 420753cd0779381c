"""One world protocol (:mod:`horde.sim.world`): both physics backends satisfy it, and envs/, deploy/ and train/ read
nothing of a world outside it (a private attribute or an undocumented one would tie a task to one backend)."""

import ast
import copy
import dataclasses
from pathlib import Path

import pytest

from horde.envs import get_task, make
from horde.sim.world import WORLD_MEMBERS, World

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("task,solver", [("quadruped", "mujoco-c"), ("quadruped", "mujoco"), ("lift", None),
                                         ("reach", None), ("ant", None)])
def test_every_backend_is_a_world(task, solver):
    cfg = copy.deepcopy(get_task(task).config)
    if solver is not None:
        cfg.sim = dataclasses.replace(cfg.sim, solver=solver)
    env = make(task, num_envs=2, config=cfg)
    assert isinstance(env.world, World), type(env.world).__name__


def _world_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, attribute) of every attribute read on a world: ``<x>.world.<attr>``, ``world.<attr>``, and ``<n>.<attr>``
    where ``n`` was assigned ``<x>.world`` in the same function (``w = self.world``, ``w, n = self.world, ...``)."""
    def is_world(node) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "world") or (
            isinstance(node, ast.Name) and node.id == "world")

    out = []
    for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        aliases = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    pairs = (zip(target.elts, node.value.elts) if isinstance(target, ast.Tuple)
                             and isinstance(node.value, ast.Tuple) else [(target, node.value)])
                    for t, v in pairs:
                        if isinstance(t, ast.Name) and is_world(v):
                            aliases.add(t.id)
        for node in ast.walk(fn):
            if isinstance(node, ast.Attribute) and (is_world(node.value) or (
                    isinstance(node.value, ast.Name) and node.value.id in aliases)):
                out.append((node.lineno, node.attr))
    return out


def test_tasks_deploy_and_train_read_only_the_protocol():
    bad = []
    for folder in ("envs", "deploy", "train"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line, attr in _world_reads(ast.parse(path.read_text())):
                if attr not in WORLD_MEMBERS:
                    bad.append(f"{path.relative_to(ROOT)}:{line} .{attr}")
    assert not bad, "world attributes outside horde.sim.world.World: " + ", ".join(sorted(set(bad)))


def test_the_reader_sees_aliases():
    tree = ast.parse("def f(self):\n    w, n = self.world, 3\n    w._secret\n    self.world.arrays\n")
    assert sorted(a for _, a in _world_reads(tree)) == ["_secret", "arrays"]
