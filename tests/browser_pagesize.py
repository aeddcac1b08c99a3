"""What a reader meets on a rendered chapter page before opening anything (issue "A book read in layers").

The visible text of the article, with closed ``<details>`` (dropdowns, folded code) and hidden elements
removed, math and code counted as text; words and numbers counted with ``dpbayes.book.pagesize`` (the
same rules an author checks the Markdown with), and the largest count of numbers in one table cell.
"""

from __future__ import annotations

from pathlib import Path

from browser_helpers import page_states

from dpbayes.book.pagesize import PageSize, count_numbers, count_words

_SIZE_JS = """
() => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const clone = article.cloneNode(true);
  // closed folds and anything the reader cannot see (MathJax's assistive copies, hidden spans)
  const live = Array.from(article.querySelectorAll('*'));
  const copies = Array.from(clone.querySelectorAll('*'));
  live.forEach((el, i) => {
    const d = el.closest('details');
    const folded = d && !d.open && !el.closest('summary') && el !== d;
    if (folded || (el.getClientRects().length === 0 && !['BR', 'WBR'].includes(el.tagName))) { copies[i].dataset.drop = '1'; }
  });
  clone.querySelectorAll('[data-drop], script, style, .headerlink, mjx-assistive-mml').forEach(e => e.remove());
  const cells = Array.from(clone.querySelectorAll('td, th')).map(c => c.textContent);
  return {text: clone.innerText || clone.textContent, cells};
}
"""


def rendered_size(page: str, state: dict) -> PageSize:
    """A page's :class:`~dpbayes.book.pagesize.PageSize` from what ``_SIZE_JS`` returned (pure; unit-tested)."""
    per_cell = [count_numbers(c) for c in state["cells"]]
    return PageSize(page, count_words(state["text"]), count_numbers(state["text"]), max(per_cell, default=0))


def rendered_sizes(root: Path, pages: list[str], width: int = 1300) -> dict[str, PageSize]:
    """The size of each page at ``width`` px."""
    out = {}
    for rel, _, state in page_states(root, pages, width, _SIZE_JS):
        if isinstance(state, str):
            raise RuntimeError(f"{rel}: {state}")
        out[rel] = rendered_size(rel, state)
    return out
