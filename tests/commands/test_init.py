"""``recipesearch init``: a starter space and base recipe that fit the model (every method applied to it first,
the misfits left out with their reason) and search without edits, on the example project's own model and on a
torchvision model."""
from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from recipesearch.engine.method_fit import check_methods_fit
from recipesearch.errors import UserError
from recipesearch.space import load_space
from tests.conftest import call_cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "byo"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The real command in its own process, from ``cwd`` (a user's project folder); nothing on PYTHONPATH."""
    console_script = Path(sys.executable).with_name("recipesearch")
    command = [str(console_script)] if console_script.exists() else [sys.executable, "-m", "recipesearch"]
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    return subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240)


def _trials(run: Path) -> list[dict[str, str]]:
    with open(run / "trials.csv", newline="") as f:
        return list(csv.DictReader(f))


def _check_commented(path: Path) -> None:
    for line in path.read_text().splitlines():
        assert line.startswith("#") or " # " in line, f"{path.name}: a line without its comment: {line!r}"


@pytest.mark.system
def test_the_byo_models_space_leaves_out_what_cannot_apply_and_searches_with_no_failed_trial(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE / "atelier", project / "atelier")  # the user's package, in the user's folder
    made = _cli("init", "--model", "atelier.nets:convmixer", "--data", "atelier.data:digits",
                "--set", "model.width=16", "--set", "model.depth=2", "--set", "model.kernel_size=3",
                "--set", "model.patch_size=2", "--set", "data.size=16", "--set", "optimizer.name=adamw",
                "--lr", "0.01", "--epochs", "1", "--hours", "1", "--out", "space.yaml", cwd=project)
    assert made.returncode == 0, made.stderr[-3000:]
    space_file = project / "space.yaml"
    text = space_file.read_text()
    # ConvMixer: a patch embedding of one input channel and no residual blocks of ours
    assert "# left out: blurpool: model atelier.nets:convmixer has no strided conv" in text
    assert "# left out: stochastic_depth: model atelier.nets:convmixer has no residual blocks" in text
    assert "tune_lr: false" in text  # --lr given: no sweep
    for path in (space_file, project / "space_base.yaml"):
        _check_commented(path)
    space = load_space(space_file)
    assert {"blurpool", "stochastic_depth"}.isdisjoint(space.algorithms) and "mixup" in space.algorithms
    assert space.base.max_duration == 1 and space.base.optimizer.lr == 0.01 and space.base.model.kwargs["width"] == 16

    assert space.baseline_runs == 7  # 3 seeds at 0.5 and 1, one at 2
    # The written space searches as written: 7 baseline runs, then proposals (the budget keeps the confirmation
    # of one recipe back: 3 seeds x 3 budgets, beside the baseline), none FAILed; in-process, no report
    run = tmp_path / "run"
    searched = _cli("search", str(space_file), "--out", str(run), "--executor", "inprocess", "--quiet",
                    "--no-report", "--trials", "15", "--search-budget", "40", cwd=tmp_path)
    assert searched.returncode == 0, searched.stderr[-3000:]
    trials = _trials(run)
    assert [t["state"] for t in trials if t["state"] not in ("COMPLETE", "PRUNED")] == [], \
        [(t["number"], t["state"], t["error"]) for t in trials]
    proposals = [t for t in trials if t["is_baseline"] != "True" and t["stage"] == "search"]
    assert proposals, "no proposal trained"


@pytest.mark.slow
def test_a_torchvision_models_space_leaves_out_what_cannot_apply_and_loads(tmp_path):
    made = _cli("init", "--model", "tv/mobilenet_v3_small", "--data", "digits", "--set", "data.subset=0.2",
                "--lr", "0.05", "--batch-size", "64", "--epochs", "1", "--hours", "1", "--out", "tv.yaml", cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-3000:]
    text = (tmp_path / "tv.yaml").read_text()
    assert "# left out: stochastic_depth: model tv/mobilenet_v3_small has no residual blocks" in text
    assert "# left out: blurpool: model tv/mobilenet_v3_small has no strided conv" in text  # depthwise ones only
    assert "  mixup: " in text and "  progressive_resizing: " in text
    assert "batch_size: 64 " in (tmp_path / "tv_base.yaml").read_text()
    # the space loads, and passes the check a search makes of every method on the model before its first trial
    # (what a search of it would do next is the byo test's above)
    space = load_space(tmp_path / "tv.yaml")
    check_methods_fit(space)
    assert space.base.model.name == "tv/mobilenet_v3_small" and space.base.batch_size == 64


