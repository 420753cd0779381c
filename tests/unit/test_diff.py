"""The differentiable control step: tape gradients against float64 finite differences, no silent zero gradients,
errors for tasks without a differentiable rollout, and torch rewards that match the env's kernels."""

import math

import pytest
import torch
import warp as wp

from horde.envs import get_task, make
from horde.envs import make_diff_task
from horde.sim import DiffRollout, NotDifferentiableError, ZeroGradientError, classic

DIFF_TASKS = ["pendulum", "cartpole-swingup"]
STEPS = 8


# --- float64 references of the dynamics, written from the equations (not from the kernels) ---------------------
def _pendulum_ref(state, action, cfg):
    th, thd = state[:, 0], state[:, 1]
    u = action[:, 0].clamp(-1, 1) * cfg.max_torque
    for _ in range(cfg.decimation):
        acc = 3 * cfg.gravity / (2 * cfg.length) * torch.sin(th) + 3.0 / (cfg.mass * cfg.length**2) * u
        thd = (thd + acc * cfg.sim_dt).clamp(-cfg.max_speed, cfg.max_speed)
        th = th + thd * cfg.sim_dt
    return torch.stack((th, thd), dim=-1)


def _cartpole_ref(state, action, cfg):
    x, xd, th, thd = state.unbind(-1)
    f = action[:, 0].clamp(-1, 1) * cfg.max_force
    m, pml, half = cfg.cart_mass + cfg.pole_mass, cfg.pole_mass * cfg.pole_half_length, cfg.pole_half_length
    for _ in range(cfg.decimation):
        temp = (f + pml * thd**2 * torch.sin(th)) / m
        tha = (cfg.gravity * torch.sin(th) - torch.cos(th) * temp) / (half * (4 / 3 - cfg.pole_mass * torch.cos(th)**2 / m))
        xa = temp - pml * tha * torch.cos(th) / m
        xd, thd = xd + cfg.sim_dt * xa, thd + cfg.sim_dt * tha
        x, th = x + cfg.sim_dt * xd, th + cfg.sim_dt * thd
    return torch.stack((x, xd, th, thd), dim=-1)


REFERENCE = {"pendulum": _pendulum_ref, "cartpole-swingup": _cartpole_ref}


def _pendulum_reward_ref(state, action, cfg):
    """Pendulum-v1's cost in float64, from the equations (the model's reward runs the env's float32 Warp terms)."""
    angle = torch.remainder(state[:, 0] + math.pi, 2 * math.pi) - math.pi
    terms = {"angle": angle**2, "velocity": state[:, 1] ** 2, "torque": action[:, 0].clamp(-1, 1) ** 2}
    return sum(cfg.reward_scales[k] * v for k, v in terms.items())


def _cartpole_reward_ref(state, action, cfg):
    """The cart-pole's reward terms in float64, from their definitions (the model's run the env's float32 Warp
    terms); no start state here fails (the swing-up has no pole limit, the carts stay inside 2.4 m)."""
    x, xd, th, thd = state.unbind(-1)
    angle = torch.remainder(th + math.pi, 2 * math.pi) - math.pi
    failed = (x.abs() > cfg.cart_limit) | ((angle.abs() > cfg.pole_limit) if cfg.pole_limit > 0 else False)
    fail = failed.to(state.dtype)
    terms = {"alive": 1 - fail, "upright": 0.5 * (torch.cos(angle) + 1), "pole_angle": angle**2, "cart_pos": x**2,
             "cart_vel": xd**2, "pole_vel": thd**2, "action": action[:, 0].clamp(-1, 1) ** 2, "terminated": fail}
    return sum(cfg.reward_scales[k] * v for k, v in terms.items())


REWARD_REFERENCE = {"pendulum": _pendulum_reward_ref, "cartpole-swingup": _cartpole_reward_ref}
"""float64 rewards: the models' own are float32 Warp terms."""

# Start states away from kinks: speeds far below the pendulum's clip, angles that stay clear of the +-pi wrap of
# the pendulum's angle term, carts well inside the 2.4 m limit.
STARTS = {
    "pendulum": [[0.5, -1.0], [-1.2, 0.8], [1.0, -1.5]],
    "cartpole-swingup": [[0.1, -0.3, 3.0, 0.4], [-0.4, 0.5, 2.6, -1.0], [0.0, 0.2, 0.5, 0.8]],
}


def _loss(task, step, state, actions, weights, reward=None):
    """Sum of rewards over the rollout plus a fixed weighted sum of the final state (exercises every column)."""
    reward = reward or task.reward
    total = 0.0
    for t in range(actions.shape[0]):
        state = step(state, actions[t])
        total = total + reward(state, actions[t]).sum()
    return total + (weights * state).sum(), state


def _problem(name):
    task = make_diff_task(name)
    g = torch.Generator().manual_seed(7)
    s0 = torch.tensor(STARTS[name], dtype=torch.float64)
    actions = (torch.rand(STEPS, s0.shape[0], 1, generator=g, dtype=torch.float64) * 1.4 - 0.7)
    weights = torch.randn(s0.shape, generator=g, dtype=torch.float64)
    return task, s0, actions, weights


