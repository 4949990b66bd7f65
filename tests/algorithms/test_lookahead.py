"""Lookahead: the sync formula, a sync exactly every k steps from ``start``, slow weights evaluated, trains."""
from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from recipesearch.algorithms.lookahead import Lookahead, lookahead_sync, synced_tensors
from recipesearch.hooks.events import Event
from recipesearch.recipe import load_recipe
from recipesearch.train.loop import Trainer, fit

DIGITS = Path(__file__).parents[2] / "recipes" / "digits_baseline.yaml"


def test_sync_moves_slow_alpha_of_the_way_and_resets_fast():
    slow = [torch.tensor([0.0, 4.0]), torch.tensor([[1.0]])]
    fast = [torch.tensor([4.0, 0.0]), torch.tensor([[3.0]])]
    lookahead_sync(slow, fast, alpha=0.25)
    torch.testing.assert_close(slow, [torch.tensor([1.0, 3.0]), torch.tensor([[1.5]])])
    torch.testing.assert_close(fast, slow)
    assert all(f.data_ptr() != s.data_ptr() for f, s in zip(fast, slow))  # copies, not aliases


def test_alpha_one_is_plain_training():
    slow, fast = [torch.zeros(3)], [torch.arange(3.0)]
    lookahead_sync(slow, fast, alpha=1.0)
    torch.testing.assert_close(slow[0], torch.arange(3.0))
    torch.testing.assert_close(fast[0], torch.arange(3.0))


def test_buffers_synced_only_when_asked():
    bn = nn.BatchNorm1d(2)
    assert len(synced_tensors(bn, buffers=False)) == 2
    with_buffers = synced_tensors(bn, buffers=True)
    assert len(with_buffers) == 4 and all(t.is_floating_point() for t in with_buffers)  # no num_batches_tracked


def _drive(algo: Lookahead, total_steps: int, fast_value) -> tuple[nn.Linear, list[int]]:
    """Run the hook by hand: before each step the fast weight is set to ``fast_value(step)``."""
    model = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(0.0)
    state = SimpleNamespace(model=model, step=0, total_steps=total_steps)
    synced = []
    algo.apply(Event.FIT_START, state)
    for step in range(1, total_steps + 1):
        with torch.no_grad():
            model.weight.fill_(fast_value(step))  # stands in for the optimizer's step
        state.step = step
        if algo.match(Event.AFTER_STEP, state):
            before = algo.last_sync
            algo.apply(Event.AFTER_STEP, state)
            if algo.last_sync != before:
                synced.append(step)
    algo.apply(Event.FIT_END, state)
    return model, synced


def test_syncs_every_k_steps_and_a_last_time_at_fit_end():
    # The fast weight after step t is t + (slow at the last sync): each sync pulls slow halfway to it.
    algo = Lookahead(k=3, alpha=0.5, sync_buffers=False)
    slow = [0.0]

    def fast(step: int) -> float:
        return slow[0] + (step - 3 * ((step - 1) // 3))  # 1, 2, 3 fast steps after each sync

    def record(s, f, alpha):  # the real sync, plus the expected slow value it produces
        slow[0] = slow[0] + alpha * (f[0].item() - slow[0])
        lookahead_sync(s, f, alpha)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("recipesearch.algorithms.lookahead.lookahead_sync", record)
        model, synced = _drive(algo, total_steps=8, fast_value=fast)
    assert synced == [3, 6]  # and FIT_END at step 8 (2 fast steps since the last sync)
    # 0 -> 3 fast -> slow 1.5; 1.5 + 3 -> slow 3.0; 3.0 + 2 at FIT_END -> slow 4.0
    assert slow[0] == pytest.approx(4.0)
    assert model.weight.item() == pytest.approx(4.0)  # evaluation sees the slow weights
    assert algo.slow[0].item() == pytest.approx(4.0)


def test_no_extra_sync_when_the_run_ends_on_one():
    algo = Lookahead(k=4, alpha=0.5, sync_buffers=False)
    model, synced = _drive(algo, total_steps=8, fast_value=lambda step: float(step))
    assert synced == [4, 8]
    # slow: 0 -> 0.5 * 4 = 2 (fast restarts at 2, but fast_value overrides it) -> 2 + 0.5 * (8 - 2) = 5
    assert model.weight.item() == pytest.approx(5.0)


def test_start_delays_the_first_sync_and_seeds_slow_there():
    algo = Lookahead(k=2, alpha=0.5, start=0.5, sync_buffers=False)
    model, synced = _drive(algo, total_steps=8, fast_value=lambda step: float(step))
    assert algo.start_step == 4
    # Step 4 seeds slow = 4 (no pull from the initial weights); syncs at 6 and 8.
    assert synced == [6, 8]
    # slow 4 -> 4 + 0.5 * (6 - 4) = 5 -> 5 + 0.5 * (8 - 5) = 6.5
    assert model.weight.item() == pytest.approx(6.5)


def test_cubic_schedule_pulls_harder_as_training_ends():
    # airbench94: the pull is 1 - 0.95**5 * progress**3 (no pull at the start, 1 - 0.95**5 at the end).
    algo = Lookahead(k=2, alpha=1 - 0.95**5, alpha_schedule="cubic", sync_buffers=False)
    assert [algo.alpha_at(p) for p in (0.0, 0.5, 1.0)] == pytest.approx([1.0, 1 - 0.95**5 / 8, 1 - 0.95**5])
    pulls = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("recipesearch.algorithms.lookahead.lookahead_sync", lambda s, f, alpha: pulls.append(alpha))
        _drive(algo, total_steps=8, fast_value=float)
    # syncs at steps 2, 4, 6 and 8 of 8; no extra sync at FIT_END (the run ends on one)
    assert pulls == pytest.approx([1 - 0.95**5 * (s / 8) ** 3 for s in (2, 4, 6, 8)])
    assert Lookahead(alpha=0.5).alpha_at(0.9) == 0.5  # constant: the paper's


def test_trainer_evaluates_the_slow_weights(tiny_recipe):
    trainer = Trainer(tiny_recipe({"lookahead": {"k": 4}}))  # 44 steps: 11 syncs
    result = trainer.fit()
    (algo,) = trainer.algorithms
    state = trainer.state
    assert state.eval_model is None  # the model itself holds the slow weights
    for s, t in zip(algo.slow, synced_tensors(state.model, buffers=True)):
        assert torch.equal(s, t)
    # Half of each fast excursion is kept: slower than plain SGD over so short a run (0.57 vs 0.74), not broken.
    assert math.isfinite(result.loss) and result.accuracy > 0.4


def test_trains_digits_alone_to_95_percent():
    # recipes/digits_baseline.yaml (resnet8, SGD, 8 epochs) with Lookahead's defaults; one thread: ~5 s.
    recipe = load_recipe(DIGITS).with_overrides({"algorithms.lookahead": {}, "device": "cpu", "threads": 1})
    result = fit(recipe)
    assert result.accuracy >= 0.95, result
