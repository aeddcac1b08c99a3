"""Tables, code blocks and full-page screenshots at several window widths (issue 16, item 2).

Used by ``tests/test_browser.py`` (``make browser``), on every page of the book. Per page and width:

- A table is **clipped** when a box around it (the table itself or an ancestor whose
  ``overflow-x`` is not ``visible``) is narrower than its content. That is fine only when the box
  scrolls (``overflow-x: auto | scroll``) and its horizontal scrollbar can be seen with the table:
  the box is at most as high as the window, so that scrolling the table into view brings the
  scrollbar with it. A box that hides the overflow, a scroll box taller than the window (its
  scrollbar "screens below"), and a table running past the right edge of the window are reported
  as ``clipped table``.
- A table of **running text** (a body cell with ``PROSE_WORDS`` or more words outside code and
  math) that scrolls sideways in its box, even with its scrollbar in view, is reported as ``text
  table scrolls sideways``: the reader would scroll back and forth for every line. Its text must
  wrap within the column, or the table be shown stacked (one block per row, ``dpbayes-stacked``).
  Tables of numbers may scroll.
- A **word split** across two lines inside a table cell ("optimu" / "m") is reported as
  ``word split in a table cell``. Words are runs of letters and digits (with inner ``.``, ``,``
  and apostrophes: ``0.0866`` is one word); a break at a space, a hyphen, a slash or a bracket is a
  break between words. Exempt, because they may have to break: code (``code``, ``pre``, ``kbd``,
  ``samp``), typeset math, link texts that are URLs, and words longer than ``LONG_WORD`` characters.
- A **code block** (``pre``, folded cells opened first) whose content is wider than a box around
  it (the block itself when it scrolls, or an ancestor that cuts it off), or that runs past the
  right edge of the window, is reported as ``code wider than the column``: code must show all of
  its text within the column (long lines wrap, or are broken in the source).
"""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

from browser_helpers import evaluate_state

