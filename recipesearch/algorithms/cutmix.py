"""CutMix: paste a random box from another image of the batch; labels mixed by the pasted area.

Yun et al. 2019, "CutMix: Regularization Strategy to Train Strong Classifiers with Localizable Features".
"""
from __future__ import annotations

import math

import torch
from pydantic import BaseModel, ConfigDict, Field

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.label_smoothing import as_distribution
from recipesearch.algorithms.mixup import mix_permutation, sample_beta
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def cutmix_box(height: int, width: int, lam: float,
               generator: torch.Generator | None = None) -> tuple[int, int, int, int]:
    """``(top, bottom, left, right)`` of a box covering about ``1 - lam`` of the image.

    Sides are sqrt(1 - lam) of the image's, the centre is uniform over the image and the box is clipped at
    the border (the paper's rand_bbox), so the actual area can be smaller: callers re-derive lam from it.
    """
    cut = math.sqrt(1.0 - lam)
    bh, bw = round(height * cut), round(width * cut)
    dev = generator.device if generator is not None else "cpu"
    cy = int(torch.randint(height, (1,), generator=generator, device=dev))
    cx = int(torch.randint(width, (1,), generator=generator, device=dev))
    top, bottom = max(cy - bh // 2, 0), min(cy + bh - bh // 2, height)
    left, right = max(cx - bw // 2, 0), min(cx + bw - bw // 2, width)
    return top, bottom, left, right


def cutmix_batch(
    x: torch.Tensor, y: torch.Tensor, alpha: float, num_classes: int, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Paste one box (shared by the batch, as in the paper's code) from ``x[perm]`` into ``x``.

    Returns ``(x_mixed, targets, lam)`` where lam = 1 - box area / image area is the share of each image
    that is still its own, and targets = lam * y + (1 - lam) * y[perm] (a distribution [B, K]).
    """
    h, w = x.shape[-2:]
    lam = sample_beta(alpha, generator)
    perm = mix_permutation(x.shape[0], x, generator)
    top, bottom, left, right = cutmix_box(h, w, lam, generator)
    lam = 1.0 - (bottom - top) * (right - left) / (h * w)  # the area actually pasted, after clipping
    x_mixed = x.clone()
    x_mixed[..., top:bottom, left:right] = x[perm, :, top:bottom, left:right]  # copy only the box
    dist = as_distribution(y, num_classes)
    return x_mixed, torch.lerp(dist[perm], dist, lam), lam


class CutMixParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    alpha: float = Field(1.0, gt=0, description="Beta(alpha, alpha) for the kept area; 1 = uniform")


@register_algorithm
class CutMix(Algorithm):
    name = "cutmix"
    description = "Paste a box from another image, labels mixed by area; regularises longer runs"
    citation = "Yun et al. 2019, CutMix: Regularization Strategy to Train Strong Classifiers"
    events = frozenset({Event.AFTER_DATALOADER})
    order = 20  # after per-image augmentation (10-15), before label smoothing (30) and resizing (40)
    Params = CutMixParams

    def apply(self, event: Event, state: State) -> None:
        state.x, state.y, _ = cutmix_batch(state.x, state.y, self.params.alpha, state.num_classes)
