"""Open a rendered book in headless Chromium and list everything wrong with each page.

Used by ``tests/test_browser.py``. The checks, per page (served from 127.0.0.1 by a local HTTP
server):

- HTTP 200 for the page and for every request it makes; any request to another host is blocked
  and reported (the book must read offline);
- no JavaScript console error and no uncaught exception;
- every ``<img>`` loaded (``naturalWidth > 0``);
- math typeset: no MathJax error node, and no raw ``$...$``, ``$$``, ``\\(``, ``\\[`` or
  ``\\begin{`` left in the visible text outside code (nor a stray backtick from broken inline
  code);
- no visible paragraph that is a Markdown table MyST could not parse (a line of ``|---|`` or
  ``|:--`` -- also with the en/em dashes smart quotes make of ``---`` -- or a line of three or
  more ``|``-separated cells): reported as ``raw Markdown table: <its first line>``;
- every internal link resolves (HTTP 200, and the ``#fragment`` exists in the target page).

Chromium is Debian's (``/usr/bin/chromium``, or ``$CHROMIUM``), driven by Playwright with
``executable_path``: no browser is ever downloaded.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

RAW_MATH = [
    (re.compile(r"\\\("), "raw \\( left in text"),
    (re.compile(r"\\\["), "raw \\[ left in text"),
    (re.compile(r"\$\$"), "raw $$ left in text"),
    (re.compile(r"(?<![\\\w$])\$(?=[^\s$])[^$\n]{1,200}?(?<=[^\s\\])\$(?![\w$])"), "raw $...$ left in text"),
    (re.compile(r"\\begin\{"), "raw \\begin{ left in text"),
    # a backtick outside code: broken inline code, typically a `|` inside a table cell that split it
    # (write \| there, also inside backticks)
    (re.compile(r"`"), "stray backtick (broken inline code: an unescaped | in a table cell?)"),
]

# A line of a Markdown table left as text. Smart quotes turn "---" into em/en dashes ("|——-|").
_DASH = "-\u2013\u2014"
_TABLE_RULE = re.compile(rf"\|\s*:?[{_DASH}]+:?\s*\||^\s*\|?\s*:[{_DASH}]{{2,}}")
_TABLE_ROW = re.compile(r"^\s*\|([^|\n]*\|){3,}\s*$")  # | a | b | c |: three or more cells


RAW_TABLE = "raw Markdown table"


def raw_table_paragraphs(paragraphs: list[str]) -> list[str]:
    """The first line of every paragraph that looks like an unrendered Markdown table.

    ``paragraphs`` are the visible texts of a page's ``<p>`` elements without their code and
    typeset math (``_PAGE_STATE_JS``). A paragraph counts when one of its lines is a delimiter
    row (``|---|``, ``|:--``) or a row of three or more ``|``-separated cells.
    """
    found = []
    for text in paragraphs:
        lines = [line for line in text.splitlines() if line.strip()]
        if any(_TABLE_RULE.search(line) or _TABLE_ROW.match(line) for line in lines):
            found.append(" ".join(lines[0].split())[:200])
    return found


# Visible text outside code and outside typeset math; waits for MathJax to finish first.
_PAGE_STATE_JS = """
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
    if (MathJax.typesetPromise) { await MathJax.typesetPromise(); }
  }
  await Promise.all(Array.from(document.images).map(img => img.complete ? null :
      new Promise(r => { img.addEventListener('load', r); img.addEventListener('error', r); })));
  const clone = document.body.cloneNode(true);
  clone.querySelectorAll('pre, code, kbd, samp, script, style, noscript, textarea, template, '
      + 'mjx-container, mjx-assistive-mml, .MathJax, svg, .headerlink').forEach(e => e.remove());
  const strip = 'pre, code, kbd, samp, script, style, mjx-container, mjx-assistive-mml, .MathJax, svg, .headerlink';
  const paragraphs = Array.from(document.querySelectorAll('p'))
    .filter(p => !p.closest('pre, code') && p.getClientRects().length > 0
                 && getComputedStyle(p).visibility !== 'hidden')
    .map(p => { const c = p.cloneNode(true); c.querySelectorAll(strip).forEach(e => e.remove());
                return c.textContent; });
  return {
    text: clone.textContent,
    paragraphs: paragraphs,
    images: Array.from(document.images).map(i => ({src: i.currentSrc || i.src, w: i.naturalWidth})),
    mathErrors: document.querySelectorAll('mjx-merror, [data-mjx-error], .MathJax_Error').length,
    mathNodes: document.querySelectorAll('mjx-container').length,
    links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
  };
}
"""


def chromium_path() -> str:
    return os.environ.get("CHROMIUM", "/usr/bin/chromium")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep pytest output readable
        pass


@contextmanager
def serve(root: Path) -> Iterator[str]:
    """Serve ``root`` on 127.0.0.1 (a free port) and yield the base URL ending in ``/``."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def page_states(root: Path, pages: list[str], width: int, script: str) -> Iterator[tuple[str, object, object]]:
    """Open each of ``pages`` in a Chromium window ``width`` px wide and yield ``(page, tab, state)``.

    ``state`` is what ``script`` returns there, or a one-line error text when the page could not be
    read even after waiting once more (a late navigation, e.g. a theme script, destroyed the context).
    ``tab`` is the Playwright page, for a screenshot.
    """
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    with serve(root) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS, headless=True)
        try:
            tab = browser.new_context(viewport={"width": width, "height": 900}).new_page()
            for rel in pages:
                try:
                    tab.goto(base + rel, wait_until="load", timeout=30_000)
                except PlaywrightError as exc:
                    # a navigation started late by the page before (seen on a loaded machine: "interrupted by
                    # another navigation") is not a problem of this page: open it once more
                    if "interrupted by another navigation" not in str(exc):
                        raise
                    tab.goto(base + rel, wait_until="load", timeout=30_000)
                yield rel, tab, evaluate_state(tab, script)
        finally:
            browser.close()


