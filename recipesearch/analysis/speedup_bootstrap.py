"""Bootstrap interval over seeds for a curve-vs-curve speedup, and the "confirmed faster" rule.

Seeds are resampled with replacement within each budget (Efron & Tibshirani, "An Introduction to the
Bootstrap", percentile interval), independently for the recipe and the baseline; each replicate's
per-budget means, expanded about the seed mean for small samples (Hesterberg's expanded percentile
interval, ``expansion``: a search has 3 seeds per budget, where the plain bootstrap is 2.7 times too
narrow), give two new tradeoff curves and a speedup at the point estimate's target. The
replicates are computed all at once as arrays (replicate x budget), so 2000 replicates cost
milliseconds; ``_rows_time_to_reach`` is ``curve_speedup``'s envelope + log-time interpolation
written row-wise, and the tests check the two agree.
"""
from __future__ import annotations

import functools

import numpy as np
import pandas as pd
from scipy import stats

from recipesearch.analysis.curve_speedup import FINITE_STATUSES, CurveSpeedup, curve_speedup
from recipesearch.analysis.seeds import DEFAULT_CONFIDENCE, curve_by_budget

# Row-wise outcome of reaching a target on one curve.
_REACHED, _AHEAD, _SHORT = 0, 1, 2


def _valid_runs(runs: pd.DataFrame, budget_col: str, acc_col: str, time_col: str) -> pd.DataFrame:
    """The runs that can sit on a curve: finite accuracy and a finite positive time (log time)."""
    acc = pd.to_numeric(runs[acc_col], errors="coerce").to_numpy(dtype=float)
    time = pd.to_numeric(runs[time_col], errors="coerce").to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(acc) & np.isfinite(time) & (time > 0)
    return pd.DataFrame({budget_col: runs[budget_col].to_numpy()[ok], acc_col: acc[ok], time_col: time[ok]})


@functools.lru_cache(maxsize=256)  # scipy's quantiles cost ~0.2 ms a call; a look asks for the same few
def expansion(n: int, confidence: float) -> float:
    """Hesterberg's expanded percentile interval: the factor that widens a bootstrap of a mean of ``n``
    values to the width of Student's t interval, sqrt(n / (n - 1)) * t(n - 1) / z.

    The plain percentile bootstrap of a mean of three seeds is far too narrow: it resamples with the
    plug-in variance (too small by (n - 1) / n) and normal quantiles where t(2) is 2.2 times wider. See
    T. Hesterberg, "What Teachers Should Know About the Bootstrap", The American Statistician 69 (2015),
    section 4.3. 1 for a single value (nothing to widen)."""
    if n < 2:
        return 1.0
    q = (1 + confidence) / 2
    return float(np.sqrt(n / (n - 1)) * stats.t.ppf(q, n - 1) / stats.norm.ppf(q))


