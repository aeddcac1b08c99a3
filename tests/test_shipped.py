"""dpbayes.book.shipped: the wheel and the source at the build commit, in the built book, with their SHA-256."""

from __future__ import annotations

import hashlib
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from dpbayes.book.shipped import PDF, SHIPPED_DIR, ship

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.xdist_group("packaging")  # pip builds a wheel, like tests/test_packaging.py


def test_the_build_ships_the_wheel_and_the_committed_source_with_their_hashes(tmp_path: Path) -> None:
    shipped = ship(ROOT, tmp_path)
    folder = tmp_path / SHIPPED_DIR
    with_pdf = (ROOT / PDF).is_file()  # shipped only where make pdf has built it
    assert set(shipped) == {"wheel", "source"} | ({"pdf"} if with_pdf else set())
    sums = (folder / "SHA256SUMS").read_text().splitlines()
    assert len(sums) == len(shipped)
    for line in sums:  # the sha256sum -c format, and the hashes the pages show
        digest, name = line.split("  ")
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest
        assert digest in {s.sha256 for s in shipped.values()}
    assert "dpbayes/release/table.py" in zipfile.ZipFile(folder / shipped["wheel"].name).namelist()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert shipped["source"].name == f"dpbayes-src-{head}.tar.gz"
    with tarfile.open(folder / shipped["source"].name) as archive:
        names = set(archive.getnames())
    assert f"dpbayes-src-{head}/Makefile" in names and f"dpbayes-src-{head}/chapters/05-choosing/index.md" in names
    # a second build replaces the folder: nothing of an earlier build is left
    (folder / "stale.whl").write_text("x")
    ship(ROOT, tmp_path)
    assert not (folder / "stale.whl").exists()


def test_a_notebook_runs_from_the_shipped_source_with_the_library_inside_it(tmp_path: Path) -> None:
    """What rerun.md tells a reader who downloaded a notebook: the shipped source is all it needs (here with the
    installed requirements of this checkout's venv, and the archive's own library first on the path)."""
    import os
    import sys

    shipped = ship(ROOT, tmp_path / "book")
    with tarfile.open(tmp_path / "book" / SHIPPED_DIR / shipped["source"].name) as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    top = tmp_path / "unpacked" / shipped["source"].name.removesuffix(".tar.gz")
    env = {**os.environ, "PYTHONPATH": str(top / "src")}
    probe = subprocess.run([sys.executable, "-c", "import dpbayes, sys; print(dpbayes.__file__)"], cwd=top, env=env,
                           capture_output=True, text=True, check=True)
    assert probe.stdout.strip().startswith(str(top)), probe.stdout
    done = subprocess.run([sys.executable, "-m", "dpbayes", "run", "chapters/04-counting-queries/04a-out-of-range.ipynb",
                           "--out", str(tmp_path / "runs"), "--quiet"], cwd=top, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and " ok " in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
