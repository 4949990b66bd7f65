"""engine/search_budget.py: a search within N trainings of its baseline, or within a wall-clock time; the bad values
of either refused in one line before anything is written."""
from __future__ import annotations

import json

import pandas as pd
import pytest

import recipesearch
from recipesearch.engine.search_budget import minimum_trainings, parse_duration
from recipesearch.errors import UserError
from tests.conftest import call_cli


@pytest.mark.parametrize("text, seconds", [("2h", 7200), ("90m", 5400), ("45s", 45), ("1.5h", 5400),
                                           ("1h30m", 5400), (" 2 h ", 7200)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["2", "soon", "h2", "-1h", "0s", "2h later", ""])
def test_a_duration_that_does_not_parse_names_the_flag(text):
    with pytest.raises(UserError, match="--time-budget: "):
        parse_duration(text)


def test_what_is_kept_back_for_the_confirmation(make_space):
    from recipesearch.engine.search_budget import confirm_reserve

    assert confirm_reserve(make_space(), 100) == 0  # no confirmation stage
    space = make_space(confirm={"seeds": 2, "max_share": 0.5})
    assert confirm_reserve(space, 100) == 50 and confirm_reserve(space, 8) == pytest.approx(2 * 1.5 * 2.25)


def test_the_minimum_is_the_baseline_in_trainings_at_budget_1(make_space):
    assert minimum_trainings(make_space()) == pytest.approx(1.5)  # 1 seed at budgets 0.5 and 1
    assert minimum_trainings(make_space(baseline={"seeds": 3})) == pytest.approx(4.5)
    # the LR sweep: 3 runs at the budget nearest 1, on top
    assert minimum_trainings(make_space(baseline={"seeds": 2, "tune_lr": True})) == pytest.approx(6.0)


@pytest.mark.parametrize("flags, words", [
    (["--search-budget", "1"], "--search-budget: 1 trainings cannot even train the baseline (1 seed(s) at budgets "
                               "0.5, 1: 1.50 trainings of the baseline at budget 1): at least 2"),
    (["--time-budget", "soon"], "--time-budget: 'soon' is not a duration (write it as 2h, 90m, 45s or 1h30m)"),
    (["--time-budget", "1h", "--search-budget", "5"], "--time-budget and --search-budget: give one of them"),
])
def test_bad_budgets_are_one_line_and_write_nothing(tmp_path, write_space, capsys, flags, words):
    out = tmp_path / "run"
    code, _, err = call_cli(capsys, "search", str(write_space()), "--out", str(out), "--executor", "inprocess",
                            "--quiet", *flags)
    assert code == 2 and err.strip() == f"error: {words}" and not out.exists()


def test_the_space_key_is_checked_like_the_flag(tmp_path, write_space):
    with pytest.raises(UserError, match=r"^search_budget: 1 trainings cannot even train the baseline .* at least 2$"):
        recipesearch.search(write_space(search_budget=1), out=tmp_path / "run", executor="inprocess", quiet=True)
    assert not (tmp_path / "run").exists()


def test_proposals_stop_once_the_budget_is_spent(tmp_path, write_space):
    # 40 trials allowed, 4 trainings of budget 1 to spend, no confirmation to keep back: one trial at a time, a
    # proposal is asked only while less than 4 units are spent, so the search ends between 4 units and 4 units plus
    # its last trial, far short of 40 trials (the unit: the baseline's run at budget 1)
    out = tmp_path / "run"
    result = recipesearch.search(write_space(trials=40, search_budget=4), out=out, executor="inprocess", quiet=True,
                                 report=False)
    df = pd.read_csv(out / "trials.csv")
    unit = float(df.loc[df["is_baseline"] & (df["budget"] == 1.0), "train_seconds"].iloc[0])
    spent = float(df["train_seconds"].sum())
    assert len(df) < 40 and (df["state"] == "COMPLETE").all()
    assert 4 * unit <= spent < 4 * unit + float(df["train_seconds"].iloc[-1])
    payback = json.loads((out / "run.json").read_text())["payback"]
    assert payback["search_trainings"] == pytest.approx(spent / unit, rel=1e-3)
    assert set(payback["by_stage"]) == {"baseline", "search"}
    assert result.payback.search_trainings == pytest.approx(spent / unit, rel=1e-3)


def test_the_confirmation_plans_within_what_the_budget_leaves(tmp_path, write_space):
    # kept back for the confirmation: half of 16 trainings (one recipe's curve and the paired baseline's, 2 seeds at
    # budgets 0.5 and 1, take 6.75 at the plan's margin): proposals stop at 8, and the confirmation's plan is sized
    # to what is left (its runs' estimates fit the rest of the 16). No early confirmation: whether a proposal's run
    # is 1.5x faster than the baseline's is up to the machine's timing, and early runs spend the proposals' share
    out = tmp_path / "run"
    recipesearch.search(write_space(trials=40, search_budget=16, confirm={"top_k": 1, "seeds": 2, "max_share": 0.5,
                                                                          "early": None}),
                        out=out, executor="inprocess", quiet=True, report=False)
    df = pd.read_csv(out / "trials.csv")
    unit = float(df.loc[(df["stage"] == "baseline") & (df["budget"] == 1.0), "train_seconds"].iloc[0])
    earlier = df[df["stage"] != "confirm"]
    assert len(earlier) < 40 and earlier["train_seconds"].sum() >= 8 * unit
    confirmation = json.loads((out / "run.json").read_text())["confirmation"]
    assert confirmation["allowed_seconds"] == pytest.approx(max(0.0, 16 * unit - earlier["train_seconds"].sum()),
                                                            rel=1e-3)
    assert confirmation["budget"] == "search budget 16 trainings of the baseline at budget 1"
    assert confirmation["estimated_seconds"] <= confirmation["allowed_seconds"]


def test_a_time_budget_stops_the_proposals(tmp_path, write_space, capsys):
    # 40 tiny trials take far longer than a second: with one second of wall-clock time, the baseline runs whole
    # (it always does), then no proposal starts once the second is over
    out = tmp_path / "run"
    code, stdout, _ = call_cli(capsys, "search", str(write_space(trials=40)), "--out", str(out), "--executor",
                               "inprocess", "--quiet", "--no-report", "--time-budget", "1s")
    df = pd.read_csv(out / "trials.csv")
    assert code == 0 and df["is_baseline"].sum() == 2 and len(df) < 40
    assert "time budget 1 s of wall-clock time: no more proposals after" in stdout
