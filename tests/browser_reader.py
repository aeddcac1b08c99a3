"""What a reader of the rendered book would trip over (issue 27), for ``tests/test_browser.py``.

Per page, in headless Chromium at a window 1300 px wide (same Chromium and flags as
``browser_helpers``):

- ``unresolved reference``: MyST role text left in the visible text (``{glued}``, ``{cite:t}``,
  ``{py:func}`` ...), or a label shown as inline code instead of a link (`` `fig-fisher-scores` ``);
- ``figure downscaled``: an image in the article drawn wider than it is displayed
  (``naturalWidth`` > displayed width + :data:`DOWNSCALE_TOLERANCE_PX`): its labels shrink;
  draw it at the column's width (``dpbayes.book.figures.column_subplots``);
- ``alt text is a file path``: an image whose ``alt`` is empty or a file name (myst-nb's default
  when the cell has no ``mystnb.image.alt`` metadata);
- ``code cell left unfolded``: a notebook cell that the folding rule (``dpbayes.book.folding``)
  folds, shown open (its input visible without a click).

And on the landing page: ``dashboard link`` -- every claim link of the verdict dashboard lands on
a claims-table row whose "Claim" cell is the claim the dashboard shows.
"""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

from browser_helpers import CHROMIUM_FLAGS, chromium_path, page_states, serve

from dpbayes.book.folding import cell_needs_folding, library_names, plotting_functions

UNRESOLVED_REF = "unresolved reference"
DOWNSCALED_FIGURE = "figure downscaled"
PATH_ALT = "alt text is a file path"
UNFOLDED_CELL = "code cell left unfolded"
DASHBOARD_LINK = "dashboard link"
KINDS = (UNRESOLVED_REF, DOWNSCALED_FIGURE, PATH_ALT, UNFOLDED_CELL, DASHBOARD_LINK)

DOWNSCALE_TOLERANCE_PX = 2

ROLE_TEXT = re.compile(r"\{(?:glued|glue(?::\w+)?|cite(?::\w+)?|py:\w+|doc|ref|numref|eq|download|term|abbr)\}")
LABEL_CODE = re.compile(r"^(?:fig|tab|eq)-[\w.-]+$")  # a MyST label; role names in code are documentation
PATH_LIKE = re.compile(r"(^|/)_images/|\.(?:png|jpe?g|svg|gif|webp)$", re.I)

READER_JS = """
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  await Promise.all(Array.from(document.images).map(img => img.complete ? null :
      new Promise(r => { img.addEventListener('load', r); img.addEventListener('error', r); })));
  const article = document.querySelector('article, main, [role=main]') || document.body;
  const clone = article.cloneNode(true);
  clone.querySelectorAll('pre, code, kbd, samp, script, style, mjx-container, .math, svg, .headerlink')
    .forEach(e => e.remove());
  const hidden = el => { const d = el.closest('details'); return (d && !d.open) || el.getClientRects().length === 0; };
  const figures = Array.from(article.querySelectorAll('img'))
    .filter(img => !img.closest('.dpbayes-no-figure-check'))
    .map(img => {
      const fig = img.closest('figure');
      const num = fig ? fig.querySelector('.caption-number') : null;
      return {src: img.getAttribute('src') || '', alt: img.getAttribute('alt'), natural: img.naturalWidth,
              shown: img.getBoundingClientRect().width, number: num ? num.textContent.trim() : '',
              visible: !hidden(img)};
    });
  const cells = Array.from(article.querySelectorAll('div.cell')).map(cell => {
    const input = cell.querySelector('.cell_input');
    const pre = input ? input.querySelector('pre') : null;
    return {tags: Array.from(cell.classList).filter(c => c.startsWith('tag_')).map(c => c.slice(4)),
            source: pre ? pre.textContent : '', open: input ? !hidden(input) : false};
  });
  return {
    text: clone.textContent,
    codes: Array.from(article.querySelectorAll('code')).filter(c => !c.closest('pre')).map(c => c.textContent.trim()),
    figures, cells,
  };
}
"""


def page_problems(state: dict) -> list[str]:
    """The problems of one page from the state ``READER_JS`` returned (pure; unit-tested)."""
    found: list[str] = []
    for m in ROLE_TEXT.finditer(state["text"]):
        snippet = " ".join(state["text"][max(0, m.start() - 30): m.end() + 40].split())
        found.append(f"{UNRESOLVED_REF}: role text left in the page: ...{snippet}...")
    for code in dict.fromkeys(state["codes"]):
        if LABEL_CODE.search(code):
            found.append(f"{UNRESOLVED_REF}: a label shown as code instead of a link: `{code}`")
    for k, fig in enumerate(state["figures"], start=1):
        name = fig["number"] or f"image {k}"
        if fig["visible"] and fig["natural"] > fig["shown"] + DOWNSCALE_TOLERANCE_PX:
            found.append(f"{DOWNSCALED_FIGURE}: {name} drawn {fig['natural']} px wide, shown {fig['shown']:.0f} px "
                         f"({fig['src'].rsplit('/', 1)[-1][:24]})")
        alt = (fig["alt"] or "").strip()
        if "_images/" in fig["src"] and (not alt or PATH_LIKE.search(alt)):
            found.append(f"{PATH_ALT}: {name} (alt {alt[:40]!r})")
    sources = [c["source"] for c in state["cells"]]
    library, plotters = library_names(sources), plotting_functions(sources)
    for i, cell in enumerate(state["cells"]):
        if not cell["source"].strip():
            continue
        reason = cell_needs_folding(cell["source"], cell["tags"], library, plotters)
        if reason is not None and cell["open"]:
            first = next(line for line in cell["source"].splitlines() if line.strip())
            found.append(f"{UNFOLDED_CELL}: cell {i + 1} ({reason}) shown open: {first.strip()[:50]}")
    return found


