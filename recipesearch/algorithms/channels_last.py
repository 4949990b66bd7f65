"""Channels-last (NHWC) memory format for the model and its inputs: faster convolutions on tensor cores.

NVIDIA Deep Learning Performance Guide; Composer's ChannelsLast.
"""
from __future__ import annotations

import torch
from torch import nn

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def apply_channels_last(model: nn.Module) -> nn.Module:
    """Convert every 4-D parameter and buffer of ``model`` to NHWC in place; returns the model."""
    return model.to(memory_format=torch.channels_last)


@register_algorithm
class ChannelsLast(Algorithm):
    name = "channels_last"
    description = "NHWC memory format for model and batches; faster convs on GPUs with tensor cores"
    citation = "NVIDIA, Deep Learning Performance Guide (tensor layouts)"
    events = frozenset({Event.INIT})
    order = 90  # after any surgery that adds convolutions (blurpool, squeeze_excite)

    def apply(self, event: Event, state: State) -> None:
        apply_channels_last(state.model)
        state.channels_last = True  # the loader and evaluation send NHWC batches too
