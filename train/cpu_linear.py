"""The PPO update's linear layers on the CPU through oneDNN rather than the BLAS torch calls for ``aten::mm``.

torch's CPU build runs a float32 ``linear`` (``addmm``) and its input gradient (``mm``) through Intel's MKL, which
on AMD processors takes its AVX2 code path: on a 2-core AMD EPYC (Zen 5, AVX-512) a ``[3072, 128] x [128, 128]``
product ran at 92 GFLOP/s per core through MKL and at about twice that through oneDNN (``mkldnn``, which torch
ships and which picks its kernels by instruction set, not by vendor), with the same numbers out. The quadruped's
update is about half matrix products (``benchmarks/README.md``, training throughput), so its forward passes and
input gradients go through oneDNN here: :func:`mlp_forward` walks an rsl-rl MLP with :func:`linear` for each
``nn.Linear``. The weight gradient (a reduction over the mini-batch's rows, where oneDNN was no faster) and the
bias gradient stay torch's own. ``linear`` is a torch custom op, so ``torch.compile`` keeps it as one call in both
graphs. Off the CPU, or in a torch build without oneDNN, :func:`mlp_forward` is the MLP's own forward.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["available", "linear", "mlp_forward"]


_ONEDNN = torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")
"""torch's oneDNN linear kernel is present (read once: ``torch.compile`` does not trace the query)."""


def available(device: torch.device | str) -> bool:
    """Whether :func:`linear` can serve ``device``: the CPU with torch's oneDNN linear kernel present."""
    return _ONEDNN and torch.device(device).type == "cpu"


def _dnn(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


@torch.library.custom_op("horde::linear", mutates_args=())
def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``nn.functional.linear(x, weight, bias)`` for 2-D contiguous float32 CPU tensors, through oneDNN."""
    return _dnn(x, weight, bias)


@linear.register_fake
def _(x, weight, bias):
    return x.new_empty(x.shape[0], weight.shape[0])


@torch.library.custom_op("horde::linear_input_grad", mutates_args=())
def _input_grad(grad: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return _dnn(grad, weight.t().contiguous(), None)


@_input_grad.register_fake
def _(grad, weight):
    return grad.new_empty(grad.shape[0], weight.shape[1])


def _setup(ctx, inputs, output):
    x, weight, _ = inputs
    ctx.save_for_backward(x, weight)


def _backward(ctx, grad):
    x, weight = ctx.saved_tensors
    grad = grad.contiguous()
    gx = _input_grad(grad, weight) if ctx.needs_input_grad[0] else None
    gw = grad.t() @ x if ctx.needs_input_grad[1] else None
    gb = grad.sum(0) if ctx.needs_input_grad[2] else None
    return gx, gw, gb


linear.register_autograd(_backward, setup_context=_setup)


def mlp_forward(mlp: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """``mlp(x)`` with every ``nn.Linear`` (with a bias, on 2-D input) through :func:`linear` where
    :func:`available`; the other modules (activations, reshapes) are the MLP's own."""
    if x.dim() != 2 or x.dtype != torch.float32 or not available(x.device):
        return mlp(x)
    for module in mlp:
        if type(module) is nn.Linear and module.bias is not None:
            x = linear(x.contiguous(), module.weight, module.bias)
        else:
            x = module(x)
    return x
