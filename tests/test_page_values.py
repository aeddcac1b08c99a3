"""Numbers on pages are executed outputs (dpbayes.book.pagevalues, CONTRIBUTING.md "Numbers on pages").

* every ``{glued}`` reference of every page names a notebook and a key that its stored outputs hold;
* no chapter page, intro.md or using-dpbayes.md carries a result number typed by hand;
* a book whose page references an unknown key does not build, naming the page and the key;
* a stored glued number that no longer matches what the notebook computes fails the notebook
  validation, naming the key and the page that shows it (the mutation test).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from dpbayes.book.pagevalues import (
    format_number,
    glued_references,
    hand_typed_numbers,
    rebase_glued,
    resolve_glued_text,
    resolve_notebook,
    stored_glue_values,
    verdict_within,
)
from dpbayes.book.params import notebook_parameters

ROOT = Path(__file__).resolve().parents[1]
def _with_includes(pages: list[Path]) -> list[str]:
    """The pages and the files their ``{include}`` directives pull in (a claims table may live there)."""
    from dpbayes.book.sphinx_ext import expand_includes

    found = []
    for page in pages:
        found.append(page)
        found.extend(expand_includes(page.read_text(encoding="utf-8"), page.parent)[1])
    return sorted({p.resolve().relative_to(ROOT).as_posix() for p in found})


CHECKED_PAGES = _with_includes(sorted((ROOT / "chapters").glob("*/index.md")) + [ROOT / "intro.md", ROOT / "using-dpbayes.md"])
ALL_PAGES = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.md") if p.name not in ("README.md", "CONTRIBUTING.md")
                   if not any(part.startswith((".", "_build")) or part in ("runs", "node_modules")
                              for part in p.relative_to(ROOT).parts))


def parameter_values(notebooks: list[Path]) -> set[float]:
    """Every number a notebook declares as a parameter default (a page may write these by hand)."""
    values: set[float] = set()
    for nb in notebooks:
        for p in notebook_parameters(nb).values():
            for v in p.default if isinstance(p.default, list) else [p.default]:
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    values.add(float(v))
    return values


# --------------------------------------------------------------------------------------------
# The pure functions
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("x", "digits", "style", "text"), [
    (0.0018061, 4, "g", "0.001806"),
    (1.806e-5, 4, "g", "1.806×10⁻⁵"),
    (-2.07e-5, 3, "g", "-2.07×10⁻⁵"),
    (2308.4, 4, "g", "2308"),
    (2.7e6, 2, "g", "2.7×10⁶"),
    (1e-8, 1, "g", "10⁻⁸"),
    (1e-8, 3, "g", "1.00×10⁻⁸"),
    (0.0042, 1, "%", "0.4 %"),
    (12.6, 1, "f", "12.6"),
    (99.6, 0, "int", "100"),
    (0.0, 3, "g", "0"),
    (0.88, 3, "g", "0.880"),
    (1.3, 3, "g", "1.30"),
    (30.0, 4, "g", "30"),
    (999.96, 4, "g", "1000"),
    (2.0004, 3, "g", "2.00"),
])
def test_format_number(x: float, digits: int, style: str, text: str) -> None:
    assert format_number(x, digits, style=style) == text


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"x": float("nan")}, "x must be a finite real number"),
    ({"x": True}, "x must be a finite real number"),
    ({"x": 1.0, "digits": 18}, "digits must be an integer in [0, 17]"),
    ({"x": 1.0, "style": "x"}, "style must be one of"),
])
def test_format_number_refuses_bad_input(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        format_number(**kwargs)


def test_verdict_within() -> None:
    assert verdict_within(0.0833, 0.08333, rtol=0.01) == "reproduced"
    assert verdict_within(2.0e-3, 1.0e-3, atol=5e-4) == "not reproduced"
    assert verdict_within(1.0, 2.0, atol=1.0, agree="yes", disagree="no") == "yes"
    with pytest.raises(ValueError, match="state the tolerance"):
        verdict_within(1.0, 1.0)
    with pytest.raises(ValueError, match="rtol must be a number >= 0"):
        verdict_within(1.0, 1.0, rtol=-1.0)


def test_hand_typed_numbers_rules() -> None:
    text = "\n".join([
        "The LP (11) of §5.5 and Figs. 3-4, Thm 2.3, eq. (5) in 2023 {cite:p}`key2014` (§2, Thm 2.1).",
        "`x = 0.123` and {glued}`01b::mse_0.001` and [a](01b-x.ipynb) with K = 100 and ε = 0.001.",
        "A formula $1/(6(K+2))$ and 2 cores, 3 runs; arXiv:1407.0116.",
        "The ratio is 2308 and the MSE $1.806 \\times 10^{-3}$, at $\\varepsilon = 10^{-4}$.",
        "```python",
        "y = 3.14159",
        "```",
    ])
    found = hand_typed_numbers(text, allowed_values=[100, 0.001])
    assert [(f.line, f.text) for f in found] == [(4, "2308"), (4, "1.806"), (4, "10")]
    # a declared parameter value may be written as a power of ten
    assert [f.text for f in hand_typed_numbers("at $\\varepsilon = 10^{-4}$", [1e-4])] == []


def test_glued_references_and_rebase(tmp_path: Path) -> None:
    text = "a {glued}`01b::k1` b\nc {glued}`/chapters/02-x/02a::k.2` d"
    refs = glued_references(text)
    assert [(r.ref, r.key, r.line) for r in refs] == [("01b", "k1", 1), ("/chapters/02-x/02a", "k.2", 2)]
    assert rebase_glued(text, "chapters/01-y").splitlines()[0] == "a {glued}`/chapters/01-y/01b::k1` b"
    folder = tmp_path / "chapters" / "01-y"
    folder.mkdir(parents=True)
    for name in ("01a-one.ipynb", "01b-two.ipynb", "01bb-three.ipynb"):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("", outputs=[nbformat.v4.new_output(
            "display_data", data={"application/papermill.record/text/plain": f"'{name[:3]}'"},
            metadata={"scrapbook": {"name": "k1", "mime_prefix": "application/papermill.record/"}})])]
        nbformat.write(nb, folder / name)
    assert resolve_notebook("01a", folder, tmp_path).name == "01a-one.ipynb"
    assert resolve_notebook("/chapters/01-y/01a-one", tmp_path, tmp_path).name == "01a-one.ipynb"
    with pytest.raises(ValueError, match="2 notebooks"):
        resolve_notebook("01b", folder, tmp_path)
    with pytest.raises(ValueError, match="no notebook"):
        resolve_notebook("01c", folder, tmp_path)
    assert stored_glue_values(folder / "01a-one.ipynb") == {"k1": "01a"}
    assert resolve_glued_text("x {glued}`01a::k1` {glued}`01a::nope`", folder, tmp_path) == "x 01a ?"


# --------------------------------------------------------------------------------------------
# The book's own pages
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("page", ALL_PAGES)
def test_every_glued_reference_is_a_stored_output(page: str) -> None:
    path = ROOT / page
    problems = []
    values: dict[Path, dict[str, str]] = {}
    for ref in glued_references(path.read_text(encoding="utf-8")):
        try:
            nb = resolve_notebook(ref.ref, path.parent, ROOT)
        except ValueError as exc:
            problems.append(f"{page}:{ref.line}: {exc}")
            continue
        if nb not in values:
            values[nb] = stored_glue_values(nb)
        if ref.key not in values[nb]:
            problems.append(f"{page}:{ref.line}: key {ref.key!r} is not among the glued outputs stored in "
                            f"{nb.relative_to(ROOT)}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", CHECKED_PAGES)
def test_no_result_number_is_typed_by_hand(page: str) -> None:
    path = ROOT / page
    notebooks = sorted(path.parent.glob("*.ipynb")) if path.parent != ROOT else sorted((ROOT / "chapters").rglob("*.ipynb"))
    found = hand_typed_numbers(path.read_text(encoding="utf-8"), parameter_values(notebooks))
    assert not found, (f"{len(found)} numbers on {page} are typed by hand; glue them from a notebook "
                       "(CONTRIBUTING.md, 'Numbers on pages'):\n" + "\n".join(f.describe(page) for f in found))


NOTEBOOKS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "chapters").rglob("*.ipynb"))
#: decimals a notebook's prose may state, with the reason (design constants shown in the code below them)
NOTEBOOK_PROSE_ALLOWED = {
    ("chapters/01-ubapp/01a-lp-and-exact-solver.ipynb", "0.3"): "the range of the random loss exponent p, drawn in the "
                                                               "cell below the text",
}


def typed_decimals_in_prose(notebook: Path) -> list[str]:
    """Decimals (``0.7484``, ``2,200``) typed into a notebook's Markdown cells that no rule allows.

    The rules of :func:`hand_typed_numbers` with the notebook's own parameter values allowed; small integers
    and counts stay allowed in a notebook's prose, a decimal is a result and must be an output (a ``{glued}``
    reference, or text a code cell generates)."""
    nb = nbformat.read(notebook, as_version=4)
    allowed = parameter_values([notebook])
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        for number in hand_typed_numbers(cell.source, allowed):
            if any(ch in number.text for ch in ".,"):
                found.append(f"cell {index}: {number.text!r} in '{number.context}'")
    return found


def test_a_decimal_typed_into_a_notebooks_prose_is_found(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("Thm 2.5 holds with probability 0.7484 for 2,200 counties, $F_{11}$."),
                nbformat.v4.new_code_cell("x = 0.7484")]
    nbformat.write(nb, tmp_path / "demo.ipynb")
    found = typed_decimals_in_prose(tmp_path / "demo.ipynb")
    assert [f.split("'")[1] for f in found] == ["0.7484", "2,200"]


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_no_decimal_is_typed_into_a_notebooks_prose(notebook: str) -> None:
    found = [f for f in typed_decimals_in_prose(ROOT / notebook)
             if (notebook, f.split("'")[1]) not in NOTEBOOK_PROSE_ALLOWED]
    assert not found, (f"{notebook}: decimals typed into the prose; generate the text in a code cell or use a "
                       "{glued} reference (CONTRIBUTING.md, 'Numbers on pages'):\n" + "\n".join(found))


# --------------------------------------------------------------------------------------------
# End to end: a tiny book, built and validated
# --------------------------------------------------------------------------------------------
GLUE_CELL = """\
from dpbayes.book.pagevalues import glue_number
glue_number("mean_error", sum(x / 7 for x in range(7)) / 7, 4)
"""


def tiny_glue_book(root: Path, page: str, execute: str = "force") -> Path:
    """A book with one page (``intro.md``) and one notebook that glues ``mean_error``.

    With ``execute="off"`` the notebook is stored executed (as the chapters are) and the book renders
    its stored outputs, as ``make browser`` does."""
    chapter = root / "chapters" / "00-demo"
    chapter.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Demo"), nbformat.v4.new_code_cell(GLUE_CELL)]
    if execute == "off":
        from nbclient import NotebookClient

        NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    nbformat.write(nb, chapter / "00a-demo.ipynb")
    (root / "intro.md").write_text(page, encoding="utf-8")
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: chapters/00-demo/00a-demo\n")
    (root / "_config.yml").write_text(
        f"title: tiny\nonly_build_toc_files: true\nexecute:\n  execute_notebooks: {execute}\n"
        "sphinx:\n  extra_extensions: [dpbayes.book.sphinx_ext]\n  config:\n    mathjax_path: mathjax/tex-svg.js\n")
    return root


def build(root: Path) -> subprocess.CompletedProcess[str]:
    jb = Path(sys.executable).with_name("jupyter-book")
    return subprocess.run([str(jb), "build", str(root), "-W", "--keep-going", "-q"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONWARNINGS": "ignore"})


@pytest.mark.xdist_group("tiny-glue-book")
@pytest.mark.parametrize("execute", ["force", "off"])
def test_a_glued_value_reaches_the_page_and_an_unknown_key_fails_the_build(tmp_path: Path, execute: str) -> None:
    page = "# Tiny\n\nThe mean error is {glued}`chapters/00-demo/00a::mean_error`.\n"
    good = tiny_glue_book(tmp_path / "good", page, execute)
    result = build(good)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    html = (good / "_build" / "html" / "intro.html").read_text(encoding="utf-8")
    assert '<span class="pasted-text">0.4286</span>' in html

    bad = tiny_glue_book(tmp_path / "bad", page.replace("mean_error", "mean_eror"), execute)
    result = build(bad)
    assert result.returncode != 0
    log = result.stdout + result.stderr
    assert "intro.md" in log and "mean_eror" in log, log[-2000:]


def test_a_stale_stored_number_fails_validation_naming_key_and_page(tmp_path: Path) -> None:
    """The mutation test: a copy of a chapter notebook whose stored glued number is changed."""
    page = ROOT / "chapters" / "04-counting-queries" / "index.md"
    refs = [r for r in glued_references(page.read_text(encoding="utf-8")) if r.ref == "04a"]
    if not refs:
        pytest.fail("chapters/04-counting-queries/index.md glues nothing from 04a: pick another notebook here")
    key = refs[0].key
    book = tmp_path / "book"
    shutil.copytree(ROOT / "chapters" / "04-counting-queries", book / "chapters" / "04-counting-queries",
                    ignore=shutil.ignore_patterns("*.png"))
    shutil.copy(ROOT / "_toc.yml", book / "_toc.yml")
    nb_path = next((book / "chapters" / "04-counting-queries").glob("04a*.ipynb"))
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    changed = None
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            if ((out.get("metadata") or {}).get("scrapbook") or {}).get("name") == key:
                mime = next(k for k in out["data"] if k.endswith("text/plain"))
                old = "".join(out["data"][mime])
                # one more unit in the first digit: far beyond any printed-digit tolerance
                new = "".join(str((int(c) + 1) % 10) if c.isdigit() and i == next(j for j, d in enumerate(old) if d.isdigit())
                              else c for i, c in enumerate(old))
                out["data"][mime] = new
                changed = (old, new)
    assert changed is not None, f"key {key!r} not found in the stored outputs of {nb_path.name}"
    nb_path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "-p", "tests.nbval_numeric", "--nbval-sanitize-with",
         str(ROOT / "tests" / "nbval-sanitize.cfg"), "-p", "no:cacheprovider", "-q", str(nb_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "DPBAYES_FIGURES_DIR": str(tmp_path / "figures")})
    assert result.returncode != 0, f"changing {changed} went unnoticed:\n{result.stdout[-3000:]}"
    assert f"glued value {key!r}, shown on chapters/04-counting-queries/index.md:" in result.stdout, result.stdout[-3000:]


# --------------------------------------------------------------------------------------------
# A key on a page is findable in its notebook by its literal name
# --------------------------------------------------------------------------------------------
def _code_text(notebook: Path) -> str:
    nb = nbformat.read(notebook, as_version=4)
    return "\n".join(c.source for c in nb.cells if c.cell_type == "code")


def _literal(key: str, code: str) -> bool:
    # source_value("k", ...) glues "source.k"
    names = [key, key[len("source."):]] if key.startswith("source.") else [key]
    return any(f'"{k}"' in code or f"'{k}'" in code for k in names)


def keys_not_literal(page: Path) -> list[str]:
    """``{glued}`` roles and ``{glue}`` blocks of ``page`` whose key does not appear, quoted, in the code
    of the notebook that glues it (a key built by an f-string cannot be grepped back to its line)."""
    from dpbayes.book.pagevalues import glue_block_notebook, glue_blocks

    text = page.read_text(encoding="utf-8")
    refs = [(ref.ref, ref.key, f"line {ref.line}") for ref in glued_references(text)]
    problems, code = [], {}
    for ref, key, where in refs:
        try:
            nb = resolve_notebook(ref, page.parent, ROOT)
        except ValueError:
            continue  # test_every_glued_reference_is_a_stored_output names it
        code.setdefault(nb, _code_text(nb))
        if not _literal(key, code[nb]):
            problems.append(f"{where}: {key!r} is not written literally in {nb.relative_to(ROOT)}")
    for doc, key in glue_blocks(text):
        nb = glue_block_notebook(doc, page.parent, ROOT)
        if nb.is_file():
            code.setdefault(nb, _code_text(nb))
            if not _literal(key, code[nb]):
                problems.append(f"glue block {key!r} is not written literally in {nb.relative_to(ROOT)}")
    return problems


def test_a_key_built_by_an_f_string_is_found(tmp_path: Path) -> None:
    folder = tmp_path / "chapters" / "x"
    folder.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('glue_number("plain", 1.0)\nfor e in (1, 2):\n    glue_number(f"r_eps{e}", e)')]
    nbformat.write(nb, folder / "01a-one.ipynb")
    page = folder / "index.md"
    page.write_text("{glued}`01a::plain` and {glued}`01a::r_eps1`\n", encoding="utf-8")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert keys_not_literal(page) == ["line 1: 'r_eps1' is not written literally in chapters/x/01a-one.ipynb"]
    finally:
        ROOT = saved


@pytest.mark.parametrize("page", CHECKED_PAGES)
def test_every_key_on_a_page_is_literal_in_its_notebook(page: str) -> None:
    problems = keys_not_literal(ROOT / page)
    assert not problems, f"{len(problems)} keys on {page} cannot be grepped back to their notebook:\n" + "\n".join(problems)


@pytest.mark.parametrize("page", sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "chapters").glob("*/index.md")))
def test_chapter_page_is_within_the_reading_targets(page: str) -> None:
    """Unfolded words, numbers and numbers per table cell of a chapter page (``python -m dpbayes.book.pagesize``)."""
    from dpbayes.book.pagesize import measure_page

    problems = measure_page(ROOT / page, ROOT).problems()
    assert not problems, "\n".join(problems)


@functools.cache
def _unused_glued_keys() -> dict[str, list[str]]:
    """Read every page and notebook once for all notebooks of the test below."""
    from dpbayes.book.pagesize import unused_glued_keys

    return unused_glued_keys(ROOT)


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_every_glued_key_is_shown_on_a_page(notebook: str) -> None:
    """Glue nothing that no page uses (``python -m dpbayes.book.pagesize --unused-keys``): a glued key no page
    shows is a number nobody reads, and a sweep summary has every glued key as a column anyway."""
    unused = _unused_glued_keys()[notebook]
    assert not unused, f"{notebook} glues keys that no page shows: {', '.join(unused)}"
