"""load_data: validation split and subset sizes, disjointness, stratification, resize, statistics, cache."""
from __future__ import annotations

import torch

from recipesearch.data import DataSpec, load_data
from recipesearch.data.bundle import channel_stats, resize_images, split_train


def _indexed(n: int = 1000, classes: int = 10):
    """Images that store their own index in two pixels, labels cycling over classes."""
    idx = torch.arange(n)
    images = torch.stack([idx // 256, idx % 256], 1).to(torch.uint8).view(n, 1, 1, 2)
    return images, idx % classes


def _ids(split) -> set[int]:
    return set((split.images[:, 0, 0, 0].long() * 256 + split.images[:, 0, 0, 1].long()).tolist())


def test_val_and_subset_sizes_disjoint_and_stratified():
    images, labels = _indexed(1000)
    train, val = split_train(images, labels, val_fraction=0.15, subset=0.4, seed=0)
    assert len(val) == 150 and len(train) == round(0.4 * 850)
    assert not _ids(train) & _ids(val)
    assert torch.bincount(val.labels).tolist() == [15] * 10
    assert torch.bincount(train.labels).tolist() == [34] * 10
    for split in (train, val):  # labels still belong to their images
        ids = split.images[:, 0, 0, 0].long() * 256 + split.images[:, 0, 0, 1].long()
        assert torch.equal(ids % 10, split.labels)


def test_split_depends_only_on_the_seed():
    images, labels = _indexed(300)
    a = split_train(images, labels, 0.2, 0.5, seed=1)
    b = split_train(images, labels, 0.2, 0.5, seed=1)
    c = split_train(images, labels, 0.2, 0.5, seed=2)
    assert _ids(a[0]) == _ids(b[0]) and _ids(a[1]) == _ids(b[1])
    assert _ids(a[1]) != _ids(c[1])
    full, none = split_train(images, labels, 0.0, 1.0, seed=0)
    assert none is None and full.images is images


def test_digits_bundle_split_sizes():
    bundle = load_data(DataSpec(name="digits", val_fraction=0.1, subset=0.5, split_seed=3))
    assert len(bundle.val) == 144  # round(0.1 * 1438)
    assert len(bundle.train) == 647  # round(0.5 * 1294)
    assert len(bundle.test) == 359
    plain = load_data(DataSpec(name="digits"))
    assert bundle.mean == plain.mean and bundle.std == plain.std  # statistics ignore val/subset


def test_resize_images():
    const = torch.full((3, 2, 8, 8), 123, dtype=torch.uint8)
    assert torch.equal(resize_images(const, 16), torch.full((3, 2, 16, 16), 123, dtype=torch.uint8))
    assert torch.equal(resize_images(const, 4), torch.full((3, 2, 4, 4), 123, dtype=torch.uint8))
    assert resize_images(const, 8) is const
    checker = (torch.arange(8).view(8, 1) + torch.arange(8)) % 2 * 255
    small = resize_images(checker.to(torch.uint8).view(1, 1, 8, 8), 4)
    assert ((small.float() - 127.5).abs() <= 3).all()  # antialiased: a fine checkerboard averages to grey
    big = load_data(DataSpec(name="digits", image_size=32))
    assert big.train.images.shape[-2:] == (32, 32) and big.crop_padding == 4


def test_channel_stats():
    x = torch.randint(0, 256, (50, 3, 4, 4), dtype=torch.uint8)
    mean, std = channel_stats(x, chunk=7)
    ref = x.double().div(255).transpose(0, 1).reshape(3, -1)
    torch.testing.assert_close(torch.tensor(mean, dtype=torch.float64), ref.mean(1))
    torch.testing.assert_close(torch.tensor(std, dtype=torch.float64), ref.std(1, unbiased=False))
