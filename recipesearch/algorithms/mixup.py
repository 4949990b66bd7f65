"""MixUp: train on convex combinations of pairs of images and of their label distributions.

Zhang et al. 2018, "mixup: Beyond Empirical Risk Minimization".
"""
from __future__ import annotations

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field

from recipesearch.algorithms._augment_ops import rand_device
from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.label_smoothing import as_distribution
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def sample_beta(alpha: float, generator: torch.Generator | None = None) -> float:
    """One draw from Beta(alpha, alpha), reproducible from a torch generator.

    torch's Beta sampler takes no generator, so a seed is drawn from ``generator`` (the global torch RNG
    when None, itself seeded by the trainer) and numpy draws the scalar: one tiny CPU op per batch.
    """
    seed = int(torch.randint(2**62, (1,), generator=generator, device=generator.device if generator else "cpu"))
    return float(np.random.default_rng(seed).beta(alpha, alpha))


def mix_permutation(batch_size: int, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """A random pairing of the batch with itself: sample i is mixed with sample perm[i]."""
    return torch.randperm(batch_size, generator=generator, device=rand_device(x, generator)).to(x.device)


def mixup_batch(
    x: torch.Tensor, y: torch.Tensor, alpha: float, num_classes: int, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """``(lam * x + (1 - lam) * x[perm], lam * y + (1 - lam) * y[perm], lam)`` with lam ~ Beta(α, α).

    One lam per batch, as in the paper's code and Composer. lam is folded to max(lam, 1 - lam): Beta(α, α)
    is symmetric, so the distribution of mixes is unchanged, but each sample keeps the larger share and
    α → 0 becomes the identity rather than a relabelled permutation. ``y`` may be indices [B] or a
    distribution [B, K]; the returned targets are always a distribution.
    """
    lam = sample_beta(alpha, generator)
    lam = max(lam, 1.0 - lam)
    perm = mix_permutation(x.shape[0], x, generator)
    dist = as_distribution(y, num_classes)
    x_mixed = torch.lerp(x[perm], x, lam)  # lam * x + (1 - lam) * x[perm] in one kernel
    y_mixed = torch.lerp(dist[perm], dist, lam)
    return x_mixed, y_mixed, lam


class MixUpParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    alpha: float = Field(0.2, gt=0, description="Beta(alpha, alpha) concentration: larger mixes more")


@register_algorithm
class MixUp(Algorithm):
    name = "mixup"
    description = "Blend pairs of images and their labels; regularises, pays off at longer budgets"
    citation = "Zhang et al. 2018, mixup: Beyond Empirical Risk Minimization"
    events = frozenset({Event.AFTER_DATALOADER})
    order = 20  # after per-image augmentation (10-15), before label smoothing (30) and resizing (40)
    Params = MixUpParams

    def apply(self, event: Event, state: State) -> None:
        state.x, state.y, _ = mixup_batch(state.x, state.y, self.params.alpha, state.num_classes)
