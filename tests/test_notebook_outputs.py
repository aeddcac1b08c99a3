"""What a reader sees in the stored notebook outputs: the book's symbols and its one table style (issue 27).

* no output shows the code's ASCII ``eps`` where the reader should read ε (tables go through
  ``dpbayes.book.formatting.reader_table``, text through ``reader_symbols``);
* no table is pandas' raw HTML rendering (``class="dataframe"``), which has its own look, an index
  column of 0, 1, 2 and untypeset headers: every table is a Markdown table in the book's style.

Outputs that are not shown (glue records, cells tagged ``remove-output``) are skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "chapters").rglob("*.ipynb"))

_MATH_OR_CODE = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$|`[^`\n]*`|<code>.*?</code>|<pre>.*?</pre>", re.S)
_ASCII_EPS = re.compile(r"\beps\b")


def shown_outputs(notebook: Path) -> list[tuple[int, str, str]]:
    """``(cell index, kind, text)`` of every output a reader sees: Markdown, HTML and printed text."""
    nb = nbformat.read(notebook, as_version=4)
    shown = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "remove-output" in cell.metadata.get("tags", []):
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stdout":
                shown.append((index, "text", output.get("text", "")))
                continue
            data = output.get("data", {})
            if any(key.startswith("application/papermill.record") for key in data):
                continue  # a glue record: shown on a page through {glued}, not here
            for kind in ("text/markdown", "text/html"):
                if kind in data:
                    shown.append((index, kind, data[kind] if isinstance(data[kind], str) else "".join(data[kind])))
                    break
    return shown


def ascii_eps(notebook: Path) -> list[str]:
    found = []
    for index, kind, text in shown_outputs(notebook):
        for m in _ASCII_EPS.finditer(_MATH_OR_CODE.sub(" ", text)):
            context = re.sub(r"\s+", " ", text[max(0, m.start() - 40): m.end() + 30])
            found.append(f"cell {index} ({kind}): ...{context}...")
    return found


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("", outputs=[
            nbformat.v4.new_output("display_data", data={"text/markdown": "| eps | $\\varepsilon$ |\n|--|--|"}),
            nbformat.v4.new_output("stream", name="stdout", text="at eps = 1 and `eps` in code, $eps$ in math\n"),
            nbformat.v4.new_output("display_data", data={"text/html": '<table border="1" class="dataframe"></table>'}),
        ]),
    ]
    path = tmp_path / "demo.ipynb"
    nbformat.write(nb, path)
    assert len(ascii_eps(path)) == 2
    assert any('class="dataframe"' in text for _, _, text in shown_outputs(path))


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_outputs_write_epsilon_as_the_reader_reads_it(notebook: str) -> None:
    found = ascii_eps(ROOT / notebook)
    assert not found, (f"{notebook}: outputs show the ASCII 'eps'; use reader_table / reader_symbols "
                       "(dpbayes.book.formatting):\n" + "\n".join(found[:10]))


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_no_table_is_pandas_raw_html(notebook: str) -> None:
    raw = sorted({index for index, kind, text in shown_outputs(ROOT / notebook)
                  if kind == "text/html" and 'class="dataframe"' in text})
    assert not raw, f"{notebook}: cells {raw} show a DataFrame as pandas' HTML; show it with show_table (one table style)"
