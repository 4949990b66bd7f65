"""Model surgery: the methods that change the network's layers or weights before training starts.

The trainer runs these at INIT, before the optimizer is built; most add or replace parameters, so build the
optimizer after calling them.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from recipesearch.algorithms import blurpool as _blurpool
from recipesearch.algorithms import channels_last as _channels_last
from recipesearch.algorithms import ghost_batchnorm as _ghost
from recipesearch.algorithms import patch_whitening as _whitening
from recipesearch.algorithms import pool_before_norm as _pool_first
from recipesearch.algorithms import squeeze_excite as _se
from recipesearch.algorithms import stochastic_depth as _depth
from recipesearch.algorithms import torch_compile as _compile

__all__ = [
    "apply_blurpool",
    "apply_channels_last",
    "apply_ghost_batchnorm",
    "apply_patch_whitening",
    "apply_pool_before_norm",
    "apply_squeeze_excite",
    "apply_stochastic_depth",
    "apply_torch_compile",
    "whitening_filters",
]


def apply_blurpool(model: nn.Module, replace_convs: bool = True, replace_maxpools: bool = True,
                   blur_first: bool = True, min_channels: int = 16) -> tuple[nn.Module, int]:
    """BlurPool (Zhang 2019): anti-alias every strided conv and max-pool; returns ``(model, replaced)``.

    The strided convs keep their weights (wrapped, not copied), so an optimizer built before still
    trains them; use the returned model, which is a new object only when ``model`` itself is replaced.

    Args:
        model: the network, changed in place.
        replace_convs: wrap strided ``Conv2d`` layers with ``in_channels >= min_channels`` in ``BlurConv2d``.
        replace_maxpools: replace strided ``MaxPool2d`` by ``BlurMaxPool2d`` (max densely, blur, subsample).
        blur_first: blur at stride 1 then the strided conv (cheap), else conv at stride 1 then a strided blur.
        min_channels: strided convs with fewer input channels (the stem) are left alone.

    Example:
        >>> from torch import nn
        >>> model = nn.Sequential(nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.MaxPool2d(2))
        >>> model, replaced = apply_blurpool(model)
        >>> replaced, [type(m).__name__ for m in model]
        (2, ['BlurConv2d', 'BlurMaxPool2d'])
        >>> model(torch.zeros(1, 16, 8, 8)).shape
        torch.Size([1, 16, 2, 2])
    """
    return _blurpool.apply_blurpool(model, replace_convs, replace_maxpools, blur_first, min_channels)


def apply_channels_last(model: nn.Module) -> nn.Module:
    """Channels-last (NHWC) memory format for every 4-D parameter and buffer, in place; returns the model.

    Send batches in the same format (``x.contiguous(memory_format=torch.channels_last)``) for the speed-up.

    Args:
        model: the network, converted in place.

    Example:
        >>> from torch import nn
        >>> model = apply_channels_last(nn.Conv2d(3, 8, 3))
        >>> model.weight.is_contiguous(memory_format=torch.channels_last)
        True
    """
    return _channels_last.apply_channels_last(model)


def apply_pool_before_norm(model: nn.Module) -> int:
    """Pool before BatchNorm (airbench's ConvGroup order): every conv, BN, activation, max-pool run inside an
    ``nn.Sequential`` becomes conv, max-pool, BN, activation, in place; returns how many were reordered.

    BN and the activation then run on a quarter of the pixels. With a positive BN scale max-pooling commutes
    with both, so the network computes nearly the same function; a BlurPool max-pool does not commute with
    them (its blur is linear, the activation is not), so there it changes the network.

    Args:
        model: the network, reordered in place (its parameters and their order are unchanged).

    Example:
        >>> from torch import nn
        >>> model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2))
        >>> apply_pool_before_norm(model), [type(m).__name__ for m in model]
        (1, ['Conv2d', 'MaxPool2d', 'BatchNorm2d', 'ReLU'])
    """
    return _pool_first.pool_before_norm(model)


def apply_squeeze_excite(model: nn.Module, latent_channels: float = 64,
                         min_channels: int = 128) -> tuple[nn.Module, int]:
    """Squeeze-and-Excitation (Hu et al. 2018): gate wide convs' channels; returns ``(model, replaced)``.

    Adds parameters: build the optimizer after this call.

    Args:
        model: the network, changed in place.
        latent_channels: bottleneck width of each gate; below 1 a fraction of the conv's channels.
        min_channels: only convs with at least this many output channels get a gate.

    Example:
        >>> from torch import nn
        >>> model, replaced = apply_squeeze_excite(nn.Sequential(nn.Conv2d(3, 8, 3)), latent_channels=2,
        ...                                        min_channels=8)
        >>> replaced, type(model[0][1]).__name__
        (1, 'SqueezeExcite2d')
    """
    return _se.apply_squeeze_excite(model, latent_channels, min_channels)


def apply_stochastic_depth(model: nn.Module, drop_rate: float = 0.1, drop_distribution: str = "linear",
                           method: str = "sample") -> list[nn.Module]:
    """Stochastic depth (Huang et al. 2016): randomly skip residual branches in training; returns the wrappers.

    Works on the library's residual models (``recipesearch.models``: resnet8/20/56, resnet9), whose
    ``ResidualBlock.branch`` it wraps in ``DropPath``; a model without such blocks raises ``ConfigError``.

    Args:
        model: a network with ``recipesearch.models.blocks.ResidualBlock`` modules, changed in place.
        drop_rate: drop probability of the deepest block.
        drop_distribution: ``"linear"`` (p grows with depth, the paper's rule) or ``"uniform"``.
        method: ``"sample"`` drops each sample's branch, ``"block"`` the whole batch's (saves its compute).

    Example:
        >>> from recipesearch.models import create_model
        >>> model = create_model("resnet8", num_classes=10, in_channels=1, image_size=16, width=0.5)
        >>> wrappers = apply_stochastic_depth(model, drop_rate=0.2)
        >>> len(wrappers), round(wrappers[-1].drop_rate, 2)
        (3, 0.2)
    """
    return _depth.apply_stochastic_depth(model, drop_rate, drop_distribution, method)


def apply_ghost_batchnorm(model: nn.Module, ghost_batch_size: int = 32) -> tuple[nn.Module, int]:
    """Ghost BatchNorm (Hoffer et al. 2017): BN statistics per chunk of the batch; returns ``(model, replaced)``.

    The BatchNorm layers are new modules with new parameters: build the optimizer after this call.

    Args:
        model: the network, changed in place.
        ghost_batch_size: samples per normalisation group.

    Example:
        >>> from torch import nn
        >>> model, replaced = apply_ghost_batchnorm(nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4)), 8)
        >>> replaced, model[1].ghost_batch_size
        (1, 8)
    """
    return _ghost.apply_ghost_batchnorm(model, ghost_batch_size)


def apply_torch_compile(model: nn.Module, mode: str = "default", backend: str = "inductor") -> nn.Module:
    """``torch.compile`` the model (compiled lazily, at the first forward); the wrapper shares its weights.

    Args:
        model: the network to compile; keep using it for ``state_dict`` and averaging.
        mode: ``"default"``, ``"reduce-overhead"`` (CUDA graphs) or ``"max-autotune"``.
        backend: a ``torch._dynamo`` backend; inductor needs a C++ compiler on CPU and Triton on CUDA.

    Example:
        >>> from torch import nn
        >>> model = nn.Linear(4, 2)
        >>> compiled = apply_torch_compile(model, backend="eager")
        >>> compiled._orig_mod is model
        True
    """
    return _compile.apply_torch_compile(model, mode, backend)


def apply_patch_whitening(model: nn.Module, images: Tensor, eps: float = 5e-4, paired: bool = True,
                          freeze: bool = True) -> nn.Conv2d:
    """Patch whitening (airbench): set the first ``Conv2d`` to whiten ``images``' patches; returns that conv.

    Call it before building the optimizer when ``freeze`` is set, so the frozen weight gets no state.

    Args:
        model: the network; its first ``nn.Conv2d`` is changed in place.
        images: normalised training images ``[N, C, H, W]`` (never validation or test images).
        eps: added to each eigenvalue before the inverse square root.
        paired: filters ``W`` and ``-W``, so the activation after the conv keeps both signs.
        freeze: ``requires_grad=False`` on the conv's weight.

    Example:
        >>> from torch import nn
        >>> _ = torch.manual_seed(0)
        >>> model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU())
        >>> conv = apply_patch_whitening(model, torch.randn(64, 1, 8, 8))
        >>> conv is model[0], conv.weight.requires_grad
        (True, False)
    """
    conv = _whitening.first_conv(model)
    if conv is None:
        raise ValueError(f"{type(model).__name__} has no Conv2d to whiten")
    filters = whitening_filters(images, conv.kernel_size, conv.out_channels, eps, paired, conv.dilation)
    with torch.no_grad():  # channels beyond the filters keep their initial weights, as in the algorithm
        conv.weight[: filters.shape[0]].copy_(filters.to(conv.weight))
    if freeze:
        conv.weight.requires_grad_(False)
    return conv


def whitening_filters(images: Tensor, kernel_size: int | tuple[int, int], out_channels: int, eps: float = 5e-4,
                      paired: bool = True, dilation: int | tuple[int, int] = 1) -> Tensor:
    """The whitening filters ``[m, C, kh, kw]`` of ``images``' patches (the weights patch whitening sets).

    Args:
        images: normalised images ``[N, C, H, W]``.
        kernel_size: the conv's kernel size.
        out_channels: the conv's output channels; m = min(out_channels, 2d) paired, min(out_channels, d) not,
            with d = C * kh * kw.
        eps: added to each eigenvalue before the inverse square root.
        paired: ``cat(W, -W)`` rather than ``W``.
        dilation: the conv's dilation.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> whitening_filters(torch.randn(32, 3, 8, 8), 2, out_channels=24).shape
        torch.Size([24, 3, 2, 2])
    """
    return _whitening.whitening_filters(images, kernel_size, out_channels, eps, paired, dilation)
