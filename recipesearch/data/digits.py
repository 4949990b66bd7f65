"""``digits``: scikit-learn's embedded 8x8 handwritten digits (UCI optdigits test part, 1797 images).

Source: ``sklearn.datasets.load_digits`` (Alpaydin & Kaynak, UCI ML repository, 1998). No download, no
files: the dataset ships inside scikit-learn, which makes it the default for tests and quick searches.

The train/test split is fixed forever: 20% test, stratified, from ``numpy.random.RandomState(0)``'s
permutation (the legacy generator whose stream numpy keeps stable) and ``split.stratified_mask``.
"""
from __future__ import annotations

import numpy as np
import torch

from recipesearch.data.raw import RawDataset
from recipesearch.data.registry import register_dataset
from recipesearch.data.spec import DataSpec
from recipesearch.data.split import fraction_count, stratified_mask

TEST_FRACTION = 0.2
SPLIT_SEED = 0


def digits_test_mask(labels: torch.Tensor) -> torch.Tensor:
    """The fixed test-set mask over sklearn's 1797 digits (must never change between releases)."""
    order = torch.from_numpy(np.random.RandomState(SPLIT_SEED).permutation(labels.numel()))
    return stratified_mask(labels, order, fraction_count(labels.numel(), TEST_FRACTION))


@register_dataset("digits")
def load_digits(spec: DataSpec) -> RawDataset:
    from sklearn.datasets import load_digits as sklearn_digits

    bunch = sklearn_digits()
    # values are 0..16 ink counts: scale to 0..255 (16 -> 255) and round
    pixels = np.rint(np.asarray(bunch.images, dtype=np.float64) * (255.0 / 16.0)).clip(0, 255)
    images = torch.from_numpy(pixels.astype(np.uint8)).unsqueeze(1)  # [1797, 1, 8, 8]
    labels = torch.from_numpy(np.asarray(bunch.target, dtype=np.int64))
    test = digits_test_mask(labels)
    return RawDataset(
        train_images=images[~test].contiguous(),
        train_labels=labels[~test].contiguous(),
        test_images=images[test].contiguous(),
        test_labels=labels[test].contiguous(),
        num_classes=10,
        class_names=tuple(str(c) for c in range(10)),
        hflip=False,  # a mirrored 2, 3, 4, 5, 7 or 9 is not that digit
        crop_padding=2,
        native_size=8,
        default_size=16,  # upsampled once (bilinear): 8x8 is too small for strided conv stems
    )
