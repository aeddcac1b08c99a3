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

from browser_helpers import check_book, html_pages, open_offline, raw_math_problems, report  # noqa: E402

HTML = os.environ.get("DPBAYES_BOOK_HTML")
pytestmark = pytest.mark.skipif(not HTML, reason="DPBAYES_BOOK_HTML not set: run `make browser`")

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


def test_every_page_in_chromium(root: Path, tmp_path: Path) -> None:
    pages = html_pages(root)
    assert "index.html" in pages and "rerun.html" in pages and "bibliography.html" in pages, pages
    # the practitioner's page and the API reference (one page per science module, tests/test_api_pages.py)
    api = [p for p in pages if p.startswith("api/")]
    assert "using-dpbayes.html" in pages and "api/index.html" in api and "api/release.html" in api, pages
    assert len(api) == len(list(Path(__file__).resolve().parents[1].glob("api/*.md"))), api
    firsts = chapter_first_pages(root)
    assert firsts, "no chapter pages were rendered"
    shots = tmp_path / "screenshots"
    problems = check_book(root, pages, screenshot_dir=shots, screenshot_pages=firsts)
    assert not any(problems.values()), "problems in the rendered book:\n" + report(problems)
    saved = sorted(p.name for p in shots.glob("*.png"))
    assert len(saved) == len(firsts), saved
    print(f"\n{len(pages)} pages checked; chapter screenshots in {shots}: {', '.join(saved)}")


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
    assert any(f"HTTP 404" in p and figure.name in p for p in problems[fig_page]), problems[fig_page]
    assert any("MathJax error" in p for p in problems[math_page]), problems[math_page]
    if nojax_page:
        assert any("raw \\(" in p for p in problems[nojax_page]), problems[nojax_page]
    assert problems[control] == [], problems[control]


def test_raw_math_detector() -> None:
    assert raw_math_problems("the estimator $\\hat\\theta$ is biased")
    assert raw_math_problems("see \\(x\\)") and raw_math_problems("\\[ x \\]")
    assert raw_math_problems("$$x$$")
    assert not raw_math_problems("it costs 5 $ and nothing else; a plain text page")
    assert raw_math_problems("| a | b | |:---|---:| | 1 | 2 |")
    assert raw_math_problems("quantile / `max_{ k <=ln(1/gamma)/eps} H")
