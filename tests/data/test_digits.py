"""digits: shapes, dtypes, the frozen 80/20 stratified split, pixel scaling, default 16x16 upsampling."""
from __future__ import annotations

import hashlib

import numpy as np
import torch
from sklearn.datasets import load_digits as sklearn_digits

from recipesearch.data import DataSpec, digits, get_dataset, load_data
from recipesearch.data.digits import digits_test_mask

# fingerprint of the test split: it must never change between releases (results stay comparable)
SPLIT_SHA256 = "893f75065db83392e1a961a89bc10d1436f005ee6d20d80e0178db7b3654de0b"
TEST_CLASS_COUNTS = [36, 36, 35, 37, 36, 36, 36, 36, 35, 36]


def test_split_is_frozen():
    labels = torch.from_numpy(sklearn_digits().target).long()
    mask = digits_test_mask(labels)
    assert int(mask.sum()) == 359  # round(0.2 * 1797)
    assert torch.bincount(labels[mask]).tolist() == TEST_CLASS_COUNTS
    assert hashlib.sha256(mask.numpy().tobytes()).hexdigest() == SPLIT_SHA256


def test_raw_shapes_and_pixels_round_trip():
    raw = get_dataset("digits")(DataSpec(name="digits"))
    assert raw.train_images.shape == (1438, 1, 8, 8) and raw.test_images.shape == (359, 1, 8, 8)
    assert raw.train_images.dtype == torch.uint8 and raw.train_labels.dtype == torch.int64
    assert (raw.num_classes, raw.channels, raw.hflip, raw.crop_padding) == (10, 1, False, 2)
    bunch = sklearn_digits()
    mask = digits_test_mask(torch.from_numpy(bunch.target).long()).numpy()
    expected = np.rint(bunch.images[mask] * 255 / 16).astype(np.uint8)
    np.testing.assert_array_equal(raw.test_images[:, 0].numpy(), expected)
    assert int(raw.train_images.max()) == 255


def test_the_embedded_file_is_what_sklearn_loads_and_its_absence_falls_back(monkeypatch):
    """digits reads scikit-learn's data file without importing scikit-learn: the same images and labels as
    ``load_digits`` (this fails on a scikit-learn whose file changed), and ``load_digits`` where it is gone."""
    bunch = sklearn_digits()
    assert digits.embedded_file() is not None  # else every digits load imports scikit-learn again
    for ink, target in (digits.read_embedded(), _without_the_file(monkeypatch)):
        np.testing.assert_array_equal(ink, bunch.images)
        np.testing.assert_array_equal(target, bunch.target)
        assert ink.shape == (1797, 8, 8) and target.dtype == np.int64


def _without_the_file(monkeypatch):
    monkeypatch.setattr(digits, "embedded_file", lambda: None)
    return digits.read_embedded()


def test_loading_digits_does_not_import_sklearn():
    import subprocess
    import sys

    code = ("import sys; from recipesearch.data import DataSpec, load_data; load_data(DataSpec(name='digits')); "
            "print('sklearn' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stdout + r.stderr


def test_bundle_defaults_to_16px_and_is_deterministic():
    a = load_data(DataSpec(name="digits"))
    assert a.image_size == 16 and a.train.images.shape == (1438, 1, 16, 16)
    assert (a.channels, a.num_classes, a.hflip, a.crop_padding, a.val) == (1, 10, False, 2, None)
    assert a.class_names == tuple("0123456789")
    assert load_data(DataSpec(name="digits")) is a  # cached per process
    from recipesearch.data import clear_cache

    clear_cache()
    b = load_data(DataSpec(name="digits"))
    assert b is not a
    assert torch.equal(a.train.images, b.train.images) and torch.equal(a.test.labels, b.test.labels)


def test_native_size_keeps_exact_pixels():
    bundle = load_data(DataSpec(name="digits", image_size=8))
    raw = get_dataset("digits")(DataSpec(name="digits"))
    assert torch.equal(bundle.train.images, raw.train_images)
    assert bundle.crop_padding == 1  # 2 px at 16 px scales to 1 px at 8 px
