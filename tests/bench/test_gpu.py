"""bench/gpu.py without a GPU: the files it writes load through our loader and as airbench reads them, the earlier
side-by-side (bench/gpu_extra.py) and its analysis on stand-ins for the training, it refuses to run without CUDA
(and bench.run_all skips it, keeping the saved results), the saved results render, sections save as they finish
and the time plan skips what would overrun. The new sections: tests/bench/test_gpu_sections.py."""
from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

import bench.gpu as gpu
import bench.gpu_airbench as gpu_airbench
import bench.gpu_data as gpu_data
import bench.gpu_extra as gpu_extra
import bench.gpu_render as gpu_render
import bench.run_all as run_all

ROOT = Path(__file__).resolve().parents[2]


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


def test_the_saved_result_renders_each_of_its_sections():
    result = json.loads((ROOT / "reports" / "bench" / "gpu.json").read_text())
    shown = dict(gpu_render.shown_sections(result))
    for key in gpu_render.NEW:  # a section not run yet says so; one that ran shows its results
        assert (shown[key] is None) == (key in result), key
    for key in ("cuda_tests", "side_by_side", "fashion_mnist", "method_costs"):  # the earlier ones, when saved
        assert (key in shown and shown[key] is None) == (key in result), key
    sb = result.get("side_by_side") or {}
    if "runs" in sb:
        assert ["airbench", "9.9"] in [r[:2] for r in gpu_extra.side_median_rows(sb["medians"])]
        assert any(r[0].startswith("our final accuracy: ") for r in gpu_extra.side_target_rows(sb["targets"]))
    assert "| key | what | value | goal | status |" in gpu.render(result)


def test_speedups_are_read_per_seed_off_that_seeds_curves():
    runs = [{"seed": s, "arm": arm, "train_seconds": t, "accuracy": a}
            for s in (0, 1)
            for arm, t, a in (("baseline @ budget 2", 10.0, 0.90), ("baseline @ budget 5", 20.0, 0.92),
                              ("recipe @ budget 2", 5.0, 0.91), ("recipe @ budget 5", 10.0, 0.93 - 0.02 * s))]
    first, second = gpu_extra._speedups(runs, 2)
    assert first["status"] == "interpolated" and 2.0 < first["speedup"] < 4.0
    assert second["status"] == "not reached"
    runs = [{**r, "throughput": 100.0 if r["arm"].startswith("recipe") else 80.0} for r in runs]
    verdict = gpu_extra.fashion_verdict({"runs": runs, "speedups": [first, second]})
    assert verdict["median_speedup"] == first["speedup"] and verdict["verdict"] == "faster"  # seed 1 has none
    assert verdict["rate"] == pytest.approx(1.25)
    assert gpu_extra.fashion_verdict({"runs": runs, "speedups": [second]})["verdict"] == "not comparable"


def test_method_costs_are_best_of_runs_relative_to_the_whole_recipe():
    runs = [{"seed": r, "arm": arm, "throughput": tp * (0.5 if r == 0 else 1.0)}
            for r in (0, 1) for arm, tp in (("baseline", 400.0), ("whole recipe", 100.0), ("without sam", 150.0),
                                            ("without ema", 102.0))]
    ratios = gpu_extra.method_cost_ratios({"arms": ["baseline", "whole recipe", "without sam", "without ema"],
                                           "runs": runs, "repeats": 2})
    assert ratios["without sam"] == {"images_per_s": 150.0, "ratio": 1.5}
    assert ratios["baseline"] == {"images_per_s": 400.0, "ratio": 4.0}
    assert gpu_extra.costly_methods(ratios) == [("sam", 1.5)]  # ema's 2 % is under the 5 % that counts


def _images(n_train: int, n_test: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, (n_train, 32, 32, 3), dtype=np.uint8), rng.integers(0, 10, n_train),
            rng.integers(0, 256, (n_test, 32, 32, 3), dtype=np.uint8), rng.integers(0, 10, n_test))


def test_cifar_format_files_load_with_the_cifar10_loader_pixel_for_pixel(tmp_path):
    from recipesearch.data import DataSpec, get_dataset

    images = _images(53, 20)
    gpu_data.write_cifar_format(tmp_path / "cifar-10-batches-py", images)
    raw = get_dataset("cifar10")(DataSpec(name="cifar10", root=str(tmp_path)))
    assert raw.train_images.shape == (53, 3, 32, 32) and raw.test_images.shape == (20, 3, 32, 32)
    assert torch.equal(raw.train_images, torch.from_numpy(images[0]).permute(0, 3, 1, 2))
    assert raw.train_labels.tolist() == images[1].tolist() and raw.test_labels.tolist() == images[3].tolist()


