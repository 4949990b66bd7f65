"""The stages of a search (engine/loop.py, confirm.py, study.py): LR sweep, baseline seeds, proposals,
confirmation; resumable; repeats hidden from the sampler. A table-lookup objective stands in for training."""
from __future__ import annotations

import math
from collections import Counter

import optuna
import pytest

from recipesearch.engine import queueing
from recipesearch.engine import study as st
from recipesearch.engine.confirm import plan_confirmation
from recipesearch.engine.executors import InProcess
from recipesearch.engine.loop import SearchLoop
from recipesearch.engine.sampler_view import HideRepeats
from recipesearch.engine.samplers import make_sampler
from recipesearch.engine.search_budget import SearchBudget
from recipesearch.engine.storage import make_storage, open_study
from recipesearch.engine.trial_rows import trials_frame

optuna.logging.set_verbosity(optuna.logging.WARNING)


def fake_result(proposal) -> dict:
    """Accuracy grows with log budget; label smoothing is a bit better and faster; the seed adds noise;
    the LR is best at the base value x2."""
    recipe = proposal.config["recipe"]
    budget, seed = recipe["budget"], recipe["seed"]
    ls = "label_smoothing" in recipe["algorithms"]
    lr = recipe["optimizer"]["lr"]
    acc = 0.80 + 0.05 * math.log2(budget * 4) + (0.02 if ls else 0.0) - 0.01 * abs(math.log2(lr / 0.1))
    acc += 0.002 * ((seed * 7) % 3 - 1)
    secs = 4.0 * budget * (0.8 if ls else 1.0) * (1 + 0.01 * (seed % 3))
    return {"accuracy": acc - 0.03, "val_accuracy": acc, "train_seconds": secs, "loss": 0.1, "error": None}


def open_loop(tmp_path, space, resuming=False, n_trials=None):
    storage = make_storage(f"sqlite:///{tmp_path / 'study.db'}")
    study = open_study(space, storage, make_sampler(space), resuming=resuming)
    messages: list[str] = []
    loop = SearchLoop(space, study, storage, n_trials or space.trials, on_message=messages.append)
    loop.prepare(resuming)
    return loop, study, messages


def killed_midway(stage: str, after: int) -> type[InProcess]:
    """An executor that runs until ``after`` runs of ``stage`` are done, then asks one more of that stage and
    dies (no tell: the trial stays RUNNING, as when the driver is killed)."""

    class KilledMidway(InProcess):
        def run(self, loop):
            while True:
                done = st.count_finished(loop.trials(), [stage])
                proposal = loop.ask()
                if not hasattr(proposal, "config"):
                    return
                if done >= after and proposal.attrs.get("stage") == stage:
                    raise KeyboardInterrupt  # the driver is gone
                loop.tell(proposal, self.objective(proposal))

    return KilledMidway


def runs_of(study, stage=None):
    return [t for t in study.get_trials() if stage is None or st.stage_of(t) == stage]


def test_baseline_runs_every_budget_with_every_seed_first(tmp_path, make_space):
    space = make_space(metric_split="val", baseline={"seeds": 3}, trials=9)
    loop, study, _ = open_loop(tmp_path, space)
    loop.run(InProcess(fake_result, concurrency=2))
    trials = study.get_trials()
    base = [t for t in trials if st.stage_of(t) == st.BASELINE]
    assert [t.number for t in base] == list(range(6))  # before any proposal
    assert Counter((t.params["budget"], t.user_attrs["seed"]) for t in base) == \
        Counter({(b, space.seed + s): 1 for b in space.budgets for s in range(3)})
    assert all(t.user_attrs["is_baseline"] for t in base)
    assert [st.stage_of(t) for t in trials[6:]] == [st.SEARCH] * 3 and st.count_finished(trials) == 9


def test_seeds_elsewhere_trains_one_seed_where_the_target_is_not_read(tmp_path, make_space):
    space = make_space(metric_split="val", baseline={"seeds": 3, "seeds_elsewhere": 1}, budgets=[0.25, 0.5, 1],
                       trials=9)
    assert space.baseline_runs == 7
    loop, study, _ = open_loop(tmp_path, space)
    loop.run(InProcess(fake_result, concurrency=2))
    base = [t for t in study.get_trials() if st.stage_of(t) == st.BASELINE]
    assert Counter(t.params["budget"] for t in base) == {0.25: 1, 0.5: 3, 1.0: 3}


