"""Batched image ops shared by RandAugment and TrivialAugment: each sample gets its own op and strength.

Ops work on float batches in [0, 1] (``to_unit`` / ``from_unit`` convert from and to the normalised
batches the loader yields). Vectorisation: samples are grouped by the op they drew, so the Python loop
runs over the ~14 ops, never over samples; every geometric op (rotate, shear, translate) is one affine
matrix per sample, so all of them share a single ``affine_grid`` + ``grid_sample`` call.
Op definitions and ranges follow torchvision's RandAugment / TrivialAugmentWide (Cubuk et al. 2020;
Müller & Hutter 2021) and Composer's augmentation primitives (MosaicML).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

Stats = Sequence[float] | torch.Tensor

GEOMETRIC = ("rotate", "shear_x", "shear_y", "translate_x", "translate_y")
ENHANCE = ("brightness", "color", "contrast", "sharpness")
ALL_OPS = ("identity", "autocontrast", "equalize", "posterize", "solarize", *ENHANCE, *GEOMETRIC)
# Ops whose strength has a direction (rotate left/right, brighter/darker): the sign is drawn at random.
SIGNED = frozenset({*GEOMETRIC, *ENHANCE})


@dataclass(frozen=True)
class OpSpace:
    """The ops a policy chooses from and what strength 1.0 means for each of them."""

    ops: tuple[str, ...] = ALL_OPS
    rotate_degrees: float = 30.0
    shear: float = 0.3  # shear factor (x' = x + s * y)
    translate: float = 1 / 3  # fraction of the image side ...
    translate_max_pixels: float = math.inf  # ... but never more than this many pixels
    enhance: float = 0.9  # brightness/color/contrast/sharpness factor = 1 ± enhance * strength
    posterize_bits: float = 4.0  # bits dropped from 8 at strength 1

    def __post_init__(self) -> None:
        unknown = set(self.ops) - set(ALL_OPS)
        if unknown:
            raise ValueError(f"unknown ops {sorted(unknown)}; allowed: {', '.join(ALL_OPS)}")


# RandAugment: Composer's ranges (rotate 30°, shear 0.3, translate a third of the image, enhance 0.1..1.9),
# posterize down to 4 bits as in torchvision (Composer's 0..4 bits blanks most images).
RANDAUGMENT_SPACE = OpSpace()
# TrivialAugment Wide (Müller & Hutter 2021, Table 1): the "wide" ranges, translate up to 32 pixels.
WIDE_SPACE = OpSpace(rotate_degrees=135.0, shear=0.99, translate=1.0, translate_max_pixels=32.0,
                     enhance=0.99, posterize_bits=6.0)


def rand_device(x: torch.Tensor, generator: torch.Generator | None) -> torch.device:
    """Random numbers are drawn where the generator lives, then moved to the batch."""
    return generator.device if generator is not None else x.device


def _stats(values: Stats, x: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(values, dtype=x.dtype, device=x.device).reshape(1, -1, 1, 1)


def to_unit(x: torch.Tensor, mean: Stats | None, std: Stats | None) -> torch.Tensor:
    """Normalised batch → pixel values in [0, 1]; ``mean=None`` means the batch already is in [0, 1]."""
    if mean is None or std is None:
        return x.clamp(0, 1)
    return (x * _stats(std, x) + _stats(mean, x)).clamp_(0, 1)


def from_unit(x: torch.Tensor, mean: Stats | None, std: Stats | None) -> torch.Tensor:
    if mean is None or std is None:
        return x
    return (x - _stats(mean, x)) / _stats(std, x)


# ---- colour ops: (x [G, C, H, W] in [0, 1], value [G]) -> same shape ---------------------------------


def _col(v: torch.Tensor) -> torch.Tensor:
    return v.reshape(-1, 1, 1, 1)


def _blend(a: torch.Tensor, b: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    """PIL's ImageEnhance: factor 0 gives ``b`` (the degenerate image), 1 gives ``a``, >1 extrapolates."""
    return (b + _col(factor) * (a - b)).clamp_(0, 1)


def grayscale(x: torch.Tensor) -> torch.Tensor:
    """ITU-R 601 luma for RGB, the channel mean otherwise (a 1-channel image is its own grayscale)."""
    if x.shape[1] == 3:
        w = torch.tensor([0.299, 0.587, 0.114], dtype=x.dtype, device=x.device).reshape(1, 3, 1, 1)
        return (x * w).sum(1, keepdim=True)
    return x.mean(1, keepdim=True)


