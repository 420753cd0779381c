"""Issue 72 item 7: ``horde export`` and ``horde verify`` say what they are doing as each stage runs (on stderr,
with the loops' steps and an ETA), the library stays silent unless given ``progress=``, and a ``horde`` process
freezes the garbage collector's objects at exit, so Python's shutdown does not spend seconds collecting them."""

import re
import subprocess
import sys

from horde import cli
from horde.deploy import verify


def in_order(lines: list[str], wanted: list[str]) -> None:
    """Each pattern of ``wanted`` matches a line of ``lines``, each after the previous one's."""
    at = 0
    for pattern in wanted:
        hits = [k for k in range(at, len(lines)) if re.search(pattern, lines[k])]
        assert hits, (pattern, lines[at:at + 20])
        at = hits[0] + 1


def test_export_and_verify_print_each_stage(tiny_run, capsys, monkeypatch):
    monkeypatch.setattr(cli.Stages, "SECONDS", 0.0)  # a line every step: the ETA shows on a 1-second loop too
    capsys.readouterr()
    assert cli.main(["export", f"run={tiny_run}", "name=progress"]) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    in_order(lines, [
        r"^export \[\d+s\]: cartpole iteration 3 \(model_3\.pt\) -> .*/exported/progress, fp32$",
        r"^export \[\d+s\]: building 1 env of cartpole",
        r"^export \[\d+s\]: exporting policy\.onnx \(fp32, opset 18\)",
        r"^export \[\d+s\]: policy\.onnx written and checked",
        r"^export \[\d+s\]: recording golden I/O \(torch, 16 envs x 200 steps\): building the envs",
        r"^export: recording golden I/O .* 100/200 steps, ETA \d+s$",
        r"^export: recording golden I/O .* 200/200 steps, \d+s$",
        r"^export \[\d+s\]: rung 1, open-loop parity: onnxruntime on the recording \(200 steps x 16 envs\)",
        r"^export \[\d+s\]: rung 1, open-loop parity: PASS",
        r"^export \[\d+s\]: rung 2, closed loop \(64 envs x 1 episode\): torch policy, building the envs",
        r"^export: rung 2, closed loop .*, torch policy 100/500 steps, ETA \d+s$",
        r"^export: rung 2, closed loop .*, torch policy 500/500 steps, \d+s$",
        r"^export \[\d+s\]: rung 2, closed loop .*: onnxruntime policy, building the envs",
        r"^export: rung 2, closed loop .*, onnxruntime policy 500/500 steps, \d+s$",
        r"^export \[\d+s\]: rung 2, closed loop: PASS",
        r"^export \[\d+s\]: rung 3, sim-to-sim: skipped \(no sim-to-sim \(MuJoCo\) check for task 'cartpole'",
        r"^export \[\d+s\]: runner self-test: python -I run_policy\.py --selftest",
        r"^export \[\d+s\]: runner self-test: PASS",
    ])
    assert "PASS" in out.splitlines()[-1] and "[2/3] closed loop" in out, "the report stays on stdout"
    assert "export" not in out.replace("exported", ""), "progress goes to stderr only"

    assert cli.main(["verify", f"run={tiny_run / 'exported' / 'progress'}"]) == 0
    in_order(capsys.readouterr().err.splitlines(), [
        r"^verify \[\d+s\]: progress: the policy of .*model_3\.pt$",
        r"^verify \[\d+s\]: rung 0: golden_io\.npz through the checkpoint's torch policy \(200 steps\)",
        r"^verify \[\d+s\]: rung 0: PASS",
        r"^verify \[\d+s\]: rung 1, open-loop parity: PASS",
        r"^verify: rung 2, closed loop .*, onnxruntime policy 500/500 steps",
        r"^verify \[\d+s\]: rung 2, closed loop: PASS",
        r"^verify \[\d+s\]: runner self-test: PASS",
    ])


