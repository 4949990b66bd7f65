"""The decode cache (``$RECIPESEARCH_CACHE``): a hit decodes nothing, an edited folder misses, a half-written
or broken cache is never read, concurrent builders decode once."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import PIL.Image
import pytest
import torch
from PIL import Image

from recipesearch.data import BatchLoader, DataSpec, clear_cache, decode_cache, load_data
from recipesearch.data.imagefolder import list_imagefolder
from recipesearch.data.source import FileSource
from recipesearch.data.testing import write_noise_imagefolder
from recipesearch.errors import ConfigError, UserError

N_FILES = 3 * (12 + 4)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder of this test's own."""
    monkeypatch.setenv(decode_cache.ENV_CACHE, str(tmp_path / "cache"))
    clear_cache()
    yield tmp_path / "cache"
    clear_cache()


@pytest.fixture
def opens(monkeypatch):
    """Counts ``PIL.Image.open`` calls in this process (workers=0 everywhere here, so every decode)."""
    count = {"n": 0}
    real = PIL.Image.open

    def counting(*args, **kwargs):
        count["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(PIL.Image, "open", counting)
    return count


def spec(root: Path, **fields: object) -> DataSpec:
    return DataSpec(**{"name": "imagefolder", "root": str(root), "image_size": 16, "workers": 0, **fields})


def test_a_hit_decodes_nothing_in_memory_or_streamed(tmp_path, cache, opens):
    root = write_noise_imagefolder(tmp_path / "images")
    first = load_data(spec(root))
    assert opens["n"] == N_FILES  # the one decode pass, into the cache
    [folder] = [p for p in cache.iterdir() if not p.name.startswith(".")]
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["shapes"] == {"train": [36, 3, 16, 16], "test": [12, 3, 16, 16]} and meta["classes"] == ["a", "b", "c"]
    assert tuple(meta["mean"]) == first.mean and (folder / "train.u8").stat().st_size == 36 * 3 * 16 * 16
    clear_cache()  # a fresh process, as far as load_data can tell
    again = load_data(spec(root))
    streamed = load_data(spec(root, in_memory=False))
    assert len(list(BatchLoader.from_split(streamed.train, 8, streamed.mean, streamed.std))) == 4
    assert opens["n"] == N_FILES  # neither the in-memory load nor a streamed epoch decoded a file
    assert torch.equal(again.train.images, first.train.images) and again.mean == first.mean
    # data.cache: false decodes again, the same pixels
    off = load_data(spec(root, cache=False))
    assert opens["n"] == 2 * N_FILES and torch.equal(off.train.images, first.train.images)


def test_an_edited_file_misses_the_cache(tmp_path, cache, opens):
    root = write_noise_imagefolder(tmp_path / "images")
    before = load_data(spec(root)).train.images.clone()
    edited = root / "train" / "a" / "0.png"
    Image.new("RGB", (20, 20), (1, 2, 3)).save(edited)
    os.utime(edited, ns=(1, 1))  # a different mtime even on a coarse clock
    clear_cache()
    after = load_data(spec(root)).train.images
    assert opens["n"] == 2 * N_FILES
    assert (after[0] == torch.tensor([1, 2, 3], dtype=torch.uint8).view(3, 1, 1)).all()
    assert torch.equal(after[1:], before[1:])
    assert len([p for p in cache.iterdir() if not p.name.startswith(".")]) == 2  # the old key's folder is left


def test_a_key_changes_with_what_changes_the_pixels(tmp_path, cache):
    root = write_noise_imagefolder(tmp_path / "images")
    load_data(spec(root))
    load_data(spec(root, image_size=12))
    load_data(spec(root, channels=1))
    load_data(spec(root, in_memory=False, workers=2))  # how it is held: the same cache
    assert len([p for p in cache.iterdir() if not p.name.startswith(".")]) == 3


def test_a_killed_writer_leaves_nothing_that_is_read(tmp_path, cache, opens, monkeypatch):
    root = write_noise_imagefolder(tmp_path / "images")
    real = decode_cache.read_chunks

    def dies_midway(source, workers=0, chunk=256):
        for k, item in enumerate(real(source, workers, chunk=8)):
            if k == 2:
                raise KeyboardInterrupt  # as a Ctrl-C (the writer's own clean-up runs; kill -9 below)
            yield item

    monkeypatch.setattr(decode_cache, "read_chunks", dies_midway)
    with pytest.raises(KeyboardInterrupt):
        load_data(spec(root))
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []
    monkeypatch.setattr(decode_cache, "read_chunks", real)
    # kill -9 leaves its temporary folder: ignored, never read
    stale = cache / ".tmp-deadbeef-123-abcd"
    stale.mkdir()
    (stale / "train.u8").write_bytes(b"\0" * 10)
    bundle = load_data(spec(root))
    assert bundle.train.images.shape == (36, 3, 16, 16) and stale.exists()


def test_a_folder_not_matching_its_meta_is_rebuilt(tmp_path, cache, opens):
    root = write_noise_imagefolder(tmp_path / "images")
    good = load_data(spec(root)).train.images.clone()
    [folder] = [p for p in cache.iterdir() if not p.name.startswith(".")]
    with open(folder / "train.u8", "r+b") as f:
        f.truncate(100)  # a copy cut short
    clear_cache()
    assert torch.equal(load_data(spec(root)).train.images, good)
    assert opens["n"] == 2 * N_FILES and (folder / "train.u8").stat().st_size == good.numel()


def test_concurrent_builders_decode_once(tmp_path, cache, monkeypatch):
    root = write_noise_imagefolder(tmp_path / "images")
    decoded = []
    real = FileSource._read

    def slow_read(self, rows):
        decoded.append(len(rows))
        return real(self, rows)

    monkeypatch.setattr(FileSource, "_read", slow_read)
    listing = list_imagefolder(spec(root))
    results, errors = [], []

    def build():
        try:
            results.append(listing.open(cache=True, workers=0))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 3
    assert sum(decoded) == N_FILES  # one builder decoded; the others waited on the lock and read its cache
    assert all(torch.equal(r.train_images[torch.arange(36)], results[0].train_images[torch.arange(36)])
               for r in results)


def test_a_broken_image_stops_the_build_with_one_line_and_no_cache(tmp_path, cache):
    root = write_noise_imagefolder(tmp_path / "images")
    (root / "test" / "c" / "zz.png").write_bytes(b"\x89PNG truncated")
    with pytest.raises(UserError) as info:
        load_data(spec(root, workers=2))
    assert "\n" not in str(info.value) and "zz.png" in str(info.value)
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []


def test_an_unwritable_cache_is_a_one_line_error_naming_data_cache(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(decode_cache.ENV_CACHE, str(blocker / "cache"))
    clear_cache()
    root = write_noise_imagefolder(tmp_path / "images")
    with pytest.raises(ConfigError) as info:
        load_data(spec(root))
    assert info.value.field == "data.cache" and "\n" not in str(info.value) and "data.cache: false" in str(info.value)
    clear_cache()
    assert load_data(spec(root, cache=False)).train.images.shape == (36, 3, 16, 16)


def test_the_default_location(monkeypatch):
    monkeypatch.delenv(decode_cache.ENV_CACHE, raising=False)
    assert decode_cache.cache_root() == Path.home() / ".cache" / "recipesearch" / "decoded"
    monkeypatch.setenv(decode_cache.ENV_CACHE, "~/elsewhere")
    assert decode_cache.cache_root() == Path.home() / "elsewhere"


def test_a_full_disk_is_refused_before_decoding(tmp_path, cache, opens, monkeypatch):
    root = write_noise_imagefolder(tmp_path / "images")
    monkeypatch.setattr(decode_cache.shutil, "disk_usage", lambda path: shutil_usage(free=1000))
    with pytest.raises(ConfigError) as info:
        load_data(spec(root))
    assert info.value.field == "data.cache" and "GiB free" in str(info.value) and opens["n"] == 0


def shutil_usage(free: int):
    import collections

    return collections.namedtuple("usage", "total used free")(10**12, 10**12 - free, free)
