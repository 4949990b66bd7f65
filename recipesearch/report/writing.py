"""Files written all together or not at all: what ``recipesearch report`` and ``recipesearch export`` write.

Each file is first written to a temporary name beside its target (``.NAME.PID.TID.tmp``, as
``rundir.write_atomic`` names them); only when every one is written are they renamed into place, in order.
A write that fails (a read-only run directory or mount, a full disk, ``--to /proc/x``) removes the temporary
files and the folders it made, so every target is as it was, and the OSError becomes one ``UserError`` line
that the caller words (which argument, what to do). A rename failing after others succeeded (the directory
changed under us) is the one case that leaves some files new; each file is still whole, never half-written.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from recipesearch.errors import UserError

# (the path that could not be written or created, the reason: "Read-only file system") -> the error's line
Describe = Callable[[Path, str], str]


def write_together(files: Mapping[Path, str | bytes], describe: Describe) -> list[Path]:
    """Write ``files`` (target -> text or bytes) all or none; returns the targets. An OSError is
    ``UserError(describe(path, reason))`` after everything this call made is removed."""
    made: list[Path] = []  # folders created here, parents first
    staged: list[tuple[Path, Path]] = []  # (temporary file, target)
    suffix = f"{os.getpid()}.{threading.get_ident()}.tmp"
    where = Path(".")
    try:
        for target, data in files.items():
            where = target.parent
            for folder in reversed([target.parent, *target.parent.parents]):
                if not folder.is_dir():
                    where = folder
                    try:
                        folder.mkdir()
                    except FileExistsError:
                        if folder.is_dir():  # made meanwhile by someone else: not ours to remove
                            continue
                        raise
                    made.append(folder)
            where = target
            tmp = target.with_name(f".{target.name}.{suffix}")
            staged.append((tmp, target))
            with open(tmp, "wb") as f:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
        for tmp, target in staged:
            where = target
            os.replace(tmp, target)
    except OSError as exc:
        _undo(staged, made)
        raise UserError(describe(where, exc.strerror or str(exc))) from None
    except BaseException:  # Ctrl-C meanwhile: no temporary file left behind either
        _undo(staged, made)
        raise
    return list(files)


def _undo(staged: list[tuple[Path, Path]], made: list[Path]) -> None:
    for tmp, _ in staged:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
    for folder in reversed(made):
        try:
            folder.rmdir()
        except OSError:
            pass


def read_or_none(path: Path) -> str | None:
    """The text of ``path`` (undecodable bytes replaced), or None when it is not a file that can be read."""
    try:
        return path.read_text(errors="replace") if path.is_file() else None
    except OSError:
        return None
