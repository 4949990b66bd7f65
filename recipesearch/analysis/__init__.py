"""Analysis of a recipe search: Pareto fronts, hypervolume, speedups, per-method effects.

Pure numpy/pandas on plain arrays and the trials.csv DataFrame (no Ray/Optuna objects), so every
number in the report can be tested on hand-made inputs.
"""
from __future__ import annotations

from recipesearch.analysis.curve_speedup import CurveSpeedup, SpeedupProfile, curve_speedup, speedup_profile
from recipesearch.analysis.effects import (
    algorithm_effects,
    algorithm_sets,
    budget_bands,
    completed_mask,
    membership,
    pairwise_interactions,
    regime_recipes,
    trials_front_mask,
)
from recipesearch.analysis.frontier import Frontier, frontier
from recipesearch.analysis.headline import Headline, largest_front_speedup
from recipesearch.analysis.hypervolume import (
    HypervolumeCurve,
    hypervolume,
    hypervolume_history,
    hypervolume_vs_compute,
    reference_point,
)
from recipesearch.analysis.objective_spec import Objectives, ObjectiveSpec
from recipesearch.analysis.pareto import pareto_front_order, pareto_mask, pareto_mask_by_group
from recipesearch.analysis.seeds import SeedStats, curve_by_budget, seed_summary
from recipesearch.analysis.speedup import (
    AccuracyGain,
    AccuracyGainArrays,
    HeadlineSpeedup,
    SpeedupArrays,
    SpeedupResult,
    TradeoffCurve,
    accuracy_at_matched_time,
    accuracy_gains_at_matched_time,
    baseline_envelope,
    best_speedup_at_baseline_accuracy,
    final_baseline_accuracy,
    speedup_at_matched_accuracy,
    speedups_at_matched_accuracy,
    time_to_reach,
    times_to_reach,
)
from recipesearch.analysis.speedup_bootstrap import bootstrap_curve_speedup, confirmed_faster
from recipesearch.analysis.text import finite, interval_text
from recipesearch.trials_columns import metric_column

__all__ = [
    "CurveSpeedup",
    "SeedStats",
    "SpeedupProfile",
    "bootstrap_curve_speedup",
    "confirmed_faster",
    "curve_by_budget",
    "curve_speedup",
    "seed_summary",
    "speedup_profile",
    "trials_front_mask",
    "AccuracyGain",
    "AccuracyGainArrays",
    "Frontier",
    "Headline",
    "HeadlineSpeedup",
    "HypervolumeCurve",
    "ObjectiveSpec",
    "Objectives",
    "SpeedupArrays",
    "SpeedupResult",
    "TradeoffCurve",
    "accuracy_at_matched_time",
    "accuracy_gains_at_matched_time",
    "algorithm_effects",
    "algorithm_sets",
    "baseline_envelope",
    "best_speedup_at_baseline_accuracy",
    "final_baseline_accuracy",
    "budget_bands",
    "completed_mask",
    "frontier",
    "hypervolume",
    "hypervolume_history",
    "hypervolume_vs_compute",
    "largest_front_speedup",
    "finite",
    "interval_text",
    "membership",
    "metric_column",
    "pairwise_interactions",
    "pareto_front_order",
    "pareto_mask",
    "pareto_mask_by_group",
    "reference_point",
    "regime_recipes",
    "speedup_at_matched_accuracy",
    "speedups_at_matched_accuracy",
    "time_to_reach",
    "times_to_reach",
]
