"""Squeeze-and-Excitation: reweight a conv's channels by a gate computed from their global average.

Hu et al. 2018, "Squeeze-and-Excitation Networks" (CVPR); Composer's SqueezeExcite (wraps convs).
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn

from recipesearch.algorithms._surgery import replace_modules
from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def latent_width(channels: int, latent_channels: float) -> int:
    """Width of the bottleneck: an absolute count if >= 1, else a fraction of ``channels`` (1/r in the paper)."""
    width = latent_channels if latent_channels >= 1 else latent_channels * channels
    return max(1, int(width))


class SqueezeExcite2d(nn.Module):
    """x * sigmoid(W2 relu(W1 avgpool(x))) (Hu et al. 2018, Fig. 2).

    The two FC layers are 1x1 convs, as in Composer: the model keeps ``fc`` as its last ``nn.Linear``.
    """

    def __init__(self, channels: int, latent: int):
        super().__init__()
        self.gate = nn.Sequential(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(channels, latent, 1), nn.ReLU(inplace=True),
            nn.Conv2d(latent, channels, 1), nn.Sigmoid(),
        )

    def forward(self, x: Tensor) -> Tensor:
        return x * self.gate(x)


def apply_squeeze_excite(
    model: nn.Module, latent_channels: float = 64, min_channels: int = 128
) -> tuple[nn.Module, int]:
    """Replace each Conv2d with >= ``min_channels`` outputs by Sequential(conv, SE); returns (model, count)."""

    def build(conv: nn.Module) -> nn.Module:
        se = SqueezeExcite2d(conv.out_channels, latent_width(conv.out_channels, latent_channels))
        return nn.Sequential(conv, se.to(conv.weight.device))

    return replace_modules(model, lambda m: isinstance(m, nn.Conv2d) and m.out_channels >= min_channels, build)


class SqueezeExciteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Composer's default 64; below 1 it is a ratio (the paper's reduction r=16 is 0.0625).
    latent_channels: float = Field(64, gt=0, description="bottleneck width (>= 1) or fraction of channels (< 1)")
    # Composer's 128 targets ImageNet widths; our CPU models are narrow (16-64 channels), hence the low bound.
    min_channels: int = Field(128, ge=1, description="only convs with at least this many output channels")


@register_algorithm
class SqueezeExcite(Algorithm):
    name = "squeeze_excite"
    description = "Channel attention gate after wide convs; accuracy for a little extra compute"
    citation = "Hu et al. 2018, Squeeze-and-Excitation Networks"
    events = frozenset({Event.INIT})
    order = 10
    Params = SqueezeExciteParams

    def apply(self, event: Event, state: State) -> None:
        p = self.params
        state.model, count = apply_squeeze_excite(state.model, p.latent_channels, p.min_channels)
        if count == 0:
            raise ConfigError("algorithms.squeeze_excite.min_channels",
                              f"model {state.recipe.model.name} has no conv with >= {p.min_channels} output "
                              "channels; lower min_channels")
