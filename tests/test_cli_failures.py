"""Commands that used to end in a traceback (issue 32, item 6): each is now one ``error:`` line and exit 2, and
leaves the run directory (or --to, or --out) byte for byte as it was.

Read-only places are made two ways, so the tests hold as root and as a normal user: *simulated* (every write,
folder creation, rename or removal under the directory raises EROFS, as a read-only mount does) always, and
*real* (a read-only tmpfs mount for root, ``chmod a-w`` for anyone else; skipped where neither can be had).
"""
from __future__ import annotations

import builtins
import contextlib
import errno
import io
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_cli import call_cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "reports" / "examples" / "digits"  # a real search's run directory, report included
TINY = (Path(__file__).parent / "tiny_recipe.yaml").read_text()


def one_error_line(code: int, err: str) -> str:
    """The single ``error: ...`` line of a failed command (exit 2, nothing else on stderr, no traceback)."""
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``root``, by relative path; {} when it does not exist."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in sorted(root.rglob("*"))}


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A private copy of the example run directory, made stale so that a report that got through would change
    files: pareto.csv edited, and one plot and one recipe removed (a rebuild writes them again)."""
    run = Path(shutil.copytree(EXAMPLE, tmp_path / "run"))
    (run / "pareto.csv").write_text("an older pareto.csv\n")
    next((run / "plots").glob("*.svg")).unlink()
    next((run / "recipes").glob("*.yaml")).unlink()
    return run


@contextlib.contextmanager
def simulated_read_only(root: Path, only: str = "", named: str = "") -> Iterator[None]:
    """Writes under ``root`` (under ``root / only`` when given; only to files whose name starts with ``named``
    when given) fail with EROFS, as on a read-only mount: opening a file for writing, making a folder, renaming,
    removing. Reading works."""
    inside = (root / only).resolve() if only else root.resolve()

    def blocked(path) -> bool:
        try:
            p = Path(os.fsdecode(path)).resolve()
        except (TypeError, ValueError):
            return False
        return (p == inside or inside in p.parents) and p.name.startswith(named)

    def refuse(path) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))

    real_open, real_mkdir, real_replace, real_rename, real_unlink, real_rmdir = (
        builtins.open, os.mkdir, os.replace, os.rename, os.unlink, os.rmdir)

    def fake_open(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)) and any(c in mode for c in "wax+") and blocked(file):
            refuse(file)
        return real_open(file, mode, *args, **kwargs)

    def guard(real):
        def call(path, *args, **kwargs):
            if blocked(path):
                refuse(path)
            return real(path, *args, **kwargs)
        return call

    def guard2(real):
        def call(src, dst, *args, **kwargs):
            for path in (src, dst):
                if blocked(path):
                    refuse(path)
            return real(src, dst, *args, **kwargs)
        return call

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(builtins, "open", fake_open)
        mp.setattr(io, "open", fake_open)
        mp.setattr(os, "mkdir", guard(real_mkdir))
        mp.setattr(os, "unlink", guard(real_unlink))
        mp.setattr(os, "remove", guard(real_unlink))
        mp.setattr(os, "rmdir", guard(real_rmdir))
        mp.setattr(os, "replace", guard2(real_replace))
        mp.setattr(os, "rename", guard2(real_rename))
        yield


@contextlib.contextmanager
def real_read_only(folder: Path, content: Path | None = None) -> Iterator[Path]:
    """``folder`` holding a copy of ``content`` (or empty), made read-only for real: a read-only tmpfs mounted
    there when we are root (root writes through chmod), else ``chmod -R a-w``. Skips when neither works."""
    folder.mkdir(parents=True)
    if os.geteuid() != 0:
        if content is not None:
            shutil.copytree(content, folder, dirs_exist_ok=True)
        for p in [folder, *folder.rglob("*")]:
            p.chmod(p.stat().st_mode & ~0o222)
        if os.access(folder, os.W_OK):
            pytest.skip("chmod a-w does not make a folder read-only here")
        try:
            yield folder
        finally:
            for p in [folder, *folder.rglob("*")]:
                p.chmod(p.stat().st_mode | 0o200)
        return

    def mount(*args: str) -> bool:
        try:
            return subprocess.run(["mount", *args], capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False

    if not mount("-t", "tmpfs", "-o", "size=64m", "none", str(folder)):
        pytest.skip("cannot mount a tmpfs here (a read-only mount needs CAP_SYS_ADMIN)")
    try:
        if content is not None:
            shutil.copytree(content, folder, dirs_exist_ok=True)
        if not mount("-o", "remount,ro", str(folder)):
            pytest.skip("cannot remount a tmpfs read-only here")
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30)


# -- recipesearch report


def test_report_on_a_read_only_run_directory_simulated(run_dir, capsys):
    before = snapshot(run_dir)
    with simulated_read_only(run_dir):
        line = one_error_line(*call_cli(capsys, "report", str(run_dir))[::2])
    assert line == (f"error: {run_dir / 'pareto.csv'}: cannot write the report (Read-only file system); {run_dir} "
                    "was left as it was: make it writable, or copy it elsewhere and run `recipesearch report` on "
                    "the copy")
    assert snapshot(run_dir) == before


def test_report_on_a_read_only_run_directory_for_real(run_dir, tmp_path, capsys):
    with real_read_only(tmp_path / "ro", content=run_dir) as ro:
        before = snapshot(ro)
        line = one_error_line(*call_cli(capsys, "report", str(ro))[::2])
        assert line.startswith(f"error: {ro}/") and "cannot write the report (" in line
        assert f"{ro} was left as it was: make it writable" in line
        assert snapshot(ro) == before


def test_a_report_that_fails_half_way_leaves_every_file_as_it_was(run_dir, capsys):
    """pareto.csv and recipes/ can be written, plots/ cannot: nothing is renamed into place, the temporary
    files of the ones written go, and so does nothing else."""
    before = snapshot(run_dir)
    with simulated_read_only(run_dir, only="plots"):
        line = one_error_line(*call_cli(capsys, "report", str(run_dir))[::2])
    assert line.startswith(f"error: {run_dir / 'plots'}/") and "(Read-only file system)" in line
    assert snapshot(run_dir) == before  # pareto.csv still the old one, no .tmp file anywhere


def test_a_report_that_fails_removes_the_folders_it_made(run_dir, capsys):
    shutil.rmtree(run_dir / "plots")
    before = snapshot(run_dir)
    with simulated_read_only(run_dir, named=".index.html."):  # the last file's temporary: all others were written
        line = one_error_line(*call_cli(capsys, "report", str(run_dir))[::2])
    assert line.startswith(f"error: {run_dir / 'index.html'}: cannot write the report (Read-only file system)")
    assert snapshot(run_dir) == before and not (run_dir / "plots").exists()


def test_report_still_rebuilds_a_writable_run_directory(run_dir, capsys):
    code, out, err = call_cli(capsys, "report", str(run_dir), "--quiet")
    assert code == 0, err
    assert out.strip() == str(run_dir / "index.html")
    assert (run_dir / "pareto.csv").read_text() != "an older pareto.csv\n"
    assert not list(run_dir.rglob(".*.tmp"))


# -- recipesearch export


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_export_to_proc(run_dir, capsys):
    before = snapshot(run_dir)
    line = one_error_line(*call_cli(capsys, "export", str(run_dir), "--to", "/proc/x")[::2])
    assert line == ("error: --to: cannot create the folder /proc/x (No such file or directory); nothing was "
                    "exported: choose a folder you can write to")
    assert snapshot(run_dir) == before and not Path("/proc/x").exists()


def test_export_to_a_read_only_mount_simulated(run_dir, tmp_path, capsys):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    before = snapshot(run_dir)
    with simulated_read_only(mnt):
        line = one_error_line(*call_cli(capsys, "export", str(run_dir), "--to", str(mnt / "recipes"))[::2])
    assert line == (f"error: --to: cannot create the folder {mnt / 'recipes'} (Read-only file system); nothing was "
                    "exported: choose a folder you can write to")
    assert snapshot(run_dir) == before and snapshot(mnt) == {}


def test_export_into_a_read_only_folder_for_real(run_dir, tmp_path, capsys):
    before = snapshot(run_dir)
    with real_read_only(tmp_path / "ro") as ro:
        line = one_error_line(*call_cli(capsys, "export", str(run_dir), "--to", str(ro))[::2])
        assert line.startswith(f"error: --to: cannot write {ro}/") and line.endswith(
            "nothing was exported: choose a folder you can write to")
        assert snapshot(ro) == {}
        line = one_error_line(*call_cli(capsys, "export", str(run_dir), "--to", str(ro / "sub" / "dir"))[::2])
        assert line.startswith(f"error: --to: cannot create the folder {ro / 'sub'} (")
    assert snapshot(run_dir) == before


def test_an_export_that_fails_half_way_writes_nothing(run_dir, tmp_path, capsys):
    """The second recipe cannot be written: the first is not left behind, nor the folder made for them."""
    to = tmp_path / "out" / "recipes"
    real_open = builtins.open
    opened: list[str] = []

    def second_fails(file, mode="r", *args, **kwargs):
        if "w" in mode and Path(os.fsdecode(file)).parent == to:
            opened.append(str(file))
            if len(opened) == 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(file))
        return real_open(file, mode, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(builtins, "open", second_fails)
        line = one_error_line(*call_cli(capsys, "export", str(run_dir), "--to", str(to))[::2])
    assert len(opened) == 2 and "(No space left on device); nothing was exported" in line
    assert not (tmp_path / "out").exists()


# -- recipesearch train with torchvision models that cannot take the data's images


@pytest.fixture
def tiny_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)  # digits: 16 px, 1 channel
    return path


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    """An --out holding an earlier result, which a failed `train --force` must not touch."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "result.json").write_text('{"accuracy": 0.5}\n')
    (out / "recipe.yaml").write_text("model: {name: cnn}\n")
    return out


