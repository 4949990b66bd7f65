"""The recorded table replay mode searches, and its lookup: ``Table`` (outcomes and learning curves by canonical
params key, read from a trials table) and ``TableObjective`` (a proposal's outcome from it, exact or nearest).

Lookups key on ``recipesearch.space.params_key``. A table not recorded on a grid (a real search with continuous
parameters) can be replayed with ``miss="nearest"``: a proposal absent from the table gets the result of the
nearest recorded trial (mismatched switches/choices count 1 each, numbers by their distance in log space over the
parameter's range); the hit rate is reported, because such a replay is a surrogate, not exact.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

Outcome = tuple[float, float]  # (accuracy, train_seconds)
Rung = tuple[float, float, float]  # (fraction of the steps, accuracy, train_seconds so far)


class Table:
    """Recorded outcomes by canonical params key, with each row's learning curve when it was recorded.

    ``rows``: ``(params, accuracy, train_seconds)`` or ``(params, accuracy, train_seconds, rungs)`` with
    ``rungs`` a list of ``(fraction, accuracy, train_seconds so far)`` (or None)."""

    def __init__(self, rows: Iterable[tuple[Any, ...]]):
        from recipesearch.space import params_key

        self.params: list[dict[str, Any]] = []
        self.outcomes: list[Outcome] = []
        self.curves: list[tuple[Rung, ...]] = []
        self._index: dict[str, int] = {}
        for params, acc, secs, *more in rows:
            key = params_key(params)
            if key in self._index:  # a recipe recorded twice (two seeds, two runs): keep the first
                continue
            self._index[key] = len(self.params)
            self.params.append(dict(params))
            self.outcomes.append((float(acc), float(secs)))
            self.curves.append(tuple((float(f), float(a), float(t)) for f, a, t in (more[0] if more and more[0] else ())))

    def __len__(self) -> int:
        return len(self.params)

    def index(self, params: dict[str, Any]) -> int | None:
        from recipesearch.space import params_key

        return self._index.get(params_key(params))

    def get(self, params: dict[str, Any]) -> Outcome | None:
        i = self.index(params)
        return None if i is None else self.outcomes[i]

    @property
    def has_curves(self) -> bool:
        return any(self.curves)

    def points(self) -> np.ndarray:
        return np.asarray(self.outcomes, dtype=float).reshape(-1, 2)

    @classmethod
    def from_trials(cls, df: Any, space: Any) -> Table:
        """From a trials table in the trials.csv contract (``params_<name>`` columns, COMPLETE rows, and
        the ``rungs`` column, JSON, where the trials reported rungs)."""
        names = space.param_names()
        rows = []
        for _, r in df[df["state"] == "COMPLETE"].iterrows():
            params = {}
            for n in names:
                v = r.get(f"params_{n}")
                if v is None or (isinstance(v, float) and math.isnan(v)):
                    continue
                params[n] = param_value(v)
            rungs = r.get("rungs")
            rows.append((params, float(r["accuracy"]), float(r["train_seconds"]),
                         json.loads(rungs) if isinstance(rungs, str) and rungs else None))
        return cls(rows)

    @classmethod
    def read_csv(cls, path: str | Path, space: Any) -> Table:
        import pandas as pd

        return cls.from_trials(pd.read_csv(path), space)


def param_value(v: Any) -> Any:
    """CSV cells back to params values: 'True'/'False' to bool, numpy scalars to Python."""
    if isinstance(v, str):
        if v in ("True", "False"):
            return v == "True"
        try:
            return float(v)
        except ValueError:
            return v
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    return v


class TableObjective:
    """Looks a proposal up in a ``Table``; ``miss``: "fail" (trial FAIL) or "nearest" (see module doc).

    Returns ``(outcome, hit, rungs)``: the row's learning curve comes with it (the nearest row's on a miss)."""

    def __init__(self, table: Table, space: Any, miss: str = "fail"):
        if miss not in ("fail", "nearest"):
            raise ValueError(f"miss must be 'fail' or 'nearest', got {miss!r}")
        self.table, self.space, self.miss = table, space, miss
        self.hits = self.misses = 0

    def __call__(self, params: dict[str, Any]) -> tuple[Outcome | None, bool, tuple[Rung, ...]]:
        i = self.table.index(params)
        if i is not None:
            self.hits += 1
            return self.table.outcomes[i], True, self.table.curves[i]
        self.misses += 1
        if self.miss == "fail" or len(self.table) == 0:
            return None, False, ()
        i = self._nearest(params)
        return self.table.outcomes[i], False, self.table.curves[i]

    def _nearest(self, params: dict[str, Any]) -> int:
        specs = {p.name: p for p in self.space.params}
        best, best_d = 0, math.inf
        for i, other in enumerate(self.table.params):  # first of equally near rows: deterministic
            d = 0.0
            for k in set(params) | set(other):
                a, b = params.get(k), other.get(k)
                if a is None or b is None or isinstance(a, (bool, str)) or isinstance(b, (bool, str)):
                    d += float(a != b)
                else:
                    d += _numeric_distance(float(a), float(b), specs.get(k))
            if d < best_d:
                best, best_d = i, d
        return best


def _numeric_distance(a: float, b: float, spec: Any) -> float:
    lo = getattr(spec, "low", None) if spec is not None else None
    hi = getattr(spec, "high", None) if spec is not None else None
    if a > 0 and b > 0:
        a, b = math.log(a), math.log(b)
        if lo and hi and lo > 0 and hi > lo:
            return min(1.0, abs(a - b) / (math.log(hi) - math.log(lo)))
    elif lo is not None and hi is not None and hi > lo:
        return min(1.0, abs(a - b) / (hi - lo))
    return min(1.0, abs(a - b))
