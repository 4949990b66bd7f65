"""When a search reaches a hypervolume: first crossings of hypervolume-vs-compute curves, and a seed bootstrap.

A search's progress is a step function: the hypervolume reached with at most t seconds of training
(``hypervolume.hypervolume_vs_compute``). Comparing searches asks when each first reaches a target
hypervolume (random search's final one, say) and how the compute of one compares with another's. These
are the one place that question is answered, for the benchmarks and anyone comparing samplers or
schedulers.

A hypervolume "reaches" a target within a relative ``REACH_RTOL``: the same front summed in another
order can differ from the target in the last bits, and that must not count as falling short.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

REACH_RTOL = 1e-12


def reaches(values: ArrayLike, target: float) -> np.ndarray:
    """Whether each hypervolume reaches ``target`` (within ``REACH_RTOL`` of it counts)."""
    return np.asarray(values, dtype=float) >= target * (1 - REACH_RTOL)


def first_reach(times: ArrayLike, values: ArrayLike, target: float) -> float:
    """The first of ``times`` whose hypervolume in ``values`` reaches ``target``; inf when none does."""
    hit = np.nonzero(reaches(values, target))[0]
    return float(np.asarray(times)[hit[0]]) if len(hit) else math.inf


def on_grid(curves: Sequence[tuple[ArrayLike, ArrayLike]], grid: np.ndarray) -> np.ndarray:
    """(runs, grid) values of each run's (cumulative seconds, hypervolume) step function at ``grid``.

    Before a run's first point it has 0; after its last it keeps its final value (it reached that much
    with no more than t).
    """
    vals = []
    for secs, hv in curves:
        idx = np.searchsorted(np.asarray(secs), grid, side="right") - 1
        vals.append(np.where(idx >= 0, np.asarray(hv)[np.clip(idx, 0, None)], 0.0))
    return np.array(vals).reshape(len(curves), len(grid))


def quantiles_with_inf(values: Sequence[float], qs: Sequence[float]) -> list[float]:
    """Percentiles where inf (never reached) is a value larger than all: inf wherever it decides."""
    big = 1e300
    v = np.array([x if math.isfinite(x) else big for x in values], dtype=float)
    return [math.inf if q >= big / 10 else float(q) for q in np.percentile(v, qs)]


def bootstrap_compute_ratio(
    arm: np.ndarray,
    reference: np.ndarray,
    reference_final: np.ndarray,
    grid: np.ndarray,
    n: int = 1000,
    seed: int = 0,
) -> list[float]:
    """95% percentile interval of an arm's compute to the target over the reference arm's, over seeds.

    ``arm`` and ``reference`` are (seeds, grid) curves from ``on_grid``; ``reference_final`` the reference's
    final hypervolume per seed. Each replicate resamples both arms' seeds (with replacement, independently:
    passing the reference as ``arm`` too gives the noise floor), takes the target as the median of the
    resampled reference's final hypervolumes, and compares the first crossings of the two median curves.
    [nan, nan] when no replicate has a finite reference time.
    """
    rng = np.random.default_rng(seed)
    ratios = []
    for _ in range(n):
        ir = rng.integers(0, len(reference), len(reference))
        ia = rng.integers(0, len(arm), len(arm))
        target = float(np.median(reference_final[ir]))
        t_reference = first_reach(grid, np.median(reference[ir], axis=0), target)
        t_arm = first_reach(grid, np.median(arm[ia], axis=0), target)
        ratios.append(t_arm / t_reference if t_reference > 0 and math.isfinite(t_reference) else math.nan)
    ratios = [r for r in ratios if not math.isnan(r)]
    return quantiles_with_inf(ratios, (2.5, 97.5)) if ratios else [math.nan, math.nan]
