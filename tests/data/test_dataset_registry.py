"""Registry behaviour, plus a contract test that runs load_data over EVERY registered dataset."""
from __future__ import annotations

import pytest
import torch

from recipesearch.data import DataSpec, RawDataset, get_dataset, list_datasets, load_data, register_dataset
from recipesearch.data.testing import write_cifar_python, write_fashion, write_imagefolder
from recipesearch.errors import UserError

# how to give each dataset tiny files (None = needs no files); a new dataset must add itself here
FIXTURES = {
    "digits": None,
    "fashion_mnist": lambda root: write_fashion(root),
    "cifar10": lambda root: write_cifar_python(root / "cifar-10-batches-py"),
    "imagefolder": lambda root: write_imagefolder(root),
}


def test_builtin_datasets_are_registered_sorted():
    names = list_datasets()
    assert names == sorted(names)
    assert {"digits", "fashion_mnist", "cifar10", "imagefolder"} <= set(names)


def test_unknown_dataset_is_one_line_user_error():
    with pytest.raises(UserError) as info:
        get_dataset("nope")
    assert "\n" not in str(info.value)
    assert "digits" in str(info.value)


def test_registering_a_name_twice_fails():
    with pytest.raises(ValueError, match="already registered"):
        register_dataset("digits")(lambda spec: None)


def test_raw_dataset_rejects_wrong_dtypes():
    images = torch.zeros(2, 1, 4, 4, dtype=torch.uint8)
    labels = torch.zeros(2, dtype=torch.int64)
    kwargs = dict(num_classes=2, class_names=("a", "b"), hflip=True, crop_padding=1, native_size=4, default_size=4)
    RawDataset(images, labels, images, labels, **kwargs)
    with pytest.raises(ValueError, match="uint8"):
        RawDataset(images.float(), labels, images, labels, **kwargs)
    with pytest.raises(ValueError, match="int64"):
        RawDataset(images, labels.int(), images, labels, **kwargs)


@pytest.mark.parametrize("name", list_datasets())
def test_every_dataset_meets_the_bundle_contract(name, tmp_path):
    assert name in FIXTURES, f"add a tiny-file writer for dataset {name!r} to FIXTURES"
    if FIXTURES[name] is not None:
        FIXTURES[name](tmp_path)
    bundle = load_data(DataSpec(name=name, root=str(tmp_path), val_fraction=0.2), "cpu")
    s = bundle.image_size
    for split in (bundle.train, bundle.val, bundle.test):
        assert split is not None and len(split) > 0
        assert split.images.dtype == torch.uint8 and split.labels.dtype == torch.int64
        assert split.images.shape == (len(split), bundle.channels, s, s)
        assert int(split.labels.min()) >= 0 and int(split.labels.max()) < bundle.num_classes
    assert len(bundle.mean) == len(bundle.std) == bundle.channels
    assert all(0 < v < 1 for v in bundle.mean + bundle.std)
    assert len(bundle.class_names) == bundle.num_classes
    assert bundle.name == name and bundle.crop_padding >= 0
