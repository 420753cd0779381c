"""horde's own PPO update (:meth:`horde.train.algorithm.HordePPO.own_update`): rsl-rl's ``update()`` with each
mini-batch's losses in one function, which ``algo.compile=true`` compiles and ``algo.symmetry.augment_critic=false``
keeps off the mirrored samples."""

from __future__ import annotations

import copy
import math
import tempfile

import pytest
import torch

from horde.sim.fields import FieldError
from horde.train.algorithm import gaussian_std, mini_batch_losses
from horde.train.config import ConfigError, compose
from horde.train.ppo import PPOTrainer


def _trainer(task: str, tmp: str, *overrides: str) -> PPOTrainer:
    cfg, task_cfg, raw = compose([f"task={task}", "num_envs=16", f"run_root={tmp}", "max_iterations=1",
                                  "algo.num_steps_per_env=8", *overrides])
    return PPOTrainer(cfg, task_cfg, raw, quiet=True)


def _updates(task: str, modes: list[dict | None], *overrides: str) -> list[tuple[dict, torch.Tensor, torch.Tensor]]:
    """One rollout, then one update from that same state per mode (None: rsl-rl's ``update()``; else
    ``use_own_update``'s keywords). Each: the logged losses, the actor's and the critic's parameters after it."""
    with tempfile.TemporaryDirectory() as tmp:
        tr = _trainer(task, tmp, *overrides)
        tr.start()
        tr.rollout(tr.alg, returns_phase="learn")
        alg = tr.alg
        snap = copy.deepcopy((alg.actor.state_dict(), alg.critic.state_dict(), alg.optimizer.state_dict(),
                              alg.storage, alg.learning_rate))
        out = []
        for mode in modes:
            alg.actor.load_state_dict(snap[0])
            alg.critic.load_state_dict(snap[1])
            alg.optimizer.load_state_dict(snap[2])
            alg.storage, alg.learning_rate = copy.deepcopy(snap[3]), snap[4]
            alg.use_own_update(**(mode or {}))  # no keywords: rsl-rl's update()
            torch.manual_seed(3)  # the mini-batch permutation
            losses = alg.update()
            flat = [torch.cat([p.detach().flatten() for p in m.parameters()]) for m in (alg.actor, alg.critic)]
            out.append((losses, *flat))
        return out


def test_own_update_loop_reproduces_rsl_rl_bit_for_bit():
    with tempfile.TemporaryDirectory() as tmp:
        tr = _trainer("quadruped", tmp, "algo.symmetry.augment=true")
        tr.start()
        tr.rollout(tr.alg, returns_phase="learn")
        alg = tr.alg
        before = copy.deepcopy((alg.actor.state_dict(), alg.critic.state_dict(), alg.optimizer.state_dict(),
                                alg.storage))
        torch.manual_seed(3)
        rsl = alg.update()
        rsl_params = [p.detach().clone() for p in list(alg.actor.parameters()) + list(alg.critic.parameters())]
        alg.actor.load_state_dict(before[0])
        alg.critic.load_state_dict(before[1])
        alg.optimizer.load_state_dict(before[2])
        alg.storage, alg.learning_rate = before[3], tr.cfg.algo.learning_rate
        alg._own, alg._losses = {"compile": False, "augment_critic": True}, {}  # the loop itself, uncompiled
        torch.manual_seed(3)
        own = alg.update()
        assert own == rsl
        for p, q in zip(list(alg.actor.parameters()) + list(alg.critic.parameters()), rsl_params):
            assert torch.equal(p, q)


def test_critic_off_the_mirrored_samples_changes_only_the_critic():
    """The actor's gradient, KL and learning rate do not depend on the value loss, and Adam and the gradient clip are
    per network: leaving the mirrored rows out of the critic's half must leave the actor bit for bit as it is."""
    (_, a_both, c_both), (losses, a_orig, c_orig) = _updates(
        "quadruped", [{"augment_critic": True, "compile": False}, {"augment_critic": False}],
        "algo.symmetry.augment=true")
    assert torch.equal(a_both, a_orig)
    assert not torch.equal(c_both, c_orig)
    assert math.isfinite(losses["value"])


