"""The rollout precision (``algo.rollout_precision``, ``horde.policies.precision``): the actor's MLP computes in
fp16/bf16 under autocast and returns fp32; its class, state-dict keys and copies are otherwise unchanged."""

import copy

import pytest
import torch
from torch import nn

from horde.policies.precision import act_in_precision, actor_precision


class _Actor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(5, 16), nn.ELU(), nn.Linear(16, 3))


@pytest.mark.parametrize("precision, dtype", [("bf16", torch.bfloat16), ("fp16", torch.float16)])
def test_act_in_precision_quantizes_the_forward_pass_and_keeps_the_module(precision, dtype):
    torch.manual_seed(0)
    actor = _Actor()
    x = torch.randn(64, 5)
    full = actor.mlp(x)
    keys = list(actor.state_dict())
    assert actor_precision(actor) == "fp32"
    act_in_precision(actor, precision)
    assert actor_precision(actor) == precision and isinstance(actor.mlp, nn.Sequential)
    assert list(actor.state_dict()) == keys  # checkpoints and exports see the same keys
    seen = []
    hook = actor.mlp[0].register_forward_hook(lambda m, i, o: seen.append(o.dtype))
    out = actor.mlp(x)
    hook.remove()
    assert seen == [dtype] and out.dtype == torch.float32  # computed in the precision, returned in fp32
    assert 0 < (out - full).abs().max() < 0.05  # quantized, not another function
    clone = copy.deepcopy(actor)  # the overlapped schedules copy the actor
    assert actor_precision(clone) == precision and torch.equal(clone.mlp(x), out)
    act_in_precision(actor, "fp32")  # back: the original class, fp32 maths
    assert actor_precision(actor) == "fp32" and type(actor.mlp) is nn.Sequential
    assert torch.equal(actor.mlp(x), full)
    with pytest.raises(ValueError, match="choose one of fp32, bf16, fp16"):
        act_in_precision(actor, "int8")
