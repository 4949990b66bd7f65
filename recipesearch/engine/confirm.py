"""The confirmation stage: retrain the best proposals with more seeds, at the budgets around the target.

A proposal is one run at one budget and one seed: a lucky seed can put it on the frontier. After the
proposals (or during them: ``confirm.early``, engine/confirm_stage.py), the non-dominated ones on the selection
metric (never on test) are trained again, so each confirmed recipe has a tradeoff curve of its own (the two
budgets where the proposal's run says the curve crosses the target, ``curve_runs``; every budget while there is no
target) with ``confirm.seeds`` seeds per budget; the frontier and the headline speedup are then computed on seed
means, curve against the baseline's curve (``recipesearch.analysis.frontier``).

Which candidates, in order: the front of the completed proposals (``Frontier.on_recipe_front``) within the space's
``constraints`` (a run that breaks one is not a candidate), one per
recipe (``Frontier``'s ``recipe_key``: the same params at another budget is the same recipe); first those whose own
run already reaches the target (the headline's accuracy), the largest speedup to it first (the baseline's time to
the target over the run's time: a lower bound on the recipe's, which reaches the target no later than that run);
then the largest single-run speedup at matched accuracy (the claims that most need checking), then by the metric.
A run more accurate than the baseline ever gets has no speedup at its own accuracy, so without the first key the
proposal most likely to be confirmed at the target came last (Fashion-MNIST quick, benchmarks §13: a budget-0.5
run at 0.833 against a target of 0.819 was left out). A candidate is taken while the stage's estimated compute
stays within ``confirm.max_share`` of the whole search's compute (proposals + baselines + confirmation); a
candidate too dear for what is left is skipped for a cheaper one.

The stage also runs the baseline again beside the candidates (the *paired baseline*: every budget, the
confirmation's seeds, interleaved with the candidates' runs, ``interleave``), so confirmed speedups compare
times measured at the same moment on the same machine; its runs count towards ``max_share``. With
``confirm.paired_baseline: probe`` (the default) only one of its runs is planned, first: the probe, at the
reference budget; ``check_probe`` queues the rest once the probe's time says the machine's speed moved
(analysis/paired_baseline.py). A run's estimated compute is the candidate's own train_seconds scaled as the
baseline's mean train_seconds (``Frontier.baseline_points``) scale between the two budgets (short runs cost more
than their share of epochs: warm-up, per-epoch overhead), or by the budget ratio where the baseline did not run at
both, times ``REGRESSION_MARGIN``.

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

from recipesearch.analysis.speedup import times_to_reach
from recipesearch.analysis.target import reference_budget
from recipesearch.engine import study as st
from recipesearch.engine.queueing import enqueue, tuned_lr
from recipesearch.engine.trial_rows import trials_frame

if TYPE_CHECKING:
    import optuna

    from recipesearch.space import SearchSpace

EARLIER_STAGES = (st.TUNE, st.BASELINE, st.SEARCH)
EARLY_CURVE, EARLY_SECOND_LOOK = 1, 2  # the ``early`` attr of a run queued while the proposals go on: which look
# Candidates sit on the front partly because their one run was fast: their repeats regress to the mean.
# Measured on the digits demo: runs estimated from the candidates' own times took 1.25x the estimate.
REGRESSION_MARGIN = 1.25


@dataclass(frozen=True)
class ConfirmRun:
    params: dict[str, Any]
    seed_index: int
    of_trial: int  # the proposal it confirms; a paired baseline run: the baseline trial whose params it runs
    estimated_seconds: float
    is_baseline: bool = False  # a run of the paired baseline


@dataclass(frozen=True)
class ConfirmPlan:
    candidates: tuple[int, ...] = ()  # trial numbers confirmed, in priority order
    skipped: tuple[int, ...] = ()  # non-dominated proposals left out (top_k or compute share)
    runs: tuple[ConfirmRun, ...] = field(default_factory=tuple)  # in the order they are queued (interleaved)
    search_seconds: float = 0.0  # train_seconds of the earlier stages' finished trials
    estimated_seconds: float = 0.0  # of ``runs``
    allowed_seconds: float = 0.0  # what the plan could spend: max_share of the compute, or a search budget's rest
    paired_rest: tuple[ConfirmRun, ...] = ()  # with a probe: the rest of the paired baseline, queued if it moved

    @property
    def estimated_share(self) -> float:
        total = self.search_seconds + self.estimated_seconds
        return self.estimated_seconds / total if total > 0 else 0.0

    def describe(self) -> str:
        if not self.candidates:
            return "confirmation: no proposal to confirm" + (
                f" ({len(self.skipped)} non-dominated, none within the compute share or search budget left: "
                f"{self.allowed_seconds:.1f} s)" if self.skipped else "")
        paired = sum(r.is_baseline for r in self.runs)
        beside = "no baseline run" if not paired else "one baseline run to check the machine's speed" \
            if paired == 1 else f"the baseline beside them ({paired} runs)"
        return (f"confirmation: {len(self.candidates)} recipe(s) (trials {', '.join(map(str, self.candidates))}) "
                f"x their budgets x seeds, and {beside} = {len(self.runs)} runs, "
                f"~{self.estimated_share:.0%} of the compute"
                + (f"; {len(self.skipped)} more non-dominated left out" if self.skipped else ""))


@dataclass(frozen=True)
class Candidates:
    """What the plan reads of the earlier stages, all from one ``frontier``."""

    # non-dominated proposals in priority order, with their recipe_key and, when the run reached the target, the
    # baseline's time to the target over the run's time (NaN: it did not reach it)
    ordered: list[tuple[FrozenTrial, str, float]]
    search_seconds: float  # train_seconds of the earlier stages' finished trials
    time_scale: dict[float, float]  # mean train_seconds of the baseline per budget
    baseline: dict[float, FrozenTrial]  # budget -> the first completed baseline run there (its params are paired)
    keys: dict[int, str] = field(default_factory=dict)  # trial number -> recipe_key, every earlier run
    target: float = float("nan")  # the headline's accuracy (NaN: none yet)


def front_candidates(trials: Sequence[FrozenTrial], space: SearchSpace) -> Candidates:
    from recipesearch.analysis.frontier import frontier

    earlier = [t for t in trials if st.stage_of(t) in EARLIER_STAGES]
    seconds = float(sum(t.user_attrs.get("train_seconds") or 0.0 for t in earlier if st.is_finished(t)))
    df = trials_frame(earlier, space)
    if df.empty:
        return Candidates([], seconds, {}, {})
    fr = frontier(df, space)
    rows = fr.trials[fr.on_recipe_front & fr.completed].copy()
    # A run outside the space's constraints (accuracy_min, ...) is one the user ruled out, as Optuna's best_trials
    # rules out infeasible trials: confirming its curve spent 5 of fashion_mnist_long_pf's 22 confirmation runs on
    # a recipe 3 pp below the target.
    feasible = np.array([all(v <= 0 for v in space.constraints_values(float(a), float(s)))
                         for a, s in zip(rows[fr.metric], rows["train_seconds"], strict=True)], dtype=bool)
    rows = rows.loc[feasible]
    rows["_speedup"] = np.where(rows["speedup_status"] == "interpolated", rows["speedup"], np.nan)
    target = fr.target.accuracy if fr.target is not None else float("nan")
    to_target = float(times_to_reach([target], fr.baseline_curve)[0][0]) if np.isfinite(target) else float("nan")
    rows["_at_target"] = np.where(rows[fr.metric].to_numpy(dtype=float) >= target,
                                  to_target / rows["train_seconds"].to_numpy(dtype=float), np.nan)
    rows = rows.sort_values(["_at_target", "_speedup", fr.metric, "number"], ascending=[False, False, False, True],
                            na_position="last")
    by_number = {t.number: t for t in earlier}
    base = fr.baseline_points
    scale = {float(b): float(s) for b, s in zip(base["budget"], base["train_seconds"], strict=True)} if len(base) \
        else {}
    # the baseline's params at each budget (at the LR the sweep chose): its runs of the baseline stage, and the sweep's
    # run at the chosen LR, which is the baseline's first seed at its budget
    lr = tuned_lr(earlier, space)[1]
    keys = {st.run_key(space.baseline_params(float(b), lr), 0): float(b) for b in space.budgets}
    baseline: dict[float, FrozenTrial] = {}
    for t in sorted(earlier, key=lambda t: t.number):
        budget = keys.get(st.run_key(st.trial_params(t), 0))
        if budget is not None and st.stage_of(t) in (st.TUNE, st.BASELINE) and t.state.name == "COMPLETE":
            baseline.setdefault(budget, t)
    ordered = zip(rows["number"], rows["recipe_key"], rows["_at_target"], strict=True)
    keys = {int(n): str(k) for n, k in zip(fr.trials["number"], fr.trials["recipe_key"], strict=True)}
    return Candidates([(by_number[int(n)], str(k), float(r)) for n, k, r in ordered], seconds, scale, baseline,
                      keys, float(target))


def _estimate(own_seconds: float, own_budget: float, budget: float, scale: dict[float, float]) -> float:
    if scale.get(own_budget, 0) > 0 and budget in scale:
        return REGRESSION_MARGIN * own_seconds * scale[budget] / scale[own_budget]
    return REGRESSION_MARGIN * own_seconds * budget / own_budget


def plan_confirmation(trials: Sequence[FrozenTrial], space: SearchSpace, allowed: float | None = None,
                      begun_only: bool = False) -> ConfirmPlan:
    """Which proposals to confirm and the runs that takes (module docstring); ``allowed``: the training seconds a
    search budget leaves it (engine/search_budget.py), in place of ``max_share`` of the compute; ``begun_only``:
    the candidates confirmed early and nothing more (``confirm.stop_at_claim``: one of them stood)."""
    spec = space.confirm
    if not spec.enabled:
        return ConfirmPlan()
    found = front_candidates(trials, space)
    if allowed is None:
        allowed = found.search_seconds * spec.max_share / (1.0 - spec.max_share)
    present = st.present_runs(trials, EARLIER_STAGES)  # not the confirmation's own: the plan must not move
    begun = begun_early(trials)  # confirmed early (``plan_early``): taken first, their runs queued already
    seen: set[str] = set()
    chosen: list[int] = []
    skipped: list[int] = []
    runs: list[ConfirmRun] = []
    full = _paired_baseline(found, space)
    reference = reference_budget(space.budgets)
    # with a probe: only the baseline's first seed at the reference budget, the rest kept for check_probe
    paired = [r for r in full if r.seed_index == 0 and r.params["budget"] == reference][:1] if probes(space) else full
    paired = [] if begun_only else paired
    spent = sum(r.estimated_seconds for r in paired)  # due as soon as one candidate is taken
    # the candidates begun early first, on the front or not by now (their runs reached the target: ``plan_early``)
    by_number = {t.number: t for t in trials}
    ordered = [(by_number[n], found.keys.get(n, str(n)), 1.0) for n in sorted(begun) if n in by_number]
    for t, key, at_target in ordered + [c for c in found.ordered if c[0].number not in begun]:
        if key in seen:
            continue  # the same recipe at another budget: confirmed once
        seen.add(key)
        mine = curve_runs(t, at_target, space, found, present)
        cost = 0.0 if t.number in begun else sum(r.estimated_seconds for r in mine)
        if t.number not in begun and (begun_only or len(chosen) >= spec.top_k or spent + cost > allowed):
            skipped.append(t.number)
            continue
        chosen.append(t.number)
        runs += mine
        spent += cost
    if not chosen:
        return ConfirmPlan((), tuple(skipped), (), found.search_seconds, 0.0, allowed)
    if paired is full:
        return ConfirmPlan(tuple(chosen), tuple(skipped), tuple(interleave([*full, *runs], space.budgets)),
                           found.search_seconds, spent, allowed)
    rest = tuple(interleave([r for r in full if r not in paired], space.budgets))
    return ConfirmPlan(tuple(chosen), tuple(skipped), tuple(paired + interleave(runs, space.budgets)),  # probe first
                       found.search_seconds, spent, allowed, rest)


def curve_runs(t: FrozenTrial, at_target: float, space: SearchSpace, found: Candidates,
               present: set[str]) -> list[ConfirmRun]:
    """A candidate's first look: ``confirm.seeds`` seeds (but those ``present`` already) at the two budgets where
    its own run says its curve crosses the target: its own budget and the one below for a run that reached the
    target, and the one above for a run that did not (every budget while there is no target). The headline is
    the time to the target, which runs far below or past the crossing do not move (benchmarks §13: 5 runs a
    candidate, not 8); the second look goes a budget further where a seed fell short (``plan_second_look``)."""
    params = st.trial_params(t)
    own_budget, own_seconds = float(params["budget"]), float(t.user_attrs.get("train_seconds") or 0.0)
    budgets = sorted(float(b) for b in space.budgets)
    if np.isfinite(found.target) and len(budgets) > 2:
        own = max(0, sum(b <= own_budget for b in budgets) - 1)
        low = own - 1 if np.isfinite(at_target) else own  # reached: it crosses below its budget; else above
        budgets = budgets[min(max(low, 0), len(budgets) - 2):][:2]
    return [ConfirmRun({**params, "budget": b}, seed, t.number, _estimate(own_seconds, own_budget, b, found.time_scale))
            for b in budgets for seed in range(space.confirm.seeds)
            if st.run_key({**params, "budget": b}, seed) not in present]


def early_runs(trials: Sequence[FrozenTrial]) -> dict[int, list[FrozenTrial]]:
    """The runs queued while the proposals went on (``early`` attr), by the candidate they confirm."""
    mine: dict[int, list[FrozenTrial]] = {}
    for t in trials:
        if st.stage_of(t) == st.CONFIRM and t.user_attrs.get(st.EARLY) and t.user_attrs.get(st.OF_TRIAL) is not None:
            mine.setdefault(int(t.user_attrs[st.OF_TRIAL]), []).append(t)
    return mine


def begun_early(trials: Sequence[FrozenTrial]) -> set[int]:
    """The candidates confirmed early: their runs queued during the proposals (``plan_early``)."""
    return set(early_runs(trials))


def probes(space: SearchSpace) -> bool:
    """Whether the paired baseline starts as a probe: ``confirm.paired_baseline: probe`` and a baseline stage with
    the seeds a claim needs against it (with one seed, no claim can be confirmed but against the full re-run)."""
    from recipesearch.analysis.paired_baseline import MIN_SEEDS

    return space.confirm.paired_baseline == "probe" and space.baseline.seeds >= MIN_SEEDS


def _paired_baseline(found: Candidates, space: SearchSpace) -> list[ConfirmRun]:
    """The baseline again, beside the candidates: its curve (the target's and every candidate's reference) at every
    budget, with the confirmation's seeds, on the params of the baseline stage's run there (the sweep's LR)."""
    out = []
    for budget in space.budgets:
        t = found.baseline.get(float(budget))
        if t is None:
            continue
        seconds = found.time_scale.get(float(budget), float(t.user_attrs.get("train_seconds") or 0.0))
        out += [ConfirmRun(st.trial_params(t), seed, t.number, seconds, is_baseline=True)
                for seed in range(space.confirm.seeds)]
    return out


@dataclass(frozen=True)
class ProbeCheck:
    """``confirm.paired_baseline: probe``: the probe's time against the early runs at its budget, and the rest of
    the paired baseline when it moved (``moved`` None: the probe has not finished, or there is none)."""

    moved: bool | None = None
    probe_seconds: float = float("nan")
    early_seconds: float = float("nan")  # the early runs' geometric mean at the probe's budget
    runs: tuple[ConfirmRun, ...] = ()

    def describe(self) -> str:
        said = (f"the baseline's probe took {self.probe_seconds:.3g} s beside the candidates, "
                f"{self.early_seconds:.3g} s in the baseline stage")
        if not self.moved:
            return f"{said}: the machine's speed held; claims are measured against the baseline stage's runs"
        return f"{said}: the machine's speed moved; the rest of the baseline is re-run beside the candidates " \
               f"({len(self.runs)} runs)"


def check_probe(trials: Sequence[FrozenTrial], space: SearchSpace, plan: ConfirmPlan) -> ProbeCheck:
    """The probe's verdict once it finished (resume-safe: a pure function of the finished trials): when its time
    moved (``analysis.paired_baseline.probe_moved``), the rest of the paired baseline the plan kept."""
    from recipesearch.analysis.paired_baseline import geometric_mean, probe_moved

    probe = next((r for r in plan.runs if r.is_baseline), None)
    if not probes(space) or probe is None:
        return ProbeCheck()
    key = st.run_key(probe.params, probe.seed_index)
    done = [t for t in trials if st.stage_of(t) == st.CONFIRM and t.user_attrs.get("is_baseline")
            and t.state.name == "COMPLETE" and st.run_key(st.trial_params(t), st.seed_index(t)) == key]
    if not done:
        return ProbeCheck()
    seconds = float(done[0].user_attrs.get("train_seconds") or 0.0)
    early = [float(t.user_attrs.get("train_seconds") or 0.0) for t in trials
             if st.stage_of(t) in (st.TUNE, st.BASELINE) and t.state.name == "COMPLETE"
             and st.run_key(st.trial_params(t), 0) == st.run_key(probe.params, 0)]
    moved = probe_moved(early, seconds)
    return ProbeCheck(moved, seconds, geometric_mean(early), plan.paired_rest if moved else ())


@dataclass(frozen=True)
class SecondLook:
    """``confirm.sequential``: each candidate's first-look decision (analysis/sequential.py) and the runs of the
    second look for the undecided ones (``plan_second_look``). The baseline keeps its seeds: the first look's
    curve."""

    decisions: dict[int, str] = field(default_factory=dict)  # candidate trial number -> confirmed/futile/open
    runs: tuple[ConfirmRun, ...] = ()
    early: frozenset[int] = frozenset()  # open candidates whose second look was taken while the proposals went on

    @property
    def estimated_seconds(self) -> float:
        return float(sum(r.estimated_seconds for r in self.runs))

    def describe(self) -> str:
        said = ", ".join(f"trial {n} {d}" + (" (its second look taken early)" if n in self.early else "")
                         for n, d in self.decisions.items())
        if not self.runs:
            return f"confirmation, first look: {said}; no second look needed"
        return (f"confirmation, first look: {said}; a second look ({len(self.runs)} runs): one more seed, or the next "
                "budget for a curve short of the target at its top budget")


def plan_second_look(trials: Sequence[FrozenTrial], space: SearchSpace, plan: ConfirmPlan) -> SecondLook:
    """The first look at the confirmed candidates, on their first ``confirm.seeds`` seeds (those of the plan, so a
    resumed search decides the same), and the runs of the second: one more seed at each budget of its curve, or,
    for a curve with a seed short of the target at its top budget, or too many of its bootstrap replicates
    (``analysis.sequential.next_budget_needed``), the next budget with the confirmation's seeds (a mean barely past the
    target leaves too many replicates short of it: the digits demo's best curve, 2.69x [1.18-4.72], 29 % of them);
    past the space's largest, one step further (``past_largest``)."""
    from recipesearch.analysis.frontier import frontier
    from recipesearch.analysis.recipe_curves import curve_of
    from recipesearch.analysis.sequential import OPEN, decide, measure, next_budget_needed

    if not (space.confirm.sequential and plan.candidates):
        return SecondLook()
    fr = frontier(trials_frame(list(trials), space), space)
    seeds = space.confirm.seeds
    first = fr.completed_trials[fr.completed_trials["seed"].astype(float) < space.seed + seeds]
    keys = dict(zip(fr.trials["number"], fr.trials["recipe_key"], strict=True))
    by_number = {t.number: t for t in trials}
    decisions, runs = {}, []
    # a proposal of the recipe there is not trained again, nor a run queued already (an early second look)
    present = st.present_runs(trials, (*EARLIER_STAGES, st.CONFIRM))
    looked = {t.user_attrs.get(st.OF_TRIAL) for t in trials if t.user_attrs.get(st.EARLY) == EARLY_SECOND_LOOK}
    for number in plan.candidates:
        if number in looked:  # open at its first look, its second taken while the proposals went on: no third
            decisions[number] = OPEN
            continue
        mine = curve_of(first[first["recipe_key"] == keys.get(number)])
        first_look = measure(mine, fr.baseline, fr.target.accuracy, fr.metric)
        decisions[number] = decide(first_look)
        if decisions[number] != OPEN:
            continue
        params = st.trial_params(by_number[number])
        # each run's estimate: its own first seeds' mean time at that budget, measured by now
        measured = mine.groupby("budget")["train_seconds"].mean()
        have = sorted(float(b) for b in measured.index)
        top = mine.loc[mine["budget"].astype(float) == have[-1], fr.metric].to_numpy(float) if have else None
        if have and fr.target.accuracy is not None and next_budget_needed(first_look, top, fr.target.accuracy):
            # short of the target at its top budget: the next budget (past the largest, one step further), where its
            # replicates reach it
            up = next((float(b) for b in sorted(space.budgets) if float(b) > have[-1]), past_largest(space.budgets))
            new = [ConfirmRun({**params, "budget": up}, k, number, float(measured[have[-1]]) * up / have[-1])
                   for k in range(seeds)]
        else:  # one more seed at each of its budgets
            new = [ConfirmRun({**params, "budget": b}, seeds, number, float(measured[b])) for b in have]
        runs += [r for r in new if st.run_key(r.params, r.seed_index) not in present]
    return SecondLook(decisions, tuple(interleave(runs, space.budgets)), frozenset(looked & set(decisions)))


def past_largest(budgets: Sequence[float]) -> float:
    """The budget one step past the space's largest, the step its two largest make (x2 for 0.25-1): the second
    look of a curve that ends at the largest budget with a seed short of the target there (examples/byo's best
    curve: 4 seeds at budget 1 left it open, too many bootstrap replicates never reached the target)."""
    b = sorted(float(x) for x in budgets)
    return b[-1] * (b[-1] / b[-2] if len(b) > 1 else 2.0)


def interleave(runs: Sequence[ConfirmRun], budgets: Sequence[float]) -> list[ConfirmRun]:
    """Seed by seed, budget by budget, the arms of each (seed, budget) in an order rotated from one to the next
    (the paired baseline among them): runs queued next to each other run side by side or one after the other,
    so a change in the machine's speed falls on the baseline and the candidates alike."""
    order = {float(b): i for i, b in enumerate(sorted(float(b) for b in budgets))}
    groups: dict[tuple[int, float], list[ConfirmRun]] = {}
    for r in runs:
        groups.setdefault((r.seed_index, float(r.params["budget"])), []).append(r)
    out: list[ConfirmRun] = []
    for seed, budget in sorted(groups, key=lambda k: (k[0], order.get(k[1], len(order)), k[1])):
        arms = sorted(groups[(seed, budget)], key=lambda r: (not r.is_baseline, r.of_trial))
        turn = (seed + order.get(budget, 0)) % len(arms)
        out += arms[turn:] + arms[:turn]
    return out


def enqueue_plan(study: optuna.Study, plan: ConfirmPlan | SecondLook | ProbeCheck, early: int = 0) -> int:
    """Queue the plan's runs not yet queued, in the plan's (interleaved) order (resume-safe); returns how many
    were added. A paired baseline run is told apart from the candidates' by ``is_baseline``; ``early``: runs queued
    while the proposals go on, marked with the look they serve (``EARLY_CURVE``, ``EARLY_SECOND_LOOK``)."""
    present = st.present_runs(study.get_trials(deepcopy=False), [st.CONFIRM])
    added = 0
    for r in plan.runs:
        key = st.run_key(r.params, r.seed_index)
        if key in present:
            continue
        present.add(key)
        enqueue(study, r.params, stage=st.CONFIRM, of_trial=r.of_trial, is_baseline=r.is_baseline,
                **({st.EARLY: early} if early else {}), **{st.SEED_INDEX: int(r.seed_index)})
        added += 1
    return added
