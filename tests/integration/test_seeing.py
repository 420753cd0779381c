"""Videos and plots: rendered headless on a machine with no display and no GPU."""

import imageio.v2 as imageio
import numpy as np
from clihelp import run_cli

from horde.train.plots import plot_run
from horde.train.video import record_video


def test_video_has_the_expected_frames_and_motion(tiny_run, tmp_path):
    path, frames = record_video(tiny_run, envs=4, steps=40, out=tmp_path / "v.mp4")
    reader = imageio.get_reader(str(path))
    got = [f for f in reader]
    reader.close()
    assert frames == 41 and len(got) == 41
    assert got[0].ndim == 3 and got[0].shape[2] == 3
    assert got[0].std() > 10, "a frame shows a scene, not a flat colour"
    assert np.abs(got[-1].astype(int) - got[0].astype(int)).mean() > 0.5, "the robot moves between frames"


def test_play_video_true_through_the_cli(tiny_run):
    proc = run_cli("play", f"run={tiny_run}", "video=true", "envs=2", "steps=10", cwd=tiny_run)
    assert proc.returncode == 0, proc.stderr
    assert list((tiny_run / "videos").glob("*.mp4"))


def test_plot_has_the_expected_curves(tiny_run):
    path, panels = plot_run(tiny_run)
    assert panels["Episode return"] == ["Train/mean_return"]
    assert panels["Episode length [steps]"] == ["Train/mean_episode_length"]
    assert "Reward/alive" in panels["Reward terms (per episode, scaled)"]
    assert "Reward/upright" not in panels["Reward terms (per episode, scaled)"], "zero-scale terms are left out"
    assert panels["Wall-time share"] == ["Perf/share_sim", "Perf/share_inference", "Perf/share_learn",
                                         "Perf/share_other"]
    img = imageio.imread(path)
    assert img.shape[0] >= 600 and img.shape[1] >= 900 and img.std() > 5


def test_sweep_runs_each_combination(tmp_path):
    proc = run_cli("train", "-m", "seed=0,1", "task=cartpole", "num_envs=16", "max_iterations=1",
                   f"run_root={tmp_path}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("== sweep run") == 2
    assert len(list((tmp_path / "cartpole").iterdir())) == 2


def test_articulated_tasks_render_and_move():
    import torch

    from horde.envs import make
    from horde.envs.render import render_frame

    from horde.envs import task_names

    articulated = [t for t in task_names() if t not in ("cartpole", "cartpole-swingup", "pendulum")]
    assert {"ant", "humanoid", "quadruped", "quadruped-rough", "reach"} <= set(articulated)
    for task in articulated:  # every articulated task has a renderer, and its robot moves in the frames
        env = make(task, num_envs=2, seed=0)
        first = render_frame(env, [0, 1])
        g = torch.Generator().manual_seed(0)
        for _ in range(20):
            env.step(torch.rand(2, env.num_actions, generator=g) * 2 - 1)
        later = render_frame(env, [0, 1])
        assert first.shape == later.shape == (240, 640, 3)
        assert first.std() > 10, task
        assert np.abs(later.astype(int) - first.astype(int)).mean() > 0.2, f"{task}: the robot moves between frames"


def test_a_video_of_command_sets_holds_each_envs_command(tmp_path, monkeypatch):
    """``play video=true commands=...``: env k holds the middle command of set k (cycled over the sets) on every
    frame of the video; a task without velocity commands is refused in one line."""
    import pytest
    import torch

    from horde.train import command_sets
    from horde.train.command_sets import command_set
    from horde.train.pretrained import resolve

    seen = []
    hold = command_sets.hold_command

    def spy(env, command):
        hold(env, command)
        col = env.obs_names.index("cmd_vx")
        seen.append((env.command.clone(), env.obs[:, col:col + 3].clone()))

    monkeypatch.setattr(command_sets, "hold_command", spy)
    path, frames = record_video(resolve("quadruped"), envs=3, steps=3, render="2d", out=tmp_path / "sets.mp4",
                                commands=("forward", "turning"))
    assert frames == 4 and path.is_file()
    want = torch.stack([command_set("forward", 8)[3], command_set("turning", 8)[3], command_set("forward", 8)[3]])
    assert len(seen) == 4  # once after the reset, once after every step
    for command, observed in seen:
        assert torch.equal(command, want) and torch.equal(observed, want)
    with pytest.raises(ValueError, match="commands= plays velocity tasks"):
        record_video(resolve("cartpole"), envs=1, steps=1, out=tmp_path / "c.mp4", commands=("forward",))
