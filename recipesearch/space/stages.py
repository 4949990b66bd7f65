"""What a search does besides sampling proposals, as the space asks it: the baseline before them
(``BaselineSpec``), the confirmation and simplify stages after (``ConfirmSpec``, ``SimplifySpec``), and the
scheduler's early stopping and promotion while they train (``SchedulerSpec``). The file's sections are
checked in ``stage_entries.py`` and ``schema.py``; these are the validated values ``SearchSpace`` holds."""
from __future__ import annotations

import math
from dataclasses import dataclass

from recipesearch.analysis.target import baseline_seeds
from recipesearch.space.schema import rungs_problem


@dataclass(frozen=True)
class BaselineSpec:
    """``baseline:`` of the space file (stage_entries.BaselineEntry): seeds per budget, LR sweep first or not."""

    seeds: int = 3
    tune_lr: bool = False
    seeds_elsewhere: int | None = None  # away from the budgets the target is read at (None: ``seeds``)

    def seeds_at(self, budget: float, budgets: list[float]) -> int:
        return baseline_seeds(budget, budgets, self.seeds, self.seeds_elsewhere)


@dataclass(frozen=True)
class ConfirmSpec:
    """``confirm:`` of the space file (stage_entries.ConfirmEntry): the confirmation stage after the proposals."""

    enabled: bool = True
    top_k: int = 5
    seeds: int = 3  # seeds in all per (recipe, budget), the proposal's own run included
    max_share: float = 0.55  # of the whole search's compute (the paired baseline included)
    sequential: bool = False  # one more seed for a candidate still undecided after ``seeds`` (analysis/sequential)
    paired_baseline: str = "probe"  # "probe": one baseline run re-timed, the rest only if it moved; "full": all
    early: float | None = 1.5  # a proposal this much faster to the target in its own run is confirmed at once
    stop_at_claim: bool = False  # the search ends once a claim confirmed early stands at the target


@dataclass(frozen=True)
class SimplifySpec:
    """``simplify:`` of the space file (stage_entries.SimplifyEntry): the stage after the confirmation."""

    enabled: bool = False
    budget: float | None = None  # None: the largest budget


@dataclass(frozen=True)
class SchedulerSpec:
    """``scheduler:`` of the space file (schema.SchedulerEntry): early stopping at rungs, promotion across
    budgets (``recipesearch.analysis.rungs``)."""

    name: str = "fifo"
    reduction_factor: int = 3
    min_fraction: float = 1 / 9

    @property
    def prunes(self) -> bool:
        """Trials report at rungs and may be stopped there (MO-ASHA)."""
        return "moasha" in self.name

    @property
    def promotes(self) -> bool:
        """New proposals start at the cheapest budget; the best move up a budget."""
        return "promote" in self.name

    def rungs(self) -> tuple[float, ...]:
        from recipesearch.analysis.rungs import rung_fractions

        return rung_fractions(self.reduction_factor, self.min_fraction) if self.prunes else ()

    def problem(self) -> tuple[str, str] | None:
        """(field under ``scheduler``, message) when it asks for moasha and has no rung (schema.rungs_problem)."""
        return rungs_problem(self.name, self.reduction_factor, self.min_fraction,
                             not math.isclose(self.min_fraction, SchedulerSpec.min_fraction))

    def warning(self, budgets: list[float]) -> str | None:
        """Why this scheduler would do less than its name says with these budgets (None: it does all of it).

        Promotion with one budget has nowhere to promote to: a warning, not a refusal, because the search
        still runs right (as fifo, or moasha) and cutting a space to one budget for a quick run should not
        need a second edit of its scheduler; the line says what is left of it."""
        if self.promotes and len(budgets) == 1:
            rest = "moasha" if self.prunes else "fifo"
            return (f"{self.name} with one budget ({budgets[0]:g}): promotion moves the best proposals up to the "
                    f"next budget and there is none, so nothing is promoted (it runs as {rest}); list more budgets "
                    "or drop promote")
        return None
