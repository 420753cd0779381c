"""Imports between horde's top-level folders (sim, envs, policies, train, deploy) form no cycle, and deploy/robot/
stands alone. Read from the source with ``ast`` (nothing is imported); an import inside a function counts as much
as one at module level, since a lazy import is still a dependency.

The direction the code needs: sim <- envs, sim <- policies, {sim, envs, policies} <- train <- deploy <- the root's
command line (cli.py, cli_keys.py, demo.py, __main__.py). No two folders reach each other (deploy <-> train did
until the CLI and the demo moved to the root and a run's policy came to load through horde.train.checkpoint)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("sim", "envs", "policies", "train", "deploy")

FRONT_DOOR = ("cli", "cli_keys", "demo", "__main__")
"""The package root's modules: the ``horde`` command and the demo, above every folder; no folder imports them."""


def _module_parts(path: Path, root: Path) -> list[str]:
    """``sim/diff.py`` -> ["sim", "diff"]; a package's ``__init__.py`` is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported_modules(path: Path, root: Path) -> list[tuple[int, list[str]]]:
    """(line, module path below ``horde``) of every import of a horde module in ``path``, at any depth; relative
    imports resolved against the file's package. ``from horde import envs`` names ``envs``."""
    parts = _module_parts(path, root)
    package = parts if path.name == "__init__.py" else parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name.split(".")[1:]) for a in node.names if a.name.split(".")[0] == "horde"]
        elif isinstance(node, ast.ImportFrom):
            names = node.module.split(".") if node.module else []
            if node.level:
                if node.level - 1 > len(package):  # above horde's root: not a horde module
                    continue
                module = package[:len(package) - node.level + 1] + names
            elif names[:1] == ["horde"]:
                module = names[1:]
            else:
                continue
            if module:
                found.append((node.lineno, module))
            else:  # `from horde import envs, train`
                found += [(node.lineno, [a.name]) for a in node.names]
    return found


def folder_imports(root: Path = ROOT) -> dict[tuple[str, str], list[str]]:
    """(importing folder, imported folder) -> ["file:line", ...] over every module of every folder."""
    edges = defaultdict(list)
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            for line, module in imported_modules(path, root):
                if module and module[0] in FOLDERS and module[0] != folder:
                    edges[folder, module[0]].append(f"{path.relative_to(root)}:{line}")
    return dict(edges)


def cyclic_pairs(edges) -> set[frozenset[str]]:
    """Pairs of folders that reach each other through imports (directly or through other folders)."""
    reach = {f: {b for (a, b) in edges if a == f} for f in FOLDERS}
    for k in FOLDERS:  # Warshall's transitive closure
        for i in FOLDERS:
            if k in reach[i]:
                reach[i] |= reach[k]
    return {frozenset({a, b}) for a in FOLDERS for b in FOLDERS if a < b and b in reach[a] and a in reach[b]}


def _describe(pair: frozenset[str], edges) -> str:
    a, b = sorted(pair)
    return "; ".join(f"{x} -> {y}: {', '.join(edges.get((x, y), ['(through another folder)'])[:6])}"
                     for x, y in ((a, b), (b, a)))


def test_the_reader_sees_lazy_relative_and_from_horde_imports(tmp_path):
    (tmp_path / "sim").mkdir()
    (tmp_path / "sim" / "__init__.py").write_text("")
    (tmp_path / "sim" / "a.py").write_text(
        "import numpy\nfrom . import b\n\n\ndef f():\n    from horde.envs.x import y\n")  # line 6: lazy
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "x.py").write_text("from ..sim.a import f\n")
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "t.py").write_text("from horde import deploy\nimport horde.policies.p\n")
    edges = folder_imports(tmp_path)
    assert edges == {("sim", "envs"): ["sim/a.py:6"], ("envs", "sim"): ["envs/x.py:1"],
                     ("train", "deploy"): ["train/t.py:1"], ("train", "policies"): ["train/t.py:2"]}
    assert cyclic_pairs(edges) == {frozenset({"sim", "envs"})}
    assert cyclic_pairs({("sim", "envs"): [], ("envs", "train"): [], ("train", "sim"): []}) == {
        frozenset(p) for p in (("sim", "envs"), ("envs", "train"), ("train", "sim"))}


def test_every_folder_is_read():
    """The direction every layer above sim uses is found (a reader that finds nothing would pass the tests below)."""
    edges = folder_imports()
    needed = {("envs", "sim"), ("policies", "sim"), ("train", "envs"), ("train", "policies"), ("deploy", "train")}
    assert needed <= set(edges), sorted(edges)


def test_no_new_import_cycle_between_folders():
    edges = folder_imports()
    found = cyclic_pairs(edges)
    assert not found, "import cycles between folders: " + " | ".join(_describe(p, edges) for p in sorted(found, key=sorted))


def test_no_folder_imports_the_command_line():
    """The CLI and the demo drive train/ and deploy/ from above; an import of them from a folder would close a
    cycle through the root that the folder pairs above do not see."""
    found = [f"{path.relative_to(ROOT)}:{line} horde.{'.'.join(module)}"
             for folder in FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))
             for line, module in imported_modules(path, ROOT) if module and module[0] in FRONT_DOOR]
    assert not found, found


def test_deploy_robot_imports_nothing_of_horde_or_torch_outside_its_folder():
    """The robot-side scripts are copied into a bundle and run with ``python -I`` on a robot without horde."""
    paths = sorted((ROOT / "deploy" / "robot").glob("*.py"))
    assert {"run_policy.py", "build_engine.py", "deploy_unitree.py"} <= {p.name for p in paths}
    outside = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [] if node.level == 1 else ["." * node.level + (node.module or "")]
            else:
                continue
            outside += [f"{path.name}:{node.lineno} {n}" for n in names
                        if n.split(".")[0] in ("horde", "torch") or n.startswith("..")]
    assert not outside, outside
