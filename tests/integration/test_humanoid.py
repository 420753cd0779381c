"""The humanoid task: merged multi-dof joints resolved to the right hinges, stability under random torques, video."""

import imageio.v2 as imageio
import numpy as np
import pytest
import torch
from clihelp import run_main

from horde.envs import make
from horde.envs.humanoid import GEARS, JOINTS


@pytest.fixture(scope="module")
def humanoid_run(tmp_path_factory):
    """A 2-iteration humanoid run made through the CLI with the tuned config (plumbing, not competence)."""
    root = tmp_path_factory.mktemp("runs")
    assert run_main("train", "task=humanoid", "num_envs=8", "max_iterations=2", "save_interval=1",
                     f"run_root={root}") == 0
    (run,) = list((root / "humanoid").iterdir())
    return run


def test_torques_reach_each_hinge_inside_newtons_merged_joints():
    """Newton makes one multi-dof joint of each body's hinges (abdomen_z + abdomen_y, the hips, ankles, shoulders):
    action k must drive dof 6 + k with gear k, and the observation must read that dof back."""
    env = make("humanoid", num_envs=2, seed=0)
    w = env.world
    assert w.joint_q.shape == (2, 28) and w.joint_qd.shape == (2, 27) and env.obs_dim == 10 + 3 * 21
    a = torch.linspace(-0.9, 0.9, 21).repeat(2, 1)
    a[1] = 3.0  # clipped to 1: full gear
    env.step(a)
    torch.testing.assert_close(w.joint_f[0, 6:], a[0] * torch.tensor(GEARS), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(w.joint_f[1, 6:], torch.tensor(GEARS))
    assert (w.joint_f[:, :6] == 0).all(), "no force on the free root"
    torch.testing.assert_close(env.obs[:, 10:31], w.joint_q[:, 7:])
    torch.testing.assert_close(env.obs[:, 31:52], w.joint_qd[:, 6:])
    assert env.describe()["action_names"] == list(JOINTS) and env.action_scale() == list(GEARS)


def test_starts_standing_and_falls_under_random_torques():
    env = make("humanoid", num_envs=8, seed=0)
    torso_z = env.world.root_pose[:, 2]
    assert torch.allclose(torso_z, torch.full((8,), env.cfg.root_height))
    assert torch.allclose(env.obs[:, 3], torch.full((8,), -1.0)), "upright: gravity along -z in the torso frame"
    g = torch.Generator().manual_seed(0)
    for _ in range(100):
        env.step(torch.rand(8, 21, generator=g) * 2 - 1)
    stats = env.pop_episode_stats()
    assert stats["episodes"] >= 8 and stats["termination_rate"] == 1.0, "random torques topple it"


def test_humanoid_video_has_the_expected_frames_and_motion(humanoid_run, tmp_path):
    from horde.train.video import record_video

    path, frames = record_video(humanoid_run, envs=2, steps=30, out=tmp_path / "h.mp4")
    reader = imageio.get_reader(str(path))
    got = [f for f in reader]
    reader.close()
    assert frames == 31 and len(got) == 31
    assert got[0].ndim == 3 and got[0].shape[2] == 3
    assert got[0].std() > 10, "a frame shows a scene, not a flat colour"
    assert np.abs(got[-1].astype(int) - got[0].astype(int)).mean() > 0.5, "the humanoid moves between frames"


def test_humanoid_play_video_true_through_the_cli(humanoid_run):
    assert run_main("play", f"run={humanoid_run}", "video=true", "envs=2", "steps=5") == 0  # the CLI, in this process
    assert list((humanoid_run / "videos").glob("humanoid_*.mp4"))
