"""Every notebook code cell compiles cleanly: no syntax error, no invalid escape sequence.

An invalid escape such as ``"$\\mu$"`` in a non-raw string works today by accident (a
DeprecationWarning, a SyntaxWarning from Python 3.12 on) and silently changes meaning for escapes
that do exist (``"\\t"``, ``"\\v"``, ``"\\b"``): the intro once lost a ``\\varepsilon`` that way.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "chapters").rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts)


def cell_warnings(source: str) -> list[str]:
    """Warnings (and a syntax error) from compiling one cell; IPython magics are left out."""
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            compile(code, "<cell>", "exec")
        except SyntaxError as error:
            return [f"syntax error: {error}"]
    return [f"line {w.lineno}: {w.message}" for w in caught]


def test_cell_warnings_sees_an_invalid_escape() -> None:
    assert cell_warnings('label = "$\\mu$"') and not cell_warnings('label = r"$\\mu$"')


@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_code_cells_compile_without_warnings(rel: str) -> None:
    cells = json.loads((ROOT / rel).read_text(encoding="utf-8"))["cells"]
    problems = [f"cell {i}: {w}" for i, cell in enumerate(cells) if cell["cell_type"] == "code"
                for w in cell_warnings("".join(cell["source"]))]
    assert not problems, rel + "\n" + "\n".join(problems)


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_every_captioned_figure_has_alt_text(notebook: str) -> None:
    """A figure cell (``metadata.mystnb.figure``) also says what the image shows (``image.alt``, words, not a
    path): the browser test finds a missing one only after a full build."""
    nb = json.loads((ROOT / notebook).read_text(encoding="utf-8"))
    missing = []
    for i, cell in enumerate(nb["cells"]):
        mystnb = cell.get("metadata", {}).get("mystnb", {})
        if cell["cell_type"] == "code" and "figure" in mystnb:
            alt = str(mystnb.get("image", {}).get("alt", "")).strip()
            if len(alt.split()) < 5 or alt.endswith((".png", ".svg")):
                missing.append(f"cell {i} ({mystnb['figure'].get('name', '?')})")
    assert not missing, f"{notebook}: figure cells without alt text: {', '.join(missing)}"
