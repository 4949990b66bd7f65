"""What a frontier is judged on: the objective columns, their directions, the metric split and the target.

``frontier`` takes anything with ``objectives``, ``directions`` and ``metric_split`` (``ObjectiveSpec``):
a ``SearchSpace`` during a search, or ``Objectives``, the same three read back from run.json, when only
a run directory is at hand. The *metric* is the column the search selects on: ``val_accuracy`` when the
space's ``metric_split`` is "val", else the test ``accuracy`` (``trials_columns.metric_column``; the column
names are recipesearch/trials_columns.py's). Selecting on test is allowed but warned about, in one sentence
(``TEST_SELECTION_WARNING``) that the search's summary and the report both print. The cost rule
(``used_objectives``) drops cost when some completed trial lacks one, so the columns a frontier uses can differ
from the space's.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from recipesearch.trials_columns import ACCURACY, COST, TEST_SPLIT, TIME, VAL_ACCURACY, VAL_SPLIT

# Test accuracies picked as maxima of noisy numbers are biased upwards: said wherever a test-selected run is shown.
TEST_SELECTION_WARNING = ("this search selected on the test split: its test accuracies are optimistic; "
                          "use metric_split: val")
# Direction of each objective a space may name ("accuracy" stands for the metric column).
DIRECTIONS = {ACCURACY: "maximize", VAL_ACCURACY: "maximize", TIME: "minimize", COST: "minimize"}


class ObjectiveSpec(Protocol):
    """What ``frontier`` reads of a search space (``SearchSpace`` and ``Objectives`` both have it)."""

    @property
    def objectives(self) -> Sequence[str]: ...
    @property
    def directions(self) -> Sequence[str]: ...
    @property
    def metric_split(self) -> str: ...


@dataclass(frozen=True)
class Objectives:
    """A space's objectives without the space: what run.json stores, for readers of a run directory.

    The default (used when run.json does not say) is what the data allows: accuracy vs training time,
    plus cost when every completed trial has one (the cost rule of ``frontier``), on test accuracy.
    """

    objectives: tuple[str, ...] = (ACCURACY, TIME, COST)
    directions: tuple[str, ...] = ("maximize", "minimize", "minimize")
    metric_split: str = TEST_SPLIT
    target: str | float = "baseline"  # the headline's accuracy (analysis.target)

    def __post_init__(self) -> None:
        if len(self.objectives) != len(self.directions):
            raise ValueError(f"objectives {self.objectives} and directions {self.directions} differ in length")
        if self.metric_split not in (TEST_SPLIT, VAL_SPLIT):
            raise ValueError(f"metric_split must be 'test' or 'val', got {self.metric_split!r}")

    @classmethod
    def from_run_meta(cls, meta: Mapping[str, Any] | None) -> Objectives:
        """From run.json's "objectives", "directions" and "metric_split"; the default for what is missing.

        Directions that do not match the objectives (older or hand-edited files) are derived from the
        objective names instead, since each objective has one sensible direction.
        """
        meta = meta or {}
        split = meta.get("metric_split")
        split = split if split in (TEST_SPLIT, VAL_SPLIT) else TEST_SPLIT
        target = meta.get("target")
        target = target if target in ("baseline", "baseline_best") or (
            isinstance(target, (int, float)) and not isinstance(target, bool) and 0 < target < 1) else "baseline"
        names = meta.get("objectives")
        if not (isinstance(names, (list, tuple)) and names and all(n in DIRECTIONS for n in names)
                and any(DIRECTIONS[n] == "maximize" for n in names)):
            return cls(metric_split=split, target=target)
        dirs = meta.get("directions")
        if not (isinstance(dirs, (list, tuple)) and len(dirs) == len(names)
                and all(d in ("maximize", "minimize") for d in dirs)):
            dirs = [DIRECTIONS[n] for n in names]
        return cls(tuple(str(n) for n in names), tuple(str(d) for d in dirs), split, target)


def used_objectives(
    space: ObjectiveSpec, metric: str, cost: np.ndarray
) -> tuple[tuple[str, ...], tuple[str, ...], list[str]]:
    """The space's objectives as columns, after the cost rule (cost only when every completed trial has one)."""
    pairs = [(metric if DIRECTIONS.get(o) == "maximize" else o, d)
             for o, d in zip(space.objectives, space.directions, strict=True)]
    warnings = []
    if any(o == COST for o, _ in pairs) and not (len(cost) and np.isfinite(cost).all()):
        pairs = [(o, d) for o, d in pairs if o != COST]
        if TIME not in [o for o, _ in pairs]:
            pairs.append((TIME, "minimize"))  # a cost-only space is still judged on time, never on metric alone
        if np.isfinite(cost).any():
            warnings.append("cost is missing for some completed trials: the frontier ignores cost")
    return tuple(o for o, _ in pairs), tuple(d for _, d in pairs), warnings
