"""Tests of dpbayes.book.sphinx_ext: Markdown tables, the generated tables, MathJax copy (the dashboard: test_dashboard.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpbayes.book import sphinx_ext as book

INDEX = "# Toy\n\nA chapter page; its claims table is tested with the dashboard (test_dashboard.py).\n"


def write_chapter(root: Path, folder: str, text: str) -> None:
    (root / "chapters" / folder).mkdir(parents=True)
    (root / "chapters" / folder / "index.md").write_text(text, encoding="utf-8")


def notebook(path: Path, params: str, extra_cells: list[dict] | None = None) -> None:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# T"},
        {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": params, "outputs": [], "execution_count": None},
        *(extra_cells or []),
    ]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb), encoding="utf-8")


def test_rebase_links_makes_chapter_links_work_from_the_root() -> None:
    cell = "see [the notebook](09a-toy.ipynb)[^1] and {doc}`09b-other` and [web](https://x.org/a) [a](#top)"
    out = book.rebase_links(cell, "chapters/09-toy")
    assert "(chapters/09-toy/09a-toy.ipynb)" in out
    assert "{doc}`chapters/09-toy/09b-other`" in out
    assert "(https://x.org/a)" in out and "(#top)" in out
    assert "[^1]" not in out
    assert book.rebase_links("[x](../02-y/index.md)", "chapters/01-x") == "[x](chapters/02-y/index.md)"


def test_table_cells_with_pipes_never_split_a_row() -> None:
    cells = ["max |P_LP - P_exact|", "`a | b`", "$\\|x\\|$", "P(mu outside | y)"]
    lines = book.table_markdown(["name", "value", "norm", "tail | mass"], [cells])
    (_, header, rows), = book.markdown_tables("\n".join(lines))
    assert len(header) == 4 and rows == [[book.escape_cell(c) for c in cells]]
    assert book.escape_cell("$\\|x\\|$") == "$\\|x\\|$"  # already escaped: unchanged
    assert book.table_row_problems("\n".join(lines)) == []


def test_table_row_problems_finds_an_unescaped_pipe() -> None:
    broken = "| Claim | Measured |\n|---|---|\n| max $|z|$ | 2 |\n| ok | 1 |\n"
    problems = book.table_row_problems(broken)
    assert len(problems) == 1 and problems[0].startswith("line 3: 4 cells under a 2-column header")
    assert book.table_row_problems(broken.replace("$|z|$", "$\\|z\\|$")) == []


BOOK_ROOT = Path(__file__).resolve().parents[1]


def book_markdown_pages() -> list[Path]:
    skip = {"README.md", "CONTRIBUTING.md"}
    found = [p for p in BOOK_ROOT.glob("*.md") if p.name not in skip]
    found += [p for p in (BOOK_ROOT / "chapters").rglob("*.md") if ".ipynb_checkpoints" not in p.parts]
    return sorted(found)


def test_every_markdown_page_table_has_whole_rows() -> None:
    """A | in a cell of any Markdown page of the book (code and math included) is written \\|."""
    pages = book_markdown_pages()
    assert any(p.name == "index.md" for p in pages), pages
    problems = [f"{p.relative_to(BOOK_ROOT)} {msg}" for p in pages for msg in book.table_row_problems(p.read_text("utf-8"))]
    assert not problems, "\n".join(problems)


def test_chapter_page_headings_are_left_unnumbered() -> None:
    """The chapter page's headings get no section number, so its notebooks are N.1, N.2, ..."""
    from docutils import nodes
    from sphinx import addnodes

    def entry(name: str, *children: nodes.Node) -> nodes.list_item:
        ref = nodes.reference("", name, internal=True, refuri="x", anchorname="#" + name)
        return nodes.list_item("", addnodes.compact_paragraph("", "", ref), *children)

    toctree = addnodes.toctree(entries=[(None, "chapters/01-x/01a"), (None, "chapters/01-x/01b")])
    sub = nodes.bullet_list("", entry("claims", nodes.bullet_list("", entry("detail"))), entry("deviations"), toctree)
    toc = nodes.bullet_list("", entry("title", sub))
    assert book.skip_heading_numbers(toc) == 3
    paras = list(toc.findall(addnodes.compact_paragraph))
    assert "skip_section_number" not in paras[0]  # the page title keeps the chapter's number
    assert all(p.get("skip_section_number") for p in paras[1:])
    assert book.CHAPTER_PAGE_RE.match("chapters/01-ubapp/index")
    assert not book.CHAPTER_PAGE_RE.match("chapters/01-ubapp/01a-lp")


