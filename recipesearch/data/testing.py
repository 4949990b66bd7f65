"""Writers of tiny datasets in the datasets' REAL on-disk formats, for tests (like ``torch.testing``).

- IDX (Fashion-MNIST / MNIST): big-endian int32 magic (2051 images, 2049 labels), one big-endian int32 per
  dimension, then the uint8 values; gzipped.
- CIFAR-10 python: Python-2 style pickles with bytes keys: data_batch_i has b"batch_label", b"labels"
  (list of int), b"data" (uint8 [n, 3072]: red plane, green plane, blue plane, each row-major), b"filenames";
  batches.meta has b"num_cases_per_batch", b"label_names", b"num_vis".
- CIFAR-10 binary: records of 1 label byte + 3072 pixel bytes; batches.meta.txt one name per line.
"""
from __future__ import annotations

import gzip
import pickle
import struct
from pathlib import Path

import numpy as np

CIFAR_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def write_idx(path: Path, array: np.ndarray) -> None:
    """``array`` (uint8) as a gzipped IDX file with the real header."""
    header = struct.pack(">I", 0x0800 + array.ndim) + b"".join(struct.pack(">I", d) for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + np.ascontiguousarray(array, dtype=np.uint8).tobytes())


def make_images(rng: np.random.Generator, n: int, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(0, 256, size=(n, *shape), dtype=np.uint8)


def write_fashion(root: Path, n_train: int = 40, n_test: int = 20, seed: int = 0) -> dict[str, np.ndarray]:
    """Four .gz IDX files in ``root``; returns the arrays written."""
    rng = np.random.default_rng(seed)
    arrays = {
        "train-images-idx3-ubyte": make_images(rng, n_train, (28, 28)),
        "train-labels-idx1-ubyte": (np.arange(n_train) % 10).astype(np.uint8),
        "t10k-images-idx3-ubyte": make_images(rng, n_test, (28, 28)),
        "t10k-labels-idx1-ubyte": (np.arange(n_test) % 10).astype(np.uint8),
    }
    root.mkdir(parents=True, exist_ok=True)
    for stem, array in arrays.items():
        write_idx(root / f"{stem}.gz", array)
    return arrays


def write_cifar_python(directory: Path, per_batch: int = 6, seed: int = 0) -> tuple[np.ndarray, ...]:
    """data_batch_1..5, test_batch, batches.meta; returns (train images [N,3,32,32], labels, test ...)."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    train_x, train_y = [], []
    for i in range(1, 7):
        images = make_images(rng, per_batch, (3, 32, 32))
        labels = [int(v) for v in rng.integers(0, 10, per_batch)]
        name = f"data_batch_{i}" if i <= 5 else "test_batch"
        batch = {
            b"batch_label": (f"training batch {i} of 5" if i <= 5 else "testing batch 1 of 1").encode(),
            b"labels": labels,
            b"data": images.reshape(per_batch, 3072),
            b"filenames": [f"img_{i}_{k}.png".encode() for k in range(per_batch)],
        }
        with open(directory / name, "wb") as f:
            pickle.dump(batch, f, protocol=2)
        if i <= 5:
            train_x.append(images)
            train_y += labels
        else:
            test_x, test_y = images, np.array(labels)
    meta = {b"num_cases_per_batch": per_batch, b"label_names": [n.encode() for n in CIFAR_NAMES], b"num_vis": 3072}
    with open(directory / "batches.meta", "wb") as f:
        pickle.dump(meta, f, protocol=2)
    return np.concatenate(train_x), np.array(train_y), test_x, test_y


def write_cifar_binary(directory: Path, per_batch: int = 6, seed: int = 1) -> tuple[np.ndarray, ...]:
    """data_batch_1..5.bin, test_batch.bin, batches.meta.txt; returns the arrays written."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        images = make_images(rng, per_batch, (3, 32, 32))
        labels = rng.integers(0, 10, per_batch).astype(np.uint8)
        records = np.concatenate([labels[:, None], images.reshape(per_batch, 3072)], axis=1)
        (directory / f"{name}.bin").write_bytes(records.tobytes())
        out.append((images, labels.astype(np.int64)))
    (directory / "batches.meta.txt").write_text("\n".join(CIFAR_NAMES) + "\n\n")
    train_x = np.concatenate([x for x, _ in out[:5]])
    train_y = np.concatenate([y for _, y in out[:5]])
    return train_x, train_y, out[5][0], out[5][1]


def write_imagefolder(root: Path, test_dir: str = "test", size: int = 12) -> dict[str, tuple[int, int, int]]:
    """Solid-colour PNGs: train/{blue,red}/ 3 each, ``test_dir``/{blue,red}/ 2 each; returns the colours."""
    from PIL import Image

    colours = {"red": (250, 10, 20), "blue": (5, 30, 240)}
    for split, count in (("train", 3), (test_dir, 2)):
        for cls, rgb in colours.items():
            folder = root / split / cls
            folder.mkdir(parents=True, exist_ok=True)
            for k in range(count):
                Image.new("RGB", (size + k, size), rgb).save(folder / f"{k}.png")
    return colours


NOISE_CLASSES = ("a", "b", "c")


def write_noise_imagefolder(root: Path, train: int = 12, test: int = 4, side: int = 20, seed: int = 0) -> Path:
    """Random RGB PNGs of ``side`` px, ``train``/``test`` per class under train/<c>/ and test/<c>/, each
    class with one channel darker (a signal to learn); returns ``root``."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    for split, count in (("train", train), ("test", test)):
        for cls in NOISE_CLASSES:
            (root / split / cls).mkdir(parents=True, exist_ok=True)
            for k in range(count):
                pixels = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
                pixels[..., NOISE_CLASSES.index(cls)] //= 4  # a learnable signal: one channel darker per class
                Image.fromarray(pixels).save(root / split / cls / f"{k}.png")
    return root
