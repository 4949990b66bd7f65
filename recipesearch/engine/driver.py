"""The driver of ``recipesearch search``: run directory, study, executor, live display, report.

    check flags and run directory; start a local Ray or join --address   # nothing written before this
    open (or create) the Optuna RDB study            # study.db, or --storage URL
    loop.prepare: interrupted trials queued again, the base recipe queued at every budget
    loop.run(executor)                               # search/loop.py; Ray Tune or in-process
        each finished trial -> trials.csv rewritten -> live table -> report every few trials
    stop Ray, report, summary, run.json end time

The per-trial hooks run inside the executor's event loop (Tune's, for Ray): they are quick, and a display
or disk problem there is reported, never allowed to stop the search — the study already holds the trial.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from recipesearch.engine import interrupts, queueing, shipping, user_code
from recipesearch.engine import study as st
from recipesearch.engine.checkpoints import CheckpointStore
from recipesearch.engine.confirm import EARLY_SECOND_LOOK, begun_early
from recipesearch.engine.loop import SearchLoop
from recipesearch.engine.method_fit import check_methods_fit
from recipesearch.engine.proposal import Proposal
from recipesearch.engine.samplers import make_sampler
from recipesearch.engine.search_budget import budget_from_options
from recipesearch.engine.search_options import SearchOptions, checked_options
from recipesearch.engine.storage import lock_study, make_storage, open_study
from recipesearch.engine.trial_rows import trial_row, trials_frame
from recipesearch.engine.warm_start import WarmStart, warm_start
from recipesearch.errors import UserError
from recipesearch.rundir import RunDir, RunLog
from recipesearch.runlock import FileLock, lock_run_dir
from recipesearch.space.execution import TrialResources, resolve_resources

if TYPE_CHECKING:
    import optuna
    import pandas as pd

    from recipesearch.engine.progress import SearchUI
    from recipesearch.space import SearchSpace



def _check_resume_storage(run: RunDir, storage: str | None) -> None:
    """--resume where the study is: a search whose study is on a database server (run.json's ``storage``,
    its password redacted) needs that --storage again; one in the run directory's study.db must not get a
    --storage. Either mistake would silently start an empty study."""
    before = str(run.read_meta().get("storage") or "")
    if before and not before.startswith("sqlite") and not storage:
        raise UserError(f"--resume: the study of {run.root} is in {before} (run.json); pass that --storage URL again")
    if storage and before.startswith("sqlite") and run.study_db.is_file() and storage != run.default_storage():
        raise UserError(f"--resume: the study of {run.root} is in its {run.study_db.name}, not in --storage; "
                        "resume without --storage")


class SearchDriver:
    def __init__(self, space: SearchSpace, options: SearchOptions, ui: SearchUI | None = None):
        self.space, self.opts = space, options
        self.n_trials = self._trial_budget(space, options)
        self.concurrency = int(options.concurrency if options.concurrency is not None else space.concurrency)
        self.budget = budget_from_options(space, options, self.concurrency)
        self.warm: WarmStart | None = None  # --warm-start / warm_start: read in run(), before anything is written
        self.space, self.resources = space, resources = checked_options(space, options)
        self.trial_resources: TrialResources | None = None  # resolved once Ray is up
        if ui is None:
            from recipesearch.engine.progress import make_ui

            ui = make_ui(quiet=options.quiet)
        self.ui = ui
        self.run_dir = RunDir(options.out)
        self.ray: Any = None
        self.log: RunLog | None = None
        self.loop: SearchLoop | None = None
        self._finished_since_report = 0
        self._last_report = time.monotonic()  # the first intermediate report comes after an interval
        self._report_proc: subprocess.Popen | None = None
        self._hook_warned: set[str] = set()
        self.study_lock: Any = None  # storage.StudyLock (PostgreSQL) or a runlock.FileLock (SQLite --storage)
        self.run_lock: FileLock | None = None

    def _trial_budget(self, space: SearchSpace, options: SearchOptions) -> int:
        n = int(options.trials if options.trials is not None else space.trials)
        if n < space.baseline_runs:
            sweep = ", after the LR sweep" if space.baseline.tune_lr else ""
            raise UserError(f"--trials must be at least {space.baseline_runs}: the baseline at every budget "
                            f"({space.describe_baseline()}{sweep})")
        return n

    def _make_loop(self, storage: optuna.storages.BaseStorage, resuming: bool) -> SearchLoop:
        """The study (created, or opened to resume) and the loop that drives it."""
        sampler = make_sampler(self.space)
        if resuming:
            # The seeded sampler would replay the first session's draws (its RNG starts over): the
            # same recipes trained twice. A fresh seed; the history in the study still guides it.
            sampler.reseed_rng()
        self.study = open_study(self.space, storage, sampler, resuming, force=self.opts.force,
                                owner=str(self.run_dir.root.resolve()))
        return SearchLoop(self.space, self.study, storage, self.n_trials, self._on_start, self._on_finish,
                          on_message=self._on_message)

    # -- the whole job
    def run(self) -> pd.DataFrame:
        space, opts, run = self.space, self.opts, self.run_dir
        new_dir = not run.root.exists()  # ours to remove if the search is refused before it starts
        # 0) One driver per run directory, held until _close: a second search, --resume or --force on a run
        # directory whose search is running is refused here, before anything is read, written or deleted.
        self.run_lock = lock_run_dir(run.root)
        try:
            # 1) everything that can refuse, before anything is written: flags vs run dir, storage, Ray
            will_resume = run.check(space, opts.resume, opts.force, made_now=new_dir)
            if will_resume:
                _check_resume_storage(run, opts.storage)
            storage = make_storage(opts.storage) if opts.storage else None
            # One search drives a study at a time: another one on this study (a second run directory on one
            # --storage) is refused here, before Ray starts. Held until _close.
            self.study_lock = lock_study(storage, space.name, opts.storage) if storage is not None else None
            # The user's own code: checked here (exit 2 before anything trains), then shipped to every trial
            self.shipment = user_code.preflight(space)
            check_methods_fit(space)  # no proposal may fail for a reason knowable now (engine/method_fit.py)
            dirs = [*space.warm_start, *opts.warm_start]
            self.warm = warm_start(dirs, space) if dirs and not opts.resume else None
            if opts.executor == "ray":
                from recipesearch.engine.ray_tune import RayHandle

                self.ray = RayHandle(opts.address, space.threads_per_trial, self.shipment.py_modules)
        except BaseException:
            self._release_locks()
            if new_dir:  # refused before the search started: leave nothing behind
                shutil.rmtree(run.root, ignore_errors=True)
            raise
        cluster: dict[str, float] = {}
        # Ctrl-C and SIGTERM end the search as KeyboardInterrupt: trials in flight recorded interrupted and queued
        # again, run.json "interrupted", resumable; never in the middle of a study write (engine/interrupts.py)
        previous_handlers = interrupts.install()
        try:
            if self.ray is not None:
                base_device = str(space.fixed.get("device", space.base.device))
                self.trial_resources = resolve_resources(self.resources, self.ray.cluster_gpus(), base_device)
                cluster = self.ray.check_resources(self.trial_resources.cpus, self.trial_resources.gpus,
                                                   self.trial_resources.workers)
                shipping.check_nodes(self.shipment)  # the user code loads on every node, or one line now
            # 2) the run dir and the study
            resuming = run.prepare(space, opts.resume, opts.force, made_now=new_dir)
            self.run_lock.publish(opts.command)  # who drives it, for a second command's refusal
            url = opts.storage or run.default_storage()
            storage = storage or make_storage(url)
            self.loop = self._make_loop(storage, resuming)
            self.loop.plugins = self.shipment.payload()
            self.loop.budget = self.budget
            if self.warm is not None:
                self.loop.warm = tuple(r.params for r in self.warm.recipes)
            self.loop.strict_timing = opts.strict_timing
            recovered, baselines = self.loop.prepare(resuming)
            changed = user_code.changed_since(run.read_meta()) if resuming else None
            self.log = RunLog(run, resuming)
            address = self.ray.address if self.ray is not None else None
            self.log.start(command=opts.command, space=space, storage=url, ray_address=address,
                           n_trials=self.n_trials, run_dir=run.root, executor=opts.executor)
            if self.warm is not None:
                self.log.update(warm_start={"runs": [str(d) for d in dirs], "recipes": self.warm.to_dict(),
                                            "notes": list(self.warm.notes)})
                for note in self.warm.notes:
                    self.ui.message(f"note: {note}")
            self.log.update(cluster=cluster, concurrency=self.concurrency, scheduler=asdict(space.scheduler),
                            simplify_stage=asdict(space.simplify), checkpoint_minutes=space.checkpoint_minutes,
                            trial_resources=self.trial_resources.as_dict() if self.trial_resources else None,
                            user_code=self.shipment.provenance)
            self._write_csv()
            done = self.loop.finished()
            where = ("in-process" if self.ray is None else address if opts.address else "local")
            self.ui.start(space=space, total=self.n_trials, done=done, run_dir=run.root, ray_address=where,
                          resources=self.trial_resources.describe() if self.trial_resources else "")
            if resuming:
                self.ui.message(f"resuming {run.root}: {done} trials finished, {recovered} interrupted "
                                "trials queued again")
                if changed:
                    self.ui.message(changed)
            if self.ray is not None and self.ray.orphans_stopped:
                self.ui.message(f"stopped {self.ray.orphans_stopped} process(es) of a local Ray whose search was "
                                "killed (they would have taken the cores trials are timed on)")
            elif baselines:
                what = ("the LR sweep of the base recipe, then the baseline" if space.baseline.tune_lr
                        else f"the base recipe, {space.describe_baseline()}")
                self.ui.message(f"baseline first: {what}")
            self.loop.run(self._executor())
            self._checkpoints().keep_only(queueing.checkpoints_still_needed(self.loop.trials()))
            if self.loop.stop_reason:
                self.ui.message(self.loop.stop_reason)
        except KeyboardInterrupt:
            self._interrupted()
            raise
        except BaseException:
            self.ui.stop()
            self._close("failed")
            if self.log is None and new_dir:  # refused before the search started: leave nothing behind
                shutil.rmtree(run.root, ignore_errors=True)
            raise
        finally:
            interrupts.restore(previous_handlers)
        return self._finish(self._write_csv())

    def _finish(self, df: pd.DataFrame) -> pd.DataFrame:
        """The search ended: run.json, the final report, the summary."""
        self.ui.stop()
        self._log_confirmation(df)
        self._log_headline(df)
        self._close("finished")
        self._report(final=True)
        self.ui.summary(df, self.space)
        return df

    def _checkpoints(self) -> CheckpointStore:
        """Where this search's trials checkpoint: Tune's storage on Ray, the run directory's checkpoints/ else."""
        return CheckpointStore(self.run_dir.ray_dir if self.ray is not None else self.run_dir.root / "checkpoints")

    def _executor(self) -> Any:
        if self.ray is None:
            from recipesearch.engine.executors import InProcess

            # one process trains one trial at a time; checkpoints in the run directory
            return InProcess(concurrency=1, checkpoints=self._checkpoints())
        from recipesearch.engine.ray_tune import RayTune

        session = len(self.log.data.get("sessions", [])) if self.log else 0
        shape = self.trial_resources
        assert shape is not None  # resolved in run() as soon as Ray was up
        from recipesearch.engine.ranks import tune_resources

        resources = tune_resources(shape.cpus, shape.gpus, shape.workers)  # one bundle per worker
        return RayTune(self.run_dir.ray_dir, resources, self.concurrency, session, self.space.max_failures)

    def _on_message(self, text: str) -> None:
        """The loop's news (LR chosen, confirmation planned): shown, and the progress total follows."""
        try:
            self.ui.message(text)
            if self.loop is not None and hasattr(self.ui, "set_total"):
                self.ui.set_total(self.loop.total())
        except Exception as exc:  # noqa: BLE001
            self._hook_failed("display", exc)

    def _log_headline(self, df: pd.DataFrame) -> None:
        """run.json: the claim at the target, and what the search cost against what its recipe saves."""
        if self.log is None:
            return
        from recipesearch.analysis.frontier import finite, frontier

        f = frontier(df, self.space)
        h = f.headline

        def num(x: float) -> float | None:
            return round(float(x), 6) if finite(x) else None

        self.log.update(headline={
            "target": self.space.target, "target_accuracy": num(h.baseline_accuracy), "target_source": h.target_source,
            "confirmed": h.confirmed, "trial": h.number, "speedup": num(h.speedup), "ci_low": num(h.speedup_ci_low),
            "ci_high": num(h.speedup_ci_high), "verdict": h.verdict, "elsewhere": h.elsewhere,
        }, payback=f.payback.to_dict() if f.payback is not None else None)

    def _log_confirmation(self, df: pd.DataFrame) -> None:
        """run.json: what the confirmation stage chose and the share of compute it really took."""
        stage = self.loop.confirm if self.loop is not None else None
        plan = stage.plan if stage is not None else None
        if plan is None or self.log is None:
            return
        secs = df["train_seconds"].fillna(0.0) if "train_seconds" in df else None
        confirm = float(secs[df["stage"] == "confirm"].sum()) if secs is not None else 0.0
        total = float(secs.sum()) if secs is not None else 0.0
        look, probe, trials = stage.second_look, stage.probe, self.loop.trials()
        self.log.update(confirmation={
            "enabled": self.space.confirm.enabled, "candidates": list(plan.candidates),
            "skipped": list(plan.skipped), "runs": len(plan.runs), "estimated_share": round(plan.estimated_share, 4),
            "estimated_seconds": round(plan.estimated_seconds, 4), "allowed_seconds": round(plan.allowed_seconds, 4),
            "budget": self.budget.describe() if self.budget is not None else None,
            "first_look": {str(n): d for n, d in look.decisions.items()} if look is not None else None,
            # the end's second look and those taken while the proposals went on (``look_early``)
            "second_look_runs": (len(look.runs) if look is not None else 0) + sum(
                t.user_attrs.get(st.EARLY) == EARLY_SECOND_LOOK for t in trials),
            "probe": ({"moved": probe.moved, "seconds": round(probe.probe_seconds, 4),
                       "early_seconds": round(probe.early_seconds, 4), "runs": len(probe.runs)}
                      if probe is not None else None),
            "share_of_train_seconds": round(confirm / total, 4) if total > 0 else 0.0,
            "max_share": self.space.confirm.max_share,
            "early": sorted(begun_early(trials)), "stopped_at_claim": stage.claim,
        })
        if self.loop.simplify_plan is not None:
            secs_simplify = float(secs[df["stage"] == "simplify"].sum()) if secs is not None else 0.0
            self.log.update(simplify={**self.loop.simplify_plan.to_dict(),
                                      "share_of_train_seconds": round(secs_simplify / total, 4) if total > 0 else 0.0})

    # -- per-trial hooks
    def _on_start(self, proposal: Proposal) -> None:
        try:
            self.ui.trial_started(proposal.number, proposal.attrs)
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
            self.ui.trial_finished(trial_row(frozen, self.space), df)
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
        df = trials_frame(self.study.get_trials(deepcopy=False), self.space, self.space.param_names())
        self.run_dir.write_trials(df)
        return df

    # -- report: recipesearch.report.build_report(run_dir), never fatal
    def _report(self, final: bool) -> None:
        if not self.opts.report:
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
        # stalls the executor's event loop nor steals CPU from the trials being timed.
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
        if self.loop is None:
            self._close("interrupted")
            return
        n = 0
        try:
            n = self.loop.interrupt_all()
            self._write_csv()
        except Exception as exc:  # noqa: BLE001 - a half-written trial stays RUNNING; --resume handles it
            self.ui.message(f"warning: could not record the interrupted trials ({exc}); --resume will")
        self._close("interrupted", interrupted_trials=n)
        self.ui.message(f"interrupted; {n} trial(s) in flight will run again with: {self._resume_command()}")

    def _resume_command(self) -> str:
        return f"recipesearch search {self.space.path or 'SPACE'} --out {self.run_dir.root} --resume"

    def _release_locks(self) -> None:
        for attr in ("study_lock", "run_lock"):
            lock = getattr(self, attr)
            setattr(self, attr, None)
            if lock is not None:
                lock.release()

    def _close(self, status: str, **fields: Any) -> None:
        try:
            if self.log is not None:
                self.log.finish(status, **fields)
        finally:
            self._release_locks()
            if self.ray is not None:
                self.ray.stop()
            if self._report_proc is not None and self._report_proc.poll() is None and status != "finished":
                self._report_proc.terminate()