def test_the_lr_sweep_runs_first_and_the_baseline_takes_its_best_lr(tmp_path, make_space):
    space = make_space(metric_split="val", baseline={"seeds": 2, "tune_lr": True}, trials=8)
    assert space.baseline_runs == 3 + 4
    loop, study, messages = open_loop(tmp_path, space)
    loop.run(InProcess(fake_result, concurrency=2))
    trials = study.get_trials()
    sweep = [t for t in trials if st.stage_of(t) == st.TUNE]
    assert [t.number for t in sweep] == [0, 1, 2] and not any(t.user_attrs["is_baseline"] for t in sweep)
    assert sorted(t.params["optimizer.lr"] for t in sweep) == [0.5, 1.0, 2.0]
    base = [t for t in trials if st.stage_of(t) == st.BASELINE]
    assert min(t.number for t in base) > 2  # queued only once the sweep finished
    assert {t.params["optimizer.lr"] for t in base} == {2.0}  # fake_result: best at 2x
    assert any("optimizer.lr x2" in m for m in messages)


def test_confirmation_retrains_the_best_proposals_with_seeds_beside_the_baseline(tmp_path, make_space):
    # the full paired baseline (every budget x 3 seeds) costs about what the baseline stage did: a larger share
    space = make_space(metric_split="val", baseline={"seeds": 3}, budgets=[0.25, 0.5, 1], trials=16,
                       confirm={"top_k": 2, "seeds": 3, "max_share": 0.6, "paired_baseline": "full"})
    loop, study, messages = open_loop(tmp_path, space)
    loop.run(InProcess(fake_result, concurrency=2))
    earlier = [t for t in study.get_trials() if st.stage_of(t) != st.CONFIRM]
    confirm = runs_of(study, st.CONFIRM)
    assert st.count_finished(earlier) == 16 and loop.confirm.plan is not None and loop.confirm.plan.candidates
    assert len(confirm) == len(loop.confirm.plan.runs) and all(t.state.name == "COMPLETE" for t in confirm)
    assert min(t.number for t in confirm) > max(t.number for t in earlier)  # after every proposal
    # the paired baseline: the baseline's params at every budget x the confirmation's seeds, once each
    paired = [t for t in confirm if t.user_attrs["is_baseline"]]
    assert Counter((t.params["budget"], st.seed_index(t)) for t in paired) == Counter(
        {(b, s): 1 for b in space.budgets for s in range(3)})
    base_params = {t.params["budget"]: t.params for t in earlier if t.user_attrs["is_baseline"]}
    assert all(t.params == base_params[t.params["budget"]] for t in paired)
    # interleaved: the paired baseline's runs are spread through the stage, not queued as one block
    order = [t.user_attrs["is_baseline"] for t in sorted(confirm, key=lambda t: t.number)]
    assert order.index(True) < len(order) // 3 and len(order) - 1 - order[::-1].index(True) > 2 * len(order) // 3
    for number in loop.confirm.plan.candidates:
        proposal = study.trials[number]
        mine = [t for t in confirm if t.user_attrs["of_trial"] == number]
        same_recipe = [{k: v for k, v in t.params.items() if k != "budget"} for t in [*mine, proposal]]
        assert all(p == same_recipe[-1] for p in same_recipe)
        # with the proposal itself: two neighbouring budgets, one of them its own, x every seed, exactly once
        # (tests/engine/test_sequential_confirmation.py: which two)
        runs = Counter((t.params["budget"], st.seed_index(t)) for t in [*mine, proposal])
        two = {t.params["budget"] for t in mine} | {proposal.params["budget"]}
        assert proposal.params["budget"] in two and sorted(two) in ([0.25, 0.5], [0.5, 1.0])
        assert runs == Counter({(b, s): 1 for b in two for s in range(3)})
        assert {t.user_attrs["seed"] for t in mine} <= {space.seed + s for s in range(3)}
    # the compute share the plan allowed itself
    assert loop.confirm.plan.estimated_share <= space.confirm.max_share + 1e-9
    assert any(m.startswith("confirmation:") for m in messages)
    assert loop.total() == 16 + len(confirm) and loop.remaining() == 0
    # trials.csv: stage and of_trial columns
    frame = trials_frame(study.get_trials(), space)
    assert set(frame["stage"]) == {"baseline", "search", "confirm"}
    assert frame.loc[frame["stage"] == "confirm", "of_trial"].notna().all()


