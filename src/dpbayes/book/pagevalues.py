"""Numbers on the book's pages are notebook outputs: glue them in a notebook, reference them on a page.

The one mechanism of the book (CONTRIBUTING.md, "Numbers on pages"):

* A notebook computes a value and calls :func:`glue_number` (or :func:`glue_text` for a word or a
  short phrase). That stores the formatted text as a myst-nb glue output of the cell, which nbval
  validates with the numeric tolerance rules like any other output (``tests/nbval_numeric.py``).
* A number the *source* states is declared once, next to its citation, with :func:`source_value`:
  it is glued under ``source.<key>`` so that a page can show "source X, measured Y".
* Where a rule decides a verdict (agreement within a stated tolerance), :func:`verdict_within`
  computes the word and the notebook glues it.
* A page (a chapter's ``index.md``, ``intro.md``, ``using-dpbayes.md``) shows the value with the
  role ``{glued}`01b::key```: the text before ``::`` names a notebook of the page's own folder by
  the start of its file name (``01b`` for ``01b-mse-vs-eps.ipynb``), or, starting with ``/``, a
  notebook by its path from the book's root (``/chapters/01-ubapp/01b``). The role is a thin
  spelling of myst-nb's cross-document ``{glue:text}`` (``dpbayes.book.sphinx_ext``): the text is
  read from the notebook's outputs when the page is written, whether the build executed the
  notebook or renders its stored outputs, and an unknown key is a build warning (an error under
  ``-W``).

``tests/test_page_values.py`` checks, without building the book, that every reference resolves to
a stored output and that no result number is typed by hand on a page (:func:`hand_typed_numbers`).
The functions here are pure except :func:`glue_number`/:func:`glue_text`/:func:`source_value`
(which display the glue output in the running kernel) and :func:`stored_glue_values` (which reads
a notebook file).
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "GLUE_MIME_PREFIX",
    "GluedRef",
    "format_number",
    "glue_number",
    "glue_text",
    "glue_table",
    "glue_output",
    "source_value",
    "verdict_within",
    "glued_references",
    "glue_blocks",
    "resolve_notebook",
    "stored_glue_values",
    "glue_block_notebook",
    "hand_typed_numbers",
]

GLUE_MIME_PREFIX = "application/papermill.record/"
"""How myst-nb stores a value glued with ``display=False`` (the MIME type gets this prefix)."""

ROLE_NAME = "glued"
_ROLE_RE = re.compile(r"\{glued\}`(?P<ref>[^`:]+)::(?P<key>[^`]+)`")
_KEY_RE = re.compile(r"^[A-Za-z0-9_.+-]+$")
_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")
VERDICTS = ("reproduced", "partly", "corrected", "not reproduced", "refuted")


# --------------------------------------------------------------------------------------------
# In a notebook
# --------------------------------------------------------------------------------------------
def _check_key(key: str) -> str:
    if not isinstance(key, str) or not _KEY_RE.match(key):
        raise ValueError(f"key must be a non-empty string of letters, digits and _ . + -, got {key!r}")
    return key


def format_number(x: float, digits: int = 4, *, style: str = "g") -> str:
    """Text of a number for a page: ``digits`` significant digits, powers of ten in Unicode.

    Parameters
    ----------
    x : float
        The value; finite.
    digits : int
        Significant digits (``style`` ``"g"``/``"e"``) or decimals (``style`` ``"f"``/``"%"``), in [0, 17].
    style : {"g", "e", "f", "%", "int"}
        ``"g"``: plain decimals for ``1e-3 <= |x| < 1e5`` (trailing zeros kept, so that every
        value shows ``digits`` significant digits, except an integral value), else ``m×10ⁿ``; ``"e"``: always
        ``m×10ⁿ``; ``"f"``: ``digits`` decimals; ``"%"``: ``100 x`` with ``digits`` decimals and a
        percent sign; ``"int"``: rounded to an integer.

    Returns
    -------
    str
        For example ``format_number(0.0018061) == "0.001806"``,
        ``format_number(1.806e-5) == "1.806×10⁻⁵"``, ``format_number(0.0042, 1, style="%") == "0.4 %"``.
    """
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(float(x)):
        raise ValueError(f"x must be a finite real number, got {x!r}")
    if isinstance(digits, bool) or not isinstance(digits, numbers.Integral) or not 0 <= digits <= 17:
        raise ValueError(f"digits must be an integer in [0, 17], got {digits!r}")
    x = float(x)
    if style == "int":
        return str(int(round(x)))
    if style == "f":
        return f"{x:.{digits}f}"
    if style == "%":
        return f"{100 * x:.{digits}f} %"
    if style not in ("g", "e"):
        raise ValueError(f"style must be one of g, e, f, %, int, got {style!r}")
    digits = max(digits, 1)
    if x == 0:
        return "0"
    if style == "g" and 1e-3 <= abs(x) < 1e5:
        # trailing zeros stay (0.880 beside 0.876 in a column, not 0.88: both stand behind three
        # digits, as the exponent form 1.00×10⁻⁸ does); an integral value keeps none (30, not 30.00)
        text = f"{x:.{digits}g}" if x.is_integer() else f"{x:#.{digits}g}".rstrip(".")
        if "e" not in text:
            return text
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    if mantissa in ("1", "-1"):
        return ("-" if mantissa.startswith("-") else "") + "10" + str(int(exponent)).translate(_SUPERSCRIPT)
    return f"{mantissa}\u00d710{str(int(exponent)).translate(_SUPERSCRIPT)}"


def _glue(key: str, text: str) -> str:
    from myst_nb import glue  # only inside a kernel that renders for the book

    glue(_check_key(key), text, display=False)
    return text


def glue_number(key: str, x: float, digits: int = 4, *, style: str = "g") -> str:
    """Glue ``format_number(x, digits, style=style)`` under ``key``; return the text.

    The digits must be ones the computation stands behind on every CPU (CONTRIBUTING.md, "How
    notebook outputs are compared"): nbval compares the glued text like any printed number.
    """
    return _glue(key, format_number(x, digits, style=style))


def glue_text(key: str, text: str) -> str:
    """Glue a short text (a verdict word, a range such as ``"0.4-1.1 %"``) under ``key``; return it."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text must be a non-empty string, got {text!r}")
    return _glue(key, text)


