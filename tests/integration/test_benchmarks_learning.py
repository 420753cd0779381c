"""The learning benchmarks in quick mode: the learn scripts, the scoreboard (``learning_suite.py``), the trivial
baselines beside each target, and ``learning.py``'s evaluations, curves and seed comparisons."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from benchhelp import run_benchmark

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
REPO = BENCH.parent
ABSOLUTE = re.compile(r"""(?:^|[\s"'`(=:\[,])(/[A-Za-z_][\w.+-]*/[\w.+/-]*)""")
"""An absolute POSIX path of two or more parts in a results file (``/tmp/x``, ``"/work/main/..."``)."""


def absolute_paths(text: str) -> list[str]:
    return [m.group(1) for m in ABSOLUTE.finditer(text)]


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
    assert data["algo"] == row["algo"] == "ppo"
    split = row["time_split"]  # the trainer's phases as shares of the training clock
    assert set(split) == {"sim", "inference", "learn", "other"} and abs(sum(split.values()) - 1) < 1e-3, split
    assert split["learn"] > 0
    assert [(t["key"], t["threshold"], t["op"]) for t in row["targets"]] == [("mean_return", 475.0, ">=")]
    assert 0 < row["baselines"]["zero action"]["mean_return"] < 475  # zero force, measured in the same run
    assert row["status"] in ("reached", "not reached") and row["defect"] is False
    assert [c["iteration"] for c in row["curve"]] == [1, 2] and row["final"]["mean_return"] == row["curve"][-1][
        "mean_return"]
    assert row["command"].startswith("python benchmarks/learning_suite.py --tasks cartpole")
    # --out outside the checkout: the frame's path is from the results folder, never absolute (issue 72)
    assert row["frame"] == f"{path.stem}_frames/cartpole.png" and (tmp_path / row["frame"]).stat().st_size > 1000
    assert row["frame_kind"] == "2d" and not absolute_paths(path.read_text()), absolute_paths(path.read_text())
    assert path.with_suffix(".png").stat().st_size > 10_000
    table = path.with_suffix(".md").read_text()
    assert "| task | target (measure) | trivial baseline | status |" in table and "| learner share |" in table
    assert "| cartpole | `mean_return` >= 475 " in table and "Defects (a target" in table and table in proc.stdout
    assert not absolute_paths(table) and str(tmp_path) not in table and "--out ." in table


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
    with pytest.raises(SystemExit, match="its rows trained ppo, this run sac"):  # a file before --algo: PPO's
        ls.load_earlier(str(path), "cpu", "sac")
    old["machine"]["device"] = "cuda:0"
    path.write_text(json.dumps(old))
    with pytest.raises(SystemExit, match="ran on cuda:0, this run on cpu"):
        ls.load_earlier(str(path), "cpu")
    with pytest.raises(SystemExit, match="not a learning_suite results file"):
        ls.load_earlier(str(tmp_path / "missing.json"), "cpu")


PPO_COMMANDS = {
    ("cartpole", "cpu"): "python benchmarks/learning_suite.py --tasks cartpole --minutes 1 --seed 0",
    ("cartpole", "cuda:0"): "python benchmarks/learning_suite.py --tasks cartpole --minutes 0.2 --seed 0 "
                           "--device cuda:0",
    ("pendulum", "cpu"): "python benchmarks/learning_suite.py --tasks pendulum --minutes 3 --seed 0",
    ("pendulum", "cuda:0"): "python benchmarks/learning_suite.py --tasks pendulum --minutes 0.3 --seed 0 "
                           "--device cuda:0",
    ("cartpole-swingup", "cpu"): "python benchmarks/learning_suite.py --tasks cartpole-swingup --minutes 3 --seed 0",
    ("cartpole-swingup", "cuda:0"): "python benchmarks/learning_suite.py --tasks cartpole-swingup --minutes 3 --seed 0 "
                                    "--device cuda:0",
    ("reach", "cpu"): "python benchmarks/learn_reach.py --minutes 15 --seed 0 --eval-every 25 max_iterations=1000",
    ("reach", "cuda:0"): "python benchmarks/learn_reach.py --minutes 0.5 --seed 0 --eval-every 25 max_iterations=1000 "
                         "num_envs=4096 device=cuda:0",
    ("ant", "cpu"): "python benchmarks/learn_ant.py --minutes 10 --seed 0 max_iterations=1000",
    ("ant", "cuda:0"): "python benchmarks/learn_ant.py --minutes 0.4 --seed 0 max_iterations=1000 num_envs=4096 "
                       "device=cuda:0",
    ("quadruped", "cpu"): "python benchmarks/learn_quadruped.py --minutes 15 --seed 0 --eval-every 25 num_envs=256 "
                          "'algo.policy.actor_hidden_dims=[128,64,32]' 'algo.policy.critic_hidden_dims=[128,64,32]' "
                          "algo.compile=true",
    ("quadruped", "cuda:0"): "python benchmarks/learn_quadruped.py --minutes 1 --seed 0 --eval-every 25 num_envs=4096 "
                             "device=cuda:0",
    ("lift", "cpu"): "python benchmarks/learn_lift.py --minutes 30 --seed 0 num_envs=512",
    ("lift", "cuda:0"): "python benchmarks/learn_lift.py --minutes 0.5 --seed 0 num_envs=4096 device=cuda:0",
    ("g1-velocity", "cpu"): "python benchmarks/learn_g1.py --minutes 60 num_envs=512 algo.num_learning_epochs=3 seed=0",
    ("g1-velocity", "cuda:0"): "python benchmarks/learn_g1.py --minutes 1.25 num_envs=4096 device=cuda:0 seed=0",
    ("push", "cpu"): "python benchmarks/learn_push.py --minutes 15 --seed 0 --eval-every 25 num_envs=512",
    ("push", "cuda:0"): "python benchmarks/learn_push.py --minutes 0.5 --seed 0 --eval-every 25 num_envs=4096 "
                        "device=cuda:0",
    ("place", "cpu"): "python benchmarks/learn_place.py --minutes 60 --seed 0 --eval-every 25 num_envs=512",
    ("place", "cuda:0"): "python benchmarks/learn_place.py --minutes 60 --seed 0 --eval-every 25 num_envs=4096 "
                         "device=cuda:0",
}
"""Every entry's PPO command at its own budget, seed 0, as the scoreboard wrote it before ``--algo sac`` (commit
fd9f0eb, a machine with a C++ compiler): adding SAC must not change PPO's runs."""


def test_learning_suite_ppo_commands_are_unchanged_and_sac_runs_its_own_recipe(monkeypatch):
    """``--algo ppo`` (the default) runs every entry word for word as before ``--algo`` existed; ``--algo sac`` adds
    ``algo=sac`` (and what SAC needs to run the task: the G1's clipped actions) and none of PPO's CPU recipe
    (epochs, compiled update, PPO's networks, env counts), which SAC's tuned config states instead."""
    sys.path.insert(0, str(BENCH))
    import horde.train.ppo as ppo
    import learning_suite as ls

    monkeypatch.setattr(ppo, "cpu_compiler", lambda: "/usr/bin/g++")
    assert {e.task for e in ls.ENTRIES} == {task for task, _ in PPO_COMMANDS}
    for e in ls.ENTRIES:
        for device in ("cpu", "cuda:0"):
            minutes = e.minutes if device == "cpu" else (e.gpu_minutes or e.minutes)
            expected = PPO_COMMANDS[(e.task, device)]
            for kw in ({}, {"algo": "ppo"}):
                assert ls.command_of(e, device=device, minutes=minutes, seed=0, quick=False, **kw) == expected
            assert ls.command_of(e, device=device, minutes=minutes, seed=0, quick=True) == expected + " --quick"
            sac = ls.command_of(e, device=device, minutes=minutes, seed=0, quick=False, algo="sac")
            argv = ls.script_argv(e, device=device, minutes=minutes, seed=0, quick=False, algo="sac")
            if e.script is None:  # a classic task: this suite's command, the learner by flag
                assert sac == expected.replace(" --seed 0", " --seed 0 --algo sac")
                assert "algo=sac" in argv
            else:
                assert "algo=sac" in sac.split() and sac.startswith(f"python benchmarks/{e.script}.py")
            ppo_recipe = set(e.cpu_overrides) - set(e.overrides)
            assert not ppo_recipe & set(argv), (e.task, argv)
            assert not any(a.startswith(("algo.num_learning_epochs", "algo.compile", "algo.policy.")) for a in argv)
            assert ("task.action_squash=clip" in argv) == (e.task == "g1-velocity")
            if device.startswith("cuda"):  # the GPU list: 4096 envs for every learner
                assert "num_envs=4096" in argv and "device=cuda:0" in argv
    g1 = next(e for e in ls.ENTRIES if e.task == "g1-velocity")
    assert ls.command_of(g1, device="cpu", minutes=60, seed=0, quick=False, algo="sac") == (
        "python benchmarks/learn_g1.py --minutes 60 algo=sac task.action_squash=clip seed=0")
    with pytest.raises(ValueError, match="unknown learner 'td3'"):
        ls.script_argv(g1, device="cpu", minutes=1, seed=0, quick=False, algo="td3")


def test_sac_runs_read_their_tuned_config(tmp_path, monkeypatch):
    """The scoreboard passes SAC no recipe of its own: ``configs/tuned/<task>_sac.yaml`` is composed for
    ``algo=sac`` (as ``<task>_ppo.yaml`` is for PPO), its ``cpu:`` profile included, so a SAC recipe written there
    is what ``learning_suite.py --algo sac`` trains with."""
    import horde.train.config as config

    configs = tmp_path / "configs"
    shutil.copytree(config.config_dir(), configs)
    (configs / "tuned" / "pendulum_sac.yaml").write_text(
        "# @package _global_\nalgo:\n  batch_size: 123\ncpu:\n  num_envs: 48\n")
    monkeypatch.setattr(config, "config_dir", lambda: configs)
    cfg, task, _ = config.compose(["task=pendulum", "algo=sac"])
    assert task == "pendulum" and config.algorithm_name(cfg) == "sac"
    assert cfg.algo.batch_size == 123 and cfg.num_envs == 48 and "num_envs=48" in cfg.profile
    cfg, _, _ = config.compose(["task=pendulum", "algo=sac", "num_envs=32"])  # the command line wins
    assert cfg.num_envs == 32
    cfg, _, _ = config.compose(["task=pendulum"])  # PPO keeps its own tuned file
    assert config.algorithm_name(cfg) == "ppo" and cfg.num_envs == 256


def test_time_split_is_the_share_of_the_training_clock():
    """The run loop's phase shares are of its wall time, which counts the evaluations; the scoreboard's split is of
    the training clock: sim 10 s, inference 10 s, learn 50 s of an 80 s clock."""
    sys.path.insert(0, str(BENCH))
    from learning import time_split

    summary = {"time_share": {"sim": 0.1, "inference": 0.1, "learn": 0.5, "other": 0.3}, "train_seconds": 100.0}
    assert time_split(summary, 80.0) == {"sim": 0.125, "inference": 0.125, "learn": 0.625, "other": 0.125}
    assert time_split(summary, 50.0)["other"] == 0.0  # a clock shorter than the phases: shares of their sum


def test_learning_suite_sac_quick_and_side_by_side_with_ppo(tmp_path):
    """``--algo sac`` on the pendulum and the cart-pole in quick mode: rows that carry ``algo=sac``, the same target
    and a trivial baseline measured in the run, the learner's time share, files named ``..._sac_quick``; then
    ``--compare`` sets it beside the latest committed PPO scoreboard in one table and one PNG; nothing written holds
    an absolute path."""
    proc = subprocess.run([sys.executable, str(BENCH / "learning_suite.py"), "--algo", "sac", "--quick", "--tasks",
                           "pendulum", "cartpole", "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (path,) = tmp_path.glob("*_learning_suite_cpu_sac_quick.json")
    data = json.loads(path.read_text())
    assert data["algo"] == "sac" and data["quick"] is True
    rows = {r["task"]: r for r in data["rows"]}
    assert sorted(rows) == ["cartpole", "pendulum"]
    for task, threshold in (("cartpole", 475.0), ("pendulum", -300.0)):
        r = rows[task]
        assert r["algo"] == "sac" and r["iterations"] == 2 and r["num_envs"] == 16, r
        assert [(t["key"], t["threshold"], t["op"]) for t in r["targets"]] == [("mean_return", threshold, ">=")]
        assert r["baselines"]["zero action"]["mean_return"] < threshold and r["defect"] is False
        assert r["command"].endswith("--algo sac --quick") and r["time_split"]["learn"] > 0
        assert (tmp_path / r["frame"]).stat().st_size > 1000
    table = path.with_suffix(".md").read_text()
    assert table.startswith("# horde learning scoreboard: SAC") and "learner `sac`" in table
    assert path.with_suffix(".png").stat().st_size > 10_000

    ppo = sorted((BENCH / "results").glob("*_learning_suite_cpu.json"))[-1]
    compare = run_benchmark("learning_suite.py", "--compare", str(ppo), str(path), "--out", str(tmp_path))
    assert compare.returncode == 0, compare.stdout[-2000:] + compare.stderr[-2000:]
    (md,) = tmp_path.glob("*_learning_suite_cpu_ppo_vs_sac_quick.md")
    side = md.read_text()
    assert side.startswith("# horde learning scoreboard: PPO and SAC side by side") and side in compare.stdout
    assert "| time to target | final | best | learner share |" in side
    for task in ("cartpole", "pendulum"):
        lines = [ln for ln in side.splitlines() if ln.startswith(f"| {task} |")]
        assert [ln.split(" | ")[2] for ln in lines] == ["PPO", "SAC"], lines
        assert all("zero action: mean_return" in ln for ln in lines)
    assert "| lift | | SAC | — | not run |" in side and "Targets reached: PPO " in side
    assert f"`{ppo.relative_to(REPO)}`" in side  # the inputs by their repository paths
    assert md.with_suffix(".png").stat().st_size > 10_000
    for written in [*tmp_path.glob("*.json"), *tmp_path.glob("*.md")]:
        text = written.read_text()
        assert not absolute_paths(text) and str(tmp_path) not in text, (written.name, absolute_paths(text))
    bad = run_benchmark("learning_suite.py", "--compare", str(ppo), str(tmp_path / "none.json"), "--out",
                        str(tmp_path))
    assert bad.returncode != 0 and "not a learning_suite results file" in bad.stderr + bad.stdout


def test_committed_results_name_no_absolute_paths():
    """Issue 72: the results in the repository carry repository-relative paths only (frames, plots, commands), not
    the folders of the machine that made them."""
    found = {str(p.relative_to(REPO)): absolute_paths(p.read_text())
             for p in sorted((BENCH / "results").rglob("*")) if p.suffix in (".json", ".jsonl", ".md")}
    assert not {k: v for k, v in found.items() if v}


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


def test_learn_place_quick_reports_the_share_on_the_pad_beside_zero_actions(tmp_path):
    out = run_benchmark("learn_place.py", "--quick", "--json", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    row = json.loads(out.stdout.strip().splitlines()[-1])
    assert row["iterations"] == 2 and row["target_fraction"] == 0.5 and row["target_key"] == "on_pad_fraction"
    assert 0.0 <= row["on_pad_fraction"] <= 1.0 and row["baseline_zero_action"]["on_pad_fraction"] == 0.0


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
    """SIGTERM (a scheduler's stop, ``kill``) during an iteration ends a learn script's training after that
    iteration, before the evaluation hook: the curve's last point is still the policy it stopped with, so its
    summary reports that one. (A SIGTERM during an evaluation stops before the next iteration: nothing to add.)"""
    import os
    import signal

    from benchhelp import _module

    learning = _module("learning.py")
    seen = []

    def evaluate(policy, task_cfg, seed):  # noqa: ARG001
        seen.append(seed)
        return {"score": float(len(seen))}

    def on_start(trainer) -> None:
        iterate = trainer.iterate

        def iterate_then_stop():
            out = iterate()
            if trainer.iteration == 2:  # the run loop's guard turns it into a stop after this iteration
                os.kill(os.getpid(), signal.SIGTERM)
            return out

        trainer.iterate = iterate_then_stop

    result = learning.train_with_evals(["task=cartpole", "num_envs=16", "max_iterations=50", "save_interval=1000"],
                                       evaluate, eval_every=1, minutes=5.0, describe=lambda p: str(p["score"]),
                                       on_start=on_start)
    assert result["iterations"] == 2, result["iterations"]
    assert [p["iteration"] for p in result["curve"]] == [1, 2]
    assert result["time_split"]["learn"] > 0
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
