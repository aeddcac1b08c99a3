"""Figures on the rendered notebook pages (issue 16, items 3-4), for ``tests/test_browser.py``.

Per page, at a given window width, in headless Chromium (same Chromium and flags as
``browser_helpers``):

- every image in a notebook cell's output sits in a ``<figure>`` whose ``<figcaption>`` carries a
  number ("Fig. 3.2") and text: ``uncaptioned image: <src>``;
- every such image is shown at least ``min(natural width, column)`` wide, where the column is the
  width ``dpbayes.book.figures.BOOK_COLUMN_PX`` the legibility check of the stored figures assumes:
  ``figure shown narrower than assumed`` (folded cells are opened first).

Code blocks that do not fit the column are checked on every page by ``browser_layout``.
"""

from __future__ import annotations

from pathlib import Path

from browser_helpers import page_states

UNCAPTIONED = "uncaptioned image"
NARROW_FIGURE = "figure shown narrower than assumed"
BODY_FONT = "body text size differs from the one the figure check assumes"

# also run by a visit that serves several checks (browser_layout.check_layout's ``last``: it opens folded cells)
FIGURES_JS = """
async () => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  await Promise.all(Array.from(document.images).map(img => img.complete ? null :
      new Promise(r => { img.addEventListener('load', r); img.addEventListener('error', r); })));
  const article = document.querySelector('article, main, [role=main]') || document.body;
  const para = Array.from(article.querySelectorAll('p')).find(p => !p.closest('figure, .cell_output, .cell_input, table, aside, .admonition'));
  const body = parseFloat(getComputedStyle(para || article).fontSize);
  const images = Array.from(article.querySelectorAll('.cell_output img, .output img, img.figure-output'))
    .map(img => {
      const fig = img.closest('figure');
      const cap = fig ? fig.querySelector('figcaption') : null;
      return {src: img.getAttribute('src'), shown: img.getBoundingClientRect().width, natural: img.naturalWidth,
              number: cap ? (cap.querySelector('.caption-number') || {}).textContent || '' : '',
              caption: cap ? cap.textContent.trim() : ''};
    });
  return {images, body};
}
"""


def notebook_pages(root: Path) -> list[str]:
    """Pages made from notebooks: those with Jupyter cells."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.html")
                  if "_static" not in p.parts and 'class="cell docutils container' in p.read_text(encoding="utf-8"))


def figure_problems_from(state: object, column_px: float | None = None, body_px: float | None = None) -> list[str]:
    """The problems of one page from what ``FIGURES_JS`` returned there (see :func:`figure_problems`)."""
    if isinstance(state, str):
        return [state]
    found = []
    if body_px is not None and abs(state["body"] - body_px) > 0.5:  # type: ignore[index]
        found.append(f"{BODY_FONT}: {state['body']:g} px, assumed {body_px:g} px")  # type: ignore[index]
    for img in state["images"]:  # type: ignore[index]
        if not img["number"].strip() or len(img["caption"]) <= len(img["number"]) + 10:
            found.append(f"{UNCAPTIONED}: {img['src']}")
        if column_px is not None and img["shown"] + 1 < min(img["natural"], column_px):
            found.append(f"{NARROW_FIGURE}: {img['src']} shown {img['shown']:.0f} px, natural "
                         f"{img['natural']} px, column assumed {column_px:.0f} px")
    return found


def figure_problems(root: Path, pages: list[str], width: int, column_px: float | None = None,
                    screenshot_dir: Path | None = None, body_px: float | None = None) -> dict[str, list[str]]:
    """``{page: [problems]}`` for ``pages`` opened in a window ``width`` px wide.

    ``column_px``: the column width the figure legibility check assumes (checked only if given);
    ``body_px``: the body text size it measures figure text against (checked only if given).
    """
    problems: dict[str, list[str]] = {}
    for rel, tab, state in page_states(root, pages, width, FIGURES_JS):
        problems[rel] = figure_problems_from(state, column_px, body_px)
        if screenshot_dir is not None and not isinstance(state, str):
            screenshot_dir.mkdir(parents=True, exist_ok=True)
            tab.screenshot(path=str(screenshot_dir / f"{rel.replace('/', '__')[:-5]}-{width}.png"), full_page=True)
    return problems
