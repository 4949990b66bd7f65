from __future__ import annotations

import pytest
import torch
from torch import nn

from recipesearch.errors import ConfigError
from recipesearch.models import create_model, tv


def test_resnet_gets_the_cifar_stem_on_small_images() -> None:
    model = create_model("tv/resnet18", 10, in_channels=1, image_size=32)
    assert model.conv1.in_channels == 1
    assert model.conv1.kernel_size == (3, 3) and model.conv1.stride == (1, 1)
    assert isinstance(model.maxpool, nn.Identity)
    assert model.fc.out_features == 10


def test_resnet_keeps_imagenet_stem_on_large_images_unless_forced() -> None:
    model = create_model("tv/resnet18", 10, in_channels=1, image_size=96)
    assert model.conv1.kernel_size == (7, 7) and model.conv1.stride == (2, 2)
    assert model.conv1.in_channels == 1
    assert isinstance(model.maxpool, nn.MaxPool2d)
    assert isinstance(create_model("tv/resnet18", 10, image_size=96, cifar_stem=True).maxpool, nn.Identity)
    assert isinstance(create_model("tv/resnet18", 10, image_size=32, cifar_stem=False).maxpool, nn.MaxPool2d)


def test_first_conv_adapted_with_same_hyper_parameters() -> None:
    ref = create_model("tv/mobilenet_v3_small", 5, in_channels=3, image_size=32)
    model = create_model("tv/mobilenet_v3_small", 5, in_channels=1, image_size=32)
    old, new = ref.features[0][0], model.features[0][0]
    assert new.in_channels == 1 and old.in_channels == 3
    for attr in ("out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "padding_mode"):
        assert getattr(new, attr) == getattr(old, attr), attr
    assert (new.bias is None) == (old.bias is None)
    # Drawn with the original init's scale, so activations start at the same magnitude.
    assert abs(float(new.weight.detach().std()) / float(old.weight.detach().std()) - 1) < 0.3


def test_googlenet_returns_plain_logits_in_training() -> None:
    out = create_model("tv/googlenet", 4, image_size=32)(torch.randn(2, 3, 32, 32))
    assert isinstance(out, torch.Tensor) and out.shape == (2, 4)


# -- check_forward: a model that cannot take the data's images is one line before training (issue 32)


@pytest.fixture(autouse=True)
def _fresh_checks(monkeypatch):
    monkeypatch.setattr(tv, "_CHECKED", {})  # each test sees the checks it runs, not an earlier test's


class OnlySizes(nn.Module):
    """Runs on square images of the given sides only (as maxvit_t: 221-224 px), counting its forward calls."""

    def __init__(self, sides: set[int] | range, num_classes: int = 10):
        super().__init__()
        self.sides, self.fc, self.calls = sides, nn.Linear(1, num_classes), 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if x.shape[-1] not in self.sides:
            raise RuntimeError(f"cannot take\n{x.shape[-1]} px")
        return self.fc(x.mean(dim=(1, 2, 3))[:, None])


def test_check_forward_passes_and_changes_nothing() -> None:
    torch.manual_seed(0)
    model = create_model("tv/resnet18", 10, in_channels=1, image_size=16)
    model.layer2.train(False)  # a mixed mode must come back as it was
    modes = [m.training for m in model.modules()]
    state = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    tv.check_forward(model, "resnet18", 10, 1, 16)
    assert [m.training for m in model.modules()] == modes
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())  # BN statistics untouched
    assert torch.equal(torch.get_rng_state(), rng)
    assert all(p.grad is None for p in model.parameters())


def test_check_forward_runs_once_per_model_and_shape() -> None:
    model = OnlySizes({16, 32})
    tv.check_forward(model, "fake", 10, 3, 16)
    tv.check_forward(model, "fake", 10, 3, 16)
    assert model.calls == 1
    tv.check_forward(model, "fake", 10, 3, 32)
    tv.check_forward(model, "fake", 10, 3, 16, {"width": 2})
    assert model.calls == 3


