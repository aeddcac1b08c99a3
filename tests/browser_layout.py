"""Wide tables and full-page screenshots at several window widths (issue 16, item 2).

Used by ``tests/test_browser.py`` (``make browser``). A table is **clipped** when a box around it
(the table itself or an ancestor whose ``overflow-x`` is not ``visible``) is narrower than its
content. That is fine only when the box scrolls (``overflow-x: auto | scroll``) and its horizontal
scrollbar can be seen with the table: the box is at most as high as the window, so that scrolling
the table into view brings the scrollbar with it. A box that hides the overflow, a scroll box
taller than the window (its scrollbar "screens below"), and a table running past the right edge
of the window are reported as ``clipped table``.
"""

from __future__ import annotations

from pathlib import Path

CLIPPED_TABLE = "clipped table"

# For every visible table: its content width, and the first box around it that cuts it off.
_TABLES_JS = """
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
    if (MathJax.typesetPromise) { await MathJax.typesetPromise(); }
  }
  const vw = document.documentElement.clientWidth, vh = window.innerHeight;
  const out = [];
  document.querySelectorAll('table').forEach(t => {
    if (!t.getClientRects().length || getComputedStyle(t).visibility === 'hidden') return;
    const first = (t.querySelector('th, td') || t).textContent.trim().replace(/\\s+/g, ' ').slice(0, 60);
    const r = t.getBoundingClientRect();
    const content = Math.max(t.scrollWidth, r.width);
    let box = null;
    for (let el = t; el && el !== document.documentElement; el = el.parentElement) {
      const s = getComputedStyle(el);
      if (s.overflowX === 'visible') continue;
      const e = el.getBoundingClientRect();
      if (r.left + content > e.left + el.clientLeft + el.clientWidth + 1) {
        box = {tag: el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).split(' ')[0] : ''),
               overflow: s.overflowX, width: el.clientWidth, height: el.getBoundingClientRect().height,
               scrollWidth: el.scrollWidth};
        break;
      }
    }
    out.push({first, width: Math.round(content), left: Math.round(r.left), right: Math.round(r.left + content),
              box, vw, vh});
  });
  return out;
}
"""


def table_problems(tables: list[dict]) -> list[str]:
    """``clipped table`` problems for the measurements of ``_TABLES_JS``."""
    problems = []
    for t in tables:
        where = f"table '{t['first']}' ({t['width']} px wide"
        box = t["box"]
        if box is not None:
            if box["overflow"] not in ("auto", "scroll"):
                problems.append(f"{CLIPPED_TABLE}: {where}, cut to {box['width']} px by {box['tag']} with overflow-x {box['overflow']}: no scrollbar)")
            elif box["height"] > t["vh"]:
                problems.append(
                    f"{CLIPPED_TABLE}: {where}, scrolls in {box['tag']} {box['width']} px wide but "
                    f"{round(box['height'])} px high: its scrollbar is below the {t['vh']} px window)"
                )
        elif t["right"] > t["vw"] + 1:
            problems.append(f"{CLIPPED_TABLE}: {where}, runs {t['right'] - t['vw']} px past the right edge of the {t['vw']} px window)")
    return problems


def check_layout(
    base_url: str, pages: list[str], widths: tuple[int, ...] = (1300, 800), height: int = 900,
    screenshot_dir: Path | None = None, browser=None,  # noqa: ANN001 - a playwright Browser
) -> tuple[dict[str, list[str]], dict[str, list[dict]]]:
    """Open every page at every window width; return ``({page: problems}, {"page@width": tables})``.

    With ``screenshot_dir``, a full-page PNG of every page at every width is saved there as
    ``<width>/<page path with / as __>.png``.
    """
    problems: dict[str, list[str]] = {p: [] for p in pages}
    measured: dict[str, list[dict]] = {}
    for width in widths:
        context = browser.new_context(viewport={"width": width, "height": height}, service_workers="block")
        try:
            page = context.new_page()
            for rel in pages:
                page.goto(base_url + rel, wait_until="load", timeout=30_000)
                try:
                    tables = page.evaluate(_TABLES_JS)
                except Exception:  # the page navigated on load (a redirect stub): measure where it went
                    page.wait_for_load_state("load")
                    tables = page.evaluate(_TABLES_JS)
                measured[f"{rel}@{width}"] = tables
                problems[rel] += [f"{p} at {width} px" for p in table_problems(tables)]
                if screenshot_dir is not None:
                    target = screenshot_dir / str(width) / (rel.replace("/", "__")[: -len(".html")] + ".png")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(target), full_page=True)
        finally:
            context.close()
    return problems, measured
