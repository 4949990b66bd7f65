"""imagefolder: PNGs written with PIL, decoded once to uint8 RGB (or grayscale) at image_size; the
data.hflip / data.crop_padding / data.channels options."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn

from recipesearch.data import DataSpec, get_dataset, load_data, normalize_params
from recipesearch.data.testing import write_imagefolder
from recipesearch.errors import ConfigError, DataNotFoundError, UserError
from recipesearch.recipe import loads_recipe
from recipesearch.train.loop import Trainer


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


# ---- data.channels, data.hflip, data.crop_padding (issue 15 item 5) -------------------------------------

SIDE = 8


def gradient(transpose: bool = False) -> np.ndarray:
    """8x8 uint8, every pixel distinct and non-zero, brighter to the right: a mirror is never a shift of it."""
    rows, cols = np.mgrid[0:SIDE, 0:SIDE]
    image = (10 + 28 * cols + rows).astype(np.uint8)
    return image.T.copy() if transpose else image


def write_gray_imagefolder(root: Path, train: int = 4, test: int = 2) -> dict[str, np.ndarray]:
    """Grayscale ("L") PNGs: class ``right`` the gradient, ``down`` its transpose; returns the two images."""
    images = {"down": gradient(transpose=True), "right": gradient()}
    for split, count in (("train", train), ("test", test)):
        for cls, image in images.items():
            (root / split / cls).mkdir(parents=True, exist_ok=True)
            for k in range(count):
                Image.fromarray(image, mode="L").save(root / split / cls / f"{k}.png")
    return images


@pytest.fixture
def gray_recipe(tiny_recipe):
    """Factory: the tiny recipe on an imagefolder at ``root`` (8 px), with ``data`` fields added."""
    def make(root: Path, algorithms: dict | None = None, **data: object):
        data = {"name": "imagefolder", "root": str(root), "image_size": SIDE, **data}
        return tiny_recipe(algorithms, data=data, batch_size=4, max_duration=1)

    return make


def uint8_batches(trainer: Trainer, epochs: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The trainer's own training batches (normalised floats) mapped back to uint8, with their labels."""
    loader = trainer.state.train_loader
    scale, bias = normalize_params(loader.mean, loader.std)
    xs, ys = [], []
    for _ in range(epochs):
        for x, y in loader:
            xs.append(((x - bias) / scale).round().to(torch.uint8))
            ys.append(y)
    return torch.cat(xs), torch.cat(ys)


def windows(image: torch.Tensor, padding: int) -> list[torch.Tensor]:
    """Every SIDE x SIDE window of the zero-padded image (the random crop's possible outputs)."""
    padded = F.pad(image, (padding,) * 4)
    span = range(2 * padding + 1)
    return [padded[:, dy : dy + SIDE, dx : dx + SIDE] for dy in span for dx in span]


def which_window(sample: torch.Tensor, image: torch.Tensor, padding: int) -> tuple[int | None, int | None]:
    """(index of the window of ``image`` equal to ``sample``, same for its mirror); None where none is."""
    def find(candidates: list[torch.Tensor]) -> int | None:
        return next((i for i, w in enumerate(candidates) if torch.equal(w, sample)), None)

    return find(windows(image, padding)), find(windows(image.flip(-1), padding))


def test_channels_1_decodes_grayscale_and_trains_a_one_channel_model(tmp_path, gray_recipe):
    images = write_gray_imagefolder(tmp_path)
    Image.new("RGB", (5, 5), (250, 10, 20)).save(tmp_path / "train" / "right" / "rgb.png")  # mixed modes are fine
    bundle = load_data(DataSpec(name="imagefolder", root=str(tmp_path), image_size=SIDE, channels=1))
    assert bundle.channels == 1 and bundle.train.images.shape == (9, 1, SIDE, SIDE) and len(bundle.mean) == 1
    assert torch.equal(bundle.train.images[0, 0], torch.from_numpy(images["down"]))  # "L" PNGs kept exactly
    luma = Image.new("RGB", (1, 1), (250, 10, 20)).convert("L").getpixel((0, 0))
    assert (bundle.train.images[8] == luma).all()  # right/ 0..3.png, rgb.png: PIL's own RGB -> L
    # The default is still RGB: the grey replicated to three channels.
    rgb = load_data(DataSpec(name="imagefolder", root=str(tmp_path), image_size=SIDE))
    assert rgb.channels == 3 and torch.equal(rgb.train.images[0], bundle.train.images[0].expand(3, SIDE, SIDE))

    trainer = Trainer(gray_recipe(tmp_path, channels=1))
    first_conv = next(m for m in trainer.state.model.modules() if isinstance(m, nn.Conv2d))
    assert first_conv.in_channels == 1
    result = trainer.fit()
    assert 0.0 <= result.accuracy <= 1.0


