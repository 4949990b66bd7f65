"""Scoring: the column selection reads, objective values and constraints, on the group and through the
SearchSpace that holds it."""
from __future__ import annotations

import pytest

from recipesearch.space import Scoring, loads_space

BASE = """\
base:
  model: {name: cnn, width: 8}
  data: {name: digits}
  optimizer: {name: sgd, lr: 0.05}
  max_duration: 1
  batch_size: 32
  device: cpu
budgets: [1]
trials: 3
"""


@pytest.mark.parametrize(("split", "column"), [("val", "val_accuracy"), ("test", "accuracy")])
def test_selection_column_follows_the_metric_split(split: str, column: str) -> None:
    assert Scoring(["accuracy", "train_seconds"], metric_split=split).selection_column == column  # type: ignore[arg-type]
    space = loads_space(BASE + f"metric_split: {split}\n")
    assert space.selection_column == column and space.metric_split == split


def test_the_space_is_selected_on_validation_by_default() -> None:
    space = loads_space(BASE)
    assert space.scoring.metric_split == "val" and space.selection_column == "val_accuracy"


def test_objective_values_and_constraints_in_their_orders() -> None:
    scoring = Scoring(["accuracy", "cost", "train_seconds"], constraints={"cost_max": 1.0, "accuracy_min": 0.8},
                      price_per_hour=2.0)
    assert scoring.directions == ["maximize", "minimize", "minimize"]
    assert scoring.objective_values(0.9, 3600) == [0.9, 2.0, 3600.0]
    # CONSTRAINT_KEYS order, whatever order they were given in; <= 0 is satisfied
    assert scoring.constraint_dict(0.9, 3600) == {"accuracy_min": pytest.approx(-0.1), "cost_max": 1.0}
    assert Scoring(["accuracy", "train_seconds"]).cost(3600) is None



@pytest.mark.parametrize("written, target", [("", "baseline"), ("target: baseline_best\n", "baseline_best"),
                                             ("target: 0.95\n", 0.95)])
def test_the_target_is_read_and_stays_out_of_the_hash(written: str, target: object) -> None:
    space = loads_space(BASE + written)
    assert space.target == target and space.hash == loads_space(BASE).hash  # what the report measures at


@pytest.mark.parametrize("value", ["1.5", "0", "best", "true", "[0.9]"])
def test_a_bad_target_is_one_line_naming_the_field(value: str) -> None:
    from recipesearch.errors import ConfigError

    with pytest.raises(ConfigError, match=r"target: allowed: baseline, baseline_best, or an accuracy between 0 and "
                                          r"1 \(got "):
        loads_space(BASE + f"target: {value}\n")
