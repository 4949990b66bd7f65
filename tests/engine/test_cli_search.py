"""``recipesearch search`` refuses bad input with one line and exit code 2, before writing or starting anything."""
from __future__ import annotations

import pytest
import yaml

from recipesearch.cli import main


def _snapshot(root):
    return {p.relative_to(root): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_an_existing_run_directory_is_never_touched_without_resume_or_force(tmp_path, write_space, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "trials.csv").write_text("number,state\n0,COMPLETE\n")
    (out / "notes.txt").write_text("mine")
    before = _snapshot(out)
    assert main(["search", str(write_space()), "--out", str(out)]) == 2
    line = _one_line_error(capsys)
    assert "not empty" in line and "--resume" in line and "--force" in line
    assert _snapshot(out) == before


def test_resume_refuses_a_different_space(tmp_path, write_space, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "space.yaml").write_text(write_space("old.yaml", trials=9).read_text())
    before = _snapshot(out)
    assert main(["search", str(write_space()), "--out", str(out), "--resume"]) == 2
    assert "space differs" in _one_line_error(capsys)
    assert _snapshot(out) == before


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"sampler_typo": "tpe"}, "sampler_typo: unknown field"),
        ({"trials": "many"}, "trials: must be an integer"),
        ({"hparams": {"optimizer.lr": {"scale": [2, 0.5]}}}, "min > max"),
        ({"hparams": {"optimizer.lr": {"range": [0.1, 0.1]}}}, "empty range"),
        ({"algorithms": {"warp_drive": {}}}, "algorithms.warp_drive"),
    ],
    ids=["unknown-key", "wrong-type", "min-gt-max", "empty-range", "unknown-algorithm"],
)
def test_a_malformed_space_is_one_line_and_nothing_is_written(tmp_path, write_space, capsys, change, expected):
    path = write_space()
    data = yaml.safe_load(path.read_text())
    data.update(change)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "run"
    assert main(["search", str(path), "--out", str(out)]) == 2
    line = _one_line_error(capsys)
    assert expected in line and str(path) in line
    assert not out.exists()


def test_resume_and_force_together_are_refused(tmp_path, write_space, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["search", str(write_space()), "--out", str(tmp_path / "run"), "--resume", "--force"])
    assert exc.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_an_unreachable_cluster_fails_fast_and_writes_nothing(tmp_path, write_space, capsys, ray_kit):
    out = tmp_path / "run"
    port = ray_kit.free_port()  # nothing listens there
    assert main(["search", str(write_space()), "--out", str(out), "--address", f"127.0.0.2:{port}"]) == 2
    assert "nothing answers" in _one_line_error(capsys)
    assert not out.exists()


@pytest.mark.parametrize("reply", [b"", b"HTTP/1.1 400 Bad Request\r\n\r\n"], ids=["silent", "web server"])
def test_a_port_that_is_not_ray_fails_fast_and_writes_nothing(tmp_path, write_space, capsys, reply):
    import socket
    import threading
    import time

    server = socket.create_server(("127.0.0.2", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(1024)
            if reply:
                conn.sendall(reply)
            time.sleep(7)  # a silent port keeps the connection open, as a hung service would

    threading.Thread(target=serve, daemon=True).start()
    out = tmp_path / "run"
    start = time.monotonic()
    try:
        code = main(["search", str(write_space()), "--out", str(out), "--address", f"127.0.0.2:{port}"])
    finally:
        server.close()
    assert code == 2 and "is not a Ray head" in _one_line_error(capsys)
    assert time.monotonic() - start < 30 and not out.exists()


def test_trials_must_be_positive(tmp_path, write_space, capsys):
    assert main(["search", str(write_space()), "--out", str(tmp_path / "run"), "--trials", "0"]) == 2
    assert "--trials" in _one_line_error(capsys)
    assert not (tmp_path / "run").exists()


def test_force_deletes_only_a_run_directory(tmp_path, write_space, capsys):
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    assert main(["search", str(write_space()), "--out", str(precious), "--force"]) == 2
    assert "does not look like a search run directory" in _one_line_error(capsys)
    assert (precious / "thesis.tex").read_text() == "years of work"
