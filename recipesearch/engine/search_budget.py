"""A search's budget in trainings of its own baseline, or in wall-clock time: what the driver plans the stages in.

``search_budget: N`` (a space key, or ``--search-budget N``) caps every stage together at N trainings of the
baseline at budget 1 (the budget nearest 1: ``analysis.target.reference_budget``); ``--time-budget 2h`` caps the
search's wall-clock time (this command's: a ``--resume`` gets its own) instead. The unit, one baseline training,
is the seed mean of the completed baseline (and LR-sweep) runs at that budget, re-estimated as runs finish.

The stages are planned inside the cap:

- the LR sweep and the baseline always run whole (a ``search_budget`` below what they need is refused up front,
  naming the minimum: ``minimum_trainings``);
- proposals stop once what was spent, with the runs in flight at their estimated cost, reaches the cap less what
  is kept back for the confirmation: ``confirm.max_share`` of the cap, and at least what confirming one recipe
  takes (its curve, ``confirm.seeds`` at every budget at the plan's regression margin, and the paired baseline's
  or its probe: ``confirm_reserve``);
- the confirmation plans its runs within what is left of the cap (``confirm_allowance``), in place of its
  ``max_share`` of the compute, and a second look that does not fit whole takes the undecided candidates in the
  plan's order while they fit (``ConfirmStage.look_again``). ``trials`` still caps the count of runs: whichever
  comes first ends the proposals.
"""
from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from optuna.trial import FrozenTrial, TrialState

from recipesearch.analysis.target import reference_budget
from recipesearch.engine import study as st
from recipesearch.errors import UserError

