"""reach's differentiable model: the 7-DoF arm on Featherstone under a tape, against finite differences and against
the env's own kernels (the env running Featherstone too)."""

import dataclasses

import pytest
import torch

from horde.envs import get_task, make
from horde.envs.reach import DIFF_STATE, JOINTS
from horde.envs import make_diff_task

STEPS = 4
NUM_ENVS = 3


@pytest.fixture(scope="module")
def task():
    return make_diff_task("reach")


def _problem(task):
    g = torch.Generator().manual_seed(5)
    s0 = task.sample_state(NUM_ENVS, g)
    s0[:, DIFF_STATE["joint_qd"]] = torch.rand(NUM_ENVS, len(JOINTS), generator=g) - 0.5  # moving joints
    # actions inside (-1, 1) and torques below their limits: no clip kink within the FD steps
    actions = torch.rand(STEPS, NUM_ENVS, len(JOINTS), generator=g) * 0.6 - 0.3
    weights = torch.randn(NUM_ENVS, DIFF_STATE["target"].start, generator=g)
    return s0, actions, weights


def _loss(task, s0, actions, weights):
    """Rewards summed over the rollout plus a fixed weighted sum of the final arm state (joints and end effector)."""
    state, total = s0, 0.0
    for t in range(actions.shape[0]):
        state = task.rollout.step(state, actions[t])
        total = total + task.reward(state, actions[t]).sum()
    return total + (weights * state[:, : weights.shape[1]]).sum()


def _gradients(task, s0, actions, weights):
    s = s0.clone().requires_grad_(True)
    a = actions.clone().requires_grad_(True)
    _loss(task, s, a, weights).backward()
    return s.grad, a.grad


def _fd(task, s0, actions, weights, which, idx, eps=1e-2):
    with torch.no_grad():
        x = (s0 if which == "state" else actions).clone()
        x[idx] += eps
        plus = _loss(task, x if which == "state" else s0, x if which == "action" else actions, weights)
        x[idx] -= 2 * eps
        minus = _loss(task, x if which == "state" else s0, x if which == "action" else actions, weights)
    return float(plus - minus) / (2 * eps)


ACTION_ENTRIES = [(0, 0, 0), (0, 1, 3), (1, 2, 5), (2, 0, 1), (STEPS - 1, 1, 6)]
STATE_ENTRIES = [(0, 1), (1, 3), (2, 8), (0, 12)]  # joint angles and joint rates at the start


def test_tape_gradient_matches_finite_differences(task):
    """Central differences of the float32 forward with eps = 1e-2: float32 rounding of the loss (~1e-6 relative)
    over eps stays ~1e-4 of the gradients, the truncation error ~eps^2; measured agreement 1e-4 relative. 2% still
    catches a wrong sign, a zero or a missing term (a solver shared by the substeps is 12-45% off, below)."""
    s0, actions, weights = _problem(task)
    g_state, g_act = _gradients(task, s0, actions, weights)
    assert g_act.abs().max() > 0 and g_state.abs().max() > 0, "zero gradient"
    scale = float(g_act.abs().max())
    fds = []
    for idx in ACTION_ENTRIES:
        fds.append(_fd(task, s0, actions, weights, "action", idx))
        assert float(g_act[idx]) == pytest.approx(fds[-1], rel=2e-2, abs=1e-3 * scale), idx
    for idx in STATE_ENTRIES:
        fds.append(_fd(task, s0, actions, weights, "state", idx))
        assert float(g_state[idx]) == pytest.approx(fds[-1], rel=2e-2, abs=1e-3 * scale), idx
    assert sum(abs(f) > 0.1 for f in fds) >= 6, f"finite differences are flat: {fds}"


def test_one_solver_for_every_substep_gives_wrong_gradients(task):
    """Why every substep takes a solver of its own: Featherstone keeps its mass matrix and Cholesky factor in the
    solver, so a shared solver's backward reads the last substep's matrices for every substep."""
    s0, actions, weights = _problem(task)
    physics = task.rollout.physics
    shared = physics._solver(NUM_ENVS)
    original = physics._solver
    physics._solver = lambda n: shared
    try:
        _, g_shared = _gradients(task, s0, actions, weights)
    finally:
        physics._solver = original
        physics._free_solvers[NUM_ENVS].clear()  # the shared solver went back to the pool once per substep
    _, g_pool = _gradients(task, s0, actions, weights)
    idx = (0, 0, 0)  # the first step's action: its gradient crosses every later substep's backward pass
    fd = _fd(task, s0, actions, weights, "action", idx)
    assert float(g_pool[idx]) == pytest.approx(fd, rel=2e-2)
    assert abs(float(g_shared[idx]) - fd) > 0.05 * abs(fd), "the shared solver agreed: the pool is not needed"


