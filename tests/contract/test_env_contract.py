"""The contract every registered task keeps (run on CPU for each name in the registry)."""

import numpy as np
import pytest
import torch

from horde.envs import GymVectorEnv, RslRlVecEnv, get_task, make, task_names

N = 16
SAME_PHYSICS = {"quadruped-rough-perceptive": "quadruped-rough", "quadruped-rough-student": "quadruped-rough",
                "quadruped-rough-depth": "quadruped-rough"}
"""Tasks that only add observations to another task's physics: the long runs below (1,000 and 3 x 600 steps: about
2 minutes on 2 cores for a rough-terrain task until 2026-11-28, 30 s since its MuJoCo model has no contact gap)
already run on that task, so these get a fifth of the steps."""
SAME_SCENE = {"push": "lift", "place": "lift"}
"""Tasks on another task's scene and physics with targets and rewards of their own: a third of the long runs (the
push's 250-step and the place's 300-step episodes must end in the 1,000-step one), and no backend runs of their own."""
COMBINED = {"g1-velocity-rough": ("g1-velocity", "quadruped-rough")}
"""Tasks whose parts each get the long runs in another task: g1-velocity-rough is the G1 of g1-velocity on the
terrain (and its curriculum and randomization) of quadruped-rough. Its long runs took 6 minutes on 2 cores, a
quarter of make test; it gets a fifth of the steps."""


def _steps(task: str, steps: int) -> int:
    if task in SAME_SCENE:
        return steps // 3
    return steps // 5 if task in SAME_PHYSICS or task in COMBINED else steps


def _random_actions(env, g):
    return torch.rand(env.num_envs, env.num_actions, generator=g) * 2 - 1


@pytest.fixture(params=task_names())
def task(request):
    return request.param


def test_spaces_and_shapes(task):
    env = make(task, num_envs=N)
    gym_env = GymVectorEnv(env, autoreset_mode="same_step", array="torch")
    assert gym_env.single_observation_space.shape == (env.obs_dim,)
    assert gym_env.single_action_space.shape == (env.num_actions,)
    assert gym_env.observation_space.shape == (N, env.obs_dim)
    obs, info = gym_env.reset(seed=0)
    assert obs.shape == (N, env.obs_dim) and obs.dtype == torch.float32
    obs, rew, term, trunc, info = gym_env.step(gym_env.action_space.sample())
    assert rew.shape == (N,) and term.dtype == torch.bool and trunc.dtype == torch.bool
    assert info["final_obs"].shape == (N, env.obs_dim)
    rsl = RslRlVecEnv(env)
    td = rsl.get_observations()
    assert td["policy"].shape == (N, env.obs_dim)
    _, rew, dones, extras = rsl.step(torch.zeros(N, env.num_actions))
    assert rew.shape == (N,) and dones.shape == (N,) and extras["time_outs"].shape == (N,)
    assert rsl.max_episode_length == env.cfg.episode_length
    with pytest.raises(ValueError, match="actions must have shape"):
        env.step(torch.zeros(N + 1, env.num_actions))


def test_same_seed_same_trajectory_and_different_seed_differs(task):
    def rollout(seed):
        env = make(task, num_envs=N, seed=seed)
        g = torch.Generator().manual_seed(1)
        return torch.stack([env.step(_random_actions(env, g)).obs.clone() for _ in range(_steps(task, 600))])

    a, b, c = rollout(3), rollout(3), rollout(4)
    assert torch.equal(a, b), _first_difference(a, b, make(task, num_envs=1).obs_names)
    assert not torch.equal(a, c)


def _first_difference(a: torch.Tensor, b: torch.Tensor, names) -> str:
    """Where two [steps, envs, obs] trajectories first differ: step, envs, observation names, largest gap."""
    step = int((a != b).flatten(1).any(1).nonzero()[0])
    envs = (a[step] != b[step]).any(1).nonzero().flatten().tolist()
    cols = (a[step] != b[step]).any(0).nonzero().flatten().tolist()
    return (f"same seed, different trajectories from step {step}: envs {envs}, observations "
            f"{[names[c] for c in cols]}, largest gap {float((a - b).abs().max()):.3g}")


def test_finite_under_random_actions(task):
    """1,000 random-action steps at N=32; on articulated tasks the default solver also keeps every world finite
    and in bounds without the health check stepping in, and every physics view stays finite. (N=64 took a third
    of make test's time; the CPU steps worlds one after another, so N and steps cost alike.)"""
    env = make(task, num_envs=32, seed=0)
    g = torch.Generator().manual_seed(0)
    for _ in range(_steps(task, 1000)):
        r = env.step(_random_actions(env, g) * 3)  # out-of-range actions must be clipped, not blow up
        assert torch.isfinite(r.obs).all() and torch.isfinite(r.reward).all()
    stats = env.pop_episode_stats()
    assert stats["episodes"] > 0 and np.isfinite(stats["return_mean"])
    world = getattr(env, "world", None)
    if world is not None:
        assert stats["sim/unstable_resets"] == 0
        for view in (world.joint_q, world.joint_qd, world.body_pose, world.body_vel, world.root_vel_base):
            assert torch.isfinite(view).all()


def test_observations_are_not_aliased_between_steps(task):
    env = make(task, num_envs=N)
    for iface in (GymVectorEnv(env, array="torch"), RslRlVecEnv(env)):
        first = iface.step(torch.ones(N, env.num_actions))[0]
        first = first["policy"] if not isinstance(first, torch.Tensor) else first
        kept = first.clone()
        iface.step(-torch.ones(N, env.num_actions))
        assert torch.equal(first, kept)