def evaluate_state(tab, script: str) -> object:  # noqa: ANN001 - a playwright Page
    """What ``script`` returns on the open page, or a one-line error text when the page could not be read
    even after waiting once more for it to load (a late navigation, e.g. a theme script, destroyed the context)."""
    try:
        return tab.evaluate(script)
    except Exception:
        tab.wait_for_load_state("load")
        try:
            return tab.evaluate(script)
        except Exception as exc:
            return f"could not read the page: {type(exc).__name__}: {str(exc)[:120]}"


def html_pages(root: Path) -> list[str]:
    """Every HTML page of the build, as paths relative to ``root`` (``_static``/``_sources`` excluded)."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*.html")
        if not ({"_static", "_sources", "_images"} & set(p.relative_to(root).parts))
    )


def raw_math_problems(text: str) -> list[str]:
    """Raw TeX delimiters left in a page's visible (non-code, non-math) text."""
    problems = []
    for pattern, label in RAW_MATH:
        m = pattern.search(text)
        if m:
            start = max(0, m.start() - 30)
            snippet = " ".join(text[start : m.end() + 30].split())
            problems.append(f"{label}: ...{snippet}...")
    return problems


class _LinkChecker:
    """Resolves internal links with plain HTTP requests, caching each target page's ids."""

    def __init__(self) -> None:
        self._status: dict[str, int] = {}
        self._ids: dict[str, set[str]] = {}

    def _fetch(self, url: str) -> int:
        if url not in self._status:
            try:
                with urllib.request.urlopen(url, timeout=10) as resp:
                    status = resp.status
                    body = resp.read()
                    if url.endswith((".html", "/")):
                        text = body.decode("utf-8", errors="replace")
                        self._ids[url] = set(re.findall(r"""\b(?:id|name)=["']([^"']+)["']""", text))
            except urllib.error.HTTPError as exc:
                status = exc.code
            except OSError:
                status = 0
            self._status[url] = status
        return self._status[url]

    def problem(self, href: str) -> str | None:
        target, _, fragment = href.partition("#")
        status = self._fetch(target)
        if status != 200:
            return f"broken internal link {href} (HTTP {status})"
        fragment = urllib.parse.unquote(fragment)
        if fragment and target in self._ids and fragment not in self._ids[target]:
            return f"broken internal link {href} (no element with id {fragment!r})"
        return None


