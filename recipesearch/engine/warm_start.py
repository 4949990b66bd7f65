"""Warm starts: an earlier search's best recipes proposed first in this one (``warm_start:`` / ``--warm-start``).

From each earlier run directory (its trials.csv and run.json, checked; nothing written; refused while a search runs
in it) come, in order: its confirmed recipe curves, best first; then, for the first run, its headline (its best
confirmed recipe) with each of this space's optional methods switched, one at a time (``switched``): off where the
headline has it, on where it has not, at the headline's budget; then the other recipes of its front. The switches
are MosaicML's ablation of a recipe turned into proposals: a method that does not pay at the new budgets can leave
the recipe, and one the earlier search never drew with it gets its chance, where a sampler's handful of proposals
reaches neither (fashion_mnist_long_epyc: none of TPE's 5 drew its headline without progressive resizing, which
one-seed probes put at about 4.3x the plain baseline, against the headline's 3.7x).

Each is mapped onto this space: a parameter this space has, with a value its distribution holds, is kept; one it
lacks or cannot hold is dropped, and a note names it; what the earlier recipe did not set is this space's base
value (``space.complete``). The recipes are queued right after the baseline as this search's first proposals
(Optuna's ``enqueue_trial``), at most half of the proposals, and trained here for real: the sampler learns from
this search's own numbers, never from another dataset size, image size or epoch count. That is what makes the
proxy workflow work: search on a proxy (``data.subset``, a smaller ``data.image_size``, fewer epochs), then
warm-start the full search from it; the full search's report says how well the proxy ranked the recipes both
trained (Spearman's rho, ``proxy_ranking``).

An earlier search of another dataset, or of another model, is refused in one line: its recipes were chosen for
other data, and the ranking the warm start relies on would not carry over.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from recipesearch.engine.samplers import switched
from recipesearch.errors import UserError

if TYPE_CHECKING:
    from recipesearch.space import SearchSpace


@dataclass(frozen=True)
class WarmRecipe:
    params: dict[str, Any]  # this space's params
    source: str  # "RUN_DIR trial N"
    confirmed: bool
    metric: float | None  # its selection-split accuracy there (seed mean at its budget); None: a switch, never trained
    train_seconds: float | None


@dataclass(frozen=True)
class WarmStart:
    recipes: tuple[WarmRecipe, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> list[dict[str, Any]]:
        """For run.json (``warm_start``): what was proposed, with the numbers it had where it came from."""
        return [{"params": r.params, "source": r.source, "confirmed": r.confirmed, "metric": r.metric,
                 "train_seconds": r.train_seconds} for r in self.recipes]


class _Recorder:
    """A trial-like object that answers each ``suggest_*`` from ``values`` (else the default) and records the
    choices or range every parameter was asked with: what this space's distributions hold."""

    def __init__(self, values: dict[str, Any], default: Any):
        self.values, self.default, self.asked = values, default, {}

    def _get(self, name: str, holds: Any) -> Any:
        self.asked[name] = holds
        return self.values[name] if name in self.values and holds(self.values[name]) else self.default(name)

    def suggest_categorical(self, name: str, choices: Any) -> Any:
        return self._get(name, lambda v: any(v == c and type(v) is type(c) or _same_number(v, c) for c in choices))

    def suggest_float(self, name: str, low: float, high: float, *, log: bool = False) -> Any:
        return self._get(name, lambda v: _number(v) and low - 1e-12 <= float(v) <= high + 1e-12)

    def suggest_int(self, name: str, low: int, high: int, *, log: bool = False) -> Any:
        return self._get(name, lambda v: _number(v) and float(v) == int(v) and low <= int(v) <= high)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float, np.number)) and not isinstance(v, bool) and math.isfinite(float(v))


def _same_number(v: Any, c: Any) -> bool:
    return _number(v) and _number(c) and math.isclose(float(v), float(c), rel_tol=1e-9)


def _value(raw: Any) -> Any:
    """A trials.csv cell as the parameter value it was (numbers, booleans, text)."""
    if isinstance(raw, str):
        low = raw.strip().lower()
        if low in ("true", "false"):
            return low == "true"
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    if isinstance(raw, (np.bool_, bool)):
        return bool(raw)
    if isinstance(raw, np.integer):
        return int(raw)
    if isinstance(raw, np.floating):
        return float(raw)
    return raw


def row_params(row: pd.Series) -> dict[str, Any]:
    """A trials.csv row's parameters (its ``params_*`` cells that are set) as the values they were."""
    return {c[len("params_"):]: _value(v) for c, v in row.items()
            if c.startswith("params_") and not (isinstance(v, float) and math.isnan(v))}


def map_params(row: pd.Series, space: SearchSpace) -> tuple[dict[str, Any], list[str]]:
    """This space's params for an earlier trial's row (``params_*`` columns), and the names of the earlier
    parameters it could not keep."""
    earlier = row_params(row)
    if "budget" in earlier and not any(_same_number(earlier["budget"], b) for b in space.budgets):
        earlier["budget"] = min(space.budgets, key=lambda b: abs(math.log(float(b) / float(earlier["budget"]))))
    base = space.complete({})
    recorder = _Recorder(earlier, base.get)  # walks the define-by-run path the earlier values take
    space.suggest(recorder)
    kept = {k: v for k, v in earlier.items() if k in recorder.asked and recorder.asked[k](v)}
    dropped = sorted(k for k in earlier if k not in kept)
    return space.complete(kept), dropped


