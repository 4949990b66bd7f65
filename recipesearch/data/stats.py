"""Per-channel mean and std of uint8 images, accumulated in chunks (in memory, or while filling the cache).

The sums are float64 sums of integers, exact below 2**53 (ImageNet at 224 px: ~4e15), so they do not
depend on the chunking or the order: the decode cache's statistics equal the in-memory path's bit for bit.
"""
from __future__ import annotations

import torch


class ChannelSums:
    """``add`` uint8 batches [B, C, H, W]; ``stats()`` gives (mean, std) per channel in 0..1 units."""

    def __init__(self, channels: int):
        self.total = torch.zeros(channels, dtype=torch.float64)
        self.total_sq = torch.zeros(channels, dtype=torch.float64)
        self.count = 0

    def add(self, images: torch.Tensor) -> None:
        c = images.shape[1]
        x = images.transpose(0, 1).reshape(c, -1).to(torch.float64)
        self.total += x.sum(1)
        self.total_sq += (x * x).sum(1)
        self.count += x.shape[1]

    def stats(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        count = max(1, self.count)
        mean = self.total / count
        std = (self.total_sq / count - mean * mean).clamp_min(0).sqrt()
        std = torch.where(std > 0, std, torch.full_like(std, 255.0))  # a constant channel: avoid dividing by 0
        return tuple((mean / 255).tolist()), tuple((std / 255).tolist())


def channel_stats(images: torch.Tensor, chunk: int = 4096) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-channel mean and std of uint8 images, in 0..1 units (float64 sums, chunked)."""
    sums = ChannelSums(images.shape[1])
    for start in range(0, images.shape[0], chunk):
        sums.add(images[start : start + chunk])
    return sums.stats()
