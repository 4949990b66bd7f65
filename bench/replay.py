"""Replay mode: run a sampler against a recorded table of trained recipes instead of training them.

A search costs hours when every trial trains; comparing samplers needs many seeds. As in tabular HPO
benchmarks (NAS-Bench-201, HPOBench: Eggensperger et al. 2021), we train once, record every trial's
outcome, and let each sampler search the *table*: a trial's result is looked up, so a 26-trial search takes
a second and 10+ seeds per sampler are cheap.

Method
1) The replay space is a real ``SearchSpace`` whose parameters are all discrete (budgets as listed,
   algorithm switches, ``grid``/``choices`` hyperparameters) — see ``grid_space`` — so every point a
   sampler can propose is one of finitely many recipes, and the table can hold all of them (``record_grid``
   trains the whole grid). Lookups key on ``recipesearch.space.params_key`` (the canonical params string).
2) ``run_study`` runs the very loop ``recipesearch search`` runs (``recipesearch.engine.loop.SearchLoop``:
   baselines queued first at every budget, the space's sampler or the sweep, ask → recipe → tell) with the
   in-process executor instead of Ray Tune: ``concurrency`` trials are asked before their results are told.
   The objective is any function of the params: a table lookup (``TableObjective``) or, when recording, a
   real or synthetic training.
3) Learning curves: a table row may also hold ``rungs``, ``[[fraction, accuracy, train_seconds so far],
   ...]`` as ``trials.csv`` writes them, recorded at the scheduler's rung fractions on the split of the
   row's accuracy. With a pruning scheduler (``replay(..., scheduler="moasha")``) the executor reports
   those values to ``proposal.on_rung`` in order, exactly as the trainer does in a real search, and stops
   the trial when told (its compute is then its last rung's train_seconds); the loop's own code ranks the
   rung and promotes across budgets (``scheduler="promote"``), so replay runs the scheduler of real searches.
4) Tables that were not recorded on the grid (a real search with continuous parameters) can still be
   replayed with ``miss="nearest"``: a proposal absent from the table gets the result of the nearest
   recorded trial (mismatched switches/choices count 1 each, numbers by their distance in log space over
   the parameter's range); the hit rate is reported, because such a replay is a surrogate, not exact.

With the same table, sampler, scheduler and seed, ``run_study`` is deterministic: replaying a recorded search
reproduces its trials exactly (``tests/bench/test_replay.py``; with schedulers,
``tests/bench/test_replay_scheduler.py``).
"""
from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

Outcome = tuple[float, float]  # (accuracy, train_seconds)
Rung = tuple[float, float, float]  # (fraction of the steps, accuracy, train_seconds so far)


@dataclass(frozen=True)
class TrialRecord:
    number: int
    params: dict[str, Any]
    accuracy: float
    train_seconds: float
    state: str = "COMPLETE"
    hit: bool = True  # the outcome was found in the table exactly (always True when not replaying)
    # PRUNED: the rung it was stopped at; its accuracy is NaN (no full-budget result), its train_seconds
    # the compute it used up to that rung
    pruned_at: float | None = None
    promoted_from: int | None = None  # scheduler promote: the trial whose recipe this one retrains
    duplicate_of: int | None = None  # PRUNED without training: the trial that trains the same recipe

    def to_row(self) -> dict[str, Any]:
        row = {"number": self.number, "state": self.state, "accuracy": self.accuracy,
               "train_seconds": self.train_seconds, "hit": self.hit}
        row.update({f"params_{k}": v for k, v in self.params.items()})
        return row


# 1) the table ------------------------------------------------------------------------------------------


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


def write_table(records: Iterable[TrialRecord], path: str | Path, extra: dict[int, dict[str, Any]] | None = None) -> None:
    """A recorded search as CSV in the trials.csv layout (number, state, accuracy, train_seconds, params_*)."""
    import pandas as pd

    rows = []
    for rec in records:
        row = rec.to_row()
        row.update((extra or {}).get(rec.number, {}))
        rows.append(row)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)


