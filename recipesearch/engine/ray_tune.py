"""The Ray Tune executor: the loop's proposals run as Tune trials on a local Ray or an existing cluster.

Ray's public API, but for one patch of Tune kept in ``recipesearch/compat.py`` (a worker killed for memory):
``LoopSearcher`` is a ``ray.tune.search.Searcher`` whose ``suggest`` is the loop's ``ask`` and whose
``on_trial_complete`` is its ``tell``; ``CrashNotes`` is a ``FIFOScheduler`` that keeps
the text of a dead worker's error (Tune hands it to the scheduler only). The study in the run directory
is the checkpoint: the searcher saves nothing into Tune's experiment checkpoint, and resuming is
``--resume`` on the study, not ``Tuner.restore`` (Tune's checkpoint of an in-flight searcher cannot survive
kill -9 consistently).

Overhead, measured (ray 2.60, 2-core VM): the fixed part is Ray's start (~4-6 s) and each actor's first
trial (imports and dataset decoding, ~6-12 s, once per actor thanks to ``reuse_actors``); after that a
trial costs ~0.2-0.3 s beyond its training (evaluation, Tune scheduling, the study write, trials.csv).
"""
from __future__ import annotations

import logging
import os
import re
import socket
import time
from pathlib import Path
from typing import Any

import ray
from ray import tune
from ray.tune.schedulers import FIFOScheduler, TrialScheduler
from ray.tune.search import Searcher

from recipesearch.compat import memory_kills_are_actor_deaths
from recipesearch.engine import ray_orphans
from recipesearch.engine.checkpoints import CheckpointStore
from recipesearch.engine.loop import DONE, WAIT, SearchLoop
from recipesearch.engine.proposal import Proposal
from recipesearch.engine.trainable import trainable
from recipesearch.errors import UserError

LOOPBACK_IP = "127.0.0.2"  # Ray rewrites 127.0.0.1 to the external address; this keeps a local Ray on loopback

# Tune settings for many short trials: no per-trial result files (the study has the results), the
# old quiet output engine (verbose=0 is silent there), and Ctrl-C reaching us as KeyboardInterrupt so
# in-flight trials are marked interrupted in the study before we exit.
_TUNE_ENV = {
    "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",
    "RAY_AIR_NEW_OUTPUT": "0",
    "TUNE_DISABLE_SIGINT_HANDLER": "1",
    # Tune warns at every forced experiment snapshot (one per trial checkpoint here) less than this many
    # seconds after the last: 0 turns the warning off (a large value made it fire at every checkpoint)
    "TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S": "0",
    # A dead worker's trial gets one line from us (summarise_error), not Ray's traceback per death.
    "TUNE_PRINT_ALL_TRIAL_ERRORS": "0",
}


# 1) Tune's side of the loop -------------------------------------------------------------------------


class LoopSearcher(Searcher):
    """Tune asks the loop for configs and tells it each trial's last result."""

    def __init__(self, loop: SearchLoop, crash_notes: dict[str, str], checkpoints: CheckpointStore | None = None):
        super().__init__()
        self.loop, self.crash_notes, self.checkpoints = loop, crash_notes, checkpoints
        self.proposals: dict[str, Proposal] = {}
        self.pruned: set[str] = set()  # trials the scheduler stopped at a rung

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec: Any) -> bool:
        return True  # the space lives in the loop; Tune's param_space stays empty

    def suggest(self, trial_id: str) -> dict[str, Any] | str | None:
        proposal = self.loop.ask()
        if proposal == DONE:
            return Searcher.FINISHED
        if proposal == WAIT:
            return None
        self.proposals[trial_id] = proposal
        chain = proposal.config.get("resume_of")
        if chain and self.checkpoints is not None:  # a re-run: on from its predecessor's latest checkpoint
            latest = self.checkpoints.latest(chain)
            if latest is not None:
                proposal.config["resume_from"] = str(latest)
        return proposal.config

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        proposal = self.proposals.pop(trial_id, None)
        if proposal is None:
            return
        crash = (self.crash_notes.pop(trial_id, None) or "the trial's worker process died") if error else None
        if trial_id in self.pruned and not error:  # its last result is the rung it was stopped at
            self.pruned.discard(trial_id)
            result = {**(result or {}), "pruned": True}
        elif result and "checkpoint_step" in result and not error:
            result = None  # stopped after a checkpoint report, before its final one: interrupted, not failed
        self.loop.tell(proposal, result, crash)
        if result and not error and self.checkpoints is not None:  # finished: its checkpoints are done with
            self.checkpoints.forget([proposal.number, *(proposal.config.get("resume_of") or [])])

    def on_rung(self, trial_id: str, result: dict[str, Any]) -> bool:
        """A trial's rung report: the loop decides whether it goes on (``SearchLoop.report_rung``)."""
        proposal = self.proposals.get(trial_id)
        if proposal is None or proposal.on_rung is None:
            return True
        go_on = proposal.on_rung(result)
        if not go_on:
            self.pruned.add(trial_id)
        return go_on

    def on_retry(self, trial_id: str, text: str) -> None:
        """Tune starts the trial again after its worker died (``FailureConfig``); the study notes it."""
        proposal = self.proposals.get(trial_id)
        if proposal is not None:
            self.loop.note_retry(proposal, text)

    # The study in study.db is the checkpoint. Tune's pickled copy of the searcher would hold the loop,
    # the UI and a database handle, and would never be read (resume reads the study).
    def save_to_dir(self, *args: Any, **kwargs: Any) -> None:
        return None

    def save(self, checkpoint_path: str) -> None:
        return None

    def __getstate__(self) -> dict[str, Any]:
        # Tuner pickles its config (this searcher included) into tuner.pkl for Tuner.restore, never used.
        return {}


