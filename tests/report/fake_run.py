"""A hand-made search run directory following the trials.csv contract (docs/ARCHITECTURE.md).

Numbers are chosen so that the expected frontier, speedups and headline can be worked out by hand:
the baseline runs at budgets 0.25 / 0.5 / 1 / 2 take 2 / 4 / 8 / 16 s and reach 90 / 93 / 95 / 96 %.

``SEARCH_ROWS`` is the run before confirmation: one seed per trial (baseline and proposals), so nothing
is confirmed and the front is made of single runs. ``CONFIRM_ROWS`` completes it the way a search with
``baseline: {seeds: 3}`` and a confirmation stage does: seeds 1 and 2 of the baseline at every budget
(stage "baseline") and of the label_smoothing recipe of trials 4 / 6 / 7 at budgets 0.5 / 1 / 2 (stage
"confirm", ``of_trial`` 6). Their seeds straddle seed 0 symmetrically (accuracy -/+ 0.002, time -/+ 1/16
of it, sums exact in binary for the times), so every seed mean equals the seed-0 run:

- baseline points (seconds, accuracy): (2, .90) (4, .93) (8, .95) (16, .96); recipe (4, .95) (7, .962)
  (15, .97). Eligible once a recipe is repeated: those 7 points; the front is baseline 0.25 (trial 0) and
  the recipe's three points (trials 4, 6, 7).
- the recipe's curve against the baseline's, at the target (the baseline at budget 1: .95): the baseline
  needs 8 s, the recipe 4 s (its shortest point), so the curve speedup is 2x; its seeds are tight, so the
  bootstrap interval lies above 1: confirmed. (At the highest accuracy both reach, .96, it would be
  4 / 1.75**(5/6) = 2.509x: a speedup the headline does not claim, at an accuracy above the target.)
- the two other recipes trained at several budgets (channels_last; channels_last + label_smoothing)
  have one seed per budget: curves, but never confirmed.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from recipesearch.recipe import recipe_from_dict

EVIL = "<script>alert(1)</script>"
SPACE_NAME = f"digits {EVIL} space"
SPACE_HASH = "0123abcd4567"

BASE: dict[str, Any] = {  # tests/conftest.py's make_recipe base
    "model": {"name": "cnn", "width": 8},
    "data": {"name": "digits"},
    "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 5e-4},
    "schedule": {"name": "cosine", "warmup_epochs": 0.2},
    "max_duration": 1,
    "batch_size": 64,
    "seed": 0,
    "threads": 1,
    "device": "cpu",
    "algorithms": {},
}

# (number, state, is_baseline, budget, algorithms {name: params}, lr, accuracy, seconds, throughput, data_wait, error
#  [, seed, stage, of_trial]): seed 0, stage "baseline" / "search" and no of_trial unless given
LS, CL = "label_smoothing", "channels_last"
SEARCH_ROWS = [
    (0, "COMPLETE", True, 0.25, {}, 0.05, 0.90, 2.0, 5000, 0.05, ""),
    (1, "COMPLETE", True, 0.5, {}, 0.05, 0.93, 4.0, 5000, 0.05, ""),
    (2, "COMPLETE", True, 1.0, {}, 0.05, 0.95, 8.0, 5000, 0.05, ""),
    (3, "COMPLETE", True, 2.0, {}, 0.05, 0.96, 16.0, 5000, 0.05, ""),
    (4, "COMPLETE", False, 0.5, {LS: {"smoothing": 0.1}}, 0.05, 0.95, 4.0, 4900, 0.06, ""),  # speedup 2.0
    (5, "COMPLETE", False, 0.5, {LS: {"smoothing": 0.2}}, 0.1, 0.945, 3.0, 5100, 0.05, ""),  # 4*2**0.75/3
    (6, "COMPLETE", False, 1.0, {LS: {"smoothing": 0.1}}, 0.05, 0.962, 7.0, 4800, 0.30, ""),  # beyond the baseline
    (7, "COMPLETE", False, 2.0, {LS: {"smoothing": 0.1}}, 0.05, 0.97, 15.0, 4800, 0.05, ""),  # beyond baseline
    (8, "COMPLETE", False, 0.25, {CL: {}}, 0.05, 0.88, 1.5, 6000, 0.02, ""),  # below the baseline's range
    (9, "COMPLETE", False, 0.25, {CL: {}, LS: {"smoothing": 0.1}}, 0.05, 0.91, 2.0, 5900, 0.02, ""),  # dominates 0
    (10, "COMPLETE", False, 1.0, {CL: {}}, 0.05, 0.94, 7.5, 6000, 0.02, ""),  # dominated by 4
    (11, "COMPLETE", False, 1.0, {CL: {}, LS: {"smoothing": 0.1}}, 0.05, 0.955, 6.0, 5900, 0.02, ""),
    (12, "COMPLETE", False, 0.5, {CL: {}, LS: {"smoothing": 0.1}}, 0.05, 0.95, 4.0, 5900, 0.02, ""),  # dup of 4
    (13, "COMPLETE", False, 2.0, {CL: {}}, 0.05, 0.958, 14.0, 6000, 0.02, ""),
    (14, "FAIL", False, 1.0, {LS: {"smoothing": 0.3}}, 50.0, None, None, None, None,
     f"DivergenceError: diverged: loss is nan at step 3 with <b>label_smoothing</b> & {EVIL}"),
    (15, "FAIL", False, 0.5, {CL: {}}, 0.05, None, 1.2, None, None, "RuntimeError: out of memory"),
    (16, "RUNNING", False, 2.0, {CL: {}}, 0.05, None, None, None, None, ""),
    (17, "COMPLETE", False, 2.0, {CL: {}, LS: {"smoothing": 0.1}}, 0.05, 0.965, 13.0, 5900, 0.02, ""),
]  # fmt: skip


def _seeds(start: int, stage: str, base: bool, algos: dict, of_trial: int | None,
           points: list[tuple[float, float, float]]) -> list[tuple]:
    """Seeds 1 and 2 of (budget, accuracy, seconds): accuracy -/+ 0.002, seconds -/+ 1/16 of it."""
    rows = []
    for budget, acc, secs in points:
        for seed, sign in ((1, -1), (2, 1)):
            rows.append((start + len(rows), "COMPLETE", base, budget, algos, 0.05, round(acc + sign * 0.002, 4),
                         secs * (1 + sign / 16), 5000 if base else 4800, 0.05, "", seed, stage, of_trial))
    return rows


BASELINE_SEEDS = _seeds(18, "baseline", True, {}, None, [(0.25, 0.90, 2.0), (0.5, 0.93, 4.0), (1.0, 0.95, 8.0),
                                                          (2.0, 0.96, 16.0)])  # trials 18-25
CONFIRM_SEEDS = _seeds(26, "confirm", False, {LS: {"smoothing": 0.1}}, 6,
                       [(0.5, 0.95, 4.0), (1.0, 0.962, 7.0), (2.0, 0.97, 15.0)])  # trials 26-31
CONFIRM_ROWS = BASELINE_SEEDS + CONFIRM_SEEDS
ROWS = SEARCH_ROWS + CONFIRM_ROWS
CONFIRMED_NUMBER = 4  # the recipe's first trial: what the frontier names its curve by
CURVE_SPEEDUP = 8 / 4  # 2x at the target, see the module docstring


def recipe_dict(budget: float, algorithms: dict[str, dict[str, Any]], lr: float, seed: int = 0) -> dict[str, Any]:
    data = json.loads(json.dumps(BASE))
    data.update(budget=budget, algorithms=algorithms, seed=seed)
    data["optimizer"]["lr"] = lr
    return recipe_from_dict(data).to_dict()


EVAL_SHARE = 0.125  # each run's final evaluation, as a share of its training time


def trials_frame(rows=ROWS) -> pd.DataFrame:
    records = []
    for row in rows:
        number, state, base, budget, algos, lr, acc, secs, thr, wait, err = row[:11]
        seed, stage, of_trial = row[11:] if len(row) > 11 else (0, "baseline" if base else "search", None)
        recipe = recipe_from_dict(recipe_dict(budget, algos, lr, seed))
        records.append({
            "number": number, "state": state, "is_baseline": base, "budget": budget,
            "epochs": BASE["max_duration"] * budget, "algorithms": "+".join(sorted(algos)),
            "params_optimizer.lr": lr,
            "params_label_smoothing.smoothing": algos.get(LS, {}).get("smoothing"),
            "accuracy": acc, "val_accuracy": acc, "loss": None if acc is None else 1 - acc,
            "train_seconds": secs, "throughput": thr, "data_wait_fraction": wait, "cost": None,
            "eval_seconds": None if secs is None else EVAL_SHARE * secs,
            "recipe_id": recipe.id(), "recipe_json": json.dumps(recipe.to_dict()), "error": err,
            "datetime_start": f"2025-01-01 00:00:{number:02d}", "datetime_complete": "", "seed": seed,
            "stage": stage, "of_trial": of_trial,
        })  # fmt: skip
    return pd.DataFrame(records)


SPACE_YAML = f"""\
name: "{SPACE_NAME}"
base: recipes/digits_baseline.yaml
budgets: [0.25, 0.5, 1, 2]
algorithms:
  label_smoothing: {{smoothing: [0.05, 0.3]}}
  channels_last: {{}}
"""


def write_run_dir(path: Path, trials: pd.DataFrame | None = None, meta: dict[str, Any] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (trials_frame() if trials is None else trials).to_csv(path / "trials.csv", index=False)
    run_meta = {
        "command": ["recipesearch", "search", "space.yaml", "--out", str(path)],
        "space_hash": SPACE_HASH,
        "start_time": "2025-01-01T00:00:00",
        "end_time": "2025-01-01T00:05:00",
        "hardware": {"cpu": "Test CPU <i>fast</i>", "cpu_count": 2, "gpu": None},
        "versions": {"python": "3.11", "recipesearch": "0.1.0", "torch": "2.14.1"},
    }
    (path / "run.json").write_text(json.dumps(run_meta if meta is None else meta))
    (path / "space.yaml").write_text(SPACE_YAML)
    return path
