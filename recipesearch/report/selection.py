"""Which split a search chose on, and how the report says it (header, notes, recipe files).

Choosing on test accuracy makes the test accuracies shown optimistic (maxima of noisy numbers), so the
report states the split every time: validation (with the share of train held out), or a warning.
"""
from __future__ import annotations

from dataclasses import dataclass

from recipesearch.analysis.objective_spec import TEST_SELECTION_WARNING
from recipesearch.trials_columns import VAL_ACCURACY


@dataclass(frozen=True)
class Selection:
    """Which split the search chose on; the report's header states it, and warns when it was test."""

    metric: str  # the column selected on: "val_accuracy" or "accuracy" (test)
    val_fraction: float | None = None  # share of train held out for validation (the trials' data.val_fraction)

    @property
    def on_val(self) -> bool:
        return self.metric == VAL_ACCURACY

    @property
    def label(self) -> str:
        """Column heading of the metric selected on."""
        return "val accuracy" if self.on_val else "test accuracy"

    @property
    def text(self) -> str:
        if not self.on_val:
            return TEST_SELECTION_WARNING
        held = f"{_percent(self.val_fraction)} of train held out" if self.val_fraction else "held out of train"
        return f"selected on validation ({held}); test accuracy is reported, never used to choose"


def _percent(fraction: float) -> str:
    """0.15 -> '15 %', 0.015 -> '1.5 %'."""
    return f"{100 * fraction:.3g} %"
