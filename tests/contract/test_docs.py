"""The documentation holds together: every relative link resolves, and every ``horde ...`` command it shows parses.

Links: README.md, CHANGELOG.md, benchmarks/README.md and docs/*.md; a link to another Markdown file's ``#anchor``
must name one of its headings (GitHub's slugs). Commands: every line of a fenced code block in README.md and
docs/*.md that runs ``horde`` (or ``python -m horde`` / ``torchrun ... -m horde``) goes through the CLI's
own entry point, ``horde.cli.main``, with nothing heavy behind it: a ``horde train`` (or ``demo``) command
composes its overrides against the config schema (``horde.train.config.compose``), every other command stops right
after the CLI has checked its ``key=value`` arguments. So a command with an unknown subcommand, key, task or choice
fails here, in one line naming the file and line. The whole module takes a few seconds (mostly importing horde).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
LINKED = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "README.md", *DOCS]
COMMANDED = [ROOT / "README.md", *DOCS]

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.MULTILINE)
HTML_SRC = re.compile(r"""<(?:img|a)\s[^>]*(?:src|href)=["']([^"']+)["']""")
PLACEHOLDER = re.compile(r"<[^<>]*>")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _prose(text: str) -> str:
    """The text outside fenced code blocks and inline code spans (line count kept, so line numbers hold)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else INLINE_CODE.sub("", line))
    return "\n".join(out)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link in a heading: its text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(md: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _prose(md.read_text()).split("\n"):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = _slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def _links(md: Path) -> list[tuple[int, str]]:
    prose = _prose(md.read_text())
    found = []
    for pattern in (LINK, REFERENCE, HTML_SRC):
        for m in pattern.finditer(prose):
            found.append((prose.count("\n", 0, m.start()) + 1, m.group(1)))
    return sorted(found)


def _is_external(target: str) -> bool:
    return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target)) or target.startswith("//")


