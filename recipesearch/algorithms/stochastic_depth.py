"""Stochastic depth: randomly skip residual branches during training, deeper blocks more often.

Huang et al. 2016, "Deep Networks with Stochastic Depth" (ECCV); sample-wise "drop path" as in
Larsson et al. 2017 (FractalNet) and Composer's StochasticDepth.
"""
from __future__ import annotations

from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn

from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State
from recipesearch.models.blocks import ResidualBlock


def drop_rates(num_blocks: int, drop_rate: float, distribution: str = "linear") -> list[float]:
    """Per-block drop probability: the linear decay rule p_l = l / L * p_L (Huang et al. 2016, Eq. 4)."""
    if distribution == "uniform":
        return [drop_rate] * num_blocks
    return [drop_rate * (i + 1) / num_blocks for i in range(num_blocks)]


class DropPath(nn.Module):
    """Wraps a residual branch; in training keeps it per sample with probability 1 - p.

    ``method="sample"``: each sample's branch output is zeroed with probability p and the kept ones are
    scaled by 1 / (1 - p) so the expectation is unchanged and evaluation needs no rescaling (the branch
    is still computed: a regulariser, no speed-up). ``method="block"``: the whole batch skips the branch
    with probability p (the paper's form), which saves its forward and backward when it fires.
    At evaluation the wrapper is the identity on ``branch``.
    """

    def __init__(self, branch: nn.Module, drop_rate: float, method: str = "sample"):
        super().__init__()
        self.branch, self.drop_rate, self.method = branch, drop_rate, method

    def forward(self, x: Tensor) -> Tensor:
        p = self.drop_rate
        if not self.training or p == 0.0:
            return self.branch(x)
        if self.method == "block":
            if torch.rand(()) < p:
                # A zero that broadcasts against the shortcut, whatever shape the branch would have had.
                return x.new_zeros(())
            return self.branch(x) / (1 - p)
        out = self.branch(x)
        keep = torch.rand((out.shape[0],) + (1,) * (out.ndim - 1), device=out.device) >= p
        return out * keep.to(out.dtype) / (1 - p)

    def extra_repr(self) -> str:
        return f"drop_rate={self.drop_rate:.4f}, method={self.method}"


def apply_stochastic_depth(
    model: nn.Module,
    drop_rate: float = 0.1,
    drop_distribution: str = "linear",
    method: str = "sample",
    model_name: str | None = None,
) -> list[DropPath]:
    """Wrap ``branch`` of every ``ResidualBlock`` (in forward order) with ``DropPath``; returns the wrappers."""
    blocks = [m for m in model.modules() if isinstance(m, ResidualBlock)]
    if not blocks:
        name = model_name or type(model).__name__
        raise ConfigError("algorithms.stochastic_depth",
                          f"model {name} has no residual blocks to drop (use resnet8/20/56 or resnet9)")
    wrappers = []
    for block, p in zip(blocks, drop_rates(len(blocks), drop_rate, drop_distribution)):
        block.branch = DropPath(block.branch, p, method)
        wrappers.append(block.branch)
    return wrappers


class StochasticDepthParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    drop_rate: float = Field(0.1, ge=0, lt=1, description="drop probability of the deepest block")
    drop_distribution: Literal["linear", "uniform"] = Field("linear", description="how p grows with depth")
    method: Literal["sample", "block"] = Field("sample", description="per-sample drop path, or the whole batch")


@register_algorithm
class StochasticDepth(Algorithm):
    name = "stochastic_depth"
    description = "Randomly skip residual branches in training (deeper ones more); regularises deep ResNets"
    citation = "Huang et al. 2016, Deep Networks with Stochastic Depth"
    events = frozenset({Event.INIT})
    order = 10
    Params = StochasticDepthParams

    def apply(self, event: Event, state: State) -> None:
        p = self.params
        apply_stochastic_depth(state.model, p.drop_rate, p.drop_distribution, p.method,
                               model_name=state.recipe.model.name)
