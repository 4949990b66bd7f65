"""Where the decoded images live: in memory (on the training device) or streamed, from ``data.in_memory``.

``auto`` (the default) keeps them in memory when they take at most ``MAX_MEMORY_SHARE`` of the host's
memory and, on a GPU, of the GPU's; beyond that a dataset that can stream (imagefolder) streams, and any
other is refused, as ``true`` refuses every set over the limit: training needs the rest of the memory for
the model, its activations and the copies a validation split or subset makes.
"""
from __future__ import annotations

import os

import torch

from recipesearch.errors import ConfigError

MAX_MEMORY_SHARE = 0.5  # decoded images may take at most this share of the host's (and the GPU's) memory


def host_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def device_memory_bytes(device: torch.device) -> int | None:
    """Total memory of a CUDA device; None elsewhere (the CPU's is the host's)."""
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    return int(torch.cuda.get_device_properties(device).total_memory)


def keep_in_memory(
    in_memory: bool | str | None, need: int, count: int, size: int, device: torch.device, can_stream: bool
) -> bool:
    """True to decode ``count`` images (``need`` bytes at ``size`` px) into memory, False to stream them;
    a one-line ``ConfigError`` when they must be in memory and would not fit."""
    if in_memory is False:
        return False
    limits = [(what, total) for what, total in (("this machine's", host_memory_bytes()),
                                                ("the GPU's", device_memory_bytes(device))) if total]
    over = next(((what, total) for what, total in limits if need > MAX_MEMORY_SHARE * total), None)
    if over is None:
        return True
    if in_memory in (None, "auto") and can_stream:
        return False
    what, total = over
    message = (f"{size} px: {count} images take {need / 2**30:.1f} GiB decoded, more than "
               f"{MAX_MEMORY_SHARE:.0%} of {what} {total / 2**30:.0f} GiB")
    if can_stream:
        raise ConfigError("data.in_memory", f"true, but at data.image_size {message}; use auto or false to stream "
                                            f"them from disk, or a smaller data.image_size")
    raise ConfigError("data.image_size", message)
