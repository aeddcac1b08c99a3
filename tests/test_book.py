"""Tests of dpbayes.book.sphinx_ext: claims-table parsing, the verdict dashboard, the generated tables, MathJax copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpbayes.book import sphinx_ext as book

VERDICT_MARK_NOT = book.VERDICT_MARK["not reproduced"]

INDEX = """# Toy

Some text with a table that is not a claims table:

| a | b |
|---|---|
| 1 | 2 |

```markdown
| Claim (source §) | Measured | Verdict | Why |
|---|---|---|---|
| inside a code fence | - | reproduced | ignored |
```

## Claims and verdicts

| Claim (source §) | Measured | Verdict | Why |
|---|---|---|---|
| Bayes beats naive (§4, Fig. 3) | error 0.12 vs 0.30, $\\|x\\|$ | **Reproduced** | see [the notebook](09a-toy.ipynb)[^1] |
| MSE grows like $1/\\varepsilon$ (§5) | slope 0.9 | partly | {doc}`09b-other` |
| Lemma 2 | counter-example | not reproduced | typo |
| Thm 1 | fixed constant | corrected (eq. 7) | |

[^1]: a footnote.
"""


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


def test_parse_claims_table_finds_rows_title_and_anchor() -> None:
    ch = book.parse_claims_tables(INDEX, "chapters/09-toy")
    assert ch.title == "Toy"
    assert ch.anchor == "claims-and-verdicts"
    assert [c.kind for c in ch.claims] == ["reproduced", "partly", "not reproduced", "corrected"]
    assert ch.claims[0].measured == "error 0.12 vs 0.30, $\\|x\\|$"  # escaped pipe stays in its cell


def test_rebase_links_makes_chapter_links_work_from_the_root() -> None:
    cell = "see [the notebook](09a-toy.ipynb)[^1] and {doc}`09b-other` and [web](https://x.org/a) [a](#top)"
    out = book.rebase_links(cell, "chapters/09-toy")
    assert "(chapters/09-toy/09a-toy.ipynb)" in out
    assert "{doc}`chapters/09-toy/09b-other`" in out
    assert "(https://x.org/a)" in out and "(#top)" in out
    assert "[^1]" not in out
    assert book.rebase_links("[x](../02-y/index.md)", "chapters/01-x") == "[x](chapters/02-y/index.md)"


def test_glued_values_in_claims_rebase_and_decide_the_dashboard_mark(tmp_path: Path) -> None:
    """A verdict that a rule decides is a glued word: the dashboard classifies the stored word and
    rewrites the reference so that it resolves from the landing page."""
    glue = "application/papermill.record/"
    out = {"output_type": "display_data", "metadata": {"scrapbook": {"name": "verdict_a", "mime_prefix": glue}},
           "data": {glue + "text/plain": "'not reproduced'"}}
    write_chapter(tmp_path, "12-glue", "# G\n\n## Claims\n\n| Claim (source §) | Measured | Verdict | Why |\n"
                  "|---|---|---|---|\n| A at {glued}`12a::mse` | m | {glued}`12a::verdict_a` | x |\n")
    notebook(tmp_path / "chapters" / "12-glue" / "12a-x.ipynb", "eps: float = 1.0  # e; range (0, inf)\n",
             [{"cell_type": "code", "metadata": {}, "source": "", "outputs": [out], "execution_count": 1}])
    (ch,) = book.collect_claims(tmp_path)
    assert ch.claims[0].kind == "not reproduced"
    text = book.verdicts_markdown([ch])
    assert "A at {glued}`/chapters/12-glue/12a::mse`" in text
    # the stored word decides the badge; a cell that says no more than its kind shows only the badge
    assert text.count("{bdg-secondary}`" + VERDICT_MARK_NOT + " not reproduced`") == 1 and "12a::verdict_a" not in text


def test_claims_in_an_included_file_are_found(tmp_path: Path) -> None:
    head = "# Chapter 11\n\n## Claims\n\n| Claim (source §) | Measured | Verdict | Why |\n|---|---|---|---|\n| A | 1 | reproduced | x |\n"
    write_chapter(tmp_path, "11-inc", head + "\n```{include} _more.md\n```\n")
    (tmp_path / "chapters" / "11-inc" / "_more.md").write_text(
        "| Claim (source §) | Measured | Verdict | Why |\n|---|---|---|---|\n| B | 2 | partly | y |\n", encoding="utf-8"
    )
    deps: list[Path] = []
    (ch,) = book.collect_claims(tmp_path, deps)
    assert [c.claim for c in ch.claims] == ["A", "B"]
    assert any(p.name == "_more.md" for p in deps)


def test_claims_table_with_extra_columns() -> None:
    text = (
        "## Verdict table\n\n| Claim (notes §) | Statement made precise | Measured | Verdict | Counterexample |\n"
        "|---|---|---|---|---|\n| Thm 1 | precise | 0.5 | holds only for k=2 | k=3 breaks it |\n"
    )
    ch = book.parse_claims_tables(text, "chapters/02-x")
    (c,) = ch.claims
    assert (c.claim, c.measured, c.verdict, c.why) == ("Thm 1", "0.5", "holds only for k=2", "k=3 breaks it")
    assert c.kind == "partly" and ch.anchor == "verdict-table"
    assert book.claims_columns(["Name", "Measured", "Verdict"]) is None


def test_verdict_normalisation() -> None:
    assert book.normalise_verdict("**Not reproduced**") == "not reproduced"
    assert book.normalise_verdict("Partly (see 03b)") == "partly"
    assert book.normalise_verdict("reproduced") == "reproduced"
    assert book.normalise_verdict("Corrected") == "corrected"
    assert book.normalise_verdict("maybe") == "other"
    assert book.normalise_verdict("holds (over-noised)") == "reproduced"
    assert book.normalise_verdict("fails (not DP)") == "not reproduced"
    assert book.normalise_verdict("fails as stated → corrected") == "corrected"
    assert book.normalise_verdict("**Refuted**") == "refuted"
    md = book.verdicts_markdown([book.ChapterClaims("chapters/01-x", "One", None, [book.Claim("c", "m", "maybe", "w")])])
    assert "? other" in md


def test_dashboard_counts_and_links(tmp_path: Path) -> None:
    write_chapter(tmp_path, "09-toy", INDEX)
    write_chapter(tmp_path, "10-empty", "# Empty\n\nBeing written.\n")
    chapters = book.collect_claims(tmp_path)
    md = book.verdicts_markdown(chapters)
    assert "| [Ch. 9: Toy](chapters/09-toy/index.md) | 4 | 1 | 1 | 1 | 1 | 0 |" in md
    assert "[Ch. 10: Empty](chapters/10-empty/index.md) | no claims table yet" in md
    # one collapsed section per chapter with claims; each row links to its own row of the chapter page
    assert md.count("::::{dropdown}") == 1 and "::::{dropdown} Ch. 9: Toy: 4 claims (1 ✓, 1 ◐, 1 ✎, 1 ✗)" in md
    for k in range(1, 5):
        assert f'| <a href="chapters/09-toy/index.html#claim-{k}">{k}</a> |' in md
    assert "{bdg-success}`✓ reproduced`" in md and "{bdg-info}`✎ corrected` corrected (eq. 7)" in md
    assert "(chapters/09-toy/09a-toy.ipynb)" not in md or "09a" in md  # rebased when present
    assert "Privacy audit" not in md
    assert book.verdicts_markdown([]).startswith("No chapter")


def test_table_cells_with_pipes_never_split_a_row() -> None:
    cells = ["max |P_LP - P_exact|", "`a | b`", "$\\|x\\|$", "P(mu outside | y)"]
    lines = book.table_markdown(["name", "value", "norm", "tail | mass"], [cells])
    (_, header, rows), = book.markdown_tables("\n".join(lines))
    assert len(header) == 4 and rows == [[book.escape_cell(c) for c in cells]]
    assert book.escape_cell("$\\|x\\|$") == "$\\|x\\|$"  # already escaped: unchanged
    assert book.table_row_problems("\n".join(lines)) == []
    # the dashboard escapes what a claims cell or a chapter title brings along
    claim = book.Claim("E|C - np| is small", "max |z| = 2", "reproduced", "")
    md = book.verdicts_markdown([book.ChapterClaims("chapters/01-x", "A | B", "claims", [claim])])
    assert book.table_row_problems(md) == []
    assert "E\\|C - np\\|" in md and "[Ch. 1: A \\| B]" in md


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
    md = book.verdicts_markdown([], summary, "chapters/privacy-audit.ipynb")
    assert "[full page](chapters/privacy-audit.ipynb)" in md and "| Laplace |" in md


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
    assert book.parse_claims_tables("# T\n\n## Verdicts\n\n" + text, "chapters/09-toy").anchor == "verdicts"
    assert book.markdown_tables("```\n" + text + "```\n") == []


def test_claim_rows_get_the_ids_the_dashboard_links_to() -> None:
    from docutils.core import publish_doctree

    rst = """
