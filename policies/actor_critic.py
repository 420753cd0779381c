"""Actor-critic networks: rsl-rl's ``MLPModel`` with a Gaussian head, configured from one typed dataclass."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from rsl_rl.models import MLPModel
from rsl_rl.modules.distribution import GaussianDistribution
from tensordict import TensorDict

OBS_GROUP = "policy"
"""The single observation group horde's tasks expose to rsl-rl."""


@dataclass(kw_only=True)
class ActorCriticConfig:
    """Network shapes, activation, exploration noise and observation normalization."""

    actor_hidden_dims: list[int] = field(default_factory=lambda: [64, 64])
    """Hidden layer widths of the actor MLP."""
    critic_hidden_dims: list[int] = field(default_factory=lambda: [64, 64])
    """Hidden layer widths of the critic MLP."""
    activation: str = "elu"
    """Activation of both MLPs (rsl-rl names: elu, relu, tanh, ...)."""
    init_noise_std: float = 1.0
    """Initial standard deviation of the Gaussian action noise."""
    obs_normalization: bool = True
    """Normalize observations with running mean and std (baked into the exported policy)."""


def rsl_model_cfgs(cfg: ActorCriticConfig) -> tuple[dict, dict]:
    """rsl-rl 5.x ``actor`` and ``critic`` blocks for ``cfg`` (classes passed directly, not by name)."""
    actor = {
        "class_name": MLPModel,
        "hidden_dims": list(cfg.actor_hidden_dims),
        "activation": cfg.activation,
        "obs_normalization": cfg.obs_normalization,
        "distribution_cfg": {"class_name": GaussianDistribution, "init_std": cfg.init_noise_std, "std_type": "scalar"},
    }
    critic = {
        "class_name": MLPModel,
        "hidden_dims": list(cfg.critic_hidden_dims),
        "activation": cfg.activation,
        "obs_normalization": cfg.obs_normalization,
    }
    return actor, critic


def example_obs(obs_dim: int, batch: int = 2, device: torch.device | str = "cpu") -> TensorDict:
    """A zero observation TensorDict with horde's single group, for building models outside a training run."""
    return TensorDict({OBS_GROUP: torch.zeros(batch, obs_dim, device=device)}, batch_size=[batch], device=device)


def build_actor(cfg: ActorCriticConfig, obs_dim: int, num_actions: int) -> MLPModel:
    """An untrained actor with the same structure (and state-dict keys) as the one PPO trains."""
    actor_cfg, _ = rsl_model_cfgs(cfg)
    actor_cfg = dict(actor_cfg)
    actor_cfg.pop("class_name")
    groups = {"actor": [OBS_GROUP], "critic": [OBS_GROUP]}
    return MLPModel(example_obs(obs_dim), groups, "actor", num_actions, **actor_cfg)
