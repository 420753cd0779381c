"""The trained policies that ship in ``assets/pretrained/`` (:mod:`horde.train.pretrained`): train one by its
scoreboard command and ship it, or score every shipped one on the current code against its target.

    python benchmarks/pretrained.py ship NAME [--minutes M] [--seed S] [--run RUN_DIR]
    python benchmarks/pretrained.py check [NAME ...] [--json]

``ship`` trains ``NAME`` (one of ``POLICIES``: a task, or ``quadruped-go2``) through its learning-scoreboard entry
(``benchmarks/learning_suite.py``: the same script, recipe and overrides; ``--minutes`` defaults to the entry's
budget), keeps the run, and writes ``assets/pretrained/NAME/``: the final checkpoint with the actor only, its
``config.yaml``, a verified bundle (``horde export``'s ladder) under ``exported/``, and ``provenance.json`` (commit,
command, seed, date, machine, the scoreboard figures it reached, its target and trivial baseline, and the figures
of :func:`score` on the shipped files). ``--run`` ships an existing run instead of training one (its command must
then be given with ``--command``). A policy must be at most 2 MB on disk (``MAX_BYTES``) and all of them 15 MB.

``check`` scores every shipped policy with :func:`score`, the scoreboard's own measure on fresh envs (seed
``SCORE_SEED``), and exits 1 when one no longer meets its target (``tests/learning/test_pretrained.py`` runs it).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from learning import Target, ZeroPolicy, capture_runs, portable  # noqa: E402

MAX_BYTES = 2 * 1024 * 1024
"""The most one shipped policy (its folder) may take on disk."""
MAX_TOTAL_BYTES = 15 * 1024 * 1024
"""The most all shipped policies together may take."""
SCORE_SEED = 20_000
"""Seed of the fresh envs :func:`score` runs (not one that training evaluated on)."""


@dataclass(frozen=True)
class Policy:
    """One shipped policy: its scoreboard task and the overrides that make it another robot's."""

    task: str
    overrides: tuple[str, ...] = ()


POLICIES = {"cartpole": Policy("cartpole"), "ant": Policy("ant"), "quadruped": Policy("quadruped"),
            "quadruped-go2": Policy("quadruped", ("task.robot=go2",)), "lift": Policy("lift"),
            "push": Policy("push"), "g1-velocity": Policy("g1-velocity")}
"""What ships (issue 69): the name of its folder -> how it trains."""


def entry_of(task: str):
    from learning_suite import ENTRIES

    return next(e for e in ENTRIES if e.task == task)


def score(name: str, policy, task_cfg, *, seed: int = SCORE_SEED) -> dict:
    """The scoreboard's measure of ``policy`` on fresh envs: the entry's learn script's evaluation at its
    documented settings."""
    import torch

    task = POLICIES[name].task if name in POLICIES else name
    torch.set_num_threads(1)
    if task in ("cartpole", "pendulum", "cartpole-swingup"):
        from horde.train.evaluate import evaluate

        out = evaluate(policy, task, task_cfg, episodes=100, seed=seed).summary()
        return {k: out[k] for k in ("mean_return", "std_return", "mean_episode_length")}
    if task == "ant":
        from learn_ant import evaluate_speed
        return evaluate_speed(policy, task_cfg, seed, num_envs=64, steps=250)
    if task == "quadruped":
        from learn_quadruped import tracking_error
        return tracking_error(policy, task_cfg, seed, num_envs=64, steps=250, settle=50)
    if task == "lift":
        from learn_lift import lift_success
        return lift_success(policy, task_cfg, seed, num_envs=64, height=0.05, hold=25)
    if task == "push":
        from learn_push import push_success
        return push_success(policy, task_cfg, seed, num_envs=64)
    if task == "g1-velocity":
        from learn_g1 import FLOOR_PUSHES, walk_figures, with_pushes
        out = walk_figures(policy, with_pushes(task_cfg, FLOOR_PUSHES), seed, num_envs=64, steps=1000, settle=50)
        return {k: v for k, v in out.items() if k != "fall_times_s"}
    raise ValueError(f"no scoreboard measure for {task}")


def targets_of(name: str) -> tuple[Target, ...]:
    """The scoreboard entry's target (every part must hold)."""
    import importlib

    entry = entry_of(POLICIES[name].task)
    module = importlib.import_module(entry.script) if entry.script else None
    return tuple(entry.target(module, {}))


