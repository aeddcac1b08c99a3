"""The book's code-folding rule: which notebook code cells carry the tag ``hide-input``.

The rule (CONTRIBUTING.md, "Folding code cells"): the short cells that compute a number used in a
claim stay visible; the machinery is folded. A code cell must carry ``hide-input`` (myst-nb shows a
"Show code" toggle and the cell's outputs) when it

* is the cell tagged ``parameters`` (the run's settings: the page's parameter table and the chapter's
  rerun commands list them; a reader opens the fold to see the code): **parameters**;
* draws a figure (calls ``save_figure``, ``column_subplots``, ``plt.subplots``, ``plt.figure``,
  ``plt.show``, ``legend_below``): **plotting**;
* starts with an import and shows nothing (the set-up cell: imports, ``use_style()``,
  ``constraints.check``, derived quantities, ``rng``): **imports and set-up**;
* glues numbers for the page (``glue_number``, ``glue_text``, ``source_value``) and shows nothing
  else: **numbers for the page**;
* shows a table (``display``, ``Markdown``, ``to_markdown``, ``markdown_table``) without calling a
  function of the ``dpbayes`` science modules: **table formatting** (the numbers were computed in
  an earlier cell);
* is longer than :data:`LONG_CELL_LINES` lines: **long cell** (its computation belongs in the
  library, or behind the fold).

``hide-cell`` and ``remove-input`` count as folded too. :func:`cell_needs_folding` is a pure function of a cell's source (and tags);
``tests/test_folding.py`` applies it to every notebook under ``chapters/`` and the browser test
checks the rendered pages.

Command line (metadata only, atomic write)::

    python -m dpbayes.book.folding NOTEBOOK...          # list the cells to fold; exit 1 if any
    python -m dpbayes.book.folding --apply NOTEBOOK...  # add ``hide-input`` to them
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from dpbayes.book._io import atomic_write_text

FOLD_TAG = "hide-input"
FOLDED_TAGS = frozenset({"hide-input", "hide-cell", "remove-input", "remove-cell"})
PARAMETERS_TAG = "parameters"
LONG_CELL_LINES = 60

PLOTTING_CALLS = frozenset({"save_figure", "column_subplots", "legend_below", "subplots", "figure", "show",
                            "subplot_mosaic", "imshow", "pcolormesh"})
PLOTTING_OWNERS = frozenset({"plt", "pyplot"})  # plt.anything() draws
GLUE_CALLS = frozenset({"glue_number", "glue_text", "source_value", "glue"})
DISPLAY_CALLS = frozenset({"print", "display"})
TABLE_CALLS = frozenset({"Markdown", "to_markdown", "markdown_table", "HTML", "to_html"})

REASON_PARAMETERS = "parameters"
REASON_PLOTTING = "plotting"
REASON_SETUP = "imports and set-up"
REASON_GLUE = "numbers for the page"
REASON_TABLE = "table formatting"
REASON_LONG = f"long cell (over {LONG_CELL_LINES} lines)"


def _call_name(node: ast.Call) -> tuple[str | None, str]:
    """``(owner, name)`` of a call: ``plt.show()`` -> ``("plt", "show")``, ``f()`` -> ``(None, "f")``."""
    func = node.func
    if isinstance(func, ast.Attribute):
        owner = func.value
        while isinstance(owner, ast.Attribute):
            owner = owner.value
        return (owner.id if isinstance(owner, ast.Name) else None), func.attr
    if isinstance(func, ast.Name):
        return None, func.id
    return None, ""


def _calls(tree: ast.AST, run_only: bool = False) -> list[tuple[str | None, str]]:
    """Every call in ``tree``; ``run_only``: not those inside function definitions (not run by the cell)."""
    found = []
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Call):
            found.append(_call_name(node))
        for child in ast.iter_child_nodes(node):
            if not (run_only and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))):
                todo.append(child)
    return found


def _shows_something(tree: ast.Module) -> bool:
    """Whether the cell prints, displays, or ends in a bare expression that is not a glue call."""
    for owner, name in _calls(tree, run_only=True):
        if owner is None and name in DISPLAY_CALLS:
            return True
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1].value
        if not (isinstance(last, ast.Call) and _call_name(last)[1] in GLUE_CALLS):
            return True
    return False


def _parsed(sources: Iterable[str]) -> Iterator[ast.Module]:
    """The syntax trees of ``sources``, skipping those that do not parse (magics, broken cells)."""
    for source in sources:
        try:
            yield ast.parse(source)
        except SyntaxError:
            continue


def library_names(sources: Iterable[str]) -> frozenset[str]:
    """Names a notebook binds to the ``dpbayes`` science modules (not ``dpbayes.book``).

    ``from dpbayes import counting as ct`` gives ``ct``; ``from dpbayes.release.statistic import MAX_N`` gives
    ``MAX_N``; ``import dpbayes.ubapp.lbapp`` gives ``dpbayes``. Sources that do not parse are skipped.
    """
    names: set[str] = set()
    for tree in _parsed(sources):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                parts = node.module.split(".")
                if parts[0] != "dpbayes" or (len(parts) > 1 and parts[1] == "book"):
                    continue
                for alias in node.names:
                    if len(parts) == 1 and alias.name == "book":
                        continue
                    names.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] == "dpbayes" and not (len(parts) > 1 and parts[1] == "book"):
                        names.add(alias.asname or parts[0])
    return frozenset(names)


def plotting_functions(sources: Iterable[str]) -> frozenset[str]:
    """Functions a notebook defines that draw (``def error_figure(...)`` calling ``plt.subplots``)."""
    names: set[str] = set()
    for tree in _parsed(sources):
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _draws(_calls(node)):
                names.add(node.name)
    return frozenset(names)


def _draws(calls: list[tuple[str | None, str]], plotters: Iterable[str] = ()) -> bool:
    plotters = set(plotters)
    return any(owner in PLOTTING_OWNERS or name in PLOTTING_CALLS - {"figure", "show", "subplots"}
               or (owner is None and name in plotters) for owner, name in calls)


def cell_needs_folding(source: str, tags: Iterable[str] = (), library: Iterable[str] = (),
                       plotters: Iterable[str] = ()) -> str | None:
    """Why the code cell ``source`` must carry ``hide-input`` under the book's rule, or ``None``.

    ``tags``: the cell's tags (the ``parameters`` cell is folded). ``library``: the names the
    notebook binds to the ``dpbayes`` science modules (:func:`library_names`); a cell calling one
    of them computes, it does not only format a table. ``plotters``: the drawing functions the
    notebook defines (:func:`plotting_functions`); a cell calling one of them plots. The checks run in the order of the module
    docstring; the first that applies gives the reason.
    """
    if PARAMETERS_TAG in set(tags):
        return REASON_PARAMETERS
    text = source.strip()
    if not text:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:  # an IPython magic: judged by its length only
        return REASON_LONG if len(text.splitlines()) > LONG_CELL_LINES else None
    calls = _calls(tree)
    names = {name for _, name in calls}
    if _draws(calls, plotters):
        return REASON_PLOTTING
    shows = _shows_something(tree)
    imports = (ast.Import, ast.ImportFrom)
    if tree.body and isinstance(tree.body[0], imports) and not shows:
        rest = [node for node in tree.body if not isinstance(node, imports)]
        only_glue = rest and all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                                 and _call_name(node.value)[1] in GLUE_CALLS for node in rest)
        return REASON_GLUE if only_glue else REASON_SETUP
    if names & GLUE_CALLS and not shows:
        return REASON_GLUE
    library = set(library)
    computes = any(owner in library or (owner is None and name in library) for owner, name in calls)
    if {name for _, name in _calls(tree, run_only=True)} & TABLE_CALLS and not computes:
        return REASON_TABLE
    if len(text.splitlines()) > LONG_CELL_LINES:
        return REASON_LONG
    return None


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _tags(cell: dict[str, Any]) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []) or [])


def notebook_folding(nb: dict[str, Any]) -> list[tuple[int, str, bool]]:
    """For each code cell the rule folds: ``(cell index, reason, already folded)``."""
    cells = nb.get("cells", [])
    sources = [_source(c) for c in cells if c.get("cell_type") == "code"]
    library, plotters = library_names(sources), plotting_functions(sources)
    found = []
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        tags = _tags(cell)
        reason = cell_needs_folding(_source(cell), tags, library, plotters)
        if reason is not None:
            found.append((i, reason, bool(FOLDED_TAGS & set(tags))))
    return found


def folding_problems(nb: dict[str, Any]) -> list[str]:
    """What breaks the rule in a notebook: code cells the rule folds that are not folded."""
    problems = []
    for i, reason, folded in notebook_folding(nb):
        if not folded:
            first = next((line for line in _source(nb["cells"][i]).splitlines() if line.strip()), "")
            problems.append(f"cell {i} ({reason}) is not folded: {first[:60]}")
    return problems


def unfolded_code_lines(nb: dict[str, Any]) -> int:
    """Lines of code a reader sees without opening a fold (cells without a folding tag)."""
    return sum(len(_source(c).strip().splitlines()) for c in nb.get("cells", [])
               if c.get("cell_type") == "code" and not FOLDED_TAGS & set(_tags(c)))


def apply_folding(nb: dict[str, Any]) -> list[int]:
    """Add ``hide-input`` to every cell the rule folds that is not folded yet; returns their indices."""
    changed = []
    for i, _, folded in notebook_folding(nb):
        if not folded:
            meta = nb["cells"][i].setdefault("metadata", {})
            meta["tags"] = [*meta.get("tags", []), FOLD_TAG]
            changed.append(i)
    return changed


def dump_notebook(nb: dict[str, Any]) -> str:
    """A notebook as the book stores it (nbformat's layout: one-space indent, UTF-8, final newline)."""
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dpbayes.book.folding",
                                     description="Check (or apply) the book's code-folding rule: tags only.")
    parser.add_argument("notebooks", nargs="+", type=Path, help="notebooks (.ipynb) to check")
    parser.add_argument("--apply", action="store_true",
                        help="write the missing hide-input tags into the notebooks (metadata only)")
    args = parser.parse_args(argv)
    pending = 0
    for path in args.notebooks:
        if path.suffix != ".ipynb" or not path.is_file():
            parser.error(f"not a notebook file: {path}")
        text = path.read_text(encoding="utf-8")
        nb = json.loads(text)
        before = json.loads(text)
        problems = folding_problems(nb)
        if args.apply:
            changed = apply_folding(nb)
            if changed:
                # only tags change: check it before writing
                assert [_source(c) for c in nb["cells"]] == [_source(c) for c in before["cells"]]
                atomic_write_text(path, dump_notebook(nb))
            print(f"{path}: {len(changed)} cell(s) tagged {FOLD_TAG}" + (f" ({', '.join(map(str, changed))})" if changed else ""))
            rest = [p for p in folding_problems(nb)]
            for p in rest:
                print(f"{path}: {p}")
            pending += len(rest)
        else:
            for p in problems:
                print(f"{path}: {p}")
            pending += len(problems)
            if problems:
                print(f"{path}: not written (add --apply to tag the cells)")
    return 1 if pending else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