def slower_after(stage: str, factor: float):
    """``fake_result`` with the baseline's runs of ``stage`` ``factor`` times slower: the machine's speed moved."""

    def result(proposal) -> dict:
        out = fake_result(proposal)
        if proposal.attrs.get("stage") == stage and proposal.attrs.get("is_baseline"):
            out["train_seconds"] *= factor
        return out

    return result


@pytest.mark.parametrize("factor", [1.0, 1.12, 1.5, 0.8])
def test_the_probe_rechecks_the_machine_and_reruns_the_baseline_only_when_it_moved(tmp_path, make_space, factor):
    # a search budget ends the proposals, as in the demo: the confirmation's runs are then asked for while trials
    # are still short of ``trials``
    space = make_space(metric_split="val", baseline={"seeds": 3}, confirm={"top_k": 2, "seeds": 3, "max_share": 0.6},
                       budgets=[0.25, 0.5, 1], trials=40, search_budget=14)
    loop, study, messages = open_loop(tmp_path, space)
    loop.budget = SearchBudget(space, trainings=14)
    objective, decided = slower_after(st.CONFIRM, factor), []

    def result(proposal) -> dict:
        if proposal.attrs.get("stage") == st.CONFIRM:  # whether the probe had its verdict when this run started
            decided.append(loop.confirm.probe is not None)
        return objective(proposal)

    loop.run(InProcess(result, concurrency=2))
    confirm = sorted(runs_of(study, st.CONFIRM), key=lambda t: t.number)
    # the verdict as soon as the probe finished, not once the stage's queue ran dry
    assert decided[:2] == [False, False] and decided[-4:] == [True] * 4
    paired = [t for t in confirm if t.user_attrs["is_baseline"]]
    # the probe: the baseline's first seed at the reference budget, queued first of the stage
    assert confirm[0].user_attrs["is_baseline"] and (confirm[0].params["budget"], st.seed_index(confirm[0])) == (1, 0)
    said = [m for m in messages if m.startswith("the baseline's probe")]
    moved = abs(math.log(factor)) > math.log(1.15)
    assert len(said) == 1 and loop.confirm.probe is not None and loop.confirm.probe.moved is moved
    if moved:  # beyond PROBE_TOLERANCE, either way: the rest of the baseline beside the candidates, each run once
        assert "speed moved" in said[0] and len(loop.confirm.probe.runs) == 3 * 3 - 1
        assert Counter((t.params["budget"], st.seed_index(t)) for t in paired) == Counter(
            {(b, s): 1 for b in space.budgets for s in range(3)})
    else:
        assert "speed held" in said[0] and len(paired) == 1
    assert all(t.state.name == "COMPLETE" for t in confirm)


def with_cutout(proposal) -> dict:
    """``fake_result`` with cutout 0.08 more accurate: at budget 0.5 it is past the target (0.93 in 2 s)."""
    out = fake_result(proposal)
    if "cutout" in proposal.config["recipe"]["algorithms"]:
        out["val_accuracy"] += 0.08
    return out


def test_a_proposal_that_already_reaches_the_target_is_confirmed_first(tmp_path, make_space):
    """Label smoothing at budget 0.25 has a speedup at its own accuracy (0.82 in 0.8 s); cutout at budget 0.5 is past
    the target, the baseline at budget 1 (0.93 in 2 s, against 0.90 in 4 s), where no speedup at its own accuracy
    exists. With room for one candidate, the one that can be confirmed at the target goes first."""
    space = make_space(metric_split="val", baseline={"seeds": 3}, budgets=[0.25, 0.5, 1], trials=11,
                       confirm={"top_k": 1, "seeds": 2, "max_share": 0.9},
                       algorithms={"label_smoothing": {"smoothing": {"range": [0.05, 0.2]}}, "cutout": {}})
    loop, study, _ = open_loop(tmp_path, space)
    for partial in ({"budget": 0.25, "alg.label_smoothing": True}, {"budget": 0.5, "alg.cutout": True}):
        queueing.enqueue(study, space.complete(partial))

    loop.run(InProcess(with_cutout, concurrency=2))
    proposals = {t.number: t for t in runs_of(study, st.SEARCH)}
    assert len(proposals) == 2 and len(loop.confirm.plan.candidates) == 1
    chosen = proposals[loop.confirm.plan.candidates[0]]
    assert chosen.params["alg.cutout"] and chosen.params["budget"] == 0.5
    assert loop.confirm.plan.skipped == tuple(n for n in proposals if n != chosen.number)


