"""What one training run measured (``TrainResult``): accuracy, the timed training seconds and what was kept out
of them (evaluation, rungs, checkpoints), and how the run went (resumes, data-parallel workers, warnings).

How the seconds are taken: ``recipesearch/train/loop.py``'s and ``timing.py``'s docstrings.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class TrainResult:
    accuracy: float  # top-1 on the test split
    loss: float
    train_seconds: float  # training steps only: no evaluation, decoding or model construction
    throughput: float  # training images per second
    data_wait_fraction: float  # share of train_seconds spent producing/augmenting batches (CUDA: GPU idle or on input)
    epochs: float
    steps: int
    samples_seen: int
    recipe_id: str
    val_accuracy: float | None = None
    val_loss: float | None = None
    eval_seconds: float | None = None  # test (+ val) evaluation, outside train_seconds: where TTA's cost shows
    rung_seconds: float = 0.0  # rung evaluations and the scheduler's answers, outside train_seconds
    checkpoint_seconds: float = 0.0  # writing checkpoints (and handing them to Ray Tune), outside train_seconds
    checkpoints: int = 0  # checkpoints written, every segment of the run
    resumes: int = 0  # times the run went on from a checkpoint (segments - 1); train_seconds sums the segments
    # wall time from each restored checkpoint's writing to its resume: the work lost after it, noticing the death
    # and starting again (clocks of two nodes when the run moved: as far apart as they are)
    resume_gap_seconds: float = 0.0
    resumed_at_step: int = 0  # the step of the last checkpoint it went on from (0: trained from the start)
    device: str = "cpu"
    threads: int = 1
    workers: int = 1  # data-parallel ranks (train/distributed.py); train_seconds and accuracy are rank 0's
    warnings: list[str] = field(default_factory=list)
    # the process's CPU seconds / (train_seconds x threads) of the last segment (machine_load.py): ~1 when the
    # run had its cores, lower when another process took turns on them
    cpu_share: float = float("nan")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