class _GluedTable:
    """A table for myst-nb's glue: Markdown in the notebook, HTML for another page (cross-document glue
    renders only ``text/html``, ``text/plain`` and images)."""

    def __init__(self, markdown: str) -> None:
        self.markdown = markdown

    def __repr__(self) -> str:
        return self.markdown

    def _repr_markdown_(self) -> str:
        return self.markdown

    def _repr_html_(self) -> str:
        return markdown_table_html(self.markdown)


_MATH_RE = re.compile(r"\$([^$\n]+)\$")


def markdown_table_html(markdown: str) -> str:
    """HTML of a Markdown table as the book renders its own tables (class ``table``, inline math typeset)."""
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").enable("table").render(markdown)
    html = html.replace("<table>", '<table class="table">', 1)
    return _MATH_RE.sub(lambda m: f'<span class="math notranslate nohighlight">\\({m.group(1)}\\)</span>', html)


def glue_table(key: str, df: Any, floatfmt: str = ".4g", *, index: bool | None = False) -> str:
    """Glue a DataFrame once, as the book's table (:func:`dpbayes.book.formatting.reader_table`).

    A page shows it with myst-nb's cross-document glue directive (a fenced ``{glue}`` block naming the
    key, with a ``:doc:`` option giving the notebook's path from the page), which renders the stored
    HTML; nbval compares the stored Markdown and HTML under the numeric tolerance rules like any
    printed table. Returns the Markdown.
    """
    from myst_nb import glue

    from dpbayes.book.formatting import reader_table

    text = reader_table(df, floatfmt, index=index)
    glue(_check_key(key), _GluedTable(text), display=False)
    return text


def glue_output(key: str, text: str) -> str:
    """Glue a block of printed output (what a page's code example prints) as preformatted text.

    A page shows it with the cross-document glue directive (see :func:`glue_table`), rendered as a
    literal block; the page's test runs the example and compares what it prints with this text.
    """
    from IPython.display import Pretty
    from myst_nb import glue

    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"text must be a non-empty string, got {text!r}")
    glue(_check_key(key), Pretty(text), display=False)
    return text


