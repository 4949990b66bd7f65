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

This module runs the loop (3) and builds the grid (1); the table and its lookups (1, 4) are in
``bench/replay_table.py``, what replayed searches reach (hypervolume curves, the oracle bound) in
``bench/replay_hypervolume.py``.
"""
from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.replay_table import Rung, Table, TableObjective


@dataclass(frozen=True)
class TrialRecord:
    """One trial of a replayed (or recorded) search, as the loop finished it."""

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


def records_json(records: list[TrialRecord]) -> list[dict[str, Any]]:
    """The records as JSON-ready dicts."""
    return [json.loads(json.dumps(asdict(r), default=str)) for r in records]


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
    from recipesearch.engine.loop import SearchLoop
    from recipesearch.engine.proposal import Proposal
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
