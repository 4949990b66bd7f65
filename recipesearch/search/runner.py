"""The search driver: Optuna's multi-objective sampler proposes, Ray Tune trains, the study remembers.

Pseudocode of ``SearchRunner.run``::

    check flags and run directory; start a local Ray or join --address   # nothing written yet
    open (or create) the Optuna RDB study            # study.db, or --storage URL
    resume: RUNNING trials of a killed driver -> FAIL("interrupted") + enqueued again
    enqueue the base recipe at every budget          # the baseline curve, trained first
    while finished trials < trials:                  # interrupted ones do not count
        Tuner(trainable, StudySearch over the study, num_samples=remaining, reuse_actors).fit()
            suggest: (sweep: enqueue SweepStrategy.propose(history) when nothing waits) ask -> recipe
            each finished trial -> user attrs + tell(study) -> trials.csv rewritten -> live table
    stop Ray, report, summary, run.json end time

Why a subclass of ``OptunaSearch`` (``StudySearch``): Ray's searcher already takes ``storage`` and
``study_name`` (so the study it asks and tells *is* the persistent one in study.db), but it only tells
Optuna the objective values. We need the measured numbers, the trained recipe and the error text as
``user_attrs`` of the same trial, written before ``tell`` so each finished trial is persisted whole at
once, and failed trials told FAIL with their reason. It also turns params into a validated recipe in the
driver (an invalid combination fails without costing a worker), and it does not pickle itself into
Tune's experiment checkpoint: the study is the checkpoint, and resuming is ``--resume`` on the study,
not ``Tuner.restore`` (Tune's checkpoint of an in-flight searcher cannot survive kill -9 consistently).

Overhead, measured (ray 2.60, 2-core VM shared with other jobs, load 2-3.5): 24 trials of a digits CNN
(5-7 epochs, ~1 s training each, 2 at a time, 1 thread each) took 1.06x-1.66x their summed
train_seconds end to end over 8 runs (e.g. 35.4 s for 25.7 s of training, 1.38x, final report
included). The fixed part is Ray's start (~4-6 s) and each actor's first trial (imports and dataset
decoding, ~6-12 s, once per actor thanks to ``reuse_actors``); after that a trial costs ~0.2-0.3 s
beyond its training (evaluation, Tune scheduling, the study write and the trials.csv rewrite).
"""
from __future__ import annotations

import logging
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
import ray
from optuna.trial import TrialState
from ray import tune
from ray.tune.schedulers import FIFOScheduler
from ray.tune.search import Searcher
from ray.tune.search.optuna import OptunaSearch

from recipesearch.errors import ConfigError, UserError
from recipesearch.search import storage as st
from recipesearch.search.samplers import SweepStrategy, is_sweep, make_sampler
from recipesearch.search.trial import trainable

if TYPE_CHECKING:
    import pandas as pd

    from recipesearch.search.progress import SearchUI
    from recipesearch.space import SearchSpace

_MODES = {"maximize": "max", "minimize": "min"}
LOOPBACK_IP = "127.0.0.2"  # Ray rewrites 127.0.0.1 to the external address; this keeps a local Ray on loopback

# Tune settings for many short trials: no per-trial result files (the study has the results), the
# old quiet output engine (verbose=0 is silent there), and Ctrl-C reaching us as KeyboardInterrupt so
# in-flight trials are marked interrupted in the study before we exit.
_TUNE_ENV = {
    "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",
    "RAY_AIR_NEW_OUTPUT": "0",
    "TUNE_DISABLE_SIGINT_HANDLER": "1",
    "TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S": "1000000",
}


@dataclass
class SearchOptions:
    out: Path
    resume: bool = False
    force: bool = False
    address: str | None = None  # join this Ray cluster instead of starting a local one
    storage: str | None = None  # Optuna RDB URL; default sqlite:///OUT/study.db
    quiet: bool = False
    trials: int | None = None  # overrides space.trials
    concurrency: int | None = None  # overrides space.concurrency
    report: bool = True  # build the report (recipesearch.report) at the end, and during the search
    report_every: int = 4  # rebuild the report after this many finished trials (0: only at the end)
    # ... but at most this often: a build is ~4 s of CPU that would compete with the trials being timed
    report_interval_s: float = 60.0
    command: list[str] = field(default_factory=lambda: list(sys.argv))


