"""Patch-whitening initialisation: the first convolution starts as a whitening transform of image patches.

Keller Jordan's airbench (KellerJordan/cifar10-airbench, ``airbench94.py``: ``get_patches``,
``get_whitening_parameters``, ``init_whitening_conv``); after tysam-code/hlb-CIFAR10.

How it differs from airbench94.py (defaults cited from that file):
- airbench adds a dedicated 2x2 conv (padding 0, 2 * 3 * 2 * 2 = 24 channels, bias, GELU, no BN); here the
  model's own first ``Conv2d`` is initialised as it is (kernel, stride, padding, dilation unchanged; in the
  library's models a 3x3 conv followed by BN).
- Its out_channels need not be 2 x the patch dimension d = C*kh*kw: the leading eigen-directions are
  kept (see ``whitening_filters``); channels beyond 2d keep their initial weights.
- airbench trains the whitening bias for 3 epochs, then freezes it; here a bias (the library's first convs
  have none) is left as it was and trainable.
- The estimate uses ``n_images`` (airbench: 5000) training images taken at an even stride through the
  train split (airbench: its first 5000, from an already shuffled CIFAR-10), never validation or test.

Cost: one pass over ``n_images`` images plus a d x d eigen-decomposition, at FIT_START, inside
``train_seconds`` (airbench also counts it in its time). Frozen, the first conv needs no weight gradient.
Interactions: progressive resizing trains early epochs on smaller images, whose patch statistics differ
from the full-size ones the filters were estimated on; EMA/SWA copy the weights after they are set.
"""
from __future__ import annotations

import time
from typing import Any

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn
from torch.nn.modules.utils import _pair

from recipesearch.algorithms._surgery import unwrap
from recipesearch.algorithms.base import Algorithm
from recipesearch.algorithms.registry import register_algorithm
from recipesearch.data.augment import normalize
from recipesearch.data.source import strided_sample
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.hooks.state import State

Size2 = int | tuple[int, int]


def patch_covariance(images: Tensor, kernel_size: Size2, dilation: Size2 = 1, chunk: int = 512) -> Tensor:
    """Second-moment matrix [d, d] (float64) of every stride-1 ``kernel_size`` patch of ``images`` [N, C, H, W].

    d = C * kh * kw, flattened in a conv weight's (C, kh, kw) order, so a filter bank ``W`` [out, C, kh, kw]
    applied to the patches is ``W.reshape(out, d) @ patch``. Uncentred, as in airbench (the images are
    normalised to zero channel mean, so it is close to the covariance). Only patches inside the image are
    counted (no padding), in chunks of ``chunk`` images: memory stays bounded on large datasets.
    """
    kh, kw = _pair(kernel_size)
    d = images.shape[1] * kh * kw
    total = torch.zeros(d, d, dtype=torch.float64, device=images.device)
    count = 0
    for start in range(0, images.shape[0], chunk):
        cols = F.unfold(images[start:start + chunk].float(), (kh, kw), dilation=dilation)  # [b, d, L]
        flat = cols.transpose(1, 2).reshape(-1, d)
        total += (flat.T @ flat).double()
        count += flat.shape[0]
    if count == 0:
        raise ValueError(f"no {kh}x{kw} patch fits in images of shape {tuple(images.shape)}")
    return total / count


def whitening_matrix(cov: Tensor, eps: float = 5e-4) -> tuple[Tensor, Tensor]:
    """(eigenvalues, W): eigenvalues of ``cov`` in descending order and W [d, d] whose row i is the i-th
    eigenvector / sqrt(eigenvalue_i + eps), so W cov W^T = diag(lambda / (lambda + eps)) ~ I."""
    eigenvalues, eigenvectors = torch.linalg.eigh(cov.double())
    eigenvalues, eigenvectors = eigenvalues.flip(0), eigenvectors.flip(1)
    return eigenvalues, eigenvectors.T / torch.sqrt(eigenvalues.clamp_min(0) + eps)[:, None]


