"""A dataset named by import path (data/user.py): torch Datasets per split become the tensors training needs
(or a streamed source), a RawDataset passes through, and a broken dataset is one line naming the item."""
from __future__ import annotations

import pytest
import torch

from recipesearch.data import DataSpec, load_data
from recipesearch.data.source import ImageSource
from recipesearch.data.stream import read_all
from recipesearch.data.user import check_dataset, user_listing
from recipesearch.errors import ConfigError, UserError

DATASETS = '''
import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

from recipesearch.data.raw import RawDataset


class Squares(Dataset):
    """Images whose label is which quarter is bright: learnable, in any of the image formats accepted."""

    classes = ["tl", "tr", "bl", "br"]

    def __init__(self, n, fmt="float", size=8, seed=0, bad=None):
        g = torch.Generator().manual_seed(seed)
        self.targets = torch.randint(0, 4, (n,), generator=g).tolist()
        self.fmt, self.size, self.bad = fmt, size, bad

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        label, h = self.targets[i], self.size // 2
        img = torch.zeros(1, self.size, self.size)
        img[:, (label // 2) * h:(label // 2 + 1) * h, (label % 2) * h:(label % 2 + 1) * h] = 1.0
        if self.bad == "shape" and i == 3:
            img = torch.zeros(1, self.size, self.size + 1)
        if self.fmt == "pil":
            return Image.fromarray((img[0].numpy() * 255).astype(np.uint8)), label
        if self.fmt == "hwc_uint8":
            return (img.permute(1, 2, 0) * 255).to(torch.uint8).numpy(), np.int64(label)
        return img, torch.tensor(label)


class ItemLabels(Dataset):
    """Labels only through the items: no targets, no classes."""

    def __init__(self, inner):
        self.inner = inner

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, i):
        return self.inner[i]


def itemwise():
    return {"train": ItemLabels(Squares(32)), "test": ItemLabels(Squares(8, seed=1))}


def load(fmt="float", n=64, bad=None, size=8):
    train, test = Squares(n, fmt, size, 0, bad), Squares(n // 2, fmt, size, 1)
    if bad == "float_label":
        train.targets[5] = 1.5
    if bad == "range":
        test.targets[2] = 7
    return {"train": train, "test": test}


def pair():
    return Squares(32), Squares(16, seed=1)


def raw():
    images = torch.zeros(20, 1, 8, 8, dtype=torch.uint8)
    labels = torch.arange(20) % 2
    return RawDataset(images, labels, images[:6], labels[:6], 2, ("a", "b"), False, 1, 8, 8)


def wrong_type():
    return [1, 2, 3]


def one_class():
    train = Squares(16)
    train.targets = [0] * 16
    train.classes = None
    test = Squares(8)
    test.targets = [0] * 8
    return {"train": train, "test": test}


def needs_root(root):
    assert root == "/data/here", root
    return load()
'''


@pytest.fixture
def mod(user_module):
    return user_module(DATASETS)


@pytest.mark.parametrize("fmt", ["float", "pil", "hwc_uint8"])
def test_datasets_become_uint8_tensors_with_their_labels_and_classes(mod, fmt):
    bundle = load_data(DataSpec(name=f"{mod}:load", fmt=fmt))
    assert bundle.num_classes == 4 and bundle.class_names == ("tl", "tr", "bl", "br")
    assert bundle.train.images.shape == (64, 1, 8, 8) and bundle.train.images.dtype == torch.uint8
    assert bundle.test.images.shape == (32, 1, 8, 8)
    first = bundle.train.images[0, 0]
    label = int(bundle.train.labels[0])
    h = 4
    assert int(first[(label // 2) * h, (label % 2) * h]) == 255 and int(first.sum()) == 255 * 16
    assert bundle.hflip is False  # a user dataset's mirror may change the class unless it says otherwise


def test_options_beside_name_reach_the_loader_and_are_checked(mod):
    spec = DataSpec(name=f"{mod}:load", n=32, size=16)
    assert spec.options == {"n": 32, "size": 16}
    assert load_data(spec).train.images.shape == (32, 1, 16, 16)
    from recipesearch.recipe import recipe_from_dict

    with pytest.raises(ConfigError) as info:
        recipe_from_dict({"data": {"name": f"{mod}:load", "nn": 3}, "max_duration": 1, "model": {"name": "cnn"}})
    assert info.value.field == "data.nn" and "unknown option for dataset" in info.value.message
    with pytest.raises(ValueError, match="only a dataset named by import path"):
        DataSpec(name="digits", options={"n": 3})


def test_labels_read_item_by_item_and_classes_from_the_largest_label(mod):
    bundle = load_data(DataSpec(name=f"{mod}:itemwise"))
    expected = load_data(DataSpec(name=f"{mod}:pair"))
    assert torch.equal(bundle.train.labels, expected.train.labels) and bundle.num_classes == 4
    assert bundle.class_names == ("0", "1", "2", "3")


def test_a_pair_a_raw_dataset_and_data_root(mod):
    assert load_data(DataSpec(name=f"{mod}:pair")).train.images.shape == (32, 1, 8, 8)
    assert load_data(DataSpec(name=f"{mod}:raw")).num_classes == 2
    assert load_data(DataSpec(name=f"{mod}:needs_root", root="/data/here")).num_classes == 4


def test_resizing_and_streaming_give_the_same_images_as_memory(mod):
    in_memory = load_data(DataSpec(name=f"{mod}:load", image_size=12))
    streamed = load_data(DataSpec(name=f"{mod}:load", image_size=12, in_memory=False))
    assert isinstance(streamed.train.images, ImageSource)
    assert torch.equal(read_all(streamed.train.images), in_memory.train.images)
    assert torch.equal(streamed.train.labels, in_memory.train.labels)


@pytest.mark.parametrize(("loader", "options", "words"), [
    ("load", {"bad": "shape"}, "train item 3 has shape [1, 8, 9]; item 0 has [1, 8, 8]"),
    ("load", {"bad": "float_label"}, "train item 5: label 1.5 is a float, not an integer class index"),
    ("load", {"bad": "range"}, "test item 2 has label 7, outside 0..3 (4 classes)"),
    ("wrong_type", {}, "returned a list; expected a RawDataset"),
    ("one_class", {}, "1 class: a classifier needs at least 2"),
    ("Squares", {"n": 0}, "returned a Squares; expected"),
])
def test_a_broken_dataset_is_one_line_naming_the_item(mod, loader, options, words):
    with pytest.raises(UserError) as info:  # a ConfigError, or its text from the reading pass's worker
        check_dataset(DataSpec(name=f"{mod}:{loader}", **options))
    text = str(info.value)
    assert text.startswith(f"data.name: {mod}:{loader}") and words in text and "\n" not in text


def test_the_listing_says_how_big_it_is_decoded(mod):
    listing = user_listing(DataSpec(name=f"{mod}:load", image_size=16))
    assert listing.count == 96 and listing.decoded_bytes == 96 * 16 * 16