# 1) the searcher ------------------------------------------------------------------------------------


class StudySearch(OptunaSearch):
    """``OptunaSearch`` over the persistent study that stores results as user attrs (see module doc)."""

    def __init__(self, space: SearchSpace, storage: optuna.storages.BaseStorage, sampler: Any,
                 on_start: Callable[[optuna.Trial, dict[str, Any]], None],
                 on_finish: Callable[[optuna.trial.FrozenTrial], None],
                 crash_notes: dict[str, str], sweep: SweepStrategy | None = None, n_trials: int | None = None):
        # storage + study_name: Ray's create_study(load_if_exists=True) opens our study in study.db.
        super().__init__(space=space.suggest, metric=list(space.objectives),
                         mode=[_MODES[d] for d in space.directions], sampler=sampler,
                         study_name=space.name, storage=storage)
        self.search_space = space
        self._on_start, self._on_finish, self._crash_notes = on_start, on_finish, crash_notes
        self._sweep, self._sweep_stale, self._n_trials = sweep, True, n_trials

    # -- asking: params -> recipe in the driver; the trial gets a plain recipe dict
    def suggest(self, trial_id: str) -> dict[str, Any] | str | None:
        space = self.search_space
        if trial_id not in self._ot_trials:
            if self._sweep is not None:
                waiting = self._next_sweep_batch()
                if waiting is not True:
                    return waiting  # None: wait for trials in flight; FINISHED: the sweep is done
            self._ot_trials[trial_id] = self._ot_study.ask()  # pops enqueued (WAITING) trials first
        ot_trial = self._ot_trials[trial_id]
        config: dict[str, Any] = {"number": ot_trial.number, "recipe": None, "error": None,
                                  "threads": space.threads_per_trial}
        try:
            params = space.suggest(ot_trial)
        except Exception as exc:  # noqa: BLE001 - a broken define-by-run walk fails this trial only
            params = dict(ot_trial.params)
            config["error"] = f"invalid parameters: {exc}"
        attrs: dict[str, Any] = {"budget": params.get("budget"), "is_baseline": False}
        if config["error"] is None:
            attrs["is_baseline"] = bool(ot_trial.user_attrs.get("is_baseline")) or space.is_baseline(params)
            try:
                recipe = space.recipe_for(params)
            except ConfigError as exc:
                config["error"] = f"invalid recipe: {exc}"
                attrs["algorithms"] = "+".join(sorted(_safe_algorithms(space, params)))
            else:
                config["recipe"] = recipe.to_dict()
                attrs.update(budget=recipe.budget, epochs=recipe.epochs, seed=recipe.seed,
                             algorithms="+".join(sorted(recipe.algorithms)), recipe_id=recipe.id(),
                             recipe_json=recipe.model_dump_json(exclude_none=True))
        for key, value in attrs.items():
            if value is not None:
                ot_trial.set_user_attr(key, value)
        self._on_start(ot_trial, attrs)
        return config

    def _next_sweep_batch(self) -> bool | str | None:
        """Sweep: True when a trial is queued (or was just proposed); else None (later) or FINISHED.

        The strategy's next stage depends on results, so it is asked again only after a trial finished;
        inside one Tune run the actors stay warm across the sweep's stages.
        """
        trials = self._ot_study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
        if trials:
            return True
        if not self._sweep_stale:
            return None
        self._sweep_stale = False
        history = st.sweep_history(self._ot_study.get_trials(deepcopy=False), self.search_space)
        batch = self._sweep.propose(history)
        if not batch:
            return Searcher.FINISHED if self._sweep.exhausted(history) else None
        if self._n_trials is not None:  # never queue more than the budget: no WAITING leftovers at the end
            batch = batch[:max(0, self._n_trials - len(history))]
        for params in batch:
            self._ot_study.enqueue_trial(params)
        return True if batch else None

    # -- telling: metrics + recipe + error as user attrs, then COMPLETE or FAIL, persisted at once
    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        if trial_id in self._completed_trials or trial_id not in self._ot_trials:
            return
        self._completed_trials.add(trial_id)
        self._sweep_stale = True
        ot_trial = self._ot_trials[trial_id]
        if not result and not error:
            # Stopped before it reported (the run is shutting down): it runs again on --resume.
            st.mark_interrupted(self._ot_study, ot_trial._trial_id, ot_trial.number, dict(ot_trial.params),
                                dict(ot_trial.user_attrs))
            self._on_finish(self._ot_study._storage.get_trial(ot_trial._trial_id))
            return
        crash = (self._crash_notes.pop(trial_id, None) or "the trial's worker process died") if error else None
        attrs, values = outcome(self.search_space, result, crash)
        for key, value in attrs.items():
            ot_trial.set_user_attr(key, value)
        state = TrialState.COMPLETE if values is not None else TrialState.FAIL
        try:
            frozen = self._ot_study.tell(ot_trial, values, state=state)
        except (ValueError, RuntimeError) as exc:  # e.g. a value Optuna rejects: record it, go on
            ot_trial.set_user_attr("error", f"could not record the result: {exc}")
            frozen = self._ot_study.tell(ot_trial, state=TrialState.FAIL)
        self._on_finish(frozen)

    # The study in study.db is the checkpoint. Tune's pickled copy of the searcher would hold the space,
    # the UI and a database handle, and would never be read (resume reads the study).
    def save_to_dir(self, *args: Any, **kwargs: Any) -> None:
        return None

    def save(self, checkpoint_path: str) -> None:
        return None

    def __getstate__(self) -> dict[str, Any]:
        # Tuner pickles its config (this searcher included) into tuner.pkl for Tuner.restore, which we
        # never use; the hooks hold the terminal UI, which cannot be pickled.
        return {"_metric": self._metric, "_mode": self._mode, "_study_name": self._study_name}


