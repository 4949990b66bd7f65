"""TrivialAugment Wide: one random op per image at a uniformly random strength over wide ranges.

Müller & Hutter 2021, "TrivialAugment: Tuning-free Yet State-of-the-Art Data Augmentation".
"""
from __future__ import annotations

import torch
from pydantic import BaseModel, ConfigDict, Field

from recipesearch.algorithms._augment_ops import (
    RANDAUGMENT_SPACE,
    WIDE_SPACE,
    OpSpace,
    Stats,
    augment_round,
    from_unit,
    to_unit,
)
from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def trivialaugment_batch(
    x: torch.Tensor,
    generator: torch.Generator | None = None,
    *,
    mean: Stats | None = None,
    std: Stats | None = None,
    space: OpSpace = WIDE_SPACE,
) -> torch.Tensor:
    """One op per sample, strength ~ U(0, 1) of the op's range (the paper's 31 bins, made continuous).

    ``x`` is normalised with ``mean``/``std`` or, when they are None, already in [0, 1].
    """
    unit = augment_round(to_unit(x.float(), mean, std), space, 0.0, 1.0, generator)
    return from_unit(unit, mean, std).to(x.dtype)


class TrivialAugmentParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # The method is tuning-free; ``wide=False`` is the paper's TA (RA) variant with RandAugment's ranges.
    wide: bool = Field(True, description="wide op ranges (TA Wide) rather than RandAugment's")


@register_algorithm
class TrivialAugment(Algorithm):
    name = "trivialaugment"
    description = "One random op per image at uniform random strength; tuning-free augmentation"
    citation = "Müller & Hutter 2021, TrivialAugment: Tuning-free Yet State-of-the-Art Data Augmentation"
    events = frozenset({Event.AFTER_DATALOADER})
    order = 10  # per-image augmentation comes before cutout (15) and mixing (20), as in a data pipeline
    Params = TrivialAugmentParams

    def apply(self, event: Event, state: State) -> None:
        space = WIDE_SPACE if self.params.wide else RANDAUGMENT_SPACE
        state.x = trivialaugment_batch(state.x, mean=state.data.mean, std=state.data.std, space=space)
