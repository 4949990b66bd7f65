"""The confirmation stage as a running search drives it: what ``engine/confirm.py`` plans, queued at the right moment.

While the proposals go on (``confirm.early``), a proposal whose own run reached the target fast enough has its
curve queued at once (``plan_early``), and with ``confirm.stop_at_claim`` a claim that stands (``early_claim``) ends
the proposals. Once the search is done: the plan (``plan_confirmation``), the probe's verdict (``check_probe``) and
the second look (``plan_second_look``), each once a session. Every step is a pure function of the study's trials,
so a resumed search takes the same ones, and ``enqueue_plan`` never queues a run twice.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from optuna.trial import FrozenTrial

from recipesearch.analysis.target import reference_budget
from recipesearch.engine import study as st
from recipesearch.engine.confirm import (
    EARLIER_STAGES,
    EARLY_CURVE,
    EARLY_SECOND_LOOK,
    ConfirmPlan,
    ProbeCheck,
    SecondLook,
    begun_early,
    check_probe,
    curve_runs,
    early_runs,
    enqueue_plan,
    front_candidates,
    interleave,
    plan_confirmation,
    plan_second_look,
)
from recipesearch.engine.trial_rows import trials_frame

if TYPE_CHECKING:
    import optuna

    from recipesearch.space import SearchSpace


def plan_early(trials: Sequence[FrozenTrial], space: SearchSpace) -> ConfirmPlan:
    """``confirm.early``: while the proposals go on, the candidates (module docstring) whose own run reached the
    target at least ``early`` x faster than the baseline, up to ``top_k`` in all, with their curves: a claim that
    holds is confirmed at a fraction of the search's cost (on Fashion-MNIST quick, the first proposal to reach
    the target was the 2nd of 40: confirmed at the end of the search, it stood only after 20 of its 25 trainings).
    Only once the baseline stage finished (the target is its accuracy); resume-safe: the runs queued have the
    ``early`` attr and are not queued twice (``enqueue_plan``)."""
    spec = space.confirm
    if not spec.enabled or spec.early is None or st.count_unfinished(trials, (st.TUNE, st.BASELINE)):
        return ConfirmPlan()
    reference = reference_budget(space.budgets)
    done = [(st.stage_of(t), st.objective_accuracy(t.user_attrs, space), float(st.trial_params(t).get("budget", 0)))
            for t in trials if t.state.name == "COMPLETE"]
    base = [a for stage, a, b in done if stage in (st.TUNE, st.BASELINE) and a is not None and b == reference]
    # a cheap necessary condition before the frontier: a proposal at least as accurate as the worst baseline-stage
    # run at the reference budget (the target, their seed mean there or the best budget's, is no lower), or as a
    # numeric target
    floor = space.target if not isinstance(space.target, str) else min(base, default=float("inf"))
    if not any(stage == st.SEARCH and a is not None and a >= floor for stage, a, _ in done):
        return ConfirmPlan()
    found = front_candidates(trials, space)
    begun = begun_early(trials)
    present = st.present_runs(trials, EARLIER_STAGES)
    seen = {key for t, key, _ in found.ordered if t.number in begun}
    chosen, runs = [], []
    for t, key, at_target in found.ordered:
        if len(begun) + len(chosen) >= spec.top_k or not at_target >= spec.early:
            break  # the candidates that reached the target come first, the fastest first
        if key not in seen:
            seen.add(key)
            chosen.append(t.number)
            runs += curve_runs(t, at_target, space, found, present)
    return ConfirmPlan(tuple(chosen), (), tuple(interleave(runs, space.budgets)), found.search_seconds,
                       sum(r.estimated_seconds for r in runs))


def early_claim(trials: Sequence[FrozenTrial], space: SearchSpace) -> int | None:
    """``confirm.stop_at_claim``: the first candidate confirmed early (``plan_early``) whose runs all finished and
    whose claim stands at the target, decided as the first look of the sequential rule decides it
    (analysis/sequential.py, the bootstrap the report's verdict uses); None: none yet."""
    from recipesearch.analysis.frontier import frontier
    from recipesearch.analysis.sequential import CONFIRMED, look

    done = sorted(n for n, runs in early_runs(trials).items() if all(st.is_finished(t) for t in runs))
    if not done:
        return None
    fr = frontier(trials_frame(list(trials), space), space)
    keys = dict(zip(fr.trials["number"], fr.trials["recipe_key"], strict=True))
    runs = fr.completed_trials
    return next((n for n in done if look(runs[runs["recipe_key"] == keys.get(n)], fr.baseline, fr.target.accuracy,
                                         fr.metric) == CONFIRMED), None)


class ConfirmStage:
    """The confirmation stage's state in one search session: its plan, the probe's verdict, the first look's
    decisions and a claim that stood, once each is known (module docstring)."""

    def __init__(self, space: SearchSpace, study: optuna.Study, on_message: Callable[[str], None]):
        self.space, self.study, self.on_message = space, study, on_message
        self.plan: ConfirmPlan | None = None  # once planned
        self.second_look: SecondLook | None = None  # confirm.sequential: the first look's decisions, once taken
        self.probe: ProbeCheck | None = None  # confirm.paired_baseline: probe: its verdict, once the probe finished
        self.claim: int | None = None  # confirm.stop_at_claim: the candidate whose early claim stood
        self._looked: set[int] = set()  # early candidates whose first look was taken (``look_early``)
        self._early_stale = True  # a proposal finished since ``plan_early`` last looked
        self._claim_stale = True  # an early confirmation run finished since ``early_claim`` last looked

    def finished(self, frozen: FrozenTrial) -> None:
        """A trial finished: what the early steps look at next."""
        if frozen.user_attrs.get(st.EARLY):
            self._claim_stale = True
        elif frozen.state.name == "COMPLETE" and st.stage_of(frozen) == st.SEARCH:
            self._early_stale = True

    def confirm_early(self, trials: list[FrozenTrial]) -> bool:
        """``confirm.early``, before the plan, once per finished proposal: True when it queued runs."""
        if self.plan is not None or not self._early_stale:
            return False
        self._early_stale = False
        early = plan_early(trials, self.space)
        if not enqueue_plan(self.study, early, early=EARLY_CURVE):
            return False
        self.on_message(f"confirmation at once: trial(s) {', '.join(map(str, early.candidates))} reached the target "
                        f"at least x{self.space.confirm.early:g} faster than the baseline in one run; "
                        f"{len(early.runs)} runs of their curves queued")
        return True

    def queue_early(self, trials: list[FrozenTrial]) -> bool:
        """While the proposals go on, and once more before the plan: ``confirm_early``, else ``look_early``; True
        when either queued runs."""
        return self.confirm_early(trials) or self.look_early(trials)

    def look_early(self, trials: list[FrozenTrial]) -> bool:
        """``confirm.sequential`` with ``confirm.early``: once a candidate confirmed early has its first seeds, its
        first look, and for one still open the second look's runs at once, while the proposals go on (the same
        runs the plan's second look would queue at the end: a claim that needs them stands sooner, and with
        ``stop_at_claim`` ends the search sooner). Only when the baseline stage trained at least the confirmation's
        seeds: else the paired baseline's seeds change the baseline's curve, and the first look, by the end.
        True when it queued runs."""
        if self.plan is not None or not self.space.confirm.sequential \
                or self.space.baseline.seeds < self.space.confirm.seeds:
            return False
        ready = tuple(n for n, runs in sorted(early_runs(trials).items())
                      if n not in self._looked and all(st.is_finished(t) for t in runs))
        if not ready:
            return False
        self._looked.update(ready)
        look = plan_second_look(trials, self.space, ConfirmPlan(ready))
        if not enqueue_plan(self.study, look, early=EARLY_SECOND_LOOK):
            return False
        self.on_message(f"early {look.describe()}")
        return True

    def claim_pending(self, trials: list[FrozenTrial]) -> bool:
        """``confirm.stop_at_claim``: runs of a candidate confirmed early still to finish. The claim they may make
        ends the search, so the end of the proposals (their number or the search budget) waits for them before the
        plan adds other candidates and the probe (before: a search whose budget closed the proposals while such
        runs were in flight went on to 30.4 trainings, its claim standing at 15.7), and no new proposal starts
        beside them (the loop's ``_next``: the digits demo trained 4 proposals beside its candidate's curve, a
        training's worth, all spent for nothing once the claim stood). A look still to take on finished runs is
        taken first: the loop's plan step calls ``queue_early`` before it plans."""
        if not self.space.confirm.stop_at_claim or self.plan is not None or self.claim is not None:
            return False
        return any(not st.is_finished(t) for runs in early_runs(trials).values() for t in runs)

    def claim_stood(self, trials: list[FrozenTrial], finished: int) -> bool:
        """``confirm.stop_at_claim``: a claim confirmed early stands at the target: no more proposals, and the plan
        adds nothing to the candidates begun early. ``finished``: the proposals so far, for the log line."""
        if self.claim is not None or not (self.space.confirm.stop_at_claim and self._claim_stale):
            return self.claim is not None
        self._claim_stale = False
        self.claim = early_claim(trials, self.space)
        if self.claim is not None:
            self.on_message(f"trial {self.claim}'s claim stands at the target (confirm.stop_at_claim): no more "
                            f"proposals after {finished} trials")
        return self.claim is not None

    def plan_once(self, trials: list[FrozenTrial], allowed: float | None) -> None:
        """Plan (once per session) and queue the confirmation runs, once the search is done; ``allowed``: what a
        search budget leaves it."""
        if self.plan is not None:
            return
        self.plan = plan_confirmation(trials, self.space, allowed, begun_only=self.claim is not None)
        enqueue_plan(self.study, self.plan)
        if self.space.confirm.enabled:
            self.on_message(self.plan.describe())

    def check_probe(self, trials: list[FrozenTrial]) -> bool:
        """``confirm.paired_baseline: probe``: once the probe finished, its verdict, and the rest of the paired
        baseline queued when the machine's speed moved; True when it decided (once)."""
        if self.plan is None or self.probe is not None:
            return False
        check = check_probe(trials, self.space, self.plan)
        if check.moved is None:
            return False
        self.probe = check
        enqueue_plan(self.study, check)
        self.on_message(check.describe())
        return True

    def look_again(self, trials: list[FrozenTrial], allowed: float | None) -> bool:
        """``confirm.sequential``, once the confirmation's first seeds finished: the second look's runs for the
        candidates still undecided; True while they are queued. ``allowed``: what a search budget leaves."""
        if self.plan is None or not self.space.confirm.sequential or self.second_look is not None:
            return False
        self.second_look = look = plan_second_look(trials, self.space, self.plan)
        if look.runs and allowed is not None and look.estimated_seconds > allowed:
            # the candidates in the plan's order while the budget has room (digits seed 1, benchmarks §13: three
            # open candidates whose second looks together did not fit; each alone did), the rest decided as they
            # stand
            kept: set[int] = set()
            spent = 0.0
            for number in self.plan.candidates:
                cost = sum(r.estimated_seconds for r in look.runs if r.of_trial == number)
                if spent + cost <= allowed:
                    kept.add(number)
                    spent += cost
            left = sorted({r.of_trial for r in look.runs} - kept)
            self.second_look = look = replace(look, runs=tuple(r for r in look.runs if r.of_trial in kept))
            self.on_message(f"second look: trial(s) {', '.join(map(str, left))} skipped, the search budget has "
                            f"{allowed:.1f} s of training left")
            if not look.runs:
                return False
        added = enqueue_plan(self.study, look)
        self.on_message(look.describe())
        return added > 0
