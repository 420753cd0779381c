"""Actor-critic networks (rsl-rl's models) and the deterministic inference policy that play and export share."""

from horde.policies.actor_critic import ActorCriticConfig, build_actor, rsl_model_cfgs
from horde.policies.inference import InferencePolicy

__all__ = ["ActorCriticConfig", "InferencePolicy", "build_actor", "rsl_model_cfgs"]
