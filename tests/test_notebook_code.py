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