def test_hflip_false_keeps_the_crop_and_never_mirrors(tmp_path, gray_recipe):
    write_gray_imagefolder(tmp_path)
    trainer = Trainer(gray_recipe(tmp_path, channels=1, hflip=False))
    assert not trainer.data.hflip and trainer.data.crop_padding == 1  # imagefolder's default: 8 // 8
    x, y = uint8_batches(trainer, epochs=25)  # 200 draws
    originals = {label: trainer.data.train.images[trainer.data.train.labels == label][0] for label in (0, 1)}
    offsets = set()
    for sample, label in zip(x, y.tolist()):
        plain, mirrored = which_window(sample, originals[label], 1)
        assert plain is not None and mirrored is None
        offsets.add(plain)
    assert len(offsets) == 9  # the crop still moves it: every shift of the 3x3 seen

    # The same check sees mirrors when they happen: the default flips about half of the images.
    x, y = uint8_batches(Trainer(gray_recipe(tmp_path, channels=1)), epochs=25)
    flips = [which_window(s, originals[label], 1)[0] is None for s, label in zip(x, y.tolist())]
    assert 0.3 < sum(flips) / len(flips) < 0.7


def test_crop_padding_0_changes_nothing_but_flips(tmp_path, gray_recipe):
    write_gray_imagefolder(tmp_path)
    trainer = Trainer(gray_recipe(tmp_path, crop_padding=0))
    assert trainer.data.crop_padding == 0 and trainer.data.hflip
    x, y = uint8_batches(trainer, epochs=10)
    originals = {label: trainer.data.train.images[trainer.data.train.labels == label][0] for label in (0, 1)}
    seen = [which_window(s, originals[label], 0) for s, label in zip(x, y.tolist())]
    assert all(pair in ((0, None), (None, 0)) for pair in seen)  # the image itself or its mirror
    assert {pair[0] for pair in seen} == {0, None}  # both happen
    x, y = uint8_batches(Trainer(gray_recipe(tmp_path, crop_padding=0, hflip=False)), epochs=2)
    assert all(torch.equal(s, originals[label]) for s, label in zip(x, y.tolist()))  # untouched


def test_crop_padding_is_in_pixels_at_the_trained_size(tmp_path):
    write_gray_imagefolder(tmp_path)
    assert load_data(DataSpec(name="imagefolder", root=str(tmp_path), image_size=16)).crop_padding == 2
    assert load_data(DataSpec(name="imagefolder", root=str(tmp_path), image_size=16, crop_padding=3)).crop_padding == 3
    # The other datasets take the same keys; unset they keep their own defaults.
    assert load_data(DataSpec(name="digits")).hflip is False and load_data(DataSpec(name="digits")).crop_padding == 2
    flipped = load_data(DataSpec(name="digits", hflip=True, crop_padding=0))  # the user's call
    assert flipped.hflip is True and flipped.crop_padding == 0


def test_flip_tta_is_refused_when_hflip_is_false(tmp_path, gray_recipe):
    write_gray_imagefolder(tmp_path)
    with pytest.raises(ConfigError) as info:
        Trainer(gray_recipe(tmp_path, {"flip_tta": {}}, hflip=False))
    assert info.value.field == "algorithms.flip_tta" and "imagefolder" in str(info.value)
    Trainer(gray_recipe(tmp_path, {"flip_tta": {}}))  # the default (hflip true) allows it


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("crop_padding: -1", "between 0 and 512"),
        ("crop_padding: 600", "between 0 and 512"),
        ("crop_padding: 1.5", "integer"),
        ("channels: 2", "1 (grayscale) or 3 (RGB), got 2"),
        ("channels: 0", "got 0"),
        ("hflip: maybe", "boolean"),
    ],
)
def test_bad_values_are_one_line_errors(tmp_path, line, words):
    text = f"data:\n  name: imagefolder\n  root: {tmp_path}\n  {line}\nmax_duration: 1\n"
    with pytest.raises(ConfigError) as info:
        loads_recipe(text, "r.yaml")
    field = "data." + line.split(":")[0]
    assert info.value.field == field and words in str(info.value) and "\n" not in str(info.value)
    assert str(info.value).startswith(f"r.yaml:4: {field}: "), str(info.value)