def test_airbench_format_files_are_what_its_cifar_loader_reads(tmp_path):
    """airbench's CifarLoader (utils.py) loads ``cifar10/train.pt`` and permutes uint8 NHWC images to NCHW."""
    images = _images(40, 10)
    gpu_data.write_airbench_format(tmp_path, images)
    train = torch.load(tmp_path / "cifar10" / "train.pt")
    test = torch.load(tmp_path / "cifar10" / "test.pt")
    assert train["images"].shape == (40, 32, 32, 3) and train["images"].dtype == torch.uint8
    assert torch.equal(train["images"], torch.from_numpy(images[0]))
    assert test["labels"].dtype == torch.int64 and test["labels"].tolist() == images[3].tolist()
    assert train["classes"] == gpu_data.CIFAR_CLASSES


def test_fashion_as_cifar_pads_each_grey_image_to_32_and_repeats_it_over_rgb():
    from recipesearch.data import DataSpec, get_dataset

    try:
        fm = get_dataset("fashion_mnist")(DataSpec(name="fashion_mnist"))
    except Exception as exc:  # noqa: BLE001 - the data is optional on a machine
        pytest.skip(f"Fashion-MNIST not found: {exc}")
    train_x, train_y, test_x, test_y = gpu_data.fashion_as_cifar()
    assert train_x.shape == (60000, 32, 32, 3) and test_x.shape == (10000, 32, 32, 3) and train_x.dtype == np.uint8
    assert np.array_equal(train_x[:, 2:30, 2:30, 1], fm.train_images[:, 0].numpy())
    assert (train_x[:, :2] == 0).all() and (train_x[:, :, 30:] == 0).all()
    assert np.array_equal(test_x[..., 0], test_x[..., 2]) and test_y.tolist() == fm.test_labels.tolist()


def test_a_failing_airbench_child_keeps_its_finished_runs_and_marks_the_rest(monkeypatch, tmp_path):
    done = json.dumps({"epochs": 2.0, "train_seconds": 1.0, "accuracy": 0.8, "eval_seconds": 0.1})
    calls = []

    def fake_run(cmd, **kwargs):
        calls.append((cmd, kwargs["cwd"]))
        return subprocess.CompletedProcess(cmd, 1, stdout=done + "\n", stderr="Traceback...\nRuntimeError: CUDA oom\n")

    monkeypatch.setattr(gpu_extra.subprocess, "run", fake_run)
    runs = gpu_extra._airbench_runs(tmp_path, [2.0, 4.0, 9.9], seed=7)
    assert [r["epochs"] for r in runs] == [2.0, 4.0, 9.9] and runs[0]["accuracy"] == 0.8
    assert all(math.isnan(r["accuracy"]) and r["error"] == "RuntimeError: CUDA oom" for r in runs[1:])
    (cmd, cwd), = calls
    assert cwd == tmp_path and json.loads(cmd[-1]) == {"epochs": [2.0, 4.0, 9.9], "seed": 7}
    compile(gpu_extra.AIRBENCH_SCRIPT, "airbench_script", "exec")  # the child's script is valid Python


