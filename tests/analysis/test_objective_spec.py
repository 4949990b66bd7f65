"""recipesearch/analysis/objective_spec.py: the objectives a run directory's readers get from run.json."""
from __future__ import annotations

import pytest

from recipesearch.analysis import Objectives


def test_objectives_from_run_json():
    meta = {"objectives": ["accuracy", "cost"], "directions": ["maximize", "minimize"], "metric_split": "val"}
    assert Objectives.from_run_meta(meta) == Objectives(("accuracy", "cost"), ("maximize", "minimize"), "val")
    # what run.json does not say comes from the data: cost when every trial has one, test accuracy
    assert Objectives.from_run_meta({}) == Objectives.from_run_meta(None) == Objectives()
    assert Objectives().objectives == ("accuracy", "train_seconds", "cost") and Objectives().metric_split == "test"
    assert Objectives.from_run_meta({"objectives": ["accuracy", "train_seconds"], "directions": "max"}).directions \
        == ("maximize", "minimize")
    assert Objectives.from_run_meta({"objectives": ["throughput"], "metric_split": "train"}) == Objectives()
    with pytest.raises(ValueError):
        Objectives(("accuracy",), ("maximize", "minimize"))
