"""Each benchmark script runs in quick mode and prints the documented JSON lines."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchhelp import run_benchmark

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def test_g1_zero_action_falls_in_plain_mujoco():
    """The G1's trivial baseline (zero actions fall: 0% up) is MuJoCo's, not horde's: the robot's MJCF held at its
    default pose by the task's PD law, stepped by MuJoCo alone, tips past the task's tilt limit within 2 s; its
    ankles' stiffness is below the inverted pendulum's m g h."""
    proc = run_benchmark("g1_stand.py", "--seconds", "2", "--kp-scale", "1", "--kp", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (row,) = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert row["fall_s"] is not None and 0.5 < row["fall_s"] < 2.0, row
    assert row["ankle_pitch_stiffness_sum"] < row["mgh"], row
    assert 0.5 < row["com_height"] < 0.8 and row["final_base_height"] > 0.3, row  # on the floor, not in free fall


def test_held_torques_are_the_last_substeps_torques_on_either_actuation():
    """The raw references and physics_options.py hold the torques the env applied last: on MuJoCo's own actuators
    those are not in the state rows, so held_torques() reads them back; both actuation paths give the same rows."""
    import copy
    import dataclasses

    import numpy as np
    import torch
    from benchhelp import _module

    from horde.envs import get_task, make

    rows = {}
    for native in (True, False):
        cfg = copy.deepcopy(get_task("reach").config)
        cfg.sim = dataclasses.replace(cfg.sim, solver="mujoco-c", mujoco_actuators=native)
        env = make("reach", num_envs=3, device="cpu", seed=0, config=cfg)
        env.step(torch.linspace(-1, 1, 3 * env.num_actions).view(3, -1))
        rows[native] = _module("mujoco_batch.py").held_torques(env)
    scale = np.abs(rows[False]).max()
    assert scale > 1 and np.abs(rows[True] - rows[False]).max() < 1e-4 * scale


def test_actuator_paths_step_check_compares_the_two_paths():
    """actuator_paths.py step: both actuation paths from the same seed under the same actions give the same step data
    to rounding (the claim behind "the same actions, either path"); a bad override: one line, no traceback."""
    proc = run_benchmark("actuator_paths.py", "step", "--envs", "4", "--steps", "5", "--json", "num_envs=4")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (row,) = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert len(row["per_step"]) == 5 and row["largest"]["dones_apart"] == 0, row
    assert row["first_step_observations_over_1e-4"] is None, row  # 5 steps of std 0.3: rounding has not grown
    for key in ("joints", "observations", "rewards", "reward_terms_relative"):
        assert 0 <= row["largest"][key] < 1e-4, row
    bad = run_benchmark("actuator_paths.py", "step", "--steps", "1", "task.no_such_field=1")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "no_such_field" in bad.stderr, bad.stderr


def test_physics_options_times_each_variant_of_the_same_states():
    """One row per MuJoCo option, the reference at 1.0, the contact rows of a real state (the G1 stands on its
    feet: MuJoCo's pyramidal cones give more rows than elliptic ones; a contact gap adds contacts, not rows); an
    unknown task: one line."""
    proc = run_benchmark("physics_options.py", "--task", "g1-velocity", "--envs", "2", "--warm", "5", "--steps", "2",
                         "--repeats", "1", "--stages", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    rows = {r["variant"]: r for r in lines if "variant" in r}
    assert len(rows) == 11 and rows["as horde steps it"]["vs_horde"] == 1.0, rows
    # options that keep the physics keep the contacts and rows
    for same in ("dense Jacobian", "sparse Jacobian", "no midphase", "other integrator"):
        assert (rows[same]["ncon_first_env"], rows[same]["nefc_first_env"]) == (
            rows["as horde steps it"]["ncon_first_env"], rows["as horde steps it"]["nefc_first_env"]), rows
    # MuJoCo's stage timers: the stages sum to at most the step, and a G1 on its feet collides and solves
    (stages,) = [r["stages_us_per_step"] for r in lines if "stages_us_per_step" in r]
    if stages is not None:  # None where the OpenMP runtime has no omp_get_wtime
        top = ("position", "velocity", "actuation", "constraint solver", "integrator")
        assert sum(stages[k] for k in top) <= stages["step"] and stages["rest of mj_step"] >= 0, stages
        assert stages["collision"] > 0 and stages["constraint solver"] > 0, stages
        assert sum(stages[k] for k in ("kinematics", "inertia", "collision", "make constraints",
                                       "project constraints")) <= stages["position"] * 1.001, stages
    assert all(r["us_per_step"] > 0 for r in rows.values()), rows
    assert rows["as horde steps it"]["nefc_first_env"] > rows["elliptic cones"]["nefc_first_env"] > 0, rows
    # Newton's former gap adds contacts the solver leaves out (the feet's capsules above the floor), no rows
    gap, horde = rows["0.1 m contact gap"], rows["as horde steps it"]
    assert gap["ncon_first_env"] > horde["ncon_first_env"] and gap["nefc_first_env"] == horde["nefc_first_env"], rows
    bad = subprocess.run([sys.executable, str(BENCH / "physics_options.py"), "--task", "quadrupedd"],
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "quadruped" in bad.stderr


def test_train_throughput_split_quick_json():
    proc = run_benchmark("train_throughput.py", "--quick", "--no-train", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (row,) = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert "ratio" not in row and row["task"] == "lift" and row["substeps"] >= 1
    assert 0 < row["mujoco_ms"] < row["env_step_ms"] and 0 < row["mujoco_share"] < 1, row
    assert row["replay_ms"] > 0 and row["recording_ms"] > 0 and row["split_std"] == 0.5, row
    assert row["raw_default_ms"] > 0 and row["raw_visited_ms"] > 0 and row["raw_per_substep_ms"] > 0, row


def check_sim_throughput_rows(rows: list[dict]) -> None:
    """``sim_throughput.py --quick --json``'s rows (run by run_all's test below, which runs that command)."""
    cart = [r for r in rows if r["task"] == "cartpole"]
    assert {"horde-graph", "horde-eager", "numpy", "ratio:horde-graph/numpy"} <= {r["impl"] for r in cart}
    for r in rows:
        if "env_steps_per_s" in r:
            assert {"task", "impl", "device", "num_envs", "env_steps_per_s"} <= set(r) and r["env_steps_per_s"] > 0
    assert {r["num_envs"] for r in cart} == {64, 4096}
    # articulated tasks come with their two references: raw Newton and MuJoCo's C engine
    ant = {r["impl"] for r in rows if r["task"] == "ant"}
    assert {"horde-graph", "newton-raw", "ratio:horde/newton", "mujoco-c", "ratio:horde/mujoco-c"} <= ant
    # and the CPU backend's rows: horde on MuJoCo's C engine against raw mujoco.batch and horde on MuJoCo-Warp
    assert {"horde-mujoco-c", "batch-raw", "horde-mujoco-warp", "ratio:horde-c/raw", "ratio:horde-c/horde-warp"} <= ant
    (mj,) = [r for r in rows if r["task"] == "ant" and r["impl"] == "mujoco-c"]
    assert mj["integrator"] and mj["solver"] and mj["threads"] >= 1 and mj["model_changes"] == []


def test_train_vs_sb3_quick_json():
    proc = run_benchmark("train_vs_sb3.py", "--quick", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    runs = [r for r in rows if "seed" in r and "summary" not in r]
    assert runs and runs[0]["learner"] == "horde-ppo" and runs[0]["reached"] is True
    assert runs[0]["env_steps_to_threshold"] > 0  # its seconds are a figure to print, not to assert
    assert any(r.get("summary") for r in rows) and any("curves" in r for r in rows)
    summary = next(r for r in rows if r.get("summary") and r.get("learner") == "horde-ppo")
    assert {"num_envs", "device", "seeds"} <= set(summary) and summary["seeds"]
    assert summary["hyperparameters"]["num_steps_per_env"] > 0  # the tuned config the run used
    assert summary["task_settings"]["max_force"] > 0 and summary["task_note"]  # what task horde trained on


def test_overlap_quick_json():
    proc = subprocess.run([sys.executable, str(BENCH / "overlap.py"), "--quick", "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    runs = {r["mode"]: r for r in rows if "seed" in r}
    assert set(runs) == {"sync", "overlap0", "overlap"}
    assert runs["sync"]["mean_staleness"] == 0 and runs["overlap"]["max_staleness_seen"] == 1
    assert runs["overlap0"]["max_staleness_seen"] == 0 and runs["overlap0"]["learner"] == "process"
    assert all(r["iterations"] == 2 and len(r["core_idle_share"]) >= 1 for r in runs.values())
    ratios = {(r["mode"], r["what"]) for r in rows if r.get("kind") == "ratio"}
    assert {(m, w) for m in ("overlap0", "overlap")
            for w in ("sync/overlap wall time to threshold", "overlap/sync env steps to threshold")} <= ratios


def test_rollout_precision_quick_json():
    proc = run_benchmark("rollout_precision.py", "--quick", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    runs = {r["rollout_precision"]: r for r in rows if "summary" not in r}
    assert set(runs) == {"fp32", "fp16"}
    for r in runs.values():  # the same initial states for every policy: the returns are finite and comparable
        # the gap is the fp16 bundle's return against the policy as trained, relative (rounding: returns to 3
        # decimals, the gap to 4)
        gap = abs(r["fp16_bundle_return"] - r["as_trained_return"]) / max(abs(r["as_trained_return"]), 1e-9)
        assert r["episodes"] == 64 and r["bundle_gap_rel"] == pytest.approx(
            gap, abs=1e-4 + 2e-3 / max(abs(r["as_trained_return"]), 1e-9)), r
        assert all(abs(r[k]) < 1e6 for k in ("as_trained_return", "torch_fp32_return", "fp16_bundle_return"))
    assert sum(1 for r in rows if r.get("summary")) == 2


def test_run_all_writes_json_table_and_plots(tmp_path):
    import datetime as dt

    # --only reruns some scripts and keeps the others' results of the same day and device
    kept = {"rows": [{"task": "cartpole", "learner": "ratio:sb3-ppo/horde-ppo", "wall_time_ratio": 6.8, "seeds": 3}],
            "seconds": 1.0, "status": "ok"}
    earlier = tmp_path / f"{dt.date.today().isoformat()}_cpu_quick.json"
    earlier.write_text(json.dumps({"machine": {}, "results": {"train_vs_sb3": kept}}))
    proc = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--quick", "--only", "sim_throughput",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads(next(tmp_path.glob("*_quick.json")).read_text())
    assert data["machine"]["cores"] >= 1 and data["machine"]["torch"]
    assert data["results"]["sim_throughput"]["status"] == "ok"
    check_sim_throughput_rows(data["results"]["sim_throughput"]["rows"])  # `sim_throughput.py --quick --json`'s
    assert data["results"]["train_vs_sb3"] == kept
    assert list(tmp_path.glob("*_throughput.png"))
    table = (BENCH / "RESULTS_quick.md").read_text()
    summary = table.split("## Summary: every ratio", 1)[1].split("\n## ", 1)[0]
    assert "| sim_throughput | cartpole | horde-graph/numpy | 4096 |" in summary  # the headline ratio, one row
    assert "| train_vs_sb3 | cartpole | sb3-ppo/horde-ppo |  | 6.8 |" in summary
    for png in tmp_path.glob("*.png"):
        png.unlink()
    proc = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--quick", "--render", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)  # the table and plots again, nothing rerun
    assert proc.returncode == 0 and "sim_throughput ..." not in proc.stdout, proc.stdout + proc.stderr
    assert list(tmp_path.glob("*_throughput.png"))


def test_ratio_rows_collects_each_scripts_ratios():
    sys.path.insert(0, str(BENCH))
    import run_all

    results = {
        "sim_throughput": {"rows": [{"task": "cartpole", "impl": "horde-graph", "num_envs": 64, "env_steps_per_s": 9.0},
                                    {"task": "cartpole", "impl": "ratio:horde-graph/numpy", "num_envs": 64,
                                     "ratio": 12.5}]},
        "train_vs_sb3": {"rows": [{"task": "cartpole", "learner": "ratio:sb3-ppo/horde-ppo", "wall_time_ratio": 6.8,
                                   "seeds": 3}]},
        "diff_vs_ppo": {"rows": [{"kind": "ratio", "task": "pendulum", "what": "ppo/shac env steps", "value": 7.0}]},
    }
    rows = run_all.ratio_rows(results)
    assert [(r["script"], r["ratio of"], r["value"]) for r in rows] == [
        ("sim_throughput", "horde-graph/numpy", 12.5), ("train_vs_sb3", "sb3-ppo/horde-ppo", 6.8),
        ("diff_vs_ppo", "ppo/shac env steps", 7.0)]
    assert rows[1]["notes"] == "seeds=3"


def test_trajectory_digest_is_reproducible():
    """The refactoring check prints the same digest for the same seed twice (and a different one for another task)."""
    run = lambda *tasks: subprocess.run(  # noqa: E731
        [sys.executable, str(BENCH / "trajectory_digest.py"), "--tasks", *tasks, "--learners"],
        capture_output=True, text=True, timeout=600)
    first, second = run("cartpole", "pendulum"), run("cartpole")
    assert first.returncode == 0 and second.returncode == 0, first.stderr[-2000:] + second.stderr[-2000:]
    a, b = first.stdout.splitlines(), second.stdout.splitlines()
    assert a[0].split()[:2] == b[0].split()[:2] and a[0].split()[0] == "cartpole"
    assert len(a[0].split()[1]) == 16 and a[1].split()[1] != a[0].split()[1]


def test_perception_quick_json():
    proc = run_benchmark("perception.py", "--quick", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert [r["variant"] for r in rows] == ["blind", "scan", "scan+critic", "depth"]
    assert [r["obs_dim"] for r in rows] == [48, 48 + 187, 48 + 187, 48 + 32 * 24]
    assert rows[2]["critic_dim"] > rows[2]["obs_dim"]
    assert all(r["env_steps_per_s"] > 0 for r in rows) and rows[0]["ratio_to_blind"] == 1.0


def test_libraries_benchmark_draws_its_plot_from_saved_results(tmp_path):
    out = tmp_path / "libraries.png"
    proc = subprocess.run([sys.executable, str(BENCH / "libraries.py"), "--from-json",
                           str(BENCH / "results" / "2026-11-24_libraries_cpu.json"), "--plot", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert out.stat().st_size > 10_000


def test_symmetry_quick_json():
    proc = run_benchmark("symmetry.py", "--quick", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert set(summary) == {"off", "augment", "mirror_loss"}
    # a 2-iteration MLP is not mirror-symmetric: a zero mirror error means the maps compared a policy with itself
    assert all(s["median_iterations"] == 2 and 0 < s["median_mirror_error"] < math.inf for s in summary.values()), \
        summary


def test_backend_agreement_quick_json(tmp_path):
    proc = run_benchmark("backend_agreement.py", "--quick", "--json", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert [r["task"] for r in rows] == ["reach"] and len(rows[0]["max_abs_diff"]) == 5
    assert max(rows[0]["max_abs_diff"]) < 1e-4  # the contact-free arm: float32 rounding only
    assert (tmp_path / "backend_agreement.png").is_file()


def test_backend_agreement_compares_mujoco_actuators_with_the_kernel(tmp_path):
    proc = run_benchmark("backend_agreement.py", "--quick", "--json", "--pair", "actuators", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert rows[0]["pair"] == "actuators" and 0 < max(rows[0]["max_abs_diff"]) < 1e-5  # rounding, not identical
    assert (tmp_path / "backend_agreement_actuators.png").is_file()


def test_actuator_net_quick_json():
    proc = run_benchmark("actuator_net.py", "--quick", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert [r["part"] for r in rows] == ["fit", "fit", "cost", "agreement"]
    assert [r["history"] for r in rows[:2]] == [[0, 1, 2], [0]]
    assert rows[2]["pd_env_steps_per_s"] > 0 and rows[2]["network_env_steps_per_s"] > 0
    assert rows[3]["half_stiffness_max_joint_diff_rad"] > 0


def test_cli_time_quick_json():
    proc = subprocess.run([sys.executable, str(BENCH / "cli_time.py"), "--quick", "--json"], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    row = json.loads(proc.stdout)
    assert set(row["median_s"]) == {"python -c 'import horde'", "horde tasks"} and row["floor_s"] == 2.0, row
    assert all(t > 0 for t in row["median_s"].values()) and row["tasks_met"] == (row["median_s"]["horde tasks"] < 2)


def test_memory_benchmark_quick_json():
    proc = subprocess.run([sys.executable, str(BENCH / "memory_per_env.py"), "--quick", "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert [r["task"] for r in rows] == ["cartpole"]
    assert {"cpu_bytes_per_env", "cuda_bytes_per_env", "obs", "actions", "tape"} <= set(rows[0])
    assert rows[0]["obs"] == 5 and rows[0]["actions"] == 1 and rows[0]["cuda_bytes_per_env"] > 0


def test_train_throughput_pairs_each_iteration_with_the_raw_windows_beside_it():
    """The paired ratio divides each iteration's rate by the raw rate of the windows on either side of it, so a
    machine that slows down halfway leaves the ratio where it was; a window missing is an error, not a shift."""
    sys.path.insert(0, str(BENCH))
    from train_throughput import paired_ratio

    # 100 envs; raw windows of 10 ms (10k env-steps/s) then 20 ms (5k): the machine halved its speed
    raw_ms = [10.0, 10.0, 10.0, 20.0, 20.0, 20.0]
    rates = [5000.0, 5000.0 * 10 / 15, 2500.0, 2500.0, 2500.0]  # training at half the raw rate throughout
    out = paired_ratio(rates, raw_ms, 100)
    assert out["paired_ratio"] == pytest.approx(0.5), out
    assert out["paired_raw_env_steps_per_s"] == pytest.approx(100 * 1e3 / 15), out  # the median of the pairs
    with pytest.raises(ValueError, match="need 6 raw windows"):
        paired_ratio(rates, raw_ms[:-1], 100)


def test_train_throughput_trains_each_task_with_its_cpu_recipe(monkeypatch, capsys):
    """The floor is stated at the recipe each task trains with on the CPU: the scoreboard's CPU overrides (the G1's
    3 epochs, the quadruped's compiled small networks) beyond the tuned config, but the env count, which each run
    names; a machine without a C++ compiler runs the quadruped's uncompiled, with a one-line notice."""
    sys.path.insert(0, str(BENCH))
    import horde.train.ppo as ppo
    import learning_suite
    from learning_suite import ENTRIES
    from train_throughput import cpu_recipe

    monkeypatch.setattr(learning_suite, "_UNCOMPILED_NOTICE", set())

    g1 = next(e for e in ENTRIES if e.task == "g1-velocity")
    assert "algo.num_learning_epochs=3" in g1.cpu_overrides
    assert cpu_recipe("g1-velocity") == ["algo.num_learning_epochs=3"]
    assert cpu_recipe("lift") == [] and cpu_recipe("no-such-task") == []  # num_envs only: the run names it
    small = ["algo.policy.actor_hidden_dims=[128,64,32]", "algo.policy.critic_hidden_dims=[128,64,32]"]
    monkeypatch.setattr(ppo, "cpu_compiler", lambda: "/usr/bin/g++")
    assert cpu_recipe("quadruped") == [*small, "algo.compile=true"]
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(ppo, "cpu_compiler", lambda: None)
    assert cpu_recipe("quadruped") == small
    assert cpu_recipe("quadruped") == small  # the notice once per task, not at every call
    notice = capsys.readouterr().err.strip().splitlines()
    assert len(notice) == 1 and "no C++ compiler" in notice[0] and "algo.compile=true" in notice[0], notice


