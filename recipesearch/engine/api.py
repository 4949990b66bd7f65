"""``recipesearch.search(space, out=...)``: the Python face of ``recipesearch search``.

    import recipesearch
    result = recipesearch.search("search_spaces/digits.yaml", out="runs/digits")
    result.trials                      # the trials table, as OUT/trials.csv
    result.frontier.front              # the Pareto frontier (recipesearch.analysis.frontier)
    result.report()                    # rebuild OUT/index.html

Like Ray Tune's ``ResultGrid``: one object over what the run directory holds.
"""
from __future__ import annotations

import numbers
import os
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recipesearch import shipped
from recipesearch.errors import UserError
from recipesearch.rundir import RunDir, normalise_trials

if TYPE_CHECKING:
    import pandas as pd

    from recipesearch.space import SearchSpace


@dataclass(frozen=True, eq=False)
class SearchResult:
    trials: pd.DataFrame  # every trial, the rows and columns of trials.csv
    run_dir: RunDir
    space: SearchSpace

    @cached_property
    def frontier(self) -> Any:
        """``recipesearch.analysis.frontier(trials, space)``: completed, front, baseline curve, speedups."""
        from recipesearch.analysis.frontier import frontier

        return frontier(normalise_trials(self.trials), self.space)  # the table in hand, as the reader types it

    @property
    def headline(self) -> Any:
        """The claim at the target accuracy (``analysis.headline``)."""
        return self.frontier.headline

    @property
    def payback(self) -> Any:
        """What the search cost and when its headline recipe pays it back (``analysis.target.Payback``)."""
        return self.frontier.payback

    def report(self) -> Path:
        """Build (again) the HTML report, pareto.csv and recipes/ in the run directory; returns index.html."""
        from recipesearch.report import build_report

        return build_report(self.run_dir.root)


def search(
    space: str | Path | SearchSpace,
    out: str | Path,
    resume: bool = False,
    force: bool = False,
    address: str | None = None,
    storage: str | None = None,
    quiet: bool = False,
    trials: int | None = None,
    concurrency: int | None = None,
    cpus_per_trial: float | None = None,
    gpus_per_trial: float | str | None = None,
    executor: str = "ray",
    scheduler: str | None = None,
    report: bool = True,
    report_every: int = 4,
    command: list[str] | None = None,
    checkpoint_minutes: float | None = None,
    simplify: bool = False,
    plugins: list[Any] | tuple[Any, ...] = (),
    strict_timing: bool = False,
    search_budget: float | None = None,
    time_budget: str | float | None = None,
    warm_start: list[str | Path] | tuple[str | Path, ...] = (),
) -> SearchResult:
    """Run (or with ``resume=True`` continue) a recipe search; return its ``SearchResult``.

    ``space``: a space YAML path or a loaded ``SearchSpace``. ``out``: the run directory; an existing
    non-empty one needs ``resume`` or ``force``. ``address``: join that Ray cluster instead of starting a
    local Ray. ``storage``: an Optuna RDB URL instead of ``sqlite:///OUT/study.db``. ``trials``,
    ``concurrency``, ``cpus_per_trial`` and ``gpus_per_trial`` (a number or "auto") override the space's
    values; ``scheduler`` the space's ``scheduler.name``; ``checkpoint_minutes`` the space's (0: no checkpoints);
    ``simplify`` turns the simplify stage on (engine/simplify.py); ``strict_timing`` runs a trial timed on a busy
    machine again (engine/strict_timing.py). ``search_budget``: every stage within that many trainings of the
    baseline at budget 1 (overrides the space's); ``time_budget``: within that wall-clock time ("2h", "90m", or
    seconds) instead (engine/search_budget.py). ``warm_start``: earlier run directories whose best recipes this
    search proposes first (engine/warm_start.py), on top of the space's ``warm_start``.
    ``plugins``: modules (names or module objects) of the user's own code to import here and in every trial
    first, so their ``register_model`` / ``register_dataset`` / ``register_algorithm`` calls run everywhere;
    entries registered in the calling process (a script's ``__main__`` too) reach the trials without it.
    ``executor``: "ray" (trials on Ray Tune) or "inprocess"
    (no Ray: one trial after another in this process). ``report``: build the HTML report every
    ``report_every`` finished trials and at the end. Bad input raises ``recipesearch.errors.UserError``
    before anything is written or started.
    """
    _check_arguments(space, out, resume=resume, force=force, quiet=quiet, report=report, simplify=simplify,
                     strict_timing=strict_timing,
                     trials=trials, concurrency=concurrency, report_every=report_every, address=address,
                     storage=storage, scheduler=scheduler, executor=executor, command=command)
    from recipesearch.plugins import add_search_dir, import_plugins
    from recipesearch.space import SearchSpace, load_space

    if isinstance(plugins, (str, bytes)) or not isinstance(plugins, (list, tuple)):
        raise TypeError(f"plugins must be a list of module names or modules, not {type(plugins).__name__}")
    if isinstance(space, (str, Path)):
        space = shipped.resolve(space, "space")  # a bare name: the shipped space
        add_search_dir(Path(space).parent)  # a plugin beside the space file imports like its import paths
    import_plugins(list(plugins))

    if resume and force:
        raise UserError("--resume and --force contradict each other; pass one")
    loaded = space if isinstance(space, SearchSpace) else load_space(space)
    run = RunDir(out)
    if run.check(loaded, resume, force):  # fails before Ray or torch are even imported
        run.check_study(loaded, storage)  # a resume finds its study in study.db, in one piece

    from recipesearch.engine.driver import SearchDriver
    from recipesearch.engine.search_options import SearchOptions

    options = SearchOptions(out=Path(out), resume=resume, force=force, address=address, storage=storage,
                            quiet=quiet, trials=trials, concurrency=concurrency, cpus_per_trial=cpus_per_trial,
                            gpus_per_trial=gpus_per_trial, executor=executor,  # type: ignore[arg-type]
                            scheduler=scheduler, checkpoint_minutes=checkpoint_minutes, simplify=simplify,
                            report=report, report_every=report_every, strict_timing=strict_timing,
                            search_budget=search_budget, time_budget=time_budget,
                            warm_start=[str(d) for d in warm_start],
                            command=command or _api_command(loaded, out))
    df = SearchDriver(loaded, options).run()
    return SearchResult(df, RunDir(out), loaded)