def _tape_gradient(task, s0, actions, weights):
    s = s0.float().requires_grad_(True)
    a = actions.float().requires_grad_(True)
    loss, final = _loss(task, task.rollout.step, s, a, weights.float())
    loss.backward()
    return loss.detach().double(), s.grad.double(), a.grad.double(), final.detach()


def _fd_gradient(name, task, s0, actions, weights, eps=1e-6):
    """Central differences of the float64 reference loss, one coordinate at a time."""
    cfg = get_task(name).config
    ref = REFERENCE[name]
    step = lambda s, a: ref(s, a, cfg)  # noqa: E731
    reward = (lambda s, a: REWARD_REFERENCE[name](s, a, cfg)) if name in REWARD_REFERENCE else None
    params = torch.cat((s0.flatten(), actions.flatten()))

    def f(p):
        s = p[: s0.numel()].view_as(s0)
        a = p[s0.numel():].view_as(actions)
        return float(_loss(task, step, s, a, weights, reward)[0])

    grad = torch.zeros_like(params)
    for i in range(params.numel()):
        e = torch.zeros_like(params)
        e[i] = eps
        grad[i] = (f(params + e) - f(params - e)) / (2 * eps)
    return f(params), grad[: s0.numel()].view_as(s0), grad[s0.numel():].view_as(actions)


@pytest.mark.parametrize("name", DIFF_TASKS)
def test_tape_gradient_matches_float64_finite_differences(name):
    task, s0, actions, weights = _problem(name)
    loss, g_state, g_act, final = _tape_gradient(task, s0, actions, weights)
    ref_loss, fd_state, fd_act = _fd_gradient(name, task, s0, actions, weights)

    # The float64 reference is the same function: the float32 forward agrees to float32 rounding.
    assert abs(float(loss) - ref_loss) <= 1e-4 * max(1.0, abs(ref_loss)), (float(loss), ref_loss)
    if name == "pendulum":  # the test's premise: no state came near the angle wrap or the speed clip
        assert final[:, 0].abs().max() < math.pi - 0.1 and final[:, 1].abs().max() < classic_speed(name)

    fd = torch.cat((fd_state.flatten(), fd_act.flatten()))
    tape = torch.cat((g_state.flatten(), g_act.flatten()))
    assert fd.abs().max() > 1e-2, "finite differences are flat: the test problem is degenerate"
    assert tape.abs().max() > 0.0, "tape gradient is exactly zero"
    assert g_state.abs().max() > 0.0 and g_act.abs().max() > 0.0
    # Tolerance: the tape runs in float32 (relative rounding 6e-8 per operation) through STEPS control steps whose
    # Jacobians amplify errors by at most ~10x here, and the kernels' polynomial sin/cos differ from libm by 1e-7;
    # float64 central differences with eps=1e-6 are exact to ~1e-9. Measured: 1e-7 (pendulum) and 5e-7
    # (cart-pole) of the largest entry. 1e-3 leaves a wide margin across platforms and still catches any wrong,
    # missing or zeroed term (errors of >= 1%).
    scale = float(fd.abs().max())
    err = (tape - fd).abs()
    assert float(err.max()) <= 1e-3 * scale, f"max |tape - fd| = {float(err.max()):.3g} vs scale {scale:.3g}"


def classic_speed(name):
    return get_task(name).config.max_speed - 0.5


@pytest.mark.parametrize("name", DIFF_TASKS)
def test_finite_differences_through_the_float32_kernel_agree(name):
    """Ties the check to the Warp kernel itself, not only to the reference: FD of the float32 forward.

    eps = 1e-2 keeps float32 roundoff (|loss| * 1e-7 / eps ~ 1e-4) below the truncation error (~eps^2 * |f'''|),
    so agreement is expected to ~2% only: enough to catch a sign flip, a zero or a missing term.
    """
    task, s0, actions, weights = _problem(name)
    _, g_state, g_act, _ = _tape_gradient(task, s0, actions, weights)
    eps = 1e-2
    with torch.no_grad():
        def f(s, a):
            return float(_loss(task, task.rollout.step, s.float(), a.float(), weights.float())[0])

        for idx in [(0, 0), (1, 1), (2, s0.shape[1] - 1)]:
            e = torch.zeros_like(s0)
            e[idx] = eps
            fd = (f(s0 + e, actions) - f(s0 - e, actions)) / (2 * eps)
            assert fd == pytest.approx(float(g_state[idx]), rel=2e-2, abs=2e-2), idx
        for idx in [(0, 0, 0), (3, 1, 0), (STEPS - 1, 2, 0)]:
            e = torch.zeros_like(actions)
            e[idx] = eps
            fd = (f(s0, actions + e) - f(s0, actions - e)) / (2 * eps)
            assert fd == pytest.approx(float(g_act[idx]), rel=2e-2, abs=2e-2), idx