def link_problems(md: Path) -> list[str]:
    """Every relative link of ``md`` that does not resolve, as ``file:line: target (why)``."""
    problems = []
    for line, target in _links(md):
        if _is_external(target):
            continue
        path_part, _, anchor = target.partition("#")
        path_part = path_part.split("?", 1)[0]
        dest = (md.parent / path_part).resolve() if path_part else md
        where = f"{_rel(md)}:{line}: {target}"
        if not dest.exists():
            problems.append(f"{where} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            problems.append(f"{where} (no heading with anchor '#{anchor}' in {_rel(dest)})")
    return problems


@dataclass(frozen=True)
class Shown:
    """A command shown in a doc: where, and its argv after ``horde``."""

    where: str
    argv: tuple[str, ...]


def _blocks(md: Path):
    """(line number, text) of every line inside a fenced code block, continuation lines joined."""
    fenced, pending, start = False, "", 0
    for k, line in enumerate(md.read_text().split("\n"), 1):
        if FENCE.match(line):
            fenced, pending = not fenced, ""
            continue
        if not fenced:
            continue
        if not pending:
            start = k
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield start, pending + line
        pending = ""


def _horde_argv(line: str) -> list[str] | None:
    """The argv after ``horde`` of a shell line that runs the CLI, else None."""
    text = line.strip()
    if text.startswith("$ "):
        text = text[2:]
    try:
        words = shlex.split(text, comments=True)
    except ValueError:
        return None
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", words[0]):  # VAR=value horde ...
        words = words[1:]
    if not words:
        return None
    if Path(words[0]).name == "horde":
        if len(words) > 1 and words[1].endswith(":"):  # printed output ("horde play: error: ..."), not a command
            return None
        return words[1:]
    if "-m" in words:  # python -m horde ..., torchrun ... -m horde ...
        k = words.index("-m")
        if k + 1 < len(words) and words[k + 1] in ("horde", "horde.cli"):
            return words[k + 2:]
    return None


def shown_commands(md: Path) -> list[Shown]:
    out = []
    for line, text in _blocks(md):
        argv = _horde_argv(text)
        if argv is not None:
            out.append(Shown(f"{_rel(md)}:{line}", tuple(argv)))
    return out


def _normalize(argv: tuple[str, ...]) -> list[str]:
    """A doc's usage form as a command line: ``[key=value]`` (optional) is the argument, ``a|b`` its first choice."""
    out = []
    for word in argv:
        if word.startswith("[") and word.endswith("]") and "=" in word and not word.startswith("[["):
            word = word[1:-1]
        key, sep, value = word.partition("=")
        if sep and "|" in value and not value.startswith(("[", "'", '"')):
            word = f"{key}={value.split('|', 1)[0]}"
        out.append(word)
    return out


class _Parsed(Exception):
    """Raised where a command has checked its arguments and would start its real work."""


def check_command(argv: list[str], monkeypatch, tmp_path: Path) -> str | None:
    """Run ``argv`` through ``horde.cli.main`` with every command stopped once its arguments are checked;
    returns the CLI's one-line error, or None when it parses. Commands other than train, demo and tasks check their
    ``key=value`` arguments with ``cli._kv`` before any work: it is wrapped to stop right after that check."""
    from horde import cli
    from horde.train import config as config_mod

    def compose_only(args: list[str]) -> dict:
        config_mod.compose(_composable(list(args), tmp_path))
        return {}

    def demo_only(args: list[str]) -> dict:
        config_mod.compose(["device=cpu", *_composable(list(args), tmp_path)])
        return {}

    def tasks_only(args: list[str]) -> dict:
        if args:
            raise cli.UsageError(f"tasks takes no arguments, got {' '.join(args)}")
        return {}

    real_kv = cli._kv

    def kv_then_stop(args, allowed, command):
        real_kv(args, allowed, command)
        raise _Parsed(command)

    def launch_only(args: list[str]) -> Path:  # a sweep through a Hydra launcher: its name and every combination
        from horde.train import sweep

        for combination in config_mod.expand_sweep(sweep.plan(list(args))):
            config_mod.compose(_composable(combination, tmp_path))
        return tmp_path

    monkeypatch.setattr("horde.train.sweep.launch", launch_only)
    monkeypatch.setattr(cli, "_kv", kv_then_stop)
    monkeypatch.setattr(cli, "COMMANDS", {**cli.COMMANDS, "train": compose_only, "demo": demo_only,
                                          "tasks": tasks_only})
    monkeypatch.chdir(tmp_path)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = cli.main(list(argv))
    except _Parsed:
        return None
    return None if rc == 0 else (err.getvalue().strip() or f"exit code {rc}")


def _composable(args: list[str], tmp_path: Path) -> list[str]:
    """What ``compose`` can check of a shown ``horde train`` command without running anything: a GPU device stands
    in as the CPU (the schema's device check needs the machine), a run directory placeholder as a string, a file an
    override names as an empty file under ``tmp_path``; ``resume=`` and modules named in ``imports=`` that are not
    importable here are checked as far as the schema allows (see :func:`_check_outside`)."""
    from horde.train.config import ConfigError

    words = []
    for word in args:
        key, sep, value = word.partition("=")
        if not sep:
            words.append(word)
            continue
        if key in ("task", "algo", "lib") and PLACEHOLDER.search(value):
            raise ConfigError(f"{word}: a shown command names a real {key}, not a placeholder")
        value = PLACEHOLDER.sub("x", value)
        if key == "device":
            if not re.fullmatch(r"cpu|cuda(:\d+)?", value):
                raise ConfigError(f"device={value}: expected cpu, cuda or cuda:N")
            value = "cpu"
        if re.search(r"\.(onnx|npz|pt|yaml|json)$", value) and not Path(value).is_absolute():
            (tmp_path / value).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / value).touch()
        words.append(f"{key}={value}")
    keys = [w.partition("=")[0].lstrip("+~") for w in words]
    if "resume" in keys or _unimportable(words):
        _check_outside(words)
        return ["task=cartpole"]  # the rest composes trivially; the checks above were the point
    return words


def _unimportable(words: list[str]) -> list[str]:
    for word in words:
        key, _, value = word.partition("=")
        if key == "imports":
            names = [n.strip() for n in value.strip("[]").split(",") if n.strip()]
            return [n for n in names if not _importable(n)]
    return []


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a dotted name whose parent package is missing
        return False


