"""Actor-critic networks: rsl-rl's ``MLPModel`` (or ``RNNModel`` for a GRU/LSTM policy) with a Gaussian head,
configured from one typed dataclass."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from rsl_rl.models import MLPModel, RNNModel
from rsl_rl.modules.distribution import GaussianDistribution
from tensordict import TensorDict
from torch import nn

from horde.policies.config import (ACTION_SQUASHES, ACTIVATIONS, IMAGE_ENCODERS, MAX_LAYERS,  # noqa: F401
                                   MAX_WIDTH, RNN_TYPES, ActorCriticConfig, SquashedActorCriticConfig)
from horde.sim.fields import FieldError, check_fields

OBS_GROUP = "policy"
"""The single observation group horde's tasks expose to rsl-rl."""


def rsl_model_cfgs(cfg: ActorCriticConfig, images: Sequence[dict] = ()) -> tuple[dict, dict]:
    """rsl-rl 5.x ``actor`` and ``critic`` blocks for ``cfg`` (classes passed directly, not by name).

    A recurrent config makes both actor and critic ``RNNModel`` s, each with its own hidden state, as rsl-rl's
    recurrent actor-critic does; PPO then samples whole trajectories for its mini-batches. ``images`` are the
    task's image observations (``obs_images``: name, column slice, shape); with ``image_encoder=cnn`` both models
    are :class:`horde.policies.image_encoder.ImageMLPModel` s over them (the critic group starts with the policy's
    columns, so the slices hold for both).
    """
    check_fields(cfg, "algo.policy")  # configs built in Python, not composed, get the same one-line errors
    if cfg.max_noise_std is not None and cfg.init_noise_std > cfg.max_noise_std:
        raise FieldError(f"algo.policy.max_noise_std={cfg.max_noise_std}: must be at least algo.policy.init_noise_std "
                         f"({cfg.init_noise_std})")
    rnn = {"rnn_type": cfg.rnn_type, "rnn_hidden_dim": cfg.rnn_hidden_dim, "rnn_num_layers": cfg.rnn_num_layers}
    model_cls = RNNModel if cfg.is_recurrent else MLPModel
    cnn = {}
    if cfg.image_encoder == "cnn":
        from horde.policies.image_encoder import ImageMLPModel

        if not images:
            raise FieldError("algo.policy.image_encoder=cnn: this task has no image observations (a depth camera: "
                             "task.depth_camera.enabled=true)")
        if cfg.is_recurrent:
            raise FieldError(f"algo.policy.image_encoder=cnn: not with algo.policy.rnn_type={cfg.rnn_type}")
        model_cls = ImageMLPModel
        cnn = {"images": [dict(i) for i in images], "cnn_channels": list(cfg.cnn_channels),
               "cnn_kernel_size": cfg.cnn_kernel_size, "cnn_stride": cfg.cnn_stride}
    actor = {
        "class_name": model_cls,
        "hidden_dims": list(cfg.actor_hidden_dims),
        "activation": cfg.activation,
        "obs_normalization": cfg.obs_normalization,
        "distribution_cfg": {"class_name": GaussianDistribution, "init_std": cfg.init_noise_std, "std_type": "scalar",
                             **({"std_range": (1e-6, cfg.max_noise_std)} if cfg.max_noise_std is not None else {})},
    }
    critic = {
        "class_name": model_cls,
        "hidden_dims": list(cfg.critic_hidden_dims),
        "activation": cfg.activation,
        "obs_normalization": cfg.obs_normalization,
    }
    if cfg.is_recurrent:
        actor.update(rnn)
        critic.update(rnn)
    actor.update(cnn)
    critic.update(cnn)
    return actor, critic


def example_obs(obs_dim: int, batch: int = 2, device: torch.device | str = "cpu") -> TensorDict:
    """A zero observation TensorDict with horde's single group, for building models outside a training run."""
    return TensorDict({OBS_GROUP: torch.zeros(batch, obs_dim, device=device)}, batch_size=[batch], device=device)


def build_actor(cfg: ActorCriticConfig | SquashedActorCriticConfig, obs_dim: int, num_actions: int,
                images: Sequence[dict] = ()) -> MLPModel:
    """An untrained actor with the same structure (and state-dict keys) as the one PPO trains
    (an ``RNNModel``, a subclass of ``MLPModel``, when ``cfg`` is recurrent; an ``ImageMLPModel`` over ``images``
    with ``image_encoder=cnn``); SAC's :class:`~horde.policies.squashed.SquashedGaussianActor` for its config."""
    if isinstance(cfg, SquashedActorCriticConfig):
        from horde.policies.squashed import SquashedGaussianActor

        if images:
            raise FieldError("algo=sac reads flat observations: no image encoder")
        return SquashedGaussianActor(cfg, obs_dim, num_actions)
    actor_cfg, _ = rsl_model_cfgs(cfg, images)
    actor_cfg = dict(actor_cfg)
    model_cls = actor_cfg.pop("class_name")
    groups = {"actor": [OBS_GROUP], "critic": [OBS_GROUP]}
    return squash_actions(model_cls(example_obs(obs_dim), groups, "actor", num_actions, **actor_cfg), cfg)


def freeze_normalizers_after(models: list[MLPModel], cfg: ActorCriticConfig) -> None:
    """Make each model's observation normalizer stop learning after ``cfg.obs_normalization_until`` observations
    (rsl-rl's ``EmpiricalNormalization.until``, which its models leave unset)."""
    if cfg.obs_normalization_until is None or not cfg.obs_normalization:
        return
    if cfg.obs_normalization_until < 1:
        raise ValueError(f"obs_normalization_until must be >= 1 or None, got {cfg.obs_normalization_until}")
    for model in models:
        model.obs_normalizer.until = cfg.obs_normalization_until


_RESULT_BACKWARD = (nn.ELU, nn.SELU, nn.CELU, nn.ReLU, nn.LeakyReLU)
"""Activations whose in-place form takes its gradient from its output (``elu_`` and kin), not from its input."""


def activations_in_place(model: MLPModel) -> MLPModel:
    """Make the hidden activations of ``model``'s MLP overwrite their linear layer's output (``inplace=True``).

    Same function, same forward bits. For ELU (the default) the backward then computes ``grad * (out + 1)`` from
    the output instead of ``grad * exp(x)`` from a kept input (PyTorch's rule for ``elu_``): no exponential in the
    backward and one activation buffer fewer; PPO's update is 0.84x (quadruped), 0.96x (G1), 0.93x (lift) as long
    on the 2-core CPU (``benchmarks/update_in_place.py``). The gradient's rounding differs from the out-of-place
    form by about an ulp (``exp(x)`` against ``expm1(x) + 1``); ReLU's is bit for bit the same. Safe because each
    of them follows a ``Linear``, whose backward needs its input, not its output; autograd's version counter would
    raise, not miscompute, were that ever not so."""
    layers = list(model.mlp)
    for before, layer in zip(layers, layers[1:]):
        if isinstance(layer, _RESULT_BACKWARD) and isinstance(before, nn.Linear):
            layer.inplace = True
    return model


def squash_actions(actor: MLPModel, cfg: ActorCriticConfig) -> MLPModel:
    """Append a Tanh to the actor's MLP when ``cfg.action_squash == "tanh"`` (no parameters: state dicts are
    unchanged, and every consumer of ``actor.mlp`` (training, play, export) sees the same squashed mean)."""
    if cfg.action_squash == "tanh" and not isinstance(actor.mlp[-1], nn.Tanh):
        actor.mlp.append(nn.Tanh())
    return actor
