"""SHAC's config (:class:`horde.train.shac.SHACTrainer`'s hyperparameters and networks): a plain dataclass with no
torch import, so that composing or describing a run's config stays light; ``horde.train.shac`` re-exports it."""

from __future__ import annotations

from dataclasses import dataclass, field

from horde.policies.config import ActorCriticConfig
from horde.sim.fields import bounded, bounded_list, choice

__all__ = ["SHACConfig"]


def _shac_policy() -> ActorCriticConfig:
    # tanh squashing as in Xu et al.; action_squash=clip clips with a straight-through gradient instead (a plain clip
    # passes none), which the pendulum needs: there the tanh saturates and its gradient vanishes.
    return ActorCriticConfig(init_noise_std=0.5, action_squash="tanh")


@dataclass(kw_only=True)
class SHACConfig:
    """SHAC hyperparameters (short-horizon actor-critic through the differentiable simulator) and the networks."""

    horizon: int = bounded(32, ge=1)
    """Control steps per iteration that the actor's gradient flows back through (the short horizon)."""
    actor_learning_rate: float = bounded(2e-3, gt=0)
    """Initial Adam learning rate of the actor."""
    critic_learning_rate: float = bounded(2e-3, gt=0)
    """Initial Adam learning rate of the critic."""
    lr_schedule: str = choice(("linear", "fixed"))
    """Learning-rate schedule of both optimizers: linear (decay to min_learning_rate at max_iterations) or fixed."""
    min_learning_rate: float = bounded(1e-5, ge=0)
    """Learning rate reached at the last iteration under the linear schedule."""
    adam_betas: list[float] = bounded_list([0.7, 0.95], ge=0, lt=1, min_len=2, max_len=2)
    """Adam's (beta1, beta2) for both optimizers."""
    gamma: float = bounded(0.99, gt=0, le=1)
    """Discount factor."""
    lam: float = bounded(0.95, ge=0, le=1)
    """TD(lambda) lambda of the critic's targets."""
    critic_iterations: int = bounded(16, ge=1)
    """Passes over each rollout's value targets."""
    critic_mini_batches: int = bounded(4, ge=1)
    """Mini-batches per critic pass."""
    target_critic_tau: float = bounded(0.2, ge=0, le=1)
    """Weight of the old target critic in each Polyak update: target <- tau * target + (1 - tau) * critic."""
    max_grad_norm: float = bounded(1.0, gt=0)
    """Gradient-norm clip of the actor and the critic."""
    reward_scale: float = bounded(1.0, gt=0)
    """Rewards are multiplied by this inside the learner (logged returns stay in the task's units)."""
    critic_replay: int = bounded(0, ge=0)
    """Earlier rollouts that the critic fits besides the newest, their TD(lambda) targets recomputed with the current
    target critic (0: only the newest, as in Xu et al.); kept in the checkpoint, so a resumed run continues exactly."""
    random_episode_start: bool = False
    """Start every env at a random point of its first episode (as rsl-rl's runner does for PPO), so that episode ends,
    and the fresh initial states and targets they bring, are spread over iterations instead of all envs sharing one
    episode clock (reach: 64 targets for 12 iterations of 16 steps)."""
    mean_bound_coef: float = bounded(1.0, ge=0)
    """With ``policy.action_squash=clip``: weight of :func:`mean_bound_penalty` (summed over the horizon, averaged
    over envs) in the actor loss; it keeps the straight-through gradient from pushing the mean far past the clip."""
    policy: ActorCriticConfig = field(default_factory=_shac_policy)
    """Actor and critic networks (feed-forward only)."""
