"""The API reference (api/*.md): one autodoc page per public science module, all in the book's toc.

The rendered pages themselves are checked by ``make browser`` (tests/test_browser.py), which opens
every page of the build, these included.
"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "dpbayes"


def science_modules() -> list[str]:
    """The public science modules: every top-level module (the machinery lives in dpbayes.book; a
    module whose name starts with ``_``, such as ``_extras``, is private)."""
    return sorted(p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_"))


def toc_files() -> set[str]:
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "file" in node:
                found.add(str(node["file"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    return found


def test_every_science_module_has_an_autodoc_page_in_the_toc() -> None:
    modules = science_modules()
    assert "release" in modules and "ubapp" in modules and len(modules) >= 16, modules
    toc = toc_files()
    assert "api/index" in toc
    for name in modules:
        page = ROOT / "api" / f"{name}.md"
        assert page.exists(), f"no API page for dpbayes.{name}: add api/{name}.md and list it in _toc.yml"
        assert f".. automodule:: dpbayes.{name}\n" in page.read_text(), page
        assert f"api/{name}" in toc, f"api/{name}.md is not in _toc.yml"
        assert f"({name}.md)" in (ROOT / "api" / "index.md").read_text(), f"api/index.md does not list dpbayes.{name}"


def test_no_page_for_the_machinery_and_autodoc_configured() -> None:
    pages = {p.stem for p in (ROOT / "api").glob("*.md")} - {"index"}
    assert pages == set(science_modules()), pages ^ set(science_modules())
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]
    assert {"sphinx.ext.autodoc", "sphinx.ext.napoleon"} <= set(config["extra_extensions"])
    assert config["config"]["napoleon_numpy_docstring"] is True
