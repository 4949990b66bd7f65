"""examples/byo: a user's own package (``atelier``: a ConvMixer, Fashion-MNIST and digits loaders, random
erasing) searched through import paths. The search runs the real CLI from another folder, so the package
is found only because it sits beside the space file, and reaches the Ray trials only because it is shipped.
"""
from __future__ import annotations

import csv
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from recipesearch.algorithms.contract import run_contract
from recipesearch.data.spec import DataSpec
from recipesearch.data.user import check_dataset
from recipesearch.errors import ConfigError
from recipesearch.models import create_model

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "byo"
USER_MODULES = {"atelier.nets", "atelier.data", "atelier.tricks"}
ERASING = "atelier.tricks:RandomErasing"


@pytest.fixture(scope="module")
def atelier():
    """The example's package, imported as recipesearch imports it (its folder on sys.path); forgotten afterwards,
    so that no later test of this process finds it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(EXAMPLE))
        modules = {name: importlib.import_module(f"atelier.{name}") for name in ("nets", "data", "tricks")}
        yield SimpleNamespace(**modules)
    for name in [m for m in sys.modules if m == "atelier" or m.startswith("atelier.")]:
        del sys.modules[name]


# ---- (a) the small search, through the CLI, on Ray ------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.system
@pytest.mark.timeout(300)
def test_the_small_space_searches_on_ray_with_the_package_beside_it(tmp_path, shared_ray):
    """The README's command, run from another folder and joined to the session's shared Ray (a local Ray's start
    is other tests' concern): the package beside the space file is found, shipped and recorded. Its two baseline
    runs only, one at a time (``--trials 2 --concurrency 1``): the 4 proposals and a second trial worker, with
    the package's imports, showed nothing more about where the package is found."""
    # Nothing on PYTHONPATH: atelier must be found beside the space file, not inherited from this process.
    env = {k: v for k, v in shared_ray.env.items() if k != "PYTHONPATH"}
    console_script = Path(sys.executable).with_name("recipesearch")
    command = [str(console_script)] if console_script.exists() else [sys.executable, "-m", "recipesearch"]
    out = tmp_path / "runs" / "byo-small"
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    result = subprocess.run([*command, "search", str(EXAMPLE / "space_small.yaml"), "--out", str(out), "--quiet",
                             "--no-report", "--trials", "2", "--concurrency", "1", *shared_ray.args], cwd=workdir,
                            env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    with open(out / "trials.csv", newline="") as f:
        trials = list(csv.DictReader(f))
    assert len(trials) == 2
    assert {t["state"] for t in trials} <= {"COMPLETE", "PRUNED"}, [(t["number"], t["state"], t["error"])
                                                                    for t in trials]
    assert any(t["state"] == "COMPLETE" and t["is_baseline"] == "True" for t in trials)

    user_code = json.loads((out / "run.json").read_text())["user_code"]
    assert {row["module"] for row in user_code} == USER_MODULES
    for row in user_code:
        assert re.fullmatch(r"[0-9a-f]{16,64}", row["sha256"] or ""), row
        assert Path(row["file"]).parent == EXAMPLE / "atelier"


def test_a_space_in_another_folder_finds_the_package_beside_its_base_recipe(tmp_path):
    """The space's methods are checked as the file is read, before its base recipe is: a space kept away from the
    package (here in tmp_path, its base ``examples/byo/recipe.yaml``) must find it beside that recipe too."""
    import yaml

    space = tmp_path / "space.yaml"
    space.write_text(yaml.safe_dump({"name": "away", "base": str(EXAMPLE / "recipe.yaml"), "budgets": [0.5, 1],
                                     "algorithms": {ERASING: {}}}))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = "import sys; from recipesearch.space import load_space; print(sorted(load_space(sys.argv[1]).algorithms))"
    r = subprocess.run([sys.executable, "-c", code, str(space)], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and ERASING in r.stdout, r.stderr[-2000:]


# ---- (b) the datasets ------------------------------------------------------------------------------------------


def test_digits_loader_gives_balanced_uint8_splits(atelier):
    splits = atelier.data.digits(size=16)
    train, test = splits["train"], splits["test"]
    assert len(train) + len(test) == 1797
    assert 0.18 < len(test) / 1797 < 0.22
    image, label = train[0]
    assert image.shape == (1, 16, 16) and image.dtype == torch.uint8
    assert isinstance(label, int)
    for split in (train, test):
        assert split.classes == [str(d) for d in range(10)]
        assert len(split.targets) == len(split)
        assert set(split.targets.tolist()) == set(range(10))
        assert [split[i][1] for i in range(5)] == split.targets[:5].tolist()
        assert split.hflip is False  # a mirrored digit is another digit
    assert int(train.images.max()) > 200  # ink scaled to 0..255, not sklearn's 0..16


def test_digits_loader_reads_as_a_recipesearch_dataset(atelier):
    raw = check_dataset(DataSpec(name="atelier.data:digits", size=16))
    assert raw.num_classes == 10
    assert raw.class_names == tuple(str(d) for d in range(10))
    assert raw.train_images.shape[1:] == (1, 16, 16)
    assert raw.crop_padding == 2 and raw.hflip is False


def test_fashion_mnist_without_its_files_is_a_clear_error(atelier, tmp_path):
    with pytest.raises(FileNotFoundError, match="dataset-fashion-mnist") as error:
        atelier.data.fashion_mnist(root=tmp_path)
    assert str(tmp_path) in str(error.value)
    with pytest.raises(ValueError, match="fraction"):
        atelier.data.fashion_mnist(fraction=0)


def test_a_fashion_mnist_subset_keeps_every_class(atelier):
    files = [atelier.data.FASHION_MNIST_DIR / name for names in atelier.data.FASHION_MNIST_FILES.values()
             for name in names]
    if not all(f.is_file() for f in files):
        pytest.skip(f"Fashion-MNIST IDX files not in {atelier.data.FASHION_MNIST_DIR} (apt-get install "
                    "dataset-fashion-mnist)")
    splits = atelier.data.fashion_mnist(fraction=0.01)
    train, test = splits["train"], splits["test"]
    assert (len(train), len(test)) == (600, 100)  # 1 % of 60,000 and of 10,000
    assert torch.equal(train.targets.bincount(), torch.full((10,), 60))
    assert torch.equal(test.targets.bincount(), torch.full((10,), 10))
    image, label = train[0]
    assert image.shape == (1, 28, 28) and image.dtype == torch.uint8 and 0 <= label < 10
    assert train.classes == list(atelier.data.FASHION_MNIST_CLASSES) and train.classes[9] == "Ankle boot"
    assert train.hflip is True


# ---- (c) the model ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("in_channels, image_size", [(1, 28), (3, 32)])
def test_convmixer_gives_one_logit_per_class(atelier, in_channels, image_size):
    model = atelier.nets.convmixer(num_classes=10, in_channels=in_channels, image_size=image_size, width=16, depth=2)
    assert model(torch.randn(2, in_channels, image_size, image_size)).shape == (2, 10)
    # the pooled head takes any grid: progressive resizing trains on smaller images
    assert model(torch.randn(2, in_channels, image_size // 2, image_size // 2)).shape == (2, 10)


def test_convmixer_options_through_recipesearch(atelier):
    model = create_model("atelier.nets:convmixer", num_classes=7, in_channels=1, image_size=16, depth=3)
    assert model(torch.randn(1, 1, 16, 16)).shape == (1, 7)
    assert len(model.blocks) == 3
    with pytest.raises(ConfigError, match="model.depht"):
        create_model("atelier.nets:convmixer", num_classes=7, in_channels=1, image_size=16, depht=3)
    with pytest.raises(ConfigError, match="kernel_size must be odd"):
        create_model("atelier.nets:convmixer", num_classes=7, in_channels=1, image_size=16, kernel_size=4)


# ---- (d) the method --------------------------------------------------------------------------------------------


def test_random_erase_fills_one_rectangle_per_image_with_noise(atelier):
    x = torch.full((64, 3, 16, 16), 7.0)  # far outside standard normal noise: every filled pixel differs
    erased = atelier.tricks.random_erase(x, probability=1.0, min_area=0.25, max_area=0.25, min_aspect=1.0,
                                         generator=torch.Generator().manual_seed(0))
    changed = erased != x
    assert torch.equal(changed[:, :1].expand_as(changed), changed)  # the same pixels in every channel
    for mask in changed[:, 0]:
        rows, cols = mask.nonzero().unbind(1)
        # a square of a quarter of the image, all of it: 8 x 8 of 16 x 16
        assert (rows.max() - rows.min() + 1, cols.max() - cols.min() + 1, len(rows)) == (8, 8, 64)
    assert abs(float(erased[changed].mean())) < 0.2 and 0.8 < float(erased[changed].std()) < 1.2


def test_random_erase_erases_the_given_share_of_images(atelier):
    x = torch.zeros(4000, 1, 8, 8) + 7.0
    erased = atelier.tricks.random_erase(x, probability=0.3, generator=torch.Generator().manual_seed(1))
    share = (erased != x).flatten(1).any(1).float().mean()
    assert 0.27 < float(share) < 0.33
    assert torch.equal(atelier.tricks.random_erase(x, probability=0.0), x)
    again = atelier.tricks.random_erase(x, probability=0.3, generator=torch.Generator().manual_seed(1))
    assert torch.equal(erased, again)  # one seed, one result: runs replay


def test_random_erasing_params_are_validated(atelier):
    assert atelier.tricks.RandomErasing().params.probability == 0.5
    with pytest.raises(ConfigError, match="min_area"):
        atelier.tricks.RandomErasing(min_area=0.5, max_area=0.1)
    with pytest.raises(ConfigError, match="unknown hyperparameter"):
        atelier.tricks.RandomErasing(probabilty=0.5)


def test_random_erasing_keeps_the_algorithm_contract(atelier):
    assert run_contract(ERASING) == []
    assert run_contract(ERASING, {"probability": 1.0, "max_area": 0.2}) == []
