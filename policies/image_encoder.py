"""A CNN encoder for images that travel flattened inside the observation vector (``algo.policy.image_encoder=cnn``).

horde's tasks expose one flat observation vector; an image (the depth camera's, say) is a block of its columns,
named in ``policy.json``'s ``observation.images`` (``name``, ``slice``, ``shape`` = [height, width]). The encoder
takes the normalized flat vector, passes each image block, reshaped to ``[B, 1, height, width]``, through its own
rsl-rl ``CNN`` and concatenates the latents to the other columns, which go through as they are. Because the input
stays one flat vector, training, play and the whole export ladder (ONNX, runner, golden I/O, TensorRT) are unchanged:
the convolutions are inside the graph.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from rsl_rl.models import MLPModel
from rsl_rl.modules import CNN
from tensordict import TensorDict
from torch import nn

from horde.sim.fields import FieldError


class ImageEncoder(nn.Module):
    """``[B, obs_dim] -> [B, other columns + CNN latents]``: every image block through its CNN, the rest as is."""

    def __init__(self, obs_dim: int, images: Sequence[dict], *, channels: Sequence[int], kernel_size: int,
                 stride: int, activation: str) -> None:
        super().__init__()
        if not images:
            raise ValueError("the image encoder needs image observations; this task has none")
        taken = torch.zeros(obs_dim, dtype=torch.bool)
        self.blocks: list[tuple[int, int, int, int]] = []
        cnns = []
        for image in images:
            (start, end), (h, w) = image["slice"], image["shape"]
            if end - start != h * w or end > obs_dim or taken[start:end].any():
                raise ValueError(f"image '{image['name']}' columns {start}:{end} do not fit [{h}, {w}] in "
                                 f"{obs_dim} observations")
            oh, ow = h, w
            for _ in channels:  # rsl-rl's CNN convolves without padding
                oh, ow = (oh - kernel_size) // stride + 1, (ow - kernel_size) // stride + 1
            if oh < 1 or ow < 1:
                raise FieldError(f"algo.policy.cnn_channels={list(channels)}: the {h} x {w} image '{image['name']}' is "
                                 f"too small for {len(channels)} convolutions of kernel {kernel_size} and stride "
                                 f"{stride}")
            taken[start:end] = True
            self.blocks.append((int(start), int(end), int(h), int(w)))
            cnns.append(CNN(input_dim=(h, w), input_channels=1, output_channels=list(channels),
                            kernel_size=kernel_size, stride=stride, activation=activation, flatten=True))
        self.cnns = nn.ModuleList(cnns)
        self.register_buffer("other", torch.nonzero(~taken).flatten())
        self.output_dim = int((~taken).sum()) + sum(int(c.output_dim) for c in cnns)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = [x.index_select(-1, self.other)]
        for (start, end, h, w), cnn in zip(self.blocks, self.cnns):
            parts.append(cnn(x[..., start:end].reshape(-1, 1, h, w)))
        return torch.cat(parts, dim=-1)


class ImageMLPModel(MLPModel):
    """rsl-rl's ``MLPModel`` with an :class:`ImageEncoder` between the normalizer and the MLP (the normalizer sees
    the raw flat vector, pixels included)."""

    def __init__(self, obs: TensorDict, obs_groups: dict[str, list[str]], obs_set: str, output_dim: int,
                 hidden_dims: Sequence[int] = (256, 256, 256), activation: str = "elu",
                 obs_normalization: bool = False, distribution_cfg: dict | None = None, *,
                 images: Sequence[dict] = (), cnn_channels: Sequence[int] = (16, 32), cnn_kernel_size: int = 3,
                 cnn_stride: int = 2) -> None:
        obs_dim = sum(obs[g].shape[-1] for g in obs_groups[obs_set])
        encoder = ImageEncoder(obs_dim, images, channels=cnn_channels, kernel_size=cnn_kernel_size,
                               stride=cnn_stride, activation=activation)
        self._encoded_dim = encoder.output_dim  # read by _get_latent_dim while MLPModel builds the MLP
        super().__init__(obs, obs_groups, obs_set, output_dim, list(hidden_dims), activation, obs_normalization,
                         distribution_cfg)
        self.image_encoder = encoder

    def get_latent(self, obs: TensorDict, masks: torch.Tensor | None = None, hidden_state=None) -> torch.Tensor:
        return self.image_encoder(super().get_latent(obs, masks, hidden_state))

    def _get_latent_dim(self) -> int:
        return self._encoded_dim
