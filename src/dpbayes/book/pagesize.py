"""How much a reader meets on a page before opening anything: unfolded words, numbers, numbers per table cell.

A chapter page is read in layers (question, findings, one figure, a verdict table); the evidence sits in
folded blocks (``dropdown`` / ``toggle`` directives, ``<details>``) or on the notebook pages. This module
measures a page's Markdown source with every glued value resolved to the text the page will show, so an
author can check the targets without building the book; ``tests/test_browser.py`` measures the rendered
page the same way.

Run ``python -m dpbayes.book.pagesize [page.md ...]`` for a table (default: every chapter page), and
``python -m dpbayes.book.pagesize --unused-keys`` for the glued keys that no page shows, per notebook.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .pagevalues import resolve_glued_text

__all__ = ["MAX_WORDS", "MAX_NUMBERS", "MAX_NUMBERS_PER_CELL", "PageSize", "count_numbers", "count_words",
           "measure_text", "measure_page", "unfolded_markdown", "unused_glued_keys", "main"]

#: Targets for a chapter page's unfolded text (issue "A book read in layers").
MAX_WORDS = 2500
MAX_NUMBERS = 150
MAX_NUMBERS_PER_CELL = 6

# A number as a reader counts one: 12, 0.25, 1,234, 1e-3, 3.1 × 10^-4 counts once per digit group run.
_NUMBER_RE = re.compile(r"(?<![\w.])[-−+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+−]?\d+)?%?")
_WORD_RE = re.compile(r"(?<![\w.])[^\W\d_][\w'’-]*")  # not the e of 1e-3
_FOLDED_OPEN_RE = re.compile(r"^(?P<fence>:{3,}|`{3,})\{(?:dropdown|toggle)\}")
_FENCE_RE = re.compile(r"^(?P<fence>:{3,}|`{3,})")
_INCLUDE_RE = re.compile(r"^```\{include\}\s+(?P<path>\S+)\s*\n```\s*$", re.M)


@dataclass(frozen=True)
class PageSize:
    """Unfolded words and numbers of one page, and the most numbers in one table cell."""

    page: str
    words: int
    numbers: int
    max_numbers_per_cell: int

    def problems(self, max_words: int = MAX_WORDS, max_numbers: int = MAX_NUMBERS,
                 max_per_cell: int = MAX_NUMBERS_PER_CELL) -> list[str]:
        """What exceeds the targets, as sentences (empty when the page is within them)."""
        out = []
        if self.words > max_words:
            out.append(f"{self.page}: {self.words} unfolded words (target at most {max_words})")
        if self.numbers > max_numbers:
            out.append(f"{self.page}: {self.numbers} unfolded numbers (target at most {max_numbers})")
        if self.max_numbers_per_cell > max_per_cell:
            out.append(f"{self.page}: a table cell with {self.max_numbers_per_cell} numbers "
                       f"(target at most {max_per_cell})")
        return out


def count_numbers(text: str) -> int:
    """Numbers a reader sees in ``text`` (integers, decimals, scientific notation, percentages)."""
    return len(_NUMBER_RE.findall(text))


def count_words(text: str) -> int:
    """Words (runs of letters) in ``text``."""
    return len(_WORD_RE.findall(text))


def unfolded_markdown(text: str) -> str:
    """``text`` without its folded blocks, comments, code fences' options, link targets and labels."""
    lines = text.splitlines()
    kept: list[str] = []
    depth_fence: str | None = None
    for line in lines:
        stripped = line.lstrip()
        if depth_fence is None:
            m = _FOLDED_OPEN_RE.match(stripped)
            if m:
                depth_fence = m.group("fence")
                continue
            kept.append(line)
        elif stripped.rstrip() == depth_fence:
            depth_fence = None
    body = "\n".join(kept)
    body = re.sub(r"<details>.*?</details>", " ", body, flags=re.S)
    body = re.sub(r"<!--.*?-->", " ", body, flags=re.S)
    body = re.sub(r"^\(.*?\)=\s*$", " ", body, flags=re.M)  # labels
    body = re.sub(r"^:[\w-]+:.*$", " ", body, flags=re.M)  # directive options
    body = re.sub(r"^(:{3,}|`{3,}).*$", " ", body, flags=re.M)  # fences
    body = re.sub(r"\]\([^)]*\)", "]", body)  # link targets
    body = re.sub(r"\{[\w:-]+\}`([^`]*)`", r"\1", body)  # roles: keep their text
    body = re.sub(r"^\|[-:| ]+\|\s*$", " ", body, flags=re.M)  # table rules
    return body


