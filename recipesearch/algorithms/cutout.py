"""Cutout: zero one random square per image (the mean, once normalised), so no patch can be relied on.

DeVries & Taylor 2017, "Improved Regularization of Convolutional Neural Networks with Cutout".
"""
from __future__ import annotations

import torch
from pydantic import BaseModel, ConfigDict, Field

from recipesearch.algorithms._augment_ops import rand_device
from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def cutout_mask(batch_size: int, height: int, width: int, length: int, device: torch.device,
                generator: torch.Generator | None = None) -> torch.Tensor:
    """Bool [B, H, W], true inside a ``length``-sided square per sample, centred uniformly on the image.

    As in the paper the centre may lie near the border, where the square is clipped. Built by
    broadcasting a row test [B, H, 1] against a column test [B, 1, W]: no loop over samples.
    """
    dev = rand_device(torch.empty(0, device=device), generator)
    cy = torch.randint(height, (batch_size,), generator=generator, device=dev).to(device)
    cx = torch.randint(width, (batch_size,), generator=generator, device=dev).to(device)
    top, left = cy - length // 2, cx - length // 2
    rows = torch.arange(height, device=device)
    cols = torch.arange(width, device=device)
    in_rows = (rows >= top[:, None]) & (rows < (top + length)[:, None])
    in_cols = (cols >= left[:, None]) & (cols < (left + length)[:, None])
    return in_rows[:, :, None] & in_cols[:, None, :]


def cutout_batch(x: torch.Tensor, length_fraction: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """Zero a square of side ``round(length_fraction * min(H, W))`` at a random centre in each image."""
    b, _, h, w = x.shape
    length = round(length_fraction * min(h, w))
    if length <= 0:
        return x
    mask = cutout_mask(b, h, w, length, x.device, generator)
    return x.masked_fill(mask[:, None], 0.0)


class CutoutParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # 0.5: the paper's 16 px square on 32 px CIFAR images (Composer's default too)
    length_fraction: float = Field(0.5, gt=0, le=1, description="side of the square, as a fraction of the image")


@register_algorithm
class Cutout(Algorithm):
    name = "cutout"
    description = "Zero one random square per image; cheap regulariser for longer runs"
    citation = "DeVries & Taylor 2017, Improved Regularization of CNNs with Cutout"
    events = frozenset({Event.AFTER_DATALOADER})
    order = 15  # after per-image augmentation (10), before mixing (20): it is part of the image pipeline
    Params = CutoutParams

    def apply(self, event: Event, state: State) -> None:
        state.x = cutout_batch(state.x, self.params.length_fraction)
