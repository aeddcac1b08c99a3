"""The rendered book, opened page by page in headless Chromium (``make browser``, part of ``make test``).

``make browser`` renders the book from the stored notebook outputs into ``_build/browser`` and runs
this file with ``DPBAYES_BOOK_HTML`` pointing at the HTML. Without that variable the tests are
skipped (``make unit`` does not build the book).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("playwright")

from browser_helpers import (  # noqa: E402
    RAW_TABLE,
    check_book,
    chromium_path,
    html_pages,
    open_offline,
    raw_math_problems,
    raw_table_paragraphs,
    report,
)

HTML = os.environ.get("DPBAYES_BOOK_HTML")
needs_book = pytest.mark.skipif(not HTML, reason="DPBAYES_BOOK_HTML not set: run `make browser`")
needs_chromium = pytest.mark.skipif(not Path(chromium_path()).exists(), reason="no Chromium (`make chromium`)")

EXTERNAL_ASSET = re.compile(
    r"""<(?:script|link|img|iframe|source|video|audio|embed)\b[^>]*?\b(?:src|href)=["'](?:https?:)?//[^"']+""", re.I
)
CSS_EXTERNAL = re.compile(r"""(?:url\(\s*["']?|@import\s+["'])(?:https?:)?//""", re.I)


@pytest.fixture(scope="module")
def root() -> Path:
    path = Path(HTML or "")
    assert (path / "index.html").exists(), f"no built book at {path} (run `make browser`)"
    return path


def chapter_first_pages(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.glob("chapters/*/index.html"))


def _check_every_page(root: Path, tmp_path: Path) -> None:
    pages = html_pages(root)
    assert "index.html" in pages and "rerun.html" in pages and "bibliography.html" in pages, pages
    # the practitioner's page and the API reference (one page per science module, tests/test_api_pages.py)
    api = [p for p in pages if p.startswith("api/")]
    assert "using-dpbayes.html" in pages and "api/index.html" in api and "api/release/statistic.html" in api, pages
    assert len(api) == len(list(Path(__file__).resolve().parents[1].glob("api/**/*.md"))), api
    firsts = chapter_first_pages(root)
    assert firsts, "no chapter pages were rendered"
    shots = tmp_path / "screenshots"
    problems = check_book(root, pages, screenshot_dir=shots, screenshot_pages=firsts)
    assert not any(problems.values()), "problems in the rendered book:\n" + report(problems)
    saved = sorted(p.name for p in shots.glob("*.png"))
    assert len(saved) == len(firsts), saved
    print(f"\n{len(pages)} pages checked; chapter screenshots in {shots}: {', '.join(saved)}")


@needs_book
def test_no_asset_from_the_network(root: Path) -> None:
    """Static check of the HTML and CSS: every script, style, image and font comes from the build."""
    offending = []
    for path in root.rglob("*.html"):
        if "_static" in path.parts:
            continue
        for m in EXTERNAL_ASSET.finditer(path.read_text(encoding="utf-8", errors="replace")):
            offending.append(f"{path.relative_to(root)}: {m.group(0)[:160]}")
    for path in root.rglob("*.css"):
        for m in CSS_EXTERNAL.finditer(path.read_text(encoding="utf-8", errors="replace")):
            offending.append(f"{path.relative_to(root)}: {m.group(0)}")
    assert not offending, "\n".join(offending)
    assert (root / "_static" / "mathjax" / "tex-svg.js").exists(), "MathJax is not served from _static"


INLINE_MATH = '<span class="math notranslate nohighlight">\\('


def _pages_with_math(root: Path) -> list[str]:
    """Pages whose HTML holds inline math, chapter pages first."""
    found = [p for p in html_pages(root) if INLINE_MATH in (root / p).read_text(encoding="utf-8")]
    assert found, "no page with inline math was rendered"
    return sorted(found, key=lambda p: (not p.startswith("chapters/"), p))


def _page_with_math(root: Path) -> str:
    return _pages_with_math(root)[0]


@needs_book
def test_offline_file_url_typesets_math_and_shows_images(root: Path) -> None:
    """The acceptance check: index.html (and a page with math) opened from disk, network refused."""
    for rel in dict.fromkeys(["index.html", _page_with_math(root)]):
        state = open_offline(root / rel)
        assert not state["refused"], f"{rel} tried the network: {state['refused']}"
        assert not state["errors"], f"{rel}: JS errors {state['errors']}"
        assert state["mathNodes"] > 0 and state["mathErrors"] == 0, (rel, state["mathNodes"], state["mathErrors"])
        assert not raw_math_problems(state["text"]), raw_math_problems(state["text"])
        assert all(img["w"] > 0 for img in state["images"]), state["images"]


def _figure_image(root: Path) -> tuple[str, Path]:
    """A chapter page and a figure file (under ``_images/``) that it shows."""
    for rel in html_pages(root):
        if not rel.startswith("chapters/"):
            continue
        for src in re.findall(r"""<img[^>]+src=["']([^"']+)["']""", (root / rel).read_text(encoding="utf-8")):
            target = ((root / rel).parent / src).resolve()
            if "_images" in target.parts and target.exists():
                return rel, target
    # no chapter figure yet: fall back to any image of any page (the logo)
    for rel in html_pages(root):
        for src in re.findall(r"""<img[^>]+src=["']([^"']+)["']""", (root / rel).read_text(encoding="utf-8")):
            target = ((root / rel).parent / src).resolve()
            if target.exists():
                return rel, target
    raise AssertionError("no page shows an image")


