"""The trained policies that ship in assets/pretrained/ (horde.train.pretrained): each one complete, small, free of
this machine's paths, and reachable with pretrained= from every command that takes a run."""

from __future__ import annotations

import json
import re

import pytest
from clihelp import run_cli

from horde.train.pretrained import PRETRAINED_DIR, PretrainedError, available, resolve

SHIPPED = sorted(available())
MAX_BYTES, MAX_TOTAL_BYTES = 2 * 1024 * 1024, 15 * 1024 * 1024  # issue 69: 2 MB each, 15 MB in all
PROVENANCE = ("name", "task", "iteration", "commit", "command", "seed", "date", "machine", "target", "figures",
              "meets_target", "trivial_baseline", "bundle")


def test_something_ships():
    assert "cartpole" in SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_policy_is_complete_small_and_portable(name):
    folder = PRETRAINED_DIR / name
    prov = json.loads((folder / "provenance.json").read_text())
    assert [k for k in PROVENANCE if k not in prov] == []
    assert prov["name"] == name and prov["meets_target"] is True
    assert len(list(folder.glob("model_*.pt"))) == 1 and (folder / "config.yaml").is_file()
    bundle = folder / prov["bundle"]
    assert (bundle / "policy.onnx").is_file() and (bundle / "policy.json").is_file()
    spec = json.loads((bundle / "policy.json").read_text())
    assert (bundle / spec["checkpoint"]["file"]).resolve() == next(folder.glob("model_*.pt")).resolve()
    assert sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) <= MAX_BYTES
    absolute = re.compile(rb"(/home/|/root/|/tmp/|/work/|[A-Z]:\\\\)")
    leaks = [str(f.relative_to(folder)) for f in folder.rglob("*") if f.is_file() and absolute.search(f.read_bytes())]
    assert leaks == []  # no path of the machine that trained it (the ONNX exporter's stack traces included)


def test_all_shipped_policies_fit_the_budget():
    assert sum(f.stat().st_size for f in PRETRAINED_DIR.rglob("*") if f.is_file()) <= MAX_TOTAL_BYTES


def test_resolve_names_the_ones_there_are():
    assert resolve("true", "cartpole") == PRETRAINED_DIR / "cartpole" == resolve("cartpole")
    with pytest.raises(PretrainedError, match="no pretrained policy ships for task 'reach'; tasks with one: .*cartpole"):
        resolve("true", "reach")
    with pytest.raises(PretrainedError, match=r"unknown pretrained policy 'cartpol' \(did you mean cartpole\?\); shipped policies: .*cartpole"):
        resolve("cartpol")
    with pytest.raises(PretrainedError, match="pretrained=cartpole is a cartpole policy, not ant"):
        resolve("cartpole", "ant")


@pytest.mark.parametrize("args, line", [
    (["play", "pretrained=true"], "pretrained=true needs task=<name>"),
    (["play", "pretrained=true", "task=reach"], "no pretrained policy ships for task 'reach'"),
    (["play", "task=cartpole"], "task= goes with pretrained=true"),
    (["export", "pretrained=true", "task=cartpole", "run=runs/x"], "give run=<run dir> or pretrained=..., not both"),
    (["sim2sim", "pretrained=nope"], "unknown pretrained policy 'nope'"),
])
def test_pretrained_mistakes_are_one_line(args, line, tmp_path):
    r = run_cli(*args, cwd=tmp_path)
    assert r.returncode == 2 and line in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_tasks_marks_the_ones_that_ship(tmp_path):
    r = run_cli("tasks", cwd=tmp_path)
    marked = {ln.split()[0] for ln in r.stdout.splitlines() if ln.endswith("[pretrained]")}
    assert marked == {p["task"] for p in available().values()}


def test_play_and_verify_a_shipped_policy(tmp_path):
    r = run_cli("play", "task=cartpole", "pretrained=true", "episodes=8", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "cartpole model_" in r.stdout and "playing 500/500 steps" in r.stderr
    r = run_cli("verify", "pretrained=cartpole", "episodes=64", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not any(PRETRAINED_DIR.glob("*/exported/*/.*"))  # verify wrote nothing into the package


def test_sim2sim_of_a_shipped_policy_writes_its_report_beside_the_package(tmp_path):
    """``sim2sim pretrained=...`` writes its report under ``runs/pretrained/<name>/sim2sim/<bundle>/``; the shipped
    bundle stays as shipped (the package's folder may not be writable)."""
    before = sorted(p.name for p in PRETRAINED_DIR.rglob("*"))
    r = run_cli("sim2sim", "pretrained=quadruped", "episodes=1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert list((tmp_path / "runs" / "pretrained" / "quadruped" / "sim2sim").glob("*/sim2sim_report.json"))
    assert sorted(p.name for p in PRETRAINED_DIR.rglob("*")) == before
