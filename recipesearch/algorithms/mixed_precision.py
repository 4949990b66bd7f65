"""Automatic mixed precision: run the forward pass and loss in bfloat16 or float16 under autocast.

Micikevicius et al. 2018, "Mixed Precision Training".
"""
from __future__ import annotations

from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State

AUTOCAST_DTYPES: dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp16": torch.float16}


def autocast_dtype(name: str) -> torch.dtype:
    """``"bf16"`` / ``"fp16"`` → the torch dtype autocast runs in."""
    return AUTOCAST_DTYPES[name]


class MixedPrecisionParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # bf16: fp32's exponent range, so no loss scaling and CPU autocast support; fp16 needs a GradScaler
    # (the trainer creates one after INIT) and pays off on older GPUs without bf16.
    dtype: Literal["bf16", "fp16"] = Field("bf16", description="autocast dtype")


@register_algorithm
class MixedPrecision(Algorithm):
    name = "mixed_precision"
    description = "Forward and loss in bf16/fp16 under autocast; faster on GPUs and on CPUs with AMX"
    citation = "Micikevicius et al. 2018, Mixed Precision Training"
    events = frozenset({Event.INIT})
    order = 50
    Params = MixedPrecisionParams

    def apply(self, event: Event, state: State) -> None:
        # Overrides the recipe's ``precision`` field: the algorithm is the searchable form of that switch.
        state.autocast_dtype = autocast_dtype(self.params.dtype)