def source_value(key: str, value: float, citation: str, digits: int = 4, *, style: str = "g") -> float:
    """Declare a number the source states, once, next to its citation; glue it as ``source.<key>``.

    Parameters
    ----------
    key : str
        Name of the value (glued as ``source.<key>``).
    value : float
        The number as the source prints it.
    citation : str
        Where the source states it (``"paper §5.5"``, ``"Table 1, run 2"``); must not be empty.
    digits, style
        As :func:`format_number` (print the source's own digits).

    Returns
    -------
    float
        ``value``, for the comparison that follows.
    """
    if not isinstance(citation, str) or not citation.strip():
        raise ValueError(f"citation must name where the source states {key!r}, got {citation!r}")
    _glue("source." + _check_key(key), format_number(value, digits, style=style))
    return value


def verdict_within(measured: float, source: float, *, rtol: float = 0.0, atol: float = 0.0,
                   agree: str = "reproduced", disagree: str = "not reproduced") -> str:
    """The verdict a tolerance rule decides: ``agree`` if ``|measured - source| <= atol + rtol |source|``.

    Raises ``ValueError`` for negative tolerances or a rule with both tolerances zero (a rule that
    no real computation could pass is not a rule).
    """
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not tol >= 0:
            raise ValueError(f"{name} must be a number >= 0, got {tol!r}")
    if rtol == 0 and atol == 0:
        raise ValueError("rtol and atol are both 0: state the tolerance the verdict rests on")
    for name, v in (("measured", measured), ("source", source)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)):
            raise ValueError(f"{name} must be a finite number, got {v!r}")
    return agree if abs(float(measured) - float(source)) <= atol + rtol * abs(float(source)) else disagree


# --------------------------------------------------------------------------------------------
# On a page
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GluedRef:
    """One ``{glued}`ref::key``` on a page."""

    ref: str
    key: str
    line: int


def glued_references(text: str) -> list[GluedRef]:
    """Every ``{glued}`` role of a page's Markdown text, in order."""
    refs: list[GluedRef] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        refs.extend(GluedRef(m.group("ref").strip(), m.group("key").strip(), lineno) for m in _ROLE_RE.finditer(line))
    return refs


def resolve_notebook(ref: str, page_dir: Path, root: Path) -> Path:
    """The notebook a ``{glued}`` reference names, or ``ValueError`` saying why it does not resolve.

    ``ref`` is the start of a notebook's file name in ``page_dir`` (``01b``), or, beginning with
    ``/``, a path from ``root`` whose last part is such a start (``/chapters/01-ubapp/01b``).
    """
    if ref.startswith("/"):
        folder, stem = (root / ref.lstrip("/")).parent, ref.rsplit("/", 1)[-1]
    else:
        folder, stem = (page_dir / ref).parent, ref.rsplit("/", 1)[-1]
    exact = folder / (stem if stem.endswith(".ipynb") else stem + ".ipynb")
    if exact.is_file():
        return exact
    found = sorted(folder.glob(f"{stem}*.ipynb")) if folder.is_dir() else []
    if len(found) != 1:
        what = "no notebook" if not found else f"{len(found)} notebooks ({', '.join(p.name for p in found)})"
        raise ValueError(f"{{glued}} reference {ref!r}: {what} in {folder} starts with {stem!r}")
    return found[0]


def stored_glue_values(notebook: Path) -> dict[str, str]:
    """``key -> text`` of every value glued in a notebook's stored outputs (what a page will show)."""
    from ast import literal_eval

    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    values: dict[str, str] = {}
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) or []:
            book = (out.get("metadata") or {}).get("scrapbook")
            if not book:
                continue
            data = out.get("data", {})
            prefix = book.get("mime_prefix", "")
            text = data.get(prefix + "text/markdown", data.get(prefix + "text/plain"))
            if text is None:
                continue
            text = "".join(text) if isinstance(text, list) else text
            try:
                value = literal_eval(text)
            except (SyntaxError, ValueError):
                value = text
            values[book["name"]] = str(value)
    return values


