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
    assert "2.29x" in out and "index.html" in out
    assert "largest speedup at matched accuracy on the frontier" in out
    assert (built_run / "index.html").is_file() and (built_run / "pareto.csv").is_file()


def test_export_cli(run_dir, tmp_path, capsys):
    out = tmp_path / "exported"
    assert main(["export", str(run_dir), "--to", str(out)]) == 0
    files = sorted(out.glob("*.yaml"))
    assert len(files) == 9
    files[0].write_text("changed\n")
    assert main(["export", str(run_dir), "--to", str(out)]) == 2
    assert "--force" in one_line_error(capsys)
    assert main(["export", str(run_dir), "--to", str(out), "--force"]) == 0
    assert files[0].read_text().startswith("# recipesearch frontier recipe")
    assert main(["export", str(tmp_path / "missing"), "--to", str(out)]) == 2
    one_line_error(capsys)