class CrashNotes(FIFOScheduler):
    """FIFO scheduling, plus the text of a dead worker's error, which Tune hands the scheduler only."""

    def __init__(self, notes: dict[str, str]):
        super().__init__()
        self.notes = notes

    def on_trial_error(self, tune_controller: Any, trial: Any) -> None:
        self.notes[trial.trial_id] = _read_error(trial)


def _safe_algorithms(space: SearchSpace, params: dict[str, Any]) -> list[str]:
    try:
        return list(space.algorithms_on(params))
    except Exception:  # noqa: BLE001 - only a label for a trial that failed anyway
        return []


def _finite(x: Any) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def outcome(space: SearchSpace, result: dict | None, crash: str | None) -> tuple[dict[str, Any], list[float] | None]:
    """User attrs to store and objective values (None: FAIL) for one trial's last result."""
    result = result or {}
    attrs: dict[str, Any] = {}
    for key in ("accuracy", "val_accuracy", "loss", "train_seconds", "throughput", "data_wait_fraction",
                "wall_seconds"):
        if _finite(result.get(key)):
            attrs[key] = float(result[key])
    for key in ("threads", "steps"):  # evidence: the torch threads the trial really used
        if _finite(result.get(key)):
            attrs[key] = int(result[key])
    if result.get("node"):
        attrs["node"] = str(result["node"])
    error = result.get("error") or crash
    if not error and not result:
        error = "the trial reported no result"
    acc = result.get("val_accuracy" if space.metric_split == "val" else "accuracy")
    secs = result.get("train_seconds")
    if not error and not (_finite(acc) and _finite(secs)):
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


def _read_error(trial: Any) -> str:
    text = ""
    try:
        if trial.error_file and os.path.exists(trial.error_file):
            text = Path(trial.error_file).read_text(errors="replace")
    except OSError:
        pass
    return summarise_error(text)


def summarise_error(text: str) -> str:
    """One line from Tune's error file: the worker's death reason, or the exception's last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("Failure #")]
    if not lines:
        return "the trial's worker process died"
    memory = next((ln for ln in lines if "memory" in ln.lower() or "oom" in ln.lower()), None)
    if memory:
        return f"out of memory: {memory}"[:500]
    died = next((ln for ln in lines if "died" in ln.lower()), None)
    return f"worker crashed: {died or lines[-1]}"[:500]


def _dirname(trial: Any) -> str:
    return f"trial_{int(trial.config.get('number', 0)):05d}_{trial.trial_id}"


# 2) Ray ---------------------------------------------------------------------------------------------


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail in seconds, not minutes (ray.init retries for long), when nothing listens at host:port."""
    import socket

    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if address == "auto" or not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise UserError(f"--address: nothing answers at {address} ({exc.strerror or exc}); start the head "
                        "node with `ray start --head` and pass the address it prints") from None