def whitening_filters(images: Tensor, kernel_size: Size2, out_channels: int, eps: float = 5e-4,
                      paired: bool = True, dilation: Size2 = 1) -> Tensor:
    """Whitening filters [m, C, kh, kw] (float32) from ``images`` (normalised, [N, C, H, W]).

    ``paired`` (airbench): the filters are ``cat(W, -W)``, so a ReLU/GELU after the conv keeps both signs
    of every direction; m = min(out_channels, 2d). When m < 2d the leading (largest-variance) directions
    are kept: the first ceil(m/2) rows of W, then the first floor(m/2) negated. Unpaired: the first
    min(out_channels, d) rows of W. The caller leaves any channels beyond m at their initial weights.
    """
    kh, kw = _pair(kernel_size)
    c = images.shape[1]
    _, w = whitening_matrix(patch_covariance(images, (kh, kw), dilation), eps)
    d = w.shape[0]
    if paired:
        m = min(out_channels, 2 * d)
        rows = torch.cat((w[: (m + 1) // 2], -w[: m // 2]))
    else:
        rows = w[: min(out_channels, d)]
    return rows.reshape(-1, c, kh, kw).float()


def first_conv(model: nn.Module) -> nn.Conv2d | None:
    """The first ``nn.Conv2d`` in module order (the stem in every library and torchvision model)."""
    return next((m for m in unwrap(model).modules() if isinstance(m, nn.Conv2d)), None)


def training_images(state: State, n_images: int) -> Tensor:
    """Up to ``n_images`` training images at an even stride through the train split, normalised as the
    loader does (float32, on the device). Validation and test images are never read; streamed ones are
    read from their source."""
    images = strided_sample(state.data.train.images, n_images, state.device)
    return normalize(images, state.data.mean, state.data.std)


class PatchWhiteningParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    eps: float = Field(5e-4, gt=0, description="added to each eigenvalue before 1/sqrt (airbench: 5e-4)")
    freeze: bool = Field(True, description="keep the whitening weights fixed (airbench: frozen)")
    n_images: int = Field(5000, ge=1, description="training images the patch covariance is estimated from")
    paired: bool = Field(True, description="filters W and -W (airbench), else W only")


@register_algorithm
class PatchWhitening(Algorithm):
    name = "patch_whitening"
    description = ("Initialise the first conv as a whitening of training-image patches (optionally frozen); "
                   "the estimate counts in train_seconds")
    citation = "Keller Jordan, airbench (cifar10-airbench, airbench94.py init_whitening_conv), after hlb-CIFAR10"
    # INIT: find the conv and freeze it before the optimizer is built (so it gets no decay or momentum).
    # FIT_START (timed, like the rest of training): estimate and set the weights.
    events = frozenset({Event.INIT, Event.FIT_START})
    # INIT: after surgery at 10 (blurpool, SE), before channels_last (90) and torch_compile (95).
    # FIT_START: before EMA/SWA (50) copy the weights they average.
    order = 20
    Params = PatchWhiteningParams

    def __init__(self, **params: Any):
        super().__init__(**params)
        self.conv: nn.Conv2d | None = None

    def apply(self, event: Event, state: State) -> None:
        if event is Event.INIT:
            self.conv = self._check(first_conv(state.model), state)
            if self.params.freeze:
                self.conv.weight.requires_grad_(False)
            return
        start = time.perf_counter()
        p, conv = self.params, self.conv
        images = training_images(state, p.n_images)
        filters = whitening_filters(images, conv.kernel_size, conv.out_channels, p.eps, p.paired, conv.dilation)
        with torch.no_grad():
            conv.weight[: filters.shape[0]].copy_(filters)
        if state.device.type == "cuda":
            torch.cuda.synchronize(state.device)
        state.extra["patch_whitening_filters"] = filters.shape[0]
        state.extra["patch_whitening_seconds"] = time.perf_counter() - start  # also inside train_seconds

    @staticmethod
    def _check(conv: nn.Conv2d | None, state: State) -> nn.Conv2d:
        field = "algorithms.patch_whitening"
        if conv is None:
            raise ConfigError(field, f"model {state.recipe.model.name} has no Conv2d to whiten")
        if conv.groups != 1 or conv.in_channels != state.data.channels:
            raise ConfigError(field, f"the first Conv2d of {state.recipe.model.name} ({conv.in_channels} in, "
                                     f"groups {conv.groups}) does not read the {state.data.channels}-channel images")
        return conv
