"""bench/replication.py: the confirmed claims of a run are retrained with fresh seeds and judged on test."""
from __future__ import annotations

import json
import math

import pandas as pd

from bench.replication import SEED_OFFSET, claim_rows, claims, render, replicate, summarise
from recipesearch.recipe import recipe_from_dict

BASE = {"model": {"name": "cnn", "width": 8}, "data": {"name": "digits", "val_fraction": 0.1},
        "optimizer": {"name": "sgd", "lr": 0.05}, "max_duration": 1, "seed": 0, "device": "cpu", "algorithms": {}}
CURVES = {  # recipe: {budget: (seconds, val accuracy)}; the recipe is 2x faster at every accuracy
    "": {0.5: (2.0, 0.85), 1.0: (4.0, 0.90)},
    "label_smoothing": {0.5: (1.0, 0.85), 1.0: (2.0, 0.90)},
}


def write_run(tmp_path):
    rows = []
    for algos, curve in CURVES.items():
        for budget, (secs, acc) in curve.items():
            for k, noise in enumerate((-0.002, 0.0, 0.002)):
                recipe = dict(BASE, budget=budget, seed=k,
                              algorithms={algos: {"smoothing": 0.1}} if algos else {})
                rows.append({"number": len(rows), "state": "COMPLETE", "is_baseline": not algos, "budget": budget,
                             "algorithms": algos, "params_alg.label_smoothing": bool(algos),
                             "val_accuracy": acc + noise, "accuracy": acc - 0.01 + noise,
                             "train_seconds": secs * (1 + noise), "seed": k, "stage": "baseline" if not algos
                             else ("search" if k == 0 else "confirm"),
                             "recipe_json": json.dumps(recipe_from_dict(recipe).to_dict())})
    pd.DataFrame(rows).to_csv(tmp_path / "trials.csv", index=False)
    (tmp_path / "run.json").write_text(json.dumps({"space_name": "tiny", "metric_split": "val",
                                                   "objectives": ["accuracy", "train_seconds"]}))
    return tmp_path


def test_claims_are_the_confirmed_curve_and_points(tmp_path):
    f, found = claims(write_run(tmp_path))
    assert f.headline.confirmed
    curve = [c for c in found if c["kind"] == "curve"]
    assert len(curve) == 1 and curve[0]["budgets"] == [0.5, 1.0] and curve[0]["ci"][0] > 1


def test_fresh_seeds_are_new_and_the_verdict_is_on_test(tmp_path):
    run = write_run(tmp_path)
    seen = []

    def fake_train(jobs):
        out = []
        for job in jobs:
            seen.append(job)
            secs, acc = CURVES["label_smoothing" if job["claim_key"] != "baseline" else ""][job["budget"]]
            slow = 1.9 if job["claim_key"] != "baseline" else 1.0  # fresh seeds: barely faster than baseline
            out.append({"claim_key": job["claim_key"], "budget": job["budget"], "seed": job["seed"],
                        "accuracy": acc - 0.01, "val_accuracy": acc, "train_seconds": secs * slow, "error": None})
        return out

    result = replicate(run, seeds=3, train=fake_train)
    assert {j["seed"] for j in seen} == {SEED_OFFSET, SEED_OFFSET + 1, SEED_OFFSET + 2}  # never a search seed
    assert {j["recipe"]["seed"] for j in seen} == {j["seed"] for j in seen}
    curve = next(c for c in result["claims"] if c["kind"] == "curve")
    assert math.isclose(curve["fresh_speedup_test"], 2.0 / 1.9, rel_tol=1e-6)
    assert not curve["inside"]  # 1.05x is below the reported interval
    assert result["confirm_share"] > 0 and result["headline"]["fresh_speedup_test"] == curve["fresh_speedup_test"]
    curve_row, = (r for r in claim_rows(result) if r[0] == "curve")
    assert curve_row[5] == "1.05x" and curve_row[-1] == "no"  # fresh test speedup, not inside
    summary = summarise({"searches": [result]})
    assert summary["inside_share"] == 0 and not summary["goal_met"]  # none inside: the goal is not met
    assert "| claim | trial |" in render(summary)
