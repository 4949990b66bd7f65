"""Data-parallel training of one recipe over N workers (torch DistributedDataParallel): the trainer's side.

Whoever starts the workers (``engine/ranks.py`` on Ray, a test with ``torch.multiprocessing``) opens the
process group with ``process_group``; ``Trainer`` then sees more than one rank (``rank_and_world``) and:

1. builds the model from the recipe's seed on every rank and wraps it in DDP after INIT (surgery,
   channels_last and torch_compile are done by then; DDP broadcasts rank 0's weights and buffers anyway);
2. gives each rank its shard of one global permutation (``ShardedBatchLoader``): every step the ranks
   together see ``batch_size`` samples, ``batch_size / N`` each, so the global batch and the number of
   steps are those of a one-worker run; a batch that does not divide is an error naming resources.workers;
3. reseeds the global RNGs and the crop/flip generator per rank (``rank_seed``): MixUp, CutMix,
   RandAugment, stochastic depth ... draw independent numbers on each rank, as on one bigger batch;
4. times on rank 0 (every step's gradient all-reduce keeps the ranks in step, so rank 0's clock is the
   trial's training wall time) and evaluates on rank 0 only; ``samples_seen`` is summed over the ranks;
5. keeps the ranks from drifting apart: a rung's go-on/stop is rank 0's, broadcast (``agree``); a
   ``skip_step`` is taken by all ranks when any rank asks (``agree_skip``, only for algorithms that declare
   ``skips_steps``: none of the shipped ones does); algorithms that leave parameters without a gradient in
   some steps (``LEAVES_PARAMS_UNUSED``) get ``find_unused_parameters=True`` (a frozen parameter's
   gradient then stays None, so weight decay does not move it either);
6. checkpoints: rank 0's clock decides when, every rank captures its own state at that step and rank 0 writes
   them as one file; on resume each rank restores its own (``distributed_checkpoint.py``).

BatchNorm keeps per-worker batch statistics (DDP's default; running statistics are rank 0's, broadcast
at each forward). Selective backprop scores and selects within each rank's shard (the same count on
every rank, so the gradient average stays the global mean). EMA, SWA, SAM, Lookahead and Muon act on the
unwrapped model and the already averaged gradients, identically on every rank.
"""
from __future__ import annotations

import contextlib
import datetime
import gc
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from recipesearch.data import BatchLoader
from recipesearch.data.loader import Batch
from recipesearch.errors import ConfigError

if TYPE_CHECKING:
    from recipesearch.algorithms import Algorithm

# Algorithms after which some parameters get no gradient in some steps: frozen layers, dropped blocks.
LEAVES_PARAMS_UNUSED = frozenset({"layer_freezing", "stochastic_depth"})
# A collective that waits longer than this fails (a peer died or hangs): the trial then fails with one line.
DEFAULT_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Rendezvous:
    """Where the ranks of one trial meet: rank 0 listens at ``address:port`` (a TCP store)."""

    rank: int
    world: int
    address: str
    port: int
    backend: str = "gloo"  # "nccl" when the ranks train on GPUs
    timeout_s: float = DEFAULT_TIMEOUT_S

    def to_dict(self) -> dict[str, object]:
        return {"rank": self.rank, "world": self.world, "address": self.address, "port": self.port,
                "backend": self.backend, "timeout_s": self.timeout_s}


@contextlib.contextmanager
def process_group(rv: Rendezvous) -> Iterator[None]:
    """The process group of ``rv`` for the duration of the block; torn down even when the block raises (so a
    failing rank's peers see the connection close rather than wait for the timeout)."""
    dist.init_process_group(rv.backend, init_method=f"tcp://{rv.address}:{rv.port}", rank=rv.rank,
                            world_size=rv.world, timeout=datetime.timedelta(seconds=rv.timeout_s))
    try:
        yield
    finally:
        # Free what still holds the group first: a trainer that an exception left in a reference cycle keeps
        # its DDP reducer, which, destroyed at interpreter exit after the group, aborted the process
        # (SIGABRT, "terminate called without an active exception") in about 1 run of 8.
        gc.collect()
        dist.destroy_process_group()


def rank_and_world() -> tuple[int, int]:
    """(this rank, number of ranks); (0, 1) outside a process group."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def per_worker_batch(batch_size: int, world: int) -> int:
    """Each rank's share of the global batch; an error naming resources.workers when it does not divide."""
    if batch_size % world:
        raise ConfigError("resources.workers", f"{world} workers cannot share batch_size {batch_size} equally "
                                               f"(each worker trains batch_size / workers samples a step)")
    return batch_size // world


def rank_seed(seed: int, rank: int) -> int:
    """A seed for ``rank``'s own random stream, independent of the other ranks' and of ``seed``'s."""
    return int(np.random.SeedSequence([seed, rank]).generate_state(1, np.uint64)[0] % 2**63)


