"""Schedule-free SGD and AdamW (Defazio et al. 2024), from the ``schedulefree`` package: ``optimizer.name:
sgd_schedulefree | adamw_schedulefree``.

A schedule-free optimizer keeps two sequences: the weights it takes gradients at (``y``, what the model holds while it
trains) and their running average (``x``, what it should be evaluated with). Its LR needs no decay tied to the
budget: the average does the annealing, so one run stands for every length (the AlgoPerf self-tuning track's winner).
What the trainer owes it, and does here:

- ``optimizer.train()`` before the first step (``train_mode``) and ``optimizer.eval()`` before any evaluation
  (``eval_mode``: the model then holds ``x``), back to ``train()`` after a rung's evaluation (``averaged``);
- BatchNorm statistics for ``x``: the running statistics were gathered at ``y``, so at the end of training they are
  recomputed over up to ``BN_BATCHES`` training batches (the package authors' advice), inside ``train_seconds``: it
  is part of producing the model. A rung's evaluation skips that (a cheap estimate of where the run is);
- the schedule: only the recipe's warmup is applied (``LRSchedule(decay=False)``), never its decay;
- checkpoints are written while training, in train mode; the optimizer's state (``z``, its running weight sum) is
  in its ``state_dict``, so a resumed run goes on exactly.

EMA, SWA and Lookahead act on the weights the model holds while training (``y``): with EMA or SWA the evaluated
weights are their average, not ``x``.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import torch
from torch import nn
from torch.optim.swa_utils import update_bn

from recipesearch.errors import ConfigError

NAMES = ("sgd_schedulefree", "adamw_schedulefree")
BN_BATCHES = 50  # BatchNorm statistics for the averaged weights: ~50 batches, as the schedulefree authors advise


def build(name: str, groups: list[dict], lr: float, momentum: float, betas: tuple[float, float],
          weight_decay: float) -> torch.optim.Optimizer:
    """The schedule-free optimizer ``name`` over ``groups`` (``optim.param_groups``: decay only where ``decay``)."""
    try:
        import schedulefree
    except ImportError:
        raise ConfigError("optimizer.name", f"{name} needs the schedulefree package: pip install "
                                            "'recipesearch[schedulefree]'") from None
    for g in groups:
        g["weight_decay"] = weight_decay if g["decay"] else 0.0
    if name == "sgd_schedulefree":
        if momentum <= 0:
            raise ConfigError("optimizer.momentum", "sgd_schedulefree needs momentum > 0 (its interpolation weight)")
        opt = schedulefree.SGDScheduleFree(groups, lr=lr, momentum=momentum)
    else:
        opt = schedulefree.AdamWScheduleFree(groups, lr=lr, betas=betas)
    for g in opt.param_groups:
        g["initial_lr"] = lr  # set_lr scales it by the schedule's warmup
    return opt


def is_schedule_free(optimizer: object) -> bool:
    return any("train_mode" in g for g in getattr(optimizer, "param_groups", ()))


def train_mode(optimizer: object) -> None:
    """The model holds ``y``, where the gradients are taken (a no-op for other optimizers)."""
    if is_schedule_free(optimizer):
        optimizer.train()  # type: ignore[attr-defined]


def eval_mode(optimizer: object, model: nn.Module | None = None, batches: Iterable | None = None) -> None:
    """The model holds the averaged ``x``; with ``batches`` (of ``(x, y)`` or images), its BatchNorm statistics are
    recomputed for ``x`` over up to ``BN_BATCHES`` of them (``update_bn``: no gradient, no step)."""
    if not is_schedule_free(optimizer):
        return
    optimizer.eval()  # type: ignore[attr-defined]
    if model is not None and batches is not None:  # torch's SWA pass: exact averages; mode and momentum restored
        update_bn(itertools.islice(batches, BN_BATCHES), model)


@contextmanager
def averaged(optimizer: object) -> Iterator[None]:
    """Inside: the model holds ``x`` (a rung's evaluation); after: ``y`` again, training goes on."""
    eval_mode(optimizer)
    try:
        yield
    finally:
        train_mode(optimizer)
