"""The tanh-squashed Gaussian actor of the off-policy learner (``algo=sac``, :mod:`horde.train.sac`).

Its deterministic action is ``tanh(mean)``, and the module keeps the attributes that the inference policies read
from an rsl-rl actor (``obs_normalizer``, ``mlp``, ``distribution``, ``obs_dim``, ``is_recurrent``): ``mlp`` ends in the
mean head and a ``Tanh``, so :func:`horde.policies.make_inference_policy` turns it into
``obs -> normalizer -> MLP (LayerNorm inside) -> tanh(mean)`` and ``horde play`` / ``horde export`` run a SAC run
unchanged. The log standard deviation is a second head on the same hidden features; only training samples from it.
"""

from __future__ import annotations

import math

import torch
from rsl_rl.modules import EmpiricalNormalization
from rsl_rl.utils import resolve_nn_activation
from torch import nn

from horde.policies.config import SquashedActorCriticConfig
from horde.sim.fields import check_fields

__all__ = ["SquashedGaussianActor", "hidden_layers", "squashed_log_prob"]


def hidden_layers(in_dim: int, dims: list[int], activation: str, layer_norm: bool) -> list[nn.Module]:
    """``[Linear, (LayerNorm), activation]`` for every width in ``dims``; the output layer is the caller's."""
    layers: list[nn.Module] = []
    for width in dims:
        layers.append(nn.Linear(in_dim, width))
        if layer_norm:
            layers.append(nn.LayerNorm(width))
        layers.append(resolve_nn_activation(activation))
        in_dim = width
    return layers


def squashed_log_prob(pre_tanh: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """log-density of ``a = tanh(u)``, ``u ~ N(mean, exp(log_std))``, at ``u = pre_tanh``: [B, A] -> [B].

    The change of variables subtracts ``log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))`` (exact, no epsilon)."""
    z = (pre_tanh - mean) * torch.exp(-log_std)
    gauss = -0.5 * z.square() - log_std - 0.5 * math.log(2 * math.pi)
    jacobian = 2.0 * (math.log(2.0) - pre_tanh - nn.functional.softplus(-2.0 * pre_tanh))
    return (gauss - jacobian).sum(-1)


class SquashedGaussianActor(nn.Module):
    """``obs [B, obs_dim]`` -> normalizer -> hidden layers -> (mean head -> tanh, log-std head); actions in (-1, 1)."""

    is_recurrent = False
    distribution = None
    """No rsl-rl distribution: the inference policies take ``mlp``'s output (already tanh(mean)) as the action."""

    def __init__(self, cfg: SquashedActorCriticConfig, obs_dim: int, num_actions: int) -> None:
        super().__init__()
        check_fields(cfg, "algo.policy")
        if not cfg.log_std_min < cfg.log_std_max:
            raise ValueError(f"algo.policy.log_std_min={cfg.log_std_min} must be below algo.policy.log_std_max="
                             f"{cfg.log_std_max}")
        self.obs_dim, self.num_actions = int(obs_dim), int(num_actions)
        self.obs_normalization = cfg.obs_normalization
        self.obs_normalizer = (EmpiricalNormalization(obs_dim, until=cfg.obs_normalization_until)
                               if cfg.obs_normalization else nn.Identity())
        trunk = hidden_layers(obs_dim, list(cfg.actor_hidden_dims), cfg.activation, cfg.layer_norm)
        width = cfg.actor_hidden_dims[-1]
        self.mlp = nn.Sequential(*trunk, nn.Linear(width, num_actions), nn.Tanh())
        self.log_std = nn.Linear(width, num_actions)
        self._trunk = len(trunk)
        self.log_std_min, self.log_std_max = float(cfg.log_std_min), float(cfg.log_std_max)

    def heads(self, latent: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Normalized observations [B, obs_dim] -> (mean before tanh [B, A], log std [B, A] in the config's range)."""
        h = latent
        for i in range(self._trunk):
            h = self.mlp[i](h)
        mean = self.mlp[self._trunk](h)
        squashed = torch.tanh(self.log_std(h))  # a smooth map onto [log_std_min, log_std_max]
        log_std = self.log_std_min + 0.5 * (self.log_std_max - self.log_std_min) * (squashed + 1.0)
        return mean, log_std

    def sample(self, latent: torch.Tensor, noise: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Reparameterized sample from normalized observations and standard-normal ``noise`` [B, A]: (actions
        ``tanh(mean + std * noise)`` [B, A], their log-probabilities [B], the log std [B, A])."""
        mean, log_std = self.heads(latent)
        pre = mean + torch.exp(log_std) * noise
        return torch.tanh(pre), squashed_log_prob(pre, mean, log_std), log_std

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """The deterministic action ``tanh(mean)`` of raw observations [B, obs_dim] -> [B, A]."""
        return self.mlp(self.obs_normalizer(obs))
