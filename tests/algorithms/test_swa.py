from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from recipesearch.algorithms.swa import recompute_bn, swa_lr_factor
from recipesearch.train.loop import Trainer


def test_lr_factor_switches_at_start_step():
    factor = swa_lr_factor(lambda step: 1.0 - step / 100, start_step=70, swa_factor=0.05)
    assert factor(0) == 1.0 and factor(69) == pytest.approx(0.31)
    assert factor(70) == factor(99) == 0.05


def test_recompute_bn_averages_the_statistics_of_all_batches():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3))
    batches = [(torch.randn(4, 2, 5, 5) + i, torch.zeros(4)) for i in range(3)]
    recompute_bn(model, batches)
    feats = [model[0](x).detach() for x, _ in batches]
    expected_mean = torch.stack([f.mean((0, 2, 3)) for f in feats]).mean(0)
    torch.testing.assert_close(model[1].running_mean, expected_mean)
    expected_var = torch.stack([f.var((0, 2, 3), unbiased=True) for f in feats]).mean(0)
    torch.testing.assert_close(model[1].running_var, expected_var)


def test_fit_averages_epoch_snapshots_after_swa_start(tiny_recipe):
    snapshots, lrs = [], []

    def on_epoch_end(state, metrics):
        group = state.optimizer.param_groups[0]
        lrs.append(group["lr"] / group["initial_lr"])  # the factor of the peak LR
        if state.step >= 0.5 * state.total_steps:
            snapshots.append({k: v.detach().clone() for k, v in state.model.named_parameters()})

    recipe = tiny_recipe({"swa": {"swa_start": 0.5, "swa_lr_factor": 0.1}}, max_duration=3)
    trainer = Trainer(recipe, on_epoch_end=on_epoch_end)
    result = trainer.fit()
    state = trainer.state
    assert len(snapshots) == 2  # epochs 2 and 3 end after half of training

    # 1) the evaluated weights are the mean of the snapshots
    averaged = dict(state.eval_model.named_parameters())
    for name, _ in state.model.named_parameters():
        torch.testing.assert_close(averaged[name], (snapshots[0][name] + snapshots[1][name]) / 2)
    # 2) its BN statistics were recomputed for the averaged weights, not copied from the last iterate
    bn_avg, bn_last = state.eval_model.features[1], state.model.features[1]
    assert not torch.allclose(bn_avg.running_mean, bn_last.running_mean)
    # 3) from swa_start on, the LR is held at swa_lr_factor * peak; before, the cosine ran
    assert lrs[-1] == pytest.approx(0.1) and lrs[-2] == pytest.approx(0.1)
    assert lrs[0] > 0.5
    assert math.isfinite(result.loss)
    assert result.accuracy > 0.2
