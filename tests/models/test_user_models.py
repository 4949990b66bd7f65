"""A model named by import path: a factory (or nn.Module subclass) of the user's, options checked on its
signature, and every way it can go wrong one ConfigError line on ``model.*``."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from recipesearch.errors import ConfigError
from recipesearch.models import create_model

FACTORIES = '''
from torch import nn

def mlp(num_classes, in_channels, image_size, hidden=16, *, depth):
    layers = [nn.Flatten(), nn.Linear(in_channels * image_size ** 2, hidden), nn.ReLU()]
    for _ in range(depth - 1):
        layers += [nn.Linear(hidden, hidden), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(hidden, num_classes))

class Net(nn.Module):
    def __init__(self, num_classes, in_channels, image_size):
        super().__init__()
        self.fc = nn.Linear(in_channels * image_size ** 2, num_classes)

    def forward(self, x):
        return self.fc(x.flatten(1))

def raises(num_classes, in_channels, image_size):
    raise ValueError("depth must be even")

def not_a_module(num_classes, in_channels, image_size):
    return "a string"

def no_data_args(width=3):
    return nn.Linear(1, 1)

class NotAModel:
    pass
'''


@pytest.fixture
def mod(user_module):
    return user_module(FACTORIES)


def test_a_factory_and_a_module_class_build_with_their_options(mod):
    model = create_model(f"{mod}:mlp", num_classes=7, in_channels=1, image_size=8, hidden=8, depth=2)
    assert model(torch.zeros(2, 1, 8, 8)).shape == (2, 7)
    assert sum(isinstance(m, nn.Linear) for m in model.modules()) == 3
    net = create_model(f"{mod}:Net", num_classes=3, in_channels=3, image_size=4)
    assert net(torch.zeros(1, 3, 4, 4)).shape == (1, 3)


@pytest.mark.parametrize(("name", "options", "field", "words"), [
    ("mlp", {"depth": 1, "widht": 3}, "model.widht", "unknown option for model"),
    ("mlp", {}, "model.depth", "required by"),
    ("raises", {}, "model.name", "raised ValueError: depth must be even"),
    ("not_a_module", {}, "model.name", "returned a str, not a torch.nn.Module"),
    ("no_data_args", {}, "model.name", "must accept num_classes, in_channels, image_size"),
    ("NotAModel", {}, "model.name", "is the class NotAModel, not a model factory"),
    ("nowhere", {}, "model.name", "has no attribute 'nowhere'"),
])
def test_what_goes_wrong_is_one_line_on_its_field(mod, name, options, field, words):
    with pytest.raises(ConfigError) as info:
        create_model(f"{mod}:{name}", num_classes=3, in_channels=1, image_size=8, **options)
    assert info.value.field == field and words in info.value.message and "\n" not in str(info.value)


def test_a_recipe_is_checked_before_training(mod, tiny_recipe):
    recipe = tiny_recipe(model={"name": f"{mod}:mlp", "depth": 2})
    assert recipe.model.name == f"{mod}:mlp"
    with pytest.raises(ConfigError, match="model.depht: unknown option"):
        tiny_recipe(model={"name": f"{mod}:mlp", "depht": 2})


def test_a_registered_name_may_not_look_like_an_import_path():
    from recipesearch.models import register_model

    with pytest.raises(ValueError, match="import path"):
        register_model("acme:net")(lambda num_classes, in_channels, image_size: nn.Identity())
