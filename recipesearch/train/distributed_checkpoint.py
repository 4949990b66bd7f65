"""Checkpoints of a data-parallel run (``train/distributed.py``): every rank's state in one file, written by rank 0.

The ranks share their weights (DDP keeps them equal) but not the rest: each has its own RNG streams, crop
generator and loader shard, per-rank algorithm state (MixUp's draws, selective backprop's scores) and BatchNorm
running statistics. So each rank captures its own snapshot (``checkpoint.capture``) at the same step:

    rank 0's clock says a checkpoint is due             ``decide``: its flag broadcast, every rank pauses there
                                                          (asked about once a second, not every step: ``ask_gap``)
    every rank captures its snapshot                    a peer's serialised *without* its model weights
    the peers' parts are gathered to rank 0             ``save``: gather_object over the host group
    rank 0 writes one file: its snapshot, "world",      ``checkpoint.write`` (atomic), what Tune gets
      "peers": [part of rank 1, ..., rank N-1]
    rank 0 broadcasts whether it worked                 a failure stops checkpoints on every rank alike

On resume (``begin``, at every multi-worker trainer's start, a collective whether or not there is a file):
rank 0 reads the file and scatters each peer its part (scatter_object_list), with rank 0's checkpoint
interval; a file of another world size (or recipe, or unreadable) is refused on every rank: all start from
step 0 and rank 0 warns. After ``checkpoint.restore`` the peers' weights are empty; ``share_weights``
broadcasts rank 0's into them, and the trainer wraps the restored model in DDP without DDP's start-up sync (the
weights are shared already; each rank keeps the buffers it saved until DDP broadcasts rank 0's at the next
forward, as in the uninterrupted run).

Why one file gathered at rank 0 rather than each rank writing its own: rank 0 is the Tune trial, the only rank
that can hand a checkpoint to Tune (``tune.report``); the peers are Ray tasks, possibly on other nodes, whose
local files would neither reach Tune's storage nor be found by the retried trial, which gets only rank 0's
checkpoint back (``tune.get_checkpoint``). Rank 0 then holds every peer's part in memory while writing; with
the weights kept once, a part is the optimizer state, averaged copies (EMA, SWA) and the per-rank rest.

Small collectives (the checkpoint decision, gather, scatter) go over a gloo group (``distributed.host_group``):
on NCCL a device tensor read back at each ask would synchronise the GPU, which the timed loop must not.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import cloudpickle
import torch
import torch.distributed as dist
from torch import nn

from recipesearch.train import checkpoint

# How often (wall seconds) the ranks ask rank 0 whether a checkpoint is due, at most: often enough that a
# checkpoint comes this late at worst, rarely enough that the collective costs nothing (~1 ms on gloo).
ASK_SECONDS = 1.0


def ask_gap(seconds_per_step: float, every: float) -> int:
    """Steps until the ranks next ask: about ``ASK_SECONDS`` (or a tenth of the interval, if shorter) of steps
    that take ``seconds_per_step``; 1 (every step) for an interval of 0."""
    spacing = min(ASK_SECONDS, every / 10)
    return max(1, int(spacing / seconds_per_step)) if seconds_per_step > 0 else 1


def decide(due: bool, gap: int, group: Any) -> tuple[bool, int]:
    """Rank 0's ``due`` and ``gap`` (steps until the next ask) on every rank (host tensors: no device sync)."""
    flags = torch.tensor([1 if due else 0, gap], dtype=torch.int64)
    dist.broadcast(flags, src=0, group=group)
    return bool(flags[0].item()), int(flags[1].item())


def peer_part(snapshot: dict[str, Any], model: nn.Module) -> dict[str, Any]:
    """A peer's ``snapshot`` serialised without ``model``'s weights (equal to rank 0's): each parameter is
    pickled empty (identity, requires_grad and every reference to it kept) and its shape and strides are
    recorded so that ``share_weights`` can give it rank 0's values in the same memory layout."""
    params = list(model.parameters())
    kept = [p.data for p in params]
    layout = [(tuple(p.shape), tuple(p.stride())) for p in params]
    buf = io.BytesIO()
    try:
        for p in params:
            p.data = p.data.new_empty(0)
        torch.save(snapshot, buf, pickle_module=cloudpickle)
    finally:
        for p, data in zip(params, kept, strict=True):
            p.data = data
    return {"snapshot": buf.getvalue(), "layout": layout}


