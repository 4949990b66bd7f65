"""Successive halving on two objectives: which trials go on at a rung, and which recipes move up a budget.

Pure numeric code (no Ray, no Optuna): the search loop (``engine/loop.py``) feeds it the values the trials
reported, for real searches on Ray Tune, in-process runs and replay alike.

**Rungs** (``rung_fractions``): a trial reports its selection-split accuracy and its train_seconds so far
after ``1/eta**k`` of its steps (k = K .. 1, the smallest at least ``min_fraction``): with ``eta`` = 3 and
``min_fraction`` = 1/9, after 1/9 and 1/3 of the steps, then at its end. Asynchronous successive halving
(ASHA, Li et al., MLSys 2020), stopping variant: at each rung a trial goes on only if it is among the best
``n // eta`` of the ``n`` trials that have reached that rung so far (itself included); while fewer than
``eta`` have, it goes on (nothing to compare with yet: ASHA's first trials at a rung always continue).

**Two objectives** (MO-ASHA, Schmucker, Donini, Zafar, Salinas & Archambeau, "Multi-objective
Asynchronous Successive Halving", 2021): the rung's trials are ranked by non-dominated sorting (the fronts
of NSGA-II, Deb et al. 2002) on (accuracy: higher is better, train_seconds: lower is better); inside a
front, by exclusive hypervolume contribution, largest first (SMS-EMOA's selection, Beume, Naujoks &
Emmerich 2007), on the objectives scaled to [0, 1] over the rung's trials with the reference point at 1.1
(so the front's two extremes get a finite contribution; Schmucker et al. break ties in a front with an
epsilon-net or NSGA-II's crowding distance instead). Equal contributions (duplicates) go to the trial that
reported first. Only trials of **one budget** are ever compared: accuracy after a third of a budget-b run
depends on b's dilated LR schedule, so the caller groups by budget (``population``).

**Promotion across budgets** (``promotions``): with the same ranking, the best ``n // eta`` of the ``n``
recipes that finished at one budget are trained again at the next budget (synchronous successive halving's
rule, applied as results come in), so the recipes that matter get tradeoff curves.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

DIRECTIONS = ("maximize", "minimize")  # (accuracy, train_seconds)
HV_REFERENCE = 1.1  # in scaled objective space, where the worst value of each objective is 1


def rung_fractions(reduction_factor: int, min_fraction: float) -> tuple[float, ...]:
    """Fractions of a trial's steps at which it reports, smallest first; the end (1.0) is not a rung."""
    if reduction_factor < 2:
        raise ValueError(f"reduction_factor must be >= 2, got {reduction_factor}")
    if not 0 < min_fraction < 1:
        raise ValueError(f"min_fraction must be in (0, 1), got {min_fraction}")
    k = int(math.floor(math.log(1 / min_fraction) / math.log(reduction_factor) + 1e-9))
    return tuple(float(reduction_factor) ** -i for i in range(k, 0, -1))


def rung_step(fraction: float, total_steps: int) -> int | None:
    """The step after which a rung reports: ``fraction`` of the steps, at least 1 and before the last step
    (None for a run too short to have it)."""
    step = min(total_steps - 1, max(1, round(fraction * total_steps)))
    return step if 0 < step < total_steps else None


def _scaled_minimisation(points: np.ndarray) -> np.ndarray:
    """(n, 2) (accuracy, seconds) -> both to be minimised, scaled to [0, 1] over the rows."""
    from recipesearch.analysis._objectives import as_minimization

    values = as_minimization(points, DIRECTIONS)
    low, high = values.min(axis=0), values.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    return (values - low) / span


def _fronts(values: np.ndarray) -> list[np.ndarray]:
    """Non-dominated sorting of a minimisation array: index arrays, best front first."""
    from recipesearch.analysis.pareto import _nondominated

    left = np.arange(len(values))
    fronts = []
    while len(left):
        mask = _nondominated(values[left])
        fronts.append(left[mask])
        left = left[~mask]
    return fronts