if TYPE_CHECKING:
    from recipesearch.engine.search_options import SearchOptions
    from recipesearch.space import SearchSpace

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """Seconds in '2h', '90m', '45s', '1.5h' or '1h30m'; a UserError naming --time-budget for anything else."""
    parts = re.fullmatch(r"\s*((?:\d+(?:\.\d+)?\s*[smhd]\s*)+)", str(text).lower())
    if parts is None:
        raise UserError(f"--time-budget: {text!r} is not a duration (write it as 2h, 90m, 45s or 1h30m)")
    seconds = sum(float(n) * _UNITS[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)\s*([smhd])", parts.group(1)))
    if not seconds > 0:
        raise UserError(f"--time-budget: {text!r} is no time at all")
    return seconds


def minimum_trainings(space: SearchSpace) -> float:
    """Trainings of the baseline at budget 1 that the LR sweep and the baseline take (training time scales with the
    budget): what a ``search_budget`` must at least hold."""
    budgets = [float(b) for b in space.budgets]
    reference = reference_budget(budgets)
    sweep = len(space.lr_sweep()) * reference
    return (sum(space.baseline.seeds_at(b, budgets) * b for b in budgets) + sweep) / reference


def check_trainings(space: SearchSpace, trainings: float, where: str) -> None:
    """A ``search_budget`` below what the baseline alone needs is refused in one line naming the minimum."""
    need = minimum_trainings(space)
    if trainings < need:
        sweep = " and the LR sweep" if space.baseline.tune_lr else ""
        raise UserError(f"{where}: {trainings:g} trainings cannot even train the baseline "
                        f"({space.describe_baseline()}{sweep}: {need:.2f} trainings of the baseline at budget "
                        f"{reference_budget(space.budgets):g}): at least {math.ceil(need)}")


def confirm_reserve(space: SearchSpace, trainings: float) -> float:
    """Trainings of the baseline a search budget of ``trainings`` keeps back for the confirmation: its
    ``max_share``, and at least one recipe's curve (``confirm.seeds`` at every budget, at the plan's
    ``REGRESSION_MARGIN``) and the paired baseline's (the same, or one training for its probe); 0 without a
    confirmation stage."""
    from recipesearch.engine.confirm import REGRESSION_MARGIN, probes

    if not space.confirm.enabled:
        return 0.0
    curve = space.confirm.seeds * sum(float(b) for b in space.budgets) / reference_budget(space.budgets)
    paired = 1.0 if probes(space) else curve
    return max(float(space.confirm.max_share) * trainings, curve * REGRESSION_MARGIN + paired)


def unit_seconds(trials: Sequence[FrozenTrial], space: SearchSpace) -> float | None:
    """One training of the baseline at the reference budget: the mean train_seconds of its completed runs there
    (LR-sweep runs at the base LR count); else its runs at other budgets scaled by the budget; None before any."""
    reference = reference_budget(space.budgets)
    at_reference, scaled = [], []
    for t in trials:
        secs = t.user_attrs.get("train_seconds")
        if t.state != TrialState.COMPLETE or not secs or not (t.user_attrs.get("is_baseline")
                                                              or st.stage_of(t) == st.TUNE):
            continue
        budget = float(st.trial_params(t).get("budget", reference))
        if st.stage_of(t) == st.TUNE and not space.is_baseline(st.trial_params(t)):
            continue  # an LR-sweep run at another LR is not the baseline
        (at_reference if math.isclose(budget, reference) else scaled).append(float(secs) * reference / budget)
    runs = at_reference or scaled
    return sum(runs) / len(runs) if runs else None


@dataclass
class SearchBudget:
    """The cap a search plans its stages in: ``trainings`` of the baseline at budget 1, or ``seconds`` of
    wall-clock time from ``started`` (with ``concurrency`` trials at a time)."""

    space: SearchSpace
    trainings: float | None = None
    seconds: float | None = None
    concurrency: int = 1
    started: float = field(default_factory=time.monotonic)

    def _reserve(self) -> float:
        """Trainings kept back for the confirmation (``confirm_reserve``)."""
        return confirm_reserve(self.space, self.trainings or 0.0)

    def spent(self, trials: Sequence[FrozenTrial]) -> float:
        """Training seconds of every finished run (a stopped or failed one's too, as far as it went)."""
        return float(sum(t.user_attrs.get("train_seconds") or 0.0 for t in trials if st.is_finished(t)))

    def in_flight(self, trials: Sequence[FrozenTrial], unit: float) -> float:
        """The runs in training now, each at its budget's share of one baseline training."""
        reference = reference_budget(self.space.budgets)
        return float(sum(unit * float(st.trial_params(t).get("budget", reference)) / reference
                         for t in trials if t.state == TrialState.RUNNING))

    def proposals_closed(self, trials: Sequence[FrozenTrial]) -> bool:
        """No more proposals: what was spent and is in flight reaches the cap less the confirmation's share."""
        if self.seconds is not None:  # wall-clock: the confirmation's share of it (its runs' times are not known yet)
            share = float(self.space.confirm.max_share) if self.space.confirm.enabled else 0.0
            return time.monotonic() - self.started >= self.seconds * (1.0 - share)
        unit = unit_seconds(trials, self.space)
        if self.trainings is None or unit is None:
            return False  # nothing to measure the budget in yet: the baseline runs first anyway
        return self.spent(trials) + self.in_flight(trials, unit) >= (self.trainings - self._reserve()) * unit

    def confirm_allowance(self, trials: Sequence[FrozenTrial]) -> float | None:
        """Training seconds the confirmation may plan: what is left of the cap (None: nothing to measure it in)."""
        if self.seconds is not None:
            left = self.seconds - (time.monotonic() - self.started)
            return max(0.0, left) * self.concurrency
        unit = unit_seconds(trials, self.space)
        if self.trainings is None or unit is None:
            return None
        return max(0.0, self.trainings * unit - self.spent(trials))

    def describe(self) -> str:
        if self.seconds is not None:
            s = self.seconds
            size = f"{s / 3600:g} h" if s >= 3600 else f"{s / 60:g} min" if s >= 60 else f"{s:g} s"
            return f"time budget {size} of wall-clock time"
        return f"search budget {self.trainings:g} trainings of the baseline at budget " \
               f"{reference_budget(self.space.budgets):g}"


def budget_from_options(space: SearchSpace, options: SearchOptions, concurrency: int) -> SearchBudget | None:
    """--time-budget, else --search-budget or the space's ``search_budget``; None: neither. A bad value is one
    line naming its flag (or key). ``concurrency``: the trials at a time the driver runs."""
    if options.time_budget is not None:
        if options.search_budget is not None:
            raise UserError("--time-budget and --search-budget: give one of them")
        given = options.time_budget
        seconds = given if isinstance(given, (int, float)) and not isinstance(given, bool) \
            else parse_duration(str(given))
        if not seconds > 0:
            raise UserError(f"--time-budget: {given!r} is no time at all")
        return SearchBudget(space, seconds=float(seconds), concurrency=concurrency)
    trainings = options.search_budget if options.search_budget is not None else space.search_budget
    if trainings is None:
        return None
    where = "--search-budget" if options.search_budget is not None else "search_budget"
    if isinstance(trainings, bool) or not isinstance(trainings, (int, float)) or not 0 < trainings < float("inf"):
        raise UserError(f"{where} must be a number of trainings > 0, not {trainings!r}")
    check_trainings(space, float(trainings), where)
    return SearchBudget(space, trainings=float(trainings), concurrency=concurrency)
