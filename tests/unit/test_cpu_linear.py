"""The compiled update's linear layers through oneDNN on the CPU (:mod:`horde.train.cpu_linear`): the same products
and gradients as ``nn.functional.linear``, one graph under ``torch.compile``."""

from __future__ import annotations

import pytest
import torch
from rsl_rl.modules import MLP

from horde.train import cpu_linear

pytestmark = pytest.mark.skipif(not cpu_linear.available("cpu"), reason="torch built without oneDNN")


@pytest.mark.parametrize("rows, fan_in, fan_out", [(3072, 48, 128), (37, 5, 3), (1, 128, 12)])
def test_linear_and_its_gradients_match_torch(rows, fan_in, fan_out):
    gen = torch.Generator().manual_seed(rows)
    x = torch.randn(rows, fan_in, generator=gen, requires_grad=True)
    w = torch.randn(fan_out, fan_in, generator=gen, requires_grad=True)
    b = torch.randn(fan_out, generator=gen, requires_grad=True)
    g = torch.randn(rows, fan_out, generator=gen)
    ours = cpu_linear.linear(x, w, b)
    grads = torch.autograd.grad(ours, (x, w, b), g)
    ref = torch.nn.functional.linear(x, w, b)
    ref_grads = torch.autograd.grad(ref, (x, w, b), g)
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-5)
    for a, r in zip(grads, ref_grads):
        torch.testing.assert_close(a, r, rtol=1e-5, atol=1e-4)


def test_weights_get_their_gradient_when_the_input_needs_none():
    """Observations carry no gradient: the backward skips the input's and still gives the weights' and bias'."""
    x = torch.randn(64, 8)
    lin = torch.nn.Linear(8, 4)
    cpu_linear.linear(x, lin.weight, lin.bias).sum().backward()
    torch.testing.assert_close(lin.weight.grad, torch.ones(4, 64) @ x)
    torch.testing.assert_close(lin.bias.grad, torch.full((4,), 64.0))


def test_mlp_forward_is_the_mlp_and_compiles_as_one_graph():
    torch.manual_seed(0)
    mlp = MLP(48, 12, [128, 64, 32], "elu")
    x = torch.randn(256, 48)
    torch.testing.assert_close(cpu_linear.mlp_forward(mlp, x), mlp(x), rtol=1e-5, atol=1e-5)
    compiled = torch.compile(lambda t: cpu_linear.mlp_forward(mlp, t).square().mean(), fullgraph=True, dynamic=False)
    loss = compiled(x)  # fullgraph: a graph break raises
    loss.backward()
    ref = [p.grad.clone() for p in mlp.parameters()]
    mlp.zero_grad()
    mlp(x).square().mean().backward()
    for a, r in zip(ref, (p.grad for p in mlp.parameters())):
        torch.testing.assert_close(a, r, rtol=1e-4, atol=1e-6)


def test_mlp_forward_falls_back_off_float32():
    mlp = MLP(6, 2, [8], "elu").double()
    x = torch.randn(5, 6, dtype=torch.float64)
    assert torch.equal(cpu_linear.mlp_forward(mlp, x), mlp(x))