def test_channels_is_refused_on_other_datasets():
    with pytest.raises(ConfigError) as info:
        loads_recipe("data: {name: digits, channels: 3}\nmax_duration: 1\n")
    assert info.value.field == "data.channels" and "only imagefolder" in str(info.value)
    assert "\n" not in str(info.value)


def test_crop_padding_not_below_the_image_size_is_refused(tmp_path):
    write_gray_imagefolder(tmp_path)
    with pytest.raises(ConfigError) as info:
        load_data(DataSpec(name="imagefolder", root=str(tmp_path), image_size=SIDE, crop_padding=SIDE))
    assert info.value.field == "data.crop_padding" and "less than 8" in str(info.value)
    assert "\n" not in str(info.value)


def test_recipes_without_the_new_fields_keep_their_ids(tmp_path):
    # Ids computed before hflip / crop_padding / channels existed (unset fields are left out of the dump).
    digits = loads_recipe((Path(__file__).parents[1] / "tiny_recipe.yaml").read_text())
    assert "hflip" not in digits.to_dict()["data"] and digits.id() == "4c319d266817"
    folder = loads_recipe("model: {name: cnn}\ndata: {name: imagefolder, root: /tmp/x, image_size: 16}\n"
                          "max_duration: 1\n")
    assert folder.id() == "16e2c78ba772"
    assert folder.with_overrides({"data.hflip": False}).id() != folder.id()  # a set field is part of it


# ---- fewer than two classes (issue 32 item 7) ----------------------------------------------------------

def write_one_class(root: Path, empty: tuple[str, ...] = ()) -> None:
    """train/ and test/ with images of class ``cats`` only; ``empty``: further class folders without images."""
    for split in ("train", "test"):
        (root / split / "cats").mkdir(parents=True)
        for k in range(2):
            Image.new("RGB", (8, 8), (40 * k, 0, 0)).save(root / split / "cats" / f"{k}.png")
        for name in empty:
            (root / split / name).mkdir()


def test_one_class_is_refused_naming_the_folder_and_what_it_found(tmp_path):
    write_one_class(tmp_path)
    with pytest.raises(ConfigError) as info:
        load_data(DataSpec(name="imagefolder", root=str(tmp_path)))
    assert info.value.field == "data.root" and "\n" not in str(info.value)
    assert info.value.message == (f"imagefolder: {tmp_path / 'train'} has 1 class folder (cats): a classifier needs "
                                  "at least 2 classes, one sub-folder of images each (one class would train to 100 % "
                                  "accuracy and mean nothing)")


def test_class_folders_without_images_do_not_count(tmp_path):
    write_one_class(tmp_path, empty=("dogs",))
    with pytest.raises(ConfigError) as info:
        get_dataset("imagefolder")(DataSpec(name="imagefolder", root=str(tmp_path)))
    assert info.value.field == "data.root"
    assert "has images of 1 class only (cats; no images in dogs)" in info.value.message


def test_train_refuses_a_one_class_folder_in_one_line(tmp_path, capsys):
    from recipesearch.cli import main

    write_one_class(tmp_path / "data")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"model: {{name: cnn, width: 8}}\ndata: {{name: imagefolder, root: '{tmp_path / 'data'}', "
                      "image_size: 8}\nmax_duration: 1\ndevice: cpu\n")
    assert main(["train", str(recipe), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: data.root: imagefolder: ") and "1 class folder" in err


def test_two_classes_are_enough(tmp_path):
    write_imagefolder(tmp_path)
    assert get_dataset("imagefolder")(DataSpec(name="imagefolder", root=str(tmp_path))).num_classes == 2