@needs_book
def test_checks_fail_on_a_broken_copy(root: Path, tmp_path: Path) -> None:
    """Mutate a copy of the build: a deleted figure, broken TeX, and a page without MathJax must fail."""
    copy = tmp_path / "html"
    shutil.copytree(root, copy)
    fig_page, figure = _figure_image(copy)
    figure.unlink()

    math_pages = _pages_with_math(copy)
    math_page = math_pages[0]
    html = (copy / math_page).read_text(encoding="utf-8")
    # broken TeX: an undefined control sequence inside the first inline formula
    html = html.replace(INLINE_MATH, INLINE_MATH + "\\undefinedmacro ", 1)
    (copy / math_page).write_text(html, encoding="utf-8")

    # a second page loses its MathJax script: its math must show up as raw TeX
    nojax_page = math_pages[1] if len(math_pages) > 1 else None
    if nojax_page:
        text = (copy / nojax_page).read_text(encoding="utf-8")
        text, n = re.subn(r"<script[^>]*mathjax[^>]*>\s*</script>", "", text)
        assert n, "could not find the MathJax script tag to remove"
        (copy / nojax_page).write_text(text, encoding="utf-8")

    control = "bibliography.html"
    pages = list(dict.fromkeys([fig_page, math_page, *( [nojax_page] if nojax_page else []), control]))
    problems = check_book(copy, pages)
    assert any("image not loaded" in p and figure.name in p for p in problems[fig_page]), problems[fig_page]
    assert any("HTTP 404" in p and figure.name in p for p in problems[fig_page]), problems[fig_page]
    assert any("MathJax error" in p for p in problems[math_page]), problems[math_page]
    if nojax_page:
        assert any("raw \\(" in p for p in problems[nojax_page]), problems[nojax_page]
    assert problems[control] == [], problems[control]


@needs_book
def test_raw_math_detector() -> None:
    assert raw_math_problems("the estimator $\\hat\\theta$ is biased")
    assert raw_math_problems("see \\(x\\)") and raw_math_problems("\\[ x \\]")
    assert raw_math_problems("$$x$$")
    assert not raw_math_problems("it costs 5 $ and nothing else; a plain text page")
    assert raw_table_paragraphs(["| a | b |\n|:---|---:|\n| 1 | 2 |"])  # tables: raw_table_paragraphs
    assert raw_math_problems("quantile / `max_{ k <=ln(1/gamma)/eps} H")


def test_raw_table_detector() -> None:
    assert raw_table_paragraphs(["| eps | risk | max |P_LP - P_exact| |\n|\u2014\u2014-:|\u2014-|\u2013\u2013|"]) == [
        "| eps | risk | max |P_LP - P_exact| |"
    ]  # smart dashes, as Sphinx renders "---"
    assert raw_table_paragraphs(["| a | b |\n|:--|--:|"]) and raw_table_paragraphs(["|---|---|"])
    assert raw_table_paragraphs(["text\n| 1 | 2 | 3 |"]) == ["text"]
    assert not raw_table_paragraphs(["the norm of x and y is small", "P(A | B) = 1", "a - b -- c"])