#: myst-nb's cross-document glue directive as a page writes it: a fenced ``{glue}`` block with a ``:doc:`` option.
GLUE_BLOCK_RE = re.compile(r"^```\{glue\}[ \t]+(?P<key>\S+)[ \t]*\n:doc:[ \t]*(?P<doc>\S+)[ \t]*\n```[ \t]*$", re.M)


def glue_blocks(text: str) -> list[tuple[str, str]]:
    """``(doc, key)`` of every cross-document ``{glue}`` directive of a page."""
    return [(m.group("doc"), m.group("key")) for m in GLUE_BLOCK_RE.finditer(text)]


def glue_block_notebook(doc: str, page_dir: Path, root: Path) -> Path:
    """The notebook a ``{glue}`` block's ``:doc:`` option names: relative to the page, or to ``root`` with a ``/``."""
    path = (Path(root) / doc.lstrip("/")) if doc.startswith("/") else (Path(page_dir) / doc)
    return path if path.suffix == ".ipynb" else path.with_suffix(".ipynb")


def resolve_glued_text(text: str, page_dir: Path, root: Path) -> str:
    """``text`` with every ``{glued}`` role and ``{glue}`` block replaced by its stored value (``?`` where none)."""
    cache: dict[Path, dict[str, str]] = {}

    def block(m: re.Match[str]) -> str:
        path = glue_block_notebook(m.group("doc"), page_dir, root)
        if not path.is_file():
            return "?"
        if path not in cache:
            cache[path] = stored_glue_values(path)
        return cache[path].get(m.group("key"), "?")

    text = GLUE_BLOCK_RE.sub(block, text)

    def value(m: re.Match[str]) -> str:
        try:
            nb = resolve_notebook(m.group("ref").strip(), page_dir, root)
        except ValueError:
            return "?"
        if nb not in cache:
            cache[nb] = stored_glue_values(nb)
        return cache[nb].get(m.group("key").strip(), "?")

    return _ROLE_RE.sub(value, text)


def rebase_glued(text: str, folder: str) -> str:
    """Rewrite the ``{glued}`` roles of a text written in ``folder`` so they resolve from anywhere."""
    def fix(m: re.Match[str]) -> str:
        ref = m.group("ref").strip()
        if not ref.startswith("/"):
            ref = "/" + (Path(folder) / ref).as_posix()
        return f"{{glued}}`{ref}::{m.group('key').strip()}`"

    return _ROLE_RE.sub(fix, text)


# --------------------------------------------------------------------------------------------
# The hand-typed-number check
# --------------------------------------------------------------------------------------------
# Numbers that are not results: what refers to a part of a document, or to a work.
_REFERENCE_WORDS = (
    r"Figs?\.|Figures?|Tables?|§+|[Ee]qs?\.|[Ee]quations?|Sections?|Sec\.|Chapters?|Ch\.|Algorithms?|"
    r"Alg\.|Thms?\.?|Theorems?|Cors?\.?|Corollar(?:y|ies)|Lemmas?|Lem\.|Defs?\.?|Definitions?|"
    r"Props?\.?|Propositions?|Remarks?|Examples?|Appendix|App\.|Steps?|lines?|refs?\.|issues?|"
    r"Assumptions?|slides?|runs?|Parts?|items?|pages?|p\.|pp\."
)
_REFERENCE_RE = re.compile(
    rf"(?:{_REFERENCE_WORDS})\s*(?:\(?[A-Za-z.]*\d[\dA-Za-z.]*\)?(?:\s*(?:,|and|or|-|–|to|&)\s*)?)+"
)
_NUMBER_RE = re.compile(
    r"(?<![\w.\\])(?:\d+(?:[.,]\d+)*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?(?:\s*[×x]\s*10(?:\^\{?[-−]?\d+\}?|[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+))?(?![\w])"
)
_STRIP_PATTERNS = (
    re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.S | re.M),  # fenced code
    re.compile(r"<!--.*?-->", re.S),  # comments
    re.compile(r"`[^`\n]*`"),  # inline code and the argument of every role
    re.compile(r"\]\([^)\s]*\)"),  # link targets
    re.compile(r"^\s*:[\w-]+:.*$", re.M),  # directive options
    re.compile(r"^\([\w-]+\)=\s*$", re.M),  # labels
    re.compile(r"\[\^[^\]]+\]"),  # footnote marks
    re.compile(r"arXiv:\s*\d{4}\.\d{4,5}(?:v\d+)?"),  # preprint identifiers
    re.compile(r"(?<=[\s(])\(\d{1,3}[a-z]?\)"),  # equation numbers: "the LP (11)"
    re.compile(r"\\(?:times|cdot|frac|sqrt|le|ge|leq|geq)\b"),
)


