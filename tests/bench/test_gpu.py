"""bench/gpu.py without a GPU: its CIFAR-format files load through the real loader, it refuses to run
without CUDA (and bench.run_all skips it, keeping the saved results), and the saved results render."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # bench/ is a top-level folder next to recipesearch/, not an installed package
    sys.path.insert(0, str(ROOT))

import bench.gpu as gpu  # noqa: E402
import bench.run_all as run_all  # noqa: E402


def test_cifar_format_files_load_with_the_cifar10_loader(tmp_path):
    from recipesearch.data import DataSpec, get_dataset

    gpu.write_cifar_format(tmp_path / "cifar-10-batches-py", n_train=50, n_test=20)
    raw = get_dataset("cifar10")(DataSpec(name="cifar10", root=str(tmp_path)))
    assert raw.train_images.shape == (50, 3, 32, 32) and raw.test_images.shape == (20, 3, 32, 32)
    assert raw.train_images.dtype == torch.uint8 and int(raw.train_labels.max()) < 10


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without CUDA")
def test_without_cuda_it_refuses_and_run_all_skips_it_keeping_the_saved_results(monkeypatch, tmp_path, capsys):
    with pytest.raises(RuntimeError, match="needs a CUDA device"):
        gpu.run(quick=True)
    saved = []
    monkeypatch.setattr(run_all, "save_result", lambda name, result: saved.append(name))
    monkeypatch.setattr(run_all, "REPORTS", tmp_path)
    assert run_all.main(["--only", "gpu"]) == 0
    assert saved == [] and "gpu skipped: needs a CUDA device" in capsys.readouterr().out
    assert "## 10. GPU path" in (tmp_path / "benchmarks.md").read_text()


def test_the_saved_result_renders_its_tests_speedups_and_the_cifar_timing():
    result = json.loads((ROOT / "reports" / "bench" / "gpu.json").read_text())
    text = gpu.render(result)
    t = result["cuda_tests"]
    assert f"{t['counts']['passed']} passed" in text and "test_real_gpu_fit_has_no_sync" in text
    for s in result["fashion_mnist"]["speedups"]:
        assert f"seed {s['seed']}:" in text
    assert "s per epoch" in text and "time to 94% is not measured" in text


def test_speedups_are_read_per_seed_off_that_seeds_curves():
    runs = [{"seed": s, "arm": arm, "train_seconds": t, "accuracy": a}
            for s in (0, 1)
            for arm, t, a in (("baseline @ budget 2", 10.0, 0.90), ("baseline @ budget 5", 20.0, 0.92),
                              ("recipe @ budget 2", 5.0, 0.91), ("recipe @ budget 5", 10.0, 0.93 - 0.02 * s))]
    first, second = gpu._speedups(runs, 2)
    assert first["status"] == "interpolated" and 2.0 < first["speedup"] < 4.0
    assert second["status"] == "not reached"


def test_method_costs_render_best_of_runs_relative_to_the_whole_recipe():
    result = json.loads((ROOT / "reports" / "bench" / "gpu.json").read_text())
    runs = [{"seed": r, "arm": arm, "throughput": tp * (0.5 if r == 0 else 1.0)}
            for r in (0, 1) for arm, tp in (("baseline", 400.0), ("whole recipe", 100.0), ("without sam", 150.0),
                                            ("without ema", 102.0))]
    result["method_costs"] = {"arms": ["baseline", "whole recipe", "without sam", "without ema"], "runs": runs,
                              "repeats": 2}
    text = gpu.render(result)
    assert "| without sam | 150 | 1.50 |" in text and "| baseline | 400 | 4.00 |" in text
    assert "Costing over 5 %: sam (x1.50)." in text and "first run 0.50x" in text


def test_airbench_format_files_are_what_its_cifar_loader_reads(tmp_path):
    """airbench's CifarLoader (utils.py) loads ``cifar10/train.pt`` and permutes uint8 NHWC images to NCHW."""
    gpu.write_airbench_format(tmp_path, n_train=40, n_test=10)
    train = torch.load(tmp_path / "cifar10" / "train.pt")
    test = torch.load(tmp_path / "cifar10" / "test.pt")
    assert train["images"].shape == (40, 32, 32, 3) and train["images"].dtype == torch.uint8
    assert test["labels"].shape == (10,) and test["labels"].dtype == torch.int64 and int(test["labels"].max()) < 10
    assert train["classes"] == gpu.CIFAR_CLASSES and train["images"].permute(0, 3, 1, 2).shape == (40, 3, 32, 32)


def test_airbench_is_skipped_where_it_is_not_installed_and_its_timing_renders_beside_ours(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert "airbench is not installed" in gpu._airbench()["skipped"]
    result = json.loads((ROOT / "reports" / "bench" / "gpu.json").read_text())
    result["cifar"] = {**result["cifar"], "seconds_per_epoch": 0.66}
    result["airbench"] = {"seconds": 3.3, "epochs": 9.9, "seconds_per_epoch": 3.3 / 9.9, "version": "0.1.8"}
    text = gpu.render(result)
    assert "(PyPI airbench 0.1.8)" in text
    assert "3.30 s for 9.9 epochs (0.33 s per epoch" in text and "takes 1.98x its time per epoch" in text
    result["airbench"] = {"skipped": "airbench is not installed"}
    assert "not run (airbench is not installed)" in gpu.render(result)
