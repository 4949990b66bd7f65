"""The CLI shows test accuracy next to the validation figure as held out, and warns when a space chose on test."""
from __future__ import annotations

import math

import pandas as pd

BASE = {"model": {"name": "cnn", "width": 8}, "data": {"name": "digits", "val_fraction": 0.2},
        "optimizer": {"name": "sgd", "lr": 0.05}, "max_duration": 2, "batch_size": 64, "device": "cpu"}
ROWS = [  # number, state, is_baseline, budget, algorithms, accuracy (test), val_accuracy, train_seconds
    (0, "COMPLETE", True, 0.5, "", 0.81, 0.80, 1.0), (1, "COMPLETE", True, 1.0, "", 0.91, 0.90, 2.0),
    (2, "COMPLETE", False, 0.5, "label_smoothing", 0.87, 0.90, 1.0),
]


def _trials() -> pd.DataFrame:
    columns = ["number", "state", "is_baseline", "budget", "algorithms", "accuracy", "val_accuracy", "train_seconds"]
    return pd.DataFrame(ROWS, columns=columns).assign(cost=math.nan, error="", seed=0)


def _log_ui(lines: list[str]):
    from recipesearch.engine.progress import LogUI

    return LogUI(stream=type("S", (), {"write": lambda self, t: lines.append(t), "flush": lambda self: None})())


def _log_of_one_trial_and_summary(space) -> tuple[str, str]:
    """(the --quiet line of trial 2, everything printed once the summary follows)."""
    lines: list[str] = []
    ui = _log_ui(lines)
    ui.start(space=space, total=3, done=0, run_dir="run", ray_address="local")
    ui.trial_finished(_trials().iloc[2].to_dict(), _trials())
    trial_line = "".join(lines)
    ui.summary(_trials(), space)
    return trial_line, "".join(lines)


def test_a_val_search_shows_test_accuracy_as_held_out(make_space):
    from recipesearch.engine.progress import front_table

    space = make_space(base=BASE, metric_split="val")
    front = front_table(_trials(), space)
    assert front["number"].tolist() == [2] and front["acc"].tolist() == [0.90] and front["test_acc"].tolist() == [0.87]

    trial_line, text = _log_of_one_trial_and_summary(space)
    assert "COMPLETE val acc 0.9000 test acc 0.8700 (held out)" in trial_line
    assert "val acc" in text and "test acc (held out)" in text and "0.8700" in text
    assert "is 2.00x faster at val acc 0.9000, one seed: not confirmed; test acc 0.8700 (held out)" in " ".join(
        text.split())  # the console wraps long lines
    assert "selected on the test split" not in text


def test_a_test_search_says_so_in_the_summary(make_space):
    trial_line, text = _log_of_one_trial_and_summary(make_space(base=BASE, metric_split="test"))
    assert "COMPLETE test acc 0.8700 train" in trial_line
    assert "held out" not in text and "test acc" in text
    assert text.rstrip().splitlines()[-1].startswith(
        "warning: this search selected on the test split: its test accuracies are optimistic; use metric_split: val")