@dataclass(frozen=True)
class TypedNumber:
    """A number typed by hand on a page."""

    line: int
    text: str
    context: str

    def describe(self, page: str) -> str:
        return f"{page}:{self.line}: {self.text!r} typed by hand in: ...{self.context}..."


def _as_float(token: str) -> float | None:
    t = token.replace(",", "").replace("−", "-")
    m = re.match(r"^([\d.]+(?:[eE][-+]?\d+)?)(?:\s*[×x]\s*10(?:\^\{?([-−]?\d+)\}?|([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)))?$", t)
    if not m:
        return None
    try:
        value = float(m.group(1))
    except ValueError:
        return None
    exp = m.group(2) or (m.group(3) or "").translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789"))
    return value * 10.0 ** int(exp.replace("−", "-")) if exp else value


def _power_of_ten(text: str, start: int) -> float | None:
    """``10^{-3}`` / ``10^3`` written right at ``start`` (a parameter such as eps = 10^-3)."""
    m = re.match(r"10\^\{?([-−]?\d+)\}?", text[start:])
    return 10.0 ** int(m.group(1).replace("−", "-")) if m else None


def hand_typed_numbers(text: str, allowed_values: Iterable[float] = (), *, small: int = 10) -> list[TypedNumber]:
    """Numbers of a page's Markdown that no rule allows: each must be glued from a notebook.

    Allowed (CONTRIBUTING.md, "Numbers on pages"): anything inside code, roles (citations, glued
    values, cross-references) and link targets; years (1900-2099); what follows a reference word
    (``Fig. 3``, ``§5.5``, ``eq. (11)``, ``Thm 2.3``, ``Figs. 3-4``); a digit attached to a word
    (``01b``, ``K3``); integers up to ``small``
    (counting words, formula constants: ``1/(6(K+2))``); and values in ``allowed_values`` (the
    declared parameter values of the notebooks, so that "K = 100" or "ε = 0.001" may be written).
    """
    allowed = [float(v) for v in allowed_values]

    def is_allowed(value: float) -> bool:
        return any(math.isclose(value, a, rel_tol=1e-9, abs_tol=0.0) for a in allowed)

    stripped = text
    for pattern in _STRIP_PATTERNS:
        stripped = pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), stripped)
    found: list[TypedNumber] = []
    for lineno, line in enumerate(stripped.splitlines(), start=1):
        if re.match(r"^\s*(```|:::|\{)", line):
            continue
        masked = _REFERENCE_RE.sub(lambda m: " " * len(m.group(0)), line)
        for m in _NUMBER_RE.finditer(masked):
            token = m.group(0)
            power = _power_of_ten(masked, m.start())
            if power is not None:
                if is_allowed(power):
                    continue
                token_value: float | None = power
            else:
                token_value = _as_float(token)
            if token_value is None:
                continue
            integer = power is None and re.fullmatch(r"\d+", token) is not None
            if integer and (token_value <= small or 1900 <= token_value <= 2099):
                continue
            # exponents of a power of ten written in math: ^{-3}
            if masked[max(0, m.start() - 2):m.start()] in ("^{", "{-") or masked[max(0, m.start() - 1):m.start()] == "^":
                continue
            # a constant of a formula: 1/12, 2/((K+2)ε)^2
            if integer and ("/" in masked[max(0, m.start() - 1):m.start()] or masked[m.end():m.end() + 1] == "/"):
                continue
            if is_allowed(token_value):
                continue
            context = line[max(0, m.start() - 30): m.end() + 20].strip()
            found.append(TypedNumber(lineno, token, re.sub(r"\s+", " ", context)))
    return found