TINY_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head><body>
<p>Fine prose, a rendered table and code with pipes follow.</p>
<table><tr><th>a | b</th><th>c</th></tr><tr><td>1</td><td>2</td></tr></table>
<pre>| in | code |\n|---|---|</pre>
<p>|   t |   P(mu outside fixed interval | y_1:t) |   mean |
|---:|---:|---:|
|  25 |   0.872 |  -70.1 |</p>
<p style="display:none">| hidden | table | here |</p>
</body></html>
"""


@needs_chromium
def test_raw_table_check_fails_on_a_broken_page(tmp_path: Path) -> None:
    """A tiny page with one raw table (and a rendered one, code and a hidden paragraph): exactly it is reported."""
    (tmp_path / "page.html").write_text(TINY_PAGE, encoding="utf-8")
    (tmp_path / "fine.html").write_text(TINY_PAGE.split("<p>|")[0] + "</body></html>", encoding="utf-8")
    problems = check_book(tmp_path, ["page.html", "fine.html"])
    assert problems["fine.html"] == [], problems
    assert problems["page.html"] == [f"{RAW_TABLE}: | t | P(mu outside fixed interval | y_1:t) | mean |"], problems


@needs_book
def test_chapter_notebooks_are_numbered_n_1_n_2(root: Path) -> None:
    """Sidebar: chapter N ("N. Title", no second "Chapter N"), then its notebooks N.1, N.2, ..."""
    html = (root / "intro.html").read_text(encoding="utf-8")
    nav = html[: html.index("</nav>")] if "</nav>" in html else html
    entries = re.findall(r'class="reference internal" href="(chapters/[^"#]+)">([^<]*)<', nav)
    assert entries, "no chapter entries in the sidebar"
    chapter, child = 0, 0
    for href, text in entries:
        if href.endswith("/index.html"):
            chapter, child = chapter + 1, 0
            assert text.startswith(f"{chapter}. ") and "Chapter" not in text, text
        elif re.match(r"chapters/\d\d-", href):
            child += 1
            assert text.startswith(f"{chapter}.{child}. "), (href, text)
            assert not re.match(r"^[\d.]+ \d\d[a-z] ", text), text  # no "03a —" title prefix
    assert chapter >= 4, entries


# --------------------------------------------------------------------------------------------
# Wide tables, words split in table cells and over-wide code at 1300 and 800 px, on every page,
# and the screenshot artefact (issue 16, item 2)
# --------------------------------------------------------------------------------------------
from browser_layout import CLIPPED_TABLE, SIDEWAYS_TEXT, SPLIT_WORD, WIDE_CODE, check_layout  # noqa: E402
from browser_helpers import CHROMIUM_FLAGS, serve  # noqa: E402

SCREENSHOTS = os.environ.get("DPBAYES_SCREENSHOTS")  # `make browser`: _build/browser/screenshots
WIDTHS = (1300, 800)
READER_WIDTH = 1300  # the width of the reader checks (figures downscaled, folding ...)


def _layout(root: Path, pages: list[str], screenshot_dir: Path | None = None, height: int = 900,
            widths: tuple[int, ...] = WIDTHS, **scripts):
    from playwright.sync_api import sync_playwright

    with serve(root) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS, headless=True)
        try:
            return check_layout(base, pages, widths, height, screenshot_dir, browser, **scripts)
        finally:
            browser.close()


_VISITS: dict[tuple[str, int], tuple[list[str], dict, dict, dict]] = {}


def _book_at(root: Path, width: int) -> tuple[list[str], dict, dict, dict]:
    """Every page (redirect stubs aside) opened once in a window ``width`` px wide, for the layout, reader
    (1300 px) and figure checks: ``(pages, layout problems, tables, {check: {"page@width": state}})``.
    Each page is loaded and typeset once for all three instead of once per check (per process: the checks
    of one width are the methods of one class, which ``--dist loadscope`` sends to one worker)."""
    key = (str(root), width)
    if key not in _VISITS:
        pages = [p for p in html_pages(root) if 'http-equiv="refresh"' not in (root / p).read_text(encoding="utf-8")]
        shots = Path(SCREENSHOTS) if SCREENSHOTS else None
        states: dict[str, dict[str, object]] = {}
        first = {"reader": READER_JS} if width == READER_WIDTH else None  # before anything is opened
        problems, measured = _layout(root, pages, shots, widths=(width,), first=first, last={"figures": FIGURES_JS},
                                     states=states)
        _VISITS[key] = (pages, problems, measured, states)
    return _VISITS[key]


def _check_tables_and_code(root: Path, width: int) -> None:
    """On every page: no table cut off without a scrollbar in view, no table of running text
    scrolling sideways, no word split across lines in a table cell, no code block wider than the
    column; with ``DPBAYES_SCREENSHOTS`` (``make browser``), full-page screenshots of every page."""
    pages, problems, measured, _ = _book_at(root, width)
    shots = Path(SCREENSHOTS) if SCREENSHOTS else None
    widest = sorted(((max(t["width"] for t in ts), key) for key, ts in measured.items() if ts), reverse=True)[:8]
    print("\nwidest tables (px, page@window width): " + ", ".join(f"{w} {k}" for w, k in widest))
    if shots:
        print(f"screenshots of {len(pages)} pages at {width} px: {shots}")
    assert not any(problems.values()), f"tables and code at {width} px:\n" + report(problems)


WIDE_CELLS = "".join(f"<td>column{i}_with_a_long_unbreakable_value_{i}</td>" for i in range(8))
LAYOUT_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title>
<style>body {{ margin: 0; }} .col {{ width: 600px; }} td {{ white-space: nowrap; }}</style></head><body><div class="col">
{table}
</div></body></html>"""
TABLE = "<table><tr><th>{name}</th></tr><tr>" + WIDE_CELLS + "</tr>{rows}</table>"


def _page(name: str, wrapper: str, rows: int = 0) -> str:
    table = TABLE.format(name=name, rows="<tr><td>row</td></tr>" * rows)
    return LAYOUT_PAGE.format(table=wrapper.format(table=table))


