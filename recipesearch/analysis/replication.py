"""Replication of a search's claims on fresh seeds: which runs to train, in what order, and how they score.

A *claim* is a speedup the search reported: a recipe curve over budgets against the baseline's curve, or a
single front point at one budget on the baseline's curve (``analysis.frontier``), each with the bootstrap
interval over seeds it was reported with. Replicating it means training the recipe at the claim's budgets
and the baseline at all of its budgets again, with seeds the search never used, on the machine that will
train it, and measuring the speedup again:

- the *plan* (``plan_runs``) interleaves the arms: seed by seed, and within a seed budget by budget, the
  arms of that budget in an order rotated from one (seed, budget) to the next. Runs that sit next to each
  other in the queue run side by side or one after the other, so a change of the machine's speed (another
  job, a throttled CPU) falls on baseline and recipes alike instead of on whichever arm ran during it;
- the *score* (``score_claims``) is the same curve-vs-curve speedup, with a bootstrap interval over the fresh
  seeds, on **test** (the split the search never chose on) and on validation; a claim is *inside* when
  the fresh test speedup lies in the interval the search reported.

Pure pandas/numpy over the frontier's tables and a long table of fresh runs (one row per run: ``arm``,
``budget``, ``seed_index``, accuracies, ``train_seconds``), so it is tested on hand-made tables.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from recipesearch.analysis.recipe_keys import BASELINE_KEY
from recipesearch.analysis.seeds import DEFAULT_CONFIDENCE
from recipesearch.analysis.speedup_bootstrap import bootstrap_curve_speedup

if TYPE_CHECKING:
    from recipesearch.analysis.frontier import Frontier

BASELINE_ARM = BASELINE_KEY  # the arm of every baseline run: the frontier's recipe key of the baseline
CLAIM_SETS = ("headline", "confirmed", "all")
FRESH_SEED_OFFSET = 1000  # fresh seed indices start here: a search uses 0, 1, 2 ...
N_BOOT = 1000
# replication.csv, one row per claim, in this order
CLAIM_COLUMNS = ("kind", "number", "algorithms", "budgets", "headline", "confirmed", "reported_speedup",
                 "reported_ci_low", "reported_ci_high", "fresh_speedup", "fresh_ci_low", "fresh_ci_high",
                 "fresh_speedup_val", "fresh_status", "inside", "fresh_seeds", "fresh_runs", "hardware",
                 "cpu_share_recipe", "cpu_share_baseline", "load_1m", "recipe_key")  # fmt: skip


@dataclass(frozen=True)
class Claim:
    """One speedup the search reported (on its selection metric), and what retraining it needs."""

    kind: str  # "curve" (a recipe's curve over budgets) or "point" (one budget of a recipe on the front)
    recipe_key: str
    number: int  # the trial whose recipe it is (a curve: its first trial)
    algorithms: str
    budgets: tuple[float, ...]  # the recipe's budgets the claim rests on
    speedup: float
    ci_low: float
    ci_high: float
    target: float  # the accuracy the reported speedup was measured at (selection metric)
    confirmed: bool
    headline: bool = False

    @property
    def label(self) -> str:
        budget = f" at budget {self.budgets[0]:g}" if self.kind == "point" else ""
        return f"{self.kind} of trial {self.number}{budget}"


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def claims_of(f: Frontier, which: str = "confirmed") -> list[Claim]:
    """The claims of a frontier: ``headline`` (the headline curve, or its front point when no curve is
    confirmed), ``confirmed`` (every recipe curve and front point whose interval is above 1), ``all`` (every
    recipe curve and every front point with a measured speedup)."""
    if which not in CLAIM_SETS:
        raise ValueError(f"claims must be one of {', '.join(CLAIM_SETS)}, not {which!r}")
    h = f.headline
    out: list[Claim] = []
    for _, r in f.recipes.iterrows():
        if which != "all" and not bool(r["confirmed"]):
            continue
        mine = f.points[f.points["recipe_key"] == r["recipe_key"]]
        out.append(Claim("curve", str(r["recipe_key"]), int(r["number"]), str(r["algorithms"] or ""),
                         tuple(sorted(float(b) for b in mine["budget"])), _float(r["speedup"]),
                         _float(r["speedup_ci_low"]), _float(r["speedup_ci_high"]), _float(r["target_accuracy"]),
                         bool(r["confirmed"]), headline=h.number is not None and int(r["number"]) == h.number))
    front = f.front[~f.front["is_baseline"].astype(bool)] if len(f.front) else f.front
    for _, p in front.iterrows():
        confirmed = bool(p.get("confirmed", False))
        if (which != "all" and not confirmed) or not np.isfinite(_float(p["speedup"])):
            continue
        out.append(Claim("point", str(p["recipe_key"]), int(p["number"]), str(p["algorithms"] or ""),
                         (float(p["budget"]),), _float(p["speedup"]), _float(p.get("speedup_ci_low")),
                         _float(p.get("speedup_ci_high")), _float(p[f.metric]), confirmed))
    if which == "headline":
        curves = [c for c in out if c.headline]
        if curves:
            return curves[:1]
        # no confirmed curve: the headline is the front's largest confirmed point speedup, if any
        points = sorted((c for c in out if c.kind == "point"), key=lambda c: -c.speedup)
        return points[:1]
    return out


@dataclass(frozen=True)
class PlannedRun:
    arm: str  # the recipe_key it retrains, or BASELINE_ARM
    number: int  # the trial whose recipe it is
    budget: float
    seed_index: int  # FRESH_SEED_OFFSET + k: never one of the search's seed indices

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_runs(claims: Sequence[Claim], baseline_budgets: Sequence[float], baseline_number: int, seeds: int,
              first_seed: int = FRESH_SEED_OFFSET) -> list[PlannedRun]:
    """The fresh runs the claims need, interleaved (module docstring): the baseline at every budget of its
    curve, each claimed recipe at the budgets its claims rest on, ``seeds`` fresh seeds each."""
    if seeds < 1:
        raise ValueError(f"seeds must be at least 1, got {seeds}")
    need: dict[float, list[tuple[str, int]]] = {}
    for b in baseline_budgets:
        need.setdefault(float(b), []).append((BASELINE_ARM, int(baseline_number)))
    for c in claims:
        for b in c.budgets:
            arms = need.setdefault(float(b), [])
            if all(key != c.recipe_key for key, _ in arms):
                arms.append((c.recipe_key, c.number))
    runs: list[PlannedRun] = []
    for k in range(seeds):
        for i, budget in enumerate(sorted(need)):
            arms = need[budget]
            turn = (k + i) % len(arms)
            for key, number in arms[turn:] + arms[:turn]:
                runs.append(PlannedRun(key, number, budget, first_seed + k))
    return runs


def _mean(values: pd.Series) -> float:
    v = pd.to_numeric(values, errors="coerce").astype(float)
    v = v[np.isfinite(v)]
    return float(v.mean()) if len(v) else math.nan


def score_claims(claims: Sequence[Claim], runs: pd.DataFrame, confidence: float = DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """One row per claim (``CLAIM_COLUMNS``): the fresh speedup on test with its bootstrap interval over the
    fresh seeds, on validation, inside the reported interval or not, and the conditions it was measured in.

    ``runs``: the finished fresh runs, one row each: ``arm``, ``budget``, ``seed_index``, ``accuracy`` (test),
    ``val_accuracy``, ``train_seconds``, and where known ``hardware``, ``cpu_share``, ``load_start``."""
    rows = []
    ok = runs.copy()
    if len(ok):
        ok["train_seconds"] = pd.to_numeric(ok["train_seconds"], errors="coerce").astype(float)
        ok = ok[np.isfinite(ok["train_seconds"]) & (ok["train_seconds"] > 0)]
    base = ok[ok["arm"] == BASELINE_ARM] if len(ok) else ok
    for c in claims:
        mine = ok[(ok["arm"] == c.recipe_key) & ok["budget"].astype(float).isin(c.budgets)] if len(ok) else ok
        fresh = {"fresh_speedup": math.nan, "fresh_ci_low": math.nan, "fresh_ci_high": math.nan,
                 "fresh_speedup_val": math.nan, "fresh_status": "no runs"}
        if len(mine) and len(base):
            test = bootstrap_curve_speedup(mine, base, n_boot=N_BOOT, confidence=confidence, rng=0, acc_col="accuracy")
            fresh.update(fresh_speedup=test.speedup, fresh_ci_low=test.ci_low, fresh_ci_high=test.ci_high,
                         fresh_status=test.status)
            if "val_accuracy" in mine and mine["val_accuracy"].notna().any():
                val = bootstrap_curve_speedup(mine, base, n_boot=1, confidence=confidence, rng=0,
                                              acc_col="val_accuracy")
                fresh["fresh_speedup_val"] = val.speedup
        speedup = fresh["fresh_speedup"]
        inside = bool(np.isfinite(speedup) and np.isfinite(c.ci_low) and np.isfinite(c.ci_high)
                      and c.ci_low <= speedup <= c.ci_high)
        both = pd.concat([mine, base]) if len(mine) else base
        hardware = sorted({str(h) for h in both.get("hardware", pd.Series(dtype=str)).dropna() if str(h)})
        rows.append({
            "kind": c.kind, "number": c.number, "algorithms": c.algorithms,
            "budgets": " ".join(f"{b:g}" for b in c.budgets), "headline": c.headline, "confirmed": c.confirmed,
            "reported_speedup": c.speedup, "reported_ci_low": c.ci_low, "reported_ci_high": c.ci_high, **fresh,
            "inside": inside,
            "fresh_seeds": int(mine.groupby("budget")["seed_index"].nunique().min()) if len(mine) else 0,
            "fresh_runs": int(len(mine)), "hardware": "; ".join(hardware),
            "cpu_share_recipe": _mean(mine["cpu_share"]) if "cpu_share" in mine else math.nan,
            "cpu_share_baseline": _mean(base["cpu_share"]) if "cpu_share" in base else math.nan,
            "load_1m": _mean(both["load_start"]) if "load_start" in both else math.nan,
            "recipe_key": c.recipe_key,
        })  # fmt: skip
    return pd.DataFrame(rows, columns=list(CLAIM_COLUMNS))


def inside_share(scored: pd.DataFrame) -> float:
    """Share of the claims whose fresh test speedup lies inside the interval the search reported."""
    measurable = scored[np.isfinite(scored["reported_ci_low"].astype(float))] if len(scored) else scored
    return float(measurable["inside"].astype(bool).mean()) if len(measurable) else math.nan
