"""The deterministic policy used by play, evaluation and export: normalizer -> MLP -> action mean -> clip."""

from __future__ import annotations

import copy

import torch
from rsl_rl.models import MLPModel
from torch import nn


class InferencePolicy(nn.Module):
    """``obs [B, obs_dim] -> actions [B, num_actions]`` in [-1, 1], with no sampling and no hidden state.

    The observation normalizer is frozen inside, so an exported graph needs raw observations only.
    """

    def __init__(self, actor: MLPModel) -> None:
        super().__init__()
        self.obs_normalizer = copy.deepcopy(actor.obs_normalizer)
        self.mlp = copy.deepcopy(actor.mlp)
        self.head = actor.distribution.as_deterministic_output_module() if actor.distribution else nn.Identity()
        self.obs_dim = actor.obs_dim
        self.eval()

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.clamp(self.head(self.mlp(self.obs_normalizer(obs))), -1.0, 1.0)

    def normalizer_stats(self) -> dict[str, list[float]] | None:
        """Mean, std and eps of the observation normalizer, or None when observations are not normalized."""
        norm = self.obs_normalizer
        if not hasattr(norm, "_mean"):
            return None
        return {"mean": norm.mean.tolist(), "std": norm.std.tolist(), "eps": float(norm.eps)}
