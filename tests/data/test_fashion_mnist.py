"""fashion_mnist: tiny IDX gz files in the real format, search order, errors, and the real dataset."""
from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest
import torch
import torchvision

from recipesearch.data import DataSpec, get_dataset, load_data
from recipesearch.data import fashion_mnist as fm
from recipesearch.data.testing import write_fashion, write_idx
from recipesearch.errors import DataNotFoundError, UserError


@pytest.fixture(autouse=True)
def _no_outside_data(monkeypatch, tmp_path):
    """Only the files a test writes are visible (no env var, no home cache, no Debian package)."""
    monkeypatch.delenv("RECIPESEARCH_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(fm, "DEBIAN_DIR", tmp_path / "no-debian")


def test_idx_header_is_big_endian(tmp_path):
    write_idx(tmp_path / "x.gz", np.zeros((3, 2, 5), np.uint8))
    raw = gzip.open(tmp_path / "x.gz").read()
    assert struct.unpack(">IIII", raw[:16]) == (2051, 3, 2, 5)
    assert fm.read_idx(tmp_path / "x.gz", 2051).shape == (3, 2, 5)


def test_tiny_files_round_trip(tmp_path):
    arrays = write_fashion(tmp_path, n_train=30, n_test=10)
    raw = get_dataset("fashion_mnist")(DataSpec(name="fashion_mnist", root=str(tmp_path)))
    np.testing.assert_array_equal(raw.train_images[:, 0].numpy(), arrays["train-images-idx3-ubyte"])
    np.testing.assert_array_equal(raw.test_images[:, 0].numpy(), arrays["t10k-images-idx3-ubyte"])
    assert raw.train_labels.dtype == torch.int64
    assert raw.train_labels.tolist() == arrays["train-labels-idx1-ubyte"].tolist()
    assert (raw.channels, raw.native_size, raw.hflip, raw.num_classes) == (1, 28, True, 10)
    assert raw.class_names[0] == "T-shirt/top" and raw.class_names[9] == "Ankle boot"


def test_env_var_and_torchvision_layout_are_searched(tmp_path, monkeypatch):
    write_fashion(tmp_path / "data" / "fashion_mnist" / "FashionMNIST" / "raw", n_train=20)
    monkeypatch.setenv("RECIPESEARCH_DATA", str(tmp_path / "data"))
    raw = get_dataset("fashion_mnist")(DataSpec(name="fashion_mnist"))
    assert len(raw.train_labels) == 20


def test_uncompressed_files_are_accepted(tmp_path):
    write_fashion(tmp_path, n_train=20)
    for path in tmp_path.glob("*.gz"):
        path.with_suffix("").write_bytes(gzip.open(path).read())
        path.unlink()
    raw = get_dataset("fashion_mnist")(DataSpec(name="fashion_mnist", root=str(tmp_path)))
    assert raw.train_images.shape == (20, 1, 28, 28)


def test_wrong_magic_is_a_user_error(tmp_path):
    write_fashion(tmp_path)
    write_idx(tmp_path / "train-labels-idx1-ubyte.gz", np.zeros((40, 1), np.uint8))  # 2-d: magic 2050
    with pytest.raises(UserError, match="magic number is 2050, expected 2049"):
        get_dataset("fashion_mnist")(DataSpec(name="fashion_mnist", root=str(tmp_path)))


def test_missing_files_error_is_one_line_and_says_how_to_get_them(tmp_path):
    with pytest.raises(DataNotFoundError) as info:
        load_data(DataSpec(name="fashion_mnist", root=str(tmp_path / "empty")))
    message = str(info.value)
    assert "\n" not in message
    # an explicit data.root is the only place looked: no silent fall-back to another copy
    assert str(tmp_path / "empty") in message and "no-debian" not in message
    assert "apt-get install dataset-fashion-mnist" in message and "data.download: true" in message


def test_failed_download_is_one_line(tmp_path, monkeypatch):
    def offline(*args, **kwargs):
        raise RuntimeError("Error downloading train-images-idx3-ubyte.gz:\nTried mirrors")

    monkeypatch.setattr(torchvision.datasets, "FashionMNIST", offline)
    with pytest.raises(DataNotFoundError) as info:
        load_data(DataSpec(name="fashion_mnist", root=str(tmp_path), download=True))
    assert "\n" not in str(info.value) and "download" in str(info.value)


@pytest.mark.skipif(
    not (fm.DEBIAN_DIR / "train-images-idx3-ubyte.gz").is_file(),
    reason="the Debian package dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist)",
)
def test_real_fashion_mnist_from_the_debian_package(monkeypatch):
    monkeypatch.undo()  # see the real Debian folder again
    monkeypatch.delenv("RECIPESEARCH_DATA", raising=False)
    bundle = load_data(DataSpec(name="fashion_mnist"))  # no root: the default folders, then Debian's
    assert bundle.train.images.shape == (60000, 1, 28, 28) and bundle.test.images.shape == (10000, 1, 28, 28)
    assert torch.bincount(bundle.train.labels).tolist() == [6000] * 10
    assert torch.bincount(bundle.test.labels).tolist() == [1000] * 10
    mean = bundle.train.images.float().mean().item() / 255
    assert abs(mean - bundle.mean[0]) < 1e-3  # the standard statistics match the real images
