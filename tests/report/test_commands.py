"""`recipesearch report` and `recipesearch export`: results on good input, one-line errors (exit 2) on bad."""
from __future__ import annotations

from recipesearch.cli import main


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_report_on_a_missing_dir(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "no such run directory" in one_line_error(capsys)


def test_report_on_a_dir_without_trials(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "trials.csv" in one_line_error(capsys)
    assert not (tmp_path / "index.html").exists()


def test_report_rebuilds_everything(built_run, capsys):
    for name in ("index.html", "pareto.csv"):
        (built_run / name).unlink()
    assert main(["report", str(built_run)]) == 0
    out = capsys.readouterr().out
    assert "index.html" in out and "4 points on the frontier (seed means;" in out
    verdict = next(line for line in out.splitlines() if line.startswith("confirmed: "))
    assert verdict.startswith("confirmed: trial 4 (label_smoothing) is 2.00x faster [95% CI ")
    assert "than the baseline to the target test acc 0.9500" in verdict
    elsewhere = next(line for line in out.splitlines() if line.startswith("elsewhere on the front: "))
    assert elsewhere.startswith("elsewhere on the front: trial 4 (label_smoothing, budget 0.5, 3 seeds) is 2.00x ")
    assert elsewhere.endswith("at test acc 0.9500, confirmed there")  # selected on test: no held-out figure
    assert "the search cost " in out and "it pays for itself after " in out
    assert (built_run / "index.html").is_file() and (built_run / "pareto.csv").is_file()


def test_report_prints_the_verdict_on_val_with_test_held_out(tmp_path, capsys):
    from .fake_run import SEARCH_ROWS, trials_frame, write_run_dir

    meta = {"objectives": ["accuracy", "train_seconds"], "directions": ["maximize", "minimize"],
            "metric_split": "val"}
    trials = trials_frame().assign(accuracy=lambda d: d["accuracy"] - 0.01)  # test: 1 point below val
    run = write_run_dir(tmp_path / "val", trials, meta=meta)
    assert main(["report", str(run)]) == 0
    out = capsys.readouterr().out
    # the confirmed curve on val, then the held-out test mean of the recipe at its best budget (2: 0.97 - 0.01)
    assert "target val acc 0.9500" in out and "; test acc 96.00% at its best budget (held out)" in out
    assert "elsewhere on the front: trial 4 (label_smoothing, budget 0.5, 3 seeds) is 2.00x faster" in out
    assert "at val acc 0.9500, confirmed there; test acc 0.9400 (held out)" in out
    single = write_run_dir(tmp_path / "single", trials_frame(SEARCH_ROWS), meta=meta)
    assert main(["report", str(single)]) == 0
    out = capsys.readouterr().out
    assert "points on the frontier (single runs;" in out
    assert any(line.startswith("not confirmed: no recipe was trained") for line in out.splitlines())


def test_export_cli(run_dir, tmp_path, capsys):
    out = tmp_path / "exported"
    assert main(["export", str(run_dir), "--to", str(out)]) == 0
    files = sorted(out.glob("*.yaml"))
    assert len(files) == 4  # one per frontier point: the baseline's fastest and the confirmed recipe's three
    files[0].write_text("changed\n")
    assert main(["export", str(run_dir), "--to", str(out)]) == 2
    assert "--force" in one_line_error(capsys)
    assert main(["export", str(run_dir), "--to", str(out), "--force"]) == 0
    assert files[0].read_text().startswith("# recipesearch frontier recipe")
    assert main(["export", str(tmp_path / "missing"), "--to", str(out)]) == 2
    one_line_error(capsys)
