"""How a trial's result is scored: the space's objectives and their directions, the split selection reads
(``selection_column``), the constraints handed to the sampler, and the price that turns training time into
cost. ``SearchSpace`` holds one ``Scoring`` and answers for it (``space.objective_values(...)``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from recipesearch.space.schema import CONSTRAINT_KEYS, DIRECTIONS
from recipesearch.trials_columns import metric_column

DEFAULT_VAL_FRACTION = 0.1  # share of train held out when a val-selecting space's base has no split


@dataclass(frozen=True)
class Scoring:
    """The space's ``objectives``, ``metric_split``, ``constraints``, ``price_per_hour`` and ``target``
    (schema.SpaceFile)."""

    objectives: list[str]  # accuracy plus train_seconds and/or cost, in the order written
    metric_split: Literal["test", "val"] = "val"
    constraints: dict[str, float] = field(default_factory=dict)  # keys of CONSTRAINT_KEYS
    price_per_hour: float | None = None
    target: str | float = "baseline"  # the headline's accuracy (analysis/target.py); not in the space hash

    @property
    def directions(self) -> list[str]:
        """Per objective, in ``objectives`` order: "maximize" for accuracy, "minimize" otherwise."""
        return [DIRECTIONS[o] for o in self.objectives]

    @property
    def selection_column(self) -> str:
        """The trials column the search selects on: ``val_accuracy`` when ``metric_split`` is val, else
        ``accuracy`` (test). The one rule is ``trials_columns.metric_column``, which readers of a run
        directory use without a space."""
        return metric_column(self.metric_split)

    def cost(self, train_seconds: float) -> float | None:
        """Price of the training time: train_seconds / 3600 × price_per_hour (None without a price)."""
        return None if self.price_per_hour is None else train_seconds / 3600.0 * self.price_per_hour

    def objective_values(self, accuracy: float, train_seconds: float) -> list[float]:
        values = {"accuracy": accuracy, "train_seconds": train_seconds, "cost": self.cost(train_seconds)}
        return [float(values[o]) for o in self.objectives]  # type: ignore[arg-type]

    def constraint_dict(self, accuracy: float, train_seconds: float) -> dict[str, float]:
        """``{constraint key: value}`` in CONSTRAINT_KEYS order; <= 0 means satisfied (Optuna's convention)."""
        cost = train_seconds / 3600.0 * (self.price_per_hour or 0.0)
        excess = {
            "accuracy_min": lambda bound: bound - accuracy,
            "train_seconds_max": lambda bound: train_seconds - bound,
            "cost_max": lambda bound: cost - bound,
        }
        return {k: float(excess[k](self.constraints[k])) for k in CONSTRAINT_KEYS if k in self.constraints}

    def constraints_values(self, accuracy: float, train_seconds: float) -> list[float]:
        """The values of ``constraint_dict`` as a list (empty without constraints)."""
        return list(self.constraint_dict(accuracy, train_seconds).values())