def test_model_matches_the_env_on_featherstone(task):
    """The torch side (observations, the task's columns), the reward (the env's own Warp terms on the model's
    state) and the arm's physics equal the env's post-step kernel when the env runs Featherstone too."""
    base = get_task("reach").config
    cfg = dataclasses.replace(base, use_graph=False, sim=dataclasses.replace(base.sim, solver="featherstone"))
    env = make("reach", num_envs=8, seed=2, config=cfg)
    g = torch.Generator().manual_seed(3)
    last = torch.zeros(8, len(JOINTS))
    for _ in range(20):
        state = torch.cat([env.world.joint_q, env.world.joint_qd, env.ee_position(), env.target, last,
                           torch.zeros(8, len(JOINTS))], dim=-1)  # the actions before ``last``: not read
        actions = torch.rand(8, len(JOINTS), generator=g) * 2.4 - 1.2  # some beyond [-1, 1]: both sides clip
        with torch.no_grad():
            nxt = task.rollout.step(state, actions)
        r = env.step(actions)
        live = ~r.dones
        assert live.all(), "an episode ended: the comparison needs 20 steps of one episode"
        torch.testing.assert_close(nxt[:, DIFF_STATE["joint_q"]], env.world.joint_q, atol=2e-5, rtol=1e-4)
        torch.testing.assert_close(nxt[:, DIFF_STATE["joint_qd"]], env.world.joint_qd, atol=2e-4, rtol=1e-4)
        torch.testing.assert_close(nxt[:, DIFF_STATE["ee"]], env.ee_position(), atol=2e-5, rtol=1e-4)
        torch.testing.assert_close(task.reward(nxt, actions), r.reward, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(task.obs(nxt), r.obs, atol=2e-4, rtol=1e-4)
        assert not task.failed(nxt).any()
        last = actions.clamp(-1, 1)


def test_rollout_truncates_gradients(task):
    s0, actions, _ = _problem(task)
    s0.requires_grad_(True)
    w = torch.zeros(1, len(JOINTS), requires_grad=True)
    policy = lambda s, t: actions[t % STEPS] + w  # noqa: E731
    states = task.rollout.rollout(s0, policy, 4, truncate_every=2)
    assert states.shape == (5, NUM_ENVS, task.rollout.state_dim)
    states[-1][:, DIFF_STATE["ee"]].sum().backward()
    assert torch.count_nonzero(s0.grad) == 0, "gradient crossed the truncation"
    assert w.grad.abs().max() > 0
    s0.grad = None
    task.rollout.rollout(s0, policy, 4)[-1][:, DIFF_STATE["ee"]].sum().backward()
    assert s0.grad.abs().max() > 0
    with pytest.raises(ValueError, match="expected state"):
        task.rollout.step(s0[:, :-1], actions[0])


def test_memory_per_step_is_counted(task):
    """The count is exact bookkeeping of Warp buffers, not a measurement: values and gradients of each substep's
    state and control plus the Featherstone solver each substep holds, which dominates (its J/M/H/L matrices).
    The resident-memory growth of a held rollout against this count is a figure printed by
    ``benchmarks/diff_vs_ppo.py`` (memory rows), not asserted here: it depends on the machine's allocator."""
    import warp as wp

    counted = task.rollout.bytes_per_env_step
    physics = task.rollout.physics  # the arm on Featherstone; the task adds its target columns
    decimation = get_task("reach").config.decimation
    assert counted > 4 * 2 * len(JOINTS) * decimation

    def nbytes(obj) -> int:
        arrays = [a for a in vars(obj).values() if isinstance(a, wp.array)]
        return sum(a.capacity + (a.grad.capacity if a.grad is not None else 0) for a in arrays)

    model = physics._model(1)
    solver = physics._solver(1)
    physics._free_solvers[1].append(solver)
    state = nbytes(model.state(requires_grad=True)) + nbytes(model.control(requires_grad=True))
    assert counted == (decimation * (state + nbytes(solver)) + 8 * (physics.state_dim + physics.action_dim)
                       + 8 * (task.rollout.state_dim - physics.state_dim))
    assert decimation * nbytes(solver) > counted / 2, "the solver's matrices dominate what a step keeps"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_gradient_equals_cpu(task):
    """The same rollout on cuda:0 (Featherstone's CUDA kernels, solvers from a CUDA pool) gives the CPU's gradients
    (float32 on both, different reduction orders: 1e-3)."""
    s0, actions, weights = _problem(task)
    g_state, g_act = _gradients(task, s0, actions, weights)
    gpu = make_diff_task("reach", device="cuda")
    g_state_c, g_act_c = _gradients(gpu, s0.cuda(), actions.cuda(), weights.cuda())
    torch.testing.assert_close(g_state_c.cpu(), g_state, rtol=1e-3, atol=1e-4 * float(g_state.abs().max()))
    torch.testing.assert_close(g_act_c.cpu(), g_act, rtol=1e-3, atol=1e-4 * float(g_act.abs().max()))
    state = gpu.sample_state(16, torch.Generator(device="cuda").manual_seed(0))
    assert state.device.type == "cuda" and torch.isfinite(state).all()