@wp.kernel(enable_backward=False, module="unique")
def _pendulum_step_no_backward(
    p: classic.PendulumParams,
    actions: wp.array2d(dtype=float),
    state_in: wp.array2d(dtype=float),
    state_out: wp.array2d(dtype=float),
):
    i = wp.tid()
    theta, theta_dot = classic.pendulum_substep(p, state_in[i, 0], state_in[i, 1], actions[i, 0])
    state_out[i, 0] = theta
    state_out[i, 1] = theta_dot


def test_a_kernel_without_backward_raises_instead_of_returning_zero_gradients():
    task = make_diff_task("pendulum")
    sim = DiffRollout(task.rollout.params, decimation=1, kernel=_pendulum_step_no_backward)
    s = torch.tensor(STARTS["pendulum"], requires_grad=True)
    a = torch.zeros(3, 1, requires_grad=True)
    nxt = sim.step(s, a)
    assert torch.equal(nxt.detach(), task.rollout.step(s, a).detach()), "same forward as the real kernel"
    with pytest.raises(ZeroGradientError, match="exactly zero gradients"):
        nxt.sum().backward()
    # With the guard off the gradient is silently zero: exactly what the FD test would then flag.
    quiet = DiffRollout(task.rollout.params, decimation=1, kernel=_pendulum_step_no_backward, check_zero_grad=False)
    s.grad = None
    quiet.step(s, a).sum().backward()
    assert torch.count_nonzero(s.grad) == 0


def test_tasks_without_a_differentiable_rollout_say_so():
    with pytest.raises(NotDifferentiableError, match="task 'cartpole' has no differentiable rollout; "
                                                     "differentiable tasks: cartpole-swingup, pendulum, reach"):
        make_diff_task("cartpole")
    with pytest.raises(NotDifferentiableError, match="no differentiable step for physics"):
        DiffRollout(object(), decimation=1)


@pytest.mark.parametrize("name", DIFF_TASKS)
def test_torch_rewards_and_observations_match_the_env_kernels(name):
    """The SHAC path computes rewards and observations in torch; they must equal the env's post-step kernel."""
    env = make(name, num_envs=64, seed=3, config=type(get_task(name).config)(
        **{**get_task(name).config.__dict__, "use_graph": False}))
    task = make_diff_task(name)
    g = torch.Generator().manual_seed(1)
    for _ in range(40):
        state = env.state.clone()
        actions = torch.rand(64, 1, generator=g) * 2.4 - 1.2  # some beyond [-1, 1]: both sides clip
        with torch.no_grad():
            nxt = task.rollout.step(state, actions)
        r = env.step(actions)
        live = ~r.dones
        assert torch.allclose(nxt[live], env.state[live], atol=1e-6)
        assert torch.allclose(task.reward(nxt, actions), r.reward, rtol=1e-5, atol=1e-5)
        assert torch.allclose(task.obs(nxt)[live], r.obs[live], atol=1e-6)
        assert torch.equal(task.failed(nxt), r.terminated)


def test_truncation_stops_gradients_and_inplace_writes_are_caught():
    task = make_diff_task("cartpole-swingup")
    s0 = torch.tensor(STARTS["cartpole-swingup"], requires_grad=True)
    w = torch.zeros(3, 1, requires_grad=True)
    policy = lambda s, t: torch.tanh(s[:, :1] * w + 0.1 * t)  # noqa: E731
    states = task.rollout.rollout(s0, policy, 6, truncate_every=3)
    states[-1].sum().backward()
    assert torch.count_nonzero(s0.grad) == 0, "gradient crossed the truncation"
    assert w.grad.abs().max() > 0
    full = task.rollout.rollout(s0, policy, 6)
    s0.grad = None
    full[-1].sum().backward()
    assert s0.grad.abs().max() > 0

    nxt = task.rollout.step(s0, w)
    nxt.mul_(2.0)  # overwrite a state the tape recorded
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        nxt.sum().backward()


def test_no_tape_without_requires_grad_and_memory_per_step():
    task = make_diff_task("cartpole-swingup")
    with torch.no_grad():
        nxt = task.rollout.step(torch.zeros(4, 4), torch.zeros(4, 1))
    assert not nxt.requires_grad and nxt.grad_fn is None
    # cart-pole: 2 substeps x (4 values + 4 grads) + input-state grad (4) + action grad (1) floats
    assert task.rollout.bytes_per_env_step == 4 * (2 * 8 + 4 + 1)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_gradient_equals_cpu():
    for name in DIFF_TASKS:
        task, s0, actions, weights = _problem(name)
        _, g_state, g_act, _ = _tape_gradient(task, s0, actions, weights)
        gpu = make_diff_task(name, device="cuda")
        _, g_state_c, g_act_c, _ = _tape_gradient(gpu, s0.cuda(), actions.cuda(), weights.cuda())
        torch.testing.assert_close(g_state_c.cpu(), g_state, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(g_act_c.cpu(), g_act, rtol=1e-4, atol=1e-5)