def brightness(x: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    return _blend(x, torch.zeros_like(x), factor)


def color(x: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    return _blend(x, grayscale(x).expand_as(x), factor)


def contrast(x: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    return _blend(x, grayscale(x).mean((2, 3), keepdim=True).expand_as(x), factor)


def sharpness(x: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    """Blend with PIL's SMOOTH-filtered image; the one-pixel border keeps the original, as in PIL."""
    if x.shape[-1] < 3 or x.shape[-2] < 3:
        return x
    c = x.shape[1]
    kernel = torch.ones(3, 3, dtype=x.dtype, device=x.device)
    kernel[1, 1] = 5.0
    kernel = (kernel / kernel.sum()).expand(c, 1, 3, 3)
    smooth = x.clone()
    smooth[..., 1:-1, 1:-1] = F.conv2d(x, kernel, groups=c)
    return _blend(x, smooth, factor)


def autocontrast(x: torch.Tensor, value: torch.Tensor | None = None) -> torch.Tensor:
    """Stretch each channel of each image to the full [0, 1] range (flat channels stay as they are)."""
    lo = x.amin((2, 3), keepdim=True)
    hi = x.amax((2, 3), keepdim=True)
    span = hi - lo
    flat = span <= 1e-6
    return torch.where(flat, x, (x - lo) / torch.where(flat, torch.ones_like(span), span))


def equalize(x: torch.Tensor, value: torch.Tensor | None = None) -> torch.Tensor:
    """Histogram equalisation per image and channel on 256 levels: one ``scatter_add`` and a lookup.

    The textbook CDF mapping (cdf - cdf_min) / (n - cdf_min), not PIL's rounding-exact variant.
    """
    g, c, h, w = x.shape
    levels = (x * 255).round_().long().reshape(g * c, h * w)
    hist = torch.zeros(g * c, 256, dtype=x.dtype, device=x.device)
    hist.scatter_add_(1, levels, torch.ones_like(levels, dtype=x.dtype))
    cdf = hist.cumsum(1)
    # cdf_min: the count of the darkest level present, i.e. the smallest non-zero cdf value
    cdf_min = torch.where(cdf > 0, cdf, torch.full_like(cdf, float(h * w))).amin(1, keepdim=True)
    denom = h * w - cdf_min
    lut = (cdf - cdf_min) / denom.clamp(min=1)
    out = lut.gather(1, levels).reshape(g, c, h, w)
    single_level = (denom <= 0).reshape(g, c, 1, 1)  # one grey level only: nothing to equalise
    return torch.where(single_level, x, out)


def posterize(x: torch.Tensor, bits: torch.Tensor) -> torch.Tensor:
    """Keep the top ``bits`` bits of each 8-bit value (per image)."""
    step = torch.pow(2.0, 8 - _col(bits).to(x.dtype))
    return torch.floor(torch.floor(x * 255) / step) * step / 255


def solarize(x: torch.Tensor, threshold: torch.Tensor) -> torch.Tensor:
    """Invert every value at or above ``threshold`` (per image)."""
    return torch.where(x >= _col(threshold), 1 - x, x)


def identity(x: torch.Tensor, value: torch.Tensor | None = None) -> torch.Tensor:
    return x


# ---- geometric ops: one affine matrix per sample, one grid_sample for all of them --------------------


def affine_theta(op: torch.Tensor, value: torch.Tensor, height: int, width: int,
                 ops: tuple[str, ...]) -> torch.Tensor:
    """[G, 2, 3] matrices mapping output to input coordinates (``affine_grid``'s convention).

    ``op`` indexes ``ops``; ``value`` is degrees (rotate), the shear factor, or pixels (translate).
    Coordinates are normalised to [-1, 1] per axis, so rotation and shear are corrected for the aspect
    ratio (r = H / W) to act on square pixels; everything turns about the image centre.
    """
    g = op.shape[0]
    theta = torch.zeros(g, 2, 3, dtype=value.dtype, device=value.device)
    theta[:, 0, 0] = 1
    theta[:, 1, 1] = 1
    r = height / width

    def is_(name: str) -> torch.Tensor:
        return op == ops.index(name) if name in ops else torch.zeros_like(op, dtype=torch.bool)

    rad = torch.deg2rad(value)
    cos, sin = torch.cos(rad), torch.sin(rad)
    rot = is_("rotate")
    theta[:, 0, 0] = torch.where(rot, cos, theta[:, 0, 0])
    theta[:, 0, 1] = torch.where(rot, -sin * r, theta[:, 0, 1])
    theta[:, 1, 0] = torch.where(rot, sin / r, theta[:, 1, 0])
    theta[:, 1, 1] = torch.where(rot, cos, theta[:, 1, 1])
    theta[:, 0, 1] = torch.where(is_("shear_x"), value * r, theta[:, 0, 1])
    theta[:, 1, 0] = torch.where(is_("shear_y"), value / r, theta[:, 1, 0])
    # shifting the content by +t pixels means sampling the input at x - t
    theta[:, 0, 2] = torch.where(is_("translate_x"), -2 * value / width, theta[:, 0, 2])
    theta[:, 1, 2] = torch.where(is_("translate_y"), -2 * value / height, theta[:, 1, 2])
    return theta


def warp(x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Apply per-sample affine maps; nearest sampling and black fill, torchvision's defaults for these ops."""
    grid = F.affine_grid(theta.to(x.dtype), list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="nearest", padding_mode="zeros", align_corners=False)


_COLOR_OPS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "identity": identity, "autocontrast": autocontrast, "equalize": equalize, "posterize": posterize,
    "solarize": solarize, "brightness": brightness, "color": color, "contrast": contrast, "sharpness": sharpness,
}


def op_values(op: torch.Tensor, strength: torch.Tensor, sign: torch.Tensor, space: OpSpace,
              height: int, width: int) -> torch.Tensor:
    """Turn a strength in [0, 1] (and a ±1 sign) into each op's own parameter, per sample.

    rotate: degrees; shear: factor; translate: pixels along the op's axis; enhance ops: blend factor;
    posterize: bits kept; solarize: threshold; parameter-free ops get 0.
    """
    names = space.ops
    scale = torch.zeros(len(names), dtype=strength.dtype, device=strength.device)
    for i, name in enumerate(names):
        if name == "rotate":
            scale[i] = space.rotate_degrees
        elif name in ("shear_x", "shear_y"):
            scale[i] = space.shear
        elif name in ("translate_x", "translate_y"):
            side = width if name == "translate_x" else height
            scale[i] = min(space.translate * side, space.translate_max_pixels)
        elif name in ENHANCE:
            scale[i] = space.enhance
    signed = torch.tensor([n in SIGNED for n in names], device=strength.device)[op]
    value = strength * torch.where(signed, sign, torch.ones_like(sign)) * scale[op]
    for name in names:
        mask = op == names.index(name)
        if name in ENHANCE:
            value = torch.where(mask, 1 + value, value)
        elif name == "posterize":
            value = torch.where(mask, 8 - torch.round(strength * space.posterize_bits), value)
        elif name == "solarize":
            value = torch.where(mask, 1 - strength, value)
    return value


def apply_ops(x: torch.Tensor, op: torch.Tensor, value: torch.Tensor, ops: tuple[str, ...]) -> torch.Tensor:
    """Apply op ``ops[op[i]]`` with parameter ``value[i]`` to sample ``i`` of a [0, 1] batch.

    1) sort samples by op so every op sees one contiguous group (a single host sync for the counts),
    2) colour ops run once per group, 3) all geometric samples share one warp.
    """
    geo_ids = [i for i, n in enumerate(ops) if n in GEOMETRIC]
    # kernel id: colour ops keep their index, every geometric op maps to one shared kernel
    kernel = op.clone()
    geo_kernel = len(ops)
    if geo_ids:
        is_geo = torch.zeros(len(ops), dtype=torch.bool, device=op.device)
        is_geo[geo_ids] = True
        kernel = torch.where(is_geo[op], torch.full_like(op, geo_kernel), op)
    order = torch.argsort(kernel)
    counts = torch.bincount(kernel, minlength=len(ops) + 1).tolist()
    xs, ks, vs = x[order], op[order], value[order]
    pieces, start = [], 0
    for k, n in enumerate(counts):
        if n == 0:
            continue
        part = xs[start:start + n]
        if k == geo_kernel:
            theta = affine_theta(ks[start:start + n], vs[start:start + n], x.shape[-2], x.shape[-1], ops)
            part = warp(part, theta)
        elif ops[k] != "identity":
            part = _COLOR_OPS[ops[k]](part, vs[start:start + n])
        pieces.append(part)
        start += n
    out = torch.empty_like(x)
    out[order] = torch.cat(pieces)
    return out


def augment_round(x: torch.Tensor, space: OpSpace, strength_low: float, strength_high: float,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """One random op per sample from ``space`` at a strength ~ U(low, high) with a random sign."""
    b = x.shape[0]
    dev = rand_device(x, generator)
    op = torch.randint(len(space.ops), (b,), generator=generator, device=dev).to(x.device)
    u = torch.rand(b, generator=generator, device=dev).to(x.device, torch.float32)
    strength = strength_low + (strength_high - strength_low) * u
    sign = torch.randint(2, (b,), generator=generator, device=dev).to(x.device, torch.float32) * 2 - 1
    value = op_values(op, strength, sign, space, x.shape[-2], x.shape[-1])
    return apply_ops(x, op, value, space.ops)