# 2) objectives ------------------------------------------------------------------------------------------


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


# 3) the search loop without Ray -------------------------------------------------------------------------


def with_sampler(space: Any, name: str, seed: int, options: dict[str, Any] | None = None) -> Any:
    """A copy of ``space`` whose sampler is ``name`` seeded with ``seed`` (same params, same recipes)."""
    import copy

    from recipesearch.space import SamplerSpec

    new = copy.copy(space)
    new.sampler = SamplerSpec(name=name, seed=seed, options=dict(options or {}))
    return new


def with_scheduler(space: Any, scheduler: str | dict[str, Any] | None) -> Any:
    """A copy of ``space`` whose scheduler is ``scheduler``: a name (fifo, moasha, promote, moasha+promote;
    the space's reduction factor and rungs kept) or the fields to change (``{"name": "moasha",
    "min_fraction": 1/3}``); None keeps the space's own."""
    if scheduler is None:
        return space
    return space.with_scheduler(**({"name": scheduler} if isinstance(scheduler, str) else dict(scheduler)))


def rung_reports(curve: Iterable[Rung], fractions: Iterable[float]) -> list[dict[str, Any]]:
    """The reports a trainer would send at ``fractions`` (``Proposal.on_rung``'s format), from a recorded
    curve; a fraction the curve lacks is an error (the scheduler would silently stop pruning)."""
    out = []
    for fraction in fractions:
        match = [r for r in curve if math.isclose(r[0], fraction, rel_tol=1e-6)]
        if not match:
            raise ValueError(f"the table has no rung value at fraction {fraction:.4g} for this recipe: record "
                             "the table with the scheduler's rungs (or replay without a pruning scheduler)")
        _, acc, secs = match[0]
        out.append({"rung": float(fraction), "rung_accuracy": acc, "train_seconds": secs})
    return out