def reader_problems_from(state: object) -> list[str]:
    """The problems of one page from what ``READER_JS`` returned there (a text: the page could not be read)."""
    return [state] if isinstance(state, str) else page_problems(state)  # type: ignore[arg-type]


def reader_problems(root: Path, pages: list[str], width: int = 1300) -> dict[str, list[str]]:
    """``{page: [problems]}`` for ``pages`` opened in a window ``width`` px wide."""
    return {rel: reader_problems_from(state) for rel, _, state in page_states(root, pages, width, READER_JS)}


# -- the dashboard's links ---------------------------------------------------------------------------
_DASHBOARD_JS = """
async () => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const strip = cell => { const c = cell.cloneNode(true);
    c.querySelectorAll('mjx-container, .math, sup, a.footnote-reference, .sd-badge, .badge').forEach(e => e.remove());
    return c.textContent.replace(/\\s+/g, ' ').trim(); };
  return Array.from(document.querySelectorAll('a[href*="#claim-"]')).map(a => {
    const row = a.closest('tr');
    const cells = row ? Array.from(row.children) : [];
    const table = row ? row.closest('table') : null;
    const heads = table ? Array.from(table.querySelectorAll('thead th')).map(th => th.textContent.trim()) : [];
    const col = heads.findIndex(h => h.startsWith('Claim'));
    return {href: a.getAttribute('href'), claim: col >= 0 && cells[col] ? strip(cells[col]) : ''};
  });
}
"""

_TARGET_JS = """
(ids) => {
  const strip = cell => { const c = cell.cloneNode(true);
    c.querySelectorAll('mjx-container, .math, sup, a.footnote-reference, .sd-badge, .badge, .dpbayes-cell-label')
      .forEach(e => e.remove());
    return c.textContent.replace(/\\s+/g, ' ').trim(); };
  return ids.map(id => {
    const el = document.getElementById(id);
    if (!el) { return {id, found: false}; }
    const table = el.closest('table');
    const heads = table ? Array.from(table.querySelectorAll('thead th')).map(th => th.textContent.trim().toLowerCase()) : [];
    const col = heads.findIndex(h => h.startsWith('claim'));
    return {id, found: true, tag: el.tagName.toLowerCase(),
            claim: el.tagName === 'TR' && col >= 0 && el.children[col] ? strip(el.children[col]) : ''};
  });
}
"""


def dashboard_links(root: Path, page: str = "intro.html") -> list[dict]:
    """Every claim link of the dashboard with the claim it shows and what its target row holds."""
    from playwright.sync_api import sync_playwright

    out: list[dict] = []
    with serve(root) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS, headless=True)
        try:
            tab = browser.new_context(viewport={"width": 1300, "height": 900}).new_page()
            tab.goto(base + page, wait_until="load", timeout=30_000)
            links = tab.evaluate(_DASHBOARD_JS)
            by_target: dict[str, list[dict]] = {}
            for link in links:
                target, _, fragment = link["href"].partition("#")
                by_target.setdefault(urllib.parse.urljoin(page, target), []).append({**link, "id": fragment})
            for target, items in by_target.items():
                tab.goto(base + target, wait_until="load", timeout=30_000)
                found = tab.evaluate(_TARGET_JS, [item["id"] for item in items])
                for item, row in zip(items, found):
                    out.append({**item, "target": target, **{f"row_{k}": v for k, v in row.items()}})
        finally:
            browser.close()
    return out


def dashboard_problems(links: list[dict]) -> list[str]:
    """Links whose target is missing, not a table row, or a row of another claim (pure)."""
    found = []
    for link in links:
        where = f"{link['target']}#{link['id']}"
        if not link.get("row_found"):
            found.append(f"{DASHBOARD_LINK}: {where} does not exist")
        elif link.get("row_tag") != "tr":
            found.append(f"{DASHBOARD_LINK}: {where} is a <{link['row_tag']}>, not a claims-table row")
        elif link["row_claim"] != link["claim"]:
            found.append(f"{DASHBOARD_LINK}: {where} holds {link['row_claim'][:60]!r}, "
                         f"the dashboard shows {link['claim'][:60]!r}")
    return found


def split_pending(problems: dict[str, list[str]], pending: dict[tuple[str, str], str]) -> tuple[dict, list[str]]:
    """``(problems not pending, pending entries that matched nothing)``.

    ``pending`` maps ``(page, problem prefix)`` to the reason it is allowed for now; a problem is
    pending when it is on that page and starts with that prefix (``"figure downscaled: Fig. 1.6"``
    covers one figure, ``"alt text is a file path"`` every image of the page).
    """
    used: set[tuple[str, str]] = set()
    left: dict[str, list[str]] = {}
    for page, items in problems.items():
        keep = []
        for item in items:
            key = next((k for k in pending if k[0] == page and item.startswith(k[1])), None)
            if key is None:
                keep.append(item)
            else:
                used.add(key)
        left[page] = keep
    checked = set(problems)
    stale = [f"{page}: {prefix}" for page, prefix in pending if page in checked and (page, prefix) not in used]
    return left, stale