def test_vit_on_images_that_are_not_a_multiple_of_its_patch() -> None:
    with pytest.raises(ConfigError) as e:
        create_model("tv/vit_b_32", 10, in_channels=1, image_size=16)
    assert e.value.field == "model.name"
    assert str(e.value) == ("model.name: tv/vit_b_32 cannot take 16 px images (AssertionError: Input shape "
                            "indivisible by patch size!); use a data.image_size that is a multiple of 32 (e.g. 32) "
                            "or another model")
    with pytest.raises(ConfigError, match=r"multiple of 32 \(e.g. 64\)"):
        create_model("tv/vit_b_32", 10, image_size=40)


def test_inception_v3_on_small_images_names_the_size_it_needs() -> None:
    model = create_model("tv/inception_v3", 10, in_channels=1, image_size=16)
    with pytest.raises(ConfigError) as e:
        tv.check_forward(model, "inception_v3", 10, 1, 16)
    message = str(e.value)
    assert message.startswith("model.name: tv/inception_v3 cannot take 16 px images (RuntimeError: Calculated padded "
                              "input size per channel: (2 x 2). Kernel size: (3 x 3).")
    assert message.endswith("; use data.image_size >= 75 or another model") and "\n" not in message
    with pytest.raises(ConfigError, match=">= 75"):  # the failure is remembered, not probed again
        tv.check_forward(model, "inception_v3", 10, 1, 16)


def test_a_model_that_runs_on_some_sizes_only_gets_one_of_them() -> None:
    with pytest.raises(ConfigError, match=r"cannot take 32 px images \(RuntimeError: cannot take 32 px\); use "
                                          r"data.image_size: 224 \(a size it runs on; not every larger one does\)"):
        tv.check_forward(OnlySizes(range(221, 225)), "fake", 10, 3, 32)


def test_a_model_that_runs_on_no_size() -> None:
    with pytest.raises(ConfigError, match=r"^model.name: tv/fake cannot take 3-channel 32 px images \(RuntimeError: "
                                          r"cannot take 32 px\); use another model or other model options$"):
        tv.check_forward(OnlySizes(set()), "fake", 10, 3, 32)


def test_a_model_whose_output_is_not_logits() -> None:
    model = nn.Sequential(nn.Flatten(), nn.LazyLinear(7))
    with pytest.raises(ConfigError, match=r"it returns a tensor of shape \[2, 7\], not logits \[2, 10\]"):
        tv.check_forward(model, "fake", 10, 1, 8, shape=(8, 8), field="algorithms.x", cause="x")


def test_the_trainer_checks_before_training(tiny_recipe, monkeypatch) -> None:
    from recipesearch.train import loop

    monkeypatch.setattr(loop.Trainer, "train", lambda self: pytest.fail("trained"))
    with pytest.raises(ConfigError, match=r"^model.name: tv/alexnet cannot take 16 px images .*; use "
                                          r"data.image_size >= 63 or another model$"):
        loop.Trainer(tiny_recipe(model={"name": "tv/alexnet"}))


@pytest.mark.parametrize(("algorithms", "field", "shape"), [
    ({"progressive_resizing": {}}, "algorithms.progressive_resizing", "8 px images that progressive_resizing makes"),
    ({"colout": {"p_row": 0.2, "p_col": 0.1}}, "algorithms.colout", "13x15 px images that colout makes"),
    ({"colout": {}, "progressive_resizing": {"initial_scale": 0.75, "size_increment": 2}},
     "algorithms.progressive_resizing", "10 px images that colout and progressive_resizing make"),
])
def test_the_trainer_checks_the_smaller_batches_of_shrinking_methods(tiny_recipe, algorithms, field, shape) -> None:
    from recipesearch.train.loop import Trainer

    with pytest.raises(ConfigError) as e:
        Trainer(tiny_recipe(algorithms, model={"name": "tv/vit_b_16"}))
    assert e.value.field == field
    assert f"tv/vit_b_16 cannot take the {shape}" in str(e.value) and "(AssertionError: Wrong image" in str(e.value)


def test_a_torchvision_model_that_fits_trains_as_before(tiny_recipe) -> None:
    from recipesearch.train.loop import fit

    recipe = tiny_recipe({"progressive_resizing": {}}, model={"name": "tv/resnet18"}, max_duration=0.2,
                         schedule={"warmup_epochs": 0})
    first, again = fit(recipe), fit(recipe)  # the second one skips the (remembered) check: same weights
    assert first.steps > 0 and first.accuracy == again.accuracy and first.loss == again.loss
