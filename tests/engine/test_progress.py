"""The live front table, the headline lines and the log display (recipesearch/engine/progress.py)."""
from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd
import pytest


def test_the_live_front_table_and_the_headline(make_space):
    from recipesearch.analysis import frontier
    from recipesearch.engine.progress import LogUI, front_table, headline

    space = make_space(metric_split="test")  # a space may still select on test (the report warns)
    rows = [  # number, state, is_baseline, budget, algorithms, accuracy, train_seconds
        (0, "COMPLETE", True, 0.5, "", 0.80, 1.0), (1, "COMPLETE", True, 1.0, "", 0.90, 2.0),
        (2, "COMPLETE", False, 0.5, "label_smoothing", 0.90, 1.0),  # baseline's 2 s accuracy in 1 s
        (3, "COMPLETE", False, 1.0, "label_smoothing", 0.85, 2.5),  # dominated
        (4, "FAIL", False, 1.0, "", math.nan, math.nan), (5, "RUNNING", False, 0.5, "", math.nan, math.nan),
    ]
    df = pd.DataFrame(rows, columns=["number", "state", "is_baseline", "budget", "algorithms", "accuracy",
                                     "train_seconds"]).assign(cost=math.nan, error="")
    front = front_table(df, space)
    assert front["number"].tolist() == [2]  # trial 2 dominates both baselines
    assert front["speedup"].tolist() == [pytest.approx(2.0)]
    assert headline(df, space).startswith("not confirmed: no recipe was trained at two or more budgets")
    assert frontier(df, space).headline.elsewhere == (
        "elsewhere on the front: trial 2 (label_smoothing, budget 0.5, 1 seed) is 2.00x faster at test acc 0.9000, "
        "one seed: not confirmed")
    df.loc[2, "accuracy"] = 0.78  # baseline 0 dominates it: only baselines are left, no recipe to name
    assert front_table(df, space)["number"].tolist() == [0, 1]
    assert frontier(df, space).headline.elsewhere == ""
    df.loc[2, "accuracy"] = 0.80
    assert front_table(df, space)["number"].tolist() == [0, 2, 1]  # equal points both stay on the front

    lines = []
    ui = LogUI(stream=type("S", (), {"write": lambda self, t: lines.append(t), "flush": lambda self: None})())
    ui.start(space=space, total=6, done=0, run_dir="run", ray_address="local")
    ui.trial_finished({**df.iloc[4].to_dict(), "error": "diverged: loss is nan at step 3"}, df)
    assert any("trial 4 FAIL: diverged: loss is nan at step 3" in ln for ln in lines)


def test_the_live_table_selects_on_the_spaces_metric_and_prints_one_summary(make_space):
    from recipesearch.engine.progress import LogUI, front_table, headline

    space = make_space()
    # the table, speedups and headline read val_accuracy, never the test column
    space.scoring = replace(space.scoring, metric_split="val")
    rows = [  # number, state, is_baseline, budget, algorithms, accuracy (test), val_accuracy, train_seconds
        (0, "COMPLETE", True, 0.5, "", 0.10, 0.80, 1.0), (1, "COMPLETE", True, 1.0, "", 0.10, 0.90, 2.0),
        (2, "COMPLETE", False, 0.5, "label_smoothing", 0.99, 0.90, 1.0),
        (3, "COMPLETE", False, 1.0, "mixup", 0.99, 0.85, 2.5),  # best on test, dominated on val
        (4, "COMPLETE", False, 1.0, "mixup", 0.99, math.nan, 0.5),  # no val accuracy: not completed
    ]
    df = pd.DataFrame(rows, columns=["number", "state", "is_baseline", "budget", "algorithms", "accuracy",
                                     "val_accuracy", "train_seconds"]).assign(cost=math.nan, error="")
    front = front_table(df, space)
    assert front["number"].tolist() == [2] and front["acc"].tolist() == [0.90]
    assert front["speedup"].tolist() == [pytest.approx(2.0)]
    assert headline(df, space).startswith("not confirmed")

    lines = []
    ui = LogUI(stream=type("S", (), {"write": lambda self, t: lines.append(t), "flush": lambda self: None})())
    ui.summary(df, space)
    text = "".join(lines)
    assert "val acc" in text and "Pareto front (1 points, single runs: nothing confirmed yet)" in text
    flat = " ".join(text.split())  # the console wraps long lines
    assert flat.count("elsewhere on the front: trial 2 (label_smoothing, budget 0.5, 1 seed) is 2.00x faster at val "
                      "acc 0.9000, one seed: not confirmed; test acc 0.9900 (held out)") == 1


