"""bench/load_trust.py's pure parts, without its searches: the shares of claims inside, the goal, the baseline
shift read off a hand-made trials table, and a smoke check that a summarised result renders."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from bench import load_trust


def _claim(number: int, inside: bool, ci_low: float = 1.2) -> dict:
    return {"kind": "point", "number": number, "reported_speedup": 1.5, "reported_ci_low": ci_low,
            "reported_ci_high": 1.8, "fresh_speedup": 1.6 if inside else 1.0, "inside": inside}


def _result() -> dict:
    hog = {"space": "digits", "condition": "hog", "hog": True, "wall_seconds": 600.0, "hog_seconds": 300.0,
           "baseline_shift": {"0.5": 1.4}, "paired": [_claim(1, True), _claim(2, True), _claim(3, False),
                                                       _claim(4, True), _claim(5, True, ci_low=math.nan)],
           "early": [_claim(1, False), _claim(2, True)]}
    control = {"space": "digits", "condition": "control", "hog": False, "wall_seconds": 500.0, "hog_seconds": 0.0,
               "paired": [_claim(1, True)], "early": []}
    return {"seeds": 3, "searches": [hog, control]}


def test_shares_count_the_claims_with_an_interval_and_the_goal_reads_the_paired_ones_under_load():
    out = load_trust.summarise(_result())
    assert out["hog_paired_inside"] == pytest.approx(0.75)  # 3 of 4: the claim without an interval is not scored
    assert out["hog_early_inside"] == pytest.approx(0.5)
    assert out["control_paired_inside"] == 1.0 and math.isnan(out["control_early_inside"])
    assert not out["goal_met"]  # 75 % < 80 %
    first = _result()
    first["searches"][0]["paired"][2]["inside"] = True
    assert load_trust.summarise(first)["goal_met"]


def test_no_scored_claims_under_load_do_not_meet_the_goal():
    result = {"seeds": 3, "searches": [{"condition": "hog", "paired": [], "early": []}]}
    out = load_trust.summarise(result)
    assert math.isnan(out["hog_paired_inside"]) and not out["goal_met"]


def test_the_baseline_shift_is_the_early_baselines_time_over_the_paired_ones_per_budget():
    from recipesearch.analysis.paired_baseline import baseline_shift

    def runs(budget, seconds):
        return [{"budget": budget, "train_seconds": t, "accuracy": 0.9, "number": i} for i, t in enumerate(seconds)]

    early = pd.DataFrame(runs(0.5, [3.0, 5.0]) + runs(1.0, [6.0, 6.5]))
    paired = pd.DataFrame(runs(0.5, [2.0, 2.0]))
    # budget 1 has no paired baseline: no ratio; budget 0.5: mean(3, 5) / mean(2, 2)
    shift = baseline_shift(early, paired, "accuracy", 0.9)
    assert load_trust._baseline_shift(shift) == {"0.5": pytest.approx(2.0)}
    assert load_trust._baseline_shift(None) == {}  # the paired baseline not in use


def test_a_summarised_result_renders_its_table_and_a_searchs_note():
    result = _result()
    result["searches"][0]["note"] = "tests ran beside it"
    text = load_trust.render(load_trust.summarise(result))
    assert "| space | search | search time | hog |" in text
    assert "- digits, hog: tests ran beside it" in text and text.count("tests ran beside it") == 1


def test_a_half_run_later_keeps_the_other_spaces_searches_and_replaces_its_own():
    digits = _result()
    fm = {"seeds": 3, "quick": False, "searches": [{**s, "space": "fashion_mnist"} for s in _result()["searches"]]}
    fm["searches"][0]["paired"] = [_claim(9, False)]
    merged = load_trust.merge({**load_trust.summarise(digits), "quick": True}, load_trust.summarise(fm))
    assert [(s["space"], s["condition"]) for s in merged["searches"]] == \
        [("digits", "hog"), ("digits", "control"), ("fashion_mnist", "hog"), ("fashion_mnist", "control")]
    assert merged["hog_paired_inside"] == pytest.approx(3 / 5) and not merged["quick"]
    # the same space again: the new searches replace the old ones; other seeds: nothing of the old result kept
    again = load_trust.merge(merged, {**load_trust.summarise(digits), "quick": True})
    assert [s["space"] for s in again["searches"]] == ["fashion_mnist", "fashion_mnist", "digits", "digits"]
    assert load_trust.merge({**merged, "seeds": 5}, fm) is fm
    assert load_trust.merge(None, fm) is fm


def test_a_finished_search_is_read_back_and_a_finished_replication_kept(tmp_path, monkeypatch):
    out = tmp_path / "bench-load-digits-hog-1"
    record = {"run_dir": str(out), "hog": True, "wall_seconds": 12.0, "resumed": False, "hog_seconds": 5.0,
              "hog_started_after_s": 2.0}
    load_trust.write_json(load_trust._record(out), record)

    def no_process(*args, **kwargs):
        raise AssertionError(f"nothing should run: {args}")

    monkeypatch.setattr(load_trust.subprocess, "Popen", no_process)
    monkeypatch.setattr(load_trust.subprocess, "run", no_process)
    assert load_trust.search(tmp_path / "space.yaml", out, with_hog=True) == record
    other = tmp_path / "bench-load-digits-control-1"
    other.mkdir()  # started, never finished (no record): resumed
    with pytest.raises(AssertionError, match="--resume"):
        load_trust.search(tmp_path / "space.yaml", other, with_hog=False)
    (out / "replication").mkdir(parents=True)
    (out / "replication" / "run.json").write_text('{"status": "finished"}')
    load_trust.replicate_idle(out, seeds=3)  # finished: not run again
    (out / "replication" / "run.json").write_text('{"status": "interrupted"}')
    with pytest.raises(AssertionError, match="--resume"):
        load_trust.replicate_idle(out, seeds=3)  # interrupted: resumed
