"""Actor-critic networks (rsl-rl's models) and the deterministic inference policies that play and export share."""

from horde.policies.actor_critic import RNN_TYPES, ActorCriticConfig, build_actor, rsl_model_cfgs
from horde.policies.inference import (
    PRECISIONS,
    InferencePolicy,
    RecurrentInferencePolicy,
    clips_actions,
    make_inference_policy,
    reset_state,
)

__all__ = ["PRECISIONS", "RNN_TYPES", "ActorCriticConfig", "InferencePolicy", "RecurrentInferencePolicy",
           "build_actor", "clips_actions", "make_inference_policy", "reset_state", "rsl_model_cfgs"]
