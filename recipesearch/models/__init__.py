"""Image classifiers by name: ``create_model("resnet20", num_classes=10)``, ``list_models("resnet*")``.

Own models register themselves on import below; torchvision models are ``tv/<name>`` (see ``tv.py``).
"""
from __future__ import annotations

# Imported for their @register_model side effect.
from recipesearch.models import airbench94, cifar_resnet, cnn, resnet9  # noqa: F401
from recipesearch.models.blocks import ResidualBlock, basic_block, conv_bn, conv_bn_relu
from recipesearch.models.registry import ModelInfo, create_model, list_models, model_info, register_model

__all__ = [
    "ModelInfo",
    "ResidualBlock",
    "basic_block",
    "conv_bn",
    "conv_bn_relu",
    "create_model",
    "list_models",
    "model_info",
    "register_model",
]
