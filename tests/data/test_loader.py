"""BatchLoader: reproducibility, every sample once per epoch, batch counts, layout; eval_batches."""
from __future__ import annotations

import pytest
import torch

from recipesearch.data import BatchLoader, ImageTensors, eval_batches

MEAN, STD = (0.5,), (0.25,)


def _data(n: int = 50, size: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample i is an image filled with i (uint8) and labelled i, so batches reveal their indices."""
    labels = torch.arange(n)
    images = labels.to(torch.uint8).view(n, 1, 1, 1).expand(n, 1, size, size).contiguous()
    return images, labels


def _pixels(x: torch.Tensor) -> torch.Tensor:
    """Undo the normalisation: back to 0..255."""
    return ((x * STD[0] + MEAN[0]) * 255).round()


def test_same_seed_gives_identical_batches_and_epochs_differ():
    images, labels = _data()
    def make() -> BatchLoader:
        return BatchLoader(images, labels, 8, MEAN, STD, crop_padding=2, generator=torch.Generator().manual_seed(3))

    a, b = make(), make()
    epoch_a, epoch_b = list(a), list(b)
    assert len(epoch_a) == len(a) == 6  # drop_last: 50 // 8
    for (xa, ya), (xb, yb) in zip(epoch_a, epoch_b):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
    assert not torch.equal(next(iter(a))[1], epoch_a[0][1])  # the next epoch is reshuffled


def test_every_sample_exactly_once_without_drop_last():
    images, labels = _data(50)
    loader = BatchLoader(images, labels, 8, MEAN, STD, augment=False, drop_last=False,
                         generator=torch.Generator().manual_seed(0))
    batches = list(loader)
    assert len(batches) == len(loader) == 7 and len(batches[-1][1]) == 2
    seen = torch.cat([y for _, y in batches])
    assert sorted(seen.tolist()) == list(range(50)) and seen.tolist() != list(range(50))
    for x, y in batches:  # images travel with their labels
        assert x.dtype == torch.float32 and x.shape[1:] == (1, 6, 6)
        assert torch.equal(_pixels(x)[:, 0, 0, 0], y.float())


def test_augmentation_only_crops_and_flips():
    images, labels = _data(32)
    loader = BatchLoader(images, labels, 32, MEAN, STD, crop_padding=1, generator=torch.Generator().manual_seed(0))
    x, y = next(iter(loader))
    values = _pixels(x)
    # a crop of a constant image shows its value and possibly a zero border; never anything else
    for img, label in zip(values, y):
        assert set(img.unique().tolist()) <= {0.0, float(label)}
    hflip_off = BatchLoader(images, labels, 32, MEAN, STD, hflip=False, crop_padding=0)
    x, y = next(iter(hflip_off))
    assert torch.equal(_pixels(x), images[y].float())


def test_tiny_split_keeps_its_only_batch():
    images, labels = _data(5)
    loader = BatchLoader(images, labels, 8, MEAN, STD)
    assert len(loader) == 1 and len(next(iter(loader))[1]) == 5


def test_channels_last_and_image_size_and_from_split():
    images, labels = _data(8)
    images = images.expand(8, 3, 6, 6).contiguous()
    loader = BatchLoader.from_split(ImageTensors(images, labels), 4, (0.5,) * 3, (0.25,) * 3, channels_last=True)
    x, _ = next(iter(loader))
    assert x.is_contiguous(memory_format=torch.channels_last)
    assert loader.image_size == 6 and loader.num_samples == 8


def test_eval_batches_in_order_without_augmentation():
    images, labels = _data(10)
    batches = list(eval_batches(images, labels, 4, MEAN, STD))
    assert [len(y) for _, y in batches] == [4, 4, 2]
    assert torch.equal(torch.cat([y for _, y in batches]), labels)
    assert torch.equal(torch.cat([_pixels(x) for x, _ in batches]), images.float())


def test_rejects_mismatched_inputs():
    images, labels = _data(4)
    with pytest.raises(ValueError):
        BatchLoader(images, labels[:3], 2, MEAN, STD)
    with pytest.raises(ValueError):
        BatchLoader(images, labels, 0, MEAN, STD)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("generator_device", ["cpu", "cuda"])
def test_cuda_data_with_cpu_or_cuda_generator(generator_device):
    images, labels = _data(50)
    gen = torch.Generator(device=generator_device).manual_seed(0)
    loader = BatchLoader(images.cuda(), labels.cuda(), 8, MEAN, STD, crop_padding=1, drop_last=False, generator=gen)
    batches = list(loader)
    assert all(x.is_cuda and y.is_cuda for x, y in batches)
    assert sorted(torch.cat([y for _, y in batches]).tolist()) == list(range(50))


def _configured(seed: int = 4) -> BatchLoader:
    """A loader whose augmentation a method changed after it was built (translate, alternating flip)."""
    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (40, 1, 6, 6), generator=g, dtype=torch.uint8)
    loader = BatchLoader(images, torch.arange(40), 8, MEAN, STD, crop_padding=1,
                         generator=torch.Generator().manual_seed(seed))
    loader.crop_padding, loader.padding_mode = 2, "reflect"
    loader.first_epoch_flips = torch.rand(40, generator=g) < 0.5
    return loader


def test_position_carries_the_augmentation_and_the_epoch_to_a_fresh_loader():
    # A checkpoint's fresh loader is built from the recipe; what a method set at FIT_START comes from position().
    uncut = _configured()
    list(uncut)  # epoch 0
    batches = iter(uncut)  # epoch 1: the odd epoch mirrors the complement of epoch 0's images
    next(batches), next(batches)
    position = uncut.position()
    assert position["epoch"] == 1 and position["augmentation"]["padding_mode"] == "reflect"
    rest = list(batches) + list(uncut)  # the rest of epoch 1, then epoch 2
    fresh = BatchLoader(uncut.images, uncut.labels, 8, MEAN, STD, crop_padding=1,
                        generator=torch.Generator().manual_seed(99))
    resumed = list(fresh.resume(position)) + list(fresh)
    assert (fresh.crop_padding, fresh.padding_mode, fresh.epochs_begun) == (2, "reflect", 3)
    assert torch.equal(fresh.first_epoch_flips, uncut.first_epoch_flips)
    assert len(resumed) == len(rest)
    for (xa, ya), (xb, yb) in zip(rest, resumed):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)


def test_a_position_without_augmentation_resumes_with_the_loaders_own():
    # checkpoints written before position() held the augmentation: the loader keeps the recipe's settings
    loader = _configured()
    batches = iter(loader)
    next(batches)
    position = {k: v for k, v in loader.position().items() if k not in ("augmentation", "epoch")}
    fresh = BatchLoader(loader.images, loader.labels, 8, MEAN, STD, crop_padding=1)
    assert len(list(fresh.resume(position))) == len(loader) - 1
    assert (fresh.crop_padding, fresh.padding_mode, fresh.first_epoch_flips) == (1, "zeros", None)
