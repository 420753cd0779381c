"""A task's Warp term functions on torch tensors with gradients (``horde.envs.terms.term_values_torch``): reach's
differentiable reward is the env's own terms, worked by hand and against finite differences."""

import math

import pytest
import torch

from horde.envs.reach import DIFF_STATE, DIFF_STATE_DIM, JOINTS, ReachConfig, reward_terms_from_state

NJ = len(JOINTS)


def _state(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    state = torch.rand(n, DIFF_STATE_DIM, generator=g, dtype=torch.float64) - 0.5
    actions = torch.rand(n, NJ, generator=g, dtype=torch.float64) * 1.6 - 0.8  # inside [-1, 1]: no clip kink
    return state.float(), actions.float()


def test_values_are_the_terms_worked_by_hand():
    cfg = ReachConfig()
    state = torch.zeros(2, DIFF_STATE_DIM)
    state[:, DIFF_STATE["target"]] = torch.tensor([0.3, 0.4, 0.0])  # end effector at the origin: 0.5 m away
    state[1, DIFF_STATE["joint_qd"]] = 2.0
    state[1, DIFF_STATE["prev_actions"]] = 0.5
    actions = torch.zeros(2, NJ)
    actions[1] = 3.0  # clipped to 1 by the term: (1 - 0.5)^2 per joint
    terms = reward_terms_from_state(state, actions, cfg)
    assert list(terms) == list(cfg.reward_scales), "terms come in the config's order (SHAC weights by position)"
    torch.testing.assert_close(terms["distance"], torch.tensor([0.5, 0.5]))
    expected = 1.0 - math.tanh(0.5 / 0.05)  # the precision term's default std
    torch.testing.assert_close(terms["precision"], torch.tensor([expected, expected]))
    torch.testing.assert_close(terms["action_rate"], torch.tensor([0.0, 0.25 * NJ]))
    torch.testing.assert_close(terms["joint_vel"], torch.tensor([0.0, 4.0 * NJ]))


def test_a_config_with_fewer_terms_gets_those_terms():
    cfg = ReachConfig(reward_scales={"joint_vel": -0.1, "distance": -1.0})
    state, actions = _state(3, 1)
    assert list(reward_terms_from_state(state, actions, cfg)) == ["joint_vel", "distance"]


@pytest.mark.parametrize("column", ["ee", "target", "joint_qd", "prev_actions"])
def test_gradient_matches_finite_differences(column):
    cfg = ReachConfig()
    state, actions = _state(4, 2)
    weights = torch.randn(len(cfg.reward_scales), 4, generator=torch.Generator().manual_seed(3))

    def loss(s, a):
        terms = reward_terms_from_state(s, a, cfg)
        return sum((w * v).sum() for w, v in zip(weights, terms.values()))

    s, a = state.clone().requires_grad_(True), actions.clone().requires_grad_(True)
    loss(s, a).backward()
    assert s.grad[:, DIFF_STATE[column]].abs().max() > 0
    eps = 1e-2
    for env, col in ((0, DIFF_STATE[column].start), (3, DIFF_STATE[column].stop - 1)):
        plus, minus = state.clone(), state.clone()
        plus[env, col] += eps
        minus[env, col] -= eps
        with torch.no_grad():
            fd = float(loss(plus, actions) - loss(minus, actions)) / (2 * eps)
        assert s.grad[env, col].item() == pytest.approx(fd, rel=2e-2, abs=2e-3), (column, env, col)
    # and the actions' (the action rate's): every joint of env 1
    for j in range(NJ):
        plus, minus = actions.clone(), actions.clone()
        plus[1, j] += eps
        minus[1, j] -= eps
        with torch.no_grad():
            fd = float(loss(state, plus) - loss(state, minus)) / (2 * eps)
        assert a.grad[1, j].item() == pytest.approx(fd, rel=2e-2, abs=2e-3), ("actions", j)


def test_no_gradient_asked_gives_values_only():
    cfg = ReachConfig()
    state, actions = _state(5, 4)
    with torch.no_grad():
        values = reward_terms_from_state(state, actions, cfg)
    assert all(not v.requires_grad and v.shape == (5,) for v in values.values())


def test_a_clipped_action_keeps_its_gradient_at_the_bound():
    """Actions that SHAC's straight-through clip leaves at exactly +-1: the penalty's gradient passes there, as
    ``torch.clamp``'s does (Warp's own clamp sends it to the bound at +1), and not beyond."""
    from horde.envs.pendulum import PendulumConfig
    from horde.envs.pendulum import reward_terms_from_state as pendulum_terms

    actions = torch.tensor([[1.0], [-1.0], [0.5], [1.5], [-2.0]], requires_grad=True)
    state = torch.zeros(5, 2)
    torque = pendulum_terms(state, actions, PendulumConfig())["torque"]
    torch.testing.assert_close(torque, torch.tensor([1.0, 1.0, 0.25, 1.0, 1.0]))
    (grad,) = torch.autograd.grad(torque.sum(), actions)
    torch.testing.assert_close(grad[:, 0], torch.tensor([2.0, -2.0, 1.0, 0.0, 0.0]))

    cfg = ReachConfig(reward_scales={"action_rate": 1.0})
    reach_actions = torch.zeros(2, NJ)
    reach_actions[0, 0], reach_actions[1, 0] = 1.0, -1.0
    reach_actions.requires_grad_(True)
    rate = reward_terms_from_state(torch.zeros(2, DIFF_STATE_DIM), reach_actions, cfg)["action_rate"]
    (grad,) = torch.autograd.grad(rate.sum(), reach_actions)
    torch.testing.assert_close(grad[:, 0], torch.tensor([2.0, -2.0]))


def test_the_pendulum_model_scores_as_the_env():
    """The pendulum's differentiable reward is the env's: one step of the env against the model's terms on the
    env's own post-step state, a wrapped angle included."""
    from horde.envs import make
    from horde.envs.pendulum import PendulumConfig, reward_from_state

    env = make("pendulum", num_envs=16, seed=1)
    actions = torch.linspace(-1.5, 1.5, 16)[:, None]
    r = env.step(actions)
    assert not r.dones.any()
    torch.testing.assert_close(reward_from_state(env.state.clone(), actions, PendulumConfig()), r.reward)


def test_a_float64_state_is_refused_in_one_line():
    state, actions = _state(2, 5)
    with pytest.raises(TypeError, match="Warp terms run in float32; .* torch.float64"):
        reward_terms_from_state(state.double(), actions, ReachConfig())


def test_cartpole_failure_is_its_terminated_term():
    """The differentiable model's episode ends come from the env's own ``terminated`` term: past the cart limit,
    past the pole limit (balance only; the swing-up has none), or a non-finite state."""
    from horde.envs.cartpole import CartpoleConfig, failed_from_state

    state = torch.tensor([[0.0, 0.0, 0.1, 0.0], [2.5, 0.0, 0.0, 0.0], [0.0, 0.0, 0.5, 0.0],
                          [0.0, float("nan"), 0.0, 0.0], [0.0, 0.0, 0.5 + 2 * math.pi, 0.0]])
    assert failed_from_state(state, CartpoleConfig()).tolist() == [False, True, True, True, True]
    swingup = CartpoleConfig(pole_limit=0.0)
    assert failed_from_state(state, swingup).tolist() == [False, True, False, True, False]
