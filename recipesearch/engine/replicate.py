"""``recipesearch replicate``: retrain a finished search's claims and its baseline with fresh seeds, here.

A speedup measured on one machine at one moment may not hold on the machine that will train the recipe,
or when the search's machine was busy while one arm ran. This command is what a user runs on that
hardware to learn whether the recipe still pays there:

    read RUN_DIR (trials, selection, space), its frontier and its claims   # nothing written before this
    plan: the baseline at every budget, each claimed recipe at its claim's budgets, --seeds fresh seeds,
          interleaved seed by seed, arms in rotated order (analysis/replication.py)
    run the plan like a search runs trials: Ray (local or --address) or in-process, in a run directory
          of its own (default RUN_DIR/replication: study.db, trials.csv, run.json), resumable with --resume
    score on test: each claim's fresh speedup with its interval over the fresh seeds, inside the reported
          interval or not, the hardware and the load -> replication.csv; RUN_DIR's report gets a section

The runs are the search's own recipes (trials.csv ``recipe_json``) with the budget and a fresh seed
(``space.seed + 1000 + k``) put in, so nothing depends on the space's files still being where they were.
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from optuna.trial import FrozenTrial, TrialState

from recipesearch.analysis.replication import (
    BASELINE_ARM,
    CLAIM_SETS,
    Claim,
    PlannedRun,
    claims_of,
    inside_share,
    plan_runs,
    score_claims,
)
from recipesearch.engine import queueing
from recipesearch.engine import study as st
from recipesearch.engine.driver import SearchDriver
from recipesearch.engine.failures import failing_alike, stop_message
from recipesearch.engine.loop import DONE, WAIT, SearchLoop
from recipesearch.engine.proposal import Proposal
from recipesearch.engine.search_options import SearchOptions
from recipesearch.engine.storage import open_study
from recipesearch.engine.trial_attrs import method_label
from recipesearch.errors import ConfigError, UserError
from recipesearch.rundir import RunDir, write_atomic

if TYPE_CHECKING:
    import optuna

    from recipesearch.analysis.frontier import Frontier
    from recipesearch.space import SearchSpace

DEFAULT_FOLDER = "replication"  # RUN_DIR/replication unless --out says otherwise
RESULT_CSV = "replication.csv"
META_KEY = "replication"  # run.json key of the replication's own run directory


@dataclass(frozen=True)
class Source:
    """The finished search being replicated, read once."""

    run: RunDir
    meta: dict[str, Any]
    trials: pd.DataFrame
    space: SearchSpace
    frontier: Frontier
    recipes: dict[str, dict[str, Any]]  # arm -> the recipe its runs train (budget and seed put in per run)
    arm_numbers: dict[str, int]  # arm -> the trial whose recipe it is


def _load_space(run: RunDir, meta: dict[str, Any], base_recipe: dict[str, Any] | None) -> SearchSpace:
    """RUN_DIR/space.yaml. Where it does not load here because its base recipe file is not where it was (a run
    directory copied elsewhere: ``base: ../recipes/x.yaml``), the same space with the baseline's own recipe
    (trials.csv ``recipe_json``) in place of that file: the runs train the search's recipes as recorded, and what
    the space adds (objectives, seed, resources, threads) does not depend on where the file was."""
    import yaml

    from recipesearch.space import load_space, loads_space

    try:
        return load_space(run.space_yaml)
    except (UserError, OSError) as first:
        problem = first
    try:
        data = yaml.safe_load(run.read_space_text(strict=True))
        if isinstance(data, dict) and base_recipe is not None and not isinstance(data.get("base"), dict):
            base = {k: v for k, v in base_recipe.items() if k not in ("budget", "seed")}
            data["base"] = base
            return loads_space(yaml.safe_dump(data, sort_keys=False), source=str(run.space_yaml), base_dir=run.root)
    except (UserError, OSError, yaml.YAMLError):
        pass
    raise UserError(f"{run.space_yaml}: the search's space does not load here ({problem})") from None


def read_source(run_dir: str | Path) -> Source:
    """The search in ``run_dir``: its trials, selection, space, frontier and the recipe of every arm.

    A damaged or half-written run directory is a one-line UserError; so is one whose search still runs."""
    from recipesearch.analysis.frontier import BASELINE_KEY, Objectives, frontier
    from recipesearch.report.info import load_run
    from recipesearch.report.reconcile import driver_alive

    run = RunDir(run_dir)
    if not run.root.is_dir():
        raise UserError(f"RUN_DIR: {run.root} is not a directory")
    if not run.run_json.is_file() and not run.trials_csv.is_file():
        raise UserError(f"RUN_DIR: {run.root} is not a search run directory (no run.json or trials.csv)")
    if driver_alive(run):
        raise UserError(f"RUN_DIR: the search in {run.root} is still running; replicate it once it has finished")
    files = load_run(run.root)
    f = frontier(files.trials, Objectives.from_run_meta(files.run_meta))
    recipes: dict[str, dict[str, Any]] = {}
    numbers: dict[str, int] = {}
    done = f.completed_trials.sort_values("number")
    for key, rows in done.groupby("recipe_key", sort=False):
        first = rows.iloc[0]
        try:
            recipes[str(key)] = json.loads(str(first["recipe_json"]))
        except (TypeError, ValueError):
            continue  # a row without its recipe: claims on it are refused below
        numbers[str(key)] = int(first["number"])
    space = _load_space(run, files.run_meta, recipes.get(BASELINE_KEY))
    return Source(run, files.run_meta, files.trials, space, f, recipes, numbers)


@dataclass
class ReplicateOptions:
    seeds: int = 3
    claims: str = "confirmed"
    out: Path | None = None  # default RUN_DIR/replication
    resume: bool = False
    force: bool = False
    address: str | None = None
    executor: str = "ray"
    concurrency: int | None = None
    cpus_per_trial: float | None = None
    gpus_per_trial: float | str | None = None
    quiet: bool = False
    report: bool = True  # rebuild RUN_DIR's report with the replication section (default --out only)
    command: list[str] = field(default_factory=lambda: list(sys.argv))


@dataclass(frozen=True)
class Replication:
    """What ``replicate`` returns: the claims, the scored table (replication.csv) and where it is."""

    run_dir: Path
    out: Path | None
    claims: tuple[Claim, ...]
    scored: pd.DataFrame
    verdict: str

    @property
    def inside_share(self) -> float:
        return inside_share(self.scored)


def check_options(opts: ReplicateOptions) -> None:
    """Bad values at the door: one line each, before anything is read or written."""
    if isinstance(opts.seeds, bool) or not isinstance(opts.seeds, int) or opts.seeds < 1:
        raise UserError(f"--seeds must be a whole number >= 1, not {opts.seeds!r}")
    if opts.claims not in CLAIM_SETS:
        raise UserError(f"--claims must be one of {', '.join(CLAIM_SETS)}, not {opts.claims!r}")
    if opts.resume and opts.force:
        raise UserError("--resume and --force contradict each other; pass one")


class ReplicationLoop(SearchLoop):
    """The search loop over a fixed, ordered plan of runs: no baseline stage, no sampler, no confirmation.

    Every planned run is queued at the start in plan order (``study.ask`` pops them in that order, so the
    interleaving is kept when two run side by side); an interrupted or lost run is queued again by the loop's
    own rules (it then runs later than planned, beside other runs); a resume queues what no trial holds."""

    def __init__(self, space: SearchSpace, study: optuna.Study, storage: optuna.storages.BaseStorage,
                 plan: list[PlannedRun], recipes: dict[str, dict[str, Any]], **hooks: Any):
        super().__init__(space, study, storage, len(plan), **hooks)
        self.planned, self.recipes = plan, recipes
        self._baselines_queued = True  # there is no baseline stage: the plan holds the baseline's runs

    def prepare(self, resuming: bool) -> tuple[int, int]:
        recovered = (queueing.recover_interrupted(self.study, self.storage) + queueing.requeue_lost_workers(self.study)
                     if resuming else 0)
        present = {_run_id(t) for t in self.trials() if not st.is_interrupted(t)}
        queued = 0
        for run in self.planned:
            if (run.arm, run.budget, run.seed_index) in present:
                continue
            queueing.enqueue(self.study, {"budget": run.budget}, is_baseline=run.arm == BASELINE_ARM,
                       **{st.STAGE: st.REPLICATE, st.SEED_INDEX: run.seed_index, st.OF_TRIAL: run.number,
                          "arm": run.arm})
            queued += 1
        arms = len({r.arm for r in self.planned})
        self.on_message(f"replication: {len(self.planned)} runs ({arms} arms x their budgets x "
                        f"{len({r.seed_index for r in self.planned})} fresh seed(s)), interleaved; {queued} queued now")
        return recovered, 0  # (interrupted runs queued again, baseline-stage runs queued: none here)

    def total(self) -> int:
        return len(self.planned)

    def remaining(self) -> int:
        return st.count_in_state(self.trials(), TrialState.WAITING)

    def _done(self) -> bool:
        trials = self.trials()
        if failing_alike(trials) is not None and not self.in_flight:
            return True
        return not self.in_flight and not st.count_in_state(trials, TrialState.WAITING)

    def _next(self) -> Proposal | str | None:
        trials = self.trials()
        reason = failing_alike(trials)
        if reason is not None:
            if not self.stop_reason:
                self.stop_reason = stop_message(reason, st.count_in_state(trials, TrialState.FAIL))
            return WAIT if self.in_flight else DONE
        if st.count_in_state(trials, TrialState.WAITING):
            return self._ask()
        return WAIT if self.in_flight else DONE

    def _ask(self) -> Proposal | None:
        from recipesearch.recipe import recipe_from_dict

        space = self.space
        trial = self.study.ask()  # pops the next queued run
        a = trial.user_attrs
        arm, seed_index = str(a.get("arm") or BASELINE_ARM), st.seed_index(trial)
        budget = float(a[st.QUEUED_PARAMS]["budget"])  # queued with the run's budget (``prepare``)
        config = self.trial_config(trial)
        attrs: dict[str, Any] = {"budget": budget, "is_baseline": arm == BASELINE_ARM, st.STAGE: st.REPLICATE}
        try:
            recipe = recipe_from_dict({**self.recipes[arm], "budget": budget, "seed": space.seed + seed_index},
                                      source=f"the recipe of trial {a.get(st.OF_TRIAL)}")
        except (ConfigError, KeyError) as exc:
            config["error"] = f"invalid recipe: {exc}"
        else:
            config["recipe"] = recipe.to_dict()
            attrs.update(epochs=recipe.epochs, seed=recipe.seed, algorithms=method_label(recipe, space.base),
                         recipe_id=recipe.id(), recipe_json=recipe.model_dump_json(exclude_none=True))
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        proposal = Proposal(trial, {"budget": budget}, config, attrs)
        self.in_flight[trial.number] = proposal
        self.on_start(proposal)
        return proposal



def _run_id(t: FrozenTrial) -> tuple[str, float, int]:
    budget = st.queued_params(t).get("budget", t.user_attrs.get("budget"))
    return (str(t.user_attrs.get("arm") or BASELINE_ARM), float(budget) if budget is not None else math.nan,
            st.seed_index(t))


class ReplicationDriver(SearchDriver):
    """``SearchDriver`` (run directory, lock, Ray, executor, display) around a ``ReplicationLoop``."""

    def __init__(self, source: Source, claims: list[Claim], plan: list[PlannedRun], opts: ReplicateOptions,
                 out: Path):
        self.source, self.claims, self.plan, self.replicate_opts = source, claims, plan, opts
        options = SearchOptions(out=out, resume=opts.resume, force=opts.force, address=opts.address,
                                quiet=opts.quiet, trials=len(plan), concurrency=opts.concurrency,
                                cpus_per_trial=opts.cpus_per_trial, gpus_per_trial=opts.gpus_per_trial,
                                executor=opts.executor, report=False, command=opts.command)  # type: ignore[arg-type]
        super().__init__(source.space, options)
        self.scored: pd.DataFrame | None = None

    def _trial_budget(self, space: SearchSpace, options: SearchOptions) -> int:
        return len(self.plan)

    def _make_loop(self, storage: optuna.storages.BaseStorage, resuming: bool) -> SearchLoop:
        import optuna

        if resuming:
            self._check_same_replication()
        self.study = open_study(self.space, storage, optuna.samplers.RandomSampler(seed=0), resuming,
                                force=self.opts.force, owner=str(self.run_dir.root.resolve()))
        return ReplicationLoop(self.space, self.study, storage, self.plan, self.source.recipes,
                               on_start=self._on_start, on_finish=self._on_finish, on_message=self._on_message)

    def _what(self) -> dict[str, Any]:
        return {"of": str(self.source.run.root.resolve()), "claims": self.replicate_opts.claims,
                "seeds": self.replicate_opts.seeds, "runs": len(self.plan),
                "claimed": [asdict(c) for c in self.claims]}

    def _check_same_replication(self) -> None:
        before = self.run_dir.read_meta().get(META_KEY) or {}
        now = self._what()
        for key, flag in (("of", "RUN_DIR"), ("claims", "--claims"), ("seeds", "--seeds")):
            if before.get(key) is not None and before.get(key) != now[key]:
                raise UserError(f"--resume: {self.run_dir.root} replicates {flag} {before.get(key)}, not "
                                f"{now[key]}; resume with the same {flag} or start again with --force")

    def _resume_command(self) -> str:
        out = "" if self.run_dir.root == self.source.run.root / DEFAULT_FOLDER else f" --out {self.run_dir.root}"
        return (f"recipesearch replicate {self.source.run.root} --seeds {self.replicate_opts.seeds} "
                f"--claims {self.replicate_opts.claims}{out} --resume")

    def _finish(self, df: pd.DataFrame) -> pd.DataFrame:
        self.ui.stop()
        if self.log is not None:
            self.log.update(**{META_KEY: self._what()})
        self._close("finished")
        self.scored = score_claims(self.claims, fresh_runs(df, self.source.arm_numbers, self.space.seed))
        write_atomic(self.run_dir.root / RESULT_CSV, self.scored.to_csv(index=False))
        return df


def fresh_runs(trials: pd.DataFrame, arm_numbers: dict[str, int], space_seed: int) -> pd.DataFrame:
    """The replication's finished runs as ``score_claims`` reads them: ``arm`` (the run's own, else from
    ``of_trial``, the trial whose recipe it retrains: a point claim's trial need not be its recipe's first, so
    ``of_trial`` alone lost such runs), ``seed_index`` (from the seed), the accuracies, train_seconds and the
    conditions (hardware, cpu_share, load) where trials.csv has them."""
    columns = ["arm", "budget", "seed_index", "accuracy", "val_accuracy", "train_seconds"]
    if trials.empty:
        return pd.DataFrame(columns=columns)
    done = trials[trials["state"] == "COMPLETE"].copy()
    arm_of = {number: arm for arm, number in arm_numbers.items()}
    baseline = done["is_baseline"].astype(str).str.lower().isin(("true", "1"))
    of_trial = pd.to_numeric(done["of_trial"], errors="coerce")
    own = done["arm"].fillna("").astype(str) if "arm" in done else pd.Series("", index=done.index)
    done["arm"] = [BASELINE_ARM if b else a or (arm_of.get(int(n), "") if n == n else "")
                   for b, a, n in zip(baseline, own, of_trial, strict=True)]
    done["seed_index"] = pd.to_numeric(done["seed"], errors="coerce") - int(space_seed)
    done["budget"] = pd.to_numeric(done["budget"], errors="coerce").astype(float)
    return done


def replicate(run_dir: str | Path, opts: ReplicateOptions | None = None) -> Replication:
    """Retrain RUN_DIR's claims and baseline with fresh seeds on this machine or cluster; score on test."""
    opts = opts or ReplicateOptions()
    check_options(opts)
    source = read_source(run_dir)
    claims = claims_of(source.frontier, opts.claims)
    verdict = source.frontier.headline.verdict
    if not claims:
        return Replication(source.run.root, None, (), score_claims([], pd.DataFrame()), verdict)
    missing = [c for c in claims if c.recipe_key not in source.recipes]
    if missing or BASELINE_ARM not in source.recipes:
        what = f"trial {missing[0].number}" if missing else "the baseline"
        raise UserError(f"RUN_DIR: {source.run.trials_csv} has no recipe_json for {what}; it cannot be retrained")
    base = source.frontier.baseline_points
    plan = plan_runs(claims, sorted(float(b) for b in base["budget"]), source.arm_numbers[BASELINE_ARM], opts.seeds)
    out = Path(opts.out) if opts.out is not None else source.run.root / DEFAULT_FOLDER
    driver = ReplicationDriver(source, claims, plan, opts, out)
    driver.run()
    scored = driver.scored if driver.scored is not None else score_claims(claims, pd.DataFrame())
    result = Replication(source.run.root, out, tuple(claims), scored, verdict)
    if opts.report and out.resolve() == (source.run.root / DEFAULT_FOLDER).resolve():
        _rebuild_report(source.run.root)
    return result


def _rebuild_report(run_dir: Path) -> None:
    try:
        from recipesearch.report import build_report

        build_report(run_dir)
    except Exception as exc:  # noqa: BLE001 - replication.csv is written; the report can be rebuilt
        print(f"warning: the report of {run_dir} was not rebuilt ({type(exc).__name__}: {exc}); "
              f"`recipesearch report {run_dir}` rebuilds it", file=sys.stderr)
