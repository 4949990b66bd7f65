"""recipesearch/analysis/load.py: a trial is busy when its cpu_share is far below the search's median."""
from __future__ import annotations

import math

import pandas as pd

from recipesearch.analysis.load import BUSY_RATIO, busy_mask, is_busy, reference_share


def test_far_below_the_median_is_busy_and_unknowns_are_not():
    shares = pd.Series([0.98, 0.97, 0.99, 0.45, None, 0.9])
    assert list(busy_mask(shares)) == [False, False, False, True, False, False]
    ref = reference_share(shares)
    assert ref == 0.97
    assert is_busy(BUSY_RATIO * ref - 0.01, ref) and not is_busy(BUSY_RATIO * ref + 0.01, ref)
    assert not is_busy(math.nan, ref)


def test_too_few_trials_flag_nothing():
    assert not busy_mask(pd.Series([0.9, 0.1])).any()
    assert math.isnan(reference_share([0.9, 0.1]))