class CrashNotes(FIFOScheduler):
    """FIFO scheduling, plus the text of a dead worker's error, which Tune hands the scheduler only, plus the
    search's rung decisions (MO-ASHA: ``SearchLoop.report_rung`` decides, with ``analysis.rungs``): a trial's
    rung report that the loop turns down is answered ``STOP``, which ends the trial's training thread inside
    its ``tune.report`` (function trainables report synchronously), and Tune then tells the searcher the
    trial completed with that rung's result; every other result is ``CONTINUE``.

    Tune calls ``on_trial_error`` for every death of a trial's worker: before each retry that
    ``FailureConfig(max_failures)`` allows (the trial is then already marked ERROR, and goes back to PENDING
    right after) and once more for the last death, before the searcher hears of it. Each retry is told to
    ``on_retry`` at once, so the study records it even if the driver dies next.
    """

    def __init__(self, notes: dict[str, str], on_retry: Any = None, on_rung: Any = None):
        super().__init__()
        self.notes = notes
        self.on_retry = on_retry or (lambda trial_id, text: None)
        self.on_rung = on_rung or (lambda trial_id, result: True)

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict[str, Any]) -> str:
        if "rung" in result and not self.on_rung(trial.trial_id, result):
            return TrialScheduler.STOP
        return TrialScheduler.CONTINUE

    def on_trial_error(self, tune_controller: Any, trial: Any) -> None:
        text = _read_error(trial)
        self.notes[trial.trial_id] = text
        if trial.status == "ERROR" and trial.should_recover():  # Tune's requeue path (see the docstring)
            self.on_retry(trial.trial_id, text)


def _read_error(trial: Any) -> str:
    text = ""
    try:
        if trial.error_file and os.path.exists(trial.error_file):
            text = Path(trial.error_file).read_text(errors="replace")
    except OSError:
        pass
    return summarise_error(text)


def summarise_error(text: str) -> str:
    """One line from Tune's error file (one "Failure # k" block per death of the trial's worker) about the
    last death: Ray's memory monitor, a lost node, or a worker process that died (kill -9, the kernel's OOM
    killer, a crash: Ray cannot tell these apart, and lists them all as possible causes)."""
    block = re.split(r"^Failure # \d+.*$", text, flags=re.MULTILINE)[-1]
    lines = [ln.strip() for ln in block.splitlines() if ln.strip()]
    if not lines:
        return "the trial's worker process died"
    flat = " ".join(lines)
    peer = re.search(r"WorkerLost: (.*)", flat)  # a multi-worker trial's other rank died (engine/ranks.py)
    if peer:
        return f"worker lost: {peer.group(1)}"[:300]
    if "OutOfMemoryError" in flat or "low on memory" in flat:
        usage = re.search(r"was ([\d.]+\s*[KMGT]?B) used / ([\d.]+\s*[KMGT]?B)", flat)
        return ("out of memory: Ray's memory monitor killed the trial's worker"
                + (f" (node memory {usage.group(1)} used of {usage.group(2)})" if usage else ""))
    if re.search(r"node (?:has )?died|node was terminated|node .* (?:is|was) dead|NodeDiedError", flat, re.I):
        return "worker lost: the node running the trial died"
    if "unavailable" in flat and "RpcError" in flat:  # the node went away under a running actor
        rpc = re.search(r"RPC error: (.*?)(?: rpc_code|$)", flat)
        detail = rpc.group(1).split(";")[0].strip()[:80] if rpc else "no answer"
        return f"worker lost: the trial's node stopped answering ({detail})"
    if "worker process has died" in flat or "died unexpectedly" in flat:
        exit_type = re.search(r"Worker exit type: (\w+)", flat)
        return ("worker crashed: its process died" + (f" ({exit_type.group(1)})" if exit_type else "")
                + "; killed by a signal, the kernel's OOM killer, or a crash")
    return f"worker crashed: {lines[-1]}"[:300]


