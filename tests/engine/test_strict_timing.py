"""engine/strict_timing.py: with --strict-timing a trial timed on a busy machine (cpu_share far below the
search's median) is recorded FAIL with the reason and run again, twice at most; without it, it stands."""
from __future__ import annotations

from collections import Counter

from recipesearch.engine import study as st
from recipesearch.engine.executors import InProcess
from recipesearch.engine.strict_timing import BUSY_RERUNS, MAX_BUSY_RERUNS
from recipesearch.engine.trial_rows import trials_frame
from tests.engine.test_stages import fake_result, open_loop


def busy_on(numbers, always=False):
    """fake_result with a cpu_share: 0.3 for the first run of the trials in ``numbers`` (every run when
    ``always``: a machine that stays busy), 0.95-1.0 otherwise."""
    seen: Counter = Counter()

    def result(proposal):
        key = (proposal.config["recipe"]["budget"], proposal.config["recipe"]["seed"],
               tuple(sorted(proposal.config["recipe"]["algorithms"])), proposal.config["recipe"]["optimizer"]["lr"])
        first = not seen[key]
        seen[key] += 1
        busy = proposal.number in numbers and first or (always and proposal.attrs.get(BUSY_RERUNS) is not None) \
            or (always and proposal.trial.user_attrs.get(st.REQUEUED_FROM) is not None)
        share = 0.3 if busy else 0.95 + 0.01 * (proposal.number % 5)
        return {**fake_result(proposal), "cpu_share": share, "load_start": 1.0, "load_end": 1.5}

    return result


def test_a_busy_trial_runs_again_and_only_its_rerun_counts(tmp_path, make_space):
    space = make_space(metric_split="val", baseline={"seeds": 1}, budgets=[0.25, 0.5, 1], trials=10)
    loop, study, messages = open_loop(tmp_path, space)
    loop.strict_timing = True
    loop.run(InProcess(busy_on({5}), concurrency=1))
    trials = study.get_trials()
    busy = trials[5]
    assert busy.state.name == "FAIL" and "busy machine" in busy.user_attrs["error"]
    assert busy.user_attrs[BUSY_RERUNS] == 1 and busy.user_attrs["cpu_share"] == 0.3
    rerun = [t for t in trials if t.user_attrs.get(st.REQUEUED_FROM) == 5]
    assert len(rerun) == 1 and rerun[0].state.name == "COMPLETE" and rerun[0].params == busy.params
    assert st.count_finished(trials, [st.BASELINE, st.SEARCH]) == 10  # the FAIL it replaced does not count
    assert any("busy machine" in m for m in messages)
    frame = trials_frame(trials, space)
    assert {"cpu_share", "load_start", "load_end", "busy_reruns"} <= set(frame.columns)


def test_without_the_flag_a_busy_trial_stands_and_a_machine_that_stays_busy_is_run_twice_at_most(
        tmp_path, make_space):
    space = make_space(metric_split="val", baseline={"seeds": 1}, budgets=[0.25, 0.5, 1], trials=8)
    loop, study, _ = open_loop(tmp_path, space)
    loop.run(InProcess(busy_on({5}), concurrency=1))
    assert study.get_trials()[5].state.name == "COMPLETE" and len(study.get_trials()) == 8
    (tmp_path / "again").mkdir()
    loop, study, _ = open_loop(tmp_path / "again", space)
    loop.strict_timing = True
    loop.run(InProcess(busy_on({5}, always=True), concurrency=1))
    chain = [t for t in study.get_trials() if t.number == 5 or t.user_attrs.get(BUSY_RERUNS)]
    assert [t.state.name for t in chain].count("FAIL") == MAX_BUSY_RERUNS
    assert chain[-1].state.name == "COMPLETE" and chain[-1].user_attrs[BUSY_RERUNS] == MAX_BUSY_RERUNS
