"""SAC's pieces against small hand-computed cases (issue 70): the replay ring's indexing, n-step targets, the
bootstrap at time-outs and not at terminations, the categorical projection, clipped double-Q, symmetry
augmentation, the return scale and the squashed actor's deterministic policy."""

import math

import numpy as np
import pytest
import torch

from horde.envs.symmetry import Mirror
from horde.policies import SquashedActorCriticConfig, build_actor, make_inference_policy
from horde.policies.squashed import squashed_log_prob
from horde.train.replay import ReplayRing, ReturnScale, nstep_returns
from horde.train.sac import TwinCritic, categorical_projection, critic_target, mirror_batch, pick_lower


def _ring(steps: int, *, num_envs: int = 2, length: int = 3) -> ReplayRing:
    """A ring after ``steps`` vector steps; step s of env e observes 10 s + e, acts -(10 s + e), earns s."""
    ring = ReplayRing(num_envs, length, obs_dim=1, num_actions=1, device="cpu")
    for s in range(steps):
        obs = torch.tensor([[10.0 * s + e] for e in range(num_envs)])
        no = torch.zeros(num_envs, dtype=torch.bool)
        ring.add(obs, -obs, torch.full((num_envs,), float(s)), no, no, obs + 10.0)
    return ring


def test_ring_wraps_around_in_time_major_columns():
    ring = _ring(5)
    assert (ring.pos, ring.count, ring.size) == (2, 5, 3)
    # columns 0, 1, 2 hold steps 3, 4 (written after the wrap) and 2 (the oldest kept)
    assert ring.obs[:, :, 0].tolist() == [[30.0, 31.0], [40.0, 41.0], [20.0, 21.0]]
    assert ring.actions[:, :, 0].tolist() == [[-30.0, -31.0], [-40.0, -41.0], [-20.0, -21.0]]
    assert ring.rewards.tolist() == [[3.0, 3.0], [4.0, 4.0], [2.0, 2.0]]


def test_windows_follow_each_env_in_order_and_stop_at_the_newest_step():
    ring = _ring(5)
    cols, valid = ring.window(torch.tensor([2, 0, 1]), 3)
    assert cols.tolist() == [[2, 0, 1], [0, 1, 2], [1, 2, 0]]  # steps 2,3,4 / 3,4,(2) / 4,(2),(3)
    assert valid.tolist() == [[True, True, True], [True, True, False], [True, False, False]]
    batch = ring.gather(torch.tensor([2, 0, 1, 2]), torch.tensor([0, 1, 0, 1]), n=3, gamma=1.0)
    assert batch["obs"][:, 0].tolist() == [20.0, 31.0, 40.0, 21.0]
    assert batch["actions"][:, 0].tolist() == [-20.0, -31.0, -40.0, -21.0]
    assert batch["returns"].tolist() == [2 + 3 + 4, 3 + 4, 4, 2 + 3 + 4]
    assert batch["next_obs"][:, 0].tolist() == [50.0, 51.0, 50.0, 51.0]  # the next obs of the window's last step
    assert batch["discount"].tolist() == [1.0, 1.0, 1.0, 1.0]


def test_before_the_wrap_windows_stop_at_the_newest_step():
    ring = _ring(2, length=4)
    batch = ring.gather(torch.tensor([0, 1]), torch.tensor([1, 0]), n=3, gamma=0.5)
    assert batch["returns"].tolist() == [0 + 0.5 * 1, 1]
    assert batch["discount"].tolist() == [0.25, 0.5]
    assert batch["next_obs"][:, 0].tolist() == [21.0, 20.0]


def test_sampling_is_uniform_over_filled_slots():
    g = torch.Generator().manual_seed(0)
    ring = _ring(2, num_envs=3, length=4)
    col, env = ring.sample_slots(12_000, g)
    assert set(col.tolist()) == {0, 1} and set(env.tolist()) == {0, 1, 2}
    counts = np.bincount((col * 3 + env).numpy(), minlength=6)
    assert counts.min() > 1_800 and counts.max() < 2_200  # 2,000 each
    full = _ring(6, num_envs=1, length=4)
    assert set(full.sample_slots(400, g)[0].tolist()) == {0, 1, 2, 3}


