"""Streaming (``data.in_memory``): the same batches and the same fit as in memory, the automatic choice,
decode errors as one line, sources indexed like tensors, and ``recipesearch train`` of a streamed folder."""
from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest
import torch

from recipesearch.data import BatchLoader, DataSpec, clear_cache, load_data, residency
from recipesearch.data import bundle as bundle_module
from recipesearch.data.source import FileSource, MemmapSource, strided_sample
from recipesearch.data.testing import write_noise_imagefolder
from recipesearch.errors import ConfigError, UserError
from recipesearch.recipe import loads_recipe
from recipesearch.train.loop import Trainer
from tests.conftest import call_cli


@pytest.fixture
def folder(tmp_path):
    clear_cache()
    yield write_noise_imagefolder(tmp_path / "images")
    clear_cache()


def spec(root: Path, **fields: object) -> DataSpec:
    return DataSpec(**{"name": "imagefolder", "root": str(root), "image_size": 16, "val_fraction": 0.2, "subset": 0.9,
                       **fields})


def epochs_of(bundle, epochs: int = 2, seed: int = 5) -> list[tuple[torch.Tensor, torch.Tensor]]:
    loader = BatchLoader.from_split(bundle.train, 5, bundle.mean, bundle.std, crop_padding=2,
                                    generator=torch.Generator().manual_seed(seed), workers=bundle.workers)
    return [(x, y) for _ in range(epochs) for x, y in loader]