def test_mini_batch_losses_value_loss_reads_only_the_critic_rows():
    with tempfile.TemporaryDirectory() as tmp:
        tr = _trainer("cartpole", tmp)
    actor, critic = tr.alg.actor, tr.alg.critic
    n, rows, obs_dim = 6, 12, actor.mlp[0].in_features
    torch.manual_seed(0)
    obs = torch.randn(rows, obs_dim)
    actions = torch.randn(rows, actor.mlp[-1].out_features)
    values, returns = torch.randn(rows, 1), torch.randn(rows, 1)
    args = (obs, obs, actions, torch.randn(rows, 1), torch.randn(rows, 1), values, returns,
            torch.randn(n, actions.shape[1]), torch.ones(n, actions.shape[1]))
    f = mini_batch_losses(actor, critic, clip_param=0.2, value_loss_coef=1.0, entropy_coef=0.0,
                          clipped_value_loss=False, n=n, critic_rows=n)
    _, _, value_loss, entropy, _, _ = f(*args)
    with torch.no_grad():
        v = critic.mlp(critic.obs_normalizer(obs[:n]))
    assert torch.allclose(value_loss, (returns[:n] - v).pow(2).mean())
    # a Gaussian's entropy per action dimension: 0.5 + 0.5 log(2 pi) + log(std)
    std = gaussian_std(actor.distribution)
    assert torch.allclose(entropy, (0.5 + 0.5 * math.log(2 * math.pi) + torch.log(std)).sum())
    args[5][n:] += 100.0  # the mirrored rows' values and returns take no part
    args[6][n:] -= 100.0
    assert torch.equal(f(*args)[2], value_loss)


def test_compiled_update_follows_rsl_rl_update():
    (rsl, rsl_a, rsl_c), (comp, comp_a, comp_c) = _updates("cartpole", [None, {"compile": True}])
    assert set(comp) == set(rsl)
    for k in rsl:
        assert comp[k] == pytest.approx(rsl[k], rel=1e-4, abs=1e-6), k
    assert torch.allclose(comp_a, rsl_a, atol=1e-5) and torch.allclose(comp_c, rsl_c, atol=1e-5)


@pytest.mark.parametrize("overrides, match", [
    (["algo.symmetry.augment=false", "algo.symmetry.augment_critic=false"], "needs algo.symmetry.augment=true"),
    (["algo.compile=true", "algo.overlap=true", "algo.max_staleness=0"], "drop one of the two"),
    (["algo.compile=true", "algo.symmetry.mirror_loss=0.5"], "mirror loss"),
])
def test_bad_combinations_fail_in_one_line(overrides, match):
    with tempfile.TemporaryDirectory() as tmp, pytest.raises(ConfigError, match=match) as err:
        _trainer("quadruped", tmp, *overrides)
    assert "\n" not in str(err.value)


def test_max_noise_std_caps_the_noise_and_its_parameter():
    """``algo.policy.max_noise_std``: the actor acts with the noise at most the cap, and after an update whose
    entropy bonus pushes the noise up the learned parameter sits on the cap (not above it, where the clamp would
    hide every gradient that lowers it); an initial noise above the cap is a one-line error."""
    with tempfile.TemporaryDirectory() as tmp:
        tr = _trainer("cartpole", tmp, "algo.policy.init_noise_std=0.5", "algo.policy.max_noise_std=0.55",
                      "algo.entropy_coef=10.0")
        tr.start()
        dist = tr.alg.actor.distribution
        with torch.no_grad():
            dist.std_param.fill_(0.9)  # as if the entropy bonus had grown it past the cap
        assert float(gaussian_std(dist).detach().max()) == pytest.approx(0.55)
        tr.rollout(tr.alg, returns_phase="learn")
        tr.alg.update()
        assert float(dist.std_param.max()) == pytest.approx(0.55)
    with (tempfile.TemporaryDirectory() as tmp,
          pytest.raises(FieldError, match="max_noise_std=0.3: must be at least") as err):
        _trainer("cartpole", tmp, "algo.policy.init_noise_std=0.5", "algo.policy.max_noise_std=0.3").start()
    assert "\n" not in str(err.value)
