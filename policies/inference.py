"""The deterministic policies used by play, evaluation and export: normalizer -> [image CNNs] -> [GRU/LSTM] -> MLP
-> action mean -> clip (not for a task that squashes its actions with tanh itself: :func:`clips_actions`).

Feed-forward actors become :class:`InferencePolicy` (``obs -> actions``); recurrent ones become
:class:`RecurrentInferencePolicy` with the hidden state as explicit inputs and outputs
(``(obs, *state) -> (actions, *next_state)``), so one graph serves every env and an exported ONNX needs no hidden
buffers. State tensors are batch-first, ``[batch, num_layers, hidden_dim]``, so that every input and output of an
exported policy has the batch on axis 0 and the rows of one env are contiguous (a reset zeroes one row).
"""

from __future__ import annotations

import copy

import torch
from rsl_rl.models import MLPModel, RNNModel
from torch import nn

PRECISIONS = {"fp32": torch.float32, "fp16": torch.float16}
"""Compute precisions an inference policy can run its network in (the normalizer always runs in float32)."""

ONNX_OPSET = 18
ONNX_IR_VERSION = 9
"""The ONNX default-domain opset and the highest IR version of every graph horde writes (a policy's in
:mod:`horde.deploy.onnx_export`, an actuator network's in :mod:`horde.train.actuator_fit`): readable by
onnxruntime >= 1.16."""


class _DeterministicPolicy(nn.Module):
    """What feed-forward and recurrent inference policies share: the frozen normalizer, the MLP and its head."""

    is_recurrent = False
    state_names: tuple[str, ...] = ()
    """Name of each recurrent state tensor, in argument order (empty for feed-forward policies)."""

    def __init__(self, actor: MLPModel, precision: str = "fp32", *, clip: bool = True) -> None:
        super().__init__()
        self.clip = bool(clip)
        """The mean is clipped to [-1, 1] (the env clips what it is given); False for a task that applies tanh to
        its actions itself (``task.action_squash=tanh``): it trained on tanh of the unclipped action."""
        if precision not in PRECISIONS:
            raise ValueError(f"precision '{precision}' is not one of {', '.join(PRECISIONS)}")
        self.precision = precision
        self.dtype = PRECISIONS[precision]
        self.obs_normalizer = copy.deepcopy(actor.obs_normalizer).float()
        # an image encoder (algo.policy.image_encoder=cnn) sits between the normalizer and the MLP
        encoder = getattr(actor, "image_encoder", None)
        self.encoder = copy.deepcopy(encoder).to(self.dtype) if encoder is not None else nn.Identity()
        self.mlp = copy.deepcopy(actor.mlp).to(self.dtype)
        last = list(self.mlp.children())[-1:]
        self.squash = "tanh" if last and isinstance(last[0], nn.Tanh) else None
        """``"tanh"`` when the network's mean ends in a tanh (``algo=sac``'s actor, or ``algo.policy.action_squash=
        tanh``): actions are ``tanh(mean)``, inside (-1, 1) before any clip; None otherwise. policy.json states it."""
        self.head = actor.distribution.as_deterministic_output_module() if actor.distribution else nn.Identity()
        self.obs_dim = int(actor.obs_dim)
        self.eval()

    def _act(self, latent: torch.Tensor) -> torch.Tensor:
        """MLP -> action mean -> float32 -> clip to [-1, 1] (when ``clip``); [B, latent] -> [B, num_actions]."""
        mean = self.head(self.mlp(latent)).float()
        return torch.clamp(mean, -1.0, 1.0) if self.clip else mean

    def _normalize(self, obs: torch.Tensor) -> torch.Tensor:
        """Raw float32 observations [B, obs_dim] -> normalized (and image-encoded), in the compute precision."""
        return self.encoder(self.obs_normalizer(obs).to(self.dtype))

    def normalizer_stats(self) -> dict[str, list[float]] | None:
        """Mean, std and eps of the observation normalizer, or None when observations are not normalized.

        The normalizer computes ``(obs - mean) / (std + eps)``.
        """
        norm = self.obs_normalizer
        if not hasattr(norm, "_mean"):
            return None
        return {"mean": norm.mean.tolist(), "std": norm.std.tolist(), "eps": float(norm.eps)}

    def initial_state(self, batch: int, device: torch.device | str = "cpu") -> tuple[torch.Tensor, ...]:
        """Recurrent state at an episode start (empty for feed-forward policies)."""
        return ()