def test_dashboard_includes_the_audit_summary(tmp_path: Path) -> None:
    table = (
        "| Mechanism | Used in | Run at eps | Proven eps | Proof | Exact / analytic eps | Bound | Verdict |\n"
        "|:--|:--|:--|:--|:--|:--|:--|:--|\n"
        "| Laplace | Ch. 4 | 1 | 1 | Dwork et al. | 1 | 0.97 | ok |\n"
    )
    cell = {"cell_type": "code", "metadata": {}, "source": "x", "execution_count": 1,
            "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"text/markdown": table}}]}
    nb = tmp_path / "chapters" / "privacy-audit.ipynb"
    notebook(nb, "eps: float = 1.0  # e; range (0, inf)\n", [cell])
    summary = book.audit_summary(nb)
    assert summary is not None
    header = summary.splitlines()[0]
    assert "Mechanism" in header and "Verdict" in header and "Audit |" not in header and "Bound" not in header
    assert "| Laplace | Ch. 4 | 1 | 1 | ok |" in summary
    md = book.audit_markdown(summary, "chapters/privacy-audit.ipynb")
    assert "[full page](chapters/privacy-audit.ipynb)" in md and "| Laplace |" in md
    assert "Privacy audit: 1 mechanisms and settings checked" in md
    assert "no summary table yet" in book.audit_markdown(None, "chapters/privacy-audit.ipynb")


def test_params_table_and_run_examples_use_declared_parameters(tmp_path: Path) -> None:
    write_chapter(tmp_path, "09-toy", INDEX)
    notebook(
        tmp_path / "chapters" / "09-toy" / "09a-toy.ipynb",
        'eps: float = 1.0  # privacy level | with a pipe and $5; range (0, inf)\n'
        'K: int = 100  # trials; range [1, 1000]\n'
        'method: str = "exact"  # how; choices exact, mc\n',
    )
    md = book.params_markdown(tmp_path, linkable={"chapters/09-toy/09a-toy"})
    assert "::::{dropdown} chapters/09-toy/09a-toy.ipynb: eps, K, method" in md  # one fold per notebook
    assert "Notebook: [`chapters/09-toy/09a-toy.ipynb`](chapters/09-toy/09a-toy.ipynb)" in md
    assert "| `eps` (float) | `1.0` | (0, inf) |" in md
    assert "privacy level \\| with a pipe and \\$5" in md
    assert "| `method` (str) | `'exact'` | one of exact, mc |" in md
    unlinked = book.params_markdown(tmp_path, linkable=set())
    assert "Notebook: `chapters/09-toy/09a-toy.ipynb`" in unlinked

    examples = book.run_examples_markdown(tmp_path)
    assert "dpbayes run chapters/09-toy -p eps 2.0" in examples
    assert "-p eps -1.0" in examples and "# error: parameter eps must lie in (0, inf), got -1.0" in examples


def test_long_list_defaults_are_shortened() -> None:
    assert book._short_default([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]) == "[0.1, 0.2, …, 0.6] (6 values)"
    assert book._short_default([1, 2]) == "[1, 2]"
    assert book._short_default(True) == "true" and book._short_default("mc") == "'mc'"


def test_generated_tables_when_nothing_is_written(tmp_path: Path) -> None:
    assert book.params_markdown(tmp_path).startswith("No notebook")
    assert book.run_examples_markdown(tmp_path).startswith("No chapter")


def test_copy_mathjax_ships_the_bundle_and_its_components(tmp_path: Path) -> None:
    pytest.importorskip("mathjax")
    target = tmp_path / "mathjax"
    book.copy_mathjax(target, "tex-svg.js")
    assert (target / "tex-svg.js").stat().st_size > 100_000
    assert (target / "input" / "tex" / "extensions").is_dir()  # autoloaded TeX packages, offline
    assert (target / "LICENSE").exists()
    assert not (target / "tex-chtml-full.js").exists()  # unused bundles are not copied
    with pytest.raises(RuntimeError, match="does not ship"):
        book.copy_mathjax(tmp_path / "other", "no-such-bundle.js")


def test_bibliography_labels_are_author_year() -> None:
    from pybtex.database import parse_string

    bib = parse_string(
        "@misc{a, author={Naldi, Maurizio and D'Acquisto, Giuseppe}, title={T}, year={2014}}\n"
        "@misc{b, author={Dwork, Cynthia and McSherry, Frank and Nissim, Kobbi}, title={T}, year={2006}}\n"
        "@misc{c, author={Y{\\i}ld{\\i}r{\\i}m, Sinan}, title={T}, year={2024}}\n"
        "@misc{d, author={Van Trees, Harry L.}, title={T}, year={2004}}\n"
        "@misc{e, author={Van Trees, Harry L.}, title={U}, year={2004}}\n",
        "bibtex",
    )
    labels = book.author_year_labels(list(bib.entries.values()))
    assert labels == ["Naldi and D'Acquisto, 2014", "Dwork et al., 2006", "Yıldırım, 2024",
                      "Van Trees, 2004a", "Van Trees, 2004b"]
    book.register_author_year_style()
    from pybtex.plugin import find_plugin

    style = find_plugin("pybtex.style.formatting", "dpbayes-author-year")()
    formatted = list(style.format_entries(bib.entries.values()))
    assert formatted[0].label == "Dwork et al., 2006"  # sorted by author, labelled author-year


def test_long_commands_are_continued_to_fit_the_column() -> None:
    """Generated shell lines fit ``CODE_LINE_CHARS``; the continued lines are the same words."""
    command = (".venv/bin/python -m dpbayes run chapters/03-adaptive-truncation/03b-smc-simulated.ipynb "
               "-p n 1000 -p n_particles 200 -p n_runs 10 -p mcmc_iter 3000 -p mcmc_burn_in 1000")
    lines = book.shell_command_lines(command)
    assert lines[0] == ".venv/bin/python -m dpbayes run \\"
    assert all(len(line) <= book.CODE_LINE_CHARS for line in lines), lines
    assert all(line.endswith(" \\") for line in lines[:-1]) and not lines[-1].endswith("\\")
    assert all(line.startswith("    ") for line in lines[1:])
    assert " ".join(line.removesuffix("\\") for line in lines).split() == command.split()
    assert not any(line.strip().endswith("-p") for line in lines)  # an option stays with its value
    assert book.shell_command_lines("make test") == ["make test"]
    assert book.shell_command_lines("cmd " + "x" * 100) == ["cmd " + "x" * 100]  # one long word stays whole
    comment = book.shell_comment_lines("chapters/02-posterior-release: eps = 2.0 instead of 1.0 "
                                       "(privacy parameter the mechanisms are calibrated for)")
    assert len(comment) == 2 and all(line.startswith("# ") and len(line) <= book.CODE_LINE_CHARS for line in comment)
    negative = ".venv/bin/python -m dpbayes run chapters/01-ubapp/01a-lp-and-exact-solver.ipynb -p eps -1.0"
    assert book.shell_command_lines(negative)[-1].endswith("-p eps -1.0")  # -1.0 is a value, not an option


STACKED_RST = """
.. table::
   :class: dpbayes-stacked

   =====  ==============
   Claim  Measured $x$
   =====  ==============
   a      1
   b      2 <sup>
   =====  ==============

=====  =====
plain  table
=====  =====
c      3
=====  =====
"""


def test_stacked_table_cells_get_their_column_header_as_label() -> None:
    from docutils import nodes
    from docutils.core import publish_doctree

    doctree = publish_doctree(STACKED_RST, settings_overrides={"report_level": 5})
    assert book.label_stacked_cells(doctree) == 4  # body cells of the stacked table only
    stacked, plain = list(doctree.findall(nodes.table))
    labels = [n.astext() for n in stacked.findall(nodes.raw)]
    assert labels == ['<span class="dpbayes-cell-label">Claim</span>', '<span class="dpbayes-cell-label">Measured $x$</span>'] * 2
    assert not list(plain.findall(nodes.raw))
    first_cell = next(stacked.findall(nodes.entry, include_self=False))
    assert not list(first_cell.findall(nodes.raw))  # the header row itself is not labelled
    # a header with markup characters is escaped
    doctree = publish_doctree(STACKED_RST.replace("Claim", "C<b>&"), settings_overrides={"report_level": 5})
    book.label_stacked_cells(doctree)
    assert '<span class="dpbayes-cell-label">C&lt;b&gt;&amp;</span>' in [n.astext() for n in doctree.findall(nodes.raw)]


def test_tables_inside_a_colon_fence_are_found_and_code_fences_are_not() -> None:
    text = ":::{table}\n:class: dpbayes-stacked\n\n| Claim | Measured | Verdict | Why |\n|---|---|---|---|\n| a | 1 | holds | - |\n:::\n"
    assert [(header, rows) for _, header, rows in book.markdown_tables(text)] == [
        (["Claim", "Measured", "Verdict", "Why"], [["a", "1", "holds", "-"]])
    ]
    assert book.markdown_tables("```\n" + text + "```\n") == []




# -- the reader's first screen and library calls in tables (issue 49) --------------------------------
FINDINGS_RST = """
Chapter
=======

The question.

.. admonition:: Findings
   :class: findings

   - a finding

The chapter's figure.

Verdicts
--------

A table.
"""


def test_the_findings_box_becomes_a_section_with_the_text_up_to_the_next_heading() -> None:
    from docutils import nodes
    from docutils.core import publish_doctree

    from dpbayes.book.sphinx_ext import findings_heading

    doctree = publish_doctree(FINDINGS_RST, settings_overrides={"report_level": 5, "doctitle_xform": False})
    assert findings_heading(doctree) == 1
    chapter = next(iter(doctree.findall(nodes.section)))
    sections = [c for c in chapter.children if isinstance(c, nodes.section)]
    assert [s[0].astext() for s in sections] == ["Findings", "Verdicts"]
    findings = sections[0]
    assert findings["ids"] == ["findings"]
    box = next(iter(findings.findall(nodes.admonition)))
    assert not any(isinstance(c, nodes.title) for c in box.children) and "a finding" in box.astext()
    assert findings.children[-1].astext() == "The chapter's figure."
    assert chapter.children[1].astext() == "The question." and len(chapter.children) == 4  # title, text, 2 sections


CALLS_RST = """
+--------------------------------------------+----------------+
| Call                                       | Name           |
+============================================+================+
| ``release_count_geometric(count, n, eps)`` | ``eps_grid``   |
+--------------------------------------------+----------------+

Outside a table: ``f(x)``.
"""


def test_a_library_call_in_a_table_may_wrap_after_its_parenthesis_only() -> None:
    from docutils import nodes
    from docutils.core import publish_doctree

    from dpbayes.book.sphinx_ext import CALL_CLASS, break_code_at_arguments

    doctree = publish_doctree(CALLS_RST, settings_overrides={"report_level": 5})
    assert break_code_at_arguments(doctree) == 1
    call, name, outside = list(doctree.findall(nodes.literal))
    assert CALL_CLASS in call["classes"] and CALL_CLASS not in name["classes"] + outside["classes"]
    assert [c.astext() if isinstance(c, nodes.Text) else "<wbr>" for c in call.children] == [
        "release_count_geometric(", "<wbr>", "count, n, eps)"]
    assert call.astext().replace("<wbr>", "") == "release_count_geometric(count, n, eps)"
    assert outside.astext() == "f(x)" and len(outside.children) == 1
