"""Actor-critic networks (rsl-rl's models) and the deterministic inference policies that play and export share.

The names below are imported on first use (PEP 562), so that ``horde.policies.config`` (the networks' config, part
of every run's config) does not import torch and rsl-rl."""

from horde._lazy import lazy_exports

__all__ = ["PRECISIONS", "RNN_TYPES", "ActorCriticConfig", "InferencePolicy", "RecurrentInferencePolicy",
           "SquashedActorCriticConfig", "SquashedGaussianActor", "build_actor", "clips_actions",
           "make_inference_policy", "reset_state", "rsl_model_cfgs"]

_HOME = {"RNN_TYPES": "config", "ActorCriticConfig": "config", "SquashedActorCriticConfig": "config",
         "SquashedGaussianActor": "squashed", "build_actor": "actor_critic",
         "rsl_model_cfgs": "actor_critic", "PRECISIONS": "inference", "InferencePolicy": "inference",
         "RecurrentInferencePolicy": "inference", "clips_actions": "inference", "make_inference_policy": "inference",
         "reset_state": "inference"}
"""Where each public name lives."""

__getattr__, __dir__ = lazy_exports(__name__, _HOME)