CLIPPED_TABLE = "clipped table"
SIDEWAYS_TEXT = "text table scrolls sideways"
PROSE_WORDS = 8  # words in one cell: running text, which is read line by line, not scanned like numbers
SPLIT_WORD = "word split in a table cell"
WIDE_CODE = "code wider than the column"
_REDIRECT = re.compile(r"""<meta\s+http-equiv=["']refresh["']""", re.I)
LONG_WORD = 24  # characters: a longer word (an identifier, a hash) may break anywhere

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
    // running text: the most words (outside code and math) in one body cell
    let prose = 0;
    t.querySelectorAll('td').forEach(cell => {
      if (cell.closest('table') !== t) return;
      const c = cell.cloneNode(true);
      c.querySelectorAll('code, pre, kbd, samp, .pre, mjx-container, mjx-assistive-mml, .MathJax, svg, .dpbayes-cell-label')
        .forEach(e => e.remove());
      prose = Math.max(prose, c.textContent.split(/\\s+/).filter(w => /\\p{L}{2,}/u.test(w)).length);
    });
    out.push({first, width: Math.round(content), left: Math.round(r.left), right: Math.round(r.left + content),
              box, vw, vh, prose});
  });
  return out;
}
"""


# Words of table cells whose letters lie on more than one line box.
_SPLIT_WORDS_JS = """
(longWord) => {
  const skip = 'code, pre, kbd, samp, tt, .pre, mjx-container, mjx-assistive-mml, .MathJax, svg, script, style';
  const word = /[\\p{L}\\p{N}]+(?:[.,'\u2019][\\p{L}\\p{N}]+)*/gu;
  const lines = rects => {  // distinct line boxes among the rectangles of a range
    const tops = [];
    rects.filter(r => r.width > 0 && r.height > 0).forEach(r => {
      if (!tops.some(t => Math.abs(t - r.top) < r.height / 2)) tops.push(r.top);
    });
    return tops.length;
  };
  const out = [];
  document.querySelectorAll('table').forEach(t => {
    if (!t.getClientRects().length || getComputedStyle(t).visibility === 'hidden') return;
    const first = (t.querySelector('th, td') || t).textContent.trim().replace(/\\s+/g, ' ').slice(0, 60);
    t.querySelectorAll('th, td').forEach(cell => {
      if (cell.closest('table') !== t) return;  // a nested table is measured as its own table
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const parent = node.parentElement;
        if (!parent || parent.closest(skip) || parent.closest('table') !== t) continue;
        const link = parent.closest('a');
        if (link && /:\\/\\/|^www\\./.test(link.textContent.trim())) continue;
        for (const m of node.data.matchAll(word)) {
          if (m[0].length > longWord) continue;
          const range = document.createRange();
          range.setStart(node, m.index);
          range.setEnd(node, m.index + m[0].length);
          if (lines(Array.from(range.getClientRects())) < 2) continue;
          // where it breaks: the first character on a lower line than the word's first one
          let at = m[0].length;
          const top0 = range.getClientRects()[0].top;
          for (let i = 1; i < m[0].length; i++) {
            range.setStart(node, m.index + i); range.setEnd(node, m.index + i + 1);
            const r = range.getClientRects()[0];
            if (r && r.top > top0 + r.height / 2) { at = i; break; }
          }
          out.push({table: first, word: m[0].slice(0, at) + '|' + m[0].slice(at), cell: cell.textContent.trim().replace(/\\s+/g, ' ').slice(0, 60)});
        }
      }
    });
  });
  return out;
}
"""

# Every visible code block (folded cells opened): how far its content runs past the box that cuts it off.
_CODE_JS = """
async () => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const vw = document.documentElement.clientWidth;
  const article = document.querySelector('article, main, [role=main]') || document.body;
  const out = [];
  article.querySelectorAll('pre').forEach(p => {
    if (!p.getClientRects().length || getComputedStyle(p).visibility === 'hidden') return;
    const r = p.getBoundingClientRect();
    const right = r.left + Math.max(p.scrollWidth, r.width);
    const longest = p.textContent.split('\\n').reduce((a, b) => b.length > a.length ? b : a, '').slice(0, 90);
    let box = null;
    for (let el = p; el && el !== document.documentElement; el = el.parentElement) {
      const s = getComputedStyle(el);
      if (s.overflowX === 'visible') continue;
      const e = el.getBoundingClientRect();
      if (right > e.left + el.clientLeft + el.clientWidth + 1) {
        box = {tag: el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).split(' ')[0] : ''),
               overflow: s.overflowX, width: el.clientWidth};
        break;
      }
    }
    if (box || right > vw + 1) {
      out.push({width: Math.round(right - r.left), box, vw, past: Math.round(right - vw), first: longest});
    }
  });
  return out;
}
"""


def split_word_problems(splits: list[dict]) -> list[str]:
    """``word split in a table cell`` problems for the measurements of ``_SPLIT_WORDS_JS``."""
    return [f"{SPLIT_WORD}: {s['word']!r} in table '{s['table']}' (cell '{s['cell']}')" for s in splits]


def code_problems(blocks: list[dict]) -> list[str]:
    """``code wider than the column`` problems for the measurements of ``_CODE_JS``."""
    problems = []
    for b in blocks:
        if b["box"] is not None:
            how = "scrolls" if b["box"]["overflow"] in ("auto", "scroll") else f"cut off (overflow-x {b['box']['overflow']})"
            where = f"{b['width']} px in a {b['box']['width']} px {b['box']['tag']} that {how}"
        else:
            where = f"runs {b['past']} px past the right edge of the {b['vw']} px window"
        problems.append(f"{WIDE_CODE}: {where}: {b['first']!r}")
    return problems


def table_problems(tables: list[dict]) -> list[str]:
    """``clipped table`` and ``text table scrolls sideways`` problems for the measurements of ``_TABLES_JS``."""
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
            elif t["prose"] >= PROSE_WORDS:
                problems.append(
                    f"{SIDEWAYS_TEXT}: {where} in a {box['width']} px {box['tag']}, with up to {t['prose']} words "
                    "in a cell: running text must wrap in the column, or the table be stacked)"
                )
        elif t["right"] > t["vw"] + 1:
            problems.append(f"{CLIPPED_TABLE}: {where}, runs {t['right'] - t['vw']} px past the right edge of the {t['vw']} px window)")
    return problems


def check_layout(
    base_url: str, pages: list[str], widths: tuple[int, ...] = (1300, 800), height: int = 900,
    screenshot_dir: Path | None = None, browser=None,  # noqa: ANN001 - a playwright Browser
    first: dict[str, str] | None = None, last: dict[str, str] | None = None, states: dict[str, dict[str, object]] | None = None,
) -> tuple[dict[str, list[str]], dict[str, list[dict]]]:
    """Open every page at every window width; return ``({page: problems}, {"page@width": tables})``.

    The problems are clipped tables, words split in table cells and over-wide code blocks, each
    ending in `` at <width> px``. With ``screenshot_dir``, a full-page JPEG of every page at every
    width is saved there as ``<width>/<page path with / as __>.jpg`` (before folded cells are opened).

    Other checks can read the same visit (each page is loaded and typeset once): the scripts of
    ``first`` (``{name: script}``) run as soon as the page has loaded, before anything is opened or
    measured, those of ``last`` after the layout's own (which open the folded cells); what each returns
    goes to ``states[name]["page@width"]``, or a one-line error text if the page could not be read.
    """
    problems: dict[str, list[str]] = {p: [] for p in pages}
    measured: dict[str, list[dict]] = {}
    redirects = set()  # redirect stubs (index.html -> intro.html): the page they lead to is measured
    for rel in pages:
        with urllib.request.urlopen(base_url + rel, timeout=30) as resp:
            if _REDIRECT.search(resp.read().decode("utf-8", errors="replace")):
                redirects.add(rel)
    for width in widths:
        context = browser.new_context(viewport={"width": width, "height": height}, service_workers="block")
        try:
            page = context.new_page()
            for rel in pages:
                url = base_url + rel
                page.goto(url, wait_until="load", timeout=30_000)
                if rel in redirects:
                    page.wait_for_url(lambda u: u != url, timeout=30_000)
                    page.wait_for_load_state("load")
                _run_scripts(page, first, states, f"{rel}@{width}")
                tables = page.evaluate(_TABLES_JS)
                measured[f"{rel}@{width}"] = tables
                found = table_problems(tables) + split_word_problems(page.evaluate(_SPLIT_WORDS_JS, LONG_WORD))
                if screenshot_dir is not None:
                    target = screenshot_dir / str(width) / (rel.replace("/", "__")[: -len(".html")] + ".jpg")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    # JPEG: Chromium encodes a page of 10,000-17,000 px in 0.6-1.2 s instead of 0.9-1.9 s as PNG
                    page.screenshot(path=str(target), full_page=True, type="jpeg", quality=85)
                found += code_problems(page.evaluate(_CODE_JS))
                _run_scripts(page, last, states, f"{rel}@{width}")
                problems[rel] += [f"{p} at {width} px" for p in found]
        finally:
            context.close()
    return problems, measured


def _run_scripts(page, scripts: dict[str, str] | None, states: dict[str, dict[str, object]] | None, key: str) -> None:  # noqa: ANN001
    """``states[name][key]`` = what each script returns (:func:`browser_helpers.evaluate_state`)."""
    for name, script in (scripts or {}).items():
        assert states is not None, "scripts need a states dict"
        states.setdefault(name, {})[key] = evaluate_state(page, script)
