"""The simplify stage (``simplify: true`` in a space, or ``--simplify``): after the confirmation, the headline
recipe without each of its methods, then without every method it does not need, as a new curve.

Two steps, each a pure function of the finished trials, so a resumed search plans the same runs and
``enqueue_missing`` queues only those not yet queued (nothing is run twice):

1. *ablation*: the confirmed headline recipe (``Frontier.headline``, computed on the trials of the search and
   the confirmation alone, so the simplify stage's own runs never move its target) at ``simplify.budget``
   (default: the space's largest budget, where methods that only pay off early cost the most) without one
   method at a time. A method is a switched-on algorithm of the space, or the optimizer where the recipe's
   differs from the base recipe's (then "without" means the base's). The whole recipe is trained again
   beside its arms, seed by seed (whole, then each arm, for one seed before the next): times are compared
   only side by side, never against runs of another hour. So the ablation takes fresh seed indices, after
   the confirmation's (``confirm.seeds`` of them), and never reuses the confirmation's runs.
2. *pruned curve*, once every ablation run finished: ``analysis.simplify.removals`` says which methods the
   recipe does without (no slower, no less accurate beyond the noise, on the selection metric: never on
   test); the recipe without all of them is trained at every budget with the same seeds. The frontier then
   judges it like any confirmed recipe: it becomes the headline only if its curve is faster.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from optuna.trial import FrozenTrial, TrialState

from recipesearch.analysis.simplify import Removal, removals, verdicts_text
from recipesearch.engine import study as st
from recipesearch.engine.queueing import enqueue_missing
from recipesearch.engine.trial_rows import trials_frame
from recipesearch.space.search_space import params_key

if TYPE_CHECKING:
    import optuna

    from recipesearch.space import SearchSpace

BEFORE = (st.TUNE, st.BASELINE, st.SEARCH, st.CONFIRM)  # the trials that choose what to simplify
OPTIMIZER = "optimizer.name"


@dataclass(frozen=True)
class SimplifyPlan:
    step: str = "none"  # "none" (nothing to simplify) | "ablation" | "pruned"
    recipe: int | None = None  # the headline's trial number
    budget: float | None = None
    methods: tuple[str, ...] = ()  # the recipe's methods, each ablated
    removals: tuple[Removal, ...] = ()  # the verdicts (step "pruned")
    runs: tuple[tuple[dict[str, Any], int], ...] = field(default_factory=tuple)  # (params, seed index)
    reason: str = ""

    @property
    def dropped(self) -> tuple[str, ...]:
        return tuple(r.method for r in self.removals if r.drop)

    def describe(self) -> str:
        if self.step == "none":
            return f"simplify: nothing to simplify ({self.reason})"
        if self.step == "ablation":
            return (f"simplify: trial {self.recipe}'s recipe at budget {self.budget:g}, whole and without each of "
                    f"its {len(self.methods)} methods ({', '.join(self.methods)}), side by side: {len(self.runs)} runs")
        return f"simplify: {verdicts_text(self.recipe, self.budget, self.removals)}" + (
            f": {len(self.runs)} runs" if self.runs else "")

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "recipe": self.recipe, "budget": self.budget, "methods": list(self.methods),
                "dropped": list(self.dropped), "reason": self.reason,
                "removals": [r.to_dict() for r in self.removals]}


def methods_of(params: dict[str, Any], space: SearchSpace) -> list[str]:
    """What the stage may take out of ``params``: switched-on algorithms, and a non-base optimizer."""
    out = [a.name for a in space.algorithms.values() if not a.always and params.get(a.switch)]
    spec = next((p for p in space.params if p.name == OPTIMIZER), None)
    if spec is not None and params.get(OPTIMIZER) not in (None, spec.baseline):
        out.append(str(params[OPTIMIZER]))
    return sorted(out)


def without(params: dict[str, Any], methods: Sequence[str], space: SearchSpace) -> dict[str, Any]:
    """``params`` with ``methods`` taken out (an algorithm switched off, its own parameters dropped; the
    optimizer back to the base's), completed as ``suggest`` would give it."""
    partial = dict(params)
    for m in methods:
        if m in space.algorithms:
            partial[space.algorithms[m].switch] = False
            for p in space.algorithms[m].params:
                partial.pop(p.name, None)
        elif partial.get(OPTIMIZER) == m:
            partial[OPTIMIZER] = next(p.baseline for p in space.params if p.name == OPTIMIZER)
    return space.complete(partial)


def _headline(trials: Sequence[FrozenTrial], space: SearchSpace) -> int | None:
    from recipesearch.analysis.frontier import frontier

    df = trials_frame([t for t in trials if st.stage_of(t) in BEFORE], space)
    return None if df.empty else frontier(df, space).headline.number


def _runs_by_key(trials: Sequence[FrozenTrial]) -> dict[str, list[FrozenTrial]]:
    out: dict[str, list[FrozenTrial]] = {}
    for t in trials:
        if not st.is_interrupted(t):
            out.setdefault(params_key(st.trial_params(t)), []).append(t)
    return out


def _measured(runs: list[FrozenTrial], seeds: range, space: SearchSpace) -> tuple[list[float], list[float]]:
    acc, secs = [], []
    for t in runs:
        if t.state == TrialState.COMPLETE and st.seed_index(t) in seeds:
            a = st.objective_accuracy(t.user_attrs, space)
            acc.append(np.nan if a is None else a)
            secs.append(float(t.user_attrs.get("train_seconds") or np.nan))
    return acc, secs


def plan_simplify(trials: Sequence[FrozenTrial], space: SearchSpace) -> SimplifyPlan:
    """The stage's next step (module docstring); call it once the confirmation has finished."""
    spec = space.simplify
    if not spec.enabled:
        return SimplifyPlan(reason="off")
    number = _headline(trials, space)
    if number is None:
        return SimplifyPlan(reason="no confirmed recipe")
    by_number = {t.number: t for t in trials}
    params = st.trial_params(by_number[number])
    methods = methods_of(params, space)
    if not methods:
        return SimplifyPlan(recipe=number, reason=f"trial {number}'s recipe has no method to take out")
    budget = float(spec.budget if spec.budget is not None else max(space.budgets))
    seeds = space.confirm.seeds
    fresh = range(seeds, 2 * seeds)  # the ablation's seed indices: after the confirmation's
    whole = {**params, "budget": budget}
    arms = {m: without(whole, [m], space) for m in methods}
    ablation = tuple((p, s) for s in fresh for p in (whole, *arms.values()))
    by_key = _runs_by_key(trials)
    done = all(any(st.is_finished(t) and st.seed_index(t) == s for t in by_key.get(params_key(p), []))
               for p, s in ablation)
    if not done:
        return SimplifyPlan("ablation", number, budget, tuple(methods), runs=ablation)
    verdicts = tuple(removals(_measured(by_key.get(params_key(whole), []), fresh, space),
                              {m: _measured(by_key.get(params_key(p), []), fresh, space) for m, p in arms.items()}))
    dropped = [r.method for r in verdicts if r.drop]
    pruned = without(params, dropped, space) if dropped else None
    runs = tuple(({**pruned, "budget": float(b)}, s) for b in space.budgets for s in range(seeds)) if pruned else ()
    return SimplifyPlan("pruned", number, budget, tuple(methods), verdicts, runs)


def enqueue_simplify(study: optuna.Study, plan: SimplifyPlan) -> int:
    """Queue the plan's runs not yet queued or run by any stage (resume-safe); returns how many were added."""
    return enqueue_missing(study, list(plan.runs), None, stage=st.SIMPLIFY, of_trial=plan.recipe,
                              is_baseline=False)
