"""recipesearch/report/notes.py: the report's one-line notes, on hand-made trials."""
from __future__ import annotations

import math

import pandas as pd

from recipesearch.report.notes import early_note, repeats_note


def test_the_repeats_note_counts_the_repeated_proposals_and_the_training_they_spared():
    df = pd.DataFrame({"number": [0, 1, 2, 3], "stage": ["baseline", "search", "search", "search"],
                       "state": ["COMPLETE", "COMPLETE", "PRUNED", "PRUNED"],
                       "train_seconds": [4.0, 2.5, 0.0, 0.0], "duplicate_of": [math.nan, math.nan, 0, 1]})
    note = repeats_note(df)
    assert note.startswith("repeats: 2 of 3 proposals asked for a recipe already trained") and "~6 s" in note
    assert repeats_note(df.assign(duplicate_of=math.nan)) is None
    assert repeats_note(df.drop(columns="duplicate_of")) is None  # a run from before the column


def test_the_early_note_names_the_candidates_confirmed_early_and_a_stop_at_the_first_claim():
    assert early_note({}) is None and early_note({"confirmation": {"early": []}}) is None
    meta = {"confirmation": {"early": [12, 30], "stopped_at_claim": None}}
    assert early_note(meta).startswith("early confirmation: trial(s) 12, 30 reached the target")
    assert "stopped" not in early_note(meta)
    meta["confirmation"]["stopped_at_claim"] = 12
    assert "the search stopped once trial 12's claim stood (confirm.stop_at_claim)" in early_note(meta)