def test_nstep_returns_with_ends_inside_the_window():
    gamma = 0.5
    r = torch.tensor([[1.0, 2.0, 4.0]] * 6)
    T, F = True, False
    dones = torch.tensor([[F, F, F], [F, T, F], [T, F, F], [F, F, F], [F, F, T], [F, T, T]])
    term = torch.tensor([[F, F, F], [F, T, F], [F, F, F], [F, F, F], [F, F, T], [F, F, T]])
    valid = torch.tensor([[T, T, T]] * 3 + [[T, T, F]] + [[T, T, T]] * 2)
    returns, last, discount = nstep_returns(r, dones, term, valid, gamma)
    # full window; failure at step 1; time-out at step 0; ring ends after step 1; failure at step 2;
    # time-out at step 1 (step 2's failure is the next episode's)
    assert returns.tolist() == [3.0, 2.0, 1.0, 2.0, 3.0, 2.0]
    assert last.tolist() == [2, 1, 0, 1, 2, 1]
    assert discount.tolist() == [0.125, 0.0, 0.5, 0.25, 0.0, 0.25]


def test_a_time_out_bootstraps_from_the_pre_reset_observation_and_a_termination_does_not():
    ring = ReplayRing(2, 4, obs_dim=1, num_actions=1, device="cpu")
    no, yes = torch.zeros(2, dtype=torch.bool), torch.ones(2, dtype=torch.bool)
    first = torch.tensor([[0.0], [0.0]])
    ring.add(first, first, torch.ones(2), no, no, torch.tensor([[1.0], [1.0]]))
    # step 1 ends both episodes: env 0 by the time limit, env 1 by failure; next_obs is the pre-reset observation
    ring.add(torch.tensor([[1.0], [1.0]]), first, torch.ones(2), torch.tensor([False, True]),
             torch.tensor([True, False]), torch.tensor([[7.0], [8.0]]))
    ring.add(torch.tensor([[-3.0], [-3.0]]), first, torch.ones(2), no, no, torch.tensor([[-2.0], [-2.0]]))
    batch = ring.gather(torch.tensor([0, 0]), torch.tensor([0, 1]), n=3, gamma=0.9)
    assert batch["returns"].tolist() == pytest.approx([1.9, 1.9])  # both windows stop at the episode's end
    assert batch["discount"].tolist() == pytest.approx([0.81, 0.0])
    assert batch["next_obs"][:, 0].tolist() == [7.0, 8.0]  # not -3, the next episode's first observation

    # The target: a point mass at the return after a termination, whatever the bootstrap observation; the
    # critic's values after a time-out.
    torch.manual_seed(0)
    cfg = SquashedActorCriticConfig(actor_hidden_dims=[8], critic_hidden_dims=[8])
    actor = build_actor(cfg, 1, 1)
    critic = TwinCritic(1, 1, [8], "relu", True, num_atoms=5)
    support = torch.linspace(-2.0, 2.0, 5)
    returns, discount = torch.tensor([0.5, 0.5]), batch["discount"]
    noise = torch.zeros(2, 1)
    alpha = torch.tensor(0.1)
    a = critic_target(critic, actor, support, returns, discount, torch.tensor([[7.0], [8.0]]), noise, alpha, -2, 2)
    b = critic_target(critic, actor, support, returns, discount, torch.tensor([[-7.0], [-8.0]]), noise, alpha, -2, 2)
    torch.testing.assert_close(a[1], torch.tensor([0.0, 0.0, 0.5, 0.5, 0.0]))
    torch.testing.assert_close(a[1], b[1])
    assert not torch.allclose(a[0], b[0])


def test_categorical_projection_by_hand():
    support = torch.linspace(-2.0, 2.0, 5)  # atoms -2, -1, 0, 1, 2
    atoms = torch.tensor([[-2.5, -0.5, 0.25, 1.0, 3.0]])
    probs = torch.tensor([[0.1, 0.2, 0.3, 0.15, 0.25]])
    out = categorical_projection(atoms, probs, -2.0, 2.0)
    # -2.5 clips to -2; -0.5 splits evenly over -1 and 0; 0.25 gives 3/4 to 0, 1/4 to 1; 1 is an atom; 3 clips to 2
    expected = torch.tensor([[0.1, 0.1, 0.1 + 0.225, 0.075 + 0.15, 0.25]])
    torch.testing.assert_close(out, expected)
    assert (out @ support).item() == pytest.approx(0.1 * -2 + 0.1 * -1 + 0.225 * 1 + 0.25 * 2)
    three = categorical_projection(torch.tensor([[0.5, 1.0, 1.5]]), torch.tensor([[0.2, 0.3, 0.5]]), 0.0, 2.0)
    torch.testing.assert_close(three, torch.tensor([[0.1, 0.1 + 0.3 + 0.25, 0.25]]))
    g = torch.Generator().manual_seed(1)
    probs = torch.softmax(torch.randn(64, 11, generator=g), -1)
    shifted = 0.3 + 0.97 * torch.linspace(-1, 1, 11)[None, :] + torch.randn(64, 1, generator=g)
    torch.testing.assert_close(categorical_projection(shifted, probs, -1.0, 1.0).sum(-1), torch.ones(64))


