"""The ablation benchmark's arms and analysis (bench/ablation.py), without training."""
from __future__ import annotations

import math

import pytest

from bench import ablation


def test_arms_drop_one_method_at_a_time_and_muon_falls_back_to_the_base_optimizer():
    recipe = {"optimizer": {"name": "muon", "lr": 0.3}, "algorithms": {"ema": {}, "sam": {"interval": 5}}, "seed": 0}
    base = {"optimizer": {"name": "sgd", "lr": 0.4}, "algorithms": {}}
    arms = ablation.arms_of(recipe, base)
    assert list(arms) == ["whole recipe", "without ema", "without sam", "without muon"]
    assert arms["without ema"]["algorithms"] == {"sam": {"interval": 5}}
    assert arms["without muon"]["optimizer"] == {"name": "sgd", "lr": 0.4}
    assert arms["without muon"]["algorithms"] == recipe["algorithms"]
    assert "without sgd" not in ablation.arms_of({**recipe, "optimizer": base["optimizer"]}, base)


def test_arms_take_the_precision_of_section_5_and_one_arm_is_at_fp32():
    recipe = {"optimizer": {"name": "sgd"}, "algorithms": {"ema": {}}, "precision": "fp32"}
    arms = ablation.arms_of(recipe, recipe, "bf16")
    assert list(arms) == ["whole recipe", "without ema", "at fp32"]
    assert [a["precision"] for a in arms.values()] == ["bf16", "bf16", "fp32"]
    assert arms["at fp32"]["algorithms"] == {"ema": {}}
    assert list(ablation.arms_of(recipe, recipe, "fp32")) == ["whole recipe", "without ema"]
    assert ablation.arms_of(recipe, recipe)["whole recipe"] is recipe


def test_share_is_the_whole_speedup_over_the_speedup_without(monkeypatch):
    # baseline curve: 10 s -> 0.80, 100 s -> 0.90; the whole recipe reaches 0.90 in 25 s (4x), without ema in 50 s
    monkeypatch.setattr(ablation, "_baseline_curve", lambda: ([10.0, 100.0], [0.80, 0.90], "then"))
    runs = [{"arm": "whole recipe", "accuracy": 0.90, "train_seconds": 25.0},
            {"arm": "without ema", "accuracy": 0.90, "train_seconds": 50.0}]
    a = ablation.analyse({"arms": {"whole recipe": {}, "without ema": {}}, "runs": runs})
    assert a["rows"]["whole recipe"]["speedup"] == pytest.approx(4.0)
    assert a["rows"]["without ema"]["share"] == pytest.approx(2.0)
    assert a["rows"]["without ema"]["time_ratio"] == pytest.approx(2.0)
    assert ablation.carriers(a["rows"]) == [("ema", pytest.approx(2.0))]
    text = ablation.render({"recipe": "r", "budget": 1.0, "seeds": 1, "threads": 2,
                            "arms": {"whole recipe": {}, "without ema": {}}, "runs": runs})
    assert "| arm | what the method removes |" in text


def test_the_carriers_are_the_largest_shares_first_without_the_whole_recipe_or_a_missing_one():
    rows = {"whole recipe": {"share": 1.0}, "without a": {"share": 1.2}, "without b": {"share": 3.0},
            "without c": {"share": math.nan}, "without d": {"share": 0.8}}
    assert ablation.carriers(rows) == [("b", 3.0), ("a", 1.2), ("d", 0.8)]
    assert ablation.carriers(rows, n=1) == [("b", 3.0)]
