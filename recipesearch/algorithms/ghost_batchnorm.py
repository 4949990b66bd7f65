"""Ghost batch normalisation: normalise small "ghost" chunks of a large batch separately.

Hoffer et al. 2017, "Train longer, generalize better: closing the generalization gap in large batch
training of neural networks" (NeurIPS); Composer's GhostBatchNorm.
"""
from __future__ import annotations

import math
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn

from recipesearch.algorithms._surgery import replace_modules
from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State


class GhostBatchNorm2d(nn.BatchNorm2d):
    """BatchNorm2d whose training-mode statistics come from chunks of ``ghost_batch_size`` samples.

    A batch of B splits into n = ceil(B / ghost_batch_size) chunks as ``Tensor.chunk(n)`` would (Composer's
    split). Equal chunks are normalised in one vectorised pass over a [n, B/n, C, H, W] view; otherwise
    (a ragged last batch) chunk by chunk. Running statistics get one update per call with the mean of the
    chunks' statistics, as if BatchNorm had seen a batch with the ghost batches' average statistics.
    Evaluation, and batches that fit in one ghost batch, are exactly ``nn.BatchNorm2d``. Being a subclass,
    it keeps BatchNorm's state_dict keys and is found by ``isinstance`` checks (SWA's BN update, no-decay
    param groups).
    """

    def __init__(self, num_features: int, ghost_batch_size: int = 32, **kwargs: Any):
        super().__init__(num_features, **kwargs)
        self.ghost_batch_size = ghost_batch_size

    @classmethod
    def from_batchnorm(cls, bn: nn.BatchNorm2d, ghost_batch_size: int) -> GhostBatchNorm2d:
        ghost = cls(bn.num_features, ghost_batch_size, eps=bn.eps, momentum=bn.momentum, affine=bn.affine,
                    track_running_stats=bn.track_running_stats, device=_device_of(bn))
        ghost.load_state_dict(bn.state_dict())
        for name, param in ghost.named_parameters():  # a frozen scale stays frozen (airbench94's BatchNorm)
            param.requires_grad_(getattr(bn, name).requires_grad)
        ghost.train(bn.training)
        return ghost

    def forward(self, x: Tensor) -> Tensor:
        n = math.ceil(x.shape[0] / self.ghost_batch_size)
        if not self.training or n <= 1:
            return super().forward(x)
        if x.shape[0] % n == 0:
            out, mean, var = self._ghost_equal(x, n)
        else:
            outs, means, vars_ = zip(*(self._ghost_equal(c, 1) for c in x.chunk(n)))
            out, mean, var = torch.cat(outs), torch.stack(means).mean(0), torch.stack(vars_).mean(0)
        if self.track_running_stats:
            self._update_running_stats(mean, var)
        return out

    def _ghost_equal(self, x: Tensor, n: int) -> tuple[Tensor, Tensor, Tensor]:
        """Normalise n equal chunks of ``x``; returns (output, mean [C], unbiased var [C]) of the chunks."""
        b, c, h, w = x.shape
        # Statistics in fp32 even under autocast, like the native BatchNorm kernels.
        xs = x.float().reshape(n, b // n, c, h, w)
        var, mean = torch.var_mean(xs, dim=(1, 3, 4), keepdim=True, correction=0)
        y = (xs - mean) * torch.rsqrt(var + self.eps)
        if self.affine:
            y = y * self.weight.view(1, 1, c, 1, 1) + self.bias.view(1, 1, c, 1, 1)
        y = y.reshape(b, c, h, w).to(x.dtype)
        if x.is_contiguous(memory_format=torch.channels_last):
            y = y.contiguous(memory_format=torch.channels_last)
        count = (b // n) * h * w
        unbiased = var * (count / max(1, count - 1))  # running_var is unbiased in BatchNorm
        return y, mean.detach().mean((0, 1)).flatten(), unbiased.detach().mean((0, 1)).flatten()

    @torch.no_grad()
    def _update_running_stats(self, mean: Tensor, var: Tensor) -> None:
        self.num_batches_tracked.add_(1)
        # momentum None is BatchNorm's cumulative average (used by SWA's BN recomputation).
        m = self.momentum if self.momentum is not None else 1.0 / float(self.num_batches_tracked)
        self.running_mean.lerp_(mean.to(self.running_mean.dtype), m)
        self.running_var.lerp_(var.to(self.running_var.dtype), m)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, ghost_batch_size={self.ghost_batch_size}"


def _device_of(module: nn.Module) -> torch.device | None:
    tensor = next(iter(module.state_dict().values()), None)
    return tensor.device if tensor is not None else None


def apply_ghost_batchnorm(model: nn.Module, ghost_batch_size: int = 32) -> tuple[nn.Module, int]:
    """Replace every ``nn.BatchNorm2d`` by a ``GhostBatchNorm2d``; returns (model, count)."""
    return replace_modules(model, lambda m: type(m) is nn.BatchNorm2d,
                           lambda m: GhostBatchNorm2d.from_batchnorm(m, ghost_batch_size))


class GhostBatchNormParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ghost_batch_size: int = Field(32, ge=2, description="samples per normalisation group (paper/Composer: 32)")


@register_algorithm
class GhostBatchNorm(Algorithm):
    name = "ghost_batchnorm"
    description = "BatchNorm statistics from small ghost batches; regularises large-batch training"
    citation = "Hoffer et al. 2017, Train longer, generalize better"
    events = frozenset({Event.INIT})
    order = 10
    Params = GhostBatchNormParams

    def apply(self, event: Event, state: State) -> None:
        state.model, count = apply_ghost_batchnorm(state.model, self.params.ghost_batch_size)
        if count == 0:
            raise ConfigError("algorithms.ghost_batchnorm",
                              f"model {state.recipe.model.name} has no BatchNorm2d layer to replace")
