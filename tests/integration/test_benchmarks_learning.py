"""The learning benchmarks in quick mode: the learn scripts, the scoreboard (``learning_suite.py``), the trivial
baselines beside each target, and ``learning.py``'s evaluations, curves and seed comparisons."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchhelp import run_benchmark

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def test_learning_bars_prints_one_line_per_seed():
    proc = run_benchmark("learning_bars.py", "--tests", "gru", "--seeds", "0", "1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert [(r["test"], r["seed"]) for r in rows] == [("gru", 0), ("gru", 1)]
    assert all(r["mean_episode_length"] > 30 for r in rows), rows  # the GRU test's bar


def test_learning_suite_quick_writes_the_scoreboard(tmp_path):
    """The scoreboard's quick mode on one cheap task: one row with target, baseline, status, curve, frame and command,
    as JSON, Markdown and a PNG."""
    proc = subprocess.run([sys.executable, str(BENCH / "learning_suite.py"), "--quick", "--tasks", "cartpole",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (path,) = tmp_path.glob("*_learning_suite_cpu_quick.json")
    data = json.loads(path.read_text())
    assert data["quick"] is True and data["machine"]["cores"] >= 1
    (row,) = data["rows"]
    assert row["task"] == "cartpole" and row["seed"] == 0 and row["iterations"] == 2 and row["num_envs"] == 16
    assert [(t["key"], t["threshold"], t["op"]) for t in row["targets"]] == [("mean_return", 475.0, ">=")]
    assert 0 < row["baselines"]["zero action"]["mean_return"] < 475  # zero force, measured in the same run
    assert row["status"] in ("reached", "not reached") and row["defect"] is False
    assert [c["iteration"] for c in row["curve"]] == [1, 2] and row["final"]["mean_return"] == row["curve"][-1][
        "mean_return"]
    assert row["command"].startswith("python benchmarks/learning_suite.py --tasks cartpole")
    assert row["frame_kind"] == "2d" and Path(row["frame"]).stat().st_size > 1000
    assert path.with_suffix(".png").stat().st_size > 10_000
    table = path.with_suffix(".md").read_text()
    assert "| task | target (measure) | trivial baseline | status |" in table
    assert "| cartpole | `mean_return` >= 475 " in table and "Defects (a target" in table and table in proc.stdout


def test_learning_suite_flags_a_target_that_the_trivial_policy_meets():
    """Issue 29: a target a trivial policy meets is a defect, whatever training did (the old G1 target: a tracking
    error below 0.5 m/s, met by standing still at 0.418 m/s); the suite then exits 1."""
    sys.path.insert(0, str(BENCH))
    import learning_suite as ls
    from learning import Target

    err = Target(key="lin_vel_error_mps", threshold=0.5, op="<", measure="m/s")
    up = Target(key="up_fraction", threshold=0.8, op=">=", measure="fraction")
    curve = [{"iteration": 25, "wall_s": 60.0, "env_steps": 1000, "lin_vel_error_mps": 0.55, "up_fraction": 0.5},
             {"iteration": 50, "wall_s": 120.0, "env_steps": 2000, "lin_vel_error_mps": 0.46, "up_fraction": 0.9}]
    standing = {"lin_vel_error_mps": 0.418, "up_fraction": 1.0}
    fallen = {"lin_vel_error_mps": 0.3, "up_fraction": 0.0}  # the zero action: the G1 falls
    old_g1 = ls.classify((err, up), {"standing still": standing, "zero action": fallen}, curve)
    assert old_g1["status"] == "DEFECT: the trivial policy (standing still) meets the target"
    assert old_g1["defect"] and not old_g1["reached"]
    assert old_g1["best"] == 0.46 and old_g1["final"] == {"lin_vel_error_mps": 0.46, "up_fraction": 0.9}
    # the baseline misses one part of a two-part target: no defect; the second evaluation meets both
    ok = ls.classify((err, up), {"zero action": fallen}, curve)
    assert not ok["defect"] and ok["status"] == "reached" and ok["time_to_target_s"] == 120.0
    assert ok["env_steps_to_target"] == 2000 and ok["iterations_to_target"] == 50
    strict = Target(key="up_fraction", threshold=0.9, op=">", measure="fraction")  # equal is not better
    assert ls.classify((strict,), {"zero action": {"up_fraction": 0.9}}, curve)["status"] == "not reached"
    assert ls.classify((err,), {}, curve)["status"] == "DEFECT: no trivial baseline on the target's measure"
    assert ls.classify((err,), {"zero action": {"other": 1.0}}, curve)["defect"]
    rows = [{"task": "g1-velocity", "targets": [err.as_dict(), up.as_dict()],
             "baselines": {"standing still": standing, "zero action": fallen}, **old_g1,
             "num_envs": 128, "budget_min": 60.0, "seed": 0, "command": "python benchmarks/learn_g1.py"},
            {"task": "ant", "status": "error: exit 1 after 3 s"}]
    assert ls.exit_code(rows) == 1 and ls.exit_code(rows[1:]) == 2 and ls.exit_code([]) == 0
    info = {"date": "2026-11-26", "cpu": "cpu", "cores": 2, "device": "cpu", "gpu": None, "torch": "t",
            "warp-lang": "w", "newton": "n", "mujoco": "m"}
    table = ls.markdown(info, rows, command="python benchmarks/learning_suite.py", frames_dir="frames")
    assert "| **DEFECT: the trivial policy (standing still) meets the target** |" in table
    assert "standing still: lin_vel_error_mps 0.418, up_fraction 1; zero action: lin_vel_error_mps 0.3" in table
    assert "Defects (a target" in table
    assert "g1-velocity." in table.split("Defects", 1)[1]


def test_learning_suite_merges_an_earlier_run(tmp_path):
    """The CPU scoreboard takes ~3 h, more than a session: ``--merge`` keeps an earlier run's rows (same device, not
    a quick run) for the tasks not run now, in the scoreboard's order, and the table says which rows are older."""
    sys.path.insert(0, str(BENCH))
    import learning_suite as ls

    frames = tmp_path / "2026-11-20_learning_suite_cpu_frames"
    frames.mkdir()
    (frames / "lift.png").write_bytes(b"png")
    old = {"machine": {"date": "2026-11-20", "cpu": "Old CPU", "device": "cpu"}, "quick": False,
           "rows": [{"task": "lift", "status": "reached", "frame": "/elsewhere/lift.png"},
                    {"task": "cartpole", "status": "not reached"}]}
    path = tmp_path / "2026-11-20_learning_suite_cpu.json"
    path.write_text(json.dumps(old))
    earlier = ls.load_earlier(str(path), "cpu")
    assert earlier[0]["date"] == "2026-11-20" and earlier[0]["machine"] == "Old CPU"
    assert earlier[0]["frame_rel"] == f"{frames.name}/lift.png"
    now = [{"task": "push", "status": "reached", "date": "2026-11-27", "machine": "New CPU"},
           {"task": "cartpole", "status": "reached", "date": "2026-11-27", "machine": "New CPU"}]
    rows = ls.merged(now, earlier, "cpu")
    assert [r["task"] for r in rows] == ["cartpole", "lift", "push"] and rows[0]["status"] == "reached"
    info = {"date": "2026-11-27", "cpu": "New CPU", "cores": 2, "device": "cpu", "gpu": None, "torch": "t",
            "warp-lang": "w", "newton": "n", "mujoco": "m"}
    assert [bool(r.get("merged")) for r in rows] == [False, True, False]  # this run's cartpole replaces the old
    table = ls.markdown(info, rows, command="c", frames_dir="x", merged_from="old.json")
    assert "Rows from an earlier run (`--merge old.json`): lift (2026-11-20, Old CPU, commit ?)." in table
    assert f"![lift]({frames.name}/lift.png)" in table
    old["machine"]["device"] = "cuda:0"
    path.write_text(json.dumps(old))
    with pytest.raises(SystemExit, match="ran on cuda:0, this run on cpu"):
        ls.load_earlier(str(path), "cpu")
    with pytest.raises(SystemExit, match="not a learning_suite results file"):
        ls.load_earlier(str(tmp_path / "missing.json"), "cpu")


