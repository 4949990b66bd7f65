"""The simplify stage (engine/simplify.py, loop.py): after the confirmation, the headline recipe without each
of its methods at the largest budget, then without the ones it does not need as a new curve; resumable;
selected on validation. A table-lookup objective stands in for training."""
from __future__ import annotations

import math
from collections import Counter

import pytest

from recipesearch.engine import simplify
from recipesearch.engine import study as st
from recipesearch.engine.executors import InProcess
from recipesearch.engine.queueing import enqueue
from recipesearch.engine.trial_rows import trials_frame
from tests.engine.test_stages import killed_midway, open_loop

ALGORITHMS = {"label_smoothing": {}, "channels_last": {}, "ema": {}}
ALL_ON = {"alg.label_smoothing": True, "alg.channels_last": True, "alg.ema": True}


def objective(proposal) -> dict:
    """Label smoothing: more accurate and faster; channels_last: faster; EMA: slower and buys nothing. Test
    accuracy says the opposite of validation about EMA, so a stage that looked at test would keep it."""
    recipe = proposal.config["recipe"]
    algs, budget, seed = recipe["algorithms"], recipe["budget"], recipe["seed"]
    val = 0.80 + 0.05 * math.log2(budget * 4) + (0.02 if "label_smoothing" in algs else 0.0)
    val += 0.001 * ((seed * 7) % 3 - 1)
    secs = 4.0 * budget * (0.8 if "label_smoothing" in algs else 1.0) * (0.7 if "channels_last" in algs else 1.0)
    secs *= (1.25 if "ema" in algs else 1.0) * (1 + 0.01 * (seed % 3))
    test = val + (0.05 if "ema" in algs else 0.0)
    return {"accuracy": test, "val_accuracy": val, "train_seconds": secs, "loss": 0.1, "error": None}


def _space(make_space, **overrides):
    fields = {"metric_split": "val", "baseline": {"seeds": 2}, "confirm": {"top_k": 1, "seeds": 2, "max_share": 0.9},
              "budgets": [0.5, 1], "trials": 6, "hparams": {}, "algorithms": ALGORITHMS, "simplify": True}
    return make_space(**{**fields, **overrides})


def _with_the_proposals(study, space):
    """The only proposals: every method on, at both budgets (the sampler proposes nothing else)."""
    for b in space.budgets:
        enqueue(study, space.complete({**ALL_ON, "budget": float(b)}), stage=st.SEARCH)


def test_the_headline_loses_the_method_it_does_not_need_and_the_pruned_curve_is_trained(tmp_path, make_space):
    space = _space(make_space)
    loop, study, messages = open_loop(tmp_path, space)
    _with_the_proposals(study, space)
    loop.run(InProcess(objective, concurrency=2))
    plan = loop.simplify_plan
    assert plan is not None and plan.step == "pruned" and plan.budget == 1.0
    assert plan.methods == ("channels_last", "ema", "label_smoothing")
    assert {r.method: r.drop for r in plan.removals} == {"channels_last": False, "ema": True,
                                                         "label_smoothing": False}
    trials = study.get_trials()
    mine = [t for t in trials if st.stage_of(t) == st.SIMPLIFY]
    assert all(t.state.name == "COMPLETE" and t.user_attrs["of_trial"] == plan.recipe for t in mine)
    assert min(t.number for t in mine) > max(t.number for t in trials if st.stage_of(t) == st.CONFIRM)
    # the ablation, side by side: the whole recipe and each method off, on fresh seeds (after the
    # confirmation's 0 and 1), seed by seed, at the largest budget
    algs = Counter((t.user_attrs["algorithms"], t.params["budget"], st.seed_index(t)) for t in mine)
    arms = ("channels_last+ema+label_smoothing", "channels_last+ema", "ema+label_smoothing",
            "channels_last+label_smoothing")
    for arm in arms:
        assert algs[(arm, 1.0, 2)] == algs[(arm, 1.0, 3)] == 1
    order = [(st.seed_index(t), t.user_attrs["algorithms"]) for t in sorted(mine, key=lambda t: t.number)][:8]
    assert [s for s, _ in order] == [2, 2, 2, 2, 3, 3, 3, 3] and order[0][1] == arms[0]
    # the pruned curve, on the confirmation's seeds at every budget
    for b in space.budgets:
        assert algs[(arms[-1], b, 0)] == algs[(arms[-1], b, 1)] == 1
    assert len(mine) == 4 * 2 + 2 * 2
    keys = Counter(st.run_key(st.trial_params(t), st.seed_index(t)) for t in trials if not paired(t))
    assert max(keys.values()) == 1  # nothing trained twice, across stages (the paired baseline re-runs on purpose)
    assert any(m.startswith("simplify: trial") and "without each" in m for m in messages)
    assert any("does without ema at budget 1; the recipe without it is trained as a new curve" in m
               for m in messages)
    assert loop.total() == st.count_finished(trials) and loop.remaining() == 0
    # the frontier, on every stage: the pruned recipe is the faster curve
    from recipesearch.analysis.frontier import frontier

    head = frontier(trials_frame(trials, space), space).headline
    assert head.confirmed and study.trials[head.number].user_attrs["algorithms"] == "channels_last+label_smoothing"
    assert set(trials_frame(trials, space)["stage"]) == {"baseline", "search", "confirm", "simplify"}


