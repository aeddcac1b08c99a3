"""`make pdf` on a small book: Sphinx's single-page HTML of the stored outputs, printed by headless Chromium.

Runs in the browser stage of `make test` (it needs Chromium, which `make chromium` installs), not in `make unit`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dpbayes.book.pdf import build_pdf

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="needs Chromium (make chromium)")


def _small_book(root: Path) -> Path:
    book = root / "book"
    book.mkdir()
    (book / "_config.yml").write_text("title: Small\nexecute:\n  execute_notebooks: force\n")
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: second\n")
    (book / "intro.md").write_text("# Intro\n\nA formula, $e^{-\\varepsilon}$.\n\n" + "A paragraph of text.\n\n" * 150)
    (book / "second.md").write_text("# Second\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    return book


def test_the_make_target_builds_the_pdf_of_a_small_book(tmp_path: Path) -> None:
    book = _small_book(tmp_path)
    done = subprocess.run(["make", "-C", str(ROOT), "pdf", f"PDF_BOOK={book}", f"PDF_OUT={tmp_path / 'out'}", f"CHROMIUM={CHROMIUM}"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (tmp_path / "out" / "dpbayes-book.pdf").is_file() and " pages, " in done.stdout


def test_a_small_book_prints_to_one_pdf(tmp_path: Path) -> None:
    book = _small_book(tmp_path)
    out = build_pdf(book, tmp_path / "out", chromium=CHROMIUM)
    assert out.path.is_file() and out.path.read_bytes().startswith(b"%PDF")
    assert out.pages >= 2 and out.size > 1000, out  # 150 paragraphs do not fit on one page
    assert not list((tmp_path / "out").glob("*.tmp")), "a half-written PDF was left"
    # the stored outputs only: the config the build used does not execute notebooks
    assert "execute_notebooks: 'off'" in (tmp_path / "out" / "_config.yml").read_text()


def test_a_folder_without_a_toc_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a Jupyter Book"):
        build_pdf(tmp_path, tmp_path / "out", chromium=CHROMIUM)