class _DropTuneSummary(logging.Filter):
    """Tune ends with "Trials did not complete: [...]" when a trial's worker died: the study and our own
    output already say which trial failed and why."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Trials did not complete")


def _dirname(trial: Any) -> str:
    return f"trial_{int(trial.config.get('number', 0)):05d}_{trial.trial_id}"


class RayTune:
    """One ``Tuner.fit()`` per round: ``num_samples`` = the trials still to run."""

    name = "ray"

    def __init__(self, storage_path: Path, resources: Any, concurrency: int, session: int,
                 max_failures: int = 2):
        self.storage_path, self.resources, self.concurrency = storage_path, resources, concurrency
        self.session, self.max_failures = session, max_failures

    def run(self, loop: SearchLoop) -> None:
        memory_kills_are_actor_deaths()
        notes: dict[str, str] = {}
        searcher = LoopSearcher(loop, notes, CheckpointStore(self.storage_path))
        tuner = tune.Tuner(
            tune.with_resources(trainable, self.resources),
            tune_config=tune.TuneConfig(search_alg=searcher, scheduler=CrashNotes(notes, searcher.on_retry,
                                                                                   searcher.on_rung),
                                        num_samples=max(1, loop.remaining()),
                                        max_concurrent_trials=self.concurrency, reuse_actors=True,
                                        trial_dirname_creator=_dirname),
            run_config=tune.RunConfig(storage_path=str(self.storage_path.resolve()),
                                      name=f"session-{self.session}-{time.strftime('%H%M%S')}", verbose=0,
                                      log_to_file=True,
                                      # A trial whose worker died (node lost, killed for memory) runs again
                                      # (a trial's own failure is a result, never an error) ...
                                      failure_config=tune.FailureConfig(max_failures=self.max_failures),
                                      # ... from its latest checkpoint, where it has one (engine/trainable.py)
                                      checkpoint_config=tune.CheckpointConfig(num_to_keep=1)),
        )
        # Tune's result grid looks for per-trial result files we do not write (the study has the results).
        logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)
        tune_log = logging.getLogger("ray.tune.tune")
        if not any(isinstance(f, _DropTuneSummary) for f in tune_log.filters):
            tune_log.addFilter(_DropTuneSummary())
        tuner.fit()


# 2) the Ray runtime ---------------------------------------------------------------------------------


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail in seconds, not minutes (ray.init retries for long), when nothing listens at host:port."""
    if address == "auto":
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not (sep and host and port.isdigit() and 0 < int(port) < 65536):
        raise UserError(f"--address: expected HOST:PORT of a Ray head (or auto), got {address!r}")
    try:
        conn = socket.create_connection((host, int(port)), timeout=timeout)
    except OSError as exc:
        raise UserError(f"--address: nothing answers at {address} ({exc.strerror or exc}); start the head "
                        "with `ray start --head` and pass the address it prints") from None
    with conn:
        if not _speaks_grpc(conn, timeout):
            raise UserError(f"--address: {address} accepts connections but is not a Ray head (no gRPC answer "
                            f"within {timeout:g} s); pass the address `ray start --head` prints")


# HTTP/2 with prior knowledge: the connection preface and an empty SETTINGS frame (RFC 9113, 3.4 and 6.5).
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_H2_SETTINGS = 0x04


def _speaks_grpc(conn: socket.socket, timeout: float) -> bool:
    """A Ray head's GCS (and the Ray Client server) is a plain-text gRPC server: told the HTTP/2 preface, it
    answers with a SETTINGS frame. Anything else (a web server, a port that never answers) would make
    ray.init wait for minutes."""
    try:
        conn.settimeout(timeout)
        conn.sendall(_H2_PREFACE)
        head = b""
        while len(head) < 9:
            chunk = conn.recv(9 - len(head))
            if not chunk:
                return False
            head += chunk
    except OSError:
        return False
    return head[3] == _H2_SETTINGS


