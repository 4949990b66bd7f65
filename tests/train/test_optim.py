"""Decoupled weight decay: the decay follows the schedule but not the LR's magnitude."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from recipesearch.recipe import OptimizerSpec
from recipesearch.train.optim import build_optimizer, set_lr


def _one_step(lr_factor: float, lr: float = 0.5, wd: float = 0.1):
    model = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(2.0)
    opt = build_optimizer(OptimizerSpec(lr=lr, momentum=0.9, weight_decay=wd), model)
    model.weight.grad = torch.zeros_like(model.weight)  # only the decay moves the weight
    set_lr(opt, lr_factor)
    opt.step()
    return model.weight.item()


def test_decay_is_decoupled_from_gradient_and_scaled_by_schedule():
    assert _one_step(1.0) == pytest.approx(2.0 * (1 - 0.1))
    assert _one_step(0.5) == pytest.approx(2.0 * (1 - 0.05))
    # Same decay whatever the peak LR: it does not couple to the LR's magnitude.
    assert _one_step(1.0, lr=0.01) == pytest.approx(_one_step(1.0, lr=5.0))


def test_norm_and_bias_escape_decay_by_default():
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    opt = build_optimizer(OptimizerSpec(), model)
    decays = {p.ndim: g["decoupled_wd"] for g in opt.param_groups for p in g["params"]}
    assert decays[2] > 0 and decays[1] == 0


def test_adamw():
    model = nn.Linear(2, 2)
    opt = build_optimizer(OptimizerSpec(name="adamw", lr=1e-3, weight_decay=0.05), model)
    assert isinstance(opt, torch.optim.AdamW)
    set_lr(opt, 0.5)
    assert all(g["lr"] == pytest.approx(5e-4) for g in opt.param_groups)
