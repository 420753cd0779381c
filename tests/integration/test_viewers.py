"""3D: the chase camera's geometry, ray-traced frames, and recordings for Newton's viewers (Rerun, USD, file, viser)
that hold every frame of the rollout. All headless on the CPU."""

import numpy as np
import pytest
import torch
from clihelp import run_cli

from horde.sim.camera import look_at, quat_from_matrix

STEPS = 12


@pytest.fixture(scope="module")
def ant_run(tmp_path_factory):
    """A 1-iteration ant run made through the CLI (plumbing, not competence)."""
    root = tmp_path_factory.mktemp("runs")
    proc = run_cli("train", "task=ant", "num_envs=8", "max_iterations=1", "save_interval=1", f"run_root={root}",
                   cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run,) = list((root / "ant").iterdir())
    return run


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vector v [3] by the unit quaternion q (x, y, z, w)."""
    u, w = q[:3], q[3]
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def test_look_at_points_the_cameras_minus_z_at_the_target_with_y_up():
    rng = np.random.default_rng(0)
    eye, target = rng.normal(size=(16, 3)) * 3, rng.normal(size=(16, 3))
    xf = look_at(eye, target)
    assert np.allclose(xf[:, :3], eye, atol=1e-6)
    for k in range(16):
        q = xf[k, 3:].astype(np.float64)
        forward = rotate(q, np.array([0.0, 0.0, -1.0]))
        want = (target[k] - eye[k]) / np.linalg.norm(target[k] - eye[k])
        assert np.allclose(forward, want, atol=1e-5)
        up = rotate(q, np.array([0.0, 1.0, 0.0]))
        assert up[2] > 0 and abs(np.dot(up, forward)) < 1e-5, "the image's up is the world's up side"
        assert abs(rotate(q, np.array([1.0, 0.0, 0.0]))[2]) < 1e-5, "no roll: the image's x stays level"


def test_quat_from_matrix_inverts_every_branch():
    """Rotations by ~180 degrees about each axis take each of Shepperd's branches."""
    for axis in np.eye(3):
        for angle in (0.3, 2.0, np.pi - 1e-3):
            k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
            rot = np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k
            q = quat_from_matrix(rot[None])[0]
            for v in np.eye(3):
                assert np.allclose(rotate(q, v), rot @ v, atol=1e-6)


def test_chase_camera_frames_show_the_robot_and_follow_it():
    from horde.envs import make
    from horde.sim.camera import SKY_RGBA, chase_camera, robot_centres

    env = make("ant", num_envs=2, seed=0)
    cam = chase_camera(env.world, [0, 1], width=64, height=48)
    first = cam.render(env.world.state_0, robot_centres(env.world))
    assert first.shape == (2, 48, 64, 3) and first.dtype == np.uint8
    centre = first[:, 18:30, 26:38].reshape(2, -1, 3)
    ground = first[:, -4:, :].reshape(2, -1, 3)
    assert np.abs(centre.mean(1) - ground.mean(1)).max() > 20, "the robot is in the middle of the frame"
    sky = np.array([SKY_RGBA & 0xFF, (SKY_RGBA >> 8) & 0xFF, (SKY_RGBA >> 16) & 0xFF])
    assert not np.all(first == sky), "the frame is not just the clear colour"
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        env.step(torch.rand(2, env.num_actions, generator=g) * 2 - 1)
    later = cam.render(env.world.state_0, robot_centres(env.world))
    assert np.abs(later.astype(int) - first.astype(int)).mean() > 0.5, "the legs move between frames"


def rrd_frame_count(path) -> int:
    """Distinct times on the ``time`` timeline of a Rerun recording."""
    import rerun.chunk

    times = set()
    for chunk in rerun.chunk.RrdReader(str(path)).stream():
        if not chunk.is_static:
            batch = chunk.to_record_batch()
            if "time" in batch.schema.names:
                times.update(batch.column("time").to_pylist())
    return len(times)


def test_rerun_recording_holds_every_frame(ant_run, tmp_path):
    pytest.importorskip("rerun", reason="rerun-sdk is not installed (horde[viewers]; make test installs it)")
    from horde.train.viewer import record_3d

    path, frames = record_3d(ant_run, viewer="rerun", envs=2, steps=STEPS, out=tmp_path / "a.rrd")
    assert frames == STEPS + 1
    assert rrd_frame_count(path) == STEPS + 1, "Newton's ViewerRerun lost frames (the file sink was replaced)"


def test_usd_recording_holds_every_frame_and_the_bodies_move(ant_run, tmp_path):
    pytest.importorskip("pxr", reason="usd-core is not installed (horde[viewers]; make test installs it)")
    from pxr import Usd, UsdGeom

    from horde.train.viewer import record_3d

    path, frames = record_3d(ant_run, viewer="usd", envs=2, steps=STEPS, out=tmp_path / "a.usda")
    stage = Usd.Stage.Open(str(path))
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (0.0, float(STEPS))
    moving = 0
    for prim in stage.Traverse():
        for op in UsdGeom.Xformable(prim).GetOrderedXformOps() if UsdGeom.Xformable(prim) else ():
            samples = op.GetTimeSamples()
            if op.GetOpName() == "xformOp:translate" and len(samples) == STEPS + 1:
                a, b = np.array(op.Get(samples[0])), np.array(op.Get(samples[-1]))
                moving += bool(np.abs(a - b).max() > 1e-4)
    assert moving >= 4, "the ant's bodies have a translation sample per frame and move"


def test_file_recording_replays_with_newtons_file_viewer(ant_run, tmp_path):
    import newton.viewer

    from horde.train.viewer import record_3d

    path, frames = record_3d(ant_run, viewer="file", envs=2, steps=STEPS, out=tmp_path / "a.json")
    replay = newton.viewer.ViewerFile(str(tmp_path / "unused.json"), auto_save=False)
    replay.load_recording(str(path))
    assert replay.get_frame_count() == STEPS + 1


def test_play_viewer_through_the_cli(ant_run, tmp_path):
    pytest.importorskip("viser", reason="viser is not installed (horde[viewers]; make test installs it)")
    proc = run_cli("play", f"run={ant_run}", "viewer=viser", "envs=2", "steps=3", f"out={tmp_path / 'a.viser'}",
                   "port=0", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "(4 frames)" in proc.stdout and (tmp_path / "a.viser").stat().st_size > 1000


def test_viewer_errors_are_one_line(ant_run, tiny_run, tmp_path, capsys, monkeypatch):
    """The first as a user runs it (a subprocess: exit code 2, one line on stderr); the rest through the same entry
    point in this process (each subprocess costs ~10 s of imports)."""
    from horde.cli import main

    cases = [((f"run={ant_run}", "viewer=unity"), "viewer=unity: not a valid choice; valid choices: "
                                                  "rerun, usd, file, viser"),
             ((f"run={tiny_run}", "viewer=file"), "cartpole has no 3D scene (use video=true)"),
             ((f"run={ant_run}", "viewer=usd", "serve=true"), "serve=true serves rerun or viser"),
             ((f"run={ant_run}", "viewer=file", "steps=0"), "steps=0: must be at least 1")]
    (args, want), rest = cases[0], cases[1:]
    proc = run_cli("play", *args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and want in lines[0], proc.stderr
    monkeypatch.chdir(tmp_path)
    for args, want in rest:
        capsys.readouterr()
        assert main(["play", *args]) == 2, args
        lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert len(lines) == 1 and want in lines[0], (args, lines)
