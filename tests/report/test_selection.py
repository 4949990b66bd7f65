"""The report says which split chose: validation (test held out, shown next to it) or test (a warning).

A validation run is the hand-made run of fake_run.py with its accuracies copied to ``val_accuracy`` and
the test column made to disagree with them, so anything the report chooses or ranks on the wrong column
shows up.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from recipesearch.report import build_info, load_run, write_report

from .fake_run import trials_frame, write_run_dir

VAL_TEXT = "selected on validation (15 % of train held out); test accuracy is reported, never used to choose"
TEST_TEXT = "this search selected on the test split: its test accuracies are optimistic; use metric_split: val"
VAL_META = {"objectives": ["accuracy", "train_seconds"], "directions": ["maximize", "minimize"],
            "metric_split": "val"}


def _with_val_fraction(recipe_json: str, fraction: float) -> str:
    data = json.loads(recipe_json)
    data["data"]["val_fraction"] = fraction
    return json.dumps(data)


def val_trials(test_seed: int = 0):
    """fake_run's trials selecting on validation: its accuracies become val_accuracy, test is shuffled."""
    df = trials_frame()
    df["val_accuracy"] = df["accuracy"]
    measured = df["accuracy"].notna()  # shuffled among the trials that have one: failed ones stay NaN
    df.loc[measured, "accuracy"] = np.random.default_rng(test_seed).permutation(df.loc[measured, "accuracy"])
    df["recipe_json"] = [_with_val_fraction(t, 0.15) for t in df["recipe_json"]]
    return df


@pytest.fixture(scope="module")
def val_page(tmp_path_factory) -> str:
    run = tmp_path_factory.mktemp("val") / "run"
    write_run_dir(run, val_trials(), meta=VAL_META)
    info = build_info(*load_run(run), run_dir=run)
    return write_report(info, run).read_text()


@pytest.fixture(scope="module")
def page_on_test(tmp_path_factory) -> str:
    run = write_run_dir(tmp_path_factory.mktemp("test") / "run", meta={**VAL_META, "metric_split": "test"})
    return write_report(build_info(*load_run(run), run_dir=run), run).read_text()


def _header(page: str) -> str:
    return page[page.index('<header class="top">'):page.index("</header>")]


def test_a_validation_run_says_so_in_the_header(val_page):
    header = _header(val_page)
    assert VAL_TEXT in header and 'role="alert"' not in header
    assert "test split" not in val_page
    assert val_page.count(VAL_TEXT) == 2  # header and methodology; not repeated among the notes


def test_a_validation_run_shows_test_accuracy_next_to_val_as_held_out(val_page):
    for table in ("frontier-table", "trials-table"):
        head = val_page[val_page.index(f'id="{table}"'):]
        head = head[:head.index("</thead>")]
        assert head.index(">Val acc<") < head.index(">Test acc (held out)<")
    assert "(test acc " in val_page and "held out)" in val_page  # after the headline's accuracies


def test_a_test_run_warns_in_the_header(page_on_test):
    header = _header(page_on_test)
    assert 'role="alert"' in header and f"<strong>Warning:</strong> {TEST_TEXT}" in header
    assert "Test acc (held out)" not in page_on_test and ">Test acc<" in page_on_test
    assert "selected on validation" not in page_on_test


def test_selection_reads_the_split_and_the_val_fraction(run_dir):
    trials, meta, space = load_run(run_dir)
    info = build_info(val_trials(), VAL_META, space)
    assert info.metric == "val_accuracy" and info.selection.val_fraction == 0.15
    assert info.selection.text == VAL_TEXT and info.warnings[0] == VAL_TEXT  # `recipesearch report` prints it
    no_fraction = build_info(val_trials().assign(recipe_json=""), VAL_META, space).selection
    assert no_fraction.text.startswith("selected on validation (held out of train);")
    test = build_info(trials, meta, space)  # run.json without metric_split: an older run, which chose on test
    assert test.metric == "accuracy" and test.selection.text == TEST_TEXT


def test_nothing_chosen_moves_when_the_test_labels_are_permuted(run_dir):
    _, _, space = load_run(run_dir)
    a, b = build_info(val_trials(0), VAL_META, space), build_info(val_trials(1), VAL_META, space)
    assert list(a.front["number"]) == list(b.front["number"])
    assert list(a.regimes["number"]) == list(b.regimes["number"])
    assert list(a.budget_curves["label"].unique()) == list(b.budget_curves["label"].unique())
    cols = ["algorithm", "acc_diff_budget_matched", "share_front"]
    assert a.effects[cols].equals(b.effects[cols])
    assert a.interactions.equals(b.interactions)
    assert not a.regimes["accuracy"].equals(b.regimes["accuracy"])  # test is shown, it just never chooses


def test_recipe_provenance_names_both_accuracies(run_dir):
    _, _, space = load_run(run_dir)
    trials = val_trials()
    info = build_info(trials, VAL_META, space)
    # trial 6's point: label_smoothing at budget 1, seeds in trials 6, 28 and 29 (fake_run.CONFIRM_SEEDS)
    runs = trials.set_index("number").loc[[6, 28, 29]]
    val, test = runs["val_accuracy"], runs["accuracy"]
    half = 4.302652729911275 * val.std(ddof=1) / np.sqrt(3)  # Student t, 2 degrees of freedom
    text = info.recipe_for(6).yaml_text
    assert (f"over 3 seeds (mean +/- 95% CI half-width): val_accuracy {val.mean():.4f} +/- {half:.4f} (selected on), "
            f"test accuracy {test.mean():.4f} (held out)") in text
    assert "at val acc 0.9500" in text  # the recipe curve is compared on validation
