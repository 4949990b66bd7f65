"""bench/sequential_confirmation.py on a small made-up null table: a rule's decision per draw, the rates, the render."""
from __future__ import annotations

import numpy as np
import pandas as pd

from bench import sequential_confirmation as sc


def table(seeds: int = 10) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [{"budget": b, "seed": s, "val_accuracy": 0.80 + 0.05 * np.log2(b * 4) + rng.normal(0, 0.004),
             "accuracy": 0.0, "train_seconds": 4.0 * b * (1 + rng.normal(0, 0.02))}
            for s in range(seeds) for b in sc.BUDGETS]
    return pd.DataFrame(rows)


def test_a_much_faster_candidate_is_confirmed_at_the_first_look_and_a_null_one_is_not():
    t = table()
    confirmed, seeds = sc.apply_rule(t, [0, 1, 2], [3, 4, 5, 6], 3, 4, factor=3.0)
    assert confirmed and seeds == 3  # settled at the first look: no 4th seed
    confirmed, seeds = sc.apply_rule(t, [0, 1, 2], [3, 4, 5, 6], 3, 3, factor=1.0)
    assert not confirmed and seeds == 3


def test_as_searched_confirms_a_much_faster_candidate_on_its_two_budgets_and_not_a_null_one():
    t = table()
    # open on 3 seeds (Student-t wide): its seeds at budget 1 pass the target, but too many of its replicates there
    # fall short of it, more than a 4th seed would mend (next_budget_needed), so budget 2 with its 3 seeds, which
    # confirms it; were it open on time alone, a 4th seed at 0.5 and 1
    from recipesearch.analysis.sequential import measure, next_budget_needed

    runs = t[t["seed"].isin([3, 4, 5]) & t["budget"].isin([0.5, 1.0])].assign(
        train_seconds=lambda d: d["train_seconds"] / 3.0)
    base = t[t["seed"].isin([0, 1, 2]) & (t["budget"].isin([0.5, 1.0]) | ((t["budget"] == 0.25) & (t["seed"] == 0)))]
    target = float(base[base["budget"] == 1.0]["val_accuracy"].mean())
    assert (runs[runs["budget"] == 1.0]["val_accuracy"] > target).all()
    top = runs[runs["budget"] == 1.0]["val_accuracy"].to_numpy()
    assert next_budget_needed(measure(runs, base, target, "val_accuracy"), top, target)
    assert sc.as_searched(t, [0, 1, 2], [3, 4, 5, 6], factor=3.0) == (True, 3)
    confirmed, seeds = sc.as_searched(t, [0, 1, 2], [3, 4, 5, 6], factor=1.0)
    assert not confirmed and seeds in (3, 4)


def test_simulate_and_render():
    result = {"table": "t.csv", "table_runs": 40, "table_seeds": 10,
              "rows": sc.simulate(table(), draws=2)}
    assert len(result["rows"]) == len(sc.FACTORS) * len(sc.RULES)
    for row in result["rows"]:
        assert 0 <= row["confirmed"] <= 2 and row["rate_ci"][0] <= row["rate"] <= row["rate_ci"][1]
        first, last = sc.RULES[row["rule"]] or (3, 4)
        assert first <= row["mean_seeds"] <= last
    text = sc.render(result)
    assert "| null (the baseline) | fixed 3 |" in text and "**Goal**" in text
