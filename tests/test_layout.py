"""The package layout: the science modules of dpbayes never import the book's machinery (dpbayes.book)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "dpbayes"
SCIENCE = sorted(p for p in PACKAGE.glob("*.py") if p.stem not in {"__init__", "__main__"})


def dpbayes_imports(path: Path) -> set[str]:
    """Every ``dpbayes...`` module or name that ``path`` imports (absolute and relative imports)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative to the top-level package (science modules live there)
                module = "dpbayes" + ("." + module if module else "")
            if module == "dpbayes" or module.startswith("dpbayes."):
                found.add(module)
                found.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("dpbayes"))
    return found


def test_the_machinery_is_a_subpackage_and_the_science_is_flat() -> None:
    assert (PACKAGE / "book" / "__init__.py").exists()
    machinery = {p.stem for p in (PACKAGE / "book").glob("*.py")}
    assert {"cli", "params", "figures", "sphinx_ext"} <= machinery
    assert not machinery & {p.stem for p in SCIENCE}, "a module exists both in dpbayes and dpbayes.book"
    assert len(SCIENCE) >= 15


@pytest.mark.parametrize("path", SCIENCE, ids=lambda p: p.stem)
def test_science_never_imports_the_machinery(path: Path) -> None:
    bad = sorted(m for m in dpbayes_imports(path) if m == "dpbayes.book" or m.startswith("dpbayes.book."))
    assert not bad, f"dpbayes.{path.stem} imports the book's machinery: {bad}"


@pytest.mark.parametrize("path", SCIENCE, ids=lambda p: p.stem)
def test_science_modules_declare_their_public_api(path: Path) -> None:
    tree = ast.parse(path.read_text())
    names = [t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)]
    assert "__all__" in names, f"dpbayes.{path.stem} has no __all__"


def test_the_check_bites(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from dpbayes.book.figures import save_figure\nfrom . import book\n")
    assert {"dpbayes.book.figures", "dpbayes.book"} <= dpbayes_imports(bad)