def met(targets: tuple[Target, ...], figures: dict) -> bool:
    return all(t.met(figures.get(t.key)) for t in targets)


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=HERE.parent, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def commit() -> str:
    """The commit, with ``+changes`` when the code that trains (sim, envs, train, policies, configs) has uncommitted
    changes."""
    dirty = _git("status", "--porcelain", "--", "sim", "envs", "train", "policies", "configs")
    return _git("rev-parse", "--short", "HEAD") + ("+changes" if dirty else "")


def machine() -> str:
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    return f"{cpu or platform.machine()}, {os.cpu_count()} cores"


def train(name: str, *, minutes: float | None, seed: int, run_root: Path) -> tuple[dict, list[str]]:
    """Train ``name`` by its scoreboard entry into ``run_root``; (the learn script's JSON summary, its command)."""
    import importlib

    import learning
    from learning_suite import command_of, learn_classic, script_argv

    p = POLICIES[name]
    entry = entry_of(p.task)
    minutes = minutes or entry.minutes
    argv = [*script_argv(entry, device="cpu", minutes=minutes, seed=seed, quick=False), *p.overrides]
    main = ((lambda a: learn_classic(entry.task, a)) if entry.script is None
            else importlib.import_module(entry.script).main)
    learning.KEEP_ROOT = str(run_root)
    buf = io.StringIO()
    try:
        with tempfile.TemporaryDirectory() as tmp, capture_runs(), redirect_stdout(buf):
            rc = main([*argv, "--json", "--out", tmp])
    finally:
        learning.KEEP_ROOT = None
    lines = [ln for ln in buf.getvalue().splitlines() if ln.startswith("{")]
    if rc != 0 or not lines:
        raise SystemExit(f"{name}: the learn script exited {rc}")
    command = command_of(entry, device="cpu", minutes=minutes, seed=seed, quick=False)
    if p.overrides:
        command += " " + " ".join(p.overrides)
    return json.loads(lines[-1]), command


def _relative_paths(stage: Path, report) -> None:
    """No path of this machine in the shipped files: the bundle names its checkpoint relative to itself (``horde
    verify`` resolves it there), the config has no run root."""
    bundle = Path(report.bundle_dir)
    spec_file = bundle / "policy.json"
    spec = json.loads(spec_file.read_text())
    spec["checkpoint"]["file"] = os.path.relpath(spec["checkpoint"]["file"], bundle)
    spec_file.write_text(json.dumps(spec, indent=2) + "\n")
    config = stage / "config.yaml"
    config.write_text("".join(ln for ln in config.read_text().splitlines(keepends=True)
                              if not ln.startswith("run_root:")))


