"""What each speed-up method did in a search: marginal effects, pairwise interactions, regime picks.

Works on a DataFrame following the trials.csv contract (docs/ARCHITECTURE.md): ``algorithms`` is the
sorted '+'-joined method names ('' or NaN for none), plus ``state``, ``budget``, ``accuracy``,
``val_accuracy``, ``train_seconds``, ``throughput``. Only COMPLETE trials with a finite metric are analysed.

*metric* (every function's ``metric`` argument) is the accuracy column the search selected on:
``val_accuracy`` for a search that selected on validation (``analysis.frontier``'s ``Frontier.metric``).
Effects, interactions and regime picks choose and rank, so they must read it, never the held-out test
``accuracy`` (which would leak the test set into what the report recommends). The default stays
``accuracy`` for callers written before the validation split.

Accuracy comparisons are *budget-matched*: the budget dominates accuracy, and methods are not sampled
evenly across budgets, so "mean with - mean without" over all trials mostly measures which budgets the
method happened to be tried at. Matched differences are taken within each budget and then averaged
with weight = the number of trials compared in that budget. Regime labels follow MosaicML's
Mild / Medium / Hot recipes (short / medium / long training).
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from recipesearch.analysis.pareto import pareto_mask

BUDGET = "budget"
ACCURACY = "accuracy"
_EFFECT_COLUMNS = [
    "algorithm", "n_trials", "n_with", "n_without", "share_completed", "n_front_with", "share_front",
    "mean_acc_with", "mean_acc_without", "acc_diff", "acc_diff_budget_matched", "n_budgets_matched",
    "mean_throughput_with", "mean_throughput_without", "throughput_ratio",
]  # fmt: skip
_INTERACTION_COLUMNS = [
    "algo_a", "algo_b", "interaction", "n_both", "n_a_only", "n_b_only", "n_neither", "n_budgets",
]  # fmt: skip


def completed_mask(df: pd.DataFrame, metric: str = ACCURACY) -> pd.Series:
    """COMPLETE trials with a finite ``metric`` (all rows count as complete when there is no state column)."""
    ok = pd.Series(True, index=df.index) if "state" not in df else df["state"].astype(str).eq("COMPLETE")
    if metric not in df:
        return pd.Series(False, index=df.index, dtype=bool)
    acc = pd.to_numeric(df[metric], errors="coerce").astype(float)
    return (ok & np.isfinite(acc)).astype(bool)


def algorithm_sets(algorithms: pd.Series) -> pd.Series:
    """'+'-joined names -> frozenset per row; '' and NaN (how a CSV reader returns '') mean none."""

    def parse(s: object) -> frozenset[str]:
        return frozenset(a for a in s.split("+") if a) if isinstance(s, str) else frozenset()

    return algorithms.map(parse)


def membership(df: pd.DataFrame) -> pd.DataFrame:
    """One bool column per algorithm seen in ``df``: does the trial use it."""
    if "algorithms" in df:
        sets = algorithm_sets(df["algorithms"])
    else:
        sets = pd.Series([frozenset()] * len(df), index=df.index, dtype=object)
    names = sorted(set().union(*sets)) if len(sets) else []
    return pd.DataFrame({n: sets.map(lambda s, n=n: n in s).astype(bool) for n in names}, index=df.index)


def trials_front_mask(
    df: pd.DataFrame,
    objectives: Sequence[str] | None = None,
    directions: Sequence[str] = ("maximize", "minimize"),
    metric: str = ACCURACY,
) -> pd.Series:
    """Metric-vs-time front among completed trials, as a bool Series aligned with ``df``.

    ``objectives`` defaults to (``metric``, "train_seconds").
    """
    done = completed_mask(df, metric)
    out = pd.Series(False, index=df.index, dtype=bool)
    values = df.loc[done, list(objectives or (metric, "train_seconds"))].to_numpy(dtype=float)
    out[done] = pareto_mask(values, directions)
    return out


def _budget_groups(df: pd.DataFrame, budget_col: str) -> list[np.ndarray]:
    """Row positions of ``df`` per budget (NaN budgets form their own group)."""
    if budget_col not in df:
        return [np.arange(len(df))]
    s = pd.Series(np.arange(len(df)), index=df.index)
    return [g.to_numpy() for _, g in s.groupby(df[budget_col], dropna=False)]


def _matched_difference(values: np.ndarray, used: np.ndarray, groups: list[np.ndarray]) -> tuple[float, int]:
    """Mean(with) - mean(without) within each budget having both, averaged weighted by trials compared."""
    diffs, weights = [], []
    for g in groups:
        w, wo = values[g][used[g]], values[g][~used[g]]
        if len(w) and len(wo):
            diffs.append(w.mean() - wo.mean())
            weights.append(len(w) + len(wo))
    if not weights:
        return float("nan"), 0
    return float(np.average(diffs, weights=weights)), len(weights)


def _mean(x: np.ndarray) -> float:
    x = x[np.isfinite(x)]
    return float(x.mean()) if len(x) else float("nan")


def algorithm_effects(
    df: pd.DataFrame,
    front_mask: ArrayLike | pd.Series | None = None,
    budget_col: str = BUDGET,
    metric: str = ACCURACY,
) -> pd.DataFrame:
    """Per algorithm: how often it was tried and on the front, and its accuracy and throughput effects.

    The accuracy columns (``mean_acc_*``, ``acc_diff*``) are on ``metric``. ``front_mask`` (aligned with
    ``df``) defaults to an ``on_front`` column when present, else to the metric-vs-time front of the
    completed trials. ``n_trials`` counts every trial using the method
    (failed ones too); all other numbers use completed trials only, baseline trials counting as
    "without" every method. ``throughput_ratio`` is
    mean throughput with / without: below 1 is the method's per-step cost.
    """
    if front_mask is None:
        front_mask = df["on_front"] if "on_front" in df else trials_front_mask(df, metric=metric)
    if isinstance(front_mask, pd.Series):  # align by index; other array-likes align by position
        front_mask = front_mask.reindex(df.index).fillna(False).astype(bool)
    front_all = np.asarray(front_mask, dtype=bool).reshape(-1)
    if len(front_all) != len(df):
        raise ValueError(f"front_mask has {len(front_all)} entries, df has {len(df)} rows")
    members_all = membership(df)
    done = completed_mask(df, metric).to_numpy()
    sub = df[done]
    members, front = members_all[done].to_numpy(), front_all[done]
    acc = sub[metric].to_numpy(dtype=float) if metric in sub else np.full(len(sub), np.nan)
    thr = sub["throughput"].to_numpy(dtype=float) if "throughput" in sub else np.full(len(sub), np.nan)
    groups = _budget_groups(sub, budget_col)
    rows = []
    for j, name in enumerate(members_all.columns):
        used = members[:, j]
        matched, n_matched = _matched_difference(acc, used, groups)
        thr_with, thr_without = _mean(thr[used]), _mean(thr[~used])
        rows.append({
            "algorithm": name,
            "n_trials": int(members_all[name].sum()),
            "n_with": int(used.sum()),
            "n_without": int((~used).sum()),
            "share_completed": used.mean() if len(used) else np.nan,
            "n_front_with": int((used & front).sum()),
            "share_front": (used & front).sum() / front.sum() if front.any() else np.nan,
            "mean_acc_with": _mean(acc[used]),
            "mean_acc_without": _mean(acc[~used]),
            "acc_diff": _mean(acc[used]) - _mean(acc[~used]),
            "acc_diff_budget_matched": matched,
            "n_budgets_matched": n_matched,
            "mean_throughput_with": thr_with,
            "mean_throughput_without": thr_without,
            "throughput_ratio": thr_with / thr_without if thr_without else np.nan,
        })  # fmt: skip
    return pd.DataFrame(rows, columns=_EFFECT_COLUMNS)


def pairwise_interactions(
    df: pd.DataFrame, min_count: int = 3, metric: str = ACCURACY, budget_col: str = BUDGET
) -> pd.DataFrame:
    """Budget-matched 2x2 interaction of every pair of methods on ``metric``.

    Within a budget, interaction = mean(both) - mean(A only) - mean(B only) + mean(neither): 0 when
    the two effects add up, negative when they overlap (e.g. two regularisers), positive when they
    help each other. A budget is used only when each of its four cells has >= ``min_count`` completed
    trials; budgets are averaged weighted by their trial count (the four cells). Pairs with no usable
    budget are left out, so a small search returns an empty frame with the columns in place.
    """
    done = completed_mask(df, metric)
    sub = df[done]
    members = membership(sub)
    values = sub[metric].to_numpy(dtype=float) if metric in sub else np.empty(0)
    groups = _budget_groups(sub, budget_col)
    rows = []
    for a, b in combinations(members.columns, 2):
        ua, ub = members[a].to_numpy(), members[b].to_numpy()
        cells = (ua & ub, ua & ~ub, ~ua & ub, ~ua & ~ub)  # both, A only, B only, neither
        effects, weights, counts = [], [], np.zeros(4, dtype=int)
        for g in groups:
            n = np.array([c[g].sum() for c in cells])
            if (n < max(min_count, 1)).any():
                continue
            m = [values[g][c[g]].mean() for c in cells]
            effects.append(m[0] - m[1] - m[2] + m[3])
            weights.append(n.sum())
            counts += n
        if weights:
            rows.append([a, b, float(np.average(effects, weights=weights)), *counts.tolist(), len(weights)])
    return pd.DataFrame(rows, columns=_INTERACTION_COLUMNS)


def budget_bands(
    budgets: Sequence[float], bands: Sequence[str] = ("short", "medium", "long")
) -> dict[float, str]:
    """Map each distinct budget to a band: lowest third -> bands[0], middle -> bands[1], highest -> bands[2].

    With m >= 3 distinct budgets, budget number i (0-based, ascending) goes to band floor(3 i / m), so
    the lowest is always short and the highest always long. With 2 budgets: short and long (no medium,
    since nothing lies between them). With 1 budget: medium (it is neither short nor long relative to
    anything).
    """
    if len(bands) != 3:
        raise ValueError(f"exactly three bands are needed, got {list(bands)}")
    distinct = sorted({float(b) for b in budgets if pd.notna(b)})
    m = len(distinct)
    if m == 1:
        return {distinct[0]: bands[1]}
    if m == 2:
        return {distinct[0]: bands[0], distinct[1]: bands[2]}
    return {b: bands[3 * i // m] for i, b in enumerate(distinct)}


def regime_recipes(
    front_df: pd.DataFrame,
    budget_col: str = BUDGET,
    bands: Sequence[str] = ("short", "medium", "long"),
    labels: Sequence[str] = ("Mild", "Medium", "Hot"),
    all_budgets: Sequence[float] | None = None,
    metric: str = ACCURACY,
) -> pd.DataFrame:
    """Pick one recipe per training regime: the frontier trial with the best ``metric`` in each budget band.

    Bands come from ``all_budgets`` when given (e.g. every budget searched, so that a front missing
    the short budgets does not relabel medium ones as short), else from the front's own budgets; see
    ``budget_bands``. Ties in the metric go to the lower ``train_seconds``, then the lower trial number.
    Bands with no frontier trial are left out. Columns: band, label, number, budget, ``metric``,
    train_seconds (the caller joins anything else it shows, e.g. the held-out test accuracy).
    """
    columns = ["band", "label", "number", budget_col, metric, "train_seconds"]
    band_of = budget_bands(front_df[budget_col] if all_budgets is None else all_budgets, bands)
    label_of = dict(zip(bands, labels, strict=True))
    df = front_df.assign(_band=[band_of.get(float(b)) if pd.notna(b) else None for b in front_df[budget_col]])
    if metric not in df:
        df = df.assign(**{metric: np.nan})
    df = df[df["_band"].notna() & np.isfinite(pd.to_numeric(df[metric], errors="coerce").astype(float))]
    if "train_seconds" not in df:
        df = df.assign(train_seconds=np.nan)
    if "number" not in df:
        df = df.assign(number=df.index)
    rows = []
    for band in bands:
        cand = df[df["_band"] == band]
        if len(cand):
            order = cand.sort_values([metric, "train_seconds", "number"], ascending=[False, True, True])
            best = order.iloc[0]
            rows.append([band, label_of[band], *(best[c] for c in columns[2:])])
    out = pd.DataFrame(rows, columns=columns)
    return out.astype({"number": df["number"].dtype}) if len(out) else out
