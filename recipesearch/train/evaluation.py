"""Evaluating a trained (or part-trained) model on a split: top-1 accuracy and mean loss, hard labels.

The trainer evaluates after FIT_END (``TrainResult.eval_seconds``) and at rungs (``rungs.py``), outside the
timed training either way.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from recipesearch.data import eval_batches

if TYPE_CHECKING:
    from recipesearch.data.source import ImageSource
    from recipesearch.hooks import State


@torch.inference_mode()
def evaluate(state: State, images: torch.Tensor | ImageSource, labels: torch.Tensor) -> tuple[float, float]:
    """Top-1 accuracy and mean loss of ``state.eval_model or state.model`` on a split (hard labels); streamed
    images (an ``ImageSource``) are read by the bundle's DataLoader workers."""
    model = state.eval_model or state.model
    was_training = model.training
    model.eval()
    correct, total_loss = 0, 0.0
    for x, y in eval_batches(images, labels, state.recipe.eval_batch_size, state.data.mean, state.data.std,
                             workers=state.data.workers):
        if state.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with state.autocast():
            out = model(x)
        total_loss += F.cross_entropy(out.float(), y, reduction="sum").item()
        correct += (out.argmax(1) == y).sum().item()
    model.train(was_training)
    n = max(1, len(labels))
    return correct / n, total_loss / n
