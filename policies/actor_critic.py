"""Actor-critic networks: rsl-rl's ``MLPModel`` (or ``RNNModel`` for a GRU/LSTM policy) with a Gaussian head,
configured from one typed dataclass."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from rsl_rl.models import MLPModel, RNNModel
from rsl_rl.modules.distribution import GaussianDistribution
from tensordict import TensorDict
from torch import nn

from horde.sim.fields import FieldError, bounded, bounded_list, check_fields, choice

OBS_GROUP = "policy"
"""The single observation group horde's tasks expose to rsl-rl."""

RNN_TYPES = ("none", "gru", "lstm")
IMAGE_ENCODERS = ("mlp", "cnn")
"""Valid values of :attr:`ActorCriticConfig.image_encoder`."""
ACTION_SQUASHES = ("clip", "tanh")
ACTIVATIONS = ("elu", "selu", "relu", "crelu", "lrelu", "tanh", "sigmoid", "softplus", "gelu", "swish", "mish",
               "identity")
"""rsl-rl's activation names (``rsl_rl.utils.resolve_nn_activation``)."""
"""Valid values of :attr:`ActorCriticConfig.rnn_type`."""
MAX_WIDTH = 8192
"""Widest layer a config may ask for (8192 x 8192 weights are 256 MB in fp32, four times that with Adam's state
and the gradient): wider is a typo, not a network."""
MAX_LAYERS = 16
"""Most hidden layers (or convolutions) a config may ask for."""


@dataclass(kw_only=True)
class ActorCriticConfig:
    """Network shapes, activation, exploration noise, observation normalization, the critic's value units and the
    optional recurrent core."""

    actor_hidden_dims: list[int] = bounded_list([64, 64], ge=1, le=MAX_WIDTH, min_len=1, max_len=MAX_LAYERS)
    """Hidden layer widths of the actor MLP (1 to 16 layers, each 1 to 8192 wide)."""
    critic_hidden_dims: list[int] = bounded_list([64, 64], ge=1, le=MAX_WIDTH, min_len=1, max_len=MAX_LAYERS)
    """Hidden layer widths of the critic MLP (1 to 16 layers, each 1 to 8192 wide)."""
    activation: str = choice(ACTIVATIONS, default="elu")
    """Activation of both MLPs (rsl-rl names: elu, relu, tanh, ...)."""
    init_noise_std: float = bounded(1.0, gt=0)
    """Initial standard deviation of the Gaussian action noise."""
    obs_normalization: bool = True
    """Normalize observations with running mean and std (baked into the exported policy)."""
    obs_normalization_until: int | None = bounded(None, ge=1)
    """Stop updating the normalizer once it has seen this many observations (all ranks together); None: never (PPO).
    Statistics that keep moving as the policy improves rescale the inputs under weights trained for the old scale."""
    value_scale: float = bounded(1.0, gt=0)
    """Units of the critic's values (PPO): PPO is given rewards divided by this, so the critic fits returns /
    value_scale. rsl-rl clips each value update to clip_param (0.2) in the critic's units per iteration, so returns
    in the hundreds (a reward of about 1 per step) leave an unscaled critic behind for tens of iterations (cartpole:
    median 23.5 PPO iterations to the benchmark's bar unscaled, 8 with 100). Advantages are normalized, so the policy
    update does not depend on it otherwise; the exported policy has no critic."""
    rnn_type: str = choice(RNN_TYPES)
    """Recurrent core before both MLPs: none (feed-forward), gru or lstm."""
    rnn_hidden_dim: int = bounded(64, ge=1, le=MAX_WIDTH)
    """Width of the recurrent hidden state (ignored when rnn_type=none)."""
    rnn_num_layers: int = bounded(1, ge=1, le=MAX_LAYERS)
    """Stacked recurrent layers (ignored when rnn_type=none)."""
    image_encoder: str = choice(IMAGE_ENCODERS)
    """How image observations (a depth camera's) reach the MLPs: mlp (their pixels as plain inputs) or cnn (each
    image through its own small CNN first, :mod:`horde.policies.image_encoder`; the exported graph includes it)."""
    cnn_channels: list[int] = bounded_list([16, 32], ge=1, le=1024, min_len=1, max_len=MAX_LAYERS)
    """Output channels of the CNN's convolutions, one per layer (image_encoder=cnn)."""
    cnn_kernel_size: int = bounded(3, ge=1, le=64)
    """Kernel size of every convolution (image_encoder=cnn)."""
    cnn_stride: int = bounded(2, ge=1, le=64)
    """Stride of every convolution (image_encoder=cnn)."""
    action_squash: str = choice(ACTION_SQUASHES)
    """How the actor's mean reaches [-1, 1]: clip (linear head; the env clips) or tanh (a Tanh after the head)."""

    @property
    def is_recurrent(self) -> bool:
        """True when the actor and critic carry a hidden state."""
        return self.rnn_type != "none"


def rsl_model_cfgs(cfg: ActorCriticConfig, images: Sequence[dict] = ()) -> tuple[dict, dict]:
    """rsl-rl 5.x ``actor`` and ``critic`` blocks for ``cfg`` (classes passed directly, not by name).

    A recurrent config makes both actor and critic ``RNNModel`` s, each with its own hidden state, as rsl-rl's
    recurrent actor-critic does; PPO then samples whole trajectories for its mini-batches. ``images`` are the
    task's image observations (``obs_images``: name, column slice, shape); with ``image_encoder=cnn`` both models
    are :class:`horde.policies.image_encoder.ImageMLPModel` s over them (the critic group starts with the policy's
    columns, so the slices hold for both).
    """
    check_fields(cfg, "algo.policy")  # configs built in Python, not composed, get the same one-line errors
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
        "distribution_cfg": {"class_name": GaussianDistribution, "init_std": cfg.init_noise_std, "std_type": "scalar"},
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


def build_actor(cfg: ActorCriticConfig, obs_dim: int, num_actions: int, images: Sequence[dict] = ()) -> MLPModel:
    """An untrained actor with the same structure (and state-dict keys) as the one PPO trains
    (an ``RNNModel``, a subclass of ``MLPModel``, when ``cfg`` is recurrent; an ``ImageMLPModel`` over ``images``
    with ``image_encoder=cnn``)."""
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


def squash_actions(actor: MLPModel, cfg: ActorCriticConfig) -> MLPModel:
    """Append a Tanh to the actor's MLP when ``cfg.action_squash == "tanh"`` (no parameters: state dicts are
    unchanged, and every consumer of ``actor.mlp`` (training, play, export) sees the same squashed mean)."""
    if cfg.action_squash == "tanh" and not isinstance(actor.mlp[-1], nn.Tanh):
        actor.mlp.append(nn.Tanh())
    return actor