def _hv_contributions(front: np.ndarray, ref: float = HV_REFERENCE) -> np.ndarray:
    """Exclusive hypervolume contribution of each point of a 2-D mutually non-dominated minimisation set.

    Sorted by the first objective (ascending, so the second descends), a point's exclusive box reaches to
    its right neighbour's first objective and its left neighbour's second (the reference at the ends).
    Duplicates contribute 0 each (neither alone adds anything)."""
    n = len(front)
    order = np.lexsort((front[:, 1], front[:, 0]))
    f = front[order]
    out = np.zeros(n)
    for i in range(n):
        right = f[i + 1, 0] if i + 1 < n else ref
        left = f[i - 1, 1] if i > 0 else ref
        out[order[i]] = max(0.0, right - f[i, 0]) * max(0.0, left - f[i, 1])
    return out


def rank_order(points: Sequence[Sequence[float]]) -> list[int]:
    """Row indices of (accuracy, train_seconds) points, best first (module docstring: fronts, then
    hypervolume contribution, then row order, i.e. who reported first)."""
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    if len(pts) == 0:
        return []
    if not np.isfinite(pts).all():
        raise ValueError("rung values must be finite")
    values = _scaled_minimisation(pts)
    order: list[int] = []
    for front in _fronts(values):
        front = np.sort(front)  # row order: the stable tie-break
        contrib = _hv_contributions(values[front])
        order += [int(front[i]) for i in sorted(range(len(front)), key=lambda i: (-contrib[i], front[i]))]
    return order


def keep_count(n: int, reduction_factor: int) -> int:
    """How many of ``n`` trials at a rung go on: ``n // eta`` (all of them while ``n < eta``)."""
    return n if n < reduction_factor else n // reduction_factor


@dataclass(frozen=True)
class RungDecision:
    go_on: bool
    position: int  # 0-based place in the rung's ranking
    n: int  # trials at the rung so far, this one included
    keep: int  # how many of them go on

    def describe(self) -> str:
        verdict = "goes on" if self.go_on else "stopped"
        return f"{verdict}: ranked {self.position + 1} of {self.n} at its rung, the best {self.keep} go on"


@dataclass(frozen=True)
class RungRecord:
    """One trial's report at one rung."""

    trial: int
    budget: float
    fraction: float
    accuracy: float
    seconds: float


def population(records: Iterable[RungRecord], budget: float, fraction: float) -> list[RungRecord]:
    """The records of one rung of one budget (never another budget's: their schedules differ), in the
    order the trials reported, one per trial (its first)."""
    seen: set[int] = set()
    out = []
    for r in records:
        if math.isclose(r.budget, budget, rel_tol=1e-9) and math.isclose(r.fraction, fraction, rel_tol=1e-9) \
                and r.trial not in seen:
            seen.add(r.trial)
            out.append(r)
    return out


def decide(candidate: RungRecord, others: Iterable[RungRecord], reduction_factor: int) -> RungDecision:
    """Does ``candidate`` go on from its rung, given every record so far (any budget or rung: filtered here)?"""
    rung = [r for r in population(others, candidate.budget, candidate.fraction) if r.trial != candidate.trial]
    rung.append(candidate)
    order = rank_order([(r.accuracy, r.seconds) for r in rung])
    position = order.index(len(rung) - 1)
    keep = keep_count(len(rung), reduction_factor)
    return RungDecision(position < keep, position, len(rung), keep)


def promotions(finished: Sequence[tuple[int, float, float]], promoted: Iterable[int],
               reduction_factor: int) -> list[int]:
    """Trials to train again at the next budget: the best ``n // eta`` of the ``n`` recipes that finished at
    one budget (``finished``: (trial, accuracy, seconds) in finishing order), less those already promoted.
    Nothing while fewer than ``eta`` finished."""
    n = len(finished)
    if n < reduction_factor:
        return []
    done = set(promoted)
    order = rank_order([(acc, secs) for _, acc, secs in finished])
    best = [finished[i][0] for i in order[: n // reduction_factor]]
    return [t for t in best if t not in done]