@needs_chromium
def test_clipped_table_check_fails_on_a_broken_page(tmp_path: Path) -> None:
    """Hidden overflow, a scroll box taller than the window, a table past the window: each fails; a short scroll box passes."""
    cases = {
        "hidden.html": _page("hidden", '<div style="overflow-x: hidden">{table}</div>'),
        "tall.html": _page("tall", '<div style="overflow-x: auto">{table}</div>', rows=80),
        "past.html": _page("past", "{table}"),
        "short.html": _page("short", '<div style="overflow-x: auto">{table}</div>'),
        "capped.html": _page("capped", '<div style="overflow: auto; max-height: 80vh">{table}</div>', rows=80),
        "narrow.html": LAYOUT_PAGE.format(table="<table><tr><th>narrow</th></tr><tr><td>1</td></tr></table>"),
    }
    for name, html in cases.items():
        (tmp_path / name).write_text(html, encoding="utf-8")
    problems, _ = _layout(tmp_path, list(cases))
    for bad in ("hidden.html", "tall.html", "past.html"):
        assert len(problems[bad]) == len(WIDTHS), (bad, problems[bad])
        assert all(p.startswith(CLIPPED_TABLE) for p in problems[bad]), problems[bad]
    assert "no scrollbar" in problems["hidden.html"][0], problems["hidden.html"]
    assert "below the" in problems["tall.html"][0], problems["tall.html"]
    assert "past the right edge" in problems["past.html"][0], problems["past.html"]
    for good in ("short.html", "capped.html", "narrow.html"):
        assert problems[good] == [], (good, problems[good])


PROSE = "the bound holds only for priors whose parameters are at least one half"


@needs_chromium
def test_sideways_text_check_fails_on_a_broken_page(tmp_path: Path) -> None:
    """A table of running text scrolling sideways in a short box (scrollbar in view) is reported;
    the same table wrapping in the column, and a wide table of numbers scrolling, are not."""
    prose_row = "<tr>" + f"<td>{PROSE}</td>" * 5 + "</tr>"
    numbers_row = "<tr>" + "".join(f"<td>{1000 + i}.{i:04d}</td>" for i in range(40)) + "</tr>"
    cases = {
        "sideways.html": f'<div style="overflow: auto; max-height: 80vh"><table style="white-space: nowrap">'
                         f"<tr><th>claim</th></tr>{prose_row * 3}</table></div>",
        "wrapped.html": '<div style="overflow-x: auto"><table><tr><th>claim</th></tr>'
                        + (prose_row * 3).replace("<td>", '<td style="white-space: normal">') + "</table></div>",
        "numbers.html": f'<div style="overflow-x: auto"><table style="white-space: nowrap">'
                        f"<tr><th>eps</th></tr>{numbers_row * 3}</table></div>",
    }
    for name, html in cases.items():
        (tmp_path / name).write_text(LAYOUT_PAGE.format(table=html), encoding="utf-8")
    problems, _ = _layout(tmp_path, list(cases))
    assert len(problems["sideways.html"]) == len(WIDTHS), problems["sideways.html"]
    assert all(p.startswith(SIDEWAYS_TEXT) and "13 words" in p for p in problems["sideways.html"]), problems
    assert problems["wrapped.html"] == [] and problems["numbers.html"] == [], problems


SPLIT_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title>
<style>body {{ margin: 0; font: 16px sans-serif; }} table {{ table-layout: fixed; width: 120px; }}
td {{ {wrap} }} code {{ overflow-wrap: anywhere; }}</style></head><body>
<table><tr><th>h</th><th>h</th></tr>
<tr><td>the optimum</td><td>x</td></tr>
<tr><td>0.086671234</td><td>x</td></tr>
<tr><td>well-known, n/a</td><td>x</td></tr>
<tr><td><code>a_long_identifier_name</code></td><td>x</td></tr>
<tr><td><a href="#">https://example.org/a/long/path</a></td><td>x</td></tr>
<tr><td>Rindfleischetikettierungsueberwachung</td><td>x</td></tr>
</table></body></html>"""


@needs_chromium
def test_split_word_check_fails_on_a_broken_page(tmp_path: Path) -> None:
    """Cells that break words anywhere: the word and the number split inside are reported, at both
    widths; a break at a hyphen or slash, code, a URL and a word longer than LONG_WORD are not."""
    from browser_layout import LONG_WORD

    assert len("Rindfleischetikettierungsueberwachung") > LONG_WORD
    (tmp_path / "broken.html").write_text(SPLIT_PAGE.format(wrap="overflow-wrap: anywhere;"), encoding="utf-8")
    (tmp_path / "fine.html").write_text(SPLIT_PAGE.format(wrap="overflow-wrap: normal;"), encoding="utf-8")
    problems, _ = _layout(tmp_path, ["broken.html", "fine.html"])
    broken = problems["broken.html"]
    assert len(broken) == 2 * len(WIDTHS) and all(p.startswith(SPLIT_WORD) for p in broken), broken
    assert any("'opti" in p and "m'" in p and "|" in p for p in broken), broken
    assert any("'0.0866" in p and "|" in p for p in broken), broken
    assert problems["fine.html"] == [], problems["fine.html"]


CODE_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title>
<style>body {{ margin: 0; }} article {{ width: 600px; }}</style></head><body><article>
<p>A page without notebook cells.</p>{code}</article></body></html>"""
LONG_LINE = ".venv/bin/python -m dpbayes run " + " ".join(f"-p option{i} {i}" for i in range(60))