def test_clipped_double_q_picks_the_lower_distribution_per_sample():
    support = torch.tensor([0.0, 1.0])
    probs = torch.tensor([[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.6, 0.4]]])  # [2 critics, 2 samples, 2 atoms]
    assert torch.equal(pick_lower(probs, support), torch.stack([probs[0, 0], probs[1, 1]]))


def test_symmetry_augmentation_doubles_the_batch_with_mirrored_samples():
    obs_m = Mirror(np.array([1, 0, 2]), np.array([1.0, 1.0, -1.0]))
    act_m = Mirror(np.array([1, 0]), np.array([-1.0, -1.0]))
    batch = {"obs": torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), "next_obs": torch.tensor([[7.0, 8.0, 9.0],
                                                                                                  [0.0, 1.0, 2.0]]),
             "actions": torch.tensor([[0.1, 0.2], [0.3, 0.4]]), "returns": torch.tensor([1.0, 2.0]),
             "discount": torch.tensor([0.9, 0.0])}
    out = mirror_batch(batch, obs_m, act_m)
    assert out["obs"].tolist() == [[1, 2, 3], [4, 5, 6], [2, 1, -3], [5, 4, -6]]
    assert out["next_obs"].tolist() == [[7, 8, 9], [0, 1, 2], [8, 7, -9], [1, 0, -2]]
    torch.testing.assert_close(out["actions"], torch.tensor([[0.1, 0.2], [0.3, 0.4], [-0.2, -0.1], [-0.4, -0.3]]))
    assert out["returns"].tolist() == [1, 2, 1, 2] and out["discount"].tolist() == pytest.approx([0.9, 0, 0.9, 0])


def test_return_scale_tracks_the_discounted_return():
    scale = ReturnScale(2, gamma=0.5, return_max=100.0, device="cpu")
    scale.update(torch.tensor([1.0, 3.0]), torch.tensor([True, False]))  # G = [1, 3]; env 0's episode ends
    scale.update(torch.tensor([2.0, 1.0]), torch.tensor([False, False]))  # G = [2, 1 + 1.5]
    seen = np.array([1.0, 3.0, 2.0, 2.5])
    assert scale.returns.tolist() == [2.0, 2.5]
    assert scale.mean.item() == pytest.approx(seen.mean()) and scale.var.item() == pytest.approx(seen.var())
    assert scale.scale().item() == pytest.approx(1 / math.sqrt(seen.var() + 1e-8), rel=1e-5)
    capped = ReturnScale(1, gamma=0.5, return_max=1.0, device="cpu")
    capped.update(torch.tensor([4.0]), torch.tensor([False]))
    assert capped.scale().item() == pytest.approx(0.25)  # max |G| / return_max = 4 rules when the spread is 0


def test_the_deterministic_policy_is_the_tanh_of_the_mean_and_the_log_prob_is_exact():
    torch.manual_seed(0)
    cfg = SquashedActorCriticConfig(actor_hidden_dims=[16, 16])
    actor = build_actor(cfg, 4, 2)
    actor.obs_normalizer.update(torch.randn(100, 4) * 3 + 1)
    obs = torch.randn(5, 4)
    mean, log_std = actor.heads(actor.obs_normalizer(obs))
    torch.testing.assert_close(actor(obs), torch.tanh(mean))
    policy = make_inference_policy(actor, clip=True)
    assert policy.squash == "tanh"
    torch.testing.assert_close(policy(obs), torch.tanh(mean))
    assert (log_std >= cfg.log_std_min).all() and (log_std <= cfg.log_std_max).all()
    pre = mean + log_std.exp() * torch.randn(5, 2)
    dist = torch.distributions.TransformedDistribution(torch.distributions.Normal(mean, log_std.exp()),
                                                       [torch.distributions.TanhTransform()])
    torch.testing.assert_close(squashed_log_prob(pre, mean, log_std), dist.log_prob(torch.tanh(pre)).sum(-1),
                               atol=1e-4, rtol=1e-4)
