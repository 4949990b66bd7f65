"""recipesearch/analysis/first_claim.py: what a search had cost when its first claim at the target stood, replayed
from a plain trials table in the order its runs finished."""
from __future__ import annotations

import pandas as pd
import pytest

from recipesearch.analysis import Objectives, frontier
from recipesearch.analysis.first_claim import first_claim

VAL = Objectives(("accuracy", "train_seconds"), ("maximize", "minimize"), "val")
BASE = {0.25: (1.0, 0.80), 0.5: (2.0, 0.85), 1.0: (4.0, 0.90)}  # budget: (seconds, val accuracy); target 0.90
FAST = {0.25: (0.5, 0.85), 0.5: (1.0, 0.91)}  # reaches the target at budget 0.5, 4x faster


def run(stage: str, key: str, budget: float, secs: float, acc: float, seed: int) -> dict:
    return {"state": "COMPLETE", "stage": stage, "is_baseline": key == "baseline", "budget": budget,
            "algorithms": "" if key == "baseline" else key, "recipe_key": key, "val_accuracy": acc,
            "accuracy": acc - 0.02, "train_seconds": secs, "seed": seed}


def search() -> pd.DataFrame:
    noise = (-0.004, 0.0, 0.004)
    rows = [run("baseline", "baseline", b, s * (1 + n), a + n, k) for b, (s, a) in BASE.items()
            for k, n in enumerate(noise)]
    rows.append(run("search", "fast", 0.5, 1.0, 0.91, 0))  # the proposal
    rows += [run("search", f"other{i}", 0.25, 1.0, 0.70, 0) for i in range(3)]
    rows += [run("confirm", "fast", b, s * (1 + n), a + n, k) for k, n in enumerate(noise) for b, (s, a)
             in FAST.items() if (b, k) != (0.5, 0)]
    rows.append(run("search", "late", 1.0, 4.0, 0.75, 0))
    table = pd.DataFrame(rows)
    table["number"] = range(len(table))
    table["datetime_complete"] = pd.Timestamp("2026-11-28") + pd.to_timedelta(range(len(table)), unit="s")
    return table


def test_the_first_claim_is_where_a_prefix_of_the_finished_runs_first_confirms_the_headline():
    table = search()
    got = first_claim(table, VAL)
    assert got is not None and "confirmed: trial" in got.verdict
    i = int(table.index[table["number"] == got.number][0])
    assert table.loc[i, "stage"] == "confirm" and i < len(table) - 1  # before the search's last run
    before, at = frontier(table.iloc[:i], VAL).headline, frontier(table.iloc[: i + 1], VAL).headline
    assert not (before.confirmed and before.n_seeds >= 3) and at.confirmed and at.n_seeds == 3
    # on 2 seeds a budget the headline may look confirmed sooner; a claim counts once the confirmation's 3 are in
    sooner = first_claim(table, VAL, min_seeds=2)
    assert sooner.trainings <= got.trainings and first_claim(table, VAL, min_seeds=4) is None
    assert got.trainings == pytest.approx(table["train_seconds"].iloc[: i + 1].sum() / 4.0)  # unit: 4 s at budget 1


def test_the_order_is_the_order_runs_finished_in_and_no_claim_is_none():
    table = search()
    last = table.index[-1]  # the late proposal finished first of all: it counts towards the cost
    table.loc[last, "datetime_complete"] = pd.Timestamp("2026-11-27")
    before, after = first_claim(search(), VAL), first_claim(table, VAL)
    assert after.number == before.number and after.trainings == pytest.approx(before.trainings + 4.0 / 4.0)
    assert first_claim(table[table["stage"] != "confirm"], VAL) is None
    assert first_claim(table.iloc[:0], VAL) is None