class RayHandle:
    """Starts a local Ray sized to this machine, or joins ``address``; stops only what it started."""

    def __init__(self, address: str | None, threads: int):
        self.started = False
        os.environ.update(_TUNE_ENV)
        if ray.is_initialized():  # a Python API user brought their own Ray
            self.address = ray.get_runtime_context().gcs_address
            return
        # BLAS/OpenMP threads limited to the trial's share (the trial also calls torch.set_num_threads):
        # workers of a local Ray inherit our environment; a cluster's get it through the job's runtime env.
        thread_env = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
        common: dict[str, Any] = dict(log_to_driver=False, logging_level=logging.WARNING)
        try:
            if address:
                _check_reachable(address)
                ray.init(address=address, runtime_env={"env_vars": thread_env}, **common)
            else:
                for var, value in thread_env.items():
                    os.environ.setdefault(var, value)
                # Ray starts workers at nice 15: a timed trial would then yield its core to any other
                # process, and its train_seconds would measure that load (seen: searches starved to a
                # halt beside two nice-0 jobs on 2 cores). Trials run at the priority `recipesearch train`
                # would have. (A cluster's raylets are started by `ray start`, with their own setting.)
                os.environ.setdefault("RAY_worker_niceness", "0")
                cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
                ray.init(num_cpus=cpus, _node_ip_address=LOOPBACK_IP, include_dashboard=False, **common)
        except ConnectionError as exc:
            raise UserError(f"--address: cannot join Ray at {address}: {str(exc).splitlines()[0]}") from None
        self.started = True
        self.address = ray.get_runtime_context().gcs_address

    def check_resources(self, cpus: float, gpus: float) -> dict[str, float]:
        """Refuse a trial shape the cluster can never schedule (Tune would wait for ever)."""
        total = ray.cluster_resources()
        have_cpu, have_gpu = total.get("CPU", 0.0), total.get("GPU", 0.0)
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        biggest_cpu = max((n["Resources"].get("CPU", 0.0) for n in nodes), default=have_cpu)
        biggest_gpu = max((n["Resources"].get("GPU", 0.0) for n in nodes), default=have_gpu)
        if cpus > biggest_cpu:
            raise UserError(f"resources.cpus: a trial asks for {cpus} CPUs; the largest Ray node has {biggest_cpu:g}")
        if gpus > biggest_gpu:
            raise UserError(f"resources.gpus: a trial asks for {gpus} GPUs; the Ray cluster has "
                            f"{'none' if not have_gpu else f'at most {biggest_gpu:g} per node'}")
        return {"CPU": have_cpu, "GPU": have_gpu, "nodes": float(len(nodes))}

    def stop(self) -> None:
        if self.started and ray.is_initialized():
            ray.shutdown()  # a local Ray goes away; on a cluster this only disconnects our driver
        self.started = False


# 3) the driver --------------------------------------------------------------------------------------


