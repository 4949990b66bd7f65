"""Each speed-up method's pure function under a stable public name, for use without the trainer.

``recipesearch.train`` drives these through hook classes (``recipesearch/algorithms/``); a hand-written
loop can call them directly::

    from recipesearch import functional as rf
    model, _ = rf.apply_blurpool(model)
    x, y, _ = rf.mixup_batch(x, y, alpha=0.2, num_classes=10)

Every function here delegates to the algorithm module's own function: the numerics live there, once.
The wrappers exist so that the public names, argument order and documentation (``Args:`` and a runnable
``Example:``, executed by ``tests/test_functional.py``) stay put when an algorithm module is reorganised.
Targets are class indices ``[B]`` or class distributions ``[B, K]`` throughout; batches are ``[B, C, H, W]``.
To apply a whole recipe with its schedules (when each method switches on, its strength over training), use
``recipesearch.apply`` (``recipesearch/own_loop.py``) instead.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import torch
from torch import Tensor, nn

from recipesearch.algorithms import bce_loss as _bce
from recipesearch.algorithms import blurpool as _blurpool
from recipesearch.algorithms import channels_last as _channels_last
from recipesearch.algorithms import colout as _colout
from recipesearch.algorithms import cutmix as _cutmix
from recipesearch.algorithms import cutout as _cutout
from recipesearch.algorithms import ema as _ema
from recipesearch.algorithms import flip_tta as _flip_tta
from recipesearch.algorithms import ghost_batchnorm as _ghost
from recipesearch.algorithms import gradient_clipping as _clipping
from recipesearch.algorithms import label_smoothing as _smoothing
from recipesearch.algorithms import layer_freezing as _freezing
from recipesearch.algorithms import lookahead as _lookahead
from recipesearch.algorithms import mixed_precision as _precision
from recipesearch.algorithms import mixup as _mixup
from recipesearch.algorithms import patch_whitening as _whitening
from recipesearch.algorithms import progressive_resizing as _resizing
from recipesearch.algorithms import randaugment as _randaugment
from recipesearch.algorithms import sam as _sam
from recipesearch.algorithms import selective_backprop as _selective
from recipesearch.algorithms import squeeze_excite as _se
from recipesearch.algorithms import stochastic_depth as _depth
from recipesearch.algorithms import swa as _swa
from recipesearch.algorithms import torch_compile as _compile
from recipesearch.algorithms import trivialaugment as _trivial
from recipesearch.algorithms._augment_ops import RANDAUGMENT_SPACE, WIDE_SPACE

__all__ = [
    "apply_blurpool",
    "apply_channels_last",
    "apply_ghost_batchnorm",
    "apply_patch_whitening",
    "apply_squeeze_excite",
    "apply_stochastic_depth",
    "apply_torch_compile",
    "autocast_dtype",
    "bce_loss",
    "clip_gradients",
    "colout_batch",
    "cutmix_batch",
    "cutout_batch",
    "ema_smoothing",
    "ema_update",
    "flip_tta_logits",
    "freeze_fraction",
    "freeze_layers",
    "init_classifier_bias",
    "lookahead_sync",
    "mixup_batch",
    "progressive_resize",
    "randaugment_batch",
    "recompute_bn",
    "resize_batch",
    "sam_perturb",
    "sam_restore",
    "select_using_loss",
    "smooth_labels",
    "trivialaugment_batch",
    "whitening_filters",
]

Stats = Sequence[float] | Tensor

# ---- model surgery (the trainer runs these at INIT, before the optimizer is built) -------------------


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


# ---- per-batch transforms (the trainer runs these after the batch is loaded) -------------------------


def mixup_batch(x: Tensor, y: Tensor, alpha: float, num_classes: int,
                generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, float]:
    """MixUp (Zhang et al. 2018): blend the batch with a permutation of itself; returns ``(x, targets, lam)``.

    One ``lam ~ Beta(alpha, alpha)`` per batch, folded to ``max(lam, 1 - lam)``; the targets are the same
    blend of the two samples' label distributions ``[B, K]``: train with a soft-target cross-entropy.

    Args:
        x: the batch ``[B, C, H, W]``.
        y: class indices ``[B]`` or distributions ``[B, K]``.
        alpha: Beta concentration; larger mixes more.
        num_classes: K.
        generator: random source (the global torch RNG when None).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x, y, lam = mixup_batch(torch.rand(4, 1, 8, 8), torch.tensor([0, 1, 2, 3]), 0.2, 10, g)
        >>> y.shape, torch.allclose(y.sum(1), torch.ones(4)), 0.5 <= lam <= 1
        (torch.Size([4, 10]), True, True)
    """
    return _mixup.mixup_batch(x, y, alpha, num_classes, generator)


def cutmix_batch(x: Tensor, y: Tensor, alpha: float, num_classes: int,
                 generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, float]:
    """CutMix (Yun et al. 2019): paste one box from a permutation of the batch; returns ``(x, targets, lam)``.

    ``lam`` is the share of each image that is still its own; the targets mix by it (``[B, K]``).

    Args:
        x: the batch ``[B, C, H, W]``.
        y: class indices ``[B]`` or distributions ``[B, K]``.
        alpha: Beta(alpha, alpha) for the kept area; 1 is uniform.
        num_classes: K.
        generator: random source (the global torch RNG when None).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x, y, lam = cutmix_batch(torch.rand(4, 3, 8, 8), torch.tensor([0, 1, 2, 3]), 1.0, 4, g)
        >>> x.shape, y.shape, 0 <= lam <= 1
        (torch.Size([4, 3, 8, 8]), torch.Size([4, 4]), True)
    """
    return _cutmix.cutmix_batch(x, y, alpha, num_classes, generator)


def cutout_batch(x: Tensor, length_fraction: float = 0.5, generator: torch.Generator | None = None) -> Tensor:
    """Cutout (DeVries & Taylor 2017): zero one random square per image (the mean, once normalised).

    Args:
        x: the batch ``[B, C, H, W]``, normalised.
        length_fraction: side of the square as a fraction of ``min(H, W)``.
        generator: random source (the global torch RNG when None).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> out = cutout_batch(torch.ones(2, 1, 8, 8), 0.5, g)
        >>> out.shape, bool((out == 0).any()), bool((out == 1).any())
        (torch.Size([2, 1, 8, 8]), True, True)
    """
    return _cutout.cutout_batch(x, length_fraction, generator)


def colout_batch(x: Tensor, p_row: float = 0.15, p_col: float = 0.15,
                 generator: torch.Generator | None = None) -> Tensor:
    """ColOut (Composer): drop random rows and columns, the same for the whole batch; a smaller batch.

    Args:
        x: the batch ``[B, C, H, W]``.
        p_row: fraction of rows dropped (``ceil((1 - p_row) * H)`` stay).
        p_col: fraction of columns dropped.
        generator: random source (the global torch RNG when None).

    Example:
        >>> colout_batch(torch.rand(2, 3, 20, 20), p_row=0.25, p_col=0.5).shape
        torch.Size([2, 3, 15, 10])
    """
    return _colout.colout_batch(x, p_row, p_col, generator)


def randaugment_batch(x: Tensor, depth: int = 1, severity: float = 9, generator: torch.Generator | None = None,
                      *, mean: Stats | None = None, std: Stats | None = None) -> Tensor:
    """RandAugment (Cubuk et al. 2020): ``depth`` random ops per image at random strength up to ``severity``.

    Args:
        x: the batch ``[B, C, H, W]``, normalised with ``mean``/``std``, or in [0, 1] when they are None.
        depth: ops applied in sequence to each image.
        severity: largest op strength on a 0..10 scale.
        generator: random source (the global torch RNG when None).
        mean: per-channel mean the batch was normalised with (0..1 units).
        std: per-channel standard deviation the batch was normalised with.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x = torch.rand(4, 3, 16, 16)
        >>> out = randaugment_batch(x, depth=2, severity=9, generator=g)
        >>> out.shape == x.shape, out.dtype == x.dtype
        (True, True)
    """
    return _randaugment.randaugment_batch(x, depth, severity, generator, mean=mean, std=std,
                                          space=RANDAUGMENT_SPACE)


def trivialaugment_batch(x: Tensor, generator: torch.Generator | None = None, *, mean: Stats | None = None,
                         std: Stats | None = None, wide: bool = True) -> Tensor:
    """TrivialAugment (Müller & Hutter 2021): one random op per image at a uniformly random strength.

    Args:
        x: the batch ``[B, C, H, W]``, normalised with ``mean``/``std``, or in [0, 1] when they are None.
        generator: random source (the global torch RNG when None).
        mean: per-channel mean the batch was normalised with (0..1 units).
        std: per-channel standard deviation the batch was normalised with.
        wide: the Wide op ranges (TA Wide), else RandAugment's.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x = torch.rand(4, 3, 16, 16)
        >>> trivialaugment_batch(x, g, mean=[0.5] * 3, std=[0.25] * 3).shape
        torch.Size([4, 3, 16, 16])
    """
    return _trivial.trivialaugment_batch(x, generator, mean=mean, std=std,
                                         space=WIDE_SPACE if wide else RANDAUGMENT_SPACE)


def resize_batch(x: Tensor, y: Tensor, scale: float, mode: str = "resize", size_increment: int = 1,
                 generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    """Shrink a batch to ``scale`` of its height and width; classification targets pass through.

    Args:
        x: the batch ``[B, C, H, W]``.
        y: its targets, returned unchanged.
        scale: target side as a fraction of the current one (1 or more: unchanged).
        mode: ``"resize"`` (antialiased bilinear) or ``"crop"`` (one random window for the whole batch).
        size_increment: sides are rounded to a multiple of this many pixels.
        generator: random source of the crop's position (the global torch RNG when None).

    Example:
        >>> x, y = resize_batch(torch.rand(2, 3, 32, 32), torch.tensor([0, 1]), scale=0.5)
        >>> x.shape
        torch.Size([2, 3, 16, 16])
    """
    return _resizing.resize_batch(x, y, scale, mode, size_increment, generator)


def progressive_resize(x: Tensor, y: Tensor, progress: float, initial_scale: float = 0.5,
                       delay_fraction: float = 0.4, finetune_fraction: float = 0.2, mode: str = "resize",
                       size_increment: int = 4) -> tuple[Tensor, Tensor]:
    """Progressive resizing (Composer): the batch at the size its schedule gives at ``progress`` of training.

    ``initial_scale`` until ``delay_fraction`` of training, a linear ramp, full size for the last
    ``finetune_fraction`` (the schedule ``recipesearch train`` follows, on steps taken / total steps).

    Args:
        x: the batch ``[B, C, H, W]``.
        y: its targets, returned unchanged.
        progress: fraction of training done, 0 to 1.
        initial_scale: image side at the start, as a fraction.
        delay_fraction: share of training at the initial scale.
        finetune_fraction: share of training at full size, at the end.
        mode: ``"resize"`` or ``"crop"``.
        size_increment: sides are rounded to a multiple of this many pixels.

    Example:
        >>> x, y = torch.rand(2, 1, 16, 16), torch.tensor([0, 1])
        >>> [progressive_resize(x, y, p)[0].shape[-1] for p in (0.0, 0.6, 0.9)]
        [8, 12, 16]
    """
    scale = _resizing.scale_at(progress, initial_scale, delay_fraction, finetune_fraction)
    return _resizing.resize_batch(x, y, scale, mode, size_increment)


def select_using_loss(x: Tensor, y: Tensor, model: nn.Module,
                      loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None, keep: float = 0.5,
                      scale_factor: float = 1.0) -> tuple[Tensor, Tensor]:
    """Selective backprop (Jiang et al. 2019): keep the samples with the highest loss, in batch order.

    Scores the batch with a forward pass without gradients (BatchNorm's running statistics untouched).

    Args:
        x: the batch ``[B, C, H, W]``.
        y: class indices ``[B]`` or distributions ``[B, K]``.
        model: the network being trained.
        loss_fn: ``(outputs, targets) -> [B]`` per-sample loss; None is per-sample cross-entropy.
        keep: fraction of the batch kept (at least one sample).
        scale_factor: image scale of the scoring pass (below 1 is cheaper).

    Example:
        >>> from torch import nn
        >>> model = nn.Sequential(nn.Flatten(), nn.Linear(16, 3))
        >>> x, y = select_using_loss(torch.rand(8, 1, 4, 4), torch.zeros(8, dtype=torch.long), model, keep=0.25)
        >>> x.shape, y.shape
        (torch.Size([2, 1, 4, 4]), torch.Size([2]))
    """
    return _selective.select_using_loss(x, y, model, loss_fn, keep, scale_factor)


# ---- targets and losses ------------------------------------------------------------------------------


def smooth_labels(targets: Tensor, num_classes: int, smoothing: float = 0.1) -> Tensor:
    """Label smoothing (Szegedy et al. 2016): ``(1 - s) * one_hot + s / K``; distributions are smoothed too.

    Args:
        targets: class indices ``[B]`` or distributions ``[B, K]``.
        num_classes: K.
        smoothing: mass moved to the uniform distribution.

    Example:
        >>> smooth_labels(torch.tensor([1]), num_classes=4, smoothing=0.2)
        tensor([[0.0500, 0.8500, 0.0500, 0.0500]])
    """
    return _smoothing.smooth_labels(targets, num_classes, smoothing)


def bce_loss(outputs: Tensor, targets: Tensor, num_classes: int) -> Tensor:
    """Binary cross-entropy per class (Wightman et al. 2021): summed over classes, mean over the batch.

    Pair it with ``init_classifier_bias`` at the start, as ``recipesearch train`` does by default.

    Args:
        outputs: logits ``[B, K]``.
        targets: class indices ``[B]`` or distributions ``[B, K]``.
        num_classes: K.

    Example:
        >>> loss = bce_loss(torch.zeros(2, 4), torch.tensor([0, 3]), num_classes=4)
        >>> round(float(loss), 4)  # 4 * log(2): every sigmoid at 0.5
        2.7726
    """
    return _bce.bce_loss(outputs, targets, num_classes)


def init_classifier_bias(model: nn.Module, num_classes: int) -> None:
    """Set the last ``nn.Linear``'s bias to ``-log(K)``: every sigmoid starts near 1/K (for ``bce_loss``).

    Args:
        model: the network; its last ``nn.Linear`` is the classifier.
        num_classes: K.

    Example:
        >>> from torch import nn
        >>> model = nn.Sequential(nn.Linear(3, 4))
        >>> init_classifier_bias(model, 4)
        >>> round(model[0].bias[0].item(), 4)
        -1.3863
    """
    _bce.init_classifier_bias(model, num_classes)


# ---- gradients and the optimizer step ----------------------------------------------------------------


def sam_perturb(params: list[Tensor], rho: float = 0.05, epsilon: float = 1e-12) -> list[Tensor]:
    """SAM's ascent (Foret et al. 2021): move each param by ``rho * g / ||g||``; returns the moves.

    A SAM step: backward, ``e = sam_perturb(params)``, zero the grads, forward and backward again,
    ``sam_restore(params, e)``, then the optimizer step (with the perturbed point's gradient).

    Args:
        params: parameters that all have a ``.grad``; the norm is global over them.
        rho: radius of the neighbourhood.
        epsilon: guards the division by the gradient norm.

    Example:
        >>> w = torch.zeros(2, requires_grad=True)
        >>> w.grad = torch.tensor([3.0, 4.0])
        >>> e = sam_perturb([w], rho=0.5)
        >>> w.detach()
        tensor([0.3000, 0.4000])
    """
    return _sam.sam_perturb(params, rho, epsilon)


def sam_restore(params: list[Tensor], e: list[Tensor]) -> None:
    """Undo ``sam_perturb``: every param back to where it was.

    Args:
        params: the parameters given to ``sam_perturb``.
        e: the moves it returned.

    Example:
        >>> w = torch.zeros(2, requires_grad=True)
        >>> w.grad = torch.tensor([3.0, 4.0])
        >>> sam_restore([w], sam_perturb([w], rho=0.5))
        >>> w.detach()
        tensor([0., 0.])
    """
    _sam.sam_restore(params, e)


def clip_gradients(params: Iterable[Tensor], mode: str = "norm", threshold: float | None = None) -> None:
    """Gradient clipping in place: by global norm, by value, or adaptive per unit (AGC, Brock et al. 2021).

    Under fp16 with a ``GradScaler``, call ``scaler.unscale_(optimizer)`` first.

    Args:
        params: parameters whose ``.grad`` is clipped (those without one are skipped).
        mode: ``"norm"``, ``"value"`` or ``"adaptive"``.
        threshold: the limit; None is 1.0 for norm and value, 0.01 for adaptive.

    Example:
        >>> w = torch.zeros(2, requires_grad=True)
        >>> w.grad = torch.tensor([3.0, 4.0])
        >>> clip_gradients([w], mode="norm", threshold=1.0)
        >>> w.grad
        tensor([0.6000, 0.8000])
    """
    _clipping.clip_gradients(params, mode, threshold)  # type: ignore[arg-type]


def freeze_fraction(progress: float, freeze_start: float = 0.5, freeze_level: float = 1.0) -> float:
    """Layer freezing's schedule (Composer): the fraction of layers frozen at ``progress`` of training.

    Args:
        progress: fraction of training done, 0 to 1.
        freeze_start: no layer is frozen before this fraction of training.
        freeze_level: fraction of layers frozen at the end, reached linearly.

    Example:
        >>> [freeze_fraction(p) for p in (0.25, 0.75, 1.0)]
        [0.0, 0.5, 1.0]
    """
    return _freezing.freeze_fraction(progress, freeze_start, freeze_level)


def freeze_layers(model: nn.Module, optimizer: torch.optim.Optimizer | None, fraction: float) -> int:
    """FreezeOut (Brock et al. 2017): freeze the first ``fraction`` of the parameter-owning layers.

    The classifier (last layer) never freezes; frozen parameters lose their gradient and optimizer state.

    Args:
        model: the network, changed in place.
        optimizer: its optimizer, whose state of the frozen parameters is dropped (or None).
        fraction: share of the layers to have frozen; a larger one later freezes more.

    Example:
        >>> from torch import nn
        >>> model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2))
        >>> freeze_layers(model, None, 0.7), [m.weight.requires_grad for m in model]
        (2, [False, False, True])
    """
    return _freezing.freeze_layers(model, optimizer, fraction)


# ---- weight averaging --------------------------------------------------------------------------------


def ema_update(ema_model: nn.Module, model: nn.Module, smoothing: float) -> None:
    """EMA of the weights: ``ema = smoothing * ema + (1 - smoothing) * model``; buffers are copied.

    Call it after every optimizer step on a ``copy.deepcopy(model)`` made at the start; evaluate the copy.

    Args:
        ema_model: the averaged copy, updated in place.
        model: the network being trained.
        smoothing: weight on the past per update (``ema_smoothing`` turns a half-life into it).

    Example:
        >>> import copy
        >>> from torch import nn
        >>> model = nn.Linear(1, 1, bias=False)
        >>> _ = nn.init.zeros_(model.weight)
        >>> ema = copy.deepcopy(model).requires_grad_(False)
        >>> _ = nn.init.ones_(model.weight)
        >>> ema_update(ema, model, smoothing=0.75)
        >>> float(ema.weight)
        0.25
    """
    _ema.ema_update(ema_model, model, smoothing)


def ema_smoothing(half_life_steps: float, update_interval: int = 1) -> float:
    """The per-update smoothing of an EMA whose weight on the past halves every ``half_life_steps`` steps.

    ``recipesearch train`` uses a half-life of ``half_life * total_steps`` (a fraction of the run).

    Args:
        half_life_steps: optimizer steps after which an update's weight halves.
        update_interval: the EMA is updated every this many steps.

    Example:
        >>> ema_smoothing(1), round(ema_smoothing(10), 4)
        (0.5, 0.933)
    """
    return _ema.smoothing_for(half_life_steps, update_interval)


def lookahead_sync(slow: list[Tensor], fast: list[Tensor], alpha: float = 0.5) -> None:
    """Lookahead (Zhang et al. 2019): ``slow += alpha * (fast - slow)``, then ``fast = slow``; every k steps.

    Args:
        slow: the slow copies (start as clones of ``fast``), updated in place.
        fast: the trained tensors (parameters; BN buffers too if wanted), reset in place.
        alpha: step of the slow weights toward the fast ones.

    Example:
        >>> slow, fast = [torch.zeros(2)], [torch.ones(2)]
        >>> lookahead_sync(slow, fast, alpha=0.5)
        >>> slow[0], fast[0]
        (tensor([0.5000, 0.5000]), tensor([0.5000, 0.5000]))
    """
    _lookahead.lookahead_sync(slow, fast, alpha)


def recompute_bn(model: nn.Module, batches: Iterable) -> None:
    """Reset BatchNorm's running statistics to their average over ``batches`` (after SWA's averaging).

    Args:
        model: the network (the averaged one, for SWA), in place.
        batches: an iterable of inputs or of ``(inputs, targets)`` pairs.

    Example:
        >>> from torch import nn
        >>> model = nn.Sequential(nn.BatchNorm2d(1))
        >>> recompute_bn(model, [(torch.full((4, 1, 2, 2), 3.0), None)])
        >>> float(model[0].running_mean)
        3.0
    """
    _swa.recompute_bn(model, batches)


# ---- evaluation and precision ------------------------------------------------------------------------


def flip_tta_logits(model: nn.Module, x: Tensor) -> Tensor:
    """Flip test-time augmentation (airbench): the mean of the logits of ``x`` and of its left-right mirror.

    Only for data whose label a horizontal flip keeps (not digits).

    Args:
        model: the network, in eval mode.
        x: the batch ``[B, C, H, W]``.

    Example:
        >>> from torch import nn
        >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 2))
        >>> flip_tta_logits(model, torch.rand(3, 1, 2, 2)).shape
        torch.Size([3, 2])
    """
    return _flip_tta.flip_tta_logits(model, x)


def autocast_dtype(name: str) -> torch.dtype:
    """Mixed precision: the dtype of ``"bf16"`` or ``"fp16"``, for ``torch.autocast(device, dtype=...)``.

    fp16 needs a ``torch.amp.GradScaler`` around backward and the step; bf16 does not.

    Args:
        name: ``"bf16"`` or ``"fp16"``.

    Example:
        >>> autocast_dtype("bf16")
        torch.bfloat16
    """
    return _precision.autocast_dtype(name)
