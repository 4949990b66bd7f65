"""ColOut: drop a random subset of rows and columns, training on smaller (slightly distorted) images.

MosaicML Composer, ColOut (2022); batch mode: the same rows and columns are dropped for the whole batch.
"""
from __future__ import annotations

import math

import torch
from pydantic import BaseModel, ConfigDict, Field

from recipesearch.algorithms._augment_ops import rand_device
from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def kept_indices(size: int, p_drop: float, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Sorted indices of the ceil((1 - p) * size) rows (or columns) that stay, as in Composer."""
    keep = max(1, math.ceil((1 - p_drop) * size))
    idx = torch.randperm(size, generator=generator, device=rand_device(x, generator))[:keep]
    return idx.sort().values.to(x.device)


def colout_batch(x: torch.Tensor, p_row: float, p_col: float,
                 generator: torch.Generator | None = None) -> torch.Tensor:
    """[B, C, H, W] → [B, C, H', W'] with ceil((1 - p) * side) rows/columns kept, in their original order.

    The same rows and columns for the whole batch, so the result is one tensor (two index_selects).
    """
    rows = kept_indices(x.shape[-2], p_row, x, generator)
    cols = kept_indices(x.shape[-1], p_col, x, generator)
    return x.index_select(-2, rows).index_select(-1, cols)


class ColOutParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    p_row: float = Field(0.15, ge=0, lt=1, description="fraction of rows dropped")
    p_col: float = Field(0.15, ge=0, lt=1, description="fraction of columns dropped")


@register_algorithm
class ColOut(Algorithm):
    name = "colout"
    description = "Drop random rows/columns of each batch: smaller images, faster steps, mild regulariser"
    citation = "MosaicML Composer, ColOut (2022)"
    events = frozenset({Event.AFTER_DATALOADER})
    order = 35  # after mixing (20), before progressive resizing (40): both shrink the batch
    Params = ColOutParams

    def apply(self, event: Event, state: State) -> None:
        x = colout_batch(state.x, self.params.p_row, self.params.p_col)
        state.x = x.contiguous(memory_format=torch.channels_last) if state.channels_last else x
