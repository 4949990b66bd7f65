"""``--storage postgresql://...`` against a real PostgreSQL server: a throwaway cluster in /tmp for this module.

The server comes from the Debian package (postgresql-15, installed by ``make``), the driver from
``pip install recipesearch[postgres]`` (psycopg 3). Where either is missing, or the server cannot be run
(as root it must run as the ``postgres`` user), the server tests skip with the reason.

What is checked: a search killed with SIGKILL and resumed keeps every completed trial and trains none twice;
one search drives a study at a time (a second one on the same study, from the same run directory or
another, is refused in one line while the first runs and after it, and two racing to create one study get
one winner and one clean refusal); a server that is down, silent or refuses our password is one line and
exit 2, quickly; and the password reaches none of the run directory, the report, the output or the errors.
"""
from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import call_cli

REPO = Path(__file__).resolve().parents[2]
USER, PASSWORD = "rs_user", "Zq9-s3cr@t/pw"  # "@" and "/" in it: percent-encoded on the way to the driver
SECRET = "s3cr"  # the part of the password that must never be shown, in whatever encoding


# -- the throwaway server ---------------------------------------------------------------------------------


def _bindir() -> Path | None:
    """The newest installed PostgreSQL server's bin directory (Debian: /usr/lib/postgresql/VERSION/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    port: int
    socket_dir: str
    psycopg: object

    def url(self, db: str, user: str = USER, password: str = PASSWORD) -> str:
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{db}"

    def create_database(self, name: str) -> str:
        """A new database owned by the test user: each test gets its own, empty."""
        with self.psycopg.connect(host=self.socket_dir, port=self.port, user="postgres", dbname="postgres",
                                  autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" OWNER {USER}')
        return self.url(name)


@pytest.fixture(scope="module")
def pg():
    psycopg = pytest.importorskip("psycopg", reason="no PostgreSQL driver: pip install recipesearch[postgres]")
    bindir = _bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL server binaries (initdb): apt-get install postgresql-15 (make does)")
    as_user: list[str] = []
    owner = None
    if os.geteuid() == 0:  # the server refuses to run as root: run it as the postgres user
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the server as")
        runuser = shutil.which("runuser")
        if runuser is None:
            pytest.skip("running as root and no runuser to run the server as the postgres user")
        as_user = [runuser, "-u", "postgres", "--"]
        if subprocess.run([*as_user, "true"], capture_output=True, cwd="/").returncode != 0:
            pytest.skip("running as root and cannot switch to the postgres user (runuser -u postgres)")
    base = tempfile.mkdtemp(prefix="rs-pg-", dir="/tmp")  # short: the socket path must stay < 108 chars
    if owner is not None:
        os.chown(base, owner.pw_uid, owner.pw_gid)
    data, log = f"{base}/data", f"{base}/server.log"

    def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([*as_user, *args], capture_output=True, text=True, timeout=timeout, cwd=base)

    started = False
    try:
        r = run(str(bindir / "initdb"), "-D", data, "-U", "postgres", "--auth-local=trust",
                "--auth-host=scram-sha-256", "--no-sync", "--no-instructions", "-E", "UTF8", "--locale=C")
        if r.returncode != 0:
            pytest.skip(f"initdb failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
        port = _free_port()
        options = (f"-c listen_addresses=127.0.0.1 -p {port} -k {base} -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_connections=50 -c shared_buffers=16MB")
        r = run(str(bindir / "pg_ctl"), "-D", data, "-l", log, "-o", options, "-w", "-t", "60", "start")
        started = True
        if r.returncode != 0:
            tail = Path(log).read_text()[-500:] if Path(log).exists() else r.stderr
            pytest.skip(f"the PostgreSQL server did not start: {tail.strip()}")
        with psycopg.connect(host=base, port=port, user="postgres", dbname="postgres", autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {USER} LOGIN PASSWORD '{PASSWORD}'")
        yield Server(port=port, socket_dir=base, psycopg=psycopg)
    finally:
        if started:
            run(str(bindir / "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop", timeout=60)
        shutil.rmtree(base, ignore_errors=True)


# -- helpers ----------------------------------------------------------------------------------------------


def _search(args: list[str], env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "recipesearch", "search", *args], cwd=REPO, env=env,
                          timeout=timeout, capture_output=True, text=True)


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "recipesearch", "search", *args], cwd=REPO, env=env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT)


def _wait_completed(proc: subprocess.Popen, out: Path, n: int, log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the search ended early:\n{log.read_text()}"
        try:
            if (pd.read_csv(out / "trials.csv")["state"] == "COMPLETE").sum() >= n:
                return
        except (FileNotFoundError, pd.errors.EmptyDataError, KeyError):
            pass
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"no {n} completed trials within {timeout} s:\n{log.read_text()}")


def _study(url: str, name: str = "tiny"):
    import optuna

    from recipesearch.engine.storage import make_storage

    return optuna.load_study(study_name=name, storage=make_storage(url))


def _no_secret_under(root: Path) -> None:
    leaks = []
    for p in root.rglob("*"):
        try:
            if p.is_file() and SECRET.encode() in p.read_bytes():
                leaks.append(str(p))
        except OSError:  # a Ray log rotated away while we read
            continue
    assert not leaks, f"the password is in {leaks}"


def _one_line_refusal(code: int, text: str, *words: str) -> str:
    """Exit 2 and one line ``error: ...`` with ``words`` in it, no traceback, no password."""
    assert code == 2, text
    assert text.count("\n") == 1 and text.startswith("error: ") and "Traceback" not in text, text
    assert SECRET not in text and "secret" not in text, text
    for w in words:
        assert w in text, text
    return text


def _call(capsys, *args: str) -> tuple[int, str]:
    code, out, err = call_cli(capsys, *args)
    return code, out + err


# -- tests ------------------------------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.system
def test_search_killed_then_resumed_on_postgres(pg, tmp_path, write_space, shared_ray, capsys):
    """kill -9 of a search on PostgreSQL (joined to the session's shared Ray: Ray ends the killed driver's trial
    workers with its job), then --resume with the same --storage: nothing lost or run twice, and the password is
    in none of the run directory's files nor Ray's session logs."""
    from recipesearch.engine import study as st
    from recipesearch.engine.queueing import rerun_params

    url = pg.create_database("resume")
    # one trial at a time: one trial worker a session (what is checked needs no second)
    space, out, log = write_space(trials=6, concurrency=1), tmp_path / "run", tmp_path / "first.log"
    proc = _start([str(space), "--out", str(out), "--storage", url, "--quiet", "--no-report", *shared_ray.args],
                  shared_ray.env, log)
    _wait_completed(proc, out, 2, log)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert not (out / "study.db").exists()  # the study is in the server
    before = {t.number: (tuple(t.values), t.user_attrs["recipe_id"])
              for t in _study(url).get_trials() if t.state.name == "COMPLETE"}
    assert len(before) >= 2

    # --resume without the --storage the search was started with would start an empty SQLite study
    code, text = _call(capsys, "search", str(space), "--out", str(out), "--resume", "--quiet")
    _one_line_refusal(code, text, "--resume", "--storage", f"postgresql://{USER}:***@")

    r = _search([str(space), "--out", str(out), "--resume", "--storage", url, "--quiet", "--report-every", "0",
                 *shared_ray.args], env=shared_ray.env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "resuming" in r.stdout

    trials = _study(url).get_trials()
    after = {t.number: (tuple(t.values), t.user_attrs["recipe_id"]) for t in trials if t.state.name == "COMPLETE"}
    assert {n: after.get(n) for n in before} == before  # nothing completed is lost or changed
    finished = [t for t in trials if st.is_finished(t)]
    runs = [st.run_key(st.trial_params(t), st.seed_index(t)) for t in finished]
    assert len(runs) == len(set(runs)) == 6  # nothing ran twice, the budget is met exactly
    # (a trial killed while its params were drawn never reached a worker: nothing to run again)
    interrupted = [t.number for t in trials if st.is_interrupted(t) and rerun_params(t)]
    assert sorted(t.user_attrs["requeued_from"] for t in trials if "requeued_from" in t.user_attrs) == interrupted
    assert not [t for t in trials if t.state.name in ("RUNNING", "WAITING")]
    csv = pd.read_csv(out / "trials.csv")
    assert csv["number"].tolist() == [t.number for t in trials]
    assert csv["state"].tolist() == [t.state.name for t in trials]

    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "finished" and len(meta["sessions"]) == 2
    assert meta["storage"] == f"postgresql://{USER}:***@127.0.0.1:{pg.port}/resume"
    assert (out / "index.html").is_file()  # the report of the resumed search
    _no_secret_under(out)  # run.json, trials.csv, the report, report.log, Ray Tune's folders
    _no_secret_under(Path(shared_ray.marker))  # Ray's own session logs, both sessions' jobs among them
    assert SECRET not in r.stdout + r.stderr + log.read_text()


@pytest.mark.system
def test_one_search_drives_a_study_at_a_time(pg, tmp_path, write_space, capsys):
    """While a search runs in another process (held still with SIGSTOP, so that it surely still runs), three
    others on its study are refused: a second driver of its run directory (--resume: its run directory's lock
    refuses it), a new search of the same study from another run directory, and the same with --force (the
    study's lock). Then it finishes untouched."""
    from recipesearch.engine import study as st

    url = pg.create_database("shared")
    space, out_a, out_b, log = write_space(trials=3), tmp_path / "a", tmp_path / "b", tmp_path / "a.log"
    first = _start([str(space), "--out", str(out_a), "--storage", url, "--executor", "inprocess", "--quiet",
                    "--no-report"], os.environ.copy(), log)
    try:
        _wait_completed(first, out_a, 1, log)
        first.send_signal(signal.SIGSTOP)
        try:
            # its own run directory: refused by the run directory's lock first (runlock), naming the holder
            code, text = _call(capsys, "search", str(space), "--out", str(out_a), "--resume", "--storage", url,
                               "--quiet")
            _one_line_refusal(code, text, f"another recipesearch is driving the run directory {out_a}",
                              f"pid {first.pid}")
            for args in ([str(out_b)], [str(out_b), "--force"]):
                code, text = _call(capsys, "search", str(space), "--out", *args, "--storage", url, "--quiet")
                _one_line_refusal(code, text, "another search is running the study 'tiny'", f"{USER}:***@")
        finally:
            first.send_signal(signal.SIGCONT)
        assert not out_b.exists()
        assert first.wait(timeout=240) == 0, log.read_text()
    finally:
        if first.poll() is None:
            first.kill()

    trials = _study(url).get_trials()
    # the refused searches changed nothing: no trial of the first marked interrupted, nothing queued twice
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3
    assert _study(url).user_attrs[st.OWNER] == str(out_a.resolve())

    # After it: another run directory is pointed at the run directory that owns the study, even with --force
    code, text = _call(capsys, "search", str(space), "--out", str(out_b), "--storage", url, "--quiet")
    _one_line_refusal(code, text, "already has a study named 'tiny'", f"--resume --out {out_a.resolve()}")
    code, text = _call(capsys, "search", str(space), "--out", str(out_b), "--storage", url, "--quiet", "--force")
    _one_line_refusal(code, text, "belongs to the run directory", "not deleting it")
    assert not out_b.exists() and len(_study(url).get_trials()) == 3
    _no_secret_under(out_a)


@pytest.mark.system
def test_two_searches_racing_to_create_one_study(pg, tmp_path, write_space):
    """Two searches started at the same moment on a new database and a new study: one runs, one is refused.
    (In process, no Ray: what is raced is the storage.)"""
    url = pg.create_database("race")
    space = write_space(trials=2)
    outs = [tmp_path / "one", tmp_path / "two"]
    procs = [subprocess.Popen([sys.executable, "-m", "recipesearch", "search", str(space), "--out", str(o),
                               "--storage", url, "--executor", "inprocess", "--quiet", "--no-report"],
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for o in outs]
    outputs = [p.communicate(timeout=240) for p in procs]
    results = [subprocess.CompletedProcess(p.args, p.returncode, *o) for p, o in zip(procs, outputs)]
    codes = sorted(r.returncode for r in results)
    assert codes == [0, 2], [r.stdout + r.stderr for r in results]
    winner = next(i for i, r in enumerate(results) if r.returncode == 0)
    loser = 1 - winner
    _one_line_refusal(results[loser].returncode, results[loser].stdout + results[loser].stderr, "'tiny'")
    assert not outs[loser].exists()  # refused before it wrote anything
    study = _study(url)
    assert study.user_attrs["run_dir"] == str(outs[winner].resolve())
    assert [t.state.name for t in study.get_trials()] == ["COMPLETE", "COMPLETE"]


def test_server_down_is_one_line_quickly(tmp_path, write_space, capsys):
    """The issue's check, as a user types it (in this process: the refusal comes before any training): a port with
    no server."""
    space, out = write_space(), tmp_path / "run"
    began = time.monotonic()
    code, text = _call(capsys, "search", str(space), "--out", str(out), "--storage",
                       "postgresql://u:secret@127.0.0.1:1/db")
    assert time.monotonic() - began < 60  # no hang: a refused connection is answered at once, not timed out
    text = _one_line_refusal(code, text, "--storage", "postgresql://u:***@127.0.0.1:1/db")
    assert "secret" not in text and not out.exists()


def _refused_in_process(capsys, tmp_path, space: Path, url: str, *words: str) -> str:
    out = tmp_path / "run"
    code, text = _call(capsys, "search", str(space), "--out", str(out), "--storage", url, "--quiet")
    assert code == 2 and text.count("\n") == 1 and "--storage" in text and "Traceback" not in text, text
    assert SECRET not in text and "secret" not in text and not out.exists(), text
    for w in words:
        assert w in text, text
    return text


def test_a_server_that_never_answers_times_out(tmp_path, write_space, capsys, monkeypatch):
    """A port that accepts the connection but never speaks (a hung server, a firewall that holds): the
    connect timeout ends the wait with one line instead of hanging the search's start. The default timeout
    (CONNECT_TIMEOUT_S, applied when the URL names none) is lowered to libpq's least, 2 s, for the test: the
    same code path, without 10 s of waiting."""
    pytest.importorskip("psycopg", reason="no PostgreSQL driver: pip install recipesearch[postgres]")
    from recipesearch.engine import storage

    monkeypatch.setattr(storage, "CONNECT_TIMEOUT_S", 2)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"postgresql://u:secret@127.0.0.1:{silent.getsockname()[1]}/db"
        began = time.monotonic()
        _refused_in_process(capsys, tmp_path, write_space(), url, "u:***@", "timeout")
        assert time.monotonic() - began < storage.CONNECT_TIMEOUT_S + 15  # generous: only "not hanging"


@pytest.mark.parametrize("what", ["wrong password", "no such user", "no such database"])
def test_the_server_refusing_us_is_one_line_without_the_password(pg, tmp_path, write_space, capsys, what):
    url = {"wrong password": pg.url("postgres", password="not-the-s3cret"),
           "no such user": pg.url("postgres", user="nobody"),
           "no such database": pg.url("nosuchdb")}[what]
    words = {"wrong password": "password authentication failed", "no such user": "password authentication failed",
             "no such database": 'database "nosuchdb" does not exist'}[what]
    _refused_in_process(capsys, tmp_path, write_space(), url, words, "***@127.0.0.1")


def test_missing_driver_names_the_extra(tmp_path, write_space, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as without `pip install recipesearch[postgres]`
    text = _refused_in_process(capsys, tmp_path, write_space(), "postgresql://u:secret@127.0.0.1:5432/db",
                               "pip install recipesearch[postgres]", "u:***@")
    assert "psycopg" in text


def test_a_plain_postgresql_url_uses_psycopg_3():
    from recipesearch.engine.storage import storage_url

    assert storage_url("postgresql://u:pw@h:5/db") == "postgresql+psycopg://u:pw@h:5/db"
    assert storage_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert storage_url("postgresql+psycopg2://u:pw@h/db") == "postgresql+psycopg2://u:pw@h/db"
    # a password with "@" or "/" reaches the driver whole; an encoded one is not encoded twice
    assert storage_url("postgresql://u:a@b/c@h/db") == "postgresql+psycopg://u:a%40b%2Fc@h/db"
    assert storage_url("postgresql://u:a%40b@h/db") == "postgresql+psycopg://u:a%40b@h/db"
    assert storage_url("sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"


def test_the_password_can_stay_out_of_the_url(pg, monkeypatch):
    """libpq's PGPASSWORD (or ~/.pgpass) keeps the password out of the command line (and of `ps`)."""
    from recipesearch.engine.storage import lock_study, make_storage
    from recipesearch.errors import UserError

    url = pg.create_database("nopass").replace(f":{PASSWORD}@", "@")
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    storage = make_storage(url)
    lock = lock_study(storage, "tiny", url)
    try:
        with pytest.raises(UserError, match="another search is running the study 'tiny'"):
            lock_study(make_storage(url), "tiny", url)
        lock_study(storage, "other", url).release()  # the lock is one study's, not the database's
    finally:
        lock.release()
    lock_study(storage, "tiny", url).release()  # released: free for the next search
