"""The package as a user installs it: a wheel built from this tree, installed into a fresh venv with no index
(its dependencies are this environment's, reached through a .pth file: no download, no 1.5-minute torch install),
then ``recipesearch search digits_quick --trials 4`` (the shipped one-minute try: 2 baseline runs, 2 proposals)
from an empty folder finds the shipped space inside the wheel and trains with the wheel's code (in-process: Ray
workers import the package from the same site-packages; shipping code to Ray is tests/test_example_byo.py's)."""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.system
@pytest.mark.timeout(400)
def test_the_wheel_carries_the_shipped_spaces_and_searches_from_an_empty_folder(tmp_path):
    source = tmp_path / "source"  # a copy: building writes build/ and *.egg-info, never into the clone
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "recipesearch", source / "recipesearch", ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", "--wheel-dir", str(dist), str(source)], check=True, timeout=180)
    wheel = next(dist.glob("recipesearch-*.whl"))

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-index",
                    "--no-deps", str(wheel)], check=True, timeout=180)

    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    where = subprocess.run([str(python), "-c", "import recipesearch; print(recipesearch.__file__)"], cwd=empty,
                           env=env, check=True, capture_output=True, text=True).stdout.strip()
    assert Path(where).is_relative_to(venv), where  # the wheel's copy, not the clone's
    listed = subprocess.run([str(venv / "bin" / "recipesearch"), "spaces"], cwd=empty, env=env, check=True,
                            capture_output=True, text=True).stdout
    assert "digits " in listed and "digits_quick " in listed and str(venv) in listed

    searched = subprocess.run([str(venv / "bin" / "recipesearch"), "search", "digits_quick", "--trials", "4",
                               "--out", "runs/digits", "--quiet", "--executor", "inprocess"], cwd=empty, env=env,
                              capture_output=True, text=True, timeout=300)
    assert searched.returncode == 0, searched.stdout[-2000:] + searched.stderr[-3000:]
    with open(empty / "runs" / "digits" / "trials.csv", newline="") as f:
        assert [t["state"] for t in csv.DictReader(f)] == ["COMPLETE"] * 4
    assert (empty / "runs" / "digits" / "index.html").is_file()
