"""RandAugment: ``depth`` random image ops per sample at a random strength up to ``severity``, batched.

Cubuk et al. 2020, "RandAugment: Practical automated data augmentation with a reduced search space";
strengths and defaults as in Composer's RandAugment (MosaicML).
"""
from __future__ import annotations

import torch
from pydantic import BaseModel, ConfigDict, Field

from recipesearch.algorithms._augment_ops import RANDAUGMENT_SPACE, OpSpace, Stats, augment_round, from_unit, to_unit
from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def randaugment_batch(
    x: torch.Tensor,
    depth: int,
    severity: float,
    generator: torch.Generator | None = None,
    *,
    mean: Stats | None = None,
    std: Stats | None = None,
    space: OpSpace = RANDAUGMENT_SPACE,
) -> torch.Tensor:
    """Apply ``depth`` rounds of one random op per sample; returns a batch of the same shape and dtype.

    ``x`` is normalised with ``mean``/``std`` (per channel, 0..1 units) or, when they are None, already
    in [0, 1]. Each round draws, per sample, an op from ``space.ops`` and a level ~ U(0.1, severity) on
    Composer's 0..10 scale, i.e. a strength of level / 10 of the op's range.
    """
    unit = to_unit(x.float(), mean, std)
    for _ in range(depth):
        unit = augment_round(unit, space, 0.01, severity / 10, generator)
    return from_unit(unit, mean, std).to(x.dtype)


class RandAugmentParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    depth: int = Field(1, ge=1, le=5, description="ops applied in sequence to each image")
    severity: float = Field(9, ge=1, le=10, description="largest op strength on a 0..10 scale")


@register_algorithm
class RandAugment(Algorithm):
    name = "randaugment"
    description = "Random ops (rotate, shear, colour, ...) per image at random strength; regularises long runs"
    citation = "Cubuk et al. 2020, RandAugment: Practical automated data augmentation"
    events = frozenset({Event.AFTER_DATALOADER})
    order = 10  # per-image augmentation comes before cutout (15) and mixing (20), as in a data pipeline
    Params = RandAugmentParams

    def apply(self, event: Event, state: State) -> None:
        p = self.params
        state.x = randaugment_batch(state.x, p.depth, p.severity, mean=state.data.mean, std=state.data.std)
