"""Contract tests over every registered model (plus two torchvision ones): shapes, head, gradients."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from recipesearch.models import ResidualBlock, create_model, list_models

OWN_MODELS = list_models()
TV_MODELS = ["tv/resnet18", "tv/mobilenet_v3_small"]
IMAGE_SIZES = (8, 16, 28, 32)
NUM_CLASSES = 7  # not 10, so a head hard-wired to CIFAR-10 would fail


def _linears(model: nn.Module) -> list[tuple[str, nn.Linear]]:
    return [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear)]


@pytest.mark.parametrize("in_channels", [1, 3])
@pytest.mark.parametrize("name", OWN_MODELS + TV_MODELS)
def test_output_shape_for_every_image_size(name: str, in_channels: int) -> None:
    for size in IMAGE_SIZES:
        torch.manual_seed(0)
        model = create_model(name, NUM_CLASSES, in_channels=in_channels, image_size=size)
        # Batch of 2: BatchNorm in train mode needs more than one value per channel on a 1x1 map.
        out = model(torch.randn(2, in_channels, size, size))
        assert out.shape == (2, NUM_CLASSES), (name, in_channels, size)
        assert torch.isfinite(out).all()


@pytest.mark.parametrize("name", OWN_MODELS + TV_MODELS)
def test_classifier_is_the_last_linear(name: str) -> None:
    model = create_model(name, NUM_CLASSES, image_size=16)
    linears = _linears(model)
    assert linears, "the losses need an nn.Linear classifier"
    last_name, last = linears[-1]
    assert last.out_features == NUM_CLASSES
    if not name.startswith("tv/"):  # torchvision names its heads its own way (classifier.3, ...)
        assert last_name == "fc"
        assert model.fc is last


@pytest.mark.parametrize("name", OWN_MODELS + TV_MODELS)
def test_backward_reaches_every_parameter(name: str) -> None:
    model = create_model(name, NUM_CLASSES, in_channels=3, image_size=16)
    x, y = torch.randn(4, 3, 16, 16), torch.randint(0, NUM_CLASSES, (4,))
    nn.functional.cross_entropy(model(x), y).backward()
    # A model may hold fixed parameters (airbench94's BatchNorm scales, 1 and untrained as in the record):
    # the gradient must reach every trainable one.
    for pname, p in model.named_parameters():
        if not p.requires_grad:
            continue
        assert p.grad is not None, pname
        assert torch.isfinite(p.grad).all(), pname
    assert _linears(model)[-1][1].weight.grad.abs().sum() > 0


@pytest.mark.parametrize("name", list_models("resnet*"))
def test_residual_models_use_residual_block(name: str) -> None:
    model = create_model(name, NUM_CLASSES, image_size=16)
    blocks = [m for m in model.modules() if isinstance(m, ResidualBlock)]
    assert blocks
    # Algorithms append to ``branch`` (squeeze-excite), so it must be a Sequential.
    assert all(isinstance(b.branch, nn.Sequential) for b in blocks)


@pytest.mark.parametrize("name", list_models("resnet*"))
def test_dropping_every_branch_leaves_the_shortcut_path(name: str) -> None:
    # What stochastic depth does with p=1: replace each branch generically, model still runs.
    class Zero(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.zeros((), device=x.device)

    model = create_model(name, NUM_CLASSES, image_size=16)
    for m in model.modules():
        if isinstance(m, ResidualBlock):
            m.branch = Zero()
    model.eval()
    x = torch.randn(2, 3, 16, 16)
    assert model(x).shape == (2, NUM_CLASSES)


@pytest.mark.parametrize("name", OWN_MODELS + ["tv/resnet18"])
def test_same_seed_same_model(name: str) -> None:
    torch.manual_seed(123)
    a = create_model(name, NUM_CLASSES, in_channels=1, image_size=16).state_dict()
    torch.manual_seed(123)
    b = create_model(name, NUM_CLASSES, in_channels=1, image_size=16).state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
