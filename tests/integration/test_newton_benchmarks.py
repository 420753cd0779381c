"""The Newton benchmark scripts run in quick mode and print their documented JSON."""

import json
import sys
from pathlib import Path

import pytest
from benchhelp import run_benchmark

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _json_lines(script, *args):
    proc = run_benchmark(script, "--quick", "--json", *args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]


def test_newton_throughput_quick_json():
    """The humanoid only: the ant's rows come from the same code through ``sim_throughput.py --quick``, which
    test_benchmarks.py's run_all test checks (with the ant's MuJoCo model unchanged)."""
    rows = _json_lines("newton_throughput.py", "--tasks", "humanoid")
    assert {r["task"] for r in rows} == {"humanoid"}
    impls = {r["impl"] for r in rows}
    assert impls == {"horde-graph", "newton-raw", "ratio:horde/newton", "mujoco-c", "ratio:horde/mujoco-c"}
    mj = next(r for r in rows if r["impl"] == "mujoco-c")
    assert mj["integrator"] and mj["solver"] and mj["cone"] and mj["threads"] >= 1 and mj["sim_dt"] > 0
    horde = next(r for r in rows if r["impl"] == "horde-graph")
    assert horde["solver"] == "mujoco" and horde["integrator"] and horde["mj_solver"]
    assert any("head_touch" in c for c in mj["model_changes"]), "stated, not silent"
    for r in rows:
        assert r["num_envs"] == 64
        assert r["env_steps_per_s"] > 0 if "env_steps_per_s" in r else r["ratio"] > 0


def test_learn_reach_quick_json(tmp_path):
    (row,) = _json_lines("learn_reach.py", "--out", str(tmp_path))
    assert row["task"] == "reach" and row["iterations"] == 4
    assert 0.0 <= row["final_error_mean_m"] < 2.0


@pytest.mark.parametrize("task", ["ant", "humanoid"])
def test_raw_newton_reference_simulates_the_same_motion_as_horde(task):
    """The overhead ratio compares like with like: same model, solver, torques and initial pose on both sides."""
    sys.path.insert(0, str(BENCH))
    import newton_throughput as nt
    import warp as wp

    from horde.envs import make

    n = 8
    env = make(task, num_envs=n, seed=0, config=nt.bench_config(task))
    actions = nt.bench_actions(n, env.num_actions)
    raw = nt.raw_newton_stepper(task, n, "cpu")
    for _ in range(30):
        env.step(actions)
        raw()
    raw_pose = wp.to_torch(raw.state.body_q).view(n, -1, 7)
    assert (raw_pose - env.world.body_pose).abs().max() < 1e-5
    assert not env.dones.any()
