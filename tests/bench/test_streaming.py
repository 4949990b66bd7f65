"""The streaming benchmark's start-up arms on a small folder, its rows and its check that every arm trained on
the same batches (bench/streaming.py), without the training runs."""
from __future__ import annotations

import os

from bench import streaming
from recipesearch.data import clear_cache
from recipesearch.data.testing import write_noise_imagefolder


def test_startup_arms_use_the_cache_they_say(tmp_path, monkeypatch):
    root = write_noise_imagefolder(tmp_path / "images", train=4, test=2, side=28)
    monkeypatch.setattr(streaming, "N_TRAIN", 12)
    cache = tmp_path / "cache"
    monkeypatch.setenv("RECIPESEARCH_CACHE", str(cache))
    for arm in ("decode, no cache", "cold cache, 0 workers"):
        assert streaming._startup(root, cache, arm) > 0
    assert not cache.exists() and (tmp_path / "cold").is_dir()  # the cold arm wrote its own folder only
    assert os.environ["RECIPESEARCH_CACHE"] == str(cache)
    streaming._startup(root, cache, "cache hit, in memory")  # a first hit fills the real cache
    assert any(not p.name.startswith(".") for p in cache.iterdir())
    clear_cache()


def fake_runs(accuracy_of_one_arm: float) -> list[dict]:
    runs = []
    for arm in streaming.ARMS:
        for r, ips in enumerate((100.0, 120.0)):
            runs.append({"repeat": r, "arm": arm, "images_per_s": ips * (2 if arm == "in memory" else 1),
                         "data_wait_fraction": 0.1, "accuracy": accuracy_of_one_arm if arm.endswith("1 worker")
                         else 0.5})
    return runs


def test_rows_are_relative_to_in_memory_and_the_accuracies_are_checked_equal():
    rows = streaming._rows(fake_runs(0.5))
    assert rows[0]["arm"] == "in memory" and rows[1]["relative"] == 0.5
    assert streaming.distinct_accuracies(rows) == [0.5]  # every arm saw the same batches
    assert streaming.distinct_accuracies(streaming._rows(fake_runs(0.4))) == [0.4, 0.5]  # one arm differs
    result = {"rows": rows, "startup_rows": [], "images": {"train": 4, "test": 1, "size": 28, "channels": 1},
              "epochs_per_run": 2, "repeats": 2, "quick": True}
    assert "| arm | runs |" in streaming.render(result)