def run_study(
    space: Any,
    objective: Callable[[dict[str, Any]], tuple[Any, ...]],
    n_trials: int,
    concurrency: int = 1,
) -> list[TrialRecord]:
    """``recipesearch search``'s own loop (``SearchLoop``) over ``objective``, executed in process (no Ray).

    ``objective(params) -> ((accuracy, train_seconds) | None, hit[, rungs])``; None fails the trial. The
    loop queues the baselines first, asks the space's sampler (or the sweep), and the ``InProcess``
    executor asks ``concurrency`` trials before their results are told in order, as that many parallel
    trials would come back. With a pruning scheduler the executor reports the recipe's recorded ``rungs``
    to ``proposal.on_rung`` in order and returns the stopped result when told, as a trainer does (module
    doc, 3). The study lives in memory.
    """
    import optuna

    from recipesearch.engine import study as st
    from recipesearch.engine.executors import InProcess
    from recipesearch.engine.loop import Proposal, SearchLoop
    from recipesearch.engine.samplers import make_sampler
    from recipesearch.engine.storage import open_study

    records: list[TrialRecord] = []
    hits: dict[int, bool] = {}

    def execute(proposal: Proposal) -> dict[str, Any]:
        found, hit, *curve = objective(proposal.params)
        hits[proposal.number] = hit
        if found is None:
            return {"error": "not in the table"}
        if proposal.on_rung is not None:
            for report in rung_reports(curve[0] if curve else (), proposal.config.get("rungs") or ()):
                if not proposal.on_rung(report):
                    return {**report, "pruned": True}
        acc, secs = found
        return {"accuracy": acc, "val_accuracy": acc, "train_seconds": secs}

    def record(frozen: optuna.trial.FrozenTrial) -> None:
        state, a = frozen.state.name, frozen.user_attrs
        spent = state in ("COMPLETE", "PRUNED")  # a stopped trial's compute is its last rung's train_seconds
        records.append(TrialRecord(
            frozen.number, st.trial_params(frozen),
            a["accuracy"] if state == "COMPLETE" else math.nan,
            a["train_seconds"] if spent else math.nan,
            state, hits.get(frozen.number, True),
            a.get(st.PRUNED_AT) if state == "PRUNED" else None, a.get(st.PROMOTED_FROM), a.get(st.DUPLICATE_OF)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        storage = optuna.storages.InMemoryStorage()
        study = open_study(space, storage, make_sampler(space), resuming=False)
        loop = SearchLoop(space, study, storage, n_trials, on_finish=record)
        loop.prepare(resuming=False)
        loop.run(InProcess(execute, concurrency))
    return records


def replay(space: Any, table: Table, sampler: str, seed: int, n_trials: int, concurrency: int = 1,
           miss: str = "fail", options: dict[str, Any] | None = None,
           scheduler: str | dict[str, Any] | None = None) -> tuple[list[TrialRecord], float]:
    """Run ``sampler`` (seeded) against ``table``, under ``scheduler`` (``with_scheduler``; None: the space's
    own); returns the trials and the exact-hit rate."""
    objective = TableObjective(table, space, miss)
    searched = with_scheduler(with_sampler(space, sampler, seed, options), scheduler)
    records = run_study(searched, objective, n_trials, concurrency)
    total = objective.hits + objective.misses
    return records, (objective.hits / total if total else math.nan)


# 4) a discrete space and its full table ----------------------------------------------------------------


def grid_space(base: str | Path | dict[str, Any], budgets: list[float], algorithms: list[str],
               name: str = "replay-grid", trials: int = 26, concurrency: int = 2, threads: int = 1,
               hparams: dict[str, Any] | None = None, sampler: dict[str, Any] | None = None) -> Any:
    """A ``SearchSpace`` with only discrete parameters: budgets x algorithm switches (defaults) x grids."""
    from recipesearch.space import space_from_dict

    return space_from_dict({
        "name": name, "base": str(base) if isinstance(base, Path) else base, "budgets": budgets,
        "objectives": ["accuracy", "train_seconds"], "metric_split": "test",
        "sampler": sampler or {"name": "tpe", "seed": 0}, "trials": trials, "concurrency": concurrency,
        "resources": {"cpus": 1, "gpus": 0}, "threads_per_trial": threads, "seed": 0,
        "hparams": hparams or {}, "algorithms": {a: {} for a in algorithms},
        # A table holds one outcome per recipe: replay compares the proposal stage, so one baseline run
        # per budget and no confirmation stage (repeats would only look the same outcome up again).
        "baseline": {"seeds": 1}, "confirm": False,
    }, source="bench:replay-grid")


def enumerate_space(space: Any) -> list[dict[str, Any]]:
    """Every params dict a discrete space can produce (define-by-run walked over all choices)."""
    from recipesearch.space import params_key

    out: dict[str, dict[str, Any]] = {}

    def walk(fixed: dict[str, Any]) -> None:
        probe = _Probe(fixed)
        try:
            params = space.suggest(probe)
        except _Branch as br:
            for choice in br.choices:
                walk({**fixed, br.name: choice})
            return
        out.setdefault(params_key(params), params)

    walk({})
    return list(out.values())


class _Branch(Exception):
    def __init__(self, name: str, choices: list[Any]):
        self.name, self.choices = name, choices


class _Probe:
    """A stand-in trial that raises at the first categorical it has no fixed value for."""

    def __init__(self, fixed: dict[str, Any]):
        self.fixed = fixed

    def suggest_categorical(self, name: str, choices: Any) -> Any:
        if name in self.fixed:
            return self.fixed[name]
        raise _Branch(name, list(choices))

    def suggest_float(self, name: str, *a: Any, **k: Any) -> Any:
        raise TypeError(f"{name} is continuous: a replay grid needs discrete parameters (grid/choices)")

    suggest_int = suggest_float


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


def records_json(records: list[TrialRecord]) -> list[dict[str, Any]]:
    return [json.loads(json.dumps(asdict(r), default=str)) for r in records]
