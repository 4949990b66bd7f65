"""A proposal: one asked trial of the search loop, what an executor runs and what the loop is told back."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import optuna


@dataclass
class Proposal:
    """One asked trial: what an executor runs (``config``) and what the loop tells back."""

    trial: optuna.Trial
    params: dict[str, Any]
    config: dict[str, Any]  # {"number", "recipe": dict | None, "error": str | None, "threads"}
    attrs: dict[str, Any] = field(default_factory=dict)  # budget, is_baseline, algorithms, recipe_id ...
    # The executor calls it with each rung's report (``config["rungs"]``); False: stop the trial there.
    on_rung: Callable[[dict[str, Any]], bool] | None = None

    @property
    def number(self) -> int:
        return self.trial.number
