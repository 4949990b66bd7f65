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
"""
from __future__ import annotations

import re
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from recipesearch.train.checkpoint import FILENAME

_INDEX = re.compile(r"checkpoint_(\d+)$")
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