def save(snapshot: dict[str, Any] | None, problem: str | None, model: nn.Module, path: Path | None,
         rank: int, world: int, group: Any) -> tuple[Path | None, str | None]:
    """Collective: write the checkpoint of every rank's ``snapshot`` to ``path`` (rank 0's). Each rank passes its
    snapshot, or the ``problem`` that kept it from capturing one. Returns (the file on rank 0, else None; the
    problem, the same on every rank, or None)."""
    sent: dict[str, Any] | None = None
    if rank > 0:
        if problem is not None:
            sent = {"error": problem}
        else:
            try:
                sent = peer_part(snapshot or {}, model)
            except Exception as exc:  # noqa: BLE001 - an unpicklable object: no checkpoints, the run goes on
                sent = {"error": f"cannot save a checkpoint ({type(exc).__name__}: {str(exc)[:120]})"}
    parts: list[Any] | None = [None] * world if rank == 0 else None
    dist.gather_object(sent, parts, dst=0, group=group)
    written = None
    if rank == 0:
        assert parts is not None
        errors = [f"rank {r}: {p['error']}" for r, p in enumerate(parts) if r and "error" in p]
        problem = problem or (errors[0] if errors else None)
        if problem is None and snapshot is not None and path is not None:
            try:
                written = checkpoint.write({**snapshot, "world": world, "peers": parts[1:]}, path)
            except Exception as exc:  # noqa: BLE001 - a full disk: train on without
                problem = f"cannot save a checkpoint ({type(exc).__name__}: {str(exc)[:120]})"
    box = [problem]
    dist.broadcast_object_list(box, src=0, group=group)
    return written, box[0]


def begin(path: Path | None, checkpoint_every: float | None, recipe_id: str, device: torch.device,
          rank: int, world: int, group: Any) -> tuple[float | None, dict[str, Any] | None, str | None]:
    """Collective at the start of a multi-worker run: rank 0's checkpoint interval and, when rank 0 was given a
    checkpoint (``path``) it can restore, each rank's snapshot. Returns (interval, this rank's snapshot or None,
    on rank 0 the reason a checkpoint was not restored or None). A peer's snapshot still lacks its weights:
    ``share_weights`` after ``checkpoint.restore``."""
    messages: list[dict[str, Any]] | None = None
    refused = None
    mine = None
    if rank == 0:
        messages = [{"every": checkpoint_every}] * world
        if path is not None:
            try:
                mine = checkpoint.read(path, recipe_id, device, world=world)
            except checkpoint.CheckpointError as exc:
                refused = str(exc)
            else:
                peers = mine.pop("peers")
                messages = [{"every": checkpoint_every, "resume": True},
                            *({"every": checkpoint_every, "part": part} for part in peers)]
    box: list[Any] = [None]
    dist.scatter_object_list(box, messages, src=0, group=group)
    got = box[0]
    if rank > 0 and "part" in got:
        mine = torch.load(io.BytesIO(got["part"]["snapshot"]), map_location=device, weights_only=False)
        mine["layout"] = got["part"]["layout"]
    return got["every"], mine, refused


def share_weights(model: nn.Module, layout: list[tuple[tuple[int, ...], tuple[int, ...]]] | None) -> None:
    """Collective: rank 0's parameter values into every rank's ``model``. A peer (``layout`` from its part)
    first gives each of its empty parameters storage of the recorded shape and strides (channels_last
    included: the convolutions must run as before). Broadcast over the default group (device tensors)."""
    params = list(model.parameters())
    if layout is not None:
        if len(layout) != len(params):
            raise checkpoint.CheckpointError(f"the checkpoint has {len(layout)} parameters, the model {len(params)}")
        for p, (shape, stride) in zip(params, layout, strict=True):
            p.data = torch.empty_strided(shape, stride, dtype=p.dtype, device=p.device)
    for p in params:
        values = p.detach().contiguous()  # a channels_last weight travels in logical order, lands in its own
        dist.broadcast(values, src=0)
        if layout is not None:
            p.data.copy_(values)