def reseed_rank(seed: int, rank: int) -> None:
    """The global RNGs (torch, numpy, random) on ``rank``'s own stream: called after the model is built
    from the shared seed, so the weights agree and the augmentations do not."""
    s = rank_seed(seed, rank)
    random.seed(s)
    np.random.seed(s % 2**32)
    torch.manual_seed(s)


class ShardedBatchLoader(BatchLoader):
    """``BatchLoader`` for one rank: every rank draws the same global permutation from ``order_generator``
    (seeded alike on all ranks) and takes its slice of each global batch; crops and flips come from
    ``generator`` (the rank's own). ``len()`` is the number of global batches, the same on every rank.
    Built from the trainer's loader (``of``), whose data, stream and normalisation it shares."""

    global_batch: int
    rank: int
    world: int
    order_generator: torch.Generator

    @classmethod
    def of(cls, loader: BatchLoader, rank: int, world: int, generator: torch.Generator) -> ShardedBatchLoader:
        if not loader.drop_last or loader.generator is None:
            raise ValueError("a sharded loader drops the last incomplete batch and needs the loader's generator")
        sharded = cls.__new__(cls)
        sharded.__dict__.update(vars(loader))  # the same images, stream and normalisation; other batches
        sharded.batch_size = per_worker_batch(loader.batch_size, world)
        sharded.global_batch, sharded.rank, sharded.world = loader.batch_size, rank, world
        sharded.order_generator, sharded.generator = loader.generator, generator
        return sharded

    def __len__(self) -> int:
        n = self.num_samples
        return max(n // self.global_batch, 1 if n >= self.world else 0)

    def position(self) -> dict[str, Any]:
        """``BatchLoader.position`` and the shared order generator's state (the next epochs' permutations)."""
        return {**super().position(), "order_generator": self.order_generator.get_state()}

    def resume(self, position: dict[str, Any]) -> Iterator[Batch]:
        self.order_generator.set_state(position["order_generator"].cpu())
        return super().resume(position)

    def _order(self) -> torch.Tensor:
        n, steps, device = self.num_samples, len(self), self.labels.device  # where batches are made
        if self.shuffle:
            gen = self.order_generator
            order = torch.randperm(n, generator=gen, device=gen.device).to(device)
        else:
            order = torch.arange(n, device=device)
        share = min(self.batch_size, n // self.world)  # smaller only when the whole set is one short batch
        return order[: steps * share * self.world].view(steps, self.world, share)[:, self.rank].reshape(-1)


def shard_loader(loader: BatchLoader, rank: int, world: int, seed: int) -> ShardedBatchLoader:
    """``loader`` (the trainer's, built as for one worker) as ``rank``'s shard: its generator, seeded alike
    on every rank, draws the shared order; a new one on the rank's own seed draws the crops and flips."""
    if type(loader) is not BatchLoader or loader.generator is None:
        raise ConfigError("resources.workers", f"the {type(loader).__name__} of this dataset cannot be split "
                                               "over workers; use resources.workers: 1")
    crops = torch.Generator(device=loader.generator.device)
    crops.manual_seed(rank_seed(seed, rank))
    return ShardedBatchLoader.of(loader, rank, world, crops)


def wrap_model(model: nn.Module, device: torch.device, algorithms: list[Algorithm], sync: bool = True) -> nn.Module:
    """``model`` in DistributedDataParallel (its weights and buffers broadcast from rank 0 unless not ``sync``:
    a restored checkpoint, whose weights are shared already and whose buffers are each rank's own)."""
    unused = any(a.name in LEAVES_PARAMS_UNUSED for a in algorithms)
    ids = [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" \
        else None
    return nn.parallel.DistributedDataParallel(model, device_ids=ids, find_unused_parameters=unused, init_sync=sync)


def host_group() -> Any:
    """A group for small host-side collectives (checkpoint decisions, gathering snapshots): the default one
    when it is gloo, else a new gloo group. Collective: every rank calls it, at the same point."""
    return None if dist.get_backend() == "gloo" else dist.new_group(backend="gloo")


def agree(go_on: bool, device: torch.device) -> bool:
    """Rank 0's decision, on every rank (a rung's go-on or stop)."""
    flag = torch.tensor([1 if go_on else 0], device=device)
    dist.broadcast(flag, src=0)
    return bool(flag.item())


def agree_skip(skip: bool, device: torch.device) -> bool:
    """True on every rank when any rank wants to skip this optimizer step."""
    flag = torch.tensor([1 if skip else 0], device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())


def total(count: int, device: torch.device) -> int:
    """``count`` summed over the ranks."""
    t = torch.tensor([count], dtype=torch.int64, device=device)
    dist.all_reduce(t)
    return int(t.item())


# What a rank's collective raises when another rank left the group (gloo over TCP; NCCL's watchdog; the timeout).
_PEER_GONE = re.compile(r"connection closed by peer|connection reset by peer|broken pipe|socket timeout|"
                        r"timed out|communicator was aborted|NCCL error", re.IGNORECASE)


def peer_gone(error: str) -> bool:
    """Whether ``error`` (one line) is this rank noticing that a peer failed, rather than a failure of its own."""
    return bool(_PEER_GONE.search(error))
