"""Rung 3: an exported reach policy runs in plain MuJoCo with observations rebuilt from policy.json alone."""

import json

import pytest
from clihelp import run_cli

from horde.deploy.sim2sim import Sim2SimError, run_sim2sim


@pytest.fixture(scope="module")
def reach_bundle(tmp_path_factory):
    root = tmp_path_factory.mktemp("reach")
    proc = run_cli("train", "task=reach", "num_envs=16", "max_iterations=2", f"run_root={root}", cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run,) = (root / "reach").iterdir()
    proc = run_cli("export", f"run={run}", cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (bundle,) = [p for p in (run / "exported").iterdir() if p.is_dir()]
    return bundle


def test_reach_policy_runs_in_mujoco(reach_bundle):
    r = run_sim2sim(reach_bundle, episodes=4)
    assert r["task"] == "reach" and r["episodes"] == 4
    assert r["mujoco_mean_return"] < 0 and r["horde_mean_return"] < 0  # distance penalties dominate untrained
    assert 0.3 < r["return_ratio"] < 3.0, r  # same robot, same controller, same reward: same order of magnitude
    assert 0.0 < r["mujoco_final_error_mean_m"] < 1.5
    assert json.loads((reach_bundle / "sim2sim_report.json").read_text())["episodes"] == 4


def test_cli_and_refusal(reach_bundle, tiny_run):
    proc = run_cli("sim2sim", f"run={reach_bundle}", "episodes=2", cwd=reach_bundle)
    assert proc.returncode == 0 and "MuJoCo" in proc.stdout and "ratio" in proc.stdout, proc.stderr
    from horde.deploy import export_run

    cartpole = export_run(tiny_run, name="for_sim2sim")
    with pytest.raises(Sim2SimError, match="tasks with one: reach"):
        run_sim2sim(cartpole.bundle_dir)
