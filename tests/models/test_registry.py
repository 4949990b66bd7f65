from __future__ import annotations

import pytest
import torch
from torch import nn

from recipesearch.errors import ConfigError
from recipesearch.models import create_model, list_models, model_info, register_model, registry


def test_list_models_in_natural_order_with_patterns() -> None:
    names = list_models()
    assert {"cnn", "resnet8", "resnet9", "resnet14", "resnet20", "resnet32", "resnet56", "resnet110"} <= set(names)
    assert names.index("resnet8") < names.index("resnet20") < names.index("resnet110")
    assert list_models("resnet?") == ["resnet8", "resnet9"]
    assert list_models("nothing*") == []
    assert not any(n.startswith("tv/") for n in names)


def test_torchvision_names_are_listed_on_demand() -> None:
    tv = list_models("tv/*")
    assert "tv/resnet18" in tv and "tv/mobilenet_v3_small" in tv
    assert list_models("tv/resnet1*") == ["tv/resnet18", "tv/resnet101", "tv/resnet152"]
    assert not any(n.startswith("tv/squeezenet") for n in tv)  # no nn.Linear head


def test_model_info_has_description_and_options() -> None:
    info = model_info("resnet20")
    assert "He et al." in info.description
    assert set(info.options) == {"width", "zero_init_residual"}


def test_unknown_model_names_the_field_and_lists_choices() -> None:
    with pytest.raises(ConfigError) as e:
        create_model("resnet21", 10)
    assert e.value.field == "model.name"
    assert "unknown model 'resnet21'" in str(e.value)
    assert "resnet20" in str(e.value) and "tv/<torchvision name>" in str(e.value)


def test_unknown_torchvision_model() -> None:
    for name in ("tv/not_a_net", "tv/squeezenet1_0"):
        with pytest.raises(ConfigError) as e:
            create_model(name, 10)
        assert e.value.field == "model.name"


@pytest.mark.parametrize("name", ["resnet20", "cnn", "resnet9", "tv/resnet18"])
def test_unknown_kwarg_names_the_field(name: str) -> None:
    with pytest.raises(ConfigError) as e:
        create_model(name, 10, widht=2)
    assert e.value.field == "model.widht"


@pytest.mark.parametrize(
    ("name", "kwargs", "field"),
    [
        ("cnn", {"width": 0}, "model.width"),
        ("resnet9", {"width": 2.5}, "model.width"),
        ("resnet9", {"pool": "min"}, "model.pool"),
        ("resnet20", {"width": -1.0}, "model.width"),
        ("tv/resnet18", {"weights": "DEFAULT"}, "model.weights"),
        ("tv/mobilenet_v3_small", {"cifar_stem": True}, "model.cifar_stem"),
    ],
)
def test_bad_option_values(name: str, kwargs: dict, field: str) -> None:
    with pytest.raises(ConfigError) as e:
        create_model(name, 10, **kwargs)
    assert e.value.field == field


def test_options_are_passed_through() -> None:
    assert create_model("cnn", 10, width=8).fc.in_features == 32
    assert create_model("resnet9", 10, width=8).fc.in_features == 64
    assert create_model("resnet20", 10, width=2.0).fc.in_features == 128


def test_data_arguments_must_be_positive_ints() -> None:
    with pytest.raises(ValueError, match="num_classes"):
        create_model("cnn", 0)


def test_register_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    @register_model("tiny_test_net")
    def tiny(num_classes: int, in_channels: int, image_size: int, hidden: int = 4) -> nn.Module:
        """A one-layer test net (no source)."""
        return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * image_size**2, num_classes))

    assert "tiny_test_net" in list_models()
    assert model_info("tiny_test_net").description == "A one-layer test net (no source)."
    assert create_model("tiny_test_net", 3, 1, 4, hidden=2)(torch.randn(2, 1, 4, 4)).shape == (2, 3)
    with pytest.raises(ValueError, match="already registered"):
        register_model("tiny_test_net")(tiny)
    with pytest.raises(ValueError, match="reserved"):
        register_model("tv/mine")(tiny)
