"""The page "Using dpbayes on your data" (using-dpbayes.md): every command in it is run here.

``bash`` blocks run in the repository root; ``python`` blocks run in order in one namespace. A block
whose code says "output varies" prints OpenDP releases (unseeded), so only that it runs is checked;
every line any other block prints must appear verbatim as a line of the page (the tables), as the
page shows it: with each ``{glued}`` number replaced by the value its notebook stored
(``chapters/using-dpbayes-numbers.ipynb`` computes the tables with the same code). The page's code
and the stored notebook outputs must therefore agree, and the table rows must be glued, not typed.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
from pathlib import Path

import pytest

from dpbayes.book.pagevalues import resolve_glued_text

pytest.importorskip("opendp")

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "using-dpbayes.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)


def blocks(language: str) -> list[str]:
    return [code for lang, code in FENCE.findall(PAGE.read_text(encoding="utf-8")) if lang == language]


def test_page_is_in_the_toc_and_has_commands() -> None:
    assert "file: using-dpbayes" in (ROOT / "_toc.yml").read_text()
    assert blocks("bash") and len(blocks("python")) >= 3
    assert {lang for lang, _ in FENCE.findall(PAGE.read_text(encoding="utf-8"))} <= {"bash", "python"}


def test_bash_blocks_run() -> None:
    """Every bash block but the install line, which tests/test_packaging.py runs into a fresh venv (here it would
    install into whatever ``pip`` comes first on the PATH)."""
    for code in blocks("bash"):
        if code.strip().startswith("pip install"):
            continue
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{code}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def page_as_shown() -> str:
    """The page's text with every ``{glued}`` role replaced by its stored value (``?`` where none)."""
    return resolve_glued_text(PAGE.read_text(encoding="utf-8"), PAGE.parent, ROOT)


def _row(line: str) -> str:
    """A table row without the padding a glued table's Markdown has (``|  0.1 | x |`` -> ``| 0.1 | x |``)."""
    return re.sub(r"\s*\|\s*", " | ", line).strip() if line.lstrip().startswith("|") else line


def test_python_blocks_run_and_print_the_page_tables() -> None:
    page_lines = {_row(line) for line in page_as_shown().splitlines()}
    namespace: dict = {"__name__": "using_dpbayes_page"}
    printed_tables = 0
    for code in blocks("python"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(PAGE), "exec"), namespace)  # noqa: S102 - the page's own code
        lines = out.getvalue().splitlines()
        if "output varies" in code:
            assert lines, "an example block printed nothing"
            continue
        missing = [line for line in lines if _row(line) not in page_lines]
        assert not missing, "printed but not in the page:\n" + "\n".join(missing)
        printed_tables += sum(line.startswith("| ") for line in lines)
    assert printed_tables == 4, printed_tables  # two rows in each of the two tables


def test_tables_are_glued_from_the_pages_notebook() -> None:
    """The two tables are glued once each as tables from the page's notebook, with stored values, and no
    row of a results table is typed on the page."""
    from dpbayes.book.pagevalues import glue_blocks

    text = PAGE.read_text(encoding="utf-8")
    blocks_ = glue_blocks(text)
    assert ("chapters/using-dpbayes-numbers.ipynb", "proportion_risks") in blocks_, blocks_
    assert ("chapters/using-dpbayes-numbers.ipynb", "count_risks") in blocks_, blocks_
    assert not [line for line in text.splitlines() if re.match(r"^\| (0\.1|1) \|", line)], "a table row typed by hand"
    shown = resolve_glued_text(text, PAGE.parent, ROOT)
    rows = [line for line in shown.splitlines() if re.match(r"^\|\s*(0\.1|1)\s*\|", line)]
    assert len(rows) == 4 and all(line.count("×") >= 3 for line in rows), rows