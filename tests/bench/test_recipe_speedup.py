"""bench/recipe_speedup.py: which recipes it replays (no training): the front and the baseline curve."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from bench.recipe_speedup_candidates import front_candidates, search_baselines

ROOT = Path(__file__).resolve().parents[2]


def _row(number: int, budget: float, acc: float, secs: float, baseline: bool, algorithms: str = "") -> dict:
    recipe = {"name": "r", "max_duration": 2, "budget": budget, "batch_size": 128,
              "optimizer": {"name": "sgd", "lr": 0.1, "weight_decay": 5e-4},
              "algorithms": {a: {} for a in algorithms.split("+") if a}}
    return {"number": number, "state": "COMPLETE", "is_baseline": baseline, "budget": budget,
            "accuracy": acc, "train_seconds": secs, "algorithms": algorithms, "recipe_json": json.dumps(recipe)}


@pytest.fixture
def trials() -> pd.DataFrame:
    return pd.DataFrame([
        _row(0, 0.25, 0.80, 30, True), _row(1, 0.5, 0.85, 60, True), _row(2, 1.0, 0.88, 120, True),
        _row(3, 2.0, 0.90, 240, True),
        _row(4, 0.5, 0.86, 40, False, "channels_last"),        # front
        _row(5, 0.5, 0.84, 50, False, "mixup"),                # dominated by 4
        _row(6, 1.0, 0.895, 90, False, "channels_last+ema"),   # front
        _row(7, 2.0, 0.91, 200, False, "ema"),                 # front
        _row(8, 0.25, 0.79, 20, False, "progressive_resizing"),  # front (fastest)
    ])


def test_front_candidates_are_the_best_speedups_and_the_most_accurate_front_point(trials):
    labels = [label for label, _ in front_candidates(trials)]
    # front: 8 (0.79 in 20 s: 0.5x baseline 0.80 in 30 s -> below_baseline bound 1.5x), 4 (0.86 in 40 s,
    # baseline reaches 0.86 at ~76 s: 1.9x), 6 (0.895 in 90 s, baseline ~202 s: 2.2x), 7 (the most
    # accurate, beyond the baseline: no speedup). MAX_CANDIDATES - 1 = 3 best speedups + 7, fastest first.
    assert [int(lbl.split(":")[0].split()[1]) for lbl in labels] == [8, 4, 6, 7]
    assert "baseline" not in " ".join(labels)


def test_front_candidates_keep_the_two_best_when_the_front_is_long(trials, monkeypatch):
    import bench.recipe_speedup_candidates as rs

    monkeypatch.setattr(rs, "MAX_CANDIDATES", 3)
    labels = [label for label, _ in rs.front_candidates(trials)]
    assert [int(lbl.split(":")[0].split()[1]) for lbl in labels] == [4, 6, 7]


def test_search_baselines_extends_the_curve_to_the_standalone_baseline_length_and_below(trials):
    curve = search_baselines(trials, baseline_epochs=10)
    assert list(curve) == [0.125, 0.25, 0.5, 1.0, 2.0, 5.0]   # 2 epochs per budget unit: 10 epochs = budget 5
    assert curve[5.0]["budget"] == 5.0 and curve[5.0]["algorithms"] == {}
    assert curve[0.125] == {**json.loads(trials.iloc[0]["recipe_json"]), "budget": 0.125}
    assert curve[0.5] == json.loads(trials.iloc[1]["recipe_json"])  # the search's own baseline recipe


def test_search_baselines_adds_no_long_point_when_the_search_already_trains_that_long(trials):
    assert list(search_baselines(trials, baseline_epochs=4)) == [0.125, 0.25, 0.5, 1.0, 2.0]
    assert search_baselines(trials[~trials.is_baseline], baseline_epochs=10) == {}


def test_a_bound_below_the_baseline_curve_does_not_meet_the_goal():
    from bench.recipe_speedup_analysis import analyse

    def run(arm, secs, acc, seed=0):
        return {"seed": seed, "arm": arm, "baseline": arm.startswith("baseline"), "accuracy": acc,
                "train_seconds": secs}

    runs = [run("baseline @ budget 0.5", 20, 0.80), run("baseline @ budget 1", 40, 0.85),
            run("fast", 5, 0.79),      # 4x faster than the shortest baseline run, but less accurate: a bound
            run("matched", 25, 0.84)]  # inside the curve: a measured speedup below 2x
    a = analyse(runs, ["fast", "matched"], n_seeds=1)
    assert a["rows"]["fast"]["status_on_medians"] == "below_baseline" and a["rows"]["fast"]["speedup_on_medians"] == 4
    assert a["rows"]["matched"]["status_on_medians"] == "interpolated"
    assert a["best_speedup_on_medians"] == a["rows"]["matched"]["speedup_on_medians"] < 2
    assert not a["goal_met"]


def test_the_best_measured_recipe_is_also_trained_at_the_long_budgets_the_search_never_tried(trials):
    from bench.recipe_speedup_candidates import longer_budget_arms

    arms = longer_budget_arms(trials, sorted(search_baselines(trials, baseline_epochs=10)))
    # trial 6 has the largest measured (interpolated) speedup; 8's is only a bound, 7 is beyond the curve.
    # The search's longest budget is 2, so the curve continues at the baseline's budgets 2 and 5.
    assert [label.split(":")[0] for label, _ in arms] == ["trial 6", "trial 6's recipe @ budget 2 (longer)",
                                                          "trial 6's recipe @ budget 5 (longer)"]
    assert [rec["budget"] for _, rec in arms] == [1.0, 2.0, 5.0]
    assert all(rec["algorithms"] == {"channels_last": {}, "ema": {}} for _, rec in arms)
    assert longer_budget_arms(trials[trials.is_baseline], [1.0, 2.0]) == []


@pytest.mark.parametrize("recipe, speedup, status", [
    # log time linear in accuracy between (5 s, 0.82) and (20 s, 0.94): 0.90 at 5 * 4^(2/3) = 12.60 s
    ([(5, 0.82), (20, 0.94)], 40 / (5 * 4 ** (2 / 3)), "interpolated"),
    ([(5, 0.95), (20, 0.96)], 8.0, "at_first"),          # its cheapest point already beats 0.90: a bound
    ([(5, 0.82), (20, 0.88)], math.nan, "not reached"),  # never gets there: not extrapolated
])
def test_curve_speedup_reads_the_time_to_the_final_baseline_accuracy_off_both_curves(recipe, speedup, status):
    from bench.recipe_speedup_analysis import speedup_at_final_accuracy

    out = speedup_at_final_accuracy([t for t, _ in recipe], [a for _, a in recipe], [10, 20, 40], [0.80, 0.85, 0.90])
    assert out["target_accuracy"] == 0.90 and out["baseline_time"] == pytest.approx(40)
    assert out["status"] == status
    assert out["speedup"] == pytest.approx(speedup, nan_ok=True)


def test_analyse_reports_the_curve_speedup_and_its_goal():
    from bench.recipe_speedup_analysis import analyse

    runs = [{"seed": 0, "arm": arm, "baseline": arm.startswith("baseline"), "accuracy": acc, "train_seconds": t}
            for arm, t, acc in [("baseline @ budget 1", 10, 0.80), ("baseline @ budget 2", 20, 0.85),
                                ("baseline @ budget 4", 40, 0.90), ("r", 5, 0.82), ("r @ 4", 20, 0.94)]]
    a = analyse(runs, ["r", "r @ 4"], n_seeds=1, curves={"r": ["r", "r @ 4"]})
    assert a["curves"]["r"]["speedup"] == pytest.approx(40 / (5 * 4 ** (2 / 3)))
    assert a["best_speedup_at_final_accuracy"] == pytest.approx(3.17, abs=0.01)
    assert a["goal_met_at_final_accuracy"]



def trial_numbers(candidates: list[tuple[str, dict]]) -> list[int]:
    return [int(label.split(":")[0].split()[1]) for label, _ in candidates]


def test_the_most_accurate_recipe_stays_a_candidate_when_a_baseline_run_beats_it(trials):
    from recipesearch.analysis import Objectives, frontier

    trials.loc[trials["number"] == 7, ["accuracy", "train_seconds"]] = [0.899, 250]  # baseline 3: 0.90 in 240 s
    assert 7 not in set(frontier(trials, Objectives()).front["number"])  # off the search's front,
    assert trial_numbers(front_candidates(trials)) == [8, 4, 6, 7]  # but on the recipes' own front


def test_candidates_are_picked_on_the_metric_the_search_selected_on(trials, tmp_path):
    from bench.recipe_speedup_candidates import search_objectives

    (tmp_path / "run.json").write_text(json.dumps({"objectives": ["accuracy", "train_seconds"],
                                                   "directions": ["maximize", "minimize"], "metric_split": "val"}))
    objectives = search_objectives(tmp_path)
    assert objectives.metric_split == "val" and search_objectives(tmp_path / "missing").metric_split == "test"
    # on val, trial 7 is dominated by 6, which becomes the most accurate recipe; its test accuracy is unchanged
    val = trials.assign(val_accuracy=trials["accuracy"])
    val.loc[val["number"] == 7, "val_accuracy"] = 0.85
    assert trial_numbers(front_candidates(val, objectives)) == [8, 4, 6]
    assert trial_numbers(front_candidates(val)) == [8, 4, 6, 7]


def test_the_newest_search_is_picked_by_its_trials_dates_not_by_file_times(tmp_path, monkeypatch):
    """A checkout or a copy (the lent GPU machine's) sets the files' times in no particular order."""
    import os

    import bench.recipe_speedup_candidates as rs

    for name, day, mtime in (("older", "2026-11-20", 2_000_000_000), ("newer", "2026-11-24", 1_000_000_000)):
        run = tmp_path / "reports" / "examples" / name
        run.mkdir(parents=True)
        df = pd.DataFrame([_row(0, 1.0, 0.9, 10, True)]).assign(datetime_start=f"{day} 10:00:00")
        df["recipe_json"] = [json.dumps({**json.loads(df["recipe_json"][0]), "data": {"name": "fashion_mnist"}})]
        df.to_csv(run / "trials.csv", index=False)
        os.utime(run / "trials.csv", (mtime, mtime))  # the older search's file looks newer
    monkeypatch.setattr(rs, "ROOT", tmp_path)
    found = rs.find_search_run("fashion_mnist")
    assert found is not None and found[0].name == "newer"
    assert rs.find_search_run("digits") is None


def _search_dir(root: Path, name: str, day: str, base: dict) -> Path:
    run = root / "reports" / "examples" / name
    run.mkdir(parents=True)
    rows = [_row(0, 1.0, 0.9, 10, True), _row(1, 1.0, 0.91, 8, False, "channels_last")]
    for r in rows:
        r["recipe_json"] = json.dumps({**json.loads(r["recipe_json"]), **base, "data": {"name": "fashion_mnist"}})
    pd.DataFrame(rows).assign(datetime_start=f"{day} 10:00:00").to_csv(run / "trials.csv", index=False)
    return run


def test_a_refining_search_is_measured_against_the_plain_baseline_of_an_earlier_one(tmp_path, monkeypatch):
    """search_spaces/fashion_mnist_long.yaml's base is the first search's recipe (Muon, eight methods): its own
    baseline trials are that recipe, not the plain baseline §5's speedups are stated against."""
    import bench.recipe_speedup_candidates as rs

    plain = _search_dir(tmp_path, "first", "2026-11-20", {})
    refined = {"optimizer": {"name": "muon", "lr": 0.2}, "algorithms": {"blurpool": {}}}
    _search_dir(tmp_path, "refine", "2026-11-24", refined)
    monkeypatch.setattr(rs, "ROOT", tmp_path)
    newest = rs.find_search_run("fashion_mnist")
    assert newest is not None and newest[0].name == "refine"
    base = rs.find_search_run("fashion_mnist", plain_base=True)
    assert base is not None and base[0].name == "first"
    assert rs.is_plain(json.loads(base[1]["recipe_json"].iloc[0]))
    assert not rs.is_plain(refined) and not rs.is_plain({"optimizer": {"name": "sgd"}, "algorithms": {"ema": {}}})
    assert rs.read_search_run(plain)[0] == plain.resolve()
    # which run's baselines §5, §8 and §10 use: the plain one, whichever search the candidates come from
    assert rs.baseline_run(newest, "fashion_mnist")[0].name == "first"
    assert rs.baseline_run(base, "fashion_mnist") is base
    assert rs.baseline_run(newest, "fashion_mnist", baseline_from=plain)[0] == plain.resolve()
    with pytest.raises(SystemExit, match="--baseline-from: .* has no trials.csv"):
        rs.read_search_run(tmp_path / "nowhere")


def test_without_a_confirmed_curve_the_best_confirmed_point_gives_its_recipe_at_every_budget_trained(
        trials, monkeypatch):
    """fashion_mnist_long confirmed a point (trial 28 at budget 2, 1.76x) but no curve: §5 still replays that
    recipe's whole curve, the budgets its confirmation trained and the baseline's longer ones."""
    from types import SimpleNamespace

    import bench.recipe_speedup_candidates as candidates
    from bench.recipe_speedup_candidates import confirmed_candidates

    recipe = {"name": "r", "max_duration": 2, "budget": 2.0, "algorithms": {"blurpool": {}}}
    f = SimpleNamespace(
        points=pd.DataFrame({"recipe_key": ["a", "a", "a", "b"], "budget": [2.0, 3.0, 4.0, 2.0]}),
        completed_trials=pd.DataFrame({"recipe_key": ["a", "b"], "number": [28, 29],
                                       "recipe_json": [json.dumps(recipe), json.dumps(recipe)]}))
    point = {"kind": "point", "recipe_key": "a", "number": 28, "algorithms": "blurpool", "budgets": [2.0],
             "speedup": 1.76, "ci": [1.09, 1.98], "target": 0.9167}
    slower = {**point, "recipe_key": "b", "number": 29, "speedup": 1.2}
    monkeypatch.setattr(candidates, "search_claims", lambda run_dir: (f, [slower, point]))
    cands, curves = confirmed_candidates(Path("run"), trials, [0.5, 1.0, 2.0, 5.0])
    assert [label for label, _ in cands][:4] == [f"trial 28's recipe @ budget {b}" for b in ("2", "3", "4", "5")]
    assert [rec["budget"] for _, rec in cands][:4] == [2.0, 3.0, 4.0, 5.0]
    (name, labels), = curves.items()
    assert "confirmed 1.76x at budget 2 [1.09–1.98]" in name and len(labels) == 4
    monkeypatch.setattr(candidates, "search_claims", lambda run_dir: (f, []))
    assert confirmed_candidates(Path("run"), trials, [5.0]) == ([], {})


def test_precision_is_set_on_every_arm_the_baseline_included(monkeypatch):
    """A strong baseline has mixed precision where the machine runs it faster (bf16 on a CPU with AMX)."""
    import bench.recipe_speedup as bench

    trained = []

    def fake_fit(data, source):
        trained.append(data)
        budget = float(data.get("budget", 1.0))
        return {"accuracy": 0.8 + 0.01 * budget + 0.001 * len(data.get("algorithms", {})),
                "train_seconds": 10.0 * budget, "throughput": 1.0}

    monkeypatch.setattr(bench, "fit_or_nan", fake_fit)
    monkeypatch.setattr(bench, "environment", dict)
    res = bench.run(quick=True, seeds=1, hand=True, precision="bf16")
    assert res["precision"] == "bf16" and "every arm at bf16" in bench.render(res)
    assert any(run["baseline"] for run in res["runs"]) and any(not run["baseline"] for run in res["runs"])
    assert len(trained) == len(res["runs"]) and {d["precision"] for d in trained} == {"bf16"}
    trained.clear()
    bench.run(quick=True, seeds=1, hand=True)
    assert {d.get("precision") for d in trained} == {"fp32"}  # without it, each recipe's own (digits_baseline.yaml)
    trained.clear()
    res = bench.run(quick=True, seeds=1, hand=True, baseline_precision="bf16")
    by_arm = {run["arm"]: d.get("precision") for run, d in zip(res["runs"], trained)}
    assert {p for arm, p in by_arm.items() if arm.startswith("baseline")} == {"bf16"}
    assert {p for arm, p in by_arm.items() if not arm.startswith("baseline")} == {"fp32"}
    assert "the baseline at bf16 (--baseline-precision)" in bench.render(res)