@pytest.mark.parametrize(("cache", "workers"), [(True, 0), (True, 2), (False, 0), (False, 2)])
def test_streamed_batches_are_the_in_memory_batches_bit_for_bit(folder, cache, workers):
    in_memory = load_data(spec(folder, in_memory=True, cache=cache))
    streamed = load_data(spec(folder, in_memory=False, cache=cache, workers=workers))
    assert not in_memory.streamed and streamed.streamed and streamed.workers == workers
    assert isinstance(streamed.train.images, torch.Tensor) is False
    assert len(streamed.train) == len(in_memory.train) and len(streamed.val) == len(in_memory.val)
    assert streamed.mean == in_memory.mean and streamed.std == in_memory.std  # this small set: the sample is all
    a, b = epochs_of(in_memory), epochs_of(streamed)
    assert len(a) == len(b) == 2 * (len(in_memory.train) // 5)
    for (xa, ya), (xb, yb) in zip(a, b):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
    # the validation and test splits read the same images in the same order
    for split in ("val", "test"):
        mine, theirs = getattr(in_memory, split), getattr(streamed, split)
        rows = torch.arange(len(mine))
        assert torch.equal(mine.images, theirs.images[rows]) and torch.equal(mine.labels, theirs.labels)


def test_a_fit_is_identical_streamed_and_in_memory(folder, tiny_recipe):
    def fit(**data: object):
        recipe = tiny_recipe({"patch_whitening": {"n_images": 7}}, batch_size=6, max_duration=2,
                             data={"name": "imagefolder", "root": str(folder), "image_size": 16,
                                   "val_fraction": 0.2, **data})
        return Trainer(recipe).fit()

    streamed, in_memory = fit(in_memory=False, workers=2), fit(in_memory=True)
    assert streamed.recipe_id == in_memory.recipe_id  # how the data is held is not part of the recipe's id
    assert (streamed.accuracy, streamed.loss, streamed.val_accuracy, streamed.val_loss, streamed.steps) == \
        (in_memory.accuracy, in_memory.loss, in_memory.val_accuracy, in_memory.val_loss, in_memory.steps)


def test_auto_streams_only_what_would_not_fit(folder, monkeypatch):
    assert not load_data(spec(folder)).streamed  # 48 images of 16 px: in memory
    clear_cache()
    monkeypatch.setattr(residency, "host_memory_bytes", lambda: 2 * 48 * 3 * 16 * 16 - 2)  # half is 1 byte short
    assert load_data(spec(folder)).streamed and load_data(spec(folder, in_memory="auto")).streamed
    with pytest.raises(ConfigError) as info:
        load_data(spec(folder, in_memory=True))
    message = str(info.value)
    assert info.value.field == "data.in_memory" and "\n" not in message
    assert "data.image_size" in message and "false" in message
    # a dataset that cannot stream is refused by its size, as before
    monkeypatch.setattr(residency, "host_memory_bytes", lambda: 10_000)
    with pytest.raises(ConfigError) as info:
        load_data(DataSpec(name="digits"))
    assert info.value.field == "data.image_size"


def test_a_run_says_when_auto_chose_to_stream(folder, tiny_recipe, monkeypatch):
    def fit(**data: object):
        recipe = tiny_recipe({}, batch_size=6, max_duration=1,
                             data={"name": "imagefolder", "root": str(folder), "image_size": 16, **data})
        return Trainer(recipe).fit()

    assert not any("in_memory" in w for w in fit().warnings)  # it fits: nothing to say
    assert not any("in_memory" in w for w in fit(in_memory=False).warnings)  # asked for: nothing to say
    clear_cache()
    monkeypatch.setattr(residency, "host_memory_bytes", lambda: 1000)
    notes = [w for w in fit().warnings if "in_memory" in w]
    assert len(notes) == 1 and "streamed from disk" in notes[0]


def test_auto_counts_the_gpu_memory_on_cuda(monkeypatch):
    monkeypatch.setattr(residency, "host_memory_bytes", lambda: 2**40)
    monkeypatch.setattr(residency, "device_memory_bytes", lambda device: 1000 if device.type == "cuda" else None)
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert residency.keep_in_memory(None, 500, 10, 4, cuda, can_stream=True)
    assert not residency.keep_in_memory("auto", 501, 10, 4, cuda, can_stream=True)
    assert residency.keep_in_memory("auto", 501, 10, 4, cpu, can_stream=True)
    with pytest.raises(ConfigError, match="the GPU's"):
        residency.keep_in_memory(True, 501, 10, 4, cuda, can_stream=True)


def test_a_broken_image_is_a_one_line_error_from_a_worker(folder, monkeypatch):
    bad = folder / "train" / "b" / "broken.png"
    bad.write_bytes(b"not a png at all")
    monkeypatch.setattr(bundle_module, "STATS_SAMPLE", 2)  # rows 0 and 18: the broken row 24 is not decoded yet
    bundle = load_data(spec(folder, in_memory=False, cache=False, workers=2, val_fraction=0.0, subset=1.0))
    loader = BatchLoader.from_split(bundle.train, 8, bundle.mean, bundle.std, workers=2)
    before = set(multiprocessing.active_children())
    with pytest.raises(UserError) as info:
        list(loader)
    assert "\n" not in str(info.value) and "broken.png" in str(info.value) and "cannot decode" in str(info.value)
    # the pass it ended has no worker left: ended with the error, not by the garbage collector some time later
    # (which, inside an import, waited 5 s for each)
    assert not set(multiprocessing.active_children()) - before


def test_sources_index_like_tensors(folder, tmp_path):
    paths = sorted(str(p) for p in (folder / "train").rglob("*.png"))
    files = FileSource(paths, 16, 3)
    whole = files[torch.arange(len(files))]
    assert whole.shape == (36, 3, 16, 16) and whole.dtype == torch.uint8
    raw = tmp_path / "x.u8"
    raw.write_bytes(whole.numpy().tobytes())
    mapped = MemmapSource(raw, tuple(whole.shape))
    rows = torch.tensor([5, 0, 35, 5])
    assert torch.equal(files[rows], whole[rows]) and torch.equal(mapped[rows], whole[rows])
    mask = torch.zeros(36, dtype=torch.bool)
    mask[[3, 7, 30]] = True
    sub = mapped.subset(mask)
    assert len(sub) == 3 and torch.equal(sub[torch.tensor([2, 0])], whole[[30, 3]])
    assert torch.equal(strided_sample(mapped, 10, "cpu"), strided_sample(whole, 10, "cpu"))
    assert torch.equal(mapped.read_all(), whole)


@pytest.mark.parametrize(
    ("line", "field", "words"),
    [
        ("in_memory: maybe", "data.in_memory", "auto"),
        ("workers: -1", "data.workers", "between 0 and 64"),
        ("cache: sometimes", "data.cache", "boolean"),
    ],
)
def test_bad_values_are_one_line_errors(tmp_path, line, field, words):
    text = f"data:\n  name: imagefolder\n  root: {tmp_path}\n  {line}\nmax_duration: 1\n"
    with pytest.raises(ConfigError) as info:
        loads_recipe(text, "r.yaml")
    assert info.value.field == field and words in str(info.value) and "\n" not in str(info.value)


def test_in_memory_false_is_refused_where_nothing_streams():
    with pytest.raises(ConfigError) as info:
        loads_recipe("data: {name: digits, in_memory: false}\nmax_duration: 1\n", "r.yaml")
    assert info.value.field == "data.in_memory" and "imagefolder only" in str(info.value)
    assert loads_recipe("data: {name: digits, in_memory: true}\nmax_duration: 1\n", "r.yaml")  # true and auto: fine


def test_how_the_data_is_held_leaves_the_recipe_id_alone(tmp_path):
    base = f"data:\n  name: imagefolder\n  root: {tmp_path}\nmax_duration: 1\n"
    plain = loads_recipe(base, "r.yaml")
    held = loads_recipe(base.replace("\nmax", "\n  in_memory: false\n  cache: false\n  workers: 3\nmax"), "r.yaml")
    assert held.data.in_memory is False and held.id() == plain.id()
    assert "in_memory" not in plain.to_dict()["data"]  # unset, the dump is as before


def test_recipesearch_train_streams_an_imagefolder(folder, tmp_path, capsys):
    recipe = tmp_path / "stream.yaml"
    recipe.write_text(
        "model: {name: cnn, width: 8}\n"
        f"data: {{name: imagefolder, root: {folder}, image_size: 16, in_memory: false, workers: 1}}\n"
        "optimizer: {name: sgd, lr: 0.1}\nmax_duration: 2\nbatch_size: 8\nthreads: 1\ndevice: cpu\n")
    code, _, err = call_cli(capsys, "train", str(recipe), "--out", str(tmp_path / "out"), "--quiet")
    assert code == 0, err
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert result["recipe"]["data"]["in_memory"] is False and result["steps"] == 2 * (36 // 8)
    assert 0.0 <= result["accuracy"] <= 1.0 and 0.0 <= result["data_wait_fraction"] <= 1.0
    code, _, err = call_cli(capsys, "train", str(recipe), "--out", str(tmp_path / "bad"), "--quiet", "--set",
                            "data.in_memory=maybe")
    assert code == 2 and err.count("\n") == 1 and "data.in_memory" in err
    assert "Traceback" not in err and not (tmp_path / "bad").exists()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_streamed_batches_on_cuda_are_the_in_memory_ones(folder):
    """Pinned batches moved with non_blocking, the loader's random numbers drawn on the GPU, as in memory."""
    cuda = torch.device("cuda")

    def batches(bundle):
        gen = torch.Generator(device=cuda).manual_seed(5)
        loader = BatchLoader.from_split(bundle.train, 5, bundle.mean, bundle.std, crop_padding=2, generator=gen,
                                        workers=bundle.workers)
        return [(x.cpu(), y.cpu()) for _ in range(2) for x, y in loader]

    in_memory = load_data(spec(folder, in_memory=True), cuda)
    streamed = load_data(spec(folder, in_memory=False, workers=2), cuda)
    assert in_memory.train.images.is_cuda and streamed.train.labels.is_cuda and streamed.streamed
    for (xa, ya), (xb, yb) in zip(batches(in_memory), batches(streamed)):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
