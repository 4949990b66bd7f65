"""What replayed searches reach: hypervolume against cumulative training time per replayed run (``hv_curves``),
and the least training time any search of a table could spend to reach a hypervolume (``oracle_search``).
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from bench.replay import TrialRecord


def hv_curves(runs: list[list[TrialRecord]], reference: np.ndarray,
              directions: tuple[str, ...] = ("maximize", "minimize")) -> list[tuple[np.ndarray, np.ndarray]]:
    """(cumulative train seconds, hypervolume) per run, with a shared reference point; stopped trials
    add their partial compute and nothing to the front."""
    from recipesearch.analysis import hypervolume_vs_compute

    out = []
    for recs in runs:
        pts = np.array([[r.accuracy, r.train_seconds] for r in recs], dtype=float).reshape(-1, 2)
        secs = pts[:, 1].copy()
        pts[np.isnan(pts[:, 0])] = np.nan  # a stopped trial has no full-budget point
        c = hypervolume_vs_compute(pts, secs, list(directions), reference)
        out.append((c.cumulative_seconds, c.hypervolume))
    return out


@dataclass(frozen=True)
class OracleSearch:
    """The cheapest search that reaches a hypervolume, knowing the whole table (``oracle_search``)."""

    seconds: float  # its training time: the required runs plus the chosen rows
    required_seconds: float  # of which the runs every search makes first (the baselines)
    rows: tuple[int, ...]  # the table rows chosen besides the required ones
    exact: bool  # False: the front was too large to enumerate, ``seconds`` is a greedy upper bound


ORACLE_EXACT_MAX = 16  # fronts up to this many rows are enumerated (2**16 subsets at most)


def oracle_search(points: np.ndarray, required: Iterable[int], target: float, reference: np.ndarray,
                  directions: tuple[str, ...] = ("maximize", "minimize")) -> OracleSearch | None:
    """The least training time any search of this table can spend to reach ``target`` hypervolume (absolute,
    with ``reference``), given that it trains the ``required`` rows (the baselines) in any case: a lower
    bound for every sampler and scheduler, since one that knew the table could train exactly those rows.

    The cost of a row is its train_seconds, which is also its second objective, so a row dominated by
    another is never needed: its dominator is cheaper and adds at least as much hypervolume. The search
    therefore enumerates subsets of the table's front only (a subset costing more than the best found is not
    evaluated); above ``ORACLE_EXACT_MAX`` front rows it adds rows greedily
    by hypervolume gained per second (an upper bound on the minimum). None: the whole table falls short.
    """
    import itertools

    from recipesearch.analysis import hypervolume
    from recipesearch.analysis.hypervolume_reach import reaches
    from recipesearch.analysis.pareto import pareto_mask

    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    req = sorted(set(int(i) for i in required))
    base_cost = float(pts[req, 1].sum()) if req else 0.0

    def hv(rows: Iterable[int]) -> float:
        idx = req + list(rows)
        return hypervolume(pts[idx], list(directions), reference) if idx else 0.0

    front = [int(i) for i in np.nonzero(pareto_mask(pts, list(directions)))[0] if int(i) not in req]
    if not reaches(hv(front), target):
        return None
    if len(front) <= ORACLE_EXACT_MAX:
        best: tuple[float, tuple[int, ...]] = (math.inf, ())
        for size in range(len(front) + 1):
            for rows in itertools.combinations(front, size):
                cost = float(pts[list(rows), 1].sum())
                if cost < best[0] and reaches(hv(rows), target):
                    best = (cost, rows)
        return OracleSearch(base_cost + best[0], base_cost, tuple(sorted(best[1])), True)
    chosen: list[int] = []
    while not reaches(now := hv(chosen), target):
        gains = [((hv([*chosen, i]) - now) / max(pts[i, 1], 1e-12), i) for i in front if i not in chosen]
        chosen.append(max(gains)[1])
    return OracleSearch(base_cost + float(pts[chosen, 1].sum()), base_cost, tuple(sorted(chosen)), False)
