"""imagefolder: PNGs written with PIL, decoded once to uint8 RGB at image_size."""
from __future__ import annotations

import pytest
import torch
from PIL import Image

from recipesearch.data import DataSpec, get_dataset, load_data
from recipesearch.data.testing import write_imagefolder
from recipesearch.errors import DataNotFoundError, UserError


@pytest.mark.parametrize("test_dir", ["test", "val"])
def test_decodes_classes_colours_and_sizes(tmp_path, test_dir):
    colours = write_imagefolder(tmp_path, test_dir=test_dir)
    bundle = load_data(DataSpec(name="imagefolder", root=str(tmp_path), image_size=8))
    assert bundle.class_names == ("blue", "red")  # sorted folder names
    assert bundle.train.images.shape == (6, 3, 8, 8) and bundle.test.images.shape == (4, 3, 8, 8)
    assert bundle.train.labels.tolist() == [0, 0, 0, 1, 1, 1]
    for split in (bundle.train, bundle.test):
        for image, label in zip(split.images, split.labels):
            rgb = colours[bundle.class_names[label]]
            assert torch.equal(image, torch.tensor(rgb, dtype=torch.uint8).view(3, 1, 1).expand(3, 8, 8))
    assert bundle.hflip and bundle.crop_padding == 1 and bundle.channels == 3


def test_default_size_is_32_and_grayscale_becomes_rgb(tmp_path):
    write_imagefolder(tmp_path)
    Image.new("L", (5, 7), 77).save(tmp_path / "train" / "red" / "gray.png")
    raw = get_dataset("imagefolder")(DataSpec(name="imagefolder", root=str(tmp_path)))
    assert raw.train_images.shape == (7, 3, 32, 32)
    # blue/ 0..2.png, then red/ 0.png 1.png 2.png gray.png: the grey image is sample 6, replicated to 3 channels
    assert raw.train_labels[6].item() == 1 and (raw.train_images[6] == 77).all()


def test_test_class_missing_from_train_is_an_error(tmp_path):
    write_imagefolder(tmp_path)
    (tmp_path / "test" / "green").mkdir()
    with pytest.raises(UserError, match="green"):
        get_dataset("imagefolder")(DataSpec(name="imagefolder", root=str(tmp_path)))


def test_missing_folder_error_is_one_line(tmp_path):
    with pytest.raises(DataNotFoundError) as info:
        load_data(DataSpec(name="imagefolder", root=str(tmp_path)))
    assert "\n" not in str(info.value) and "train/" in str(info.value) and "data.root" in str(info.value)
