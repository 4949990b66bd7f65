"""Selective backprop: keeps exactly the highest-loss samples, only inside its window of training."""
from __future__ import annotations

import math
from functools import partial
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from recipesearch.algorithms import get_algorithm
from recipesearch.algorithms.bce_loss import per_sample_bce
from recipesearch.algorithms.selective_backprop import select_using_loss
from recipesearch.errors import ConfigError
from recipesearch.hooks.events import Event
from recipesearch.train.loop import Trainer, fit


def _model(channels: int = 3, classes: int = 5) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(channels, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, classes))


@pytest.mark.parametrize("keep", [0.5, 0.25, 0.9])
def test_keeps_exactly_the_highest_loss_samples(keep: float) -> None:
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(32, 3, 8, 8, generator=g), torch.randint(5, (32,), generator=g)
    model = _model()
    with torch.no_grad():
        losses = F.cross_entropy(model(x), y, reduction="none")
    x_kept, y_kept = select_using_loss(x, y, model, keep=keep)
    n = int(keep * 32)
    assert x_kept.shape[0] == y_kept.shape[0] == n
    expected = losses.argsort(descending=True)[:n].sort().values  # top-k, in batch order
    assert torch.equal(x_kept, x[expected]) and torch.equal(y_kept, y[expected])
    assert losses[expected].min() >= losses[~torch.isin(torch.arange(32), expected)].max()


def test_soft_targets_rank_by_soft_cross_entropy() -> None:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(16, 3, 8, 8, generator=g)
    y = torch.softmax(3 * torch.randn(16, 5, generator=g), 1)
    model = _model()
    with torch.no_grad():
        losses = -(y * torch.log_softmax(model(x), 1)).sum(1)
    x_kept, y_kept = select_using_loss(x, y, model, keep=0.5)
    expected = losses.topk(8).indices.sort().values
    assert torch.equal(y_kept, y[expected])


def test_custom_per_sample_loss_and_downscaled_scoring() -> None:
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(16, 3, 16, 16, generator=g), torch.randint(5, (16,), generator=g)
    model = _model()
    small = F.interpolate(x, scale_factor=0.5, mode="bilinear", align_corners=False, antialias=True)
    loss_fn = partial(per_sample_bce, num_classes=5)
    with torch.no_grad():
        losses = loss_fn(model(small), y)
    x_kept, _ = select_using_loss(x, y, model, loss_fn=loss_fn, keep=0.25, scale_factor=0.5)
    assert x_kept.shape == (4, 3, 16, 16)  # the kept samples are the full-size originals
    assert torch.equal(x_kept, x[losses.topk(4).indices.sort().values])


def test_scoring_pass_leaves_batchnorm_statistics_alone() -> None:
    model = _model()
    bn = model[1]
    before = (bn.running_mean.clone(), bn.running_var.clone(), bn.num_batches_tracked.clone())
    select_using_loss(torch.randn(8, 3, 8, 8) * 5 + 3, torch.zeros(8, dtype=torch.long), model)
    assert torch.equal(bn.running_mean, before[0]) and torch.equal(bn.running_var, before[1])
    assert torch.equal(bn.num_batches_tracked, before[2]) and bn.momentum == 0.1


@pytest.mark.parametrize(("progress", "step", "active"), [(0.0, 0, False), (0.49, 4, False), (0.5, 4, True),
                                                          (0.89, 8, True), (0.9, 8, False), (0.6, 5, False)])
def test_active_only_between_start_and_end_every_interval(progress: float, step: int, active: bool) -> None:
    algo = get_algorithm("selective_backprop")(interval=2)
    state = SimpleNamespace(progress=progress, step=step)
    assert algo.match(Event.AFTER_DATALOADER, state) is active
    assert algo.match(Event.BATCH_START, state) is False


def test_training_halves_the_batches_inside_the_window(tiny_recipe) -> None:
    trainer = Trainer(tiny_recipe({"selective_backprop": {}}, batch_size=32, max_duration=2))
    s = trainer.state
    seen: list[tuple[float, int]] = []

    def record(module, args):
        if torch.is_grad_enabled():  # the training pass, not the scoring pass
            seen.append((s.step / s.total_steps, args[0].shape[0]))

    s.model.register_forward_pre_hook(record)
    trainer.train()
    assert seen and all(b == (16 if 0.5 <= p < 0.9 else 32) for p, b in seen)


def test_start_must_precede_end() -> None:
    with pytest.raises(ConfigError, match="start"):
        get_algorithm("selective_backprop")(start=0.8, end=0.2)


def test_short_training_run(tiny_recipe) -> None:
    result = fit(tiny_recipe({"selective_backprop": {}}, batch_size=32, max_duration=2))
    assert math.isfinite(result.loss) and result.accuracy > 0.3