def cutout_search(tmp_path, make_space, trials: int, **confirm):
    """A search whose first proposal, cutout at budget 0.5, reaches the target (the baseline at budget 1: 0.93 in 2 s
    against 0.90 in 4 s), 2x faster in its one run; (loop, study, messages, the cutout trial, the space)."""
    def space_with(**more):
        return make_space(metric_split="val", baseline={"seeds": 3}, budgets=[0.25, 0.5, 1], trials=trials,
                          confirm={"top_k": 2, "seeds": 3, "max_share": 0.9, **more},
                          algorithms={"label_smoothing": {"smoothing": {"range": [0.05, 0.2]}}, "cutout": {}})

    space = space_with(**confirm)
    loop, study, messages = open_loop(tmp_path, space)
    queueing.enqueue(study, space.complete({"budget": 0.5, "alg.cutout": True, "alg.label_smoothing": False}))

    loop.run(InProcess(with_cutout, concurrency=2))
    cutout = next(t for t in runs_of(study, st.SEARCH) if t.params["alg.cutout"])
    return loop, study, messages, cutout, space, space_with


@pytest.mark.parametrize("early", [1.5, None])
def test_a_proposal_that_reaches_the_target_fast_is_confirmed_while_the_proposals_go_on(tmp_path, make_space, early):
    """With ``confirm.early`` the cutout proposal's curve up to budget 0.5 (no run past the target) is queued at once,
    and the search goes on; without, the confirmation waits for the end of the proposals."""
    loop, study, messages, cutout, space, _ = cutout_search(tmp_path, make_space, 16, early=early)
    mine = [t for t in runs_of(study, st.CONFIRM) if t.user_attrs["of_trial"] == cutout.number]
    last_proposal = max(t.number for t in runs_of(study, st.SEARCH))
    said = [m for m in messages if m.startswith("confirmation at once")]
    if not early:  # the front moved on by the end of the proposals: other candidates, after them
        assert not said and not any(t.user_attrs.get("early") for t in runs_of(study, st.CONFIRM))
        assert min(t.number for t in runs_of(study, st.CONFIRM)) > last_proposal
    else:
        assert Counter((t.params["budget"], st.seed_index(t)) for t in [*mine, cutout]) == Counter(
            {(b, s): 1 for b in (0.25, 0.5) for s in range(3)})  # no run past the budget that reached the target
        assert all(t.user_attrs.get("early") and t.state.name == "COMPLETE" for t in mine)
        assert max(t.number for t in mine) < last_proposal  # while the proposals went on
        assert f"trial(s) {cutout.number} " in said[0] and len(said) <= space.confirm.top_k
        # the plan at the end takes it first, though it is no longer on the front, and queues nothing more for it
        assert loop.confirm.plan.candidates[0] == cutout.number
    assert st.count_finished(runs_of(study), [st.TUNE, st.BASELINE, st.SEARCH]) == 16


def test_with_stop_at_claim_the_search_ends_once_an_early_claim_stands(tmp_path, make_space):
    from recipesearch.analysis.frontier import frontier

    loop, study, messages, cutout, space, space_with = cutout_search(tmp_path, make_space, 40, stop_at_claim=True)
    assert loop.confirm.claim == cutout.number and loop.confirm.plan.candidates[0] == cutout.number
    assert st.count_finished(runs_of(study), [st.TUNE, st.BASELINE, st.SEARCH]) < 20  # of 40
    assert any(m.startswith(f"trial {cutout.number}'s claim stands at the target") for m in messages)
    confirm = runs_of(study, st.CONFIRM)
    assert all(t.user_attrs.get("early") for t in confirm)  # nothing after: no probe, no other candidate
    headline = frontier(trials_frame(study.get_trials(), space), space).headline
    # the other one begun early may be faster
    assert headline.confirmed and headline.number in loop.confirm.plan.candidates
    # operational: lifting it does not change the space's identity, so a resume may search on
    assert space_with().hash == space.hash


