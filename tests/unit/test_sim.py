"""Hand-worked numbers for the classic-control dynamics, the fast trig, and graph replay against eager stepping."""

import math
import os

import numpy as np
import pytest
import torch
import warp as wp

from horde.envs import make
from horde.envs.cartpole import CartpoleConfig
from horde.sim import classic
from horde.sim.device import resolve_device


@wp.kernel(enable_backward=False)
def _trig(x: wp.array(dtype=float), s: wp.array(dtype=float), c: wp.array(dtype=float), w: wp.array(dtype=float)):
    i = wp.tid()
    a, b = classic.sincos(x[i])
    s[i] = a
    c[i] = b
    w[i] = classic.wrap_angle(x[i])


def test_fast_sincos_and_wrap_match_numpy():
    x = np.linspace(-200.0, 200.0, 40001, dtype=np.float32)
    xs = wp.array(x, device="cpu")
    s, c, w = (wp.zeros_like(xs) for _ in range(3))
    wp.launch(_trig, len(x), inputs=[xs], outputs=[s, c, w], device="cpu")
    x64 = x.astype(np.float64)
    assert np.abs(s.numpy() - np.sin(x64)).max() < 2e-6
    assert np.abs(c.numpy() - np.cos(x64)).max() < 2e-6
    ww = w.numpy()
    assert ww.min() >= -math.pi - 1e-5 and ww.max() < math.pi + 1e-5
    assert np.abs(np.cos(ww) - np.cos(x64)).max() < 1e-4


def _cartpole_reference(state, action, cfg: CartpoleConfig):
    """Barto et al.'s equations with semi-implicit Euler, in float64."""
    x, xd, th, thd = state
    f = np.clip(action, -1, 1) * cfg.max_force
    m = cfg.cart_mass + cfg.pole_mass
    pml = cfg.pole_mass * cfg.pole_half_length
    temp = (f + pml * thd**2 * math.sin(th)) / m
    tha = (cfg.gravity * math.sin(th) - math.cos(th) * temp) / (
        cfg.pole_half_length * (4 / 3 - cfg.pole_mass * math.cos(th) ** 2 / m))
    xa = temp - pml * tha * math.cos(th) / m
    xd, thd = xd + cfg.sim_dt * xa, thd + cfg.sim_dt * tha
    return np.array([x + cfg.sim_dt * xd, xd, th + cfg.sim_dt * thd, thd])


def test_cartpole_substeps_match_the_equations():
    cfg = CartpoleConfig(use_graph=False)
    env = make("cartpole", num_envs=1, config=cfg)
    start = np.array([0.3, -0.2, 0.15, 0.4])
    env.state.copy_(torch.tensor(start, dtype=torch.float32)[None])
    expected = start
    for _ in range(cfg.decimation):
        expected = _cartpole_reference(expected, 0.5, cfg)
    env.step(torch.tensor([[0.5]]))
    # the post-step kernel may reset a failed env; this state is well inside the limits
    np.testing.assert_allclose(env.state[0].numpy(), expected, rtol=1e-5, atol=1e-6)


def test_pendulum_matches_gymnasium_pendulum_v1():
    from gymnasium.envs.classic_control.pendulum import PendulumEnv

    ref = PendulumEnv()
    ref.reset(seed=0)
    env = make("pendulum", num_envs=1)
    rng = np.random.default_rng(0)
    th, thd = 2.5, -0.7
    for _ in range(50):
        u = float(rng.uniform(-1, 1))
        ref.state = np.array([th, thd])
        ref.step(np.array([u * 2.0]))
        env.state.copy_(torch.tensor([[th, thd]], dtype=torch.float32))
        env.step(torch.tensor([[u]]))
        np.testing.assert_allclose(env.state[0].numpy(), ref.state, rtol=1e-5, atol=1e-5)
        th, thd = float(ref.state[0]), float(ref.state[1])


@pytest.mark.parametrize("task", ["cartpole", "pendulum"])
def test_graph_replay_equals_eager_stepping(task):
    from horde.envs import get_task

    base = get_task(task).config
    trajs = []
    for use_graph in (True, False):
        cfg = type(base)(**{**base.__dict__, "use_graph": use_graph})
        env = make(task, num_envs=64, seed=5, config=cfg)
        g = torch.Generator().manual_seed(0)
        obs, rew = [], []
        for _ in range(300):
            r = env.step(torch.rand(64, env.num_actions, generator=g) * 2 - 1)
            obs.append(r.obs.clone())
            rew.append(r.reward.clone())
        assert env._graph.captured is use_graph
        trajs.append((torch.stack(obs), torch.stack(rew)))
    assert torch.equal(trajs[0][0], trajs[1][0])
    assert torch.equal(trajs[0][1], trajs[1][1])