def _table_cells(text: str) -> list[str]:
    cells: list[str] = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("|") and s.endswith("|") and not re.fullmatch(r"\|[-:| ]+\|", s):
            cells.extend(re.split(r"(?<!\\)\|", s.strip("|")))
    return cells


def measure_text(page: str, text: str) -> PageSize:
    """Measure Markdown ``text`` whose glued values are already resolved."""
    body = unfolded_markdown(text)
    # HTML tables that glued DataFrames bring in: one cell per <td>/<th>
    html_cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", body, flags=re.S)
    plain = re.sub(r"<[^>]+>", " ", body)
    per_cell = [count_numbers(c) for c in _table_cells(body) + html_cells]
    return PageSize(page, count_words(plain), count_numbers(plain), max(per_cell, default=0))


def measure_page(path: Path, root: Path | None = None) -> PageSize:
    """Measure a Markdown page of the book as the reader sees it unfolded (includes and glued values resolved)."""
    path = Path(path).resolve()
    root = Path(root).resolve() if root else Path(__file__).resolve().parents[3]
    text = path.read_text(encoding="utf-8")
    text = _INCLUDE_RE.sub(lambda m: (path.parent / m.group("path")).read_text(encoding="utf-8"), text)
    text = resolve_glued_text(text, path.parent, root)
    return measure_text(path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path), text)


def unused_glued_keys(root: Path) -> dict[str, list[str]]:
    """Per notebook of the book (``chapters/**.ipynb``): the keys its stored outputs glue that no page shows.

    A page shows a key through a ``{glued}`` role or a ``{glue}`` block (pages: every ``*.md`` outside
    ``_build``, and every notebook's own Markdown cells, which may use ``{glue}`` roles on their keys).
    The source's own numbers (``source.*``) count as used: they are declared once, next to their citation.
    """
    import json

    from .pagevalues import GLUE_BLOCK_RE, glue_block_notebook, glued_references, resolve_notebook, stored_glue_values

    root = Path(root)
    used: set[tuple[Path, str]] = set()
    pages = [p for p in root.rglob("*.md") if "_build" not in p.parts and not any(x.startswith(".") for x in p.parts)]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for ref in glued_references(text):
            try:
                used.add((resolve_notebook(ref.ref, page.parent, root).resolve(), ref.key))
            except ValueError:
                pass
        for m in GLUE_BLOCK_RE.finditer(text):
            used.add((glue_block_notebook(m.group("doc"), page.parent, root).resolve(), m.group("key")))
    out: dict[str, list[str]] = {}
    for nb in sorted((root / "chapters").rglob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8")).get("cells", [])
        own = "\n".join("".join(c.get("source", "")) for c in cells if c.get("cell_type") == "markdown")
        keys = [k for k in stored_glue_values(nb) if not k.startswith("source.")]
        unused = [k for k in keys if (nb.resolve(), k) not in used and f":{k}" not in own and f"`{k}`" not in own
                  and f" {k}\n" not in own]
        out[nb.relative_to(root).as_posix()] = unused
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the size of each page (default: every chapter's ``index.md``); exit 1 above a target."""
    args = sys.argv[1:] if argv is None else argv
    root = Path(__file__).resolve().parents[3]
    if args[:1] == ["--unused-keys"]:
        unused = unused_glued_keys(root)
        for nb, keys in unused.items():
            print(f"{nb:60} {len(keys):5d} glued keys no page shows")
        print(f"{'total':60} {sum(map(len, unused.values())):5d}")
        return 0
    pages = [Path(a) for a in args] or sorted(root.glob("chapters/*/index.md"))
    failed = False
    print(f"{'page':48} {'words':>6} {'numbers':>8} {'max/cell':>8}")
    for p in pages:
        size = measure_page(p, root)
        bad = size.problems()
        failed |= bool(bad)
        print(f"{size.page:48} {size.words:6d} {size.numbers:8d} {size.max_numbers_per_cell:8d}"
              + ("  over target" if bad else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
