"""The parameter kinds alone: how each asks Optuna, maps a sample to a recipe value, and is swept."""
from __future__ import annotations

from typing import Any

import optuna
import pytest

from recipesearch.space import ChoicesParam, GridParam, ParamSpec, RangeParam, ScaleParam


class Recorder:
    """A trial that records which ``suggest_*`` was called with what, and answers ``answer``."""

    def __init__(self, answer: Any):
        self.answer, self.calls = answer, []

    def suggest_float(self, name: str, low: float, high: float, *, log: bool = False) -> Any:
        self.calls.append(("float", name, low, high, log))
        return self.answer

    def suggest_int(self, name: str, low: int, high: int, *, log: bool = False) -> Any:
        self.calls.append(("int", name, low, high, log))
        return self.answer

    def suggest_categorical(self, name: str, choices: list[Any]) -> Any:
        self.calls.append(("categorical", name, choices))
        return self.answer


def test_each_kind_asks_optuna_the_right_way() -> None:
    cases: list[tuple[ParamSpec, tuple[Any, ...]]] = [
        (ScaleParam("optimizer.lr", "hparams.optimizer.lr", 0.5, 2.0, True, ref=0.1),
         ("float", "optimizer.lr", 0.5, 2.0, True)),
        (RangeParam("sam.interval", "f", 1.0, 10.0, False, True, ref=1), ("int", "sam.interval", 1, 10, False)),
        (RangeParam("mixup.alpha", "f", 0.1, 1.0, True, ref=0.2), ("float", "mixup.alpha", 0.1, 1.0, True)),
        (GridParam("batch_size", "f", choices=(0.5, 2.0, 1.0), ref=64), ("categorical", "batch_size", [0.5, 2.0, 1.0])),
        (ChoicesParam("precision", "f", choices=("fp32", "bf16"), ref="fp32"),
         ("categorical", "precision", ["fp32", "bf16"])),
    ]
    for spec, call in cases:
        trial = Recorder(answer=1)
        assert spec.suggest(trial) == 1
        assert trial.calls == [call]
        assert spec.suggest(optuna.trial.FixedTrial({spec.name: spec.choices[0] if spec.choices else 1})) is not None


def test_relative_kinds_multiply_the_reference_and_round_ints_half_up() -> None:
    lr = ScaleParam("optimizer.lr", "f", 0.5, 2.0, True, ref=0.1)
    assert lr.relative and lr.value(1.41) == pytest.approx(0.141)
    batch = GridParam("batch_size", "f", is_int=True, choices=(0.5, 1.0), ref=5)
    assert batch.value(0.5) == 3 and isinstance(batch.value(0.5), int)  # 2.5 rounds up, not to even
    assert batch.hparam == "batch_size" and GridParam("sam.rho", "f", ref=0.05).hparam == "rho"


def test_absolute_kinds_give_the_value_ints_as_ints() -> None:
    interval = RangeParam("sam.interval", "f", 1.0, 10.0, is_int=True, ref=1)
    assert not interval.relative
    assert interval.value(3.0) == 3 and isinstance(interval.value(3.0), int)  # Optuna may hand back 3.0
    assert RangeParam("mixup.alpha", "f", 0.1, 1.0, ref=0.2).value(0.5) == 0.5
    assert ChoicesParam("precision", "f", choices=("fp32", "bf16")).value("bf16") == "bf16"


def test_ladders_clip_round_and_keep_order() -> None:
    assert ScaleParam("a", "f", 0.7, 1.5, True, ref=1.0).ladder() == [0.7, 0.71, 1.0, 1.41, 1.5]
    assert RangeParam("b", "f", 1.0, 10.0, is_int=True, start=4).ladder() == [2, 3, 4, 6, 8]
    assert RangeParam("c", "f", 0.05, 0.3, start=0.2).ladder() == pytest.approx([0.1, 0.142, 0.2, 0.282, 0.3])
    assert GridParam("d", "f", choices=(2.0, 0.5, 1.0)).ladder() == [0.5, 1.0, 2.0]
    assert ChoicesParam("e", "f", choices=("z", "a", "m")).ladder() == ["z", "a", "m"]


def test_neighbours_step_along_the_ladder() -> None:
    grid = GridParam("d", "f", choices=(0.5, 0.71, 1.0, 1.41, 2.0))
    assert grid.neighbours(1.0, 1) == [0.71, 1.41] and grid.neighbours(0.5, 2) == [1.0]
    assert grid.neighbours(1.2, 1) == [1.0, 1.41]  # off the ladder: the nearest on each side
    choices = ChoicesParam("e", "f", choices=(1, True, "x"))
    assert choices.neighbours(True, 1) == [1, "x"]
    assert choices.neighbours(1.0, 1) == []  # same value, other type: not on the ladder


def test_canonical_holds_every_attribute_for_the_hash() -> None:
    keys = {"name", "field", "kind", "low", "high", "log", "is_int", "choices", "ref", "baseline", "start"}
    for spec in (ScaleParam("a", "f"), RangeParam("a", "f"), GridParam("a", "f"), ChoicesParam("a", "f")):
        assert set(spec.canonical()) == keys
        assert spec.canonical()["kind"] == spec.kind
