"""The whole book as one PDF: Sphinx's single-page HTML of the stored outputs, printed by headless Chromium.

``make pdf`` runs :func:`build_pdf` on this book. The toolchain is what the book already uses: Jupyter Book
(``--builder singlehtml``, the notebooks' stored outputs, ``execute_notebooks: off``, offline MathJax) and the
Chromium of the browser tests (``--print-to-pdf``, after the page's scripts, MathJax among them, have run).
No LaTeX: every table, figure and formula is printed as the HTML book shows it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PdfBook", "build_pdf", "count_pages"]

#: Milliseconds of page time Chromium gives the scripts (MathJax typesetting) before it prints.
SCRIPT_BUDGET_MS = 180_000


@dataclass(frozen=True)
class PdfBook:
    """A built PDF: its path, size in bytes, number of pages and the seconds each step took."""

    path: Path
    size: int
    pages: int
    html_seconds: float
    print_seconds: float


def count_pages(pdf: Path) -> int:
    """Pages of a PDF written by Chromium (its page objects; no PDF library needed)."""
    return len(re.findall(rb"/Type\s*/Page[^s]", Path(pdf).read_bytes()))


def build_pdf(book: Path, out_dir: Path, *, chromium: str = "/usr/bin/chromium", name: str = "book.pdf") -> PdfBook:
    """Build ``book`` (a Jupyter Book folder) as single-page HTML from its stored outputs and print it to PDF.

    Parameters
    ----------
    book : Path
        The book's root (``_config.yml``, ``_toc.yml``).
    out_dir : Path
        Emptied and filled with the HTML build and the PDF.
    chromium : str
        Chromium's executable.
    name : str
        The PDF's file name in ``out_dir``.

    Returns
    -------
    PdfBook
    """
    import yaml  # type: ignore[import-untyped]  # (no stubs pinned)

    book, out_dir = Path(book).resolve(), Path(out_dir).resolve()
    if not (book / "_toc.yml").is_file():
        raise FileNotFoundError(f"{book} has no _toc.yml: not a Jupyter Book")
    if shutil.which(chromium) is None:
        raise FileNotFoundError(f"chromium not found at {chromium!r} (make chromium installs Debian's)")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    config_path = book / "_config.yml"
    config = yaml.safe_load(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
    config = config or {}
    config.setdefault("execute", {})["execute_notebooks"] = "off"  # the stored outputs, as the browser build
    (out_dir / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    jupyter_book = str(Path(sys.executable).with_name("jupyter-book"))
    start = time.perf_counter()
    subprocess.run([jupyter_book, "build", str(book), "--config", str(out_dir / "_config.yml"), "--path-output", str(out_dir),
                    "--builder", "singlehtml", "-W", "--keep-going", "-q"], check=True)
    html_seconds = time.perf_counter() - start
    html = out_dir / "_build" / "singlehtml"
    pages = [p for p in html.glob("*.html") if p.stat().st_size > 1000]  # index.html only redirects to the root page
    if len(pages) != 1:
        raise RuntimeError(f"expected one single-page HTML file in {html}, found {[p.name for p in pages]}")
    pdf = out_dir / name
    partial = pdf.with_suffix(".pdf.tmp")  # an interrupted print leaves no half-written PDF under the final name
    start = time.perf_counter()
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
                    f"--virtual-time-budget={SCRIPT_BUDGET_MS}", f"--print-to-pdf={partial}", pages[0].as_uri()],
                   check=True, capture_output=True)
    print_seconds = time.perf_counter() - start
    partial.replace(pdf)
    return PdfBook(path=pdf, size=pdf.stat().st_size, pages=count_pages(pdf), html_seconds=html_seconds, print_seconds=print_seconds)


def main(argv: list[str] | None = None) -> None:
    """``python -m dpbayes.book.pdf BOOK OUT_DIR [CHROMIUM]``: build, then print what was built."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3):
        raise SystemExit("usage: python -m dpbayes.book.pdf BOOK OUT_DIR [CHROMIUM]")
    out = build_pdf(Path(args[0]), Path(args[1]), chromium=args[2] if len(args) == 3 else "/usr/bin/chromium",
                    name="dpbayes-book.pdf")
    print(f"{out.path}: {out.pages} pages, {out.size / 1e6:.1f} MB "
          f"(HTML {out.html_seconds:.0f} s, print {out.print_seconds:.0f} s)")


if __name__ == "__main__":
    main()
