"""The height scan: the terrain lookup against analytic surfaces and against Newton's own ray cast of the
heightfield, and the perceptive task's observations against a numpy reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import warp as wp

from horde.envs import get_task, make
from horde.sim.device import init_warp
from horde.sim.terrain import HeightScanConfig, Terrain, TerrainConfig, TerrainGrid, scan_offsets, terrain_height


@wp.kernel
def _lookup(g: TerrainGrid, xy: wp.array(dtype=wp.vec2), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = terrain_height(g, xy[i][0], xy[i][1])


def _heights_at(terrain: Terrain, xy: np.ndarray) -> np.ndarray:
    init_warp()
    out = wp.zeros(len(xy), dtype=float, device="cpu")
    wp.launch(_lookup, len(xy), inputs=[terrain.grid("cpu"), wp.array(xy.astype(np.float32), dtype=wp.vec2)],
              outputs=[out], device="cpu")
    return out.numpy()


def _vertices(terrain: Terrain) -> tuple[np.ndarray, np.ndarray]:
    nx, ny = terrain.heights.shape
    return np.linspace(-terrain.hx, terrain.hx, nx), np.linspace(-terrain.hy, terrain.hy, ny)


def test_terrain_height_is_exact_on_a_tilted_plane_and_on_stair_treads():
    terrain = Terrain(TerrainConfig(kind="rough", num_levels=2))
    vx, vy = _vertices(terrain)
    X, Y = np.meshgrid(vx, vy, indexing="ij")
    rng = np.random.default_rng(0)
    xy = np.stack([rng.uniform(-terrain.hx, terrain.hx, 2000), rng.uniform(-terrain.hy, terrain.hy, 2000)], 1)
    terrain.heights = (0.3 * X - 0.2 * Y + 1.5).astype(np.float32)
    np.testing.assert_allclose(_heights_at(terrain, xy), 0.3 * xy[:, 0] - 0.2 * xy[:, 1] + 1.5, atol=2e-5)
    step, tread = 0.15, 1.0
    terrain.heights = (np.floor((X + terrain.hx) / tread) * step).astype(np.float32)
    riser = np.abs(((xy[:, 0] + terrain.hx) / tread) - np.round((xy[:, 0] + terrain.hx) / tread)) * tread
    away = riser > 1.5 * (vx[1] - vx[0])  # more than one cell from every riser: on a tread
    expected = np.floor((xy[:, 0] + terrain.hx) / tread) * step
    np.testing.assert_allclose(_heights_at(terrain, xy)[away], expected[away], atol=1e-5)
    assert away.sum() > 500
    outside = np.array([[terrain.hx + 1.0, 0.0], [0.0, -terrain.hy - 0.5]])
    assert np.all(_heights_at(terrain, outside) == 0.0)  # the ground plane around the field
    assert np.all(_heights_at(Terrain(TerrainConfig(kind="flat")), xy) == 0.0)


def test_terrain_height_matches_newton_ray_cast_of_the_heightfield():
    """Newton's intersect_ray against the world's global heightfield shape (rays straight down): the lookup
    agrees to float precision on the slope and stair tiles except along ridges and risers, and within the
    difference of a bilinear patch and two triangles on the random bumps. Measured on seed 0 of the terrain:
    slopes and stairs median 5e-7 m, p90 1.4e-6 m, max 7.8 mm; bumps median 0.7 mm, max 2.7 cm."""
    import newton

    env = make("quadruped-rough", num_envs=2, seed=0)
    terrain = env.terrain
    rng = np.random.default_rng(0)
    n = 3000
    xy = np.stack([rng.uniform(-terrain.hx + 0.05, terrain.hx - 0.05, n),
                   rng.uniform(-terrain.hy + 0.05, terrain.hy - 0.05, n)], 1).astype(np.float32)
    origins = wp.array(np.concatenate([xy, np.full((n, 1), 10.0, np.float32)], 1), dtype=wp.vec3, device="cpu")
    down = wp.array(np.tile(np.float32([0.0, 0.0, -1.0]), (n, 1)), dtype=wp.vec3, device="cpu")
    dist = wp.zeros(n, dtype=float, device="cpu")
    newton.intersect_ray(env.world.model, ray_origins=origins, ray_directions=down,
                         ray_worlds=wp.full(n, -1, dtype=wp.int32, device="cpu"), out_dist=dist, fast_math=False)
    gap = np.abs((10.0 - dist.numpy()) - _heights_at(terrain, xy))
    kind = ((xy[:, 1] + terrain.hy) // terrain.cfg.tile_size).astype(int)  # columns: noise, slopes, stairs
    smooth = kind > 0
    assert np.median(gap[smooth]) < 1e-5 and np.percentile(gap[smooth], 90) < 1e-4 and gap[smooth].max() < 0.02
    assert np.median(gap[~smooth]) < 3e-3 and gap[~smooth].max() < 0.05


def _expected_scan(env, hs: HeightScanConfig, *, turn: bool = True) -> np.ndarray:
    """numpy reference: base height - bilinear terrain height at each (yaw-turned) point - offset, clipped."""
    pose = env.world.root_pose.numpy()
    pts = scan_offsets(hs)
    out = np.zeros((len(pose), len(pts)))
    vx, vy = _vertices(env.terrain)
    for i, (x, y, z, qx, qy, qz, qw) in enumerate(pose):
        fwd = np.array([1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy + qw * qz)])
        yaw = np.arctan2(fwd[1], fwd[0]) if turn else 0.0
        c, s = np.cos(yaw), np.sin(yaw)
        wx, wy = x + c * pts[:, 0] - s * pts[:, 1], y + s * pts[:, 0] + c * pts[:, 1]
        fx, fy = (wx - vx[0]) / (vx[1] - vx[0]), (wy - vy[0]) / (vy[1] - vy[0])
        ix, iy = np.clip(np.floor(fx).astype(int), 0, len(vx) - 2), np.clip(np.floor(fy).astype(int), 0, len(vy) - 2)
        tx, ty = fx - ix, fy - iy
        h = env.terrain.heights
        top = h[ix, iy] * (1 - tx) + h[ix + 1, iy] * tx
        bottom = h[ix, iy + 1] * (1 - tx) + h[ix + 1, iy + 1] * tx
        out[i] = np.clip(z - (top * (1 - ty) + bottom * ty) - hs.offset, -hs.clip, hs.clip)
    return out


def test_perceptive_quadruped_observes_the_scan():
    cfg = get_task("quadruped-rough-perceptive").config
    hs = cfg.height_scan
    env = make("quadruped-rough-perceptive", num_envs=8, seed=1)
    base = 48  # the blind quadruped's observations come first
    assert env.obs_dim == base + 17 * 11 and env.obs_names[base] == "height_scan_0"
    g = torch.Generator().manual_seed(0)
    noise = hs.noise * cfg.randomization.obs_noise_scale
    for _ in range(30):
        r = env.step(torch.rand(8, env.num_actions, generator=g) * 2 - 1)
    live = ~r.dones
    scan = r.obs[:, base:].numpy()
    expected = _expected_scan(env, hs)
    assert np.abs(scan - expected)[live.numpy()].max() <= noise + 1e-4
    assert scan.std() > 0.01  # the robots stand on different tiles: not a constant


def test_scan_off_keeps_the_rough_task_blind():
    env = make("quadruped-rough", num_envs=2)
    assert env.obs_dim == 48 and not any(n.startswith("height_scan") for n in env.obs_names)
    assert len(env.scan_points) == 0


@pytest.mark.parametrize("yaw_aligned", [True, False])
def test_scan_points_turn_with_the_base_only_when_yaw_aligned(yaw_aligned):
    import dataclasses

    cfg = get_task("quadruped-rough-perceptive").config
    cfg = dataclasses.replace(cfg, height_scan=dataclasses.replace(cfg.height_scan, yaw_aligned=yaw_aligned,
                                                                   noise=0.0))
    env = make("quadruped-rough-perceptive", num_envs=4, seed=2, config=cfg)
    r = env.step(torch.zeros(4, env.num_actions))
    hs = cfg.height_scan
    expected = _expected_scan(env, hs, turn=yaw_aligned)
    live = (~r.dones).numpy()
    np.testing.assert_allclose(r.obs[:, 48:].numpy()[live], expected[live], atol=2e-4)


def test_privileged_critic_group_holds_noise_free_observations_and_hidden_physics():
    env = make("quadruped-rough-perceptive", num_envs=8, seed=0)
    cfg = env.cfg
    assert env.critic_names[:env.obs_dim] == env.obs_names and env.critic_names[-3:] == (
        "friction", "added_base_mass", "base_height")
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        env.step(torch.rand(8, env.num_actions, generator=g) * 2 - 1)
    c = env.critic_obs
    named = dict(zip(env.critic_names, c.T, strict=True))
    noise = [v * cfg.randomization.obs_noise_scale for v in cfg.obs_noise]
    gap = (c[:, :env.obs_dim] - env.obs).abs()
    assert gap[:, 0:3].max() <= noise[0] + 1e-5 and gap[:, 24:36].max() <= noise[4] + 1e-4  # lin vel, joint rates
    assert gap.max() > 0.0  # the actor's copy is noisy, the critic's is not
    lo, hi = cfg.randomization.friction
    assert torch.all((named["friction"] >= lo) & (named["friction"] <= hi))
    assert named["friction"].std() > 0 and named["added_base_mass"].abs().max() > 0
    strength = c[:, [env.critic_names.index(n) for n in env.critic_names if n.startswith("motor_strength_")]]
    assert torch.all((strength >= 0.9 - 1e-6) & (strength <= 1.1 + 1e-6))
    assert torch.all(named["base_height"] > 0.1) and torch.all(named["base_height"] < 0.6)


def test_ppo_gives_the_critic_the_privileged_group_and_exports_the_actor_alone(tmp_path):
    from horde.deploy import load_policy
    from horde.train.config import compose
    from horde.train.ppo import PPOTrainer

    cfg, name, raw = compose(["task=quadruped-rough-perceptive", "num_envs=16", "max_iterations=2",
                              "algo.num_steps_per_env=4", f"run_root={tmp_path}"])
    trainer = PPOTrainer(cfg, name, raw, quiet=True)
    core = trainer.core
    obs = trainer.env.get_observations()
    assert obs["policy"].shape == (16, core.obs_dim) and obs["critic"].shape == (16, len(core.critic_names))
    trainer.learn()
    first = lambda net: next(m for m in net.modules() if isinstance(m, torch.nn.Linear)).in_features  # noqa: E731
    actor_in, critic_in = first(trainer.alg.actor), first(trainer.alg.critic)
    assert (actor_in, critic_in) == (core.obs_dim, len(core.critic_names))
    policy, ckpt, _, _ = load_policy(str(trainer.run_dir))
    assert ckpt["obs_dim"] == core.obs_dim
    assert policy(torch.zeros(3, core.obs_dim)).shape == (3, core.num_actions)


def test_blind_vs_perceptive_benchmark_quick(tmp_path):
    """benchmarks/perceptive.py in quick mode: both variants train, evaluate and write their curves (its ``main``
    in this process: as a process of its own it paid 10-15 s of imports first)."""
    import json

    from benchhelp import run_benchmark

    proc = run_benchmark("perceptive.py", "--quick", "--json", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [r["variant"] for r in rows if "variant" in r] == ["blind", "perceptive"]
    data = json.loads((tmp_path / "perceptive.json").read_text())
    assert {r["task"] for r in data["runs"]} == {"quadruped-rough", "quadruped-rough-perceptive"}
    assert all(r["iterations"] == 2 and len(r["curve"]) == 2 for r in data["runs"])
    assert (tmp_path / "perceptive.png").stat().st_size > 10_000


def test_blind_vs_perceptive_replot_compares_at_equal_iterations(tmp_path, capsys):
    """``--replot`` summarises stored runs without training: the medians, and each seed's blind level at the last
    iteration its perceptive run reached (linear between evaluations: 0.2 at 50, 0.6 at 100 -> 0.4 at 75)."""
    import importlib.util
    import json
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "perceptive.py"
    spec = importlib.util.spec_from_file_location("perceptive_bench", script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    def run(variant, points):
        curve = [{"iteration": i, "wall_s": w, "terrain_level": lv, "lin_vel_error_mps": e} for i, w, lv, e in points]
        return {"date": "2026-11-25", "cpu": "test", "minutes": 60.0, "overrides": ["num_envs=256"],
                "variant": variant, "task": bench.VARIANTS[variant], "seed": 0, "iterations": points[-1][0],
                "curve": curve}

    store = tmp_path / "runs.jsonl"
    store.write_text("\n".join(json.dumps(r) for r in (
        run("blind", [(25, 60, 0.0, 0.5), (50, 120, 0.2, 0.4), (100, 240, 0.6, 0.3)]),
        run("perceptive", [(25, 100, 0.0, 0.5), (75, 240, 0.3, 0.35)]))) + "\n")
    assert bench.main(["--replot", str(store), "--out", str(tmp_path / "out"), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    summary = {r["variant"]: r for r in rows if "variant" in r}
    assert summary["perceptive"]["median_final_terrain_level"] == 0.3
    assert summary["blind"]["median_iterations"] == 100
    (seed,) = [r for r in rows if "seed" in r]
    assert seed["perceptive_iterations"] == 75 and abs(seed["blind_level_at_perceptive_iterations"] - 0.4) < 1e-9
    assert (tmp_path / "out" / "perceptive.png").stat().st_size > 10_000
    assert bench.main(["--replot", str(tmp_path / "none.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