@needs_chromium
def test_code_check_fails_on_a_broken_page(tmp_path: Path) -> None:
    """On any page (not only notebook pages): a code line scrolling in its block, hidden by a box,
    running past the window, or folded in a closed cell is reported; wrapped and short code is not."""
    cases = {
        "scrolls.html": f'<pre style="overflow-x: auto">{LONG_LINE}</pre>',
        "hidden.html": f'<div style="overflow: hidden"><pre>{LONG_LINE}</pre></div>',
        "past.html": f"<pre>{LONG_LINE}</pre>",
        "folded.html": f'<details><summary>show</summary><pre style="overflow-x: auto">{LONG_LINE}</pre></details>',
        "wrapped.html": f'<pre style="white-space: pre-wrap; overflow-wrap: anywhere">{LONG_LINE}</pre>',
        "short.html": '<pre style="overflow-x: auto">make book\nmake test</pre>',
    }
    for name, code in cases.items():
        (tmp_path / name).write_text(CODE_PAGE.format(code=code), encoding="utf-8")
    problems, _ = _layout(tmp_path, list(cases))
    for bad, how in (("scrolls.html", "scrolls"), ("hidden.html", "cut off"), ("past.html", "past the right edge"),
                     ("folded.html", "scrolls")):
        assert len(problems[bad]) == len(WIDTHS), (bad, problems[bad])
        assert all(p.startswith(WIDE_CODE) and how in p for p in problems[bad]), (bad, problems[bad])
    for good in ("wrapped.html", "short.html"):
        assert problems[good] == [], (good, problems[good])

# -- figures on notebook pages (issue 16, items 3-4) -------------------------------------------------
from browser_figures import (  # noqa: E402
    BODY_FONT,
    FIGURES_JS,
    NARROW_FIGURE,
    UNCAPTIONED,
    figure_problems,
    figure_problems_from,
    notebook_pages,
)

from dpbayes.book.figures import BODY_FONT_PX, BOOK_COLUMN_PX  # noqa: E402


def _check_figure_captions(root: Path, width: int) -> None:
    """Every notebook figure captioned and numbered, shown as wide as the legibility check assumes
    (``tests/test_figure_layout.py``), with body text of the size that check measures figure text against,
    at 1300 and 800 px. (Code blocks: ``_check_tables_and_code``.)"""
    pages = notebook_pages(root)
    assert len(pages) >= 10, pages
    figures = _book_at(root, width)[3]["figures"]
    problems = {rel: figure_problems_from(figures[f"{rel}@{width}"], BOOK_COLUMN_PX, BODY_FONT_PX) for rel in pages}
    assert not any(problems.values()), "figures on notebook pages:\n" + report(problems)


FIGURE_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title>
<style>article {{ width: 600px; }} pre {{ overflow-x: auto; }}</style></head><body><article>
<p>A notebook page's text.</p>
<div class="cell docutils container"><div class="cell_input"><pre>x = 1</pre></div>
<div class="cell_output"><figure><img src="data:image/png;base64,{png}" width="300">
<figcaption><p><span class="caption-number">Fig. 1 </span>Reproduces Fig. 3 of the paper, K = 100, exact.</p></figcaption>
</figure></div></div>
<div class="cell docutils container"><div class="cell_output">{extra}</div></div>
</article></body></html>
"""


def _png(width: int = 200, height: int = 20) -> str:
    import base64
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


@needs_chromium
def test_figure_checks_fail_on_a_broken_page(tmp_path: Path) -> None:
    """An uncaptioned figure, a figure shown too narrow and body text of another size are each reported."""
    png = _png()
    pages = {
        "fine.html": "",
        "small-body.html": '<style>article > p { font-size: 12px; }</style>',
        "uncaptioned.html": f'<img src="data:image/png;base64,{png}" width="300">',
        "narrow.html": f'<figure><img src="data:image/png;base64,{png}" style="width: 10px">'
                       '<figcaption><span class="caption-number">Fig. 2 </span>A long enough caption text.</figcaption></figure>',
    }
    for name, extra in pages.items():
        (tmp_path / name).write_text(FIGURE_PAGE.format(png=png, extra=extra), encoding="utf-8")
    assert notebook_pages(tmp_path) == sorted(pages)
    problems = figure_problems(tmp_path, sorted(pages), 1300, column_px=150, body_px=16.0)
    assert problems["fine.html"] == [], problems
    assert [p.split(":")[0] for p in problems["small-body.html"]] == [BODY_FONT], problems
    assert [p.split(":")[0] for p in problems["uncaptioned.html"]] == [UNCAPTIONED], problems
    assert [p.split(":")[0] for p in problems["narrow.html"]] == [NARROW_FIGURE], problems


# -- what a reader trips over (issue 27, item 5) -------------------------------------------------------
from browser_reader import (  # noqa: E402
    DASHBOARD_LINK,
    DOWNSCALED_FIGURE,
    PATH_ALT,
    UNFOLDED_CELL,
    UNRESOLVED_REF,
    dashboard_links,
    dashboard_problems,
    page_problems,
    READER_JS,
    reader_problems,
    reader_problems_from,
    split_pending,
)

# Known problems of the current book that need a long stored run re-executed (not possible in CI):
# each entry is (page, start of the problem) -> what it needs; an entry that matches nothing fails
# the test, so the list only shrinks.
READER_PENDING: dict[tuple[str, str], str] = {}


def _check_reader(root: Path) -> None:
    """No role text or label left unresolved, no figure shown below its drawn width, no file path as
    alt text, no code cell that the folding rule folds shown open (1300 px window)."""
    pages, _, _, states = _book_at(root, READER_WIDTH)
    problems = {rel: reader_problems_from(states["reader"][f"{rel}@{READER_WIDTH}"]) for rel in pages}
    counts = {kind: sum(p.startswith(kind) for items in problems.values() for p in items)
              for kind in (UNRESOLVED_REF, DOWNSCALED_FIGURE, PATH_ALT, UNFOLDED_CELL)}
    print(f"\nreader checks over {len(pages)} pages, before the pending list: {counts}")
    left, stale = split_pending(problems, READER_PENDING)
    assert not stale, "READER_PENDING entries that match nothing any more (remove them):\n" + "\n".join(stale)
    assert not any(left.values()), "what a reader trips over:\n" + report(left)


@needs_book
def test_dashboard_links_land_on_their_claim_rows(root: Path) -> None:
    """Every claim link of the landing page's dashboard opens the row of that claim on its chapter page."""
    links = dashboard_links(root)
    assert len(links) >= 70, len(links)
    assert len({(link["target"], link["id"]) for link in links}) == len(links), "two links share a target"
    problems = dashboard_problems(links)
    assert not problems, "\n".join(problems)


