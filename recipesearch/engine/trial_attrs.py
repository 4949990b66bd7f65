"""The user attrs the search loop writes on a trial: its recipe's when it is asked (``asked_attrs``), its
result's when it is told (``outcome``: the measured numbers, the error, and the objective values).

What these attrs are called: recipesearch/trials_columns.py; how they are read back: engine/study.py.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recipesearch.analysis.frontier import finite
from recipesearch.engine import study as st
from recipesearch.errors import ConfigError
from recipesearch.trials_columns import ACCURACY, TIME, VAL_ACCURACY

if TYPE_CHECKING:
    import optuna

    from recipesearch.space import SearchSpace


def outcome(space: SearchSpace, result: dict | None, crash: str | None) -> tuple[dict[str, Any], list[float] | None]:
    """User attrs to store and objective values (None: FAIL) for one trial's last result."""
    result = result or {}
    attrs: dict[str, Any] = {}
    for key in (ACCURACY, VAL_ACCURACY, "loss", TIME, "throughput", "data_wait_fraction",
                "wall_seconds", "eval_seconds", "rung_seconds", "cpu_share", "load_start", "load_end"):
        # eval_seconds (flip TTA doubles it) and rung_seconds (evaluations at rungs) are outside train_seconds
        if finite(result.get(key)):
            attrs[key] = float(result[key])
    if finite(result.get("checkpoint_seconds")) and result.get("checkpoints"):  # outside train_seconds
        attrs["checkpoint_seconds"] = float(result["checkpoint_seconds"])
    for key in ("checkpoints", "resumes"):  # resumes: segments - 1 (train_seconds sums the segments)
        if finite(result.get(key)) and result[key]:
            attrs[key] = int(result[key])
    if result.get("resumes") and finite(result.get("resume_gap_seconds")):  # lost work + restart, wall clock
        attrs["resume_gap_seconds"] = float(result["resume_gap_seconds"])
    if result.get("resumes") and finite(result.get("resumed_at_step")):  # the steps before it were not trained again
        attrs["resumed_at_step"] = int(result["resumed_at_step"])
    for key in ("threads", "steps"):  # evidence: the torch threads the trial really used
        if finite(result.get(key)):
            attrs[key] = int(result[key])
    # where it ran, and on what (times compare within one hardware class); the device Ray's assignment gave it
    for key in ("node", "hardware", "assigned_device"):
        if result.get(key):
            attrs[key] = str(result[key])
    if isinstance(result.get("gpu_shared"), bool):  # another process computed on its GPU (machine_load.GpuWatch)
        attrs["gpu_shared"] = result["gpu_shared"]
    if result.get("warnings"):  # the trainer's own (a checkpoint it could not go on from, say)
        attrs["warnings"] = str(result["warnings"])[:1000]
    if isinstance(result.get("gpu_ids"), list):  # the GPUs Ray assigned the trial ([] for none)
        attrs["gpu_ids"] = [i if isinstance(i, int) else str(i) for i in result["gpu_ids"]]
    if finite(result.get("workers")) and result["workers"] > 1:  # data-parallel: each rank's node and GPUs
        attrs["workers"] = int(result["workers"])
        for key in ("worker_nodes", "worker_gpu_ids"):
            if isinstance(result.get(key), list):
                attrs[key] = result[key]
    error = result.get("error") or crash
    if not error and not result:
        error = "the trial reported no result"
    acc = result.get(space.selection_column)
    secs = result.get(TIME)
    if not error and not (finite(acc) and finite(secs)):
        error = f"no finite {space.metric_split} accuracy / train_seconds in the result"
    if error:
        attrs["error"] = str(error)
        return attrs, None
    acc, secs = float(acc), float(secs)
    cost = space.cost(secs)
    if cost is not None:
        attrs["cost"] = float(cost)
    constraints = space.constraints_values(acc, secs)
    if constraints:
        attrs["constraints"] = [float(c) for c in constraints]
    return attrs, [float(v) for v in space.objective_values(acc, secs)]


def method_label(recipe: Any, base: Any) -> str:
    """The trial's methods, '+'-joined: its algorithms, and its optimizer where it is not the base recipe's
    (``muon``): a search that switches optimizers must not credit Muon's speed to the algorithms beside it,
    in the frontier's labels or in the per-method effects."""
    names = set(recipe.algorithms)
    if recipe.optimizer.name != base.optimizer.name:
        names.add(recipe.optimizer.name)
    return "+".join(sorted(names))


def _safe_algorithms(space: SearchSpace, params: dict[str, Any]) -> list[str]:
    try:
        return list(space.algorithms_on(params))
    except Exception:  # noqa: BLE001 - only a label for a trial that failed anyway
        return []


def asked_attrs(space: SearchSpace, trial: optuna.Trial, params: dict[str, Any],
                error: str | None) -> tuple[dict[str, Any] | None, str | None, dict[str, Any]]:
    """(recipe as a dict, error, user attrs) of a trial asked with ``params``; ``error``: its params are invalid.

    Its stage and budget always; once its recipe validates, whether it is a baseline run and the recipe's
    identity and methods. An invalid recipe fails in the driver without costing a worker."""
    attrs: dict[str, Any] = {"budget": params.get("budget"), "is_baseline": False, st.STAGE: st.stage_of(trial)}
    if error is not None:
        return None, error, attrs
    # An enqueued trial says whether it is a baseline run; a sampled base recipe is one too.
    known = trial.user_attrs.get("is_baseline")
    attrs["is_baseline"] = bool(known) if known is not None else space.is_baseline(params)
    try:
        recipe = space.recipe_for(params, st.seed_index(trial))
    except ConfigError as exc:
        attrs["algorithms"] = "+".join(sorted(_safe_algorithms(space, params)))
        return None, f"invalid recipe: {exc}", attrs
    attrs.update(budget=recipe.budget, epochs=recipe.epochs, seed=recipe.seed,
                 algorithms=method_label(recipe, space.base), recipe_id=recipe.id(),
                 recipe_json=recipe.model_dump_json(exclude_none=True))
    return recipe.to_dict(), None, attrs