+-------+----------+---------+
| Claim | Measured | Verdict |
+=======+==========+=========+
| a     | 1        | yes     |
+-------+----------+---------+
| b     | 2        | no      |
+-------+----------+---------+

+---+---+
| x | y |
+===+===+
| 1 | 2 |
+---+---+
"""
    doctree = publish_doctree(rst)
    assert book.label_claim_rows(doctree) == 2
    from docutils import nodes

    ids = [row["ids"] for row in doctree.findall(nodes.row) if row["ids"]]
    assert ids == [["claim-1"], ["claim-2"]]


def test_evidence_column_is_parsed_and_shown() -> None:
    """An optional "Evidence" column (exact / Monte Carlo / stored run) reaches the dashboard; "—" when absent."""
    text = (
        "## Claims\n\n| Claim (source §) | Measured | Verdict | Evidence | Why |\n|---|---|---|---|---|\n"
        "| A (§2) | 0.5 | reproduced | exact | fine |\n"
        "| B (§3) | 0.7 | refuted | Monte Carlo (N = 10^5, s.e. {glued}`09a::se`) | see [09a](09a-toy.ipynb) |\n"
        "| C (§4) | 0.9 | partly | | |\n"
    )
    assert book.claims_columns(["Claim (source §)", "Measured", "Verdict", "Evidence", "Why"]) == {
        "claim": 0, "measured": 1, "verdict": 2, "why": 4, "evidence": 3}
    # without "Why", the last column is not mistaken for it when it is the evidence
    assert book.claims_columns(["Claim", "Verdict", "Evidence"])["why"] == -1
    assert book.claims_columns(["Claim", "Measured", "Verdict", "Why"])["evidence"] == -1
    ch = book.parse_claims_tables(text, "chapters/09-toy")
    assert [c.evidence for c in ch.claims] == ["exact", "Monte Carlo (N = 10^5, s.e. {glued}`09a::se`)", ""]
    assert [c.why for c in ch.claims] == ["fine", "see [09a](09a-toy.ipynb)", ""]
    md = book.verdicts_markdown([ch])
    assert "| | Claim (source §) | Verdict | Evidence |" in md
    rows = [line for line in md.splitlines() if "#claim-" in line]
    assert rows[0].endswith("| exact |")
    assert rows[1].endswith("| Monte Carlo (N = 10^5, s.e. {glued}`/chapters/09-toy/09a::se`) |"), rows[1]
    assert rows[2].endswith("| — |")
    assert book.table_row_problems(md) == []
    # a table without the column: every evidence cell is "—"
    md = book.verdicts_markdown([book.ChapterClaims("chapters/01-x", "One", None, [book.Claim("c", "m", "reproduced", "w")])])
    assert [line for line in md.splitlines() if "#claim-" in line][0].endswith("| — |")


def test_open_verdicts_get_their_own_column_only_when_present() -> None:
    assert book.normalise_verdict("**Open** (needs the paper-scale run)") == "open"
    assert book.normalise_verdict("partly reproduced") == "partly"
    assert book.normalise_verdict("holds") == "reproduced"
    closed = book.ChapterClaims("chapters/01-x", "One", None, [book.Claim("c", "m", "reproduced", "w")])
    assert "○ open" not in book.verdicts_markdown([closed])
    md = book.verdicts_markdown([book.ChapterClaims("chapters/01-x", "One", None, [
        book.Claim("c", "m", "reproduced", "w"), book.Claim("d", "m", "open", "w")])])
    assert "| ○ open |" in md and "| [Ch. 1: One](chapters/01-x/index.md) | 2 | 1 | 0 | 0 | 0 | 0 | 1 |" in md
    assert "{bdg-primary}`○ open`" in md and "2 claims (1 ✓, 1 ○)" in md


def test_verdict_cells_of_a_chapter_get_the_dashboard_badges() -> None:
    from docutils import nodes
    from docutils.core import publish_doctree

    rst = """