@needs_book
def test_dashboard_check_fails_on_swapped_rows(root: Path, tmp_path: Path) -> None:
    """A copy of the build whose first chapter page has its claim-1 and claim-2 row ids swapped."""
    copy = tmp_path / "html"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("_images", "mathjax"))
    page = sorted(copy.glob("chapters/*/index.html"))[0]
    html = page.read_text(encoding="utf-8")
    assert 'id="claim-1"' in html and 'id="claim-2"' in html
    page.write_text(html.replace('id="claim-1"', 'id="claim-x"').replace('id="claim-2"', 'id="claim-1"')
                    .replace('id="claim-x"', 'id="claim-2"'), encoding="utf-8")
    problems = dashboard_problems(dashboard_links(copy))
    rel = page.relative_to(copy).as_posix()
    # (the dashboard lists the claims grouped by verdict, not necessarily claim-1 first)
    assert sorted(p.split(" holds")[0] for p in problems) == [f"{DASHBOARD_LINK}: {rel}#claim-1", f"{DASHBOARD_LINK}: {rel}#claim-2"], problems


READER_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title>
<style>article {{ width: 600px; }}</style></head><body><article>
<p>Fine prose with <code>{{glued}}</code> explained in code.</p>
{body}
</article></body></html>"""

PLOT_CELL = """<div class="cell docutils container"><div class="cell_input docutils container"><pre>fig, ax = plt.subplots()
ax.plot([1, 2])
plt.show()</pre></div></div>"""
FOLDED_PLOT_CELL = """<div class="cell tag_hide-input docutils container"><details><summary>Show code</summary>
<div class="cell_input docutils container"><pre>fig, ax = plt.subplots()
plt.show()</pre></div></details></div>"""
PARAMS_CELL = """<div class="cell tag_parameters tag_hide-input docutils container"><details><summary>Show code</summary>
<div class="cell_input docutils container"><pre>eps: float = 1.0  # privacy; range (0, inf)</pre></div></details></div>"""
OPEN_PARAMS_CELL = """<div class="cell tag_parameters docutils container"><div class="cell_input docutils container">
<pre>eps: float = 1.0  # privacy; range (0, inf)</pre></div></div>"""


@needs_chromium
def test_reader_checks_fail_on_a_broken_page(tmp_path: Path) -> None:
    """Each check on a tiny page: role text, a label in code, a downscaled figure, a path as alt text,
    an open plotting cell, an open parameters cell; the fine page (folded plotting and parameters cells, a figure
    at its width) passes."""
    (tmp_path / "_images").mkdir()
    png = _png(800, 40)
    small = _png(300, 40)
    cases = {
        "roles.html": "<p>As shown by {glued}`01b::x` and {cite:t}`key`.</p>",
        "label.html": "<p>See Fig. <code>fig-fisher-scores</code>.</p>",
        "wide.html": f'<figure><img src="data:image/png;base64,{png}" alt="MSE against eps" style="width: 600px">'
                     '<figcaption><span class="caption-number">Fig. 2.1 </span>caption</figcaption></figure>',
        "alt.html": f'<img src="_images/abc.png" alt="_images/abc.png" data-x="{small[:4]}">',
        "open.html": PLOT_CELL,
        "params.html": OPEN_PARAMS_CELL,
        "fine.html": FOLDED_PLOT_CELL + PARAMS_CELL
                     + f'<figure><img src="data:image/png;base64,{small}" alt="what it shows"></figure>',
    }
    import base64

    (tmp_path / "_images" / "abc.png").write_bytes(base64.b64decode(small))
    for name, body in cases.items():
        (tmp_path / name).write_text(READER_PAGE.format(body=body), encoding="utf-8")
    problems = reader_problems(tmp_path, list(cases))
    assert problems["fine.html"] == [], problems
    assert [p.split(":")[0] for p in problems["roles.html"]] == [UNRESOLVED_REF, UNRESOLVED_REF], problems
    assert problems["label.html"] == [f"{UNRESOLVED_REF}: a label shown as code instead of a link: `fig-fisher-scores`"]
    assert [p.split(":")[0] for p in problems["wide.html"]] == [DOWNSCALED_FIGURE], problems
    assert "Fig. 2.1 drawn 800 px wide, shown 600 px" in problems["wide.html"][0]
    assert [p.split(":")[0] for p in problems["alt.html"]] == [PATH_ALT], problems
    assert [p.split(":")[0] for p in problems["open.html"]] == [UNFOLDED_CELL], problems
    assert "(plotting)" in problems["open.html"][0]
    assert [p.split(":")[0] for p in problems["params.html"]] == [UNFOLDED_CELL], problems
    assert "(parameters)" in problems["params.html"][0]


