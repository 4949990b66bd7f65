"""Which trials were timed on a busy machine: their ``cpu_share`` far below the search's median.

``cpu_share`` (trials.csv) is the training process's CPU seconds / (train_seconds x threads): about 1 when
the trial had its cores to itself, lower when another process took turns on them (the wall clock ran on
while the trial waited). A trial's absolute share depends on the hardware and the model (a trial that
waits on a GPU or on loader processes uses less of its own CPU), so a trial is judged against the
search's median: ``BUSY_RATIO`` of it or less is *busy*. Pure pandas/numpy.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

BUSY_RATIO = 0.75  # a share at most this fraction of the median: the trial's cores were taken by others
MIN_TRIALS = 3  # a median of fewer trials says nothing


def reference_share(shares: pd.Series | np.ndarray) -> float:
    """The median ``cpu_share`` of the finite values; NaN with fewer than ``MIN_TRIALS`` of them."""
    values = pd.to_numeric(pd.Series(shares), errors="coerce").astype(float)
    values = values[np.isfinite(values) & (values > 0)]
    return float(values.median()) if len(values) >= MIN_TRIALS else float("nan")


def is_busy(share: float, reference: float, ratio: float = BUSY_RATIO) -> bool:
    """One trial's share against a reference (``reference_share``): far below it is busy."""
    return bool(np.isfinite(share) and np.isfinite(reference) and share < ratio * reference)


def busy_mask(shares: pd.Series, ratio: float = BUSY_RATIO) -> pd.Series:
    """Per row: timed on a busy machine (False where unknown, or with too few trials to tell)."""
    values = pd.to_numeric(shares, errors="coerce").astype(float)
    reference = reference_share(values)
    if not np.isfinite(reference):
        return pd.Series(False, index=values.index)
    return (values < ratio * reference).fillna(False).astype(bool)