def _read(run_dir: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """trials.csv and run.json of an earlier search, checked (a damaged file is one line naming it); read under
    the run directory's lock, so a search running there is refused rather than read half-written."""
    from recipesearch.analysis.frontier import Objectives
    from recipesearch.rundir import RunDir
    from recipesearch.runlock import Held, run_dir_lock
    from recipesearch.trials_columns import metric_column

    run = RunDir(run_dir)
    if not run.trials_csv.is_file():
        raise UserError(f"--warm-start: {run_dir} is not a search's run directory (no trials.csv)")
    try:
        lock = run_dir_lock(run_dir).acquire(publish=False)
    except Held:
        raise UserError(f"--warm-start: a search is running in {run_dir}; warm-start from it once it "
                        "finished") from None
    try:
        meta = run.read_meta(strict=True)
        return run.read_trials([metric_column(Objectives.from_run_meta(meta).metric_split)]), meta
    finally:
        lock.release()


def _data_and_model(trials: pd.DataFrame) -> tuple[str, str]:
    for text in trials.get("recipe_json", pd.Series(dtype=object)).dropna():
        try:
            recipe = json.loads(text)
            return str(recipe["data"]["name"]), str(recipe["model"]["name"])
        except (ValueError, KeyError, TypeError):
            continue
    return "", ""


def warm_start(run_dirs: list[str | Path], space: SearchSpace) -> WarmStart:
    """The recipes to propose first, from ``run_dirs`` (module docstring), and the notes on what was dropped."""
    from recipesearch.analysis.frontier import Objectives, frontier

    recipes: list[WarmRecipe] = []
    notes: list[str] = []
    seen: set[str] = set()
    data, model = str(space.base.data.name), str(space.base.model.name)
    for i, given in enumerate(run_dirs):
        run_dir = Path(given)
        trials, meta = _read(run_dir)
        theirs = _data_and_model(trials)
        if theirs != ("", "") and theirs != (data, model):
            raise UserError(f"--warm-start: {run_dir} searched {theirs[1]} on {theirs[0]}, this search {model} on "
                            f"{data}: its recipes were chosen for other data or another model")
        f = frontier(trials, Objectives.from_run_meta(meta))
        keys = f.trials.set_index("number")["recipe_key"]
        order = [(int(n), True) for n in f.recipes.loc[f.recipes["confirmed"], "number"]]
        order += [(int(n), False) for n in f.front.loc[~f.front["is_baseline"].astype(bool), "number"]]
        dropped: set[str] = set()
        mine: list[WarmRecipe] = []
        for number, confirmed in order:
            if keys.get(number) in seen:
                continue
            seen.add(keys.get(number))
            row = f.trials[f.trials["number"] == number].iloc[0]
            params, lost = map_params(row, space)
            dropped.update(lost)
            if space.is_baseline(params) or any(r.params == params for r in recipes + mine):
                continue  # nothing left of it but the baseline, or a recipe already taken
            point = f.point(number, float(row["budget"]))
            metric = float((row if point is None else point)[f.metric])
            seconds = float((row if point is None else point)["train_seconds"])
            mine.append(WarmRecipe(params, f"{run_dir} trial {number}", confirmed, metric, seconds))
        if i == 0 and mine and mine[0].confirmed:  # the headline's switches, after the confirmed curves
            n = sum(r.confirmed for r in mine)
            mine[n:n] = [WarmRecipe(params, f"{mine[0].source} {move}", False, None, None)
                         for move, params in switched(mine[0].params, space)
                         if not space.is_baseline(params) and all(r.params != params for r in recipes + mine)]
        recipes += mine
        if dropped:
            notes.append(f"--warm-start {run_dir}: parameters this space does not have or cannot hold were dropped: "
                         f"{', '.join(sorted(dropped))}")
    return WarmStart(tuple(recipes), tuple(notes))


def proxy_ranking(warm: list[dict[str, Any]], trials: pd.DataFrame, metric: str) -> dict[str, Any] | None:
    """How well the earlier (proxy) search ranked the recipes both searches trained: Spearman's rho of their
    selection-split accuracy and of their training time there against here (this search's first run of each
    warm-started recipe, at the same budget). None with fewer than 3 such recipes."""
    from recipesearch.space import params_key

    if "params_budget" not in trials:
        return None
    here = {}
    for _, row in trials[trials["state"] == "COMPLETE"].iterrows():
        here.setdefault(params_key(row_params(row)), (float(row[metric]), float(row["train_seconds"])))
    pairs = [(w["metric"], w["train_seconds"], *here[params_key(w["params"])]) for w in warm
             if params_key(w["params"]) in here and w["metric"] is not None]  # a switch was never trained there
    if len(pairs) < 3:
        return None
    a = np.array(pairs, dtype=float)
    rho_acc = pd.Series(a[:, 0]).corr(pd.Series(a[:, 2]), method="spearman")
    rho_time = pd.Series(a[:, 1]).corr(pd.Series(a[:, 3]), method="spearman")
    return {"recipes": len(pairs), "rho_accuracy": float(rho_acc), "rho_seconds": float(rho_time)}