def test_it_never_overwrites_and_refuses_bad_input_in_one_line(capsys, tmp_path):
    out = tmp_path / "space.yaml"
    out.write_text("mine\n")
    code, _, err = call_cli(capsys, "init", "--model", "resnet8", "--data", "digits", "--out", str(out))
    assert code == 2 and "--out:" in err and "exists; pass --force" in err and err.count("\n") == 1
    assert out.read_text() == "mine\n"
    code, _, err = call_cli(capsys, "init", "--model", "resnet_nope", "--data", "digits",
                            "--out", str(tmp_path / "b.yaml"))
    assert code == 2 and err.startswith("error: ") and "model" in err and err.count("\n") == 1
    assert not (tmp_path / "b.yaml").exists() and not (tmp_path / "b_base.yaml").exists()
    code, _, err = call_cli(capsys, "init", "--model", "resnet8", "--data", "digits", "--hours", "-1",
                            "--out", str(tmp_path / "c.yaml"))
    assert code == 2 and "--hours" in err


def test_hours_too_short_for_the_epochs_asked_is_one_line_naming_the_need(capsys, tmp_path):
    code, _, err = call_cli(capsys, "init", "--model", "resnet8", "--data", "digits", "--set", "data.subset=0.2",
                            "--epochs", "50", "--hours", "0.001", "--out", str(tmp_path / "s.yaml"))
    assert code == 2 and err.count("error:") == 1 and err.endswith("\n") and "Traceback" not in err, err
    assert "error: --hours: 0.001 h cannot hold a search at 50 epoch(s)" in err and "or fewer --epochs" in err
    assert not (tmp_path / "s.yaml").exists()


def test_the_hours_hold_the_epochs_and_each_trials_overhead():
    from argparse import Namespace

    from recipesearch.commands.init import OVERHEAD, SEARCH_SHARE, _minimum_trainings, _size

    seconds = 3600 * 2 * OVERHEAD  # an hour, two trials at a time
    epochs, trainings = _size(Namespace(hours=1.0, epochs=None), 0.5, 2.0, 2)
    assert epochs == 10 and trainings == int(seconds // (10 * 0.5 + 2.0))  # 5 s of epochs + 2 s beside them
    # fewer epochs where the hours cannot hold SEARCH_SHARE x the baseline's trainings at 10
    epochs, trainings = _size(Namespace(hours=0.03, epochs=None), 1.0, 2.0, 2)
    floor = SEARCH_SHARE * _minimum_trainings()
    assert _minimum_trainings() == 3 + 3 * 0.5 + 3 * 1 + 2  # the sweep, 3 seeds at 0.5 and 1, one at 2
    assert epochs == int((seconds * 0.03 / floor - 2.0) // 1.0) == 5 and trainings >= floor
    with pytest.raises(UserError, match="--hours: 0.05 h cannot hold a search at 20 epoch"):
        _size(Namespace(hours=0.05, epochs=20), 1.0, 2.0, 2)


@pytest.mark.parametrize("bf16, chosen, note", [
    (6.0, "bf16", "bf16: an epoch took 6.0 s here, 10.0 s in fp32"),
    (9.8, "fp32", "fp32: bf16 took 9.8 s an epoch here, 10.0 s in fp32"),  # within BF16_MARGIN: no switch
    (None, "fp32", "fp32: bf16 failed here (RuntimeError)"),
])
def test_the_base_is_bf16_where_an_epoch_of_it_is_faster(monkeypatch, bf16, chosen, note):
    """A strong baseline has mixed precision where it pays (a GPU, a CPU with AMX): its speedup is not the search's."""
    from recipesearch.commands import init

    trained = []

    def one_epoch(base):
        trained.append(base["precision"])
        if base["precision"] == "bf16" and bf16 is None:
            raise RuntimeError("no bf16 autocast on this device")
        return (bf16 if base["precision"] == "bf16" else 10.0), 1.0

    monkeypatch.setattr(init, "_one_epoch", one_epoch)
    precision, seconds, rest, why = init._precision_and_epoch({"precision": "fp32"}, fixed=False)
    assert (precision, why) == (chosen, note) and seconds == (bf16 if chosen == "bf16" else 10.0) and rest == 1.0
    assert trained == ["bf16", "fp32"]  # bf16 first: a first run's warm-up counts against it
    trained.clear()
    assert init._precision_and_epoch({"precision": "fp16"}, fixed=True) == ("fp16", 10.0, 1.0, "--set")
    assert trained == ["fp16"]
