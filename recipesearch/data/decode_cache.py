"""The decoded-tensor cache on disk: an image folder is decoded once per machine (or once per cluster on a
shared ``$RECIPESEARCH_CACHE``), then read back with no decoding, whole (in memory) or by rows (streamed).

Where: ``$RECIPESEARCH_CACHE`` (default ``~/.cache/recipesearch/decoded``), one folder per key holding
``<split>.u8`` (raw uint8 [N, C, H, W]) and ``meta.json`` (shapes, classes, per-channel mean/std of the
training split, the fields the key was made of). The key hashes what changes the pixels (dataset, resolved
root, image_size, channels, this format's version) and a fingerprint of every image file (relative path,
size, mtime, label): an edited, added or removed file misses the cache. ``data.cache: false`` skips it.

When: on the first ``load_data`` of a spec that misses, before training (outside ``train_seconds``): a
single pass decodes the files in DataLoader workers and writes them in order. Writing is atomic: into a
``.tmp-*`` folder renamed into place after ``meta.json`` is written, so a killed writer leaves no cache
that could be read (a stale ``.tmp-*`` is only ever deleted by its own writer, or by hand), and a folder
whose files do not match its ``meta.json`` is ignored and rebuilt. An ``flock`` per key makes concurrent
builders on one machine wait for the first instead of decoding the same set again; without working locks
(some network file systems) two builders both decode and the rename keeps one, which is harmless.
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import math
import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from recipesearch.data.source import FileSource, MemmapSource
from recipesearch.data.stats import ChannelSums
from recipesearch.data.stream import read_chunks

ENV_CACHE = "RECIPESEARCH_CACHE"
FORMAT = 1  # bump when the file layout or the decoding changes: old caches then miss
META = "meta.json"


def cache_root() -> Path:
    """``$RECIPESEARCH_CACHE``, else ``~/.cache/recipesearch/decoded``."""
    base = os.environ.get(ENV_CACHE)
    return Path(base).expanduser() if base else Path.home() / ".cache" / "recipesearch" / "decoded"


def fingerprint(root: Path, samples: Sequence[tuple[Path, int]]) -> str:
    """sha256 of every sample's path relative to ``root``, size, mtime (ns) and label, in order."""
    h = hashlib.sha256()
    for path, label in samples:
        st = os.stat(path)
        h.update(f"{os.path.relpath(path, root)}\0{st.st_size}\0{st.st_mtime_ns}\0{label}\n".encode())
    return h.hexdigest()


def cache_key(fields: dict[str, Any]) -> str:
    """24 hex digits of sha256 over the canonical JSON of ``fields`` plus the format version."""
    canonical = json.dumps({**fields, "format": FORMAT}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:24]


def _valid(folder: Path) -> dict[str, Any] | None:
    """The folder's metadata when every split file has exactly the size its shape says; else None."""
    try:
        meta = json.loads((folder / META).read_text())
        for split, shape in meta["shapes"].items():
            if (folder / f"{split}.u8").stat().st_size != math.prod(int(s) for s in shape):
                return None
        return meta
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _sources(folder: Path, meta: dict[str, Any]) -> dict[str, MemmapSource]:
    return {split: MemmapSource(folder / f"{split}.u8", tuple(shape)) for split, shape in meta["shapes"].items()}


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX)
        except OSError:  # no locks on this file system: concurrent builders are still safe, only wasteful
            pass
        yield


def cached_sources(
    key: str, sources: dict[str, FileSource], describe: dict[str, Any], workers: int = 0
) -> tuple[dict[str, MemmapSource], dict[str, Any]]:
    """The cache of ``key`` as one ``MemmapSource`` per split and its metadata, decoding ``sources`` into it
    first when it is missing (the ``train`` split's mean/std are computed on the way)."""
    root = cache_root()
    folder = root / key
    meta = _valid(folder)
    if meta is not None:
        return _sources(folder, meta), meta
    root.mkdir(parents=True, exist_ok=True)
    need = sum(math.prod(source.shape) for source in sources.values())
    free = shutil.disk_usage(root).free
    if need > free:  # say so now, not after hours of decoding
        raise OSError(errno.ENOSPC, f"the decoded images need {need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free")
    with _locked(root / f".{key}.lock"):
        meta = _valid(folder)  # another process may have built it while we waited
        if meta is None:
            meta = _build(folder, sources, describe, workers)
    return _sources(folder, meta), meta


def _build(folder: Path, sources: dict[str, FileSource], describe: dict[str, Any], workers: int) -> dict[str, Any]:
    tmp = folder.parent / f".tmp-{folder.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        meta: dict[str, Any] = {**describe, "shapes": {}}
        for split, source in sources.items():
            sums = ChannelSums(source.shape[1])
            with open(tmp / f"{split}.u8", "wb") as out:
                for _, batch in read_chunks(source, workers):
                    out.write(batch.numpy().tobytes())
                    if split == "train":
                        sums.add(batch)
                out.flush()
                os.fsync(out.fileno())
            meta["shapes"][split] = list(source.shape)
            if split == "train":
                meta["mean"], meta["std"] = sums.stats()
        (tmp / META).write_text(json.dumps(meta, indent=1) + "\n")
        if folder.exists():  # a broken cache (files not matching its meta): set aside, then replaced
            stale = folder.parent / f".stale-{folder.name}-{uuid.uuid4().hex[:8]}"
            os.replace(folder, stale)
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.replace(tmp, folder)
        except OSError:  # another writer renamed its copy first (no working locks): keep theirs
            if _valid(folder) is None:
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return meta
