"""The target accuracy a search's headline is measured at, and what reaching it faster is worth.

A user trains for an accuracy, usually the one their recipe gets today; a speedup at some lower accuracy (where a
fast recipe's short runs happen to sit) is not a speedup of their training. So the headline is the time to reach
the *target*, curve against curve (``analysis.recipe_curves``), confirmed or not at that accuracy. The space's
``target`` is one of:

- ``baseline`` (the default): the baseline's seed-mean accuracy on the selection split at budget 1, what the base
  recipe gets today (the budget nearest 1 on a log scale when 1 is not one of the space's budgets);
- ``baseline_best``: the baseline's best seed-mean accuracy at any budget;
- a number in (0, 1): that accuracy.

``payback`` turns the headline into money: what the search cost (its training seconds, and how many trainings
of the baseline at budget 1 that is), what the headline recipe saves on each training to the target, and after
how many such trainings the search has paid for itself.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from recipesearch.trials_columns import TIME

BASELINE = "baseline"
BASELINE_BEST = "baseline_best"
TARGET_WORDS = (BASELINE, BASELINE_BEST)


@dataclass(frozen=True)
class Target:
    """The accuracy the headline is measured at, and where it comes from (for every line that shows it)."""

    accuracy: float  # NaN while it cannot be known (no baseline run at the reference budget yet)
    source: str  # "the baseline at budget 1", "the baseline's best (budget 2)", "a target of 0.95"
    spec: str | float = BASELINE


def reference_budget(budgets: np.ndarray | list[float]) -> float:
    """Budget 1, or the budget nearest 1 on a log scale (the smaller on a tie); NaN for none."""
    values = sorted(float(b) for b in budgets if float(b) > 0)
    return min(values, key=lambda b: (abs(math.log(b)), b)) if values else float("nan")


def target_budgets(budgets: np.ndarray | list[float]) -> tuple[float, ...]:
    """The budgets the default target is read at: the reference budget and the one below it, between which the
    baseline's curve crosses its own mean at the reference budget in every bootstrap replicate that reaches it."""
    values = sorted(float(b) for b in budgets if float(b) > 0)
    if not values:
        return ()
    i = values.index(reference_budget(values))
    return tuple(values[max(0, i - 1):i + 1])


def baseline_seeds(budget: float, budgets: list[float], seeds: int, elsewhere: int | None) -> int:
    """Runs of the base recipe at ``budget`` (``baseline.seeds`` / ``baseline.seeds_elsewhere``): ``seeds`` at the
    ``target_budgets``, ``elsewhere`` (None: ``seeds``) at the others, whose runs then only draw the curve."""
    return seeds if elsewhere is None or float(budget) in target_budgets(budgets) else elsewhere


def describe_seeds(budgets: list[float], seeds: int, elsewhere: int | None) -> str:
    """The baseline's runs in words: '3 seed(s) at budgets 0.25, 0.5, 1', or '3 seed(s) at budgets 0.5, 1 and 1
    at 0.25'."""
    on = target_budgets(budgets) if elsewhere is not None and elsewhere != seeds else tuple(sorted(budgets))
    text = f"{seeds} seed(s) at budgets {', '.join(f'{b:g}' for b in on)}"
    rest = [f"{b:g}" for b in sorted(budgets) if float(b) not in on]
    return f"{text} and {elsewhere} at {', '.join(rest)}" if rest else text


def resolve_target(spec: str | float, baseline_points: pd.DataFrame, metric: str) -> Target:
    """The target of ``spec`` given the baseline's points (one row per budget: ``budget`` and the seed-mean
    ``metric``)."""
    if not isinstance(spec, str):
        return Target(float(spec), f"a target of {float(spec):.4f}", float(spec))
    if baseline_points.empty:
        return Target(float("nan"), "the baseline (not trained yet)", spec)
    if spec == BASELINE_BEST:
        best = baseline_points.sort_values([metric, "budget"], ascending=[False, True]).iloc[0]
        return Target(float(best[metric]), f"the baseline's best (budget {float(best['budget']):g})", spec)
    budget = reference_budget(baseline_points["budget"].to_numpy(dtype=float))
    row = baseline_points[np.isclose(baseline_points["budget"].astype(float), budget)].iloc[0]
    nearest = "" if math.isclose(budget, 1.0) else " (nearest 1)"
    return Target(float(row[metric]), f"the baseline at budget {budget:g}{nearest}", spec)


