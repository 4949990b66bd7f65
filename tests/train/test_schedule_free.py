"""Schedule-free SGD and AdamW: trained at the weights it steps, evaluated at their average (BatchNorm statistics
recomputed for it), rungs evaluated there too, only the schedule's warmup applied; in one's own loop as well;
the missing package and a bad name are one line. (Checkpoint resume: tests/train/test_checkpoint.py.)"""
from __future__ import annotations

import sys

import pytest
import torch

from recipesearch.errors import ConfigError
from recipesearch.recipe import recipe_from_dict
from recipesearch.train import schedule_free
from recipesearch.train.loop import Trainer
from recipesearch.train.optim import build_optimizer
from recipesearch.train.schedule import LRSchedule


def _modes(optimizer) -> set:
    return {g["train_mode"] for g in optimizer.param_groups}


@pytest.mark.parametrize("optimizer", [{"name": "sgd_schedulefree", "lr": 0.3},
                                       {"name": "adamw_schedulefree", "lr": 0.005}])
def test_it_trains_and_ends_at_the_averaged_weights_with_their_batchnorm_statistics(tiny_recipe, monkeypatch,
                                                                                    optimizer):
    calls = []

    def counting_update_bn(batches, model):
        batches = list(batches)
        calls.append(len(batches))
        return torch.optim.swa_utils.update_bn(batches, model)

    monkeypatch.setattr(schedule_free, "update_bn", counting_update_bn)
    trainer = Trainer(tiny_recipe(optimizer=optimizer, max_duration=3))
    result = trainer.fit()
    assert result.accuracy > 0.6  # chance is 0.1
    s = trainer.state
    assert _modes(s.optimizer) == {False}  # evaluated at x, the average
    assert calls == [min(schedule_free.BN_BATCHES, s.steps_per_epoch)]  # once, at the end
    x = [p.detach().clone() for p in s.model.parameters()]
    s.optimizer.train()  # y, where the gradients were taken: another point
    assert any(not torch.equal(a, p) for a, p in zip(x, s.model.parameters()))


def test_a_rung_is_evaluated_at_the_average_then_training_goes_on(tiny_recipe):
    seen = []
    trainer = Trainer(tiny_recipe(optimizer={"name": "sgd_schedulefree", "lr": 0.3}, max_duration=2),
                      rungs=(0.5,), on_rung=lambda report: seen.append(_modes(trainer.state.optimizer)) or True)
    result = trainer.fit()
    assert seen == [{False}]  # inside the rung's evaluation: x
    assert result.steps == trainer.state.total_steps and _modes(trainer.state.optimizer) == {False}


def test_the_schedule_keeps_its_warmup_and_drops_its_decay(tiny_recipe):
    def factors(name: str) -> list[float]:
        recipe = tiny_recipe(optimizer={"name": name}, schedule={"name": "cosine", "warmup_epochs": 1},
                             max_duration=4)
        schedule = LRSchedule.of(recipe, 10, 40)
        return [schedule.factor(step) for step in range(40)]

    free, plain = factors("sgd_schedulefree"), factors("sgd")
    assert free[:10] == plain[:10] == [(k + 1) / 10 for k in range(10)]  # the same warmup
    assert free[10:] == [1.0] * 30 and plain[-1] < 0.01  # no decay for the schedule-free run


def test_in_ones_own_loop_it_steps_at_y_and_evaluates_at_x(tiny_recipe):
    import recipesearch

    recipe = tiny_recipe(optimizer={"name": "sgd_schedulefree", "lr": 0.3}, max_duration=1)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 10))
    run = recipesearch.apply(recipe, model)
    x = torch.randn(32, 1, 16, 16)
    y = torch.randint(10, (32,))
    for _ in range(3):
        run.optimizer.zero_grad(set_to_none=True)
        xb, yb = run.batch(x, y)
        run.backward(run.loss(run.model(xb), yb))
        run.step()
        assert _modes(run.optimizer) == {True}
    run.eval_model()
    assert _modes(run.optimizer) == {False}


def test_without_the_package_it_is_one_line_naming_the_extra(monkeypatch, tiny_recipe):
    monkeypatch.setitem(sys.modules, "schedulefree", None)  # import fails as if not installed
    recipe = tiny_recipe(optimizer={"name": "adamw_schedulefree"})
    with pytest.raises(ConfigError, match=r"adamw_schedulefree needs the schedulefree package: pip install "
                                          r"'recipesearch\[schedulefree\]'") as err:
        build_optimizer(recipe.optimizer, torch.nn.Linear(2, 2))
    assert "\n" not in str(err.value)


def test_an_unknown_optimizer_name_lists_the_choices():
    with pytest.raises(ConfigError, match="optimizer.name") as err:
        recipe_from_dict({"data": {"name": "digits"}, "max_duration": 1, "optimizer": {"name": "sgd_free"}})
    assert "sgd_schedulefree" in str(err.value) and "adamw_schedulefree" in str(err.value)
    assert "\n" not in str(err.value)
