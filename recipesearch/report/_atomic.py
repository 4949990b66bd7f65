"""Atomic file writes: write a temporary file next to the target, then rename over it.

``os.replace`` is atomic on POSIX and Windows when source and target are on the same file system, so
a browser refreshing ``index.html`` or a user reading ``pareto.csv`` while the search rewrites the report
sees the old file or the new one, never half of either. The temporary name carries the process and
thread ids so two writers (the search and a concurrent ``recipesearch report``) never share one.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path


def write_bytes(path: Path, data: bytes) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if tmp.exists():  # only when the write or the rename failed
            tmp.unlink()
    return path


def write_text(path: Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))
