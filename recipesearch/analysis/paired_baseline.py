"""The paired baseline: the baseline re-run beside the candidates in the confirmation stage.

A search trains its baseline first and its candidates last, often an hour apart; a machine whose speed
changed in between (another job, a throttled CPU) shows up as a speedup that is not there. The
confirmation stage therefore trains the baseline again, interleaved with the candidates' runs
(engine/confirm.py): its runs are the baseline runs of stage ``confirm``. Once they cover every budget
the early baseline covers with at least ``MIN_SEEDS`` seeds, confirmed speedups and the headline are
measured against them, and the early baseline (which the sampler was guided by) is kept for comparison:
where the two differ beyond their intervals at some budget, the machine's speed moved during the search.

Re-running the whole baseline costs as much as confirming a recipe (on the digits demo, 11 of its 45 trainings),
and on a machine whose speed held it re-measures what is known: a run's accuracy is fixed by its seed. So by
default (``confirm.paired_baseline: probe``) the confirmation re-runs one baseline run, at the reference budget,
first: the *probe*. Only when its time moved beyond what the early runs there predict (``probe_moved``) is the
rest of the paired baseline queued; otherwise claims are measured against the early baseline. A machine that
slows down after the probe only makes the candidates look slower, which no claim gains from.
Pure pandas/numpy.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from recipesearch.analysis.seeds import curve_by_budget

PAIRED_STAGE = "confirm"
MIN_SEEDS = 2  # a paired baseline point with one seed has no interval: not yet a curve to compare against
# A probe within this fraction of the early runs' mean time (geometric) at its budget has not moved. Runs of the
# digits baseline side by side on an idle machine differ by 2-4 % (sd over 20 seeds, reports/bench/
# null_table_digits.csv), so a probe 15 % away is a change of the machine, not noise; a change smaller than this
# that goes unseen moves a claim's speedup by as much at most.
PROBE_TOLERANCE = 0.15
SHIFT_COLUMNS = ("budget", "early_seconds", "early_ci_low", "early_ci_high", "paired_seconds", "paired_ci_low",
                 "paired_ci_high", "moved")  # fmt: skip


def baseline_masks(df: pd.DataFrame, done: pd.Series) -> tuple[pd.Series, pd.Series]:
    """(paired, early): completed baseline runs of the confirmation stage, and the other completed baseline runs."""
    stage = df["stage"].astype(str) if "stage" in df else pd.Series("", index=df.index)
    base = done & df["is_baseline"].astype(bool)
    paired = base & stage.eq(PAIRED_STAGE)
    return paired, base & ~paired


def covers(early: pd.DataFrame, paired: pd.DataFrame) -> bool:
    """Whether the paired runs can stand in for the early baseline: ``MIN_SEEDS`` seeds at each of its budgets."""
    if paired.empty or early.empty:
        return False
    seeds = paired.groupby("budget")["seed"].nunique() if "seed" in paired else paired.groupby("budget").size()
    return all(int(seeds.get(b, 0)) >= MIN_SEEDS for b in early["budget"].unique())


def baseline_shift(early: pd.DataFrame, paired: pd.DataFrame, metric: str, confidence: float) -> pd.DataFrame:
    """Per budget both baselines ran at: each one's mean train_seconds with its interval, and ``moved`` where
    the intervals do not overlap."""
    if early.empty or paired.empty:
        return pd.DataFrame(columns=list(SHIFT_COLUMNS))
    e = curve_by_budget(early, [], "budget", metric, "train_seconds", confidence).set_index("budget")
    p = curve_by_budget(paired, [], "budget", metric, "train_seconds", confidence).set_index("budget")
    rows = []
    for b in sorted(set(e.index) & set(p.index)):
        lo_e, hi_e, lo_p, hi_p = (float(x) for x in (e.at[b, "time_ci_low"], e.at[b, "time_ci_high"],
                                                      p.at[b, "time_ci_low"], p.at[b, "time_ci_high"]))
        moved = bool(np.isfinite([lo_e, hi_e, lo_p, hi_p]).all() and (hi_e < lo_p or hi_p < lo_e))
        rows.append({"budget": float(b), "early_seconds": float(e.at[b, "time_mean"]), "early_ci_low": lo_e,
                     "early_ci_high": hi_e, "paired_seconds": float(p.at[b, "time_mean"]), "paired_ci_low": lo_p,
                     "paired_ci_high": hi_p, "moved": moved})
    return pd.DataFrame(rows, columns=list(SHIFT_COLUMNS))


def shift_warning(shift: pd.DataFrame) -> str | None:
    """One sentence when the machine's speed moved between the baseline stage and the confirmation."""
    moved = shift[shift["moved"].astype(bool)] if len(shift) else shift
    if moved.empty:
        return None
    parts = [f"budget {r.budget:g}: {r.early_seconds:.3g} s early vs {r.paired_seconds:.3g} s beside the candidates"
             for r in moved.itertuples()]
    return ("the baseline's times moved during the search beyond their intervals (" + "; ".join(parts) + "): the "
            "machine's speed changed; speedups are measured against the baseline re-run beside the candidates")


def geometric_mean(seconds: np.ndarray | list[float]) -> float:
    """The geometric mean of the finite positive times (times compare as ratios); NaN when there is none."""
    times = np.asarray(seconds, dtype=float)
    times = times[np.isfinite(times) & (times > 0)]
    return float(np.exp(np.log(times).mean())) if len(times) else float("nan")


def probe_moved(early_seconds: np.ndarray | list[float], probe_seconds: float) -> bool:
    """Whether one new run of the baseline took a time more than ``PROBE_TOLERANCE`` away from the geometric mean
    of the early runs of the same params. With no early time to compare with, it has moved (the full paired
    baseline is the safe side)."""
    early = geometric_mean(early_seconds)
    if not (np.isfinite(early) and probe_seconds > 0):
        return True
    return abs(float(np.log(probe_seconds / early))) > float(np.log1p(PROBE_TOLERANCE))
