"""Where a search keeps its trials' training checkpoints, how a re-run finds its predecessor's, and when
they are deleted.

Layout (Ray Tune's storage, the run directory's ``ray/``; the in-process executor writes the same shape
under ``checkpoints/``)::

    <root>/<session folder>/trial_<number:05d>_<id>/checkpoint_<index:06d>/trainer.pt

Tune names a trial's folders (``trial_dirname_creator`` in engine/ray_tune.py gives the study's trial
number) and keeps the latest checkpoint of each trial only (``CheckpointConfig(num_to_keep=1)``). A trial
that finished (completed, failed for its own reason or stopped at a rung) no longer needs its checkpoint,
nor do the trials it re-ran: ``forget`` deletes them, so checkpoints do not pile up over a long search.
Those of interrupted trials and of trials whose worker died stay until their re-run finishes. A search that
ran to its end keeps only what a re-run still queued would go on from (``keep_only``): a driver killed between
a trial's result and its ``forget`` leaves that trial's checkpoints, which nothing would delete otherwise.

A running trial writes its checkpoint into a working folder in the temp directory first (``working_folder``),
named for its process; a worker that dies (SIGKILL, the memory monitor) cannot remove it, so every trial sweeps
the folders whose process is gone before it makes its own (``sweep_orphans``).
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from recipesearch.train.checkpoint import FILENAME

_INDEX = re.compile(r"checkpoint_(\d+)$")
WORKING_PREFIX = "recipesearch-checkpoint-"
_WORKING = re.compile(re.escape(WORKING_PREFIX) + r"(\d+)-")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def sweep_orphans(folder: str | Path | None = None) -> int:
    """Remove the working folders in ``folder`` (the temp directory) whose process is gone; how many."""
    removed = 0
    for path in Path(folder or tempfile.gettempdir()).glob(f"{WORKING_PREFIX}*"):
        match = _WORKING.match(path.name)
        if match and path.is_dir() and not _alive(int(match.group(1))):
            shutil.rmtree(path, ignore_errors=True)
            removed += not path.exists()
    return removed


@contextlib.contextmanager
def working_folder() -> Iterator[str]:
    """A trial's working folder for its checkpoints, named for this process, after sweeping the orphans."""
    sweep_orphans()
    with tempfile.TemporaryDirectory(prefix=f"{WORKING_PREFIX}{os.getpid()}-") as work:
        yield work
_TRIAL = re.compile(r"trial_(\d+)_")


def _index(folder: Path) -> int:
    match = _INDEX.search(folder.name)
    return int(match.group(1)) if match else -1


class CheckpointStore:
    """The checkpoints of one search under ``root``."""

    def __init__(self, root: Path):
        # absolute: a re-run gets the path in its config, and Tune runs each trial in a folder of its own
        self.root = Path(root).resolve()

    def folders(self, number: int) -> list[Path]:
        """Checkpoint folders of trial ``number``, oldest first."""
        if not self.root.is_dir():
            return []
        found = [p for p in self.root.glob(f"*/trial_{int(number):05d}_*/checkpoint_*") if p.is_dir()]
        return sorted(found, key=lambda p: (_index(p), p.stat().st_mtime))

    def latest(self, numbers: Sequence[int]) -> Path | None:
        """The newest checkpoint file among ``numbers`` (a re-run chain, latest trial first), or None."""
        for number in numbers:
            for folder in reversed(self.folders(number)):
                if (folder / FILENAME).is_file():
                    return folder / FILENAME
        return None

    def keep_only(self, numbers: Iterable[int]) -> int:
        """Delete the checkpoints of every trial but ``numbers``; returns how many folders went."""
        keep = {int(n) for n in numbers}
        if not self.root.is_dir():
            return 0
        trials = {int(m.group(1)) for p in self.root.glob("*/trial_*") if (m := _TRIAL.match(p.name))}
        return self.forget(sorted(trials - keep))

    def forget(self, numbers: Iterable[int]) -> int:
        """Delete every checkpoint of ``numbers``; returns how many folders went."""
        gone = 0
        for number in numbers:
            for folder in self.folders(number):
                shutil.rmtree(folder, ignore_errors=True)
                gone += 1
        return gone