def test_with_stop_at_claim_no_proposal_starts_while_a_claim_is_pending(tmp_path, make_space):
    """A claim pending may end the search: a proposal started beside its runs would be trained for nothing when it
    stands, so the slots go to its runs or wait (the digits demo trained 4 proposals, a third of a training each,
    beside its candidate's curve; benchmarks §13). Once its runs finished and the claim stood, the search ended."""
    asked: list[tuple[str, bool]] = []

    def objective(proposal) -> dict:
        asked.append((proposal.attrs["stage"], bool(proposal.trial.user_attrs.get(st.EARLY))))
        return with_cutout(proposal)

    space = make_space(metric_split="val", baseline={"seeds": 3}, budgets=[0.25, 0.5, 1], trials=40,
                       confirm={"top_k": 2, "seeds": 3, "max_share": 0.9, "stop_at_claim": True},
                       algorithms={"label_smoothing": {"smoothing": {"range": [0.05, 0.2]}}, "cutout": {}})
    loop, study, _ = open_loop(tmp_path, space)
    queueing.enqueue(study, space.complete({"budget": 0.5, "alg.cutout": True, "alg.label_smoothing": False}))
    loop.run(InProcess(objective, concurrency=2))
    first_early = next(i for i, (_, early) in enumerate(asked) if early)
    # the proposal in flight when the cutout run finished (the batch of two) may still end; none starts after it
    assert all(stage != st.SEARCH for stage, _ in asked[first_early:])
    assert loop.confirm.claim is not None and all(t.state.name == "COMPLETE" for t in runs_of(study))


def test_a_claim_pending_when_the_proposals_end_is_waited_for_before_the_plan(tmp_path, make_space):
    """The proposals end (10 trials: the baseline's 9 and the cutout proposal) while the cutout curve's early runs
    are queued: the plan waits for their claim, which stands, so nothing but them is confirmed (before, the plan
    was made at once, with the probe and any other candidate)."""
    loop, study, messages, cutout, *_ = cutout_search(tmp_path, make_space, 10, stop_at_claim=True)
    confirm = runs_of(study, st.CONFIRM)
    assert loop.confirm.claim == cutout.number and loop.confirm.plan.candidates == (cutout.number,)
    assert loop.confirm.probe is None
    assert confirm and all(t.user_attrs.get("early") for t in confirm)
    assert st.count_finished(runs_of(study), [st.TUNE, st.BASELINE, st.SEARCH]) == 10


def test_the_plan_respects_the_compute_share_and_top_k(tmp_path, make_space):
    space = make_space(metric_split="val", baseline={"seeds": 3}, confirm={"top_k": 5, "max_share": 0.1},
                       budgets=[0.25, 0.5, 1], trials=16)
    loop, study, _ = open_loop(tmp_path, space)
    loop.run(InProcess(fake_result, concurrency=2))
    plan = plan_confirmation(study.get_trials(), space)
    assert plan.estimated_share <= 0.1 + 1e-9
    assert len(plan.candidates) + len(plan.skipped) >= 1
    off = make_space(metric_split="val", baseline={"seeds": 3}, budgets=[0.25, 0.5, 1], trials=16)
    assert off.confirm.enabled is False and not plan_confirmation(study.get_trials(), off).runs


def test_a_killed_driver_during_confirmation_resumes_without_losing_or_repeating_runs(tmp_path, make_space):
    space = make_space(metric_split="val", baseline={"seeds": 2}, confirm={"top_k": 2, "seeds": 2, "max_share": 0.6},
                       budgets=[0.25, 0.5, 1], trials=12)
    loop, study, _ = open_loop(tmp_path, space)
    with pytest.raises(KeyboardInterrupt):
        loop.run(killed_midway(st.CONFIRM, after=2)(fake_result))
    planned = {st.run_key(r.params, r.seed_index) for r in loop.confirm.plan.runs}
    assert any(t.state.name == "RUNNING" for t in study.get_trials())
    # resume: a new driver, a new loop over the same storage
    loop2, study2, _ = open_loop(tmp_path, space, resuming=True)
    loop2.run(InProcess(fake_result, concurrency=2))
    assert {st.run_key(r.params, r.seed_index) for r in loop2.confirm.plan.runs} == planned  # the same plan
    finished = [t for t in study2.get_trials() if st.is_finished(t)]
    keys = Counter((st.stage_of(t), st.run_key(st.trial_params(t), st.seed_index(t))) for t in finished)
    assert max(keys.values()) == 1  # nothing ran twice
    assert {k for s, k in keys if s == st.CONFIRM} == planned  # nothing lost
    assert st.count_finished(finished, [st.TUNE, st.BASELINE, st.SEARCH]) == 12


