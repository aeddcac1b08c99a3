"""Mathematics is MathJax, never a code span (CONTRIBUTING.md, "Chapter index.md"; issue 16, item 7).

Every Markdown page of the book and every Markdown cell of every notebook is scanned for inline
code spans that hold mathematics by a heuristic (``MATH_IN_CODE``): ``sqrt(``, a power ``^``,
``eps``/``pi``/Greek names as words, ``<=``/``>=``, ``max_{``-style subscripts, a single-letter
symbol compared with something (``n = 8``, ``H < t``), a number in e-notation (``1e-3``). Code
that really is code and matches (parameter names, commands) is listed in ``ALLOWED``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_BOOK = {"README.md", "CONTRIBUTING.md"}
SKIP_DIRS = {"_build", ".venv", "runs", "benchmarks", "tests", "src", "figures", "_static", ".git", ".pytest_cache"}

MATH_IN_CODE = [
    (re.compile(r"\bsqrt\("), "sqrt("),
    (re.compile(r"[\w)}\]]\^[\w({-]"), "a power ^"),
    (re.compile(r"(?<![\w-])(eps|epsilon|pi|gamma|alpha|beta|theta|eta|Delta|lambda|sigma|mu)(?![\w-])"), "a Greek letter spelt out"),
    (re.compile(r"<=|>=|≤|≥|≠|->|∈"), "a comparison or arrow"),
    (re.compile(r"\b(max|min|argmin|argmax|sum|log|ln|exp)_"), "an operator with a subscript"),
    (re.compile(r"^\s*[A-Za-z](_[A-Za-z0-9]|_\{[^}]*\})?(\([^)]*\))?\s*(=|<|>|~)\s*\S"), "a symbol compared or assigned"),
    (re.compile(r"\s[<>]\s"), "a comparison"),
    (re.compile(r"^\s*[-+]?\d+(\.\d+)?e[-+]?\d+\s*$"), "a number in e-notation"),
    (re.compile(r"\|[^|\s]([^|]*[^|\s])?\|"), "an absolute value |...|"),
]

# Code spans that match a pattern above but are code: (file name or "*", exact span text).
ALLOWED = {
    # command lines and parameter declarations shown as code
    ("*", "-p eps 0.5"),
    ("*", "eps"),  # the parameter of every notebook, named as a parameter (CONTRIBUTING.md)
    ("*", "epsilon"),  # the privacy parameter of the release API, named as OpenDP and diffprivlib name it
    ("*", "eps_min < eps_max"),
    # the keyword argument of the proportion release that asks for the population parameter
    ("*", 'estimand="theta"'),
    # the notebooks' parameter theta (fraction of ones), named as a parameter
    ("chapters/02-posterior-release/02b-accuracy.ipynb", "theta"),
    ("chapters/02-posterior-release/02c-notes-claims.ipynb", "theta"),
}
# Whole spans that are commands or paths are code whatever they contain.
CODE_LIKE = re.compile(
    r"^(\.venv/|python |make |pytest |git |-p |--)|\.(py|ipynb|md|json|yml|csv|png)\b"
    # a call of a Python name (snake_case, dotted or CamelCase): `sample_release(mechanism, counts, eps)`
    r"|^[A-Za-z][\w.]*(_|\.|[a-z][A-Z])[\w.]*\("
)

_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.M | re.S)
# a code span not preceded by a role name ({cite:p}`key`, {doc}`page`)
_SPAN = re.compile(r"(?<![}`])`([^`\n]+)`(?!`)")
# a whole role ({glued}`02a::key`, {cite:p}`key`): removed first, so that the text between the
# closing backtick of one role and the opening backtick of the next is not read as a code span
_ROLE = re.compile(r"\{[^{}`\s]+\}`[^`\n]*`")


def book_markdown() -> list[tuple[str, str]]:
    """``(label, Markdown text)`` of every book page and every notebook Markdown cell."""
    found: list[tuple[str, str]] = []
    for path in sorted(ROOT.rglob("*.md")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in SKIP_DIRS or rel.name in NOT_BOOK and len(rel.parts) == 1:
            continue
        found.append((rel.as_posix(), path.read_text(encoding="utf-8")))
    for path in sorted((ROOT / "chapters").rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        nb = json.loads(path.read_text(encoding="utf-8"))
        for k, cell in enumerate(nb["cells"]):
            if cell["cell_type"] == "markdown":
                src = cell["source"]
                found.append((f"{path.relative_to(ROOT).as_posix()} cell {k}", "".join(src) if isinstance(src, list) else src))
    return found


def math_in_code_spans(text: str, label: str = "*") -> list[str]:
    """The code spans of ``text`` that look like mathematics, each with the reason."""
    text = _ROLE.sub("", _FENCE.sub("", text))
    problems = []
    for m in _SPAN.finditer(text):
        span = m.group(1).replace("\\|", "|")
        if ("*", m.group(1)) in ALLOWED or (label.split(" ")[0], m.group(1)) in ALLOWED or CODE_LIKE.search(span):
            continue
        for pattern, why in MATH_IN_CODE:
            if pattern.search(span):
                problems.append(f"`{m.group(1)}` ({why})")
                break
    return problems


def test_the_heuristic_fails_on_maths_in_code_and_passes_code() -> None:
    broken = (
        "The global sensitivity `GS = sqrt(1 - pi/4)`, the tail `P[H < t]`, the bound `e^{-eps K}`, "
        "`n <= 50`, `max_{x'~x} H`, `n = 8`, `1e-3`, `|k'|` in a table `\\|k\\|`."
    )
    found = math_in_code_spans(broken)
    assert len(found) == 9, found
    fine = (
        "Call `dpbayes.release.statistic.sample_release(mechanism, counts, eps, prior, rng)` or run "
        "`.venv/bin/python -m dpbayes run chapters/04-counting-queries -p eps 0.5`; the parameter `eps`, "
        "the list `eps_grid`, the module `dpbayes.posterior.release`, {cite:p}`naldi2014counting`, "
        "the file `02a-sensitivity-privacy.ipynb`. Maths is $\\sqrt{1 - \\pi/4}$.\n"
        "Glued: EHD stays ≤ {glued}`02a::loss_max_EHD` and $P$ = {glued}`02b::p_off` at $n^{2}$.\n"
        "```python\nGS = sqrt(1 - pi/4)\n```\n"
    )
    assert math_in_code_spans(fine) == []


def test_no_mathematics_in_code_spans() -> None:
    problems = []
    for label, text in book_markdown():
        problems += [f"{label}: {p}" for p in math_in_code_spans(text, label)]
    assert not problems, "mathematics written as code (write it as $...$ MathJax):\n" + "\n".join(problems)


def test_one_epsilon_in_pages_and_figures() -> None:
    """``\\epsilon`` (the sources' spelling) is typeset as ε like ``\\varepsilon``: a MathJax macro on the pages,
    and matplotlib's mathtext draws both as U+03B5 in the figures."""
    import yaml
    from matplotlib import _mathtext_data

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert config["sphinx"]["config"]["mathjax3_config"]["tex"]["macros"]["epsilon"] == "\\varepsilon"
    assert _mathtext_data.tex2uni["epsilon"] == _mathtext_data.tex2uni["varepsilon"] == 0x3B5