@dataclass(frozen=True)
class Payback:
    """What a search cost, and when its headline recipe pays it back (NaN where it cannot be said)."""

    search_seconds: float  # training seconds of every run of the search, every stage, failed and stopped included
    unit_seconds: float  # one training of the baseline at the reference budget (its seed mean)
    saved_seconds: float  # per training to the target: the baseline's time minus the recipe's (NaN: no headline)
    by_stage: tuple[tuple[str, float], ...] = ()  # (stage, training seconds) in the order the stages run

    @property
    def search_trainings(self) -> float:
        """The search's cost in trainings of the baseline at budget 1."""
        return self.search_seconds / self.unit_seconds if self.unit_seconds > 0 else float("nan")

    @property
    def break_even(self) -> float:
        """Trainings to the target after which the recipe has saved what the search cost (inf: it never does)."""
        if not math.isfinite(self.saved_seconds):
            return float("nan")
        return math.ceil(self.search_seconds / self.saved_seconds) if self.saved_seconds > 0 else float("inf")

    def text(self) -> str:
        """'the search cost 12.3 trainings of the baseline (0.02 h of training); its recipe saves 2.10 s a training
        to the target: it pays for itself after 14 trainings'."""
        if not (self.search_seconds > 0 and math.isfinite(self.search_trainings)):
            return ""
        cost = (f"the search cost {self.search_trainings:.1f} trainings of the baseline "
                f"({self.search_seconds / 3600:.2f} h of training)")
        if math.isnan(self.break_even):
            return f"{cost}; no confirmed recipe to pay it back"
        if math.isinf(self.break_even):
            return f"{cost}; its recipe saves nothing per training, so it never pays for itself"
        return (f"{cost}; its recipe saves {self.saved_seconds:.2f} s a training to the target: it pays for itself "
                f"after {self.break_even:.0f} trainings")

    def stages_text(self) -> str:
        """'by stage: LR sweep 2.6 trainings (0.00 h), baseline 11.0 (0.01 h), ...' ('' without stages)."""
        if not (self.by_stage and self.unit_seconds > 0):
            return ""
        parts = [f"{STAGE_WORDS.get(name, name)} {secs / self.unit_seconds:.1f} ({secs / 3600:.2f} h)"
                 for name, secs in self.by_stage]
        return "by stage, in trainings of the baseline (hours of training): " + ", ".join(parts)

    def to_dict(self) -> dict[str, object]:
        def num(x: float) -> float | None:
            return round(float(x), 4) if math.isfinite(x) else None

        return {"search_seconds": num(self.search_seconds), "search_trainings": num(self.search_trainings),
                "saved_seconds_per_training": num(self.saved_seconds), "break_even_trainings": num(self.break_even),
                "unit_seconds": num(self.unit_seconds),
                "by_stage": {name: {"seconds": num(secs), "trainings": num(secs / self.unit_seconds)
                                    if self.unit_seconds > 0 else None} for name, secs in self.by_stage}}


def payback(trials: pd.DataFrame, unit_seconds: float, saved_seconds: float) -> Payback:
    """``Payback`` of the runs in ``trials`` (every row's ``train_seconds`` that is a number; by ``stage`` where
    the table has one)."""
    seconds = pd.to_numeric(trials[TIME], errors="coerce") if TIME in trials else pd.Series(dtype=float)
    seconds = seconds.where(np.isfinite(seconds), 0.0)
    stages: tuple[tuple[str, float], ...] = ()
    if "stage" in trials and len(trials):
        sums = seconds.groupby(trials["stage"].fillna("").astype(str)).sum()
        order = [s for s in STAGE_WORDS if s in sums.index] + sorted(set(sums.index) - set(STAGE_WORDS) - {""})
        stages = tuple((s, float(sums[s])) for s in order)
    return Payback(float(seconds.sum()), float(unit_seconds), float(saved_seconds), stages)


# The stages of a search (engine/study.py), in the order they run, as the payback names them.
STAGE_WORDS = {"tune": "LR sweep", "baseline": "baseline", "search": "proposals", "confirm": "confirmation",
               "simplify": "simplify"}
