"""Here, before a device run of bench/gpu.py: what the lent GPU machine lacks, put where the device tool carries it.

    python -m bench.gpu_carry            # .whl/*.whl and runs/gpu_data/fashion_mnist/; prints sizes and the command

The lent machine has PyTorch, NumPy, pandas, SciPy, PyYAML, rich and cloudpickle, but not pydantic, Optuna (with
SQLAlchemy, Alembic, Mako, colorlog) or airbench, and nothing can be fetched there; nor Fashion-MNIST. So:
- ``WHEELS`` (the versions this checkout's environment runs, for CPython 3.12 on manylinux x86-64, the machine's)
  are downloaded into ``.whl/`` (git-ignored), airbench 0.1.8 built into a wheel from its sdist (PyPI has no
  wheel of it); the command installs them with ``pip --no-index --no-deps --target /tmp/site``.
- Fashion-MNIST's four .gz files (the Debian package ``dataset-fashion-mnist``, or wherever ``recipesearch.data``
  finds them) are copied to ``runs/gpu_data/fashion_mnist/`` (git-ignored); the command points
  ``RECIPESEARCH_DATA`` there.
Ray is not carried: its wheel (79 MB) alone is over the 64 MiB the device tool carries, so packing runs as k
processes per GPU (``bench/gpu_search.py``) and the search with the in-process executor.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from bench.common import ROOT

WHEEL_DIR = ROOT / ".whl"
DATA_DIR = ROOT / "runs" / "gpu_data"
# distributions the GPU path imports (an import audit of the dry run) that the machine's image does not hold
WHEELS = ("pydantic", "pydantic_core", "annotated-types", "typing-inspection", "typing_extensions", "optuna",
          "alembic", "SQLAlchemy", "Mako", "colorlog")
AIRBENCH = "airbench==0.1.8"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64")
CARRY = [".whl", "runs/gpu_data"]
LIMIT = 64 * 2**20  # what the device tool carries: the working tree and the carried paths together

# One line for the device tool (its command limit is 2,000 characters): install the wheels, point the data at
# the carried copy, run the plan into $OUT (saved section by section, so a cut-short run keeps what it measured),
# then render it.
COMMAND = (
    "python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl"
    " && export PYTHONPATH=/tmp/site:$PWD RECIPESEARCH_DATA=$PWD/runs/gpu_data PYTHONUNBUFFERED=1"
    " && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader;"
    " set -o pipefail; timeout 575 python3 -m bench.gpu --results $OUT/gpu.json --budget-seconds 540 2>&1"
    " | tee $OUT/gpu.log; python3 -m bench.gpu --render --results $OUT/gpu.json > $OUT/gpu.md; ls -la $OUT"
)


def download_wheels() -> list[Path]:
    WHEEL_DIR.mkdir(exist_ok=True)
    specs = [f"{name}=={metadata.version(name)}" for name in WHEELS]
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
                    "3.12", "--implementation", "cp", *platforms, "-d", str(WHEEL_DIR), *specs], check=True)
    if not list(WHEEL_DIR.glob("airbench-*.whl")):
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(WHEEL_DIR), AIRBENCH], check=True)
    return sorted(WHEEL_DIR.glob("*.whl"))


def copy_data() -> Path:
    from recipesearch.data import DataSpec
    from recipesearch.data.fashion_mnist import DEBIAN_DIR, FILES
    from recipesearch.data.registry import candidate_dirs

    target = DATA_DIR / "fashion_mnist"
    target.mkdir(parents=True, exist_ok=True)
    for name in FILES.values():
        for d in [*candidate_dirs(DataSpec(name="fashion_mnist"), [DEBIAN_DIR]), DEBIAN_DIR]:
            src = d / f"{name}.gz"
            if src.exists() and src.resolve() != (target / src.name).resolve():
                shutil.copy2(src, target / src.name)
                break
        if not (target / f"{name}.gz").exists():
            raise SystemExit(f"Fashion-MNIST's {name}.gz not found (apt-get install dataset-fashion-mnist)")
    return target


def tree_bytes() -> int:
    """What the device tool sends: tracked and untracked-not-ignored files, plus the carried paths."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    files = {ROOT / f for f in listed if f} | {p for c in CARRY for p in (ROOT / c).rglob("*")}
    return sum(p.stat().st_size for p in files if p.is_file())


def main() -> None:
    wheels = download_wheels()
    data = copy_data()
    size = tree_bytes()
    print(f"{len(wheels)} wheels in {WHEEL_DIR.relative_to(ROOT)}/, Fashion-MNIST in {data.relative_to(ROOT)}/")
    print(f"working tree + carry: {size / 2**20:.1f} MiB of {LIMIT / 2**20:.0f} MiB" +
          ("" if size < LIMIT else "  <- OVER: the device tool will refuse it"))
    print(f"device run: carry={CARRY}, timeout_s=600, command ({len(COMMAND)} characters):\n{COMMAND}")


if __name__ == "__main__":
    main()
