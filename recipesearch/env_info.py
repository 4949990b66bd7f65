"""Hardware and library versions recorded next to every measured time (timings mean nothing without)."""
from __future__ import annotations

import os
import platform
from functools import cache
from importlib import metadata
from typing import Any

_LIBRARIES = ("recipesearch", "torch", "torchvision", "numpy", "optuna", "ray", "pandas")


@cache
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def hardware_class(device: str) -> str:
    """What a trial's time was measured on, for comparing like with like: the GPU's name for a CUDA
    device, else the CPU model (two nodes with the same CPU model are one class; thread counts are the
    space's, the same for every trial)."""
    if device.startswith("cuda"):
        import torch

        index = int(device.split(":")[1]) if ":" in device else torch.cuda.current_device()
        return f"GPU {torch.cuda.get_device_name(index)}"
    return f"CPU {cpu_model()}"


def library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for lib in _LIBRARIES:
        try:
            versions[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            continue
    return versions


def hardware() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "gpu": None,
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["gpu_count"] = torch.cuda.device_count()
    return info
