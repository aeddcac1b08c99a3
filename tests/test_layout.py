"""The package layout: subpackages in layers, each importing only what its docstring allows.

Every subpackage of ``dpbayes`` says in its ``__init__`` docstring which layer it belongs to and what it
may import, on two phrases read here: ``Layer <n>`` and ``May import: dpbayes.x, dpbayes.y`` (or
``May import: nothing else of dpbayes``). A module may import its own subpackage, the packages its
subpackage lists, and nothing else of dpbayes; a listed package must sit in a lower layer or be a
sibling of the same layer named explicitly. The science never imports :mod:`dpbayes.book`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "dpbayes"
SUBPACKAGES = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
SCIENCE = sorted(p for p in PACKAGE.glob("*/*.py") if p.parent.name != "book" and p.name != "__init__.py")


def dpbayes_imports(path: Path, package: str | None = None) -> set[str]:
    """Every ``dpbayes...`` module or name that ``path`` imports (absolute and relative imports; a relative
    import is resolved against ``dpbayes.<package>``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = ["dpbayes"] + ([package] if package else [])
                base = base[: max(1, len(base) - (node.level - 1))]
                module = ".".join(base + ([module] if module else []))
            if module == "dpbayes" or module.startswith("dpbayes."):
                found.add(module)
                found.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("dpbayes"))
    return found


def imported_packages(path: Path, package: str | None = None) -> set[str]:
    """The subpackages of dpbayes that ``path`` imports from (``dpbayes.core.geometric`` -> ``core``;
    ``from dpbayes import counting`` -> ``counting``; ``__version__`` and the like are not packages)."""
    out = set()
    for name in dpbayes_imports(path, package):
        parts = name.split(".")
        if len(parts) >= 2 and parts[1] in SUBPACKAGES:
            out.add(parts[1])
    return out


def declared_layer(package: str) -> tuple[int, frozenset[str]]:
    """``(layer, allowed packages)`` from the ``Layer <n>`` and ``May import:`` phrases of ``package``'s docstring."""
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text())) or ""
    layer = re.search(r"\bLayer (\d+)\b", doc)
    allowed = re.search(r"May import: ([^\n]*)", doc)
    assert layer and allowed, f"dpbayes.{package}'s docstring must state 'Layer <n>' and 'May import: ...'"
    if allowed.group(1).startswith("nothing"):
        return int(layer.group(1)), frozenset()
    if allowed.group(1).startswith("every layer below"):
        return int(layer.group(1)), frozenset(p for p in SUBPACKAGES if p != package)
    return int(layer.group(1)), frozenset(re.findall(r"dpbayes\.(\w+)", allowed.group(1)))


def layer_violations(path: Path, package: str, layers: dict[str, tuple[int, frozenset[str]]]) -> list[str]:
    """The packages that ``path`` (a module of ``package``) imports but may not."""
    allowed = layers[package][1] | {package}
    return sorted(imported_packages(path, package) - allowed)


LAYERS = {p: declared_layer(p) for p in SUBPACKAGES}


def test_the_subpackages_and_their_layers() -> None:
    assert {"core", "ubapp", "posterior", "smc", "counting", "choosing", "release", "book"} <= set(SUBPACKAGES)
    assert LAYERS["core"] == (0, frozenset())
    assert {LAYERS[s][0] for s in ("ubapp", "posterior", "smc", "counting")} == {1}
    assert LAYERS["book"][0] == max(layer for layer, _ in LAYERS.values())
    # no module is left at the top level but the package's own entry points
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py"]


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_a_package_may_import_only_lower_layers_or_named_siblings(package: str) -> None:
    layer, allowed = LAYERS[package]
    for other in allowed:
        assert other in LAYERS, f"dpbayes.{package} may import dpbayes.{other}, which does not exist"
        assert LAYERS[other][0] <= layer, f"dpbayes.{package} (layer {layer}) may import a higher layer: dpbayes.{other}"
        # a sibling of the same layer may not import back (no cycle between subjects)
        assert not (LAYERS[other][0] == layer and package in LAYERS[other][1]), (package, other)
    assert "book" not in allowed or package == "book"


@pytest.mark.parametrize("path", SCIENCE, ids=lambda p: f"{p.parent.name}.{p.stem}")
def test_a_module_imports_only_what_its_package_allows(path: Path) -> None:
    bad = layer_violations(path, path.parent.name, LAYERS)
    assert not bad, (
        f"dpbayes.{path.parent.name}.{path.stem} imports dpbayes.{', dpbayes.'.join(bad)}; "
        f"dpbayes.{path.parent.name} may import: {sorted(LAYERS[path.parent.name][1]) or 'nothing else'}"
    )


@pytest.mark.parametrize("path", SCIENCE, ids=lambda p: f"{p.parent.name}.{p.stem}")
def test_science_never_imports_the_machinery(path: Path) -> None:
    bad = sorted(m for m in dpbayes_imports(path, path.parent.name) if m == "dpbayes.book" or m.startswith("dpbayes.book."))
    assert not bad, f"dpbayes.{path.parent.name}.{path.stem} imports the book's machinery: {bad}"


@pytest.mark.parametrize("path", SCIENCE, ids=lambda p: f"{p.parent.name}.{p.stem}")
def test_science_modules_declare_their_public_api(path: Path) -> None:
    tree = ast.parse(path.read_text())
    names = [t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)]
    assert "__all__" in names, f"dpbayes.{path.parent.name}.{path.stem} has no __all__"


def test_module_names_do_not_repeat_their_package() -> None:
    repeated = [f"{p.parent.name}/{p.name}" for p in SCIENCE if p.stem.lstrip("_").startswith(p.parent.name + "_")]
    assert not repeated, repeated


def test_the_check_bites(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from dpbayes.book.figures import save_figure\nfrom . import book\n"
        "from dpbayes.choosing.candidates import compare_estimators\nfrom dpbayes import smc\nfrom ..counting import model\n"
    )
    assert {"dpbayes.book.figures", "dpbayes.choosing.candidates"} <= dpbayes_imports(bad, "ubapp")
    # a subject importing a higher layer, a sibling it does not name, and (relatively) another subject
    assert layer_violations(bad, "ubapp", LAYERS) == ["book", "choosing", "counting", "smc"]
    ok = tmp_path / "ok.py"
    ok.write_text("from dpbayes.core.geometric import truncated_geometric_logpmf\nfrom dpbayes.ubapp import optimal\n")
    assert layer_violations(ok, "counting", LAYERS) == []
    assert layer_violations(ok, "smc", LAYERS) == ["ubapp"]