def check_book(
    root: Path, pages: list[str] | None = None, screenshot_dir: Path | None = None, screenshot_pages: list[str] | None = None
) -> dict[str, list[str]]:
    """Open every page (or ``pages``) of the build at ``root``; return ``{page: [problems]}``.

    Pages listed in ``screenshot_pages`` are saved as PNG under ``screenshot_dir``.
    """
    from playwright.sync_api import sync_playwright

    pages = html_pages(root) if pages is None else pages
    problems: dict[str, list[str]] = {page: [] for page in pages}
    links = _LinkChecker()
    with serve(root) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
            current: list[str] = []

            def route(route_, request) -> None:  # noqa: ANN001 - playwright objects
                url = request.url
                if url.startswith(base) or url.startswith("data:") or url.startswith("blob:"):
                    route_.continue_()
                else:
                    current.append(f"request to another host blocked: {url}")
                    route_.abort()

            context.route("**/*", route)
            page = context.new_page()
            page.on("console", lambda msg: current.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
            page.on("pageerror", lambda exc: current.append(f"uncaught JS exception: {exc}"))
            page.on("requestfailed", lambda req: current.append(f"request failed: {req.url} ({req.failure})"))
            page.on(
                "response",
                lambda resp: current.append(f"HTTP {resp.status} for {resp.url}")
                if resp.status != 200 and resp.status != 304 else None,
            )
            for rel in pages:
                page.goto("about:blank")  # nothing of the previous page may be reported for this one
                current.clear()
                url = base + rel
                redirect = re.search(
                    r"""<meta http-equiv=["']refresh["'] content=["']\d+;\s*url=([^"']+)["']""",
                    (root / rel).read_text(encoding="utf-8", errors="replace"), re.I,
                )
                if redirect:  # a redirect stub (index.html -> intro.html): its target must exist
                    bad = links.problem(urllib.parse.urljoin(url, redirect.group(1)))
                    problems[rel] = [bad] if bad else []
                    continue
                try:
                    response = page.goto(url, wait_until="load", timeout=30_000)
                    if response is None or response.status != 200:
                        current.append(f"page HTTP {None if response is None else response.status}")
                    state = page.evaluate(_PAGE_STATE_JS)
                except Exception as exc:  # a page that cannot even be evaluated is one problem
                    current.append(f"could not open/evaluate page: {type(exc).__name__}: {exc}")
                    problems[rel] = list(dict.fromkeys(current))
                    continue
                for img in state["images"]:
                    if not img["w"]:
                        current.append(f"image not loaded: {img['src']}")
                if state["mathErrors"]:
                    current.append(f"{state['mathErrors']} MathJax error node(s): math not typeset")
                current.extend(raw_math_problems(state["text"]))
                current.extend(f"{RAW_TABLE}: {line}" for line in raw_table_paragraphs(state["paragraphs"]))
                for href in dict.fromkeys(state["links"]):
                    if href.startswith(base):
                        bad = links.problem(href)
                        if bad:
                            current.append(bad)
                if screenshot_dir is not None and rel in (screenshot_pages or []):
                    screenshot_dir.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(screenshot_dir / (rel.replace("/", "__")[: -len(".html")] + ".png")))
                problems[rel] = list(dict.fromkeys(current))
        finally:
            browser.close()
    return problems


def open_offline(html_file: Path) -> dict:
    """Open one page through ``file://`` with every network request refused; return its state."""
    from playwright.sync_api import sync_playwright

    refused: list[str] = []
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS, headless=True)
        try:
            context = browser.new_context()

            def route(route_, request) -> None:  # noqa: ANN001
                if request.url.startswith(("file:", "data:", "blob:")):
                    route_.continue_()
                else:
                    refused.append(request.url)
                    route_.abort()

            context.route("**/*", route)
            page = context.new_page()
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(html_file.resolve().as_uri(), wait_until="load", timeout=30_000)
            redirect = re.search(
                r"""<meta http-equiv=["']refresh["'] content=["']\d+;\s*url=([^"']+)["']""",
                html_file.read_text(encoding="utf-8", errors="replace"), re.I,
            )
            if redirect:  # index.html is a stub that sends the reader to the landing page
                page.wait_for_url("**/" + redirect.group(1), timeout=30_000)
                page.wait_for_load_state("load")
            state = page.evaluate(_PAGE_STATE_JS)
        finally:
            browser.close()
    state["refused"] = refused
    state["errors"] = errors
    return state


def report(problems: dict[str, list[str]]) -> str:
    return "\n".join(f"{page}:\n  " + "\n  ".join(items) for page, items in problems.items() if items)
