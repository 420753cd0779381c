"""User mistakes end in one line and exit code 2, never a traceback or an out-of-memory kill: path arguments, sizes
and list lengths, a run that will not fit in memory, two processes on one run directory; and what a killed process
leaves behind is cleaned up. In this process through the CLI's entry point (``main``) where possible."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from horde.cli import main


def fails_in_one_line(capsys, args: list[str], expected: str) -> str:
    """``horde <args>`` exits with 2 and prints one line on stderr that contains ``expected``; returns it."""
    capsys.readouterr()
    code = main(list(args))
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and expected in lines[0], (args, code, lines)
    assert re.match(r"horde [a-z0-9-]+: error: ", lines[0]), lines  # play video=true reports as `horde video`
    return lines[0]


def ended_pid() -> int:
    """The PID of a process that has ended."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def copy_run(run: Path, dest: Path) -> Path:
    """A copy of a trained run's config and latest checkpoint (tests may change it; the session's run stays)."""
    dest.mkdir(parents=True)
    for name in ("config.yaml", "model_3.pt"):
        shutil.copy(run / name, dest / name)
    return dest


# --- paths ---------------------------------------------------------------------------------------------------------
def test_path_arguments_fail_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    folder = tmp_path / "folder"
    folder.mkdir()
    cases = [
        (["train", f"run_root={afile}"], "is a file, not a folder"),
        (["train", f"run_root={afile}/sub"], f"{afile} is a file, not a folder"),
        (["export", "run=whatever", "name=../../x"], "a bundle name is one folder name"),
        (["export", "run=whatever", f"name={tmp_path}/abs"], "a bundle name is one folder name"),
        (["export", "run=whatever", "name=.."], "a bundle name is one folder name"),
        (["export", "run=whatever", f"out={afile}"], "is a file, not a folder"),
        (["play", f"run={tmp_path}/nonexistent"], "no such run directory"),
        (["verify", f"run={tmp_path}/nonexistent"], "no such file or directory"),
        (["verify", f"run={folder}", f"checkpoint={tmp_path}/none.pt"], "no such file or directory"),
        (["sim2sim", f"run={tmp_path}/nonexistent"], "no such file or directory"),
        (["plot", f"run={folder}", f"out={folder}"], "is a folder; give a file name"),
        (["play", "run=x", "video=true", f"out={folder}"], "is a folder; give a file name"),
        (["play", "run=x", "video=true", f"out={afile}/x.mp4"], "is a file, not a folder"),
        (["play", "run=x", "viewer=file", f"out={afile}/x.json"], "is a file, not a folder"),
        (["actuator-net", "data=pd-demo", f"out={folder}"], "is a folder; give a file name"),
        (["actuator-net", f"data={tmp_path}/none.npz", f"out={tmp_path}/net.onnx"], "no such file"),
    ]
    for args, expected in cases:
        fails_in_one_line(capsys, args, expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "folder"], "nothing was written"
    assert not any(folder.iterdir())


def test_read_only_run_root(tmp_path, capsys, monkeypatch):
    """Root may write anywhere, so the read-only folder is os.access's answer, faked."""
    ro = tmp_path / "ro"
    ro.mkdir()
    real = os.access
    monkeypatch.setattr("horde.sim.fields.os.access",
                        lambda p, mode: False if Path(p) == ro else real(p, mode))
    fails_in_one_line(capsys, ["train", f"run_root={ro}/runs"], f"{ro} is not writable by this user")
    fails_in_one_line(capsys, ["plot", f"run={tmp_path}", f"out={ro}/curves.png"], "is not writable")
    assert not any(ro.iterdir())


def test_export_into_a_file_where_exported_should_be(tiny_run, tmp_path, capsys):
    run = copy_run(tiny_run, tmp_path / "run")
    (run / "exported").write_text("a file")
    fails_in_one_line(capsys, ["export", f"run={run}"], "is a file, not a folder")
    assert sorted(p.name for p in run.iterdir()) == ["config.yaml", "exported", "model_3.pt"]