def test_side_by_side_trains_both_sides_on_the_same_files_alternating_per_seed(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr("importlib.metadata.version", lambda name: "0.1.8")
    monkeypatch.setattr(gpu_extra, "fashion_as_cifar", lambda: _images(30, 10))
    order, ours_data = [], []

    def fake_airbench(workdir, epochs, seed):
        assert (workdir / "cifar10" / "train.pt").exists() and (workdir / "cifar-10-batches-py" / "test_batch").exists()
        order.append(("airbench", seed, list(epochs)))
        return [{"epochs": e, "train_seconds": 0.3 * e, "accuracy": 0.80 + 0.01 * e} for e in epochs]

    def fake_fit(data, source):
        ours_data.append(data)
        e = data["max_duration"]
        if data["seed"] != gpu_extra.SEED_OFFSET + 99:
            order.append(("ours", data["seed"], e))
        return {"accuracy": 0.78 + 0.012 * e, "train_seconds": 0.5 * e}

    monkeypatch.setattr(gpu_extra, "_airbench_runs", fake_airbench)
    monkeypatch.setattr(gpu_extra, "fit_or_nan", fake_fit)
    sb = gpu_extra.side_by_side(2)
    assert ours_data[0]["max_duration"] == 1 and ours_data[0]["seed"] == gpu_extra.SEED_OFFSET + 99  # warm-up first
    assert all(d["data"]["val_fraction"] == 0.0 and d["data"]["name"] == "cifar10" for d in ours_data)
    assert order[0] == ("airbench", gpu_extra.SEED_OFFSET, [2.0, 4.0, 6.0, 9.9])  # seed 0: airbench first, its 9.9
    assert [o[2] for o in order[1:5]] == [2.0, 4.0, 6.0, 10.0] and order[1][1] == gpu_extra.SEED_OFFSET
    seed1 = gpu_extra.SEED_OFFSET + 1
    assert order[5:] == [("ours", seed1, e) for e in (4.0, 6.0, 10.0, 2.0)] + [  # seed 1: ours first
        ("airbench", seed1, [4.0, 6.0, 9.9, 2.0])]
    assert len(sb["runs"]) == 16 and sb["airbench_version"] == "0.1.8" and "30 train / 10 test" in sb["data"]
    # airbench's final accuracy 0.899 at 2.97 s; ours gets there between 6 (0.852) and 10 epochs (0.90)
    final, = (t for t in sb["targets"] if t["name"] == "airbench's final accuracy")
    om = final["on_medians"]
    assert final["accuracy"] == pytest.approx(0.899) and om["airbench"]["seconds"] == pytest.approx(2.97)
    assert 4.0 < om["ours"]["seconds"] < 5.0 and om["ratio"] > 1 and len(final["per_seed"]) == 2
    records, = (t for t in sb["targets"] if t["name"] == "the records' measure")
    assert records["accuracy"] == 0.94 and math.isnan(records["on_medians"]["ratio"])  # neither side gets to 94 %
    ours_final, = (t for t in sb["targets"] if t["name"] == "our final accuracy")  # 0.90: past airbench's best
    assert math.isnan(ours_final["on_medians"]["airbench"]["seconds"])
    rows = gpu_extra.side_median_rows(sb["medians"])
    assert ["airbench", "9.9", "2.97", "0.8990", "0.300"] in rows and ["ours", "10", "5.00", "0.9000", "0.500"] in rows
    targets = {r[0]: r[1:] for r in gpu_extra.side_target_rows(sb["targets"])}
    assert targets["airbench's final accuracy: 89.90%"][:3] == ["2.97", f"{om['ours']['seconds']:.2f}",
                                                                 f"{om['ratio']:.2f}x"]
    assert targets["the records' measure: 94.00%"] == ["not reached", "not reached", "–", "–, –"]
    gap = gpu_extra.side_gap(sb["medians"])
    assert gap["per_epoch"] == pytest.approx(0.5 / 0.3) and gap["first_epochs"] == 2  # 0.5 s an epoch against 0.3 s
    assert gap["gaps_pp"] == pytest.approx([-1.6, 0.1]) and not gap["step_cost"]  # not the cost of a step alone
    assert gpu_extra.side_gap([m for m in sb["medians"] if m["side"] == "ours"]) is None


def test_times_to_an_accuracy_mark_a_target_met_at_the_first_run_as_an_upper_bound():
    rows = [{"side": "airbench", "train_seconds": 1.0, "accuracy": 0.95}, {"side": "airbench", "train_seconds": 2.0,
                                                                          "accuracy": 0.96},
            {"side": "ours", "train_seconds": 2.0, "accuracy": 0.90}, {"side": "ours", "train_seconds": 8.0,
                                                                      "accuracy": 0.94},
            {"side": "ours", "train_seconds": math.nan, "accuracy": math.nan, "error": "x"}]
    got = gpu_airbench.times_to(0.94, rows)
    assert got["airbench"] == {"seconds": 1.0, "upper_bound": True}
    assert got["ours"]["seconds"] == pytest.approx(8.0) and not got["ours"]["upper_bound"]
    assert got["ratio"] == pytest.approx(8.0)
    row, = gpu_extra.side_target_rows([{"name": "t", "accuracy": 0.94, "on_medians": got, "per_seed": [got]}])
    assert row[1:3] == ["≤ 1.00", "8.00"]


def test_side_by_side_is_skipped_without_airbench(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    sb = gpu_extra.side_by_side(1)
    assert "airbench is not installed" in sb["skipped"] and sb["skipped"] in gpu_extra.side_text(sb)


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeContext:
    """bench.gpu.Context without images or children: the plan's clock, a device, a close()."""

    closed = False

    def __init__(self, dry, sizes, budget, workdir, packing, log=print):
        self.t0 = gpu.clock()
        self.deadline, self.data_what, self.packing, self.device = self.t0 + budget, "fake images", "processes", "cpu"

    def left(self):
        return self.deadline - gpu.clock()

    def close(self):
        FakeContext.closed = True


def _fake_plan(monkeypatch, seconds):
    """Sections that take ``seconds[key]`` on the fake clock and record the time they were allowed."""
    clock = FakeClock()
    monkeypatch.setattr(gpu, "clock", clock)
    monkeypatch.setattr(gpu, "Context", FakeContext)
    monkeypatch.setattr(gpu, "environment", lambda: {})
    monkeypatch.setitem(gpu.PLAN, "dry", {"setup": 0, "overhead": 10, "reproduction": 40, "packing": 20, "search": 20,
                                          "cuda_tests": 10})
    allowed = {}

    def section(key):
        def measure(ctx, left, *args):
            allowed[key] = (left(), args)
            if seconds[key] is None:
                raise RuntimeError("broken section")
            clock.now += seconds[key]
            return {"value": key}
        return measure

    for key in gpu.SECTIONS:
        monkeypatch.setitem(gpu.SECTIONS, key, (key, section(key)))
    return allowed


def test_run_saves_after_each_section_and_the_plan_skips_what_would_overrun(monkeypatch):
    allowed = _fake_plan(monkeypatch, {"overhead": 30, "reproduction": 30, "packing": 25, "search": 10,
                                       "cuda_tests": 1})
    saved = []
    result = gpu.run(dry_run=True, budget=100, previous={"method_costs": {"old": True}}, on_section=saved.append)
    # overhead overran its 10 s; reproduction then gets 100 - 30 - (20 + 20) kept for the later required sections
    assert allowed["overhead"][0] == 20 and allowed["reproduction"][0] == 30
    assert allowed["packing"][0] == 20 and allowed["search"][0] == 15  # what packing's overrun left
    assert allowed["search"][1] == ({"value": "packing", "finished": result["packing"]["finished"]},)
    assert "cuda_tests" not in allowed and result["cuda_tests"]["skipped"] == "time plan: 5 s left for it, 10 s planned"
    assert [sorted(k for k in s if k in gpu.SECTIONS) for s in saved][-1] == [
        "cuda_tests", "method_costs", "overhead", "packing", "reproduction", "search"]  # merged into previous
    assert [s["partial"] for s in saved] == [True, True, True, True, False] and not result["partial"]
    plan = result["plan"]["sections"]
    assert plan["overhead"] == {"planned": 10, "seconds": 30, "skipped": None}
    assert plan["cuda_tests"]["skipped"].startswith("time plan") and FakeContext.closed


def test_a_required_section_without_half_its_plan_is_skipped_and_a_broken_one_does_not_stop_the_others(monkeypatch):
    allowed = _fake_plan(monkeypatch, {"overhead": None, "reproduction": 75, "packing": 5, "search": 5,
                                       "cuda_tests": 0})
    result = gpu.run(dry_run=True, budget=100, previous={}, only=["overhead", "reproduction", "packing", "search"])
    assert result["overhead"]["error"] == "RuntimeError: broken section"
    # reproduction overran by 35 s: packing gets 100 - 75 - 20 = 5 s, under half its 20: skipped
    assert result["packing"]["skipped"] == "time plan: 5 s left for it, 20 s planned" and "packing" not in allowed
    assert allowed["search"][0] == 25 and result["search"]["value"] == "search"


def test_main_merges_into_the_results_file_and_a_gpu_run_writing_elsewhere_carries_the_committed_sections(
        monkeypatch, tmp_path, capsys):
    committed = tmp_path / "committed.json"
    committed.write_text(json.dumps({"name": "gpu", "method_costs": {"old": True}, "overhead": {"old": True}}))
    monkeypatch.setattr(gpu, "RESULTS", committed)
    monkeypatch.setattr(gpu, "render", lambda result: "rendered")
    asked = []

    def fake_run(previous, on_section, only, **kwargs):
        asked.append((only, kwargs["dry_run"]))
        part = {**previous, "overhead": {"new": True}, "partial": False}
        on_section(part)
        return part

    monkeypatch.setattr(gpu, "run", fake_run)
    out = tmp_path / "out" / "gpu.json"  # the device's $OUT: nothing there yet
    gpu.main(["--results", str(out), "--only", "overhead"])
    saved = json.loads(out.read_text())
    assert saved["method_costs"] == {"old": True} and saved["overhead"] == {"new": True}
    assert asked == [(["overhead"], False)]
    dry = tmp_path / "dry.json"
    dry.write_text(json.dumps({"search": {"stale": True}}))
    gpu.main(["--dry-run", "--results", str(dry)])  # a dry run without --only starts afresh
    assert "search" not in json.loads(dry.read_text())
    with pytest.raises(SystemExit) as exc:
        gpu.main(["--only", "overhead,bogus"])
    assert exc.value.code == 2 and "unknown section(s) bogus" in capsys.readouterr().err
