"""The API reference (api/): grouped by subpackage, one autodoc page per public science module, all in the toc.

The rendered pages themselves are checked by ``make browser`` (tests/test_browser.py), which opens
every page of the build, these included.
"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "dpbayes"


def subpackages() -> list[str]:
    """The science subpackages (the machinery, dpbayes.book, is not part of the API)."""
    return sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py") if p.parent.name != "book")


def science_modules() -> list[str]:
    """The public science modules as ``<subpackage>/<module>`` (a name starting with ``_`` is private)."""
    return sorted(f"{p.parent.name}/{p.stem}" for pkg in subpackages() for p in (PACKAGE / pkg).glob("*.py")
                  if not p.stem.startswith("_"))


def toc_files() -> list[str]:
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "file" in node:
                found.append(str(node["file"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    return found


def test_every_science_module_has_an_autodoc_page_under_its_subpackage() -> None:
    modules = science_modules()
    assert "release/statistic" in modules and "ubapp/optimal" in modules and len(modules) >= 40, modules
    toc = toc_files()
    assert "api/index" in toc
    index = (ROOT / "api" / "index.md").read_text()
    for pkg in subpackages():
        assert f"api/{pkg}/index" in toc, f"api/{pkg}/index.md is not in _toc.yml"
        assert f"({pkg}/index.md)" in index, f"api/index.md does not link dpbayes.{pkg}"
        assert f".. automodule:: dpbayes.{pkg}\n" in (ROOT / "api" / pkg / "index.md").read_text()
    for name in modules:
        pkg, mod = name.split("/")
        page = ROOT / "api" / pkg / f"{mod}.md"
        assert page.exists(), f"no API page for dpbayes.{pkg}.{mod}: add api/{name}.md and list it in _toc.yml"
        assert f".. automodule:: dpbayes.{pkg}.{mod}\n" in page.read_text(), page
        assert f"api/{name}" in toc, f"api/{name}.md is not in _toc.yml"
        assert f"({mod}.md)" in (ROOT / "api" / pkg / "index.md").read_text(), f"api/{pkg}/index.md does not list {mod}"
        assert f"({name}.md)" in index, f"api/index.md does not list dpbayes.{pkg}.{mod}"


def test_the_toc_groups_modules_under_their_subpackage() -> None:
    toc = [f for f in toc_files() if f.startswith("api/")]
    assert toc[0] == "api/index"
    pkgs = [f.split("/")[1] for f in toc[1:]]
    # each subpackage's pages are contiguous, its index first
    for pkg in subpackages():
        where = [i for i, p in enumerate(pkgs) if p == pkg]
        assert where == list(range(where[0], where[0] + len(where))), pkg
        assert toc[1 + where[0]] == f"api/{pkg}/index"


def test_no_page_for_the_machinery_and_autodoc_configured() -> None:
    pages = {f"{p.parent.name}/{p.stem}" for p in (ROOT / "api").glob("*/*.md") if p.stem != "index"}
    assert pages == set(science_modules()), pages ^ set(science_modules())
    assert not [p for p in (ROOT / "api").glob("*.md") if p.stem != "index"], "a module page outside its subpackage folder"
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]
    assert {"sphinx.ext.autodoc", "sphinx.ext.napoleon"} <= set(config["extra_extensions"])
    assert config["config"]["napoleon_numpy_docstring"] is True