def paired(t) -> bool:
    """A run of the paired baseline: the confirmation re-runs the baseline stage's runs beside the candidates."""
    return st.stage_of(t) == st.CONFIRM and bool(t.user_attrs.get("is_baseline"))


@pytest.mark.system
def test_a_killed_driver_during_the_stage_resumes_without_losing_or_repeating_runs(tmp_path, make_space):
    space = _space(make_space)
    loop, study, _ = open_loop(tmp_path, space)
    _with_the_proposals(study, space)
    with pytest.raises(KeyboardInterrupt):
        loop.run(killed_midway(st.SIMPLIFY, after=3)(objective))
    loop2, study2, _ = open_loop(tmp_path, space, resuming=True)
    loop2.run(InProcess(objective, concurrency=2))
    finished = [t for t in study2.get_trials() if st.is_finished(t)]
    keys = Counter(st.run_key(st.trial_params(t), st.seed_index(t)) for t in finished if not paired(t))
    assert max(keys.values()) == 1
    assert st.count_finished(finished, [st.SIMPLIFY]) == 4 * 2 + 2 * 2 and loop2.simplify_plan.dropped == ("ema",)


def test_off_by_default_and_nothing_to_do_without_a_confirmed_recipe(tmp_path, make_space):
    space = _space(make_space, simplify=False)
    assert space.simplify.enabled is False and space.with_simplify().simplify.enabled
    assert space.with_simplify().hash == space.hash  # operational: a finished search resumes with it
    loop, study, _ = open_loop(tmp_path, space)
    _with_the_proposals(study, space)
    loop.run(InProcess(objective, concurrency=2))
    assert loop.simplify_plan is None and not [t for t in study.get_trials() if st.stage_of(t) == st.SIMPLIFY]
    # the baseline is the only "recipe": nothing confirmed, nothing to simplify
    plan = simplify.plan_simplify([t for t in study.get_trials() if t.user_attrs.get("is_baseline")],
                                  space.with_simplify())
    assert plan.step == "none" and not plan.runs and "no confirmed recipe" in plan.describe()


def test_without_takes_an_algorithm_and_its_parameters_out_and_restores_the_base_optimizer(make_space):
    space = _space(make_space, hparams={"optimizer.name": {"choices": ["sgd", "adamw"]}},
                   algorithms={"label_smoothing": {"smoothing": {"range": [0.05, 0.2]}}, "ema": {}})
    params = space.complete({"alg.label_smoothing": True, "label_smoothing.smoothing": 0.1,
                             "optimizer.name": "adamw", "budget": 1.0})
    assert simplify.methods_of(params, space) == ["adamw", "label_smoothing"]
    out = simplify.without(params, ["label_smoothing"], space)
    assert out["alg.label_smoothing"] is False and "label_smoothing.smoothing" not in out
    assert out["optimizer.name"] == "adamw" and out["budget"] == 1.0
    assert simplify.without(params, ["adamw"], space)["optimizer.name"] == "sgd"
    space.recipe_for(out)  # a valid recipe


def test_the_space_and_the_cli_refuse_what_cannot_work(make_space):
    from recipesearch.errors import ConfigError

    with pytest.raises(ConfigError, match="simplify.budget: 3 is not one of the budgets"):
        _space(make_space, simplify={"budget": 3})
    with pytest.raises(ConfigError, match="simplify: works on the confirmation's recipes"):
        _space(make_space, confirm=False)
    with pytest.raises(ConfigError, match="simplify: works on the confirmation's recipes"):
        _space(make_space, confirm=False, simplify=False).with_simplify()
    assert _space(make_space, simplify={"budget": 0.5}).simplify.budget == 0.5
