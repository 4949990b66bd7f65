"""The confirmation stage: retrain the best proposals with more seeds and at every budget.

A proposal is one run at one budget and one seed: a lucky seed can put it on the frontier. After the
proposals, the non-dominated ones on the selection metric (never on test) are trained again, so each
confirmed recipe has a tradeoff curve of its own (every budget of the space) with ``confirm.seeds``
seeds per budget; the frontier and the headline speedup are then computed on seed means, curve against
the baseline's curve (``recipesearch.analysis.frontier``).

Which candidates, in order: the front of the completed proposals (``Frontier.on_recipe_front``), one per
recipe (``Frontier``'s ``recipe_key``: the same params at another budget is the same recipe), the largest
single-run speedup at matched accuracy first (those are the claims that most need checking), then by the
metric. A candidate is taken while the stage's estimated compute stays within ``confirm.max_share`` of the
whole search's compute (proposals + baselines + confirmation); a candidate too dear for what is left is
skipped for a cheaper one. A run's estimated compute is the candidate's own train_seconds scaled as the
baseline's mean train_seconds (``Frontier.baseline_points``) scale between the two budgets (short runs
cost more than their share of epochs: warm-up, per-epoch overhead), or by the budget ratio where the
baseline did not run at both, times ``REGRESSION_MARGIN``.

The plan is a pure function of the finished trials of the earlier stages, which no longer change once
the proposals are done, so a resumed search plans the same runs, and ``enqueue_missing`` queues only
those not yet queued: nothing is run twice.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from optuna.trial import FrozenTrial

from recipesearch.engine import study as st
from recipesearch.engine.queueing import enqueue_missing
from recipesearch.engine.trial_rows import trials_frame

if TYPE_CHECKING:
    import optuna

    from recipesearch.space import SearchSpace

EARLIER_STAGES = (st.TUNE, st.BASELINE, st.SEARCH)
# Candidates sit on the front partly because their one run was fast: their repeats regress to the mean.
# Measured on the digits demo: runs estimated from the candidates' own times took 1.25x the estimate.
REGRESSION_MARGIN = 1.25


@dataclass(frozen=True)
class ConfirmRun:
    params: dict[str, Any]
    seed_index: int
    of_trial: int
    estimated_seconds: float


@dataclass(frozen=True)
class ConfirmPlan:
    candidates: tuple[int, ...] = ()  # trial numbers confirmed, in priority order
    skipped: tuple[int, ...] = ()  # non-dominated proposals left out (top_k or compute share)
    runs: tuple[ConfirmRun, ...] = field(default_factory=tuple)
    search_seconds: float = 0.0  # train_seconds of the earlier stages' finished trials
    estimated_seconds: float = 0.0  # of ``runs``

    @property
    def estimated_share(self) -> float:
        total = self.search_seconds + self.estimated_seconds
        return self.estimated_seconds / total if total > 0 else 0.0

    def describe(self) -> str:
        if not self.candidates:
            return "confirmation: no proposal to confirm" + (
                f" ({len(self.skipped)} non-dominated, none within the compute share)" if self.skipped else "")
        return (f"confirmation: {len(self.candidates)} recipe(s) (trials {', '.join(map(str, self.candidates))}) "
                f"x every budget x seeds = {len(self.runs)} runs, ~{self.estimated_share:.0%} of the compute"
                + (f"; {len(self.skipped)} more non-dominated left out" if self.skipped else ""))


@dataclass(frozen=True)
class _Candidates:
    """What the plan reads of the earlier stages, all from one ``frontier``."""

    ordered: list[tuple[FrozenTrial, str]]  # non-dominated proposals in priority order, with their recipe_key
    search_seconds: float  # train_seconds of the earlier stages' finished trials
    time_scale: dict[float, float]  # mean train_seconds of the baseline per budget


def _candidates(trials: Sequence[FrozenTrial], space: SearchSpace) -> _Candidates:
    from recipesearch.analysis.frontier import frontier

    earlier = [t for t in trials if st.stage_of(t) in EARLIER_STAGES]
    seconds = float(sum(t.user_attrs.get("train_seconds") or 0.0 for t in earlier if st.is_finished(t)))
    df = trials_frame(earlier, space)
    if df.empty:
        return _Candidates([], seconds, {})
    fr = frontier(df, space)
    rows = fr.trials[fr.on_recipe_front & fr.completed].copy()
    rows["_speedup"] = np.where(rows["speedup_status"] == "interpolated", rows["speedup"], np.nan)
    rows = rows.sort_values(["_speedup", fr.metric, "number"], ascending=[False, False, True], na_position="last")
    by_number = {t.number: t for t in earlier}
    base = fr.baseline_points
    scale = {float(b): float(s) for b, s in zip(base["budget"], base["train_seconds"], strict=True)} if len(base) \
        else {}
    return _Candidates([(by_number[int(n)], str(k)) for n, k in zip(rows["number"], rows["recipe_key"], strict=True)],
                       seconds, scale)


def _estimate(own_seconds: float, own_budget: float, budget: float, scale: dict[float, float]) -> float:
    if scale.get(own_budget, 0) > 0 and budget in scale:
        return REGRESSION_MARGIN * own_seconds * scale[budget] / scale[own_budget]
    return REGRESSION_MARGIN * own_seconds * budget / own_budget


def plan_confirmation(trials: Sequence[FrozenTrial], space: SearchSpace) -> ConfirmPlan:
    """Which proposals to confirm and the runs that takes (module docstring)."""
    spec = space.confirm
    if not spec.enabled:
        return ConfirmPlan()
    found = _candidates(trials, space)
    allowed = found.search_seconds * spec.max_share / (1.0 - spec.max_share)
    present = st.present_runs(trials, EARLIER_STAGES)  # not the confirmation's own: the plan must not move
    seen: set[str] = set()
    chosen: list[int] = []
    skipped: list[int] = []
    runs: list[ConfirmRun] = []
    spent = 0.0
    for t, key in found.ordered:
        params = st.trial_params(t)
        if key in seen:
            continue  # the same recipe at another budget: confirmed once
        seen.add(key)
        own_budget, own_seconds = float(params["budget"]), float(t.user_attrs.get("train_seconds") or 0.0)
        mine = []
        for budget in space.budgets:
            at_budget = {**params, "budget": float(budget)}
            for seed in range(spec.seeds):
                if st.run_key(at_budget, seed) in present:
                    continue  # the proposal itself, or the same recipe another stage already ran
                mine.append(ConfirmRun(at_budget, seed, t.number,
                                       _estimate(own_seconds, own_budget, float(budget), found.time_scale)))
        cost = sum(r.estimated_seconds for r in mine)
        if len(chosen) >= spec.top_k or spent + cost > allowed:
            skipped.append(t.number)
            continue
        chosen.append(t.number)
        runs += mine
        spent += cost
    return ConfirmPlan(tuple(chosen), tuple(skipped), tuple(runs), found.search_seconds, spent)


def enqueue_plan(study: optuna.Study, plan: ConfirmPlan) -> int:
    """Queue the plan's runs not yet queued (resume-safe); returns how many were added."""
    added = 0
    for number in plan.candidates:
        mine = [(r.params, r.seed_index) for r in plan.runs if r.of_trial == number]
        added += enqueue_missing(study, mine, [st.CONFIRM], stage=st.CONFIRM, of_trial=number, is_baseline=False)
    return added
