"""DataSpec: defaults, one-clause validation messages, unknown names list the registered datasets."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from recipesearch.data import DataSpec, list_datasets


def test_defaults():
    spec = DataSpec(name="digits")
    assert (spec.root, spec.image_size, spec.val_fraction, spec.subset) == (None, None, 0.0, 1.0)
    assert (spec.split_seed, spec.augment, spec.download) == (0, True, False)


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
