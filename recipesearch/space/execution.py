"""How a search's trials run: how many, how many at once, each one's Ray resources and threads, retries and
checkpoints (``Execution``); ``Resources`` as the space asks them and ``TrialResources`` as resolved on the
cluster once Ray is up (``resolve_resources``)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Resources:
    """Ray resources of one trial, as the space (or --cpus-per-trial / --gpus-per-trial) asks them:
    ``gpus`` is a number or ``"auto"`` (kept literal: part of the space hash, resolved at run time by
    ``resolve_resources``). With ``workers`` > 1 a trial trains data-parallel on that many workers, and
    ``cpus`` and ``gpus`` are each worker's."""

    cpus: float = 1.0
    gpus: float | str = "auto"
    workers: int = 1

    def override(self, cpus: float | None = None, gpus: float | str | None = None) -> Resources:
        """These resources with the command line's values in place of the space's (None: the space's)."""
        return Resources(cpus=self.cpus if cpus is None else float(cpus),
                         gpus=self.gpus if gpus is None else (gpus if gpus == "auto" else float(gpus)),
                         workers=self.workers)

    def canonical(self) -> dict[str, Any]:
        """For the space hash: ``workers`` only when > 1, so the hashes of one-worker spaces stay as they were."""
        out = asdict(self)
        if self.workers == 1:
            del out["workers"]
        return out


@dataclass(frozen=True)
class Execution:
    """The space's ``trials``, ``concurrency``, ``resources``, ``threads_per_trial``, ``max_failures``,
    ``checkpoint_minutes``, ``search_budget`` and ``warm_start`` (schema.SpaceFile says what each means). The
    last four are operational: not in the space hash, so a resumed search may change them."""

    trials: int  # LR sweep, baseline runs and proposals; confirmation runs come on top
    concurrency: int
    resources: Resources
    threads_per_trial: int
    max_failures: int = 2  # retries of a lost worker's trial
    checkpoint_minutes: float | None = None  # between a running trial's checkpoints; None: none
    search_budget: float | None = None  # every stage within this many trainings of the baseline (search_budget.py)
    warm_start: tuple[str, ...] = ()  # earlier run directories, relative to the space file's folder resolved


@dataclass(frozen=True)
class TrialResources:
    """What each trial gets on this cluster: ``Resources`` with ``gpus: auto`` resolved."""

    cpus: float
    gpus: float
    auto: bool  # gpus was auto
    cluster_gpus: float
    base_device: str
    workers: int = 1  # data-parallel workers of one trial, each with ``cpus`` and ``gpus``

    def as_dict(self) -> dict[str, Any]:
        """For run.json: the resolved shape, what was asked and the cluster it was resolved on."""
        return {"cpus": self.cpus, "gpus": self.gpus, "gpus_asked": "auto" if self.auto else self.gpus,
                "cluster_gpus": self.cluster_gpus, **({"workers": self.workers} if self.workers > 1 else {})}

    def describe(self) -> str:
        """The run header's words: ``each trial: 1 CPU, 1 GPU (auto: the cluster has 4 GPUs)``."""
        cpu = _count(self.cpus, "CPU")
        have = _count(self.cluster_gpus, "GPU")
        if self.gpus > 0:
            gpu = _count(self.gpus, "GPU")
            per = f"{round(1 / self.gpus):g} trials per GPU; " if self.gpus < 1 else ""
            why = f"auto: the cluster has {have}" if self.auto else f"{per}the cluster has {have}"
        else:
            gpu = "no GPU"
            if not self.cluster_gpus:
                why = "the cluster has none"
            elif self.auto:
                why = f"auto: the base recipe's device is {self.base_device}; the cluster has {have}"
            else:
                why = f"resources.gpus: 0; the cluster has {have}"
        if self.workers > 1:
            return f"each trial: {self.workers} data-parallel workers, each {cpu}, {gpu} ({why})"
        return f"each trial: {cpu}, {gpu} ({why})"


def _count(n: float, unit: str) -> str:
    return f"{n:g} {unit}" + ("s" if n > 1 else "")


def resolve_resources(resources: Resources, cluster_gpus: float, base_device: str) -> TrialResources:
    """``gpus: auto``: one GPU a trial when the cluster has a GPU and the base recipe does not insist on the
    CPU (``device: cpu``), else none. Numbers are kept as asked (``0.5``: two trials share a GPU). A trial
    of N workers gets a GPU per worker under ``auto`` only where the cluster has N GPUs."""
    auto = resources.gpus == "auto"
    wants_gpu = cluster_gpus >= resources.workers and base_device != "cpu"
    gpus = (1.0 if wants_gpu else 0.0) if auto else float(resources.gpus)
    return TrialResources(cpus=float(resources.cpus), gpus=gpus, auto=auto, cluster_gpus=float(cluster_gpus),
                          base_device=base_device, workers=resources.workers)
