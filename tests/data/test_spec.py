"""DataSpec: defaults, one-clause validation messages, unknown names list the registered datasets."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from recipesearch.data import DataSpec, list_datasets


def test_defaults():
    spec = DataSpec(name="digits")
    assert (spec.root, spec.image_size, spec.val_fraction, spec.subset) == (None, None, 0.0, 1.0)
    assert (spec.split_seed, spec.augment, spec.download) == (0, True, False)
    assert (spec.hflip, spec.crop_padding, spec.channels) == (None, None, None)  # None: the dataset's own


def test_unknown_name_lists_registered_datasets():
    with pytest.raises(ValidationError) as info:
        DataSpec(name="mnist2")
    message = info.value.errors()[0]["msg"]
    assert "unknown dataset 'mnist2'" in message
    for name in list_datasets():
        assert name in message


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("val_fraction", -0.1, ">= 0 and < 0.9"),
        ("val_fraction", 0.9, ">= 0 and < 0.9"),
        ("subset", 0.0, "> 0 and <= 1"),
        ("subset", 1.5, "> 0 and <= 1"),
        ("image_size", 2, "between 4 and 1024"),
        ("root", "  ", "empty string"),
        ("crop_padding", -1, "between 0 and 512"),
        ("crop_padding", 513, "between 0 and 512"),
        ("channels", 2, "1 (grayscale) or 3 (RGB)"),
    ],
)
def test_out_of_range_values_are_rejected(field, value, fragment):
    with pytest.raises(ValidationError) as info:
        DataSpec(name="digits", **{field: value})
    (error,) = info.value.errors()
    assert error["loc"] == (field,)
    assert fragment in error["msg"]


def test_boundaries_are_accepted():
    spec = DataSpec(name="digits", val_fraction=0.0, subset=1.0, image_size=4)
    assert spec.image_size == 4
    assert DataSpec(name="digits", val_fraction=0.89, subset=0.01).subset == 0.01


def test_extra_fields_are_forbidden():
    with pytest.raises(ValidationError) as info:
        DataSpec(name="digits", batch_size=3)
    assert info.value.errors()[0]["type"] == "extra_forbidden"


def test_channels_only_for_imagefolder():
    assert DataSpec(name="imagefolder", channels=1).channels == 1
    for name in ("digits", "fashion_mnist", "cifar10"):
        with pytest.raises(ValidationError) as info:
            DataSpec(name=name, channels=3)
        (error,) = info.value.errors()
        assert error["loc"] == ("channels",) and f"only imagefolder converts its images; {name}" in error["msg"]


def test_unset_options_stay_out_of_the_dump():
    spec = DataSpec(name="digits", crop_padding=0, hflip=False)
    assert spec.model_dump(exclude_none=True) == {**DataSpec(name="digits").model_dump(exclude_none=True),
                                                   "crop_padding": 0, "hflip": False}
    assert "channels" not in spec.model_dump(exclude_none=True)
