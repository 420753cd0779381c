"""In-place hidden activations for training (``horde.policies.actor_critic.activations_in_place``): the same
function and forward bits, a gradient equal up to rounding (ELU) or bit for bit (ReLU), the squash untouched, and
every PPO trainer's actor and critic built that way."""

import copy

import pytest
import torch
from torch import nn

from horde.policies.actor_critic import activations_in_place, build_actor
from horde.policies.config import ActorCriticConfig
from horde.train.config import compose
from horde.train.ppo import PPOTrainer


def _grads(model: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    model.zero_grad()
    out = model.mlp(x)
    (out.square().sum() + out.sum()).backward()
    return out.detach(), [p.grad.clone() for p in model.mlp.parameters()]


@pytest.mark.parametrize("activation, exact", [("elu", False), ("relu", True)])
def test_in_place_activations_keep_the_forward_and_the_gradient(activation, exact):
    torch.manual_seed(0)
    cfg = ActorCriticConfig(actor_hidden_dims=[32, 16], activation=activation, action_squash="tanh")
    actor = build_actor(cfg, obs_dim=7, num_actions=3)
    fast = activations_in_place(copy.deepcopy(actor))
    hidden = [m for m in fast.mlp if not isinstance(m, (nn.Linear, nn.Tanh))]
    assert hidden and all(m.inplace for m in hidden)
    assert not any(m.inplace for m in actor.mlp if hasattr(m, "inplace"))  # a copy was changed, not the original
    assert isinstance(fast.mlp[-1], nn.Tanh)  # the squash is left as it is
    x = 3.0 * torch.randn(256, 7)  # wide inputs: both branches of ELU
    out, grads = _grads(actor, x)
    fast_out, fast_grads = _grads(fast, x)
    assert torch.equal(out, fast_out)
    assert len(grads) == len(fast_grads) == 6
    for g, f in zip(grads, fast_grads):
        if exact:
            assert torch.equal(g, f)
        else:
            torch.testing.assert_close(f, g, rtol=1e-5, atol=1e-6)


def test_every_ppo_trainer_learns_with_in_place_activations(tmp_path):
    cfg, task, raw = compose([f"run_root={tmp_path}", "task=cartpole", "num_envs=16", "algo.num_steps_per_env=4",
                              "max_iterations=1", "save_interval=1000"])
    trainer = PPOTrainer(cfg, task, raw, quiet=True)
    for model in (trainer.alg.actor, trainer.alg.critic):
        acts = [m for m in model.mlp if isinstance(m, nn.ReLU)]  # the cartpole recipe's activation
        assert acts and all(m.inplace for m in acts)
    before = copy.deepcopy(trainer.alg.actor.state_dict())
    trainer.learn()
    after = trainer.alg.actor.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)  # the update ran through them