def test_learn_quadruped_quick_reports_tracking_errors(tmp_path):
    results = tmp_path / "runs.jsonl"
    out = run_benchmark("learn_quadruped.py", "--quick", "--json", "--out", str(tmp_path), "--append", str(results))
    assert out.returncode == 0, out.stderr[-2000:]
    row = json.loads(out.stdout.strip().splitlines()[-1])
    assert row["iterations"] == 2 and row["target_mps"] == 0.25
    assert 0.0 < row["lin_vel_error_mps"] < 3.0 and 0.0 <= row["fell_fraction"] <= 1.0
    (line,) = results.read_text().splitlines()  # --append: the summary with its curve, one line per run
    kept = json.loads(line)
    assert kept["seed"] == 0 and kept["lin_vel_error_mps"] == row["lin_vel_error_mps"] and len(kept["curve"]) == 1


def test_learn_push_quick_reports_the_share_on_target(tmp_path):
    out = run_benchmark("learn_push.py", "--quick", "--json", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    row = json.loads(out.stdout.strip().splitlines()[-1])
    assert row["iterations"] == 2 and row["target_fraction"] == 0.5 and row["target_key"] == "on_target_fraction"
    assert 0.0 <= row["on_target_fraction"] <= 1.0 and 0.0 <= row["baseline_zero_action"]["on_target_fraction"] <= 1.0


def test_push_zero_action_baseline_is_the_share_of_targets_drawn_near_the_cube():
    """Under zero actions the arm rests and the cube stays put: the baseline is exactly the share of envs whose
    target was drawn within 3 cm of the cube's spot (about 7% for targets up to 10 cm away in x and y)."""
    import torch

    sys.path.insert(0, str(BENCH))
    from learn_push import push_success

    from horde.envs import get_task, make
    from horde.envs.push import PUSHED

    cfg, n, seed = get_task("push").config, 64, 10_000
    env = make("push", num_envs=n, seed=seed, config=cfg)
    start = torch.linalg.vector_norm((env.target - env.observation_sources()["object_pos"])[:, :2], dim=-1)
    expected = float((start < PUSHED).float().mean())
    zero = push_success(lambda obs: torch.zeros(obs.shape[0], env.num_actions), cfg, seed, num_envs=n)
    assert zero["on_target_fraction"] == expected and zero["off_table_fraction"] == 0.0, (zero, expected)
    assert abs(zero["final_error_m"] - float(start.median())) < 2e-3, (zero, float(start.median()))


def test_a_learning_run_stopped_by_sigterm_is_evaluated_at_the_iteration_it_stopped(tmp_path):
    """SIGTERM (a scheduler's stop, ``kill``) ends a learn script's training after the running iteration, before the
    evaluation hook: the curve's last point is still the policy it stopped with, so its summary reports that one."""
    import os
    import signal

    from benchhelp import _module

    learning = _module("learning.py")
    seen = []

    def evaluate(policy, task_cfg, seed):  # noqa: ARG001
        seen.append(seed)
        if len(seen) == 1:
            os.kill(os.getpid(), signal.SIGTERM)  # the run loop's guard turns it into a stop after this iteration
        return {"score": float(len(seen))}

    result = learning.train_with_evals(["task=cartpole", "num_envs=16", "max_iterations=50", "save_interval=1000"],
                                       evaluate, eval_every=1, minutes=5.0, describe=lambda p: str(p["score"]))
    assert result["iterations"] == 2, result["iterations"]
    assert [p["iteration"] for p in result["curve"]] == [1, 2]
    assert seen == [10_001, 10_002]

    # the curves of --append files side by side, one panel per figure
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps({"num_envs": n, "seed": 0, "env_steps": 1000, "curve": [
        {"iteration": 1, "wall_s": 6.0, "up_fraction": 0.1, "err": 0.5}]}) + "\n" for n in (256, 512)))
    out = tmp_path / "cmp.png"
    proc = run_benchmark("learning.py", "compare", str(out), f"{runs}@1", str(runs), "--keys", "up_fraction", "err",
                         "--hline", "err=0.4:standing still")
    assert proc.returncode == 0 and out.stat().st_size > 1000, proc.stdout + proc.stderr
    proc = run_benchmark("learning.py", "compare", str(out), str(runs), "--keys", "err", "--x", "env_steps")
    assert proc.returncode != 0 and "has no env_steps" in proc.stderr, proc.stderr
    stepped = tmp_path / "stepped.jsonl"
    stepped.write_text(json.dumps({"num_envs": 512, "seed": 0, "env_steps": 2000, "curve": [
        {"iteration": k, "wall_s": 6.0 * k, "env_steps": 1000 * k, "err": 0.5 / k} for k in (1, 2)]}) + "\n")
    out.unlink()
    proc = run_benchmark("learning.py", "compare", str(out), str(stepped), "--keys", "err", "--x", "env_steps")
    assert proc.returncode == 0 and out.stat().st_size > 1000, proc.stdout + proc.stderr
    proc = run_benchmark("learning.py", "compare", str(out), f"{runs}@3", "--keys", "err")
    assert proc.returncode != 0 and "has 2 run(s); asked for line 3" in proc.stderr, proc.stderr
    proc = run_benchmark("learning.py", "compare", str(out), str(tmp_path / "nope.jsonl"), "--keys", "err")
    assert proc.returncode != 0 and "nope.jsonl: no such results file" in proc.stderr, proc.stderr
    proc = run_benchmark("learning.py", "compare", str(out), str(runs), "--keys", "up")
    assert proc.returncode != 0 and "its figures: err, iteration, up_fraction, wall_s" in proc.stderr, proc.stderr

    # seeds of one recipe share a colour (a marker each); another recipe takes the next colour
    a = {"task": "quadruped", "num_envs": 256, "overrides": ["seed=0", "x=1"]}
    styles = learning._recipe_styles([a, {**a, "overrides": ["seed=1", "x=1"]}, {**a, "overrides": ["seed=0", "x=2"]}])
    assert styles[0]["color"] == styles[1]["color"] != styles[2]["color"]
    assert styles[0]["marker"] != styles[1]["marker"]
    assert "color" not in learning._recipe_styles([a, {**a, "num_envs": 512}])[0]  # all distinct: the usual cycle
    # the same recipe on another CPU model is another family: wall-clock curves compare only on one machine
    b = {**a, "overrides": ["seed=1", "x=1"]}
    styles = learning._recipe_styles([a, b, {**a, "cpu": "Xeon"}, {**b, "cpu": "Xeon"}])
    assert styles[0]["color"] == styles[1]["color"] != styles[2]["color"] == styles[3]["color"]

    # an --append line names the machine it ran on
    learning.append_result(str(tmp_path / "app.jsonl"), {"task": "t", "seed": 0, "png": "x.png"})
    line = json.loads((tmp_path / "app.jsonl").read_text())
    assert line["task"] == "t" and "png" not in line and line["cpu_count"] == os.cpu_count() and line["cpu"]


