"""Atomic writes: a reader polling a file that is being rewritten only ever sees complete versions."""
from __future__ import annotations

import threading

import pytest

from recipesearch.report import _atomic


def test_concurrent_reader_never_sees_half_a_file(tmp_path):
    path = tmp_path / "index.html"
    versions = [(f"<html>{i}" + "x" * 2_000_000 + "</html>\n") for i in range(2)]
    _atomic.write_text(path, versions[0])
    stop, seen = threading.Event(), []

    def read():
        while not stop.is_set():
            text = path.read_text()
            seen.append(text.startswith("<html>") and text.endswith("</html>\n") and len(text) == len(versions[0]))

    reader = threading.Thread(target=read)
    reader.start()
    for i in range(20):
        _atomic.write_text(path, versions[i % 2])
    stop.set()
    reader.join()
    assert seen and all(seen)
    assert [p.name for p in tmp_path.iterdir()] == ["index.html"]  # no temporary files left behind


def test_failed_write_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "pareto.csv"
    _atomic.write_text(path, "old\n")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(_atomic.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        _atomic.write_text(path, "new\n")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["pareto.csv"]
