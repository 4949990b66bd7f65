"""The user attrs the loop writes on a trial (engine/trial_attrs.py): a result's numbers, error and objective
values, and the methods label of a recipe."""
from __future__ import annotations

import math

import pytest

from recipesearch.engine.trial_attrs import method_label, outcome

GOOD = {"accuracy": 0.91, "val_accuracy": math.nan, "loss": 0.3, "train_seconds": 1.5, "throughput": 900.0,
        "data_wait_fraction": 0.05, "epochs": 1.0, "error": None, "wall_seconds": 1.9, "node": "127.0.0.2"}


def test_outcome_objectives_and_constraints(make_space):
    space = make_space(constraints={"accuracy_min": 0.5}, objectives=["accuracy", "train_seconds", "cost"],
                       price_per_hour=3.6)
    attrs, values = outcome(space, dict(GOOD), None)
    assert values == pytest.approx([0.91, 1.5, 1.5 / 3600 * 3.6])
    assert attrs["cost"] == pytest.approx(0.0015) and attrs["constraints"] == pytest.approx([0.5 - 0.91])
    attrs, values = outcome(space, None, "worker crashed: x")
    assert values is None and attrs["error"] == "worker crashed: x"


def test_the_objective_is_the_accuracy_of_the_metric_split(make_space):
    base = {"model": {"name": "cnn", "width": 8}, "data": {"name": "digits", "val_fraction": 0.2},
            "max_duration": 1, "device": "cpu"}
    space = make_space(base=base, metric_split="val")
    attrs, values = outcome(space, {**GOOD, "val_accuracy": 0.8}, None)
    assert values == [0.8, 1.5] and attrs["accuracy"] == 0.91 and attrs["val_accuracy"] == 0.8
    attrs, values = outcome(space, dict(GOOD), None)  # no validation accuracy: a failure, not test accuracy
    assert values is None and "no finite val accuracy" in attrs["error"]


def test_the_method_label_names_an_optimizer_that_is_not_the_bases(make_space):
    space = make_space(hparams={"optimizer.name": {"choices": ["sgd", "muon"]}})
    sgd = space.recipe_for(space.complete({"optimizer.name": "sgd", "alg.label_smoothing": True}))
    muon = space.recipe_for(space.complete({"optimizer.name": "muon", "alg.label_smoothing": True}))
    assert method_label(sgd, space.base) == "label_smoothing"
    assert method_label(muon, space.base) == "label_smoothing+muon"  # Muon's effect is not the smoothing's
