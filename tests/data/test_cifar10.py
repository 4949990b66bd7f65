"""cifar10: tiny batches in the real python-pickle and binary formats; pixels round-trip exactly."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from recipesearch.data import DataSpec, get_dataset, load_data
from recipesearch.data.cifar10 import MEAN, STD
from recipesearch.data.testing import CIFAR_NAMES, write_cifar_binary, write_cifar_python
from recipesearch.errors import DataNotFoundError


@pytest.fixture(autouse=True)
def _no_outside_data(monkeypatch, tmp_path):
    monkeypatch.delenv("RECIPESEARCH_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def _load(root):
    return get_dataset("cifar10")(DataSpec(name="cifar10", root=str(root)))


@pytest.mark.parametrize(
    ("writer", "subdir"), [(write_cifar_python, "cifar-10-batches-py"), (write_cifar_binary, "cifar-10-batches-bin")]
)
def test_pixels_and_labels_round_trip(tmp_path, writer, subdir):
    train_x, train_y, test_x, test_y = writer(tmp_path / subdir)
    raw = _load(tmp_path)  # found under root/<subdir>
    assert raw.train_images.shape == (30, 3, 32, 32) and raw.test_images.shape == (6, 3, 32, 32)
    np.testing.assert_array_equal(raw.train_images.numpy(), train_x)
    np.testing.assert_array_equal(raw.test_images.numpy(), test_x)
    assert raw.train_labels.dtype == torch.int64
    assert raw.train_labels.tolist() == list(train_y) and raw.test_labels.tolist() == list(test_y)
    assert raw.class_names == tuple(CIFAR_NAMES)
    assert (raw.mean, raw.std, raw.hflip, raw.crop_padding) == (MEAN, STD, True, 4)


def test_channel_order_is_rgb_planes(tmp_path):
    """Row 0 of a CIFAR batch is 1024 red, 1024 green, 1024 blue bytes, each plane row-major."""
    write_cifar_python(tmp_path)
    import pickle

    path = tmp_path / "data_batch_1"
    batch = pickle.loads(path.read_bytes(), encoding="bytes")
    red, green, blue = np.full(1024, 200, np.uint8), np.zeros(1024, np.uint8), np.arange(1024).astype(np.uint8)
    batch[b"data"][0] = np.concatenate([red, green, blue])
    path.write_bytes(pickle.dumps(batch, protocol=2))
    image = _load(tmp_path).train_images[0]
    assert (image[0] == 200).all() and (image[1] == 0).all()
    assert image[2, 0, :5].tolist() == [0, 1, 2, 3, 4] and image[2, 1, 0].item() == 32  # row-major plane


def test_binary_record_layout(tmp_path):
    write_cifar_binary(tmp_path)
    record = np.zeros(3073, np.uint8)
    record[0], record[1 : 1 + 1024], record[1 + 2048 + 5] = 7, 99, 42  # label, red plane, blue pixel (0, 5)
    path = tmp_path / "test_batch.bin"
    path.write_bytes(record.tobytes() + path.read_bytes()[3073:])
    raw = _load(tmp_path)
    assert raw.test_labels[0].item() == 7
    assert (raw.test_images[0, 0] == 99).all() and raw.test_images[0, 2, 0, 5].item() == 42


def test_bundle_uses_standard_statistics(tmp_path):
    write_cifar_python(tmp_path)
    bundle = load_data(DataSpec(name="cifar10", root=str(tmp_path)))
    assert bundle.mean == MEAN and bundle.std == STD and bundle.image_size == 32 and bundle.channels == 3


def test_missing_files_error_is_one_line(tmp_path):
    with pytest.raises(DataNotFoundError) as info:
        load_data(DataSpec(name="cifar10", root=str(tmp_path / "nothing")))
    message = str(info.value)
    assert "\n" not in message and str(tmp_path / "nothing") in message
    assert "cifar-10-python.tar.gz" in message and "data.download: true" in message
