"""The actor-critic's config (network shapes, noise, normalization, recurrence, image encoder): plain dataclasses
with no torch import, so that composing or describing a run's config (``horde train --help``) stays light;
:mod:`horde.policies.actor_critic` builds the networks from it."""

from __future__ import annotations

from dataclasses import dataclass

from horde.sim.fields import bounded, bounded_list, choice

__all__ = ["ACTION_SQUASHES", "ACTIVATIONS", "IMAGE_ENCODERS", "MAX_LAYERS", "MAX_WIDTH", "RNN_TYPES",
           "ActorCriticConfig", "SquashedActorCriticConfig"]

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
    max_noise_std: float | None = bounded(None, gt=0)
    """Largest standard deviation of the action noise (at least ``init_noise_std``); None: no cap. The actor acts
    with the noise clamped to it (rsl-rl's ``std_range``) and PPO projects the learned parameter back onto it after
    every update, so a gradient that lowers the noise is never lost under the clamp. A cap keeps an entropy bonus
    from growing the noise late in a run (the G1's 60-minute CPU hour: 0.36 -> 0.64, its figures falling with it)."""
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


@dataclass(kw_only=True)
class SquashedActorCriticConfig:
    """The networks of the off-policy learner (``algo=sac``): a tanh-squashed Gaussian actor whose log-std is an
    output of the network, and twin Q critics; both MLPs may put a LayerNorm before every hidden activation.
    :func:`horde.policies.build_actor` builds the actor from it (play and export of a SAC run)."""

    actor_hidden_dims: list[int] = bounded_list([128, 128], ge=1, le=MAX_WIDTH, min_len=1, max_len=MAX_LAYERS)
    """Hidden layer widths of the actor MLP (1 to 16 layers, each 1 to 8192 wide)."""
    critic_hidden_dims: list[int] = bounded_list([256, 256], ge=1, le=MAX_WIDTH, min_len=1, max_len=MAX_LAYERS)
    """Hidden layer widths of each critic MLP (1 to 16 layers, each 1 to 8192 wide)."""
    activation: str = choice(ACTIVATIONS, default="relu")
    """Activation of both MLPs (rsl-rl names: relu, elu, ...)."""
    layer_norm: bool = True
    """A LayerNorm after every hidden linear layer, before its activation (actor and critics; exported with the
    actor)."""
    obs_normalization: bool = True
    """Normalize observations with running mean and std, learnt from the collected steps (baked into the exported
    policy; the critics read the same statistics)."""
    obs_normalization_until: int | None = bounded(None, ge=1)
    """Stop updating the normalizer once it has seen this many observations; None: never."""
    log_std_min: float = -5.0
    """Smallest log standard deviation of the actor's Gaussian before the tanh."""
    log_std_max: float = 0.0
    """Largest log standard deviation of the actor's Gaussian before the tanh (above ``log_std_min``)."""