def replicate(
    run_dir: str | Path,
    seeds: int = 3,
    claims: str = "confirmed",
    out: str | Path | None = None,
    resume: bool = False,
    force: bool = False,
    address: str | None = None,
    executor: str = "ray",
    concurrency: int | None = None,
    cpus_per_trial: float | None = None,
    gpus_per_trial: float | str | None = None,
    quiet: bool = False,
    report: bool = True,
) -> Any:
    """Retrain a finished search's claims and baseline with ``seeds`` fresh seeds here; score them on test
    (``recipesearch replicate``, engine/replicate.py). Returns a ``Replication``: ``.scored`` is replication.csv's
    table, ``.inside_share`` the share of claims whose fresh speedup lies in the reported interval."""
    if not isinstance(run_dir, (str, os.PathLike)):
        raise TypeError(f"run_dir: a run directory path is required, not {type(run_dir).__name__}")
    for name, value in (("resume", resume), ("force", force), ("quiet", quiet), ("report", report)):
        if not isinstance(value, bool):
            raise TypeError(f"{name}: True or False, not {type(value).__name__}")
    from recipesearch.engine.replicate import ReplicateOptions
    from recipesearch.engine.replicate import replicate as run_replication

    opts = ReplicateOptions(seeds=seeds, claims=claims, out=Path(out) if out is not None else None, resume=resume,
                            force=force, address=address, executor=executor, concurrency=concurrency,
                            cpus_per_trial=cpus_per_trial, gpus_per_trial=gpus_per_trial, quiet=quiet,
                            report=report, command=["recipesearch.replicate", str(run_dir)])
    return run_replication(run_dir, opts)


def _api_command(space: Any, out: str | Path) -> list[str]:
    if "recipesearch" in Path(sys.argv[0]).name or sys.argv[1:2] == ["search"]:
        return list(sys.argv)
    return ["recipesearch.search", str(space.path or space.name), "--out", str(out)]


# search's arguments checked for their type at the door: name -> (types, what to say, None allowed)
_ARGUMENT_TYPES: dict[str, tuple[tuple[type, ...], str, bool]] = {
    **{flag: ((bool,), "True or False", False) for flag in ("resume", "force", "quiet", "report", "simplify",
                                                            "strict_timing")},
    **{name: ((numbers.Integral,), "an int", True) for name in ("trials", "concurrency")},
    "report_every": ((numbers.Integral,), "an int", False),
    **{name: ((str,), "a str", True) for name in ("address", "storage", "scheduler")},
    "executor": ((str,), '"ray" or "inprocess"', False),
}


def _check_arguments(space: Any, out: Any, **named: Any) -> None:
    """``search``'s arguments at the door: a wrong type is a TypeError naming the argument (a string where a
    flag goes is not taken as True: ``force="no"`` would delete the run directory), an empty ``out`` a
    UserError; the values themselves are checked where they are used (the space, the run directory, the driver)."""
    from recipesearch.space import SearchSpace

    if not isinstance(space, (str, os.PathLike, SearchSpace)):
        raise TypeError(f"space: a search-space YAML path or a SearchSpace (recipesearch.space.load_space), "
                        f"not {type(space).__name__}")
    if out is None:
        raise TypeError("out: a run directory path is required")
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out: a run directory path (str or os.PathLike) is required, not {type(out).__name__}")
    if not os.fspath(out).strip():
        raise UserError("out: a run directory path is required, not an empty string")
    for name, (types, want, optional) in _ARGUMENT_TYPES.items():
        value = named[name]
        if optional and value is None:
            continue
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            raise TypeError(f"{name}: {want}{' or None' if optional else ''}, not {type(value).__name__}")
    command = named["command"]
    if command is not None and not (isinstance(command, (list, tuple)) and all(isinstance(c, str) for c in command)):
        raise TypeError(f"command: a list of str or None, not {type(command).__name__}")
