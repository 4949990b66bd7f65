"""The command line: train writes result.json; bad input is one line, exit 2, and writes nothing."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import call_cli

ROOT = Path(__file__).resolve().parents[1]
TINY = (Path(__file__).parent / "tiny_recipe.yaml").read_text()  # also test_malformed_inputs.py's


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The real thing: a separate process, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "recipesearch", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=300)


@pytest.fixture
def tiny_file(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


def test_train_writes_result_json(tiny_file, tmp_path, capsys):
    out = tmp_path / "out"
    proc = run_cli("train", str(tiny_file), "--out", str(out), "--set", "seed=3", "--quiet")
    assert proc.returncode == 0, proc.stderr
    result = json.loads((out / "result.json").read_text())
    for key in ("accuracy", "loss", "train_seconds", "throughput", "data_wait_fraction", "epochs", "steps",
                "hardware", "versions", "recipe_id"):
        assert key in result
    assert result["recipe"]["seed"] == 3 and result["accuracy"] > 0.3
    assert "torch" in result["versions"] and result["hardware"]["cpu_count"] >= 1
    # A second run into the same directory refuses to overwrite it (in-process: the refusal comes before any
    # training, and a second interpreter would only add its start-up).
    code, _, err = call_cli(capsys, "train", str(tiny_file), "--out", str(out), "--quiet")
    assert code == 2 and "--force" in err


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (("lr: 0.2", "lr: -0.2"), "optimizer.lr"),
        (("name: cnn", "name: alexnet9"), "model.name"),
        (("name: digits", "name: imagenet21k"), "data.name"),
        (("max_duration: 1", "max_duration: 1\nalgorithms: {hyperdrive: {}}"), "algorithms.hyperdrive"),
        (("max_duration: 1", "max_duration: 1\nalgorithms: {mixup: {alpha: fast}}"), "algorithms.mixup.alpha"),
        (("max_duration: 1", "max_duration: 1\nbudget: 0"), "budget"),
        (("max_duration: 1", "max_duration: 1\nalgorithms: {ema: {}, swa: {}}"), "cannot be combined"),
        (("max_duration: 1", "max_duration: -1"), "max_duration"),
    ],
)
def test_bad_recipe_is_one_line_exit_2_and_writes_nothing(capsys, tmp_path, edit, needle):
    path = tmp_path / "bad.yaml"
    path.write_text(TINY.replace(*edit))
    out = tmp_path / "out"
    code, _, err = call_cli(capsys, "train", str(path), "--out", str(out))
    assert code == 2
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


def test_bad_recipe_in_a_real_process_has_no_traceback(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(TINY.replace("lr: 0.2", "lr: -0.2"))
    proc = run_cli("train", str(path), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_missing_file_and_bad_set(capsys, tiny_file, tmp_path):
    code, _, err = call_cli(capsys, "train", str(tmp_path / "nope.yaml"))
    assert code == 2 and "file not found" in err
    code, _, err = call_cli(capsys, "train", str(tiny_file), "--set", "optimizer.lr")
    assert code == 2 and "--set" in err
    code, _, err = call_cli(capsys, "train", str(tiny_file), "--set", "batch_size=-3")
    assert code == 2 and "batch_size" in err


def test_unknown_command_is_exit_2(capsys):
    code, _, err = call_cli(capsys, "fly")
    assert code == 2 and err.startswith("error:")


def test_algorithms_lists_at_least_20(capsys):
    code, out, _ = call_cli(capsys, "algorithms", "--json")
    assert code == 0
    rows = json.loads(out)
    assert len(rows) >= 20
    assert all(r["description"] and r["citation"] for r in rows)
    names = {r["name"] for r in rows}
    assert {"mixup", "label_smoothing", "blurpool", "sam", "ema", "progressive_resizing"} <= names