def _resampled_means(
    runs: pd.DataFrame, budget_col: str, acc_col: str, time_col: str, n_boot: int, rng: np.random.Generator,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-budget means of seeds drawn with replacement: (times, accuracies), each [n_boot, n_budgets],
    expanded about the seed mean by ``expansion(n, confidence)``.

    A drawn seed brings its accuracy and its time together: they come from the same run.
    """
    run_budgets = runs[budget_col].to_numpy()
    all_t, all_a = runs[time_col].to_numpy(float), runs[acc_col].to_numpy(float)
    budgets = np.unique(run_budgets)  # sorted, so the draws are the same for the same table
    times = np.empty((n_boot, len(budgets)))
    accs = np.empty((n_boot, len(budgets)))
    for j, budget in enumerate(budgets):
        t, a = all_t[run_budgets == budget], all_a[run_budgets == budget]
        pick = rng.integers(0, len(t), size=(n_boot, len(t)))
        c = expansion(len(t), confidence)
        # Time is expanded on the log scale the curves interpolate on, so it stays positive.
        times[:, j] = t.mean() * np.exp(c * (np.log(t[pick].mean(axis=1)) - np.log(t.mean())))
        accs[:, j] = a.mean() + c * (a[pick].mean(axis=1) - a.mean())
    return times, accs


def _rows_time_to_reach(
    times: np.ndarray, accs: np.ndarray, target: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Time each row's envelope needs to reach ``target`` and an outcome code per row.

    Codes: _REACHED (interpolated in log time, or exactly the first point), _AHEAD (the first point
    is already more accurate: its time is returned, an upper bound), _SHORT (never reached: NaN).
    Rows must hold finite accuracies and positive times, as the means of valid runs do.
    """
    rows = np.arange(times.shape[0])
    target = np.broadcast_to(np.asarray(target, dtype=float), rows.shape)  # one target, or one per row
    # 1) Sort by time, the most accurate first among equal times (as baseline_envelope does).
    order = np.lexsort((-accs, times), axis=-1)
    t, a = np.take_along_axis(times, order, 1), np.take_along_axis(accs, order, 1)
    # 2) Envelope points improve on every earlier point; remember the latest one at each position.
    running_max = np.maximum.accumulate(a, axis=1)
    earlier_max = np.concatenate([np.full((len(a), 1), -np.inf), running_max[:, :-1]], axis=1)
    on_envelope = a > earlier_max
    last_envelope = np.maximum.accumulate(np.where(on_envelope, np.arange(a.shape[1]), 0), axis=1)
    # 3) The first point reaching the target is on the envelope (all earlier ones are below it);
    #    interpolate from the envelope point before it.
    short = running_max[:, -1] < target
    ahead = a[:, 0] > target
    k = np.argmax(a >= target[:, None], axis=1)
    j = last_envelope[rows, np.maximum(k - 1, 0)]
    lt_j, lt_k = np.log(t[rows, j]), np.log(t[rows, k])
    a_j, a_k = a[rows, j], a[rows, k]
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction = np.where(k > 0, (target - a_j) / (a_k - a_j), 0.0)
    out = np.exp(lt_j + fraction * (lt_k - lt_j))
    out[short] = np.nan
    code = np.where(short, _SHORT, np.where(ahead, _AHEAD, _REACHED))
    return out, code


def _min_seeds(n_seeds: pd.Series) -> int:
    """The fewest seeds behind a budget of the baseline's curve, leaving out its one-seed budgets when two or more
    have repeated seeds (``baseline.seeds_elsewhere``): those are anchors that draw the same run in every replicate,
    for the replicates whose curve reaches the target before its first repeated budget (digits' baseline at 0.5 is
    within Student-t's reach of the target: without the anchor at 0.25 such replicates have no speedup)."""
    repeated = n_seeds[n_seeds >= 2]
    return int((repeated if len(repeated) >= 2 else n_seeds).min()) if len(n_seeds) else 0


def bootstrap_curve_speedup(
    recipe_runs: pd.DataFrame,
    base_runs: pd.DataFrame,
    target: float | None = None,
    n_boot: int = 2000,
    confidence: float = DEFAULT_CONFIDENCE,
    rng: np.random.Generator | int | None = None,
    budget_col: str = "budget",
    acc_col: str = "accuracy",
    time_col: str = "train_seconds",
) -> CurveSpeedup:
    """``curve_speedup`` of the per-budget seed means, with a percentile bootstrap interval over seeds.

    ``*_runs`` are long tables, one row per run (budget, seed, time, accuracy); only ``budget_col``,
    ``acc_col`` and ``time_col`` are read. Runs with a NaN accuracy or a non-positive time are left out.
    ``rng`` is a Generator or a seed; None means seed 0, so a report is the same every time it is built.

    The interval is the (1 - confidence)/2 and (1 + confidence)/2 quantiles of the finite replicate
    speedups. With the default target (the highest accuracy both curves reach), a replicate whose
    curves fall short of it is measured at the accuracy both of its curves reach; with a given target,
    replicates where the recipe falls short have no speedup. ``recipe_unreached_fraction`` is the share
    of replicates where the recipe's curve fell short of the point estimate's target either way;
    replicates where the baseline's shortest run already beats the target have no speedup
    (``baseline_below_fraction``).
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    generator = np.random.default_rng(0 if rng is None else rng)
    recipe = _valid_runs(recipe_runs, budget_col, acc_col, time_col)
    base = _valid_runs(base_runs, budget_col, acc_col, time_col)
    recipe_curve = curve_by_budget(recipe, [], budget_col, acc_col, time_col, confidence)
    base_curve = curve_by_budget(base, [], budget_col, acc_col, time_col, confidence)
    point = curve_speedup(
        recipe_curve["time_mean"], recipe_curve["accuracy_mean"],
        base_curve["time_mean"], base_curve["accuracy_mean"], target,
    )
    seeds = {
        "recipe_min_seeds": int(recipe_curve["n_seeds"].min()) if len(recipe_curve) else 0,
        "baseline_min_seeds": _min_seeds(base_curve["n_seeds"]),
    }
    if np.isnan(point.target_accuracy) or len(recipe) == 0 or len(base) == 0:
        return point._replace(confidence=confidence, **seeds)

    # The target is fixed from the point estimate: every replicate then answers the same question
    # ("how much faster to this accuracy?"). Re-deriving it per replicate would mix speedups at
    # different accuracies, and the min-of-maxima target would follow each replicate's noisiest
    # maximum, widening the interval with noise that is not about speed.
    recipe_t, recipe_a = _resampled_means(recipe, budget_col, acc_col, time_col, n_boot, generator, confidence)
    base_t, base_a = _resampled_means(base, budget_col, acc_col, time_col, n_boot, generator, confidence)
    targets = np.full(n_boot, point.target_accuracy)
    recipe_unreached = recipe_a.max(axis=1) < targets
    if target is None:
        # The default target is "the highest accuracy both curves reach", itself a noisy estimate: a
        # replicate whose curves fall short of it answers the same question at the accuracy they do both
        # reach. Dropping those replicates instead would keep only the draws where the recipe got lucky.
        targets = np.minimum(targets, np.minimum(recipe_a.max(axis=1), base_a.max(axis=1)))
    recipe_time, recipe_code = _rows_time_to_reach(recipe_t, recipe_a, targets)
    base_time, base_code = _rows_time_to_reach(base_t, base_a, targets)
    # Same precedence as curve_speedup: the recipe falling short first, then the baseline's sides. A given
    # target near the baseline's best (its mean at budget 1 when budget 2 is barely better) is missed by some
    # replicates of the baseline: it would need longer than its longest run, so that run's time stands in for
    # its time, which can only understate the speedup (the interval's lower bound stays conservative).
    short = recipe_code == _SHORT
    base_below = ~short & (base_code == _AHEAD)
    base_short = ~short & (base_code == _SHORT)
    base_time = np.where(base_short, base_t.max(axis=1), base_time)
    finite = ~short & ((base_code == _REACHED) | base_short)
    replicate_speedups = base_time[finite] / recipe_time[finite]

    alpha = 1.0 - confidence
    if len(replicate_speedups):
        ci_low, ci_high = np.quantile(replicate_speedups, [alpha / 2, 1 - alpha / 2])
    else:
        ci_low = ci_high = np.nan
    return point._replace(
        ci_low=float(ci_low),
        ci_high=float(ci_high),
        confidence=confidence,
        n_boot=n_boot,
        n_finite=int(finite.sum()),
        recipe_unreached_fraction=float(recipe_unreached.mean()),
        baseline_below_fraction=float(base_below.mean()),
        **seeds,
    )


def confirmed_faster(result: CurveSpeedup) -> bool:
    """True only when the recipe is faster than the baseline beyond seed noise.

    All of: at least 2 seeds behind every budget of both curves; a finite point estimate; a finite
    bootstrap ``ci_low`` above 1; and a speedup measured in all but (1 - confidence) / 2 of the
    replicates. A replicate without a speedup (the baseline's shortest run already beats the target, or
    the recipe falls short of a given target) is one where the recipe is not shown to be faster: the
    interval is taken over the measured replicates, so when more than the lower tail's share of them
    is missing, ``ci_low`` cannot vouch for the claim. (With the default target a replicate whose curves
    fall short is measured at the accuracy they reach, so falling short alone does not count.)

    A single-seed recipe can never be confirmed: with one run per budget every bootstrap replicate
    redraws that same run, so the interval collapses onto the point estimate and measures no noise
    at all. Its ``ci_low > 1`` would only restate that one possibly lucky seed was fast, which is
    exactly the claim the rule exists to check. The same holds for a single-seed baseline.
    """
    if result.recipe_min_seeds < 2 or result.baseline_min_seeds < 2:
        return False
    if result.status not in FINITE_STATUSES or not np.isfinite(result.speedup):
        return False
    if result.n_boot and result.n_finite < result.n_boot * (1 - (1 - result.confidence) / 2):
        return False
    return bool(np.isfinite(result.ci_low) and result.ci_low > 1.0)