def test_device_errors_are_one_line():
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            resolve_device("cuda:0")


@pytest.mark.gpu
def test_cuda_graph_step_matches_cpu():
    """The same seed on cuda:0 (CUDA graph, torch and Warp streams ordered by waits) and on the CPU."""
    out = {}
    for device in ("cpu", "cuda:0"):
        env = make("cartpole", num_envs=256, seed=3, device=device)
        g = torch.Generator().manual_seed(0)
        for _ in range(50):
            r = env.step((torch.rand(256, 1, generator=g) * 2 - 1).to(env.device))
        out[device] = r.obs.cpu()
        assert env._graph.captured
    torch.testing.assert_close(out["cpu"], out["cuda:0"], atol=1e-4, rtol=1e-4)


def _trajectory_equal(task: str, num_envs: int, configure_a, configure_b, steps: int = 240, use_graph: bool = True):
    """Step two envs of ``task`` from one seed under the same actions (NaN actions and infinite states injected so
    that failures and resets happen) and assert every buffer, the random streams and the statistics are equal."""
    from horde.envs import get_task

    base = get_task(task).config
    cfg = type(base)(**{**base.__dict__, "use_graph": use_graph})
    envs = [make(task, num_envs=num_envs, seed=3, config=cfg) for _ in range(2)]
    configure_a(envs[0])
    configure_b(envs[1])
    g = torch.Generator().manual_seed(0)
    for step in range(steps):
        act = torch.rand(num_envs, envs[0].num_actions, generator=g) * 2 - 1
        if step == 40:
            act[: num_envs // 3] = float("nan")
        if step == 120:
            for env in envs:
                env.state[::7] = float("inf")
        results = [env.step(act) for env in envs]
        for name in ("obs", "reward", "terminated", "truncated", "dones"):
            assert torch.equal(getattr(results[0], name), getattr(results[1], name)), (step, name)
        for name in ("state", "final_obs", "terms", "episode_length"):
            assert torch.equal(getattr(envs[0], name), getattr(envs[1], name)), (step, name)
        assert torch.equal(envs[0].get_rng_state(), envs[1].get_rng_state())
    states = [env.get_env_state() for env in envs]
    for key in states[0]:
        assert torch.equal(states[0][key], states[1][key]), key
    stats = [env.pop_episode_stats() for env in envs]
    assert stats[0] == stats[1] and stats[0]["episodes"] > num_envs


@pytest.mark.parametrize("use_graph", [True, False])
def test_cpu_blocks_equal_one_env_per_thread(use_graph):
    """The CPU block path (LANES envs per Warp thread, vectorized) and the one-env-per-thread kernels give the same
    trajectories bit for bit; 200 envs = 3 full blocks and 8 envs on the per-env kernels."""
    _trajectory_equal("cartpole-swingup" if use_graph else "cartpole", 200,
                      lambda env: env._configure_cpu_path(blocks=False), lambda env: None, use_graph=use_graph)


def test_cpu_threads_equal_one_thread():
    """A CPU step split over two OS threads (env ranges, one statistics buffer each) equals one thread."""
    from horde.sim.graph import ParallelStepGraph

    def two_threads(env):
        env._configure_cpu_path(blocks=True, threads=2)
        assert isinstance(env._graph, ParallelStepGraph)

    _trajectory_equal("cartpole", 3 * classic.LANES + 5, lambda env: env._configure_cpu_path(blocks=True, threads=1),
                      two_threads, steps=160)


def test_cpu_path_choice():
    from horde.envs.blocks import PARALLEL_MIN_ENVS, BlockStepEnv
    from horde.sim.graph import ParallelStepGraph

    assert make("cartpole", num_envs=classic.LANES - 1)._use_blocks  # blocks on, but all envs on the per-env path
    assert not isinstance(make("pendulum", num_envs=256), BlockStepEnv)  # no block step: one env per thread
    cfg = CartpoleConfig(cpu_threads=2)
    assert not isinstance(make("cartpole", num_envs=PARALLEL_MIN_ENVS, config=cfg)._graph, ParallelStepGraph)
    if len(os.sched_getaffinity(0)) >= 2:
        assert isinstance(make("cartpole", num_envs=2 * PARALLEL_MIN_ENVS, config=cfg)._graph, ParallelStepGraph)
    assert not isinstance(make("cartpole", num_envs=2 * PARALLEL_MIN_ENVS)._graph, ParallelStepGraph)  # default 1