class RayHandle:
    """Starts a local Ray sized to this machine, or joins ``address``; stops only what it started."""

    def __init__(self, address: str | None, threads: int, py_modules: tuple[str, ...] | list[str] = ()):
        self.started = False
        self.orphans_stopped = 0  # processes of a killed driver's local Ray stopped before this one started
        self.dashboard_url: str | None = None
        os.environ.update(_TUNE_ENV)
        if ray.is_initialized():  # a Python API user brought their own Ray
            self.address = ray.get_runtime_context().gcs_address
            return
        # BLAS/OpenMP threads limited to the trial's share (the trial also calls torch.set_num_threads):
        # workers of a local Ray inherit our environment; a cluster's get it through the job's runtime env.
        thread_env = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
        common: dict[str, Any] = dict(log_to_driver=False, logging_level=logging.WARNING)
        # The user's own modules (engine/shipping.py) travel with the job to every worker, on every node.
        code_env: dict[str, Any] = {"py_modules": list(py_modules)} if py_modules else {}
        try:
            if address:
                _check_reachable(address)
                ray.init(address=address, runtime_env={"env_vars": thread_env, **code_env}, **common)
            else:
                # the processes of a local Ray whose driver was killed (kill -9) would take the cores our
                # trials are timed on: stopped first; then this driver's own Ray is marked as its
                self.orphans_stopped = ray_orphans.stop_orphans()
                ray_orphans.mark_this_driver()
                for var, value in thread_env.items():
                    os.environ.setdefault(var, value)
                # Ray starts workers at nice 15: a timed trial would then yield its core to any other
                # process, and its train_seconds would measure that load (seen: searches starved to a
                # halt beside two nice-0 jobs on 2 cores). Trials run at the priority `recipesearch train`
                # would have. (A cluster's raylets are started by `ray start`, with their own setting.)
                os.environ.setdefault("RAY_worker_niceness", "0")
                # A local Ray listens on loopback only: no token to manage (and no warning about it).
                os.environ.setdefault("RAY_AUTH_MODE", "disabled")
                cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
                # No dashboard web server (it would listen on every interface) unless a user starts a Ray
                # cluster with one themselves and passes --address.
                context = ray.init(num_cpus=cpus, _node_ip_address=LOOPBACK_IP, include_dashboard=False,
                                   **({"runtime_env": code_env} if code_env else {}), **common)
                self.dashboard_url = context.dashboard_url or None
        except (ConnectionError, ValueError, RuntimeError) as exc:
            if not address:
                raise
            raise UserError(f"--address: cannot join Ray at {address}: {str(exc).splitlines()[0]}") from None
        self.started = True
        self.address = ray.get_runtime_context().gcs_address

    def cluster_gpus(self) -> float:
        """GPUs in the whole Ray cluster (what ``resources.gpus: auto`` is resolved on)."""
        return float(ray.cluster_resources().get("GPU", 0.0))

    def check_resources(self, cpus: float, gpus: float, workers: int = 1) -> dict[str, float]:
        """Refuse a trial shape the cluster can never schedule (Tune would wait for ever); with ``workers``,
        ``cpus`` and ``gpus`` are each worker's (one placement-group bundle each, on any nodes)."""
        total = ray.cluster_resources()
        have_cpu, have_gpu = total.get("CPU", 0.0), total.get("GPU", 0.0)
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        biggest_cpu = max((n["Resources"].get("CPU", 0.0) for n in nodes), default=have_cpu)
        biggest_gpu = max((n["Resources"].get("GPU", 0.0) for n in nodes), default=have_gpu)
        if cpus > biggest_cpu:
            raise UserError(f"resources.cpus (or --cpus-per-trial): a trial asks for {cpus:g} CPUs; the largest Ray "
                            f"node has {biggest_cpu:g}")
        if gpus > biggest_gpu:
            raise UserError(f"resources.gpus (or --gpus-per-trial): a trial asks for {gpus:g} GPUs; the Ray "
                            f"cluster has {'none' if not have_gpu else f'at most {biggest_gpu:g} per node'}")
        if workers > 1 and (workers * cpus > have_cpu or workers * gpus > have_gpu):
            raise UserError(f"resources.workers: {workers} workers of {cpus:g} CPUs and {gpus:g} GPUs each need "
                            f"{workers * cpus:g} CPUs and {workers * gpus:g} GPUs; the Ray cluster has "
                            f"{have_cpu:g} CPUs and {have_gpu:g} GPUs")
        return {"CPU": have_cpu, "GPU": have_gpu, "nodes": float(len(nodes))}

    def stop(self) -> None:
        if self.started and ray.is_initialized():
            ray.shutdown()  # a local Ray goes away; on a cluster this only disconnects our driver
        self.started = False
