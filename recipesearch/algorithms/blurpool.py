"""BlurPool: low-pass filter before every downsampling so the network is closer to shift-invariant.

Zhang 2019, "Making Convolutional Networks Shift-Invariant Again" (ICML); Composer's BlurPool.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn

from recipesearch.algorithms._surgery import replace_modules
from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


def blur_filter(channels: int) -> Tensor:
    """The normalised binomial filter [1,2,1] x [1,2,1] / 16, one copy per channel: [C, 1, 3, 3]."""
    row = torch.tensor([1.0, 2.0, 1.0])
    kernel = torch.outer(row, row)
    return (kernel / kernel.sum()).expand(channels, 1, 3, 3).contiguous()


def blur_2d(x: Tensor, filt: Tensor, stride: int | tuple[int, int] = 1) -> Tensor:
    """Depthwise blur with ``filt`` [C, 1, 3, 3], zero padding 1 (so stride 1 keeps the size).

    Under CPU autocast the blur runs in fp32: oneDNN's bf16 depthwise backward is the slow path (CNN width 32
    at 28x28, batch 85, 2 threads: 12 ms against under 2 ms in fp32), which cost bf16 more than its convs
    saved; with the blur in fp32, that model's bf16 forward and backward take 0.75x fp32's time."""
    if x.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
        with torch.autocast("cpu", enabled=False):
            return F.conv2d(x.float(), filt.float(), stride=stride, padding=1, groups=x.shape[1])
    return F.conv2d(x, filt.to(x.dtype), stride=stride, padding=1, groups=x.shape[1])


class BlurConv2d(nn.Module):
    """A strided conv with anti-aliasing (Zhang 2019, Sec. 3).

    ``blur_first``: blur at stride 1, then the original strided conv (Composer's default: the conv sees a
    low-passed input, cost +1 depthwise pass at full resolution). Otherwise: the conv at stride 1, then a
    strided blur ("ConvBlurPool"), which costs the conv ``stride**2`` times more.
    """

    def __init__(self, conv: nn.Conv2d, blur_first: bool = True):
        super().__init__()
        self.blur_first = blur_first
        self.stride = conv.stride
        if not blur_first:
            conv.stride = (1, 1)  # the same weights at stride 1; the blur does the downsampling
        self.conv = conv
        channels = conv.in_channels if blur_first else conv.out_channels
        self.register_buffer("filt", blur_filter(channels).to(conv.weight.device))

    @classmethod
    def from_conv(cls, conv: nn.Conv2d, blur_first: bool = True) -> BlurConv2d:
        return cls(conv, blur_first)

    def forward(self, x: Tensor) -> Tensor:
        if self.blur_first:
            return self.conv(blur_2d(x, self.filt))
        return blur_2d(self.conv(x), self.filt, self.stride)


class BlurMaxPool2d(nn.Module):
    """MaxBlurPool (Zhang 2019, Fig. 2): max-pool densely (stride 1), then blur and subsample.

    ``blur_first``: blur at stride 1, then the original strided max-pool instead: no dense max, whose forward and
    backward at full resolution are the dearest op of a small CNN's step on a CPU (CNN width 32 on 28x28, batch
    85, 2 threads: the model's step 28 ms against 35 ms); the max's own subsampling is then not anti-aliased.
    The output has the shape of the original ``MaxPool2d`` (any kernel, stride and padding, ceil_mode off).
    """

    def __init__(self, pool: nn.MaxPool2d, device: torch.device | None = None, blur_first: bool = False):
        super().__init__()
        self.kernel_size, self.stride = pool.kernel_size, pool.stride
        self.padding, self.dilation, self.ceil_mode = pool.padding, pool.dilation, pool.ceil_mode
        self.blur_first = blur_first
        # A max-pool knows neither its channel count nor its device: one [1,1,3,3] filter, expanded per call,
        # created on the model's device by apply_blurpool.
        self.register_buffer("filt", blur_filter(1).to(device))

    def forward(self, x: Tensor) -> Tensor:
        filt = self.filt.expand(x.shape[1], 1, 3, 3)
        if self.blur_first:
            return F.max_pool2d(blur_2d(x, filt), self.kernel_size, self.stride, self.padding, self.dilation,
                                self.ceil_mode)
        dense = F.max_pool2d(x, self.kernel_size, 1, self.padding, self.dilation, self.ceil_mode)
        return blur_2d(dense, filt, self.stride)


def _is_strided_conv(module: nn.Module, min_channels: int) -> bool:
    # Composer skips convs with few input channels: blurring the RGB stem input buys nothing.
    return (type(module) is nn.Conv2d and max(module.stride) > 1 and module.in_channels >= min_channels
            and module.groups == 1)


def _is_strided_maxpool(module: nn.Module) -> bool:
    # ceil_mode pools are left alone: the dense-then-blur form would lose their extra output row.
    return (isinstance(module, nn.MaxPool2d) and max(nn.modules.utils._pair(module.stride)) > 1
            and not module.ceil_mode)


def apply_blurpool(
    model: nn.Module,
    replace_convs: bool = True,
    replace_maxpools: bool = True,
    blur_first: bool = True,
    min_channels: int = 16,
    maxpool_blur_first: bool = False,
) -> tuple[nn.Module, int]:
    """Replace strided convs (in_channels >= ``min_channels``) and strided max-pools; returns (model, count)."""
    count = 0
    if replace_convs:
        model, n = replace_modules(model, lambda m: _is_strided_conv(m, min_channels),
                                   lambda m: BlurConv2d.from_conv(m, blur_first))
        count += n
    if replace_maxpools:
        device = next(model.parameters(), torch.empty(0)).device
        model, n = replace_modules(model, _is_strided_maxpool,
                                   lambda m: BlurMaxPool2d(m, device, maxpool_blur_first))
        count += n
    return model, count


class BlurPoolParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    replace_convs: bool = Field(True, description="anti-alias strided convs")
    replace_maxpools: bool = Field(True, description="max-pool -> MaxBlurPool")
    blur_first: bool = Field(True, description="blur then strided conv (cheap) vs conv then strided blur")
    min_channels: int = Field(16, ge=1, description="skip strided convs with fewer input channels (the stem)")
    maxpool_blur_first: bool = Field(False, description="blur then strided max-pool (cheap) vs dense max then "
                                                        "strided blur (Zhang's MaxBlurPool)")


@register_algorithm
class BlurPool(Algorithm):
    name = "blurpool"
    description = "Blur before strided convs and max-pools: more shift-invariant, small accuracy gain, some cost"
    citation = "Zhang 2019, Making Convolutional Networks Shift-Invariant Again"
    events = frozenset({Event.INIT})
    order = 10  # surgery before squeeze_excite sees the convs, and before channels_last (90)
    Params = BlurPoolParams

    def apply(self, event: Event, state: State) -> None:
        p = self.params
        state.model, count = apply_blurpool(state.model, p.replace_convs, p.replace_maxpools, p.blur_first,
                                            p.min_channels, p.maxpool_blur_first)
        if count == 0:
            # A silent no-op would be measured as if it were the method; say so instead.
            raise ConfigError("algorithms.blurpool",
                              f"model {state.recipe.model.name} has no strided conv (with >= {p.min_channels} "
                              "input channels) or max-pool to replace")