def test_reset_randomizes_and_masks(task):
    env = make(task, num_envs=N, seed=0)
    first = env.obs.clone()
    assert not torch.allclose(first[0], first[1]), "envs must start from different states"
    env.reset()
    assert not torch.equal(env.obs, first), "a second reset must draw new states"
    for _ in range(3):
        env.step(torch.zeros(N, env.num_actions))
    before = env.obs.clone()
    mask = torch.zeros(N, dtype=torch.bool)
    mask[::2] = True
    env.reset(mask)
    assert torch.equal(env.obs[1::2], before[1::2]), "unmasked envs must be untouched"
    assert not torch.equal(env.obs[::2], before[::2])
    assert (env.episode_length[::2] == 0).all() and (env.episode_length[1::2] == 3).all()


def test_time_outs_are_separate_from_terminations(task):
    base = get_task(task).config
    cfg = type(base)(**{**base.__dict__, "episode_length": 7})
    env = make(task, num_envs=64, seed=0, config=cfg)
    g = torch.Generator().manual_seed(0)
    saw_timeout = False
    for t in range(1, 30):
        r = env.step(_random_actions(env, g))
        assert not (r.terminated & r.truncated).any(), "an env is either terminated or truncated, never both"
        assert torch.equal(r.dones, r.terminated | r.truncated)
        saw_timeout |= bool(r.truncated.any())
        assert (env.episode_length < 7).all()
    assert saw_timeout
    stats = env.pop_episode_stats()
    assert stats["length_mean"] <= 7


def test_gym_reset_seed_is_reproducible(task):
    a = GymVectorEnv(make(task, num_envs=N, seed=0), array="torch")
    b = GymVectorEnv(make(task, num_envs=N, seed=99), array="torch")
    oa, _ = a.reset(seed=11)
    ob, _ = b.reset(seed=11)
    differ = (oa != ob) & ~(oa.isnan() & ob.isnan())
    cols = torch.nonzero(differ.any(dim=0)).flatten().tolist()
    names = [a.core.obs_names[c] for c in cols[:8]]
    assert torch.equal(oa, ob), (f"{task}: envs {torch.nonzero(differ.any(dim=1)).flatten().tolist()[:8]}, "
                                 f"columns {names}, values {oa[differ][:4].tolist()} vs {ob[differ][:4].tolist()}")


def test_same_physics_tasks_differ_only_in_observations():
    import dataclasses

    for task, base in SAME_PHYSICS.items():
        a, b = dataclasses.asdict(get_task(task).config), dataclasses.asdict(get_task(base).config)
        for key in ("height_scan", "privileged_critic", "depth_camera"):
            a.pop(key), b.pop(key)
        assert a == b, task


def test_combined_tasks_are_their_parts():
    import dataclasses

    for task, (robot_task, terrain_task) in COMBINED.items():
        a = get_task(task).config
        assert a.robot == get_task(robot_task).config.robot
        for key in ("terrain", "randomization"):
            assert dataclasses.asdict(getattr(a, key)) == dataclasses.asdict(getattr(get_task(terrain_task).config, key))


WARP_SUPERSET = {"quadruped": "quadruped-rough", "reach": "lift"}
"""Tasks whose MuJoCo model is contained in another task's: quadruped-rough is the quadruped's robot on its plane
plus a heightfield, and lift is reach's arm (reach has no colliders) plus fingers, a table and a cube. MuJoCo-Warp
compiles kernels for each model's collision pairs and sizes: these two took 28 s on 2 cores with an empty Warp cache
(9 s warm; 2026-11-28, ``pytest -n 0 -k contract_on_mujoco_warp`` with ``WARP_CACHE_PATH`` a new folder) to cover
what their supersets cover. The quadruped's MuJoCo-Warp kernels still compile in test_actuator_net.py's mujoco-warp
run."""
WARP_TASKS = [t for t in task_names() if hasattr(get_task(t).config, "sim") and t not in SAME_PHYSICS
              and t not in COMBINED and t not in SAME_SCENE and t not in WARP_SUPERSET]
"""Articulated tasks with physics of their own. Their CPU default is MuJoCo's C engine (``solver=auto``), which the
tests above run; MuJoCo-Warp, the solver a GPU runs, keeps the contract too (shorter runs: it is 4-9x slower here)."""


def _on_warp(task, num_envs, seed):
    import dataclasses

    base = get_task(task).config
    cfg = type(base)(**{**base.__dict__, "sim": dataclasses.replace(base.sim, solver="mujoco")})
    return make(task, num_envs=num_envs, seed=seed, config=cfg)


@pytest.mark.parametrize("task", WARP_TASKS)
def test_contract_on_mujoco_warp(task):
    def rollout(seed, steps=100):
        env = _on_warp(task, N, seed)
        g = torch.Generator().manual_seed(1)
        return env, torch.stack([env.step(_random_actions(env, g)).obs.clone() for _ in range(steps)])

    env, a = rollout(3)
    assert env.world.sim.solver == "mujoco" and not env.world.steps_mujoco_c
    _, b = rollout(3)
    _, c = rollout(4)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert torch.isfinite(a).all() and env.pop_episode_stats()["sim/unstable_resets"] == 0
    before = env.obs.clone()
    mask = torch.zeros(N, dtype=torch.bool)
    mask[::2] = True
    env.reset(mask)
    assert torch.equal(env.obs[1::2], before[1::2]) and not torch.equal(env.obs[::2], before[::2])
    oa, _ = GymVectorEnv(_on_warp(task, N, 0), array="torch").reset(seed=11)
    ob, _ = GymVectorEnv(_on_warp(task, N, 99), array="torch").reset(seed=11)
    assert torch.equal(oa, ob)