def test_split_pending_reports_stale_entries() -> None:
    problems = {"a.html": [f"{PATH_ALT}: Fig. 1", f"{DOWNSCALED_FIGURE}: Fig. 2 drawn"], "b.html": []}
    pending = {("a.html", PATH_ALT): "", ("b.html", DOWNSCALED_FIGURE): "", ("c.html", PATH_ALT): ""}
    left, stale = split_pending(problems, pending)
    assert left == {"a.html": [f"{DOWNSCALED_FIGURE}: Fig. 2 drawn"], "b.html": []}
    assert stale == [f"b.html: {DOWNSCALED_FIGURE}"]  # c.html was not checked: not stale


def test_page_problems_is_pure() -> None:
    state = {"text": "a {py:func} left", "codes": ["{cite}`x`", "tab-results"], "figures": [], "cells": []}
    assert [p.split(":")[0] for p in page_problems(state)] == [UNRESOLVED_REF, UNRESOLVED_REF]


# ------------------------------------------------------------------------------------------------
# A chapter page read in layers: unfolded words, numbers, numbers per table cell
# ------------------------------------------------------------------------------------------------
def test_rendered_size_counts_words_numbers_and_cells() -> None:
    from browser_pagesize import rendered_size

    size = rendered_size("x.html", {"text": "MSE 0.25 at eps = 1e-3, 12 % of n", "cells": ["1, 2 and 3", "none"]})
    assert (size.words, size.numbers, size.max_numbers_per_cell) == (5, 3, 3)


@needs_book
def test_chapter_pages_are_read_in_layers(root: Path) -> None:
    """Every chapter page within the targets of dpbayes.book.pagesize as rendered at 1300 px (folds closed)."""
    from browser_pagesize import rendered_sizes

    sizes = rendered_sizes(root, chapter_first_pages(root))
    print("\nunfolded words / numbers / max numbers per cell: "
          + ", ".join(f"{p}: {s.words}/{s.numbers}/{s.max_numbers_per_cell}" for p, s in sizes.items()))
    problems = [msg for s in sizes.values() for msg in s.problems()]
    assert not problems, "\n".join(problems)


_TOC_JS = """
async (fraction) => {
  const nav = document.querySelector('#pst-page-toc-nav');
  if (!nav) { return null; }
  const links = Array.from(nav.querySelectorAll('a[href^="#"]'));
  window.scrollTo(0, fraction * (document.documentElement.scrollHeight - window.innerHeight));
  await new Promise(r => setTimeout(r, 300));
  const line = window.innerHeight * 0.3;
  let expected = null;
  for (const a of links) {
    const t = document.getElementById(decodeURIComponent(a.getAttribute('href').slice(1)));
    const h = t && (t.querySelector('h1,h2,h3,h4,h5,h6') || t);
    if (h && h.getBoundingClientRect().top <= line) { expected = a.textContent.trim(); }
  }
  const active = links.filter(a => a.classList.contains('active')).map(a => a.textContent.trim());
  return {expected, active};
}
"""


@needs_book
def test_contents_sidebar_marks_the_section_in_view(root: Path) -> None:
    """After a jump anywhere on a chapter page, the right-hand contents marks exactly the section the top third
    of the window is in (``_static/dpbayes-toc.js``); the theme alone kept an old section after a jump."""
    from browser_helpers import page_states

    problems = []
    fractions = (0.5, 1.0, 0.25, 0.75)  # from the top, down, up a long way, down again
    # one visit per page, the jumps one after the other (each page is typeset once, not once per jump)
    script = f"async () => {{ const jump = {_TOC_JS}; const out = []; for (const f of {list(fractions)}) {{ out.push(await jump(f)); }} return out; }}"
    for rel, _, states in page_states(root, chapter_first_pages(root), 1300, script):
        if not isinstance(states, list):
            problems.append(f"{rel}: {states}")
            continue
        for fraction, state in zip(fractions, states, strict=True):
            if not isinstance(state, dict):
                problems.append(f"{rel} at {fraction:.0%}: no contents sidebar")
                continue
            want = [state["expected"]] if state["expected"] else []
            if state["active"] != want:
                problems.append(f"{rel} at {fraction:.0%}: marked {state['active']}, in view {want}")
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------------------------
# The reader's first screen, verdicts grouped by verdict, library calls whole (issue 49)
# --------------------------------------------------------------------------------------------
_FIRST_SCREEN_JS = """
() => {
  const seen = sel => { const e = document.querySelector(sel);
    if (!e) { return 'missing'; }
    const r = e.getBoundingClientRect();
    return r.top >= 0 && r.bottom <= window.innerHeight ? 'visible' : `at ${Math.round(r.top)}-${Math.round(r.bottom)} px`; };
  return {tally: seen('.dpbayes-tally'), publish: seen('.admonition.publish')};
}
"""

