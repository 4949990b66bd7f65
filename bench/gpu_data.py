"""The images of bench/gpu.py: Fashion-MNIST shaped as CIFAR-10, written where our loader and airbench's read it.

No CIFAR-10 reaches the lent GPU machine (no network there, none on the machines that send it work), so every
comparison with airbench runs on real images of CIFAR-10's shape instead: Fashion-MNIST (60000 train, 10000
test) padded to 32x32 and repeated over 3 channels, written in CIFAR-10's python layout (our ``cifar10``
loader) and as airbench's ``CifarLoader`` cache (``cifar10/{train,test}.pt``). Fashion-MNIST itself is found as
``recipesearch.data`` finds it: ``$RECIPESEARCH_DATA/fashion_mnist`` (what the GPU command carries:
``python -m bench.gpu_carry`` copies the Debian package's four files to ``runs/gpu_data/fashion_mnist``), the
Debian package ``dataset-fashion-mnist``, torchvision's cache. Where none has it (a test machine without the
package), ``images(..., synthetic_ok=True)`` falls back to random pixels and says so.
"""
from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np

Images = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # train x (N,32,32,3) uint8, train y, test x, test y
CIFAR_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def fashion_as_cifar() -> Images:
    """Fashion-MNIST shaped as CIFAR-10: each 28x28 grey image padded with 2 black pixels a side to 32x32 and
    repeated over 3 channels; uint8 images (N, 32, 32, 3) and int64 labels, train then test. Real images that
    both airbench and our loader read, where CIFAR-10 itself cannot be had."""
    import torch

    from recipesearch.data import DataSpec, get_dataset

    raw = get_dataset("fashion_mnist")(DataSpec(name="fashion_mnist"))

    def rgb(x: torch.Tensor) -> np.ndarray:
        return torch.nn.functional.pad(x, (2, 2, 2, 2)).expand(-1, 3, -1, -1).permute(0, 2, 3, 1).contiguous().numpy()

    return rgb(raw.train_images), raw.train_labels.numpy(), rgb(raw.test_images), raw.test_labels.numpy()


def synthetic(n_train: int, n_test: int, seed: int = 0) -> Images:
    """Random pixels and labels of CIFAR-10's shape (nothing to learn: a stand-in that only exercises code)."""
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, (n_train, 32, 32, 3), dtype=np.uint8), rng.integers(0, 10, n_train),
            rng.integers(0, 256, (n_test, 32, 32, 3), dtype=np.uint8), rng.integers(0, 10, n_test))


def images(n_train: int | None = None, n_test: int | None = None, synthetic_ok: bool = False) -> tuple[Images, str]:
    """(images, what they are): Fashion-MNIST as CIFAR-10, its first ``n_train`` / ``n_test`` images when given
    (a stratified cut is not needed: Fashion-MNIST's files are shuffled), or random pixels when Fashion-MNIST
    is not found and ``synthetic_ok``."""
    try:
        train_x, train_y, test_x, test_y = fashion_as_cifar()
        what = "Fashion-MNIST as 32x32 RGB in CIFAR-10's layout"
    except Exception as exc:  # noqa: BLE001 - DataNotFoundError, or a broken file: say so and stand in
        if not synthetic_ok:
            raise
        train_x, train_y, test_x, test_y = synthetic(n_train or 1000, n_test or 200)
        what = f"random pixels of CIFAR-10's shape (Fashion-MNIST not found: {str(exc)[:120]})"
    train_x, train_y = train_x[:n_train], train_y[:n_train]
    test_x, test_y = test_x[:n_test], test_y[:n_test]
    return (train_x, train_y, test_x, test_y), f"{what}, {len(train_x)} train / {len(test_x)} test images"


def write_cifar_format(directory: Path, data: Images) -> None:
    """``(train images, train labels, test images, test labels)``, images uint8 (N, 32, 32, 3), in CIFAR-10's
    python layout (five training batches, one test batch; rows of 3072 bytes, red plane then green then blue)."""
    train_x, train_y, test_x, test_y = data
    directory.mkdir(parents=True, exist_ok=True)
    parts = np.array_split(np.arange(len(train_x)), 5)
    batches = [*((f"data_batch_{i + 1}", train_x[idx], train_y[idx]) for i, idx in enumerate(parts)),
               ("test_batch", test_x, test_y)]
    for name, x, y in batches:
        batch = {b"data": np.ascontiguousarray(x.transpose(0, 3, 1, 2)).reshape(len(x), 3072),
                 b"labels": [int(v) for v in y]}
        with open(directory / name, "wb") as f:
            pickle.dump(batch, f)


def write_airbench_format(directory: Path, data: Images) -> None:
    """The same images as airbench's CifarLoader caches CIFAR-10: ``cifar10/{train,test}.pt`` holding uint8
    images (N, 32, 32, 3), int64 labels and the class names."""
    import torch

    train_x, train_y, test_x, test_y = data
    (directory / "cifar10").mkdir(parents=True, exist_ok=True)
    for name, x, y in (("train", train_x, train_y), ("test", test_x, test_y)):
        torch.save({"images": torch.from_numpy(np.ascontiguousarray(x)), "labels": torch.from_numpy(y.astype(np.int64)),
                    "classes": CIFAR_CLASSES}, directory / "cifar10" / f"{name}.pt")


def write_both(directory: Path, data: Images) -> dict[str, Any]:
    """Both layouts under ``directory``: ``cifar-10-batches-py/`` (our loader's ``data.root: directory``) and
    ``cifar10/*.pt`` (airbench's CifarLoader run with ``directory`` as its working directory)."""
    write_cifar_format(directory / "cifar-10-batches-py", data)
    write_airbench_format(directory, data)
    return {"root": str(directory), "n_train": int(len(data[0])), "n_test": int(len(data[2]))}