def test_the_sampler_never_sees_repeats_or_confirmation_runs(tmp_path, make_space):
    space = make_space(metric_split="val", baseline={"seeds": 3}, confirm={"top_k": 2}, budgets=[0.25, 0.5, 1],
                       trials=14)
    seen: list[set[int]] = []

    class Recording(optuna.samplers.RandomSampler):
        def sample_independent(self, study, trial, name, distribution):
            seen.append({t.number for t in study.get_trials(deepcopy=False)})
            return super().sample_independent(study, trial, name, distribution)

    storage = make_storage(f"sqlite:///{tmp_path / 'study.db'}")
    study = open_study(space, storage, Recording(seed=0), resuming=False)
    assert isinstance(study.sampler, HideRepeats)
    loop = SearchLoop(space, study, storage, space.trials)
    loop.prepare(False)
    loop.run(InProcess(fake_result))
    hidden = {t.number for t in study.get_trials() if st.stage_of(t) == st.CONFIRM or st.seed_index(t) > 0}
    assert hidden and seen and all(not (s & hidden) for s in seen)
    assert all(0 in s for s in seen)  # the first baseline run is seen


def test_count_unfinished_counts_queued_and_running_trials_of_the_given_stages_only():
    study = optuna.create_study(directions=["maximize", "minimize"])
    for stage, state in [(st.CONFIRM, "WAITING"), (st.CONFIRM, "RUNNING"), (st.CONFIRM, "COMPLETE"),
                         (st.SIMPLIFY, "WAITING"), (st.SEARCH, "WAITING")]:
        trial = optuna.trial.create_trial(state=optuna.trial.TrialState[state], user_attrs={st.STAGE: stage},
                                          values=[0.9, 1.0] if state == "COMPLETE" else None)
        study.add_trial(trial)
    trials = study.get_trials(deepcopy=False)
    assert st.count_unfinished(trials, (st.CONFIRM,)) == 2
    assert st.count_unfinished(trials, (st.CONFIRM, st.SIMPLIFY)) == 3
    assert st.count_unfinished(trials, (st.BASELINE,)) == 0


def test_after_a_repeat_the_next_trial_is_drawn_at_random_then_the_sampler_resumes():
    """A sampler that always proposes the same point (as GP does from an unchanged history) gets one random
    trial after ``explore_next``, from a stream of its own (not a random inner sampler's own draws again)."""

    class Stuck(optuna.samplers.RandomSampler):
        def sample_independent(self, study, trial, name, distribution):
            return distribution.low

    study = optuna.create_study(sampler=HideRepeats(Stuck(), lambda t: True, seed=0))

    def draw():
        return study.ask({"x": optuna.distributions.FloatDistribution(0.0, 1.0)}).params["x"]

    assert draw() == 0.0
    study.sampler.explore_next()
    explored = draw()
    assert explored != 0.0 and draw() == 0.0  # one trial at random, then the sampler's own again
    inner = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    first = inner.ask({"x": optuna.distributions.FloatDistribution(0.0, 1.0)}).params["x"]
    assert explored != first


def test_a_run_outside_the_constraints_is_not_confirmed(tmp_path, make_space):
    # accuracy_min rules out the fast budget-0.25 runs (val ~0.80-0.82): the plan confirms none of them
    kw = dict(metric_split="val", baseline={"seeds": 3}, confirm={"top_k": 5, "max_share": 0.9},
              budgets=[0.25, 0.5, 1], trials=16)
    loop, study, _ = open_loop(tmp_path, make_space(**kw))
    loop.run(InProcess(fake_result, concurrency=2))
    earlier = [t for t in study.get_trials() if st.stage_of(t) != st.CONFIRM]
    free = plan_confirmation(earlier, make_space(**kw))
    bound = plan_confirmation(earlier, make_space(**kw, constraints={"accuracy_min": 0.84}))
    val = {t.number: t.user_attrs["val_accuracy"] for t in earlier}
    assert any(val[n] < 0.84 for n in free.candidates)  # without the bound, such a run is a candidate
    assert bound.candidates and all(val[n] >= 0.84 for n in bound.candidates)