def test_update_in_place_times_both_ways_on_one_rollout():
    proc = run_benchmark("update_in_place.py", "--quick", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (row,) = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert row["task"] == "quadruped" and row["pairs"] == 2 and row["activations"] >= 2, row  # actor and critic
    assert len(row["out_of_place_all_s"]) == len(row["in_place_all_s"]) == 2, row
    assert row["out_of_place_s"] > 0 and row["in_place_s"] > 0 and 0 <= row["in_place_shorter_in"] <= 2, row
    bad = run_benchmark("update_in_place.py", "--quick", "--json", "algo.no_such_key=1")
    assert bad.returncode == 2 and "no_such_key" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr


def test_scratch_dir_is_gone_after_the_process_exits(tmp_path):
    """A benchmark's training runs go into ``scratch_dir`` folders; the process's exit removes them with their
    checkpoints, so that ``make test`` and the benchmarks leave nothing in the temporary folder."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from scratch import scratch_dir; import pathlib; "
            "p = pathlib.Path(scratch_dir('bench_')); (p / 'run').mkdir(); (p / 'run' / 'model_1.pt').write_text('x'); "
            "print(p)")
    proc = subprocess.run([sys.executable, "-c", code, str(BENCH)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "TMPDIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    made = Path(proc.stdout.strip())
    assert made.parent == tmp_path and made.name.startswith("bench_"), made
    assert not made.exists() and not list(tmp_path.iterdir())