+-------+------------------------+
| Claim | Verdict                |
+=======+========================+
| a     | reproduced             |
+-------+------------------------+
| b     | **Partly** (at large K)|
+-------+------------------------+
| c     |                        |
+-------+------------------------+

+---+---------+
| x | Verdict |
+===+=========+
| 1 | refuted |
+---+---------+
"""
    doctree = publish_doctree(rst)
    from docutils import nodes as _nodes

    stacked = next(doctree.findall(_nodes.table))
    stacked["classes"].append(book.STACKED_TABLE_CLASS)
    assert book.label_stacked_cells(doctree) == 6  # the stacked layout's labels must not hide the verdict
    assert book.badge_verdict_cells(doctree) == 2  # the empty cell and the table without a Claim column are left
    badges = [n for n in doctree.findall(nodes.inline) if "sd-badge" in n["classes"]]
    assert [b.astext() for b in badges] == ["✓ reproduced", "◐ partly"]
    assert "sd-bg-success" in badges[0]["classes"] and "sd-bg-warning" in badges[1]["classes"]
    rows = [r for r in doctree.findall(nodes.row)]
    def shown(entry: nodes.entry) -> str:
        return " ".join(c.astext() for c in entry.children if not isinstance(c, nodes.raw))

    assert shown(rows[1].children[1]) == "✓ reproduced"  # the kind alone: the badge replaces the word
    assert shown(rows[2].children[1]) == "◐ partly (at large K)"  # more words: kept after the badge, without the kind
    assert "dpbayes-cell-label" in rows[1].children[1].children[0].astext()  # the label stays in front
    assert book.badge_verdict_cells(doctree) == 0  # idempotent
