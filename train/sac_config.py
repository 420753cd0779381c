"""SAC's config (:class:`horde.train.sac.SACTrainer`'s hyperparameters and networks): plain dataclasses with no torch
import, so that composing or describing a run's config stays light; ``horde.train.sac`` re-exports it.

The defaults are the CPU-cheap regime of FlashSAC (``shared/RECIPES.md``, off-policy recipes): 2 updates of 2,048
samples per vector step, 101 atoms, 3-step returns, gamma 0.99, LayerNorm MLPs of 128 (actor) and 256 (critics)
units, rewards normalized by the spread of the discounted return. Every value is configurable; tuned values go in
``configs/tuned/<task>_sac.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from horde.policies.config import SquashedActorCriticConfig
from horde.sim.fields import bounded, bounded_list

__all__ = ["SACConfig", "SACSymmetryConfig"]


@dataclass(kw_only=True)
class SACSymmetryConfig:
    """Left-right symmetry of the legged velocity tasks (:mod:`horde.envs.symmetry`) as data augmentation."""

    augment: bool = False
    """Append the mirror image of every sampled transition (observations, actions and next observations mirrored;
    returns and discounts kept) to the batch: each update learns from twice the samples."""


@dataclass(kw_only=True)
class SACConfig:
    """Soft actor-critic for thousands of envs (FastSAC / FlashSAC-style): a replay ring on the env's device,
    large-batch updates, twin distributional critics with clipped double-Q, n-step returns, automatic entropy
    tuning."""

    num_steps_per_env: int = bounded(8, ge=1)
    """Vector steps of every env per iteration (each followed by ``num_updates`` updates once learning started)."""
    num_updates: int = bounded(2, ge=1)
    """Gradient updates of the critics after every vector step (the update-to-data ratio, per vector step)."""
    batch_size: int = bounded(2048, ge=1)
    """Transitions sampled for each update (twice as many with symmetry augmentation)."""
    buffer_length: int = bounded(1024, ge=1)
    """Transitions kept per env: the replay ring holds ``num_envs x buffer_length`` of them."""
    learning_starts: int = bounded(10, ge=1)
    """Vector steps collected before the first update."""
    gamma: float = bounded(0.99, gt=0, le=1)
    """Discount factor."""
    n_step: int = bounded(3, ge=1)
    """Steps of each return before it bootstraps (fewer at an episode end or at the newest step of the ring)."""
    tau: float = bounded(0.05, gt=0, le=1)
    """Polyak weight of the critics in each target update: target <- (1 - tau) * target + tau * critic."""
    actor_update_period: int = bounded(2, ge=1)
    """Update the actor and the entropy temperature after every this many critic updates."""
    actor_learning_rate: float = bounded(3e-4, gt=0)
    """AdamW learning rate of the actor."""
    critic_learning_rate: float = bounded(3e-4, gt=0)
    """AdamW learning rate of the critics."""
    alpha_learning_rate: float = bounded(3e-4, gt=0)
    """Adam learning rate of the log entropy temperature."""
    weight_decay: float = bounded(1e-3, ge=0)
    """AdamW weight decay of the actor and the critics."""
    adam_betas: list[float] = bounded_list([0.9, 0.95], ge=0, lt=1, min_len=2, max_len=2)
    """(beta1, beta2) of every optimizer."""
    max_grad_norm: float = bounded(0.0, ge=0)
    """Gradient-norm clip of the actor and the critics (0: no clip)."""
    init_alpha: float = bounded(0.01, gt=0)
    """Initial entropy temperature."""
    target_entropy: float | None = None
    """Entropy the temperature steers the policy to (nats, estimated as -E[log pi] of the squashed Gaussian); None:
    -num_actions."""
    num_atoms: int = bounded(101, ge=2)
    """Atoms of each critic's categorical return distribution (C51)."""
    v_min: float = -5.0
    """Lowest atom, in the critic's units (rewards times the return scale when ``reward_normalization``)."""
    v_max: float = 5.0
    """Highest atom (above ``v_min``)."""
    reward_normalization: bool = True
    """Divide rewards by the running spread of the discounted return (:class:`horde.train.replay.ReturnScale`), so
    returns fit the fixed support on any task; false: rewards in the task's units."""
    return_max: float = bounded(5.0, gt=0)
    """With reward normalization: the largest normalized discounted return (the scale is also at most
    ``return_max / max|G|``)."""
    random_episode_start: bool = False
    """Start every env at a random point of its first episode, so that episode ends are spread over steps."""
    compile: bool = False
    """Run the losses under ``torch.compile`` (the first update compiles; on the CPU it needs a C++ compiler)."""
    symmetry: SACSymmetryConfig = field(default_factory=SACSymmetryConfig)
    """Left-right symmetry augmentation of sampled batches (legged velocity tasks)."""
    policy: SquashedActorCriticConfig = field(default_factory=SquashedActorCriticConfig)
    """Actor and critic networks."""