def ship(name: str, run: Path, *, command: str, summary: dict | None, seed: int | None) -> Path:
    """Write ``assets/pretrained/<name>/`` from ``run``'s latest checkpoint."""
    from horde.deploy import export_run
    from horde.train.checkpoint import load_checkpoint, load_policy, resolve_checkpoint, save_checkpoint
    from horde.train.pretrained import PRETRAINED_DIR, strip_checkpoint

    src = resolve_checkpoint(run)
    ckpt = strip_checkpoint(load_checkpoint(src))
    ckpt["config"] = {**ckpt["config"], "run_root": "runs"}  # not this machine's temporary folder
    dest = PRETRAINED_DIR / name
    stage = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=PRETRAINED_DIR.parent))
    try:
        save_checkpoint(stage / src.name, ckpt)
        shutil.copy(src.parent / "config.yaml", stage / "config.yaml")
        print(f"{name}: exporting and verifying the bundle", file=sys.stderr, flush=True)
        report = export_run(stage, out_dir=stage / "exported" / f"{name}_fp32", precision="fp32")
        _relative_paths(stage, report)
        policy, _, cfg, _ = load_policy(stage)
        print(f"{name}: scoring the shipped policy on fresh envs (seed {SCORE_SEED})", file=sys.stderr, flush=True)
        figures = score(name, policy, cfg.task)
        targets = targets_of(name)
        zero = score(name, ZeroPolicy(int(ckpt["num_actions"])), cfg.task)
        prov = {"name": name, "task": ckpt["task"], "robot": getattr(cfg.task, "robot", None),
                "iteration": int(ckpt["iteration"]), "commit": commit(),
                "command": command, "seed": seed, "date": time.strftime("%Y-%m-%d"), "machine": machine(),
                "scoreboard": portable({k: v for k, v in (summary or {}).items()
                                         if k not in ("curve", "overrides", "png")}),
                "target": [t.as_dict() for t in targets], "score_seed": SCORE_SEED, "figures": figures,
                "meets_target": met(targets, figures), "trivial_baseline": {"zero_action": zero},
                "bundle": f"exported/{name}_fp32", "ladder": report.ladder if hasattr(report, "ladder") else None}
        (stage / "provenance.json").write_text(json.dumps(prov, indent=2, default=str) + "\n")
        if not prov["meets_target"]:
            raise SystemExit(f"{name}: not shipped: the policy misses its target on fresh envs ("
                             + ", ".join(f"{t.key} {figures.get(t.key)}, {t.op} {t.threshold:g} asked"
                                         for t in targets) + "); train longer (--minutes) or on a quieter machine")
        size = sum(f.stat().st_size for f in stage.rglob("*") if f.is_file())
        if size > MAX_BYTES:
            raise SystemExit(f"{name}: {size / 1e6:.2f} MB, over the {MAX_BYTES / 2**20:.0f} MB a shipped policy "
                             f"may take")
        if dest.exists():
            shutil.rmtree(dest)
        stage.rename(dest)
    finally:
        if stage.exists():
            shutil.rmtree(stage)
    total = sum(f.stat().st_size for f in PRETRAINED_DIR.rglob("*") if f.is_file())
    verdict = "meets" if prov["meets_target"] else "DOES NOT MEET"
    print(f"{name}: shipped {dest} ({size / 1e6:.2f} MB; all shipped {total / 1e6:.2f} MB): {verdict} its target "
          f"({', '.join(f'{t.key} {t.op} {t.threshold:g}' for t in targets)}): "
          f"{', '.join(f'{t.key} {figures.get(t.key)}' for t in targets)}")
    if total > MAX_TOTAL_BYTES:
        print(f"warning: the shipped policies take {total / 1e6:.1f} MB, over {MAX_TOTAL_BYTES / 2**20:.0f} MB",
              file=sys.stderr)
    return dest


def check(names: list[str]) -> list[dict]:
    """Score each shipped policy (all by default) on the current code; one row each."""
    from horde.train.checkpoint import load_policy
    from horde.train.pretrained import available, resolve

    rows = []
    for name in names or list(available()):
        policy, _, cfg, _ = load_policy(resolve(name))
        figures = score(name, policy, cfg.task)
        targets = targets_of(name)
        rows.append({"name": name, "figures": figures, "target": [t.as_dict() for t in targets],
                     "meets_target": met(targets, figures)})
        print(f"{name}: {'meets' if rows[-1]['meets_target'] else 'MISSES'} its target: "
              + ", ".join(f"{t.key} {figures.get(t.key)} ({t.op} {t.threshold:g})" for t in targets), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("ship", help="train by the scoreboard command (or take --run) and ship")
    s.add_argument("name", choices=sorted(POLICIES))
    s.add_argument("--minutes", type=float, default=None, help="training budget (default the entry's)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--run", default=None, help="ship this run directory instead of training")
    s.add_argument("--command", default=None, help="with --run: the command that trained it")
    s.add_argument("--summary", default=None, help="with --run: a JSON file of the learn script's summary")
    c = sub.add_parser("check", help="score every shipped policy against its target")
    c.add_argument("names", nargs="*")
    c.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.cmd == "check":
        rows = check(args.names)
        if args.json:
            print(json.dumps(rows))
        return 0 if all(r["meets_target"] for r in rows) else 1
    if args.run:
        if not args.command:
            ap.error("--run needs --command (what trained it)")
        summary = json.loads(Path(args.summary).read_text()) if args.summary else None
        ship(args.name, Path(args.run), command=args.command, summary=summary, seed=args.seed)
        return 0
    with tempfile.TemporaryDirectory(prefix="horde_ship_") as tmp:
        summary, command = train(args.name, minutes=args.minutes, seed=args.seed, run_root=Path(tmp))
        runs = sorted(Path(tmp).glob("*/*/model_*.pt"))
        if not runs:
            raise SystemExit(f"{args.name}: the run left no checkpoint in {tmp}")
        ship(args.name, runs[-1].parent, command=command, summary=summary, seed=args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