# --- sizes and list lengths ----------------------------------------------------------------------------------------
def test_sizes_and_lists_have_bounds(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cases = [
        (["train", "algo.policy.actor_hidden_dims=[64,0]"],
         "algo.policy.actor_hidden_dims=[64, 0]: each value must be >= 1 and <= 8192"),
        (["train", "algo.policy.critic_hidden_dims=[]"], "algo.policy.critic_hidden_dims=[]: needs 1 to 16 values"),
        (["train", "algo.policy.actor_hidden_dims=[1000000]"], "<= 8192"),
        (["train", "algo.policy.rnn_hidden_dim=0"], "algo.policy.rnn_hidden_dim=0: must be >= 1"),
        (["train", "algo.policy.obs_normalization_until=0"], "must be >= 1"),
        (["train", "task=lift", "task.default_joint_pos=[0.0]"],
         "task.default_joint_pos=[0.0]: needs 9 values (one per joint of robot=arm7), got 1"),
        (["train", "task=lift", "task.robot=yam", "task.action_scale=[0.5]"],
         "task.action_scale=[0.5]: needs 6 values (one per arm joint of robot=yam), got 1"),
        (["train", "task=reach", "task.target_low=[0.3,0.1]"], "task.target_low=[0.3, 0.1]: needs 3 values"),
        (["train", "task=ant", "task.joint_stiffness=[1.0,2.0]"], "needs 8 values"),
        (["train", "num_envs=0"], "num_envs=0: must be >= 1"),
        (["train", "task=quadruped", "task.standing_fraction=5"], "task.standing_fraction=5.0: must be >= 0 and <= 1"),
        (["train", "task=quadruped", "task.randomization.push_interval=-1"],
         "task.randomization.push_interval=-1.0: must be >= 0"),
        (["train", "task=ant", "task.joint_damping=[1.0,1.0,1.0,1.0,1.0,1.0,1.0,-1.0]"], "each value must be >= 0"),
        (["train", "max_iterations=1e11"], "max_iterations=100000000000: must be >= 1 and <= 1000000000"),
        (["train", "max_iterations=2.5"], "max_iterations=2.5: max_iterations takes a whole number"),
        (["play", "run=x", "episodes=0"], "episodes=0: must be at least 1"),
        (["export", "run=x", "episodes=10"], "episodes=10: the closed-loop rung needs at least 64"),
        (["export", "run=x", "sim2sim_episodes=-1"], "must be at least 0"),
        (["sim2sim", f"run={tmp_path}", "episodes=0"], "must be at least 1"),
        (["play", "run=x", "video=true", "envs=0"], "envs=0: must be at least 1"),
        (["actuator-net", "data=pd-demo", "out=net.onnx", "hidden=64,100000"], "each 1 to 8192"),
    ]
    for args, expected in cases:
        fails_in_one_line(capsys, args, expected)
    assert not any(tmp_path.iterdir())


def test_list_rules_of_the_schema():
    """Float lists keep their default's length unless declared otherwise; declared lists check items and length."""
    from dataclasses import dataclass

    from horde.sim.fields import FieldError, bounded_list, check_fields

    @dataclass(kw_only=True)
    class Cfg:
        gains: list[float] = bounded_list([1.0, 2.0], gt=0, min_len=1)
        """Any number of positive gains."""
        ranges: list[float] = bounded_list([0.0, 1.0])  # declared: any length
        fixed: list[float] = bounded_list([0.0, 1.0], min_len=2, max_len=2)

    check_fields(Cfg(gains=[1.0, 2.0, 3.0], ranges=[]))
    with pytest.raises(FieldError, match=r"gains=\[1.0, -1.0\]: each value must be > 0 \(got -1.0\)"):
        check_fields(Cfg(gains=[1.0, -1.0]), "task")
    with pytest.raises(FieldError, match=r"fixed=\[0.0\]: needs 2 values, got 1"):
        check_fields(Cfg(fixed=[0.0]))
    assert Cfg().gains is not Cfg().gains, "a fresh default list each time"


# --- run length ----------------------------------------------------------------------------------------------------
def test_the_long_run_warning_states_the_figure():
    from horde.train.runner import long_run_warning

    assert long_run_warning("cartpole", 100, 0, 2.1) is None
    assert long_run_warning("cartpole", 2_592_001, 1, 1.0) is None  # 30 days to the second: not over
    assert long_run_warning("cartpole", 2_592_002, 1, 1.0) is not None
    assert long_run_warning("g1-velocity", 1_000_000, 2, 3.0) == (
        "[g1-velocity] warning: max_iterations=1000000 at 3 s an iteration takes 35 days more; Ctrl-C saves a "
        "checkpoint and stops")
    assert "max_iterations=1000000000 at 2.1 s an iteration takes 67 years more" in long_run_warning(
        "cartpole", 10**9, 2, 2.1)


class _SlowLearner:
    """The runner's learner protocol around nothing: each iteration takes ``iter_s`` on a fake clock."""

    def __init__(self, run_dir, max_iterations, iter_s, clock):
        from types import SimpleNamespace

        import torch

        from horde.train.session import DistInfo

        self.cfg = SimpleNamespace(max_iterations=max_iterations, log_interval=1000, save_interval=1000, num_envs=1,
                                   logger="tensorboard")
        self.task, self.run_dir, self.quiet, self.iteration, self.device = "slow", run_dir, False, 0, "cpu"
        self.num_envs, self.dist, self.steps_per_iteration, self.writer, self.label = 1, DistInfo(), 1, None, "fake"
        self.timer = SimpleNamespace(start=lambda: None,
                                     collect=lambda: {"sim": 0.0, "inference": 0.0, "learn": 0.0, "other": 0.0})
        self.iter_s, self.clock, self.net = iter_s, clock, torch.nn.Linear(1, 1)
        self.learning_rate = 1e-3

    def start(self):
        pass

    def iterate(self):
        self.clock[0] += self.iter_s
        self.iteration += 1
        return {}

    def pop_episode_stats(self):
        return {"episodes": 0}

    def checkpoint(self):
        return self.run_dir / f"model_{self.iteration}.pt"

    def noise_std(self):
        return 1.0

    def policy(self):
        return self.net


@pytest.mark.parametrize("max_iterations, warned", [(10**8, True), (1000, False)])
def test_a_run_of_more_than_30_days_is_warned_about_once(tmp_path, capsys, monkeypatch, max_iterations, warned):
    """After its second iteration (the first compiles), at that iteration's time; the run goes on."""
    from types import SimpleNamespace

    from horde.train import runner

    clock = [0.0]
    monkeypatch.setattr(runner, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    learner = _SlowLearner(tmp_path, max_iterations, 2.1, clock)
    runner.run(learner, on_iteration=lambda lr: lr.iteration >= 4)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "warning" in ln]
    assert learner.iteration == 4
    assert lines == (["[slow] warning: max_iterations=100000000 at 2.1 s an iteration takes 7 years more; Ctrl-C "
                      "saves a checkpoint and stops"] if warned else [])


# --- memory --------------------------------------------------------------------------------------------------------
def test_every_builtin_task_has_measured_memory():
    from horde.envs import TASKS
    from horde.train.memory import TASK_MEMORY

    builtin = {n for n, s in TASKS.items() if s.env_cls.__module__.startswith("horde.")}
    assert builtin <= set(TASK_MEMORY), f"measure with benchmarks/memory_per_env.py: {builtin - set(TASK_MEMORY)}"


def test_memory_estimate_grows_with_the_run():
    from horde.train.config import compose
    from horde.train.memory import FIXED, TASK_MEMORY, estimate

    cfg, task, _ = compose(["task=quadruped", "num_envs=1000"])
    one = estimate(cfg, task)
    assert one.total > FIXED and one.envs >= 1000 * TASK_MEMORY["quadruped"].cpu
    assert estimate(cfg, task, num_envs=2000).total - FIXED == pytest.approx(2 * (one.total - FIXED), rel=1e-3)
    cfg.algo.num_steps_per_env *= 4
    assert estimate(cfg, task).learner > 3 * one.learner
    assert estimate(cfg, task, training=False).learner == 0
    assert estimate(cfg, task, device="cuda").envs == pytest.approx(1.25 * 1000 * TASK_MEMORY["quadruped"].cuda,
                                                                     rel=1e-3)
    shac, task, _ = compose(["task=reach", "algo=shac", "num_envs=64"])
    assert estimate(shac, task).learner > 64 * shac.algo.horizon * TASK_MEMORY["reach"].tape  # the tape


def test_a_run_that_does_not_fit_is_refused(tmp_path, capsys, monkeypatch):
    """Refused in one line with the estimate and what the machine has (a fake 2 GB), before anything is built."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("horde.train.memory.available_bytes", lambda device: 2_000_000_000)
    line = fails_in_one_line(capsys, ["train", "task=quadruped", "num_envs=10000000", f"run_root={tmp_path}"],
                             "num_envs=10000000: needs about ")
    assert "TB of memory (estimate: envs " in line and "this machine has 2.0 GB available" in line
    fit = int(line.split("at most about ")[1].split()[0].replace(",", ""))
    assert 1000 < fit < 100_000
    fails_in_one_line(capsys, ["play", "run=x", "episodes=0"], "episodes=0")  # sizes are checked before memory
    assert not any(tmp_path.iterdir()), "nothing was written"

    from horde.train.config import compose
    from horde.train.memory import check_run

    cfg, task, _ = compose(["task=quadruped", "num_envs=10000000", "memory_check=false"])
    check_run(cfg, task)  # skipped
    cfg, task, _ = compose(["task=quadruped", f"num_envs={fit}"])
    check_run(cfg, task)  # what it said fits, fits


def test_play_episodes_that_do_not_fit(tiny_run, capsys, monkeypatch):
    monkeypatch.setattr("horde.train.memory.available_bytes", lambda device: 500_000_000)
    fails_in_one_line(capsys, ["play", f"run={tiny_run}", "episodes=2000000000"],
                      "episodes=2000000000: needs about")


@pytest.mark.parametrize("error", [
    MemoryError(),
    RuntimeError("Failed to allocate 53687091200 bytes on device 'cuda:0'"),
    "torch",
])
def test_an_allocation_that_fails_after_the_guard_ends_in_one_line(tmp_path, capsys, monkeypatch, error):
    """The guard's estimate is a model (a plugin task, another process taking memory, a GPU it was not measured on):
    an allocation that fails anyway ends in one line, exit code 2, naming what failed, not in a traceback."""
    import torch

    if error == "torch":  # torch's CUDA message, as a CUDA allocation failure words it
        error = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                                       "of 79.15 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this "
                                       "process has 78.1 GiB memory in use. Of the allocated memory ...")

    def fail(overrides):
        raise error

    monkeypatch.setitem(__import__("horde.cli", fromlist=["COMMANDS"]).COMMANDS, "train", fail)
    line = fails_in_one_line(capsys, ["train", "task=quadruped"], "out of memory: ")
    assert "lower num_envs" in line
    if isinstance(error, torch.OutOfMemoryError):
        assert "Tried to allocate 2.00 GiB" in line and "1.02 GiB is free" in line and "Of the allocated" not in line
    elif isinstance(error, RuntimeError):
        assert "Failed to allocate 53687091200 bytes on device 'cuda:0'" in line
    monkeypatch.setitem(__import__("horde.cli", fromlist=["COMMANDS"]).COMMANDS, "train",
                        lambda overrides: (_ for _ in ()).throw(RuntimeError("Failed in another way")))
    with pytest.raises(RuntimeError, match="another way"):  # any other error is a bug: its traceback stays
        main(["train", "task=quadruped"])


def test_available_memory_without_psutil_and_without_cuda(monkeypatch):
    import torch

    from horde.train import memory

    with_psutil = memory.available_bytes("cpu")
    monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil now raises ImportError
    without = memory.available_bytes("cpu")
    assert with_psutil > 0 and without > 0
    calls = []
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda i: calls.append(i) or (3_000_000_000, 8_000_000_000))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    memory.available_bytes("cpu")
    assert calls == [], "a CPU run never asks CUDA"
    assert memory.available_bytes("cuda") == 3_000_000_000 and memory.available_bytes("cuda:1") == 3_000_000_000
    assert calls == [0, 1]
    est = memory.MemoryEstimate(num_envs=10, device="cuda:1", envs=5_000_000_000, learner=0)
    with pytest.raises(memory.InsufficientMemoryError, match="cuda:1 has 3.0 GB available"):
        memory.check_fits(est)


# --- resume, torchrun and the command line ---------------------------------------------------------------------------
def test_resume_to_a_total_the_run_has_reached_is_refused(tiny_run, tmp_path, capsys):
    """max_iterations is the total: a resume that would end at once is refused with the run's iteration and what to
    pass for more, and nothing in the run changes."""
    run = copy_run(tiny_run, tmp_path / "run")
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    fails_in_one_line(capsys, ["train", f"resume={run}", "max_iterations=2"],
                      f"resume={run}: max_iterations=2 is the total, and the run is at iteration 3: pass "
                      f"max_iterations=5 for 2 more")
    fails_in_one_line(capsys, ["train", f"resume={run}", "max_iterations=3"],
                      "max_iterations=3 is the total, and the run is at iteration 3 already: pass max_iterations=6 "
                      "for 3 more")
    fails_in_one_line(capsys, ["train", f"resume={run}"],
                      f"resume={run}: the run is at iteration 3, the max_iterations=3 it was given (the total): pass "
                      f"max_iterations=6 for 3 more")
    fails_in_one_line(capsys, ["train", f"resume={run}", "max_iterations=1e11"],
                      "error: max_iterations=100000000000: must be >= 1 and <= 1000000000")  # the user's, not the run's
    fails_in_one_line(capsys, ["train", f"resume={run}", "max_iterations=2.5"],
                      "error: max_iterations=2.5: max_iterations takes a whole number")
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


def test_distributed_outside_torchrun_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    line = fails_in_one_line(capsys, ["train", "task=cartpole", "distributed=true", f"run_root={tmp_path}"],
                             "distributed=true: this process was not started by torchrun (no WORLD_SIZE in its "
                             "environment), so it would train alone")
    assert "torchrun --nproc_per_node=<N> -m horde train ... distributed=true" in line
    assert not any(tmp_path.iterdir()), "nothing was written"


def test_a_key_given_twice_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fails_in_one_line(capsys, ["train", "task=cartpole", "seed=1", "seed=2"],
                      "seed is given twice (seed=1 and seed=2); give each key once")
    fails_in_one_line(capsys, ["train", "task=cartpole", "algo.learning_rate=1e-3", "+algo.learning_rate=3e-4"],
                      "algo.learning_rate is given twice (algo.learning_rate=1e-3 and +algo.learning_rate=3e-4)")
    assert not any(tmp_path.iterdir()), "nothing was written"


# --- the run directory's lock ----------------------------------------------------------------------------------------
def hold_lock(run: Path) -> subprocess.Popen:
    """Another process that holds ``run``'s lock until killed."""
    code = ("import sys, time; from horde.train.session import RunLock; RunLock(sys.argv[1]).acquire(); "
            "print('held', flush=True); time.sleep(120)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(run)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_is_refused_naming_the_holder(tiny_run, tmp_path, capsys):
    from horde.train.session import LOCK_NAME, RunDirError, RunLock

    run = copy_run(tiny_run, tmp_path / "run")
    before = (run / "config.yaml").read_text()
    holder = hold_lock(run)
    try:
        line = fails_in_one_line(capsys, ["train", f"resume={run}", "max_iterations=5"],
                                 f"in use by process {holder.pid}")
        assert f"kill {holder.pid}" in line
        with pytest.raises(RunDirError, match=f"process {holder.pid}"):
            RunLock(run).acquire()
    finally:
        holder.kill()
        holder.wait()
    assert (run / "config.yaml").read_text() == before, "the refused process wrote nothing"
    with RunLock(run) as lock:  # the kernel dropped the killed holder's lock: the stale file is taken over
        assert lock.holder()[0] == os.getpid()
        with pytest.raises(RunDirError, match=f"process {os.getpid()}"):
            RunLock(run).acquire()  # the same process, a second writer: refused too
    assert not (run / LOCK_NAME).exists(), "released on the way out"


def test_stale_lock_file_of_a_dead_process(tmp_path):
    from horde.train.session import LOCK_NAME, RunLock

    (tmp_path / LOCK_NAME).write_text(f"{ended_pid()} {socket.gethostname()}\n")
    with RunLock(tmp_path) as lock:
        assert lock.holder()[0] == os.getpid()
    assert not (tmp_path / LOCK_NAME).exists()


def test_run_directory_locks_cleans_and_removes_an_unused_new_one(tiny_run, tmp_path):
    from horde.train.session import LOCK_NAME, RunLock, run_directory

    with run_directory(tmp_path / "runs", "cartpole") as new:
        assert (new / LOCK_NAME).is_file() and RunLock(new).holder()[0] == os.getpid()
    assert not (tmp_path / "runs").exists(), "a new run directory left empty is removed, and the folders made for it"

    run = copy_run(tiny_run, tmp_path / "runs" / "cartpole" / "old")
    (run / ".model_9.pt.k2x9ab.tmp").write_bytes(b"half a checkpoint")
    other = copy_run(tiny_run, tmp_path / "runs" / "cartpole" / "other")
    (other / ".model_2.pt.zz11.tmp").write_bytes(b"half")
    busy = copy_run(tiny_run, tmp_path / "runs" / "cartpole" / "busy")
    (busy / ".model_4.pt.aa22.tmp").write_bytes(b"being written")
    holder = hold_lock(busy)
    try:
        with run_directory(tmp_path / "runs", "cartpole", resume=run) as d:
            assert d == run and not list(run.glob(".model_*"))
        with run_directory(tmp_path / "runs", "cartpole") as new:  # a new run sweeps its siblings' leftovers
            (new / "config.yaml").write_text("kept")
        assert new.is_dir() and not (new / LOCK_NAME).exists()
        assert not list(other.glob(".model_*")), "an idle run's leftovers are removed"
        assert list(busy.glob(".model_*")), "a live writer's temporary file stays"
    finally:
        holder.kill()
        holder.wait()


def test_checkpoint_temporaries_match_what_cleanup_removes(tmp_path, monkeypatch):
    import torch

    from horde.train import checkpoint

    seen = []

    def killed(src, dst):
        seen.append(Path(src).name)
        raise KeyboardInterrupt  # interrupted between the write and the rename

    monkeypatch.setattr(checkpoint.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save_checkpoint(tmp_path / "model_5.pt", {"iteration": 5, "w": torch.ones(2)})
    assert fnmatch.fnmatch(seen[0], checkpoint.TEMP_GLOB) and not any(tmp_path.iterdir()), "removed on the way out"
    (tmp_path / seen[0]).write_bytes(b"left by a SIGKILL")
    (tmp_path / "model_4.pt").write_bytes(b"a checkpoint")
    assert [p.name for p in checkpoint.remove_temporaries(tmp_path)] == [seen[0]]
    assert [p.name for p in tmp_path.iterdir()] == ["model_4.pt"]


# --- export staging folders ----------------------------------------------------------------------------------------
def test_stale_export_staging_is_removed(tmp_path):
    import tempfile

    from horde.deploy.bundle import remove_stale_staging

    dead = Path(tempfile.mkdtemp(prefix=f".cartpole_it3_fp32.staging-{ended_pid()}-", dir=tmp_path))
    (dead / "policy.onnx").write_bytes(b"half")
    live = Path(tempfile.mkdtemp(prefix=f".cartpole_it3_fp16.staging-{os.getpid()}-", dir=tmp_path))
    old_style = Path(tempfile.mkdtemp(prefix=".cartpole_it2_fp32.staging-", dir=tmp_path))  # before the PID
    bundle = tmp_path / "cartpole_it3_fp32"
    bundle.mkdir()
    assert sorted(remove_stale_staging(tmp_path)) == sorted([dead, old_style])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, bundle.name])


def test_sigterm_during_export_runs_the_cleanup():
    from horde.deploy.bundle import _sigterm_exits

    cleaned = []
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as stop:
        with _sigterm_exits():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)  # the handler raises here
            finally:
                cleaned.append(True)
    assert stop.value.code == 128 + signal.SIGTERM and cleaned == [True]
    assert signal.getsignal(signal.SIGTERM) == previous