def test_the_ladder_reports_through_the_callback_and_is_silent_without_one(tiny_run, capsys):
    """Library use: ``progress=`` gets the stage lines and each loop up to its total; None prints nothing."""
    from horde.deploy import load_policy
    from horde.deploy.onnx_export import io_spec

    policy, _, cfg, _ = load_policy(tiny_run)
    io = io_spec(policy, 1)
    calls = []
    capsys.readouterr()
    golden = verify.record_golden(policy, "cartpole", cfg.task, io, num_envs=4, steps=20,
                                  progress=lambda *a: calls.append(a))
    assert calls[0] == ("recording golden I/O (torch, 4 envs x 20 steps): building the envs",)
    assert [c[1:] for c in calls[1:]] == [(k, 20) for k in range(1, 21)]
    silent = verify.record_golden(policy, "cartpole", cfg.task, io, num_envs=4, steps=20)
    assert (silent["actions"] == golden["actions"]).all()
    assert capsys.readouterr() == ("", "")


def test_the_process_freezes_the_collector_at_exit(tmp_path):
    """Python's shutdown collects every object still alive several times over (0.6-1.5 million after an export:
    1.5-4 s here after the last line, 10-37 s on a contended machine); horde's last exit handler freezes them
    first. A handler registered before ``main`` runs after it and sees the objects frozen."""
    code = ("import atexit, gc, sys\n"
            "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > 0, flush=True))\n"
            "from horde.cli import main\n"
            "code = main(['export', '--help'])\n"
            "print('frozen before exit:', gc.get_freeze_count() > 0, flush=True)\n"
            "sys.exit(code)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[-2:] == ["frozen before exit: False", "frozen at exit: True"], proc.stdout


def test_rung3_and_sim2sim_print_their_mujoco_steps(tmp_path, capsys, monkeypatch):
    """A task with a MuJoCo twin (reach, 50-step episodes): export's rung 3 and ``horde sim2sim`` give the MuJoCo
    loop's steps, episodes still running and ETA."""
    monkeypatch.setattr(cli.Stages, "SECONDS", 0.0)
    assert cli.main(["train", "task=reach", "num_envs=16", "max_iterations=1", "task.episode_length=50",
                     f"run_root={tmp_path}"]) == 0
    (run,) = (tmp_path / "reach").iterdir()
    capsys.readouterr()
    assert cli.main(["export", f"run={run}", "name=b", "sim2sim_episodes=2"]) == 0
    in_order(capsys.readouterr().err.splitlines(), [
        r"^export: rung 2, closed loop .*, onnxruntime policy 50/50 steps, \d+s$",
        r"^export \[\d+s\]: rung 3, sim-to-sim: loading the task's MuJoCo model and twin$",
        r"^export \[\d+s\]: rung 3, sim-to-sim: 2 MuJoCo episodes of reach, up to 50 steps each$",
        r"^export: rung 3, sim-to-sim \(2 MuJoCo episodes\) 25/50 steps, 2/2 episodes running, ETA \d+s$",
        r"^export: rung 3, sim-to-sim \(2 MuJoCo episodes\) 50/50 steps, 2/2 episodes running, \d+s$",
        r"^export \[\d+s\]: rung 3, sim-to-sim: (PASS|FAIL \(advisory\))$",
    ])
    assert cli.main(["sim2sim", f"run={run / 'exported' / 'b'}", "episodes=2"]) == 0
    out, err = capsys.readouterr()
    in_order(err.splitlines(), [
        r"^sim2sim \[\d+s\]: b: 2 MuJoCo episodes of reach, up to 50 steps each$",
        r"^sim2sim: b \(2 MuJoCo episodes\) 1/50 steps, 2/2 episodes running$",
        r"^sim2sim: b \(2 MuJoCo episodes\) 49/50 steps, 2/2 episodes running, ETA \d+s$",
        r"^sim2sim: b \(2 MuJoCo episodes\) 50/50 steps, 2/2 episodes running, \d+s$",
    ])
    assert out.startswith("b: MuJoCo ")
