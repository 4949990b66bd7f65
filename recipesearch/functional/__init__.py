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

The functions live in one module per concept and are re-exported here, so ``recipesearch.functional.X``
is the stable name: ``model_surgery`` (layers and weights changed before training), ``batches`` (per-batch
transforms), ``losses`` (targets and losses), ``optimization`` (gradients and the optimizer step),
``averaging`` (weight averaging) and ``evaluation`` (evaluation and precision).
"""
from __future__ import annotations

from recipesearch.functional.averaging import ema_smoothing, ema_update, lookahead_sync, recompute_bn
from recipesearch.functional.batches import (
    alternating_flip_batch,
    brightness_contrast_batch,
    colout_batch,
    cutmix_batch,
    cutout_batch,
    first_epoch_flips,
    mixup_batch,
    progressive_resize,
    randaugment_batch,
    resize_batch,
    select_by_proxy,
    select_using_loss,
    translate_batch,
    trivialaugment_batch,
)
from recipesearch.functional.evaluation import autocast_dtype, flip_translate_tta_logits, flip_tta_logits
from recipesearch.functional.losses import bce_loss, init_classifier_bias, smooth_labels
from recipesearch.functional.model_surgery import (
    apply_blurpool,
    apply_channels_last,
    apply_ghost_batchnorm,
    apply_patch_whitening,
    apply_pool_before_norm,
    apply_squeeze_excite,
    apply_stochastic_depth,
    apply_torch_compile,
    whitening_filters,
)
from recipesearch.functional.optimization import (
    clip_gradients,
    freeze_fraction,
    freeze_layers,
    sam_perturb,
    sam_restore,
    scale_bn_bias_grads,
)

__all__ = [
    "alternating_flip_batch",
    "brightness_contrast_batch",
    "apply_blurpool",
    "apply_channels_last",
    "apply_ghost_batchnorm",
    "apply_patch_whitening",
    "apply_pool_before_norm",
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
    "first_epoch_flips",
    "flip_translate_tta_logits",
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
    "scale_bn_bias_grads",
    "select_by_proxy",
    "select_using_loss",
    "smooth_labels",
    "translate_batch",
    "trivialaugment_batch",
    "whitening_filters",
]