def _check_outside(words: list[str]) -> None:
    """A command whose full composition needs a run directory (``resume=``) or a user module (``imports=``) that is
    not here: ``resume`` takes only the keys a resumed run may change; otherwise every key must exist in the
    schema of the task and learner the command picks (a value an unimported module would register is not checked)."""
    from omegaconf import DictConfig

    from horde.train.config import RESUMABLE_OVERRIDES, TERM_PARAMS, ConfigError, compose

    keys = [w.partition("=")[0] for w in words]
    if "resume" in keys:
        bad = [k for k in keys if k not in RESUMABLE_OVERRIDES]
        if bad:
            raise ConfigError(f"resume takes only {', '.join(RESUMABLE_OVERRIDES)}; got {', '.join(bad)}")
        return
    groups = [w for w in words if w.partition("=")[0] in ("task", "algo")]
    _, _, tree = compose(groups)
    for word in words:
        key = word.partition("=")[0]
        if key in ("task", "algo", "imports", "robot", "teacher"):
            continue
        adding = key.startswith("+")
        parts = key.lstrip("+~").split(".")
        if len(parts) >= 3 and parts[0] == "task" and parts[1] in TERM_PARAMS:
            # a term's parameter (compose adds it with ++): the field must exist; a user module's term and its
            # parameters are checked once the module is imported
            parts, adding = parts[:2], False
        node = tree
        for depth, part in enumerate(parts[:-1] if adding else parts):
            if not isinstance(node, DictConfig) or part not in node:
                raise ConfigError(f"unknown key '{key.lstrip('+~')}' ({part!r} is not in "
                                  f"{'.'.join(parts[:depth]) or 'the top level'})")
            node = node[part]


SHOWN = [c for md in COMMANDED for c in shown_commands(md)]


@pytest.mark.parametrize("md", LINKED, ids=_rel)
def test_relative_links_resolve(md):
    assert md.is_file(), f"{_rel(md)} is missing"
    problems = link_problems(md)
    assert not problems, "\n".join(problems)


def test_every_doc_shows_commands_that_the_check_sees():
    """The extraction works: the README's quickstart and the CLI page are found (a regex that matched nothing would
    make the command test pass vacuously)."""
    where = {c.where.split(":")[0] for c in SHOWN}
    assert {"README.md", "docs/cli_and_config.md"} <= where, where
    assert len(SHOWN) >= 30, len(SHOWN)


def test_shown_commands_parse(monkeypatch, tmp_path):
    """Every ``horde`` command shown in README.md and docs/*.md parses (one test: the CLI imports once)."""
    failures = []
    seen: dict[tuple[str, ...], str] = {}
    for shown in SHOWN:
        argv = tuple(_normalize(shown.argv))
        if argv in seen:
            continue
        with monkeypatch.context() as mp:
            error = check_command(list(argv), mp, tmp_path)
        seen[argv] = error or ""
        if error:
            failures.append(f"{shown.where}: horde {' '.join(shown.argv)}\n    {error}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("argv, expected", [
    (("fly", "run=x"), "unknown command 'fly'"),
    (("train", "task=cartpole", "algo.learnin_rate=1e-3"), "unknown key 'algo.learnin_rate'"),
    (("train", "task=cartpol"), "unknown task 'cartpol'"),
    (("train", "task=ant", "task.sim.solver=foo"), "not a valid choice"),
    (("play", "run=runs/x", "episods=3"), "unknown key 'episods'"),
    (("train", "resume=runs/x", "num_envs=3"), "resume takes only"),
    (("train", "imports=[not_a_module_here]", "task=quadruped", "task.robott=go2"), "unknown key 'task.robott'"),
    (("train", "task=<task>"), "not a placeholder"),
])
def test_the_check_catches_a_wrong_command(argv, expected, monkeypatch, tmp_path):
    error = check_command(_normalize(argv), monkeypatch, tmp_path)
    assert error and expected in error, error


def test_the_check_catches_a_broken_link(tmp_path):
    md = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# A heading\n")
    md.write_text("[ok](there.md#a-heading) [gone](missing.png) [bad anchor](there.md#nowhere) "
                  "[web](https://example.com/x) `[code](not/checked.md)`\n\n```\n[fenced](not/checked.md)\n```\n")
    problems = link_problems(md)
    assert len(problems) == 2 and "missing.png" in problems[0] and "#nowhere" in problems[1], problems
