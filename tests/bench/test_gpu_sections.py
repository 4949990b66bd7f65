"""bench/gpu.py's issue-30 sections without a GPU: the side-by-side analysis and alternation, the overhead arms and
their pairing, the airbench child's protocol (the CPU stand-in, and the real server script over a stub airbench),
the cut search space, packing's bookkeeping, the renderer on synthetic results, and the dry run end to end on CPU
stand-ins (slow)."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import bench.gpu as gpu
import bench.gpu_airbench as ga
import bench.gpu_carry as gpu_carry
import bench.gpu_data as gpu_data
import bench.gpu_overhead as go
import bench.gpu_render as gr
import bench.gpu_repro as grepro
import bench.gpu_search as gs

ROOT = Path(__file__).resolve().parents[2]

KEYS = ("overhead.trainer_vs_bare", "overhead.with_hooks", "reproduction.time_to_94_ratio",
        "reproduction.max_accuracy_gap_pp", "search.best_time_to_94_vs_airbench")


def _curve_runs(seeds=(0, 1)):
    """airbench: 0.3 s an epoch, 0.93 / 0.945 / 0.95 at 3 / 5 / 7 epochs; ours 0.4 s an epoch, 0.2 pp lower."""
    runs = []
    for s in seeds:
        for e, acc in ((3.0, 0.93), (5.0, 0.945), (7.0, 0.95)):
            runs.append({"seed": s, "side": "airbench", "epochs": e, "train_seconds": 0.3 * e, "accuracy": acc})
            runs.append({"seed": s, "side": "ours", "epochs": e, "train_seconds": 0.4 * e, "accuracy": acc - 0.002})
    return runs


def test_analyse_reads_time_to_94_off_the_medians_and_the_gap_at_each_epoch_count():
    got = ga.analyse(_curve_runs(), [0, 1])
    t = got["time_to_target"]
    assert 0.9 < t["airbench"]["seconds"] < 1.5 and 1.2 < t["ours"]["seconds"] < 2.0
    assert got["time_to_94_ratio"] == pytest.approx(t["ours"]["seconds"] / t["airbench"]["seconds"])
    assert [g["epochs"] for g in got["gaps"]] == [3.0, 5.0, 7.0]
    assert all(g["gap_pp"] == pytest.approx(-0.2) for g in got["gaps"])
    assert got["max_accuracy_gap_pp"] == pytest.approx(0.2)
    assert [p["seed"] for p in got["time_to_target_per_seed"]] == [0, 1]
    lonely = ga.analyse([r for r in _curve_runs() if r["side"] == "ours"], [0, 1])  # airbench's side did not run
    assert lonely["gaps"] == [] and math.isnan(lonely["max_accuracy_gap_pp"]) and math.isnan(lonely["time_to_94_ratio"])


def test_alternate_swaps_the_sides_per_seed_rotates_the_epochs_and_stops_before_a_seed_that_would_overrun():
    calls, clock = [], {"left": 100.0}

    class Child:
        def run(self, epochs, seed):
            calls.append(("airbench", seed, epochs))
            return {"epochs": epochs, "train_seconds": 0.3 * epochs, "accuracy": 0.9}

    def ours(epochs, seed):
        calls.append(("ours", seed, epochs))
        clock["left"] -= 40  # each seed costs 80 s of the 100 left
        return {"train_seconds": 0.4 * epochs, "accuracy": 0.9}

    got = ga.alternate(ours, Child(), [3.0, 5.0], [10, 11, 12], lambda: clock["left"], log=lambda line: None)
    assert calls[:4] == [("airbench", 10, 3.0), ("airbench", 10, 5.0), ("ours", 10, 3.0), ("ours", 10, 5.0)]
    assert calls[4:] == [("ours", 11, 5.0), ("ours", 11, 3.0), ("airbench", 11, 5.0), ("airbench", 11, 3.0)]
    assert got["seeds"] == [10, 11] and got["skipped"].startswith("1 of 3 seed(s) not run")
    alone = ga.alternate(lambda e, s: {"train_seconds": 1.0, "accuracy": 0.9}, None, [3.0], [1], lambda: 1e9,
                         log=lambda line: None)
    assert {r["side"] for r in alone["runs"]} == {"ours"}


def test_at_epochs_dilates_the_budget_as_a_search_does():
    got = ga.at_epochs({"max_duration": 9.9, "budget": 1.0, "seed": 0, "x": 1}, 4.0, 7)
    assert got["budget"] == pytest.approx(4.0 / 9.9) and got["seed"] == 7 and got["x"] == 1


STUB = {
    "__init__.py": """
        import torch
        torch.cuda.synchronize = lambda *a: None  # the stub runs on the CPU
        from .lib_airbench94 import train94
        """,
    "lib_airbench94.py": """
        import torch
        hyp = {"opt": {"batch_size": 16}, "aug": {"flip": True, "translate": 2}, "net": {"tta_level": 2}}
        from .utils import CifarLoader
        def train94(train_loader, epochs, verbose=True):
            test = CifarLoader("cifar10", train=False, batch_size=2000)  # handed the child's own
            assert test.train is False and test.reused
            if epochs > 5:
                raise RuntimeError("too long")
            return torch.nn.Linear(1, 1)
        """,
    "utils.py": """
        import torch
        MADE = []
        class CifarLoader:
            def __init__(self, path, train=True, batch_size=500, aug=None, altflip=False):
                self.data = torch.load(f"{path}/{'train' if train else 'test'}.pt")
                self.train, self.reused = train, bool(MADE)
                MADE.append(self)
        def evaluate(model, loader, tta_level=0):
            return 0.5 if tta_level == 2 else 0.0
        """,
}


def test_the_airbench_server_script_answers_each_request_over_a_stub_airbench(tmp_path):
    """AIRBENCH_SERVER itself (what runs on the GPU) over a stub package: warm-up, the ready line, one answer per
    request, train94's own test loader replaced by the child's, a failing run answered with its error."""
    for name, text in STUB.items():
        (tmp_path / "pkg" / "airbench").mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / "airbench" / name).write_text(textwrap.dedent(text))
    gpu_data.write_airbench_format(tmp_path / "data", gpu_data.synthetic(8, 4))
    proc = subprocess.run([sys.executable, "-c", ga.AIRBENCH_SERVER], cwd=tmp_path / "data", text=True,
                          input='{"epochs": 4, "seed": 1}\n{"epochs": 9.9, "seed": 2}\n', capture_output=True,
                          env={"PYTHONPATH": str(tmp_path / "pkg"), "PATH": "/usr/bin:/bin"}, timeout=120)
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    assert proc.returncode == 0, proc.stderr
    assert lines[0] == {"ready": True, "version": "unknown", "what": "airbench train94"}
    assert lines[1]["epochs"] == 4 and lines[1]["accuracy"] == 0.5 and lines[1]["train_seconds"] >= 0
    assert lines[2]["epochs"] == 9.9 and lines[2]["error"] == "RuntimeError: too long"
    assert math.isnan(lines[2]["accuracy"])


def test_a_child_that_dies_is_a_row_with_the_reason(tmp_path):
    child = ga.AirbenchChild(tmp_path, stand_in=True, start_timeout=60)  # no cifar10/*.pt there: it dies at start
    try:
        got = child.run(1.0, 0)
    finally:
        child.close()
    assert math.isnan(got["accuracy"]) and "No such file" in got["error"]


def test_noop_hooks_sit_on_ten_events_half_declining_and_the_pairing_of_rounds():
    hooks = go.noop_hooks(10)
    assert len({next(iter(h.events)) for h in hooks}) == 10 and sum(h.declines for h in hooks) == 5
    runs = [{"round": r, "arm": arm, "seconds": s, "images_per_s": 100 / s}
            for r, times in enumerate(((1.0, 1.02, 1.05), (2.0, 2.0, 2.2))) for arm, s in zip(go.ARMS, times)]
    got = go.summarise(runs, {"name": "x"}, None)
    assert got["ratio"]["trainer"]["median"] == pytest.approx((1 / 1.02 + 1.0) / 2)
    assert got["ratio"]["trainer+10 hooks"]["n"] == 2 and got["images_per_s"]["bare"]["median"] == pytest.approx(75)


def test_overhead_measures_every_arm_on_the_same_images(tmp_path):
    gpu_data.write_both(tmp_path, gpu_data.synthetic(64, 16))
    data = {"name": "cifar10", "root": str(tmp_path), "val_fraction": 0.0}
    got = go.measure({"airbench94": {"name": "airbench94", "widths": [4, 4, 4]}}, data, steps=2, batch=16, repeats=1,
                     device="cpu", precision="fp32", left=lambda: 1e9, log=lambda line: None)
    runs = got["nets"]["airbench94"]["runs"]
    assert [r["arm"] for r in runs] == list(go.ARMS) and {r["images"] for r in runs} == {32}
    assert math.isfinite(got["trainer_vs_bare"]) and math.isfinite(got["with_hooks"])
    assert got["timer"].startswith("perf")


def test_cuda_graphs_are_refused_for_shape_changing_methods_and_without_cuda():
    assert grepro.cuda_graphs_problem({"algorithms": {"translate": {}}}, cuda=True) is None
    assert "progressive_resizing" in grepro.cuda_graphs_problem({"algorithms": {"progressive_resizing": {}}}, cuda=True)
    assert grepro.cuda_graphs_problem({"algorithms": {}}, cuda=False) == "CUDA graphs need CUDA"


def test_the_cut_space_loads_with_its_sizes_and_the_base_recipe_inline(tmp_path):
    from recipesearch.recipe import load_recipe
    from recipesearch.space import load_space

    base = load_recipe(ROOT / "recipes" / "cifar10_airbench94.yaml").to_dict()
    base["data"] = {**base["data"], "root": str(tmp_path)}
    sizes = gpu.SIZES["gpu"]["search"]
    space = load_space(gs.space_file(tmp_path, base, sizes, confirm=True, trials=8, gpus=1.0))
    assert space.budgets == [0.4, 0.6] and space.baseline.seeds == 2 and not space.baseline.tune_lr
    assert space.confirm.enabled and space.confirm.seeds == 2 and space.confirm.top_k == 1 and space.trials == 8
    assert set(space.algorithms) >= {"patch_whitening", "lookahead", "translate"}  # the space's own methods
    off = load_space(gs.space_file(tmp_path / "off", base, sizes, confirm=False, trials=4, gpus=0.5))
    assert not off.confirm.enabled and off.resources.gpus == 0.5


def test_packing_levels_and_their_totals_with_stand_in_trials(monkeypatch, tmp_path):
    def fake_pack(k, base, sizes, seed0, timeout):
        trials = [{"images_per_s": 1000.0 / k, "samples": 2000.0, "train_seconds": 2.0 * k, "train_start": 0.0,
                   "train_end": 2.0 * k} for _ in range(k)]
        return {"trials": trials, "errors": [], "span": 2.0 * k * 0.8, "window": None}

    monkeypatch.setattr(gs, "pack_processes", fake_pack)
    got = gs.packing({}, {"levels": [1, 2, 4]}, "processes", cuda=False, workdir=tmp_path, left=lambda: 1e9,
                     log=lambda line: None)
    assert list(got) == ["1", "2", "4"] and got["4"]["n_trials"] == 4
    assert got["2"]["images_per_s_per_trial"]["median"] == 500 and got["2"]["images_per_s_total"] == pytest.approx(1250)
    assert gs.best_level(got) == 1 and gs.best_level({"2": {"skipped": "x"}}) == 1
    short = gs.packing({}, {"levels": [1, 2]}, "processes", cuda=False, workdir=tmp_path, left=lambda: 0.0,
                       log=lambda line: None)
    assert short["2"]["skipped"].startswith("out of time")


def test_the_util_sampler_stand_in_samples_the_machine(monkeypatch):
    import time

    with gs.UtilSampler(cuda=False, interval=0.05) as util:
        time.sleep(0.3)
    got = util.summary()
    assert got["backend"].startswith("CPU busy share") and got["n"] >= 2 and 0 <= got["mean"] <= 100


def _synthetic_result():
    overhead_runs = [{"round": r, "arm": arm, "seconds": s, "images_per_s": 1e5 / s}
                     for r in range(3) for arm, s in zip(go.ARMS, (1.0, 1.01, 1.04))]
    net = go.summarise(overhead_runs, {"name": "resnet9"}, None)
    repro = {**ga.analyse(_curve_runs(), [0, 1]), "runs": _curve_runs(), "seeds": [0, 1], "epochs": [3.0, 5.0, 7.0],
             "skipped": None, "recipe": "recipes/cifar10_airbench94.yaml", "data": "d", "goals": grepro.GOALS,
             "airbench": {"version": "0.1.8", "what": "airbench train94"},
             "compile": {"epochs": 4.0, "modes": {
                 "torch.compile": {"params": {}, "warm_up": {"train_seconds": 41.0}, "runs": [], "errors": [],
                                   "on_over_off": {"median": 0.8, "n": 1}},
                 "torch.compile + CUDA graphs": {"params": {}, "skipped": "out of time"}}}}
    level = {"trials_per_gpu": 2, "method": "processes", "n_trials": 4, "images_per_s_per_trial": {"median": 900.0},
             "images_per_s_total": 1700.0, "images_per_s_over_wall": 1200.0, "errors": [],
             "gpu_utilisation": {"backend": "nvidia-smi", "mean": 91.0, "median": 95.0}}
    return {"gpu": "Fake GPU", "torch": "2", "overhead": {"nets": {"resnet9": net}, "steps": 60, "batch": 1024,
                                                          "precision": "bf16", "timer": "CUDA events",
                                                          "goals": go.GOALS, "trainer_vs_bare": 1 / 1.01,
                                                          "with_hooks": 1 / 1.04},
            "reproduction": repro, "packing": {"1": {**level, "trials_per_gpu": 1}, "2": level,
                                               "4": {"skipped": "out of time: 3 s left"}}}


def test_the_renderer_reads_the_keys_and_marks_goals_on_synthetic_results():
    result = _synthetic_result()
    rows = {r[0].strip("`"): r for r in gr.glance_rows(result)}
    assert list(rows) == list(KEYS)
    assert rows["overhead.trainer_vs_bare"][2:] == ["0.990", ">= 0.97", "met"]
    assert rows["overhead.with_hooks"][4] == "met" and rows["reproduction.max_accuracy_gap_pp"][2] == "0.200"
    ratio = result["reproduction"]["time_to_94_ratio"]
    assert rows["reproduction.time_to_94_ratio"][4] == ("met" if ratio <= 1.1 else "not met")
    assert rows["search.best_time_to_94_vs_airbench"][2:] == ["–", "<= 0.9 (confirmed)", "not measured"]
    assert gr.curve_rows(result["reproduction"])[0] == ["3", "0.90", "0.9300", "1.20", "0.9280", "-0.20"]
    assert gr.absence(result, "search") == ("not run yet", None)
    assert gr.absence({"search": {"skipped": "x", "finished": "t"}}, "search") == ("skipped", "x")
    assert gr.absence({"search": {"error": "E"}}, "search") == ("failed", "E")
    assert gr.absence(result, "packing") is None
    assert gr.packing_rows(result["packing"]) == [
        ["1", "4", "900", "1700", "1200", "91 % (95 median)", "processes"],
        ["2", "4", "900", "1700", "1200", "91 % (95 median)", "processes"],
        ["4", "–", "–", "–", "–", "–", "skipped: out of time: 3 s left"]]
    assert gr.compile_rows(result["reproduction"]["compile"]) == [
        ["torch.compile", "41.0", "0.800", "ok"], ["torch.compile + CUDA graphs", "–", "–", "skipped: out of time"]]
    versus = ga.analyse(_curve_runs([5]), [5])
    result["search"] = {"space": "s.yaml", "budgets": [0.4, 0.6], "proposals": 4, "confirm_seeds": 2,
                        "executor": "inprocess", "trials_per_gpu": 1, "trials": [{}] * 11, "confirmation_runs": 3,
                        "run": {"wall_seconds": 61.0}, "gpu_utilisation": {"mean": 88.0},
                        "headline": {"number": 7, "how": "unconfirmed", "confirmed": False, "algorithms": "a+b"},
                        "versus": versus, "best_time_to_94_vs_airbench": 0.85}
    assert gr.glance_rows(result)[-1][2:] == ["0.850", "<= 0.9 (confirmed)", "met (recipe not confirmed)"]
    assert gr.curve_rows(versus)[-1] == ["7", "2.10", "0.9500", "2.80", "0.9480", "-0.20"]  # the search's recipe
    assert [why for _, why in gr.shown_sections(result)] == [None] * len(gr.NEW)  # every section has results
    text = gr.render(result)
    for header in ("| net | bare img/s |", "| epochs | airbench s |", "| mode | first run s |", "| trials per GPU |"):
        assert header in text  # each section's renderer ran


def test_the_device_command_fits_the_tool_and_keeps_what_a_cut_run_measured():
    cmd = gpu_carry.COMMAND
    assert len(cmd) <= 2000 and "PYTHONUNBUFFERED=1" in cmd and "--results $OUT/gpu.json" in cmd
    assert "tee $OUT/gpu.log" in cmd and "RECIPESEARCH_DATA=$PWD/runs/gpu_data" in cmd
    assert gpu_carry.CARRY == [".whl", "runs/gpu_data"]
    budget = float(cmd.split("--budget-seconds ")[1].split()[0])
    assert budget <= gpu.BUDGET["gpu"] <= 540 < float(cmd.split("timeout ")[1].split()[0]) < 600
    plan = gpu.PLAN["gpu"]
    assert sum(plan[k] for k in ("setup", *gpu.REQUIRED)) <= budget


@pytest.mark.system
@pytest.mark.timeout(900)  # ~1 min; several checks in one run, on a busy machine
def test_the_dry_run_of_every_section_writes_the_keys(tmp_path, monkeypatch, capsys):
    """The dry run end to end, as ``python -m bench.gpu --dry-run --only ... --results FILE`` (its main, in this
    process): overhead, reproduction, packing and the cut search on CPU stand-ins, in one run (one set of
    images, one stand-in airbench child for the reproduction and the search). Covers what were two dry runs:

    - the cheap sections: every key of issue 30 item 7 that overhead and reproduction own is there, both sides
      of the reproduction ran on both seeds, the compile modes (eager backend ran, CUDA graphs refused);
    - the stand-in airbench child on the airbench-format files: it says it is ready, and answers each
      (epochs, seed) request with a row (was a test of its own, a second child);
    - packing at 1 and 2 trials per process-packed 'GPU' and the cut search with confirmation: each level ran
      its trials without error, the search finished with a headline and its recipe beside airbench;
    - the results file is written after each section as it finishes (partial until the last), and at the end."""
    from bench import common

    out = tmp_path / "dry.json"
    saved = []

    def spy(path, part):
        saved.append((Path(path), [k for k in gpu.REQUIRED if k in part], part.get("partial")))
        return common.write_json(path, part)

    monkeypatch.setattr(gpu, "write_json", spy)
    # a budget no loaded machine runs out of: no section is cut by the time plan (its own tests are above)
    gpu.main(["--dry-run", "--only", "overhead,reproduction,packing,search", "--results", str(out),
              "--budget-seconds", "3000"])
    log = capsys.readouterr().out
    result = json.loads(out.read_text())
    assert "time plan" in log and result["dry_run"] and not result["partial"]
    assert saved == [(out, list(gpu.REQUIRED[:n]), n < 4) for n in range(1, 5)] + [(out, list(gpu.REQUIRED), False)]
    assert set(result["plan"]["sections"]) == set(gpu.REQUIRED)
    assert not [k for k in gpu.REQUIRED if result[k].get("error") or result[k].get("skipped")], log[-3000:]

    # overhead and reproduction
    assert set(result["overhead"]["nets"]) == {"resnet9", "airbench94"}
    for key in KEYS[:4]:
        assert isinstance(gr.value_at(result, key), float)
    repro = result["reproduction"]
    assert {r["side"] for r in repro["runs"]} == {"airbench", "ours"} and repro["seeds"] == [9000, 9001]
    assert repro["airbench"]["what"].startswith("CPU stand-in") and len(repro["gaps"]) == 2
    # the stand-in child spoke the protocol on the airbench-format files: ready, timed, one row per request
    assert repro["airbench"]["start_seconds"] > 0
    child_rows = [r for r in repro["runs"] if r["side"] == "airbench"]
    assert child_rows and all(0 <= r["accuracy"] <= 1 and r["train_seconds"] > 0 and "error" not in r
                              for r in child_rows), child_rows
    assert {r["epochs"] for r in child_rows} == set(repro["epochs"])
    modes = repro["compile"]["modes"]
    assert modes["torch.compile + CUDA graphs"]["skipped"] == "CUDA graphs need CUDA"
    assert modes["torch.compile (eager backend)"]["runs"] and not modes["torch.compile (eager backend)"]["errors"]

    # packing and the search
    assert list(k for k in result["packing"] if k != "finished") == ["1", "2"]
    assert all(result["packing"][k]["n_trials"] == int(k) and not result["packing"][k]["errors"] for k in ("1", "2"))
    s = result["search"]
    assert s["executor"] == "inprocess" and s["run"]["returncode"] == 0 and len(s["trials"]) >= 4
    assert s["headline"]["number"] is not None and "best_time_to_94_vs_airbench" in s
    assert {r["side"] for r in s["versus"]["runs"]} == {"airbench", "ours"}
    assert np.isfinite(s["versus"]["max_accuracy_gap_pp"])
