"""Named points of the training loop where algorithms run (the trainer, ``recipesearch/train/loop.py``, fires them).

The loop, in pseudocode, with the event fired at each marker::

    INIT                         # model built, optimizer not yet: surgery (blurpool, SE, channels_last)
    FIT_START                    # optimizer, schedule and loader exist (timed): EMA's copy, patch whitening
    for epoch in epochs:
        EPOCH_START
        for x, y in loader:
            AFTER_DATALOADER     # batch on device: mixup, cutmix, randaugment, resizing, selective backprop
            BATCH_START
            BEFORE_FORWARD
            outputs = model(x)
            AFTER_FORWARD
            BEFORE_LOSS
            loss = loss_fn(outputs, y)
            AFTER_LOSS
            BEFORE_BACKWARD
            loss.backward()
            AFTER_BACKWARD       # gradient clipping, SAM's second pass
            optimizer.step(); schedule.step()
            AFTER_STEP           # EMA / SWA averaging
            BATCH_END
                                 # (checkpoint every N seconds here: train/checkpointing.py, clock paused)
        EPOCH_END                # layer freezing, SWA's LR switch
    FIT_END                      # EMA / SWA swap in the averaged weights for evaluation

A run resumed from a checkpoint gets every algorithm object back as it was (what FIT_START set up
included) and fires neither FIT_START nor the resumed epoch's EPOCH_START again.

Only the time from FIT_START (its hooks included) to FIT_END counts as training time; evaluation
happens after FIT_END and is timed separately (``TrainResult.eval_seconds``). On a GPU these two
points are where the loop synchronises the device, and nowhere per step (``recipesearch/train/timing.py``):
a hook that reads a device value on the host (``.item()``, ``bool(t)``, ``.tolist()``, a blocking copy
to the GPU) adds a sync to every step it runs in.
"""
from __future__ import annotations

from enum import StrEnum


class Event(StrEnum):
    INIT = "init"
    FIT_START = "fit_start"
    EPOCH_START = "epoch_start"
    AFTER_DATALOADER = "after_dataloader"
    BATCH_START = "batch_start"
    BEFORE_FORWARD = "before_forward"
    AFTER_FORWARD = "after_forward"
    BEFORE_LOSS = "before_loss"
    AFTER_LOSS = "after_loss"
    BEFORE_BACKWARD = "before_backward"
    AFTER_BACKWARD = "after_backward"
    AFTER_STEP = "after_step"
    BATCH_END = "batch_end"
    EPOCH_END = "epoch_end"
    FIT_END = "fit_end"