def test_the_headline_line_is_the_confirmed_curve_speedup_with_its_interval(make_space):
    from recipesearch.engine.progress import LogUI, front_table, headline

    space = make_space(metric_split="val")
    rows = []
    for key, base, curve in (("", True, {0.5: (2.0, 0.85), 1.0: (4.0, 0.90)}),
                             ("mixup", False, {0.5: (1.0, 0.86), 1.0: (2.0, 0.92)})):
        for budget, (secs, acc) in curve.items():
            for noise in (-0.002, 0.0, 0.002):
                rows.append({"number": len(rows), "state": "COMPLETE", "is_baseline": base, "budget": budget,
                             "algorithms": key, "recipe_key": key or "baseline",
                             "val_accuracy": acc + noise, "accuracy": acc - 0.02,
                             "train_seconds": secs * (1 + noise), "cost": math.nan, "error": ""})
    df = pd.DataFrame(rows)
    text = headline(df, space)
    assert text.startswith("confirmed: trial 6 (mixup) is 2.52x faster [95% CI ")
    assert "than the baseline to the target val acc 0.9000 (the baseline at budget 1)" in text
    assert text.endswith("test acc 0.9000 (held out)")
    front = front_table(df, space)
    assert (front["n_seeds"] == 3).all() and front["confirmed"].any()
    lines = []
    ui = LogUI(stream=type("S", (), {"write": lambda self, t: lines.append(t), "flush": lambda self: None})())
    ui.summary(df, space)
    out = "".join(lines)
    assert "seed means" in out and "✓" in out and "confirmed: trial 6" in out
    # then what the search cost (12 runs, 27 s: 6.75 trainings of the 4-s baseline at budget 1) and when the recipe,
    # 4 - 2**(2/3) = 2.41 s faster to the target, pays it back: after ceil(27 / 2.41) = 12 trainings
    words = " ".join(out.split())
    assert f"the search cost {df['train_seconds'].sum() / 4.0:.1f} trainings of the baseline (0.01 h of training); " \
           "its recipe saves 2.41 s a training to the target: it pays for itself after 12 trainings" in words
    assert out.index("confirmed: trial 6") < out.index("elsewhere on the front") < out.index("the search cost")


def test_a_repeated_proposal_has_its_own_line_and_count(make_space):
    from recipesearch.engine.progress import LogUI, _counts, _print_summary

    space = make_space(metric_split="test")
    rows = [  # number, state, budget, algorithms, accuracy, train_seconds, pruned_at, duplicate_of
        (0, "COMPLETE", 0.5, "", 0.80, 1.0, math.nan, math.nan),
        (1, "PRUNED", 1.0, "label_smoothing", 0.30, 0.2, 0.25, math.nan),  # stopped at a rung
        (2, "PRUNED", 0.5, "", math.nan, 0.0, math.nan, 0.0),  # the same recipe as trial 0: not trained
    ]
    df = pd.DataFrame(rows, columns=["number", "state", "budget", "algorithms", "accuracy", "train_seconds",
                                     "pruned_at", "duplicate_of"]).assign(is_baseline=False, cost=math.nan, error="")
    assert _counts(df) == {"COMPLETE": 1, "PRUNED": 1, "REPEAT": 1}
    lines = []
    stream = type("S", (), {"write": lambda self, t: lines.append(t), "flush": lambda self: None})()
    ui = LogUI(stream=stream)
    ui.start(space=space, total=3, done=0, run_dir="run", ray_address="local")
    ui.trial_finished(df.iloc[2].to_dict(), df)
    ui.trial_finished(df.iloc[1].to_dict(), df)
    assert any("trial 2 not trained: the same recipe as trial 0, budget 0.5" in ln for ln in lines)
    assert any("trial 1 PRUNED at rung 0.25" in ln for ln in lines)
    from rich.console import Console

    _print_summary(Console(file=stream, width=120, no_color=True), df, space)
    assert any("1 completed, 0 failed, 1 stopped at a rung, 1 repeated proposals not trained" in ln for ln in lines)