_GROUPS_JS = """
() => Array.from(document.querySelectorAll('.dpbayes-verdict-groups')).map(groups => {
  const titles = Array.from(groups.querySelectorAll(':scope > .dpbayes-verdict-group-title .sd-badge'))
    .map(b => b.textContent.replace(/^\\S+\\s+/, '').trim());
  const shown = Array.from(groups.querySelectorAll(':scope > table, :scope > div > table'))
    .filter(t => t.closest('details') === groups.closest('details')).map(t => t.querySelectorAll('tbody tr').length);
  return {titles, shown};
})
"""

_SPLIT_CODE_JS = """
() => {
  const found = [];
  document.querySelectorAll('.bd-article table code.dpbayes-call').forEach(code => {
    const words = code.querySelectorAll('span.pre').length ? code.querySelectorAll('span.pre') : [code];
    words.forEach(w => {
      const tops = new Set(Array.from(w.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (tops.size > 1) { found.push(w.textContent); }
    });
  });
  return found;
}
"""


def _evaluate(root: Path, pages: list[str], script: str, width: int) -> dict[str, object]:
    from playwright.sync_api import sync_playwright

    out: dict[str, object] = {}
    with serve(root) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS, headless=True)
        try:
            tab = browser.new_context(viewport={"width": width, "height": 900}).new_page()
            for page in pages:
                tab.goto(base + page, wait_until="load", timeout=30_000)
                out[page] = tab.evaluate(script)
        finally:
            browser.close()
    return out


@needs_book
@pytest.mark.parametrize("width", WIDTHS)
def test_the_tally_and_the_publish_box_are_on_the_first_screen(root: Path, width: int) -> None:
    """The landing page's first screen (900 px high) shows the verdict tally and the "What should I publish?" box;
    chapter 5's first screen shows the box."""
    found = _evaluate(root, ["intro.html", "chapters/05-choosing/index.html"], _FIRST_SCREEN_JS, width)
    assert found["intro.html"] == {"tally": "visible", "publish": "visible"}, found
    assert found["chapters/05-choosing/index.html"]["publish"] == "visible", found  # type: ignore[index]


@needs_book
def test_claims_are_grouped_by_verdict_worst_first(root: Path) -> None:
    """Every chapter page's claims tables, and the dashboard's, come in verdict groups in the book's order,
    each showing at most its first rows (the rest folded)."""
    from dpbayes.book.dashboard import GROUP_ORDER, GROUP_SHOWN

    pages = ["intro.html", *chapter_first_pages(root)]
    found = _evaluate(root, pages, _GROUPS_JS, 1300)
    for page in pages:
        groups = found[page]
        assert groups, f"{page}: no verdict groups"
        for group in groups:  # type: ignore[attr-defined]
            ranks = [GROUP_ORDER.index(t) for t in group["titles"]]
            assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks), (page, group["titles"])
            assert all(0 < n <= GROUP_SHOWN for n in group["shown"]), (page, group)


@needs_book
@pytest.mark.parametrize("width", WIDTHS)
def test_no_library_call_breaks_inside_a_name(root: Path, width: int) -> None:
    """A library call (inline code with a parenthesis) in a table cell wraps between its words (argument
    boundaries), never inside one; the page has such calls (chapter 5's "What to publish")."""
    pages = ["intro.html", "using-dpbayes.html", *chapter_first_pages(root)]
    found = _evaluate(root, pages, _SPLIT_CODE_JS, width)
    split = {page: words for page, words in found.items() if words}
    assert _evaluate(root, ["chapters/05-choosing/index.html"], "() => document.querySelectorAll('code.dpbayes-call').length",
                     width)["chapters/05-choosing/index.html"], "no library call in chapter 5's tables"
    assert not split, f"code split inside a word at {width} px: {split}"


# --------------------------------------------------------------------------------------------
# The checks that visit every page, grouped so that `--dist loadscope` (make browser-check) runs each
# group on one worker: the checks of one window width share one visit of the book (_book_at), and the
# longest check is a work unit of its own
# --------------------------------------------------------------------------------------------
@needs_book
class TestEveryPage:
    def test_every_page_in_chromium(self, root: Path, tmp_path: Path) -> None:
        _check_every_page(root, tmp_path)


class _BookAtWidth:
    width: int

    def test_tables_and_code_readable(self, root: Path) -> None:
        _check_tables_and_code(root, self.width)

    def test_notebook_figures_have_captions(self, root: Path) -> None:
        _check_figure_captions(root, self.width)


@needs_book
class TestBookAt1300px(_BookAtWidth):
    width = 1300

    def test_reader_checks_on_every_page(self, root: Path) -> None:
        _check_reader(root)


@needs_book
class TestBookAt800px(_BookAtWidth):
    width = 800
