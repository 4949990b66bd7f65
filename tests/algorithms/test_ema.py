from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn

from recipesearch.algorithms.ema import ema_update, smoothing_for
from recipesearch.train.loop import Trainer


def test_n_updates_match_the_closed_form():
    # Constant target p: ema_N = s^N * ema_0 + (1 - s^N) * p.
    ema, model = nn.Linear(1, 1, bias=False), nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        ema.weight.fill_(1.0)
        model.weight.fill_(5.0)
    s, n = 0.9, 7
    for _ in range(n):
        ema_update(ema, model, s)
    assert ema.weight.item() == pytest.approx(s**n * 1.0 + (1 - s**n) * 5.0, rel=1e-6)


def test_moving_target_is_an_exponentially_weighted_sum():
    # p_k = k for k = 1..N: ema_N = s^N * ema_0 + (1 - s) * sum_k s^(N - k) * k.
    ema, model = nn.Linear(1, 1, bias=False), nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        ema.weight.zero_()
    s, n = 0.8, 5
    for k in range(1, n + 1):
        with torch.no_grad():
            model.weight.fill_(float(k))
        ema_update(ema, model, s)
    expected = (1 - s) * sum(s ** (n - k) * k for k in range(1, n + 1))
    assert ema.weight.item() == pytest.approx(expected, rel=1e-6)


def test_buffers_are_copied():
    ema, model = nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    model(torch.randn(8, 3))
    ema_update(ema, model, 0.99)
    torch.testing.assert_close(ema.running_mean, model.running_mean)
    assert ema.num_batches_tracked.item() == 1


def test_half_life_halves_the_weight():
    s = smoothing_for(half_life_steps=10)
    assert s**10 == pytest.approx(0.5)
    assert smoothing_for(10, update_interval=2) ** 5 == pytest.approx(0.5)


def test_fit_evaluates_the_averaged_copy(tiny_recipe):
    trainer = Trainer(tiny_recipe({"ema": {"half_life": 0.1}}))
    start = copy.deepcopy(trainer.state.model)
    result = trainer.fit()
    state = trainer.state
    ema_model = state.eval_model
    assert ema_model is not None and ema_model is not state.model
    (algo,) = trainer.algorithms
    assert algo.smoothing == pytest.approx(0.5 ** (1 / (0.1 * state.total_steps)))
    # The average is neither the starting weights nor the last iterate.
    w0, w_last, w_ema = (m.fc.weight.detach() for m in (start, state.model, ema_model))
    assert not torch.allclose(w_ema, w_last) and not torch.allclose(w_ema, w0)
    assert math.isfinite(result.loss)
    assert result.accuracy > 0.2