class InferencePolicy(_DeterministicPolicy):
    """``obs [B, obs_dim] -> actions [B, num_actions]`` in [-1, 1], with no sampling and no hidden state.

    The observation normalizer is frozen inside, so an exported graph needs raw observations only.
    """

    def __init__(self, actor: MLPModel, precision: str = "fp32", *, clip: bool = True) -> None:
        if getattr(actor, "is_recurrent", False):
            raise TypeError("InferencePolicy is for feed-forward actors; use RecurrentInferencePolicy (or "
                            "make_inference_policy) for a recurrent one")
        super().__init__(actor, precision, clip=clip)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self._act(self._normalize(obs))


class RecurrentInferencePolicy(_DeterministicPolicy):
    """``(obs [B, obs_dim], *state) -> (actions [B, num_actions], *next_state)`` for a GRU or LSTM actor.

    ``state`` is ``(h,)`` for a GRU and ``(h, c)`` for an LSTM, each float32 ``[B, num_layers, hidden_dim]``,
    zero at an episode start (:meth:`initial_state`, :func:`reset_state`).
    """

    is_recurrent = True

    def __init__(self, actor: RNNModel, precision: str = "fp32", *, clip: bool = True) -> None:
        super().__init__(actor, precision, clip=clip)
        self.rnn = copy.deepcopy(actor.rnn.rnn).to(self.dtype)  # the bare nn.GRU/nn.LSTM, not rsl-rl's stateful wrapper
        self.rnn_type = "lstm" if isinstance(self.rnn, nn.LSTM) else "gru"
        self.hidden_dim = int(self.rnn.hidden_size)
        self.num_layers = int(self.rnn.num_layers)
        self.state_names = ("h", "c") if self.rnn_type == "lstm" else ("h",)

    def forward(self, obs: torch.Tensor, *state: torch.Tensor) -> tuple[torch.Tensor, ...]:
        # torch's RNNs want [layers, B, H]; the policy's interface is batch-first.
        x = self._normalize(obs).unsqueeze(0)
        s = [t.transpose(0, 1).to(self.dtype) for t in state]
        if self.rnn_type == "lstm":
            out, (h, c) = self.rnn(x, (s[0], s[1]))
            nxt = (h, c)
        else:
            out, h = self.rnn(x, s[0])
            nxt = (h,)
        return (self._act(out.squeeze(0)), *(t.transpose(0, 1).float() for t in nxt))

    def initial_state(self, batch: int, device: torch.device | str = "cpu") -> tuple[torch.Tensor, ...]:
        return tuple(torch.zeros(batch, self.num_layers, self.hidden_dim, device=device) for _ in self.state_names)

    def recurrent_spec(self) -> dict:
        """The recurrent core as an exported policy describes it."""
        return {"type": self.rnn_type, "hidden_dim": self.hidden_dim, "num_layers": self.num_layers,
                "state_names": list(self.state_names)}


def clips_actions(task_cfg) -> bool:
    """Whether a deterministic policy for this task config clips its mean to [-1, 1]: yes, unless the task applies
    tanh to its actions (``task.action_squash=tanh``): it trained on tanh(a) of unclipped samples, and tanh of a
    clipped mean would cap every joint at tanh(1) = 76% of its range."""
    return getattr(task_cfg, "action_squash", "clip") != "tanh"


def make_inference_policy(actor: MLPModel, precision: str = "fp32", *,
                          clip: bool = True) -> InferencePolicy | RecurrentInferencePolicy:
    """The deterministic policy of a trained actor: recurrent when the actor is; ``clip``: :func:`clips_actions`."""
    if getattr(actor, "is_recurrent", False):
        return RecurrentInferencePolicy(actor, precision, clip=clip)
    return InferencePolicy(actor, precision, clip=clip)


def reset_state(state: tuple[torch.Tensor, ...], dones: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Zero the state rows of envs whose episode just ended (``dones`` bool [B]); out of place."""
    done = dones.to(dtype=torch.bool).view(-1, 1, 1)
    return tuple(torch.where(done, torch.zeros((), dtype=s.dtype, device=s.device), s) for s in state)
