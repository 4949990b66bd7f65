"""analysis/sequential.py's rule for an open curve's second look, on plain numbers: the next budget, or a seed more."""
from __future__ import annotations

import numpy as np

from recipesearch.analysis.curve_speedup import CurveSpeedup
from recipesearch.analysis.sequential import next_budget_needed


def _result(short: float) -> CurveSpeedup:
    """A bootstrap result whose recipe replicates fall short of the target in ``short`` of them."""
    return CurveSpeedup(speedup=2.0, target_accuracy=0.97, baseline_time=2.0, recipe_time=1.0, status="ok",
                        confidence=0.95, recipe_unreached_fraction=short)


def test_a_seed_short_of_the_target_at_the_top_budget_goes_up():
    assert next_budget_needed(_result(0.0), np.array([0.99, 0.96, 0.98]), 0.97)


def test_replicates_short_go_up_only_where_a_seed_more_would_not_mend_it():
    # digits seed 1, trial 11 at budget 0.5 (benchmarks §13): 1.22 spreads past the target; its 4th seed left it open
    seed_1 = np.array([0.9767, 0.9953, 0.9837])
    assert next_budget_needed(_result(0.099), seed_1, 0.9737)
    # digits seed 2, trial 14 at budget 0.5: 1.67 spreads past it (>= t(3) / 2 = 1.59); its 4th seed confirmed it
    seed_2 = np.array([0.9883, 0.9837, 0.9791])
    assert not next_budget_needed(_result(0.05), seed_2, 0.9760)
    # few replicates short: open on time alone, a seed more
    assert not next_budget_needed(_result(0.02), seed_1, 0.9737)
    # the bound is Student's t with the seeds a seed more makes: 1.59 spreads for a 4th, 1.24 for a 5th
    spread = float(np.std(seed_1, ddof=1))
    assert next_budget_needed(_result(0.1), np.array([-1, 0, 1]) * spread + 0.97 + 1.58 * spread, 0.97)
    assert not next_budget_needed(_result(0.1), np.array([-1, 0, 1]) * spread + 0.97 + 1.60 * spread, 0.97)
    four = np.array([-1, -1 / 3, 1 / 3, 1]) * spread
    four *= spread / np.std(four, ddof=1)
    assert not next_budget_needed(_result(0.1), four + 0.97 + 1.26 * spread, 0.97)
    assert next_budget_needed(_result(0.1), four + 0.97 + 1.22 * spread, 0.97)