def test_learning_seeds_compares_two_recipes_with_an_exact_permutation_test(tmp_path):
    """``learning.py seeds``: medians over the runs of each recipe's files and, per figure, the exact two-sided
    permutation p (reference 1, 2 against probe 3, 4: 2 of the 6 splits differ as much, p = 1/3); a run that never
    reached its target counts its whole length; a missing file stops in one line."""
    def run(seed, minutes_to_target, fell):
        curve = [{"wall_s": 60.0, "fell_fraction": 1.0}, {"wall_s": 300.0, "fell_fraction": fell}]
        return {"seed": seed, "train_s": 360.0, "iterations": 100 + seed, "curve": curve,
                "target_reached_at_s": None if minutes_to_target is None else 60.0 * minutes_to_target}
    ref, probe = tmp_path / "ref.jsonl", tmp_path / "probe.jsonl"
    ref.write_text("\n".join(json.dumps(r) for r in (run(0, 2.0, 1.0), run(1, 4.0, 2.0))) + "\n")
    probe.write_text("\n".join(json.dumps(r) for r in (run(0, None, 3.0), run(1, 1.0, 4.0))) + "\n")
    proc = run_benchmark("learning.py", "seeds", "--reference", str(ref), "--probe", str(probe),
                         "--keys", "fell_fraction")
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.splitlines()[0])
    fell, t = result["figures"]["fell_fraction"], result["figures"]["minutes_to_target"]
    assert fell["reference_median"] == 1.5 and fell["probe_median"] == 3.5 and abs(fell["p"] - 1 / 3) < 1e-12
    assert t["probe_median"] == 3.5 and result["reached"] == [2, 1]  # not reached: its 6 minutes
    assert "note:" not in proc.stderr  # one machine (neither file names it)
    probe.write_text("\n".join(json.dumps({**run(s, 1.0, 1.0), "cpu": "Xeon"}) for s in (0, 1)) + "\n")
    other = run_benchmark("learning.py", "seeds", "--reference", str(ref), "--probe", str(probe),
                          "--keys", "fell_fraction")
    assert other.returncode == 0 and "the probe on Xeon" in other.stderr, other.stderr  # wall clocks of two machines
    bad = run_benchmark("learning.py", "seeds", "--reference", str(tmp_path / "none.jsonl"), "--probe", str(probe),
                        "--keys", "fell_fraction")
    assert bad.returncode != 0 and "no such results file" in (bad.stderr + bad.stdout) and "Traceback" not in bad.stderr
    key = run_benchmark("learning.py", "seeds", "--reference", str(ref), "--probe", str(probe), "--keys", "fel")
    assert key.returncode != 0 and "fell_fraction" in (key.stderr + key.stdout) and "Traceback" not in key.stderr