def train_error(capsys, tiny_file: Path, out_dir: Path, *sets: str) -> str:
    before = snapshot(out_dir)
    args = ["train", str(tiny_file), "--quiet", "--out", str(out_dir), "--force"]
    for item in sets:
        args += ["--set", item]
    line = one_error_line(*call_cli(capsys, *args)[::2])
    assert snapshot(out_dir) == before
    return line


def test_train_vit_b_32_on_16_px_images(capsys, tiny_file, out_dir):
    line = train_error(capsys, tiny_file, out_dir, "model.name=tv/vit_b_32")
    assert line == ("error: model.name: tv/vit_b_32 cannot take 16 px images (AssertionError: Input shape "
                    "indivisible by patch size!); use a data.image_size that is a multiple of 32 (e.g. 32) or "
                    "another model")


def test_train_inception_v3_on_16_px_images(capsys, tiny_file, out_dir):
    line = train_error(capsys, tiny_file, out_dir, "model.name=tv/inception_v3")
    assert line.startswith("error: model.name: tv/inception_v3 cannot take 16 px images (RuntimeError: ")
    assert line.endswith("); use data.image_size >= 75 or another model")


def test_train_vit_with_progressive_resizing(capsys, tiny_file, out_dir):
    """vit_b_16 takes the 16 px data, not the 8 px batches progressive resizing starts with."""
    line = train_error(capsys, tiny_file, out_dir, "model.name=tv/vit_b_16", "algorithms.progressive_resizing={}")
    assert line.startswith("error: algorithms.progressive_resizing: tv/vit_b_16 cannot take the 8 px images that "
                           "progressive_resizing makes of the 16 px data (AssertionError: Wrong image height!")
    assert line.endswith("; drop progressive_resizing or use another model")


def test_a_torchvision_model_that_fits_still_trains(capsys, tiny_file, tmp_path):
    code, out, err = call_cli(capsys, "train", str(tiny_file), "--quiet", "--out", str(tmp_path / "ok"),
                              "--set", "model.name=tv/resnet18", "--set", "max_duration=0.2")
    assert code == 0, err
    assert (tmp_path / "ok" / "result.json").is_file()
