"""``RawDataset``: what every dataset loader returns (decoded uint8 CPU tensors), and the label form it holds.

Below both the registry (whose loaders return one) and ``data/user.py`` (which converts a user's loader's
result into one), so that neither imports the other for it.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from recipesearch.data.source import ImageSource


@dataclass(frozen=True)
class RawDataset:
    """A decoded dataset: uint8 CPU tensors plus what the training loop needs to know about them.

    ``crop_padding`` is meant for images of ``default_size``; ``load_data`` scales it with the image size.
    ``mean``/``std`` are per channel in 0..1 units; ``None`` means "compute from the training images".
    """

    train_images: torch.Tensor | ImageSource  # uint8 [N, C, H, W], or a source of them (streamed)
    train_labels: torch.Tensor  # int64 [N]
    test_images: torch.Tensor | ImageSource  # uint8 [M, C, H, W], or a source of them
    test_labels: torch.Tensor  # int64 [M]
    num_classes: int
    class_names: tuple[str, ...]
    hflip: bool  # whether a horizontal flip keeps the label (not for digits)
    crop_padding: int  # random-crop padding in pixels at default_size
    native_size: int  # side of the images as stored on disk
    default_size: int  # side load_data resizes to when DataSpec.image_size is None
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None

    @property
    def channels(self) -> int:
        return int(self.train_images.shape[1])

    def __post_init__(self) -> None:
        for split, images, labels in (
            ("train", self.train_images, self.train_labels),
            ("test", self.test_images, self.test_labels),
        ):
            if isinstance(images, ImageSource):
                if len(images.shape) != 4:
                    raise ValueError(f"{split} source must give [N,C,H,W] images, got {images.shape}")
            elif images.dtype != torch.uint8 or images.dim() != 4:
                raise ValueError(f"{split} images must be uint8 [N,C,H,W], got {images.dtype} {tuple(images.shape)}")
            if labels.dtype != torch.int64 or labels.shape != images.shape[:1]:
                raise ValueError(f"{split} labels must be int64 [N] matching the images, got {labels.dtype}")


def as_labels(values: object) -> torch.Tensor:
    """Labels of any integer array-like as an int64 CPU tensor."""
    return torch.as_tensor(values).to(torch.int64).reshape(-1)
