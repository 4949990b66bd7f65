"""Training: the trainer's loop (``loop.py``), its timing, checkpoints, rungs and data-parallel side, schedules
and optimizers.

Modules are imported by their own names (``from recipesearch.train.loop import Trainer, TrainResult, fit``);
this package imports none of them, so importing one submodule (the optimizers, say) does not import the loop
and, through it, the algorithms. The hook contract (``Event``, ``State``) is ``recipesearch.hooks``.
"""
from __future__ import annotations