class SearchRunner:
    def __init__(self, space: SearchSpace, options: SearchOptions, ui: SearchUI | None = None):
        self.space = space
        self.opts = options
        self.n_trials = int(options.trials if options.trials is not None else space.trials)
        self.concurrency = int(options.concurrency if options.concurrency is not None else space.concurrency)
        if self.n_trials < len(space.budgets):
            raise UserError(f"--trials must be at least {len(space.budgets)}: the baseline at every budget")
        if self.concurrency < 1:
            raise UserError("--concurrency must be at least 1")
        if ui is None:
            from recipesearch.search.progress import make_ui

            ui = make_ui(quiet=options.quiet)
        self.ui = ui
        self._finished_since_report = 0
        self._last_report = time.monotonic()  # the first intermediate report comes after an interval
        self._report_proc: subprocess.Popen | None = None
        self.searcher: Any = None
        self._hook_warned: set[str] = set()

    # -- the whole job
    def run(self) -> pd.DataFrame:
        space, opts = self.space, self.opts
        # 1) everything that can refuse, before anything is written: flags vs run dir, storage, Ray
        st.check_run_dir(opts.out, space, opts.resume, opts.force)
        if opts.storage:
            self.storage = st.make_storage(opts.storage)
        self.ray = RayHandle(opts.address, space.threads_per_trial)
        try:
            cluster = self.ray.check_resources(space.resources.cpus, space.resources.gpus)
            # 2) the run dir and the study; a resumed study gets its interrupted trials queued again
            run, resuming = st.prepare_run_dir(opts.out, space, opts.resume, opts.force)
            self.run_dir = run
            url = opts.storage or run.default_storage()
            if not opts.storage:
                self.storage = st.make_storage(url)
            self.sampler = make_sampler(space)
            if resuming:
                # The seeded sampler would replay the first session's draws (its RNG starts over): the
                # same recipes trained twice. A fresh seed; the history in the study still guides it.
                self.sampler.reseed_rng()
            self.study = st.open_study(space, self.storage, self.sampler, resuming, force=opts.force)
            recovered = st.recover_interrupted(self.study) if resuming else 0
            baselines = st.ensure_baselines(self.study, space)
            self.info = st.RunInfo(run, resuming)
            self.info.start(command=opts.command, space=space, storage=url, ray_address=self.ray.address,
                            n_trials=self.n_trials, run_dir=run.root)
            self.info.update(cluster=cluster, concurrency=self.concurrency)
            self._write_csv()
            trials = self.study.get_trials(deepcopy=False)
            done = st.count_finished(trials)
            self.ui.start(space=space, total=self.n_trials, done=done, run_dir=run.root,
                          ray_address=self.ray.address if opts.address else "local")
            if resuming:
                self.ui.message(f"resuming {run.root}: {done} trials finished, {recovered} interrupted "
                                f"trials queued again")
            elif baselines:
                self.ui.message(f"baseline first: the base recipe at {baselines} budget(s)")
            self._rounds()
        except KeyboardInterrupt:
            self._interrupted()
            raise
        except BaseException:
            self.ui.stop()
            self._close("failed")
            raise
        df = self._write_csv()
        self.ui.stop()
        self._close("finished")
        self._report(final=True)
        self.ui.summary(df, space)
        return df

    def _rounds(self) -> None:
        """Tune runs until the budget is met; another run only when trials came back interrupted."""
        sweep = SweepStrategy(self.space) if is_sweep(self.space) else None
        stalled = 0
        while True:
            trials = self.study.get_trials(deepcopy=False)
            finished = st.count_finished(trials)
            remaining = self.n_trials - finished
            if remaining <= 0:
                return
            if sweep is not None and not st.count_waiting(trials):
                if sweep.exhausted(st.sweep_history(trials, self.space)):
                    self.ui.message(f"sweep finished after {finished} trials: nothing left to try")
                    return
            self._tune(remaining, sweep)
            after = st.count_finished(self.study.get_trials(deepcopy=False))
            stalled = stalled + 1 if after == finished else 0
            if stalled >= 2:  # two runs without a single finished trial: do not spin
                raise UserError("trials keep getting interrupted without a result; see "
                                f"{self.run_dir.ray_dir} for Ray's logs")

    def _tune(self, num_samples: int, sweep: SweepStrategy | None) -> None:
        notes: dict[str, str] = {}
        self.searcher = StudySearch(self.space, self.storage, self.sampler, self._on_start, self._on_finish, notes,
                                    sweep, self.n_trials)
        session = len(self.info.data.get("sessions", []))
        resources = {"cpu": self.space.resources.cpus, "gpu": self.space.resources.gpus}
        tuner = tune.Tuner(
            tune.with_resources(trainable, resources),
            tune_config=tune.TuneConfig(search_alg=self.searcher, scheduler=CrashNotes(notes),
                                        num_samples=num_samples, max_concurrent_trials=self.concurrency,
                                        reuse_actors=True, trial_dirname_creator=_dirname),
            run_config=tune.RunConfig(storage_path=str(self.run_dir.ray_dir.resolve()),
                                      name=f"session-{session}-{time.strftime('%H%M%S')}", verbose=0,
                                      log_to_file=True),
        )
        # Tune's result grid looks for per-trial result files we do not write (the study has the results).
        logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)
        tuner.fit()

    # -- per-trial hooks (driver thread, inside Tune's event loop: keep them quick)
    # The study already holds the trial when these run: a display or disk problem here is reported,
    # never allowed to stop the search.
    def _on_start(self, trial: optuna.Trial, attrs: dict[str, Any]) -> None:
        try:
            self.ui.trial_started(trial.number, attrs)
        except Exception as exc:  # noqa: BLE001
            self._hook_failed("display", exc)

    def _on_finish(self, frozen: optuna.trial.FrozenTrial) -> None:
        try:
            df = self._write_csv()
        except OSError as exc:
            self._hook_failed("trials.csv", exc)
            return
        if not st.is_interrupted(frozen):
            self._finished_since_report += 1
        try:
            self.ui.trial_finished(st.trial_row(frozen, self.space), df)
        except Exception as exc:  # noqa: BLE001
            self._hook_failed("display", exc)
        due = time.monotonic() - self._last_report >= self.opts.report_interval_s
        if self.opts.report_every and self._finished_since_report >= self.opts.report_every and due:
            self._finished_since_report = 0
            self._last_report = time.monotonic()
            self._report(final=False)

    def _hook_failed(self, what: str, exc: Exception) -> None:
        if what not in self._hook_warned:
            self._hook_warned.add(what)
            print(f"warning: {what} not updated ({type(exc).__name__}: {exc}); the search goes on, the study "
                  "in the run directory has every result", file=sys.stderr)

    def _write_csv(self) -> pd.DataFrame:
        trials = self.study.get_trials(deepcopy=False)
        df = st.trials_frame(trials, self.space, self.space.param_names())
        st.write_trials_csv(df, self.run_dir.trials_csv)
        return df

    # -- report hook: recipesearch.report.build_report(run_dir), never fatal
    def _report(self, final: bool) -> None:
        import importlib.util

        if not self.opts.report or importlib.util.find_spec("recipesearch.report") is None:
            return
        if self._report_proc is not None and self._report_proc.poll() is None:
            if not final:
                return  # the previous one is still drawing: skip, a later one covers it
            self._report_proc.wait()
        if self._report_proc is not None and self._report_proc.returncode not in (None, 0):
            self.ui.message(f"warning: the report failed (exit {self._report_proc.returncode}); "
                            f"see {self.run_dir.root / 'report.log'}")
        self._report_proc = None
        if final:
            try:
                from recipesearch.report import build_report

                build_report(self.run_dir.root)
                self.ui.message(f"report: {self.run_dir.root}")
            except Exception as exc:  # noqa: BLE001 - the search results are safe; the report can be rebuilt
                self.ui.message(f"warning: the report failed ({type(exc).__name__}: {exc}); rebuild it with "
                                f"`recipesearch report {self.run_dir.root}`")
            return
        # During the search: in a separate process at the lowest CPU priority, so drawing plots neither
        # stalls Tune's event loop nor steals CPU from the trials being timed.
        code = ("import os, sys; os.nice(19); from recipesearch.report import build_report; "
                "build_report(sys.argv[1])")
        log_file = open(self.run_dir.root / "report.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            self._report_proc = subprocess.Popen([sys.executable, "-c", code, str(self.run_dir.root)],
                                                 stdout=log_file, stderr=subprocess.STDOUT,
                                                 stdin=subprocess.DEVNULL)
        except OSError as exc:
            self.ui.message(f"warning: could not start the report ({exc})")
        finally:
            log_file.close()

    # -- ending
    def _interrupted(self) -> None:
        """Ctrl-C: trials in flight are recorded interrupted (and queued again) before we go."""
        self.ui.stop()
        if not hasattr(self, "study"):
            self._close("interrupted")
            return
        n = 0
        try:
            n = st.recover_interrupted(self.study)  # every trial still RUNNING: in flight or just asked
            self._write_csv()
        except Exception as exc:  # noqa: BLE001 - a half-written trial stays RUNNING; --resume handles it
            self.ui.message(f"warning: could not record the interrupted trials ({exc}); --resume will")
        self._close("interrupted", interrupted_trials=n)
        self.ui.message(f"interrupted; {n} trial(s) in flight will run again with: recipesearch search "
                        f"{self.space.path or 'SPACE'} --out {self.run_dir.root} --resume")

    def _close(self, status: str, **fields: Any) -> None:
        try:
            if hasattr(self, "info"):
                self.info.finish(status, **fields)
        finally:
            if hasattr(self, "ray"):
                self.ray.stop()
            if self._report_proc is not None and self._report_proc.poll() is None and status != "finished":
                self._report_proc.terminate()
