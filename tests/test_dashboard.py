"""Tests of dpbayes.book.dashboard: the verdict dashboard, collected from the chapter pages' doctrees.

The end-to-end tests build a tiny book with Sphinx (myst-nb, sphinx-design and the book's extension, no
notebook executed) and read the landing page's HTML.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from docutils import nodes
from docutils.core import publish_doctree

from dpbayes.book import dashboard
from dpbayes.book.sphinx_ext import STACKED_TABLE_CLASS, label_stacked_cells

GLUE = "application/papermill.record/"

TOY = """# Toy

(toy-detail)=
## Detail

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

| Claim (source §) | Measured | Verdict | Evidence | Why |
|---|---|---|---|---|
| Bayes beats naive (§4, [Fig. 3](#toy-detail)) | 0.12 vs 0.30 | **Reproduced** | exact | see [the notebook](09a-toy.ipynb)[^1] |
| MSE grows like $1/\\varepsilon$ (§5, {doc}`09a-toy`)[^1] | slope 0.9 | partly: at large K | Monte Carlo (s.e. {glued}`09a::se`) | |
| Lemma 2 at {glued}`09a::n` | counter-example | {glued}`09a::verdict_a` | | typo |
| Thm 1 | fixed constant | corrected (eq. 7) | exact | |

```{include} _more.md
```

[^1]: a footnote.
"""

MORE = """| Claim (source §) | Measured | Verdict | Why |
|---|---|---|---|
| Included claim | 2 | open (needs the long run) | y |
"""

STACKED = """# Stacked

:::{table}
:class: dpbayes-stacked

| Claim (notes §) | Measured | Verdict | Why |
|---|---|---|---|
| Theorem A | 0.5 | holds | fine |
| Theorem B | 0.7 | refuted | counterexample |
:::
"""

INTRO = """# Landing

```{dpbayes-tally}
```

```{dpbayes-verdicts}
```
"""

CONF = """
extensions = ["myst_nb", "sphinx_design", "dpbayes.book.sphinx_ext"]
myst_enable_extensions = ["colon_fence", "dollarmath"]
nb_execution_mode = "off"
mathjax_path = "mathjax/tex-svg.js"
root_doc = "intro"
exclude_patterns = ["_build", "**/_*.md"]
suppress_warnings = ["myst.header"]
"""


def _glue_notebook(path: Path, values: dict[str, str]) -> None:
    outputs = [{"output_type": "display_data", "data": {GLUE + "text/plain": repr(v)},
                "metadata": {"scrapbook": {"name": k, "mime_prefix": GLUE}}} for k, v in values.items()]
    nb = {"cells": [{"cell_type": "markdown", "id": "title", "metadata": {}, "source": "# Toy notebook"},
                    {"cell_type": "code", "id": "glue", "metadata": {}, "source": "glue()", "execution_count": 1,
                     "outputs": outputs}],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb), encoding="utf-8")


def _write_book(root: Path) -> None:
    (root / "conf.py").write_text(CONF, encoding="utf-8")
    (root / "intro.md").write_text(INTRO + "\n```{toctree}\n:glob:\nchapters/*/index\nchapters/*/0*\n```\n", encoding="utf-8")
    toy = root / "chapters" / "09-toy"
    toy.mkdir(parents=True)
    (toy / "index.md").write_text(TOY, encoding="utf-8")
    (toy / "_more.md").write_text(MORE, encoding="utf-8")
    _glue_notebook(toy / "09a-toy.ipynb", {"se": "0.01", "n": "12", "verdict_a": "not reproduced"})
    for folder, text in (("10-empty", "# Empty\n\nBeing written.\n"), ("11-stacked", STACKED)):
        (root / "chapters" / folder).mkdir()
        (root / "chapters" / folder / "index.md").write_text(text, encoding="utf-8")


def _build(root: Path) -> str:
    """Build (or rebuild, incrementally) the tiny book; warnings are errors, as in the book's build."""
    # a process per build: Sphinx registers node classes globally, a second app in one process warns
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", "-d", str(root / "_build" / "doctrees"),
                           str(root), str(root / "_build" / "html")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return (root / "_build" / "html" / "intro.html").read_text(encoding="utf-8")


def _text(html: str, tag: str = " ") -> str:
    """The words of an HTML fragment; each tag becomes ``tag`` (a space keeps table cells apart)."""
    return " ".join(re.sub(r"<[^>]+>", tag, html).split())


def _titles(html: str) -> list[str]:
    return [_text(s[:s.index("</summary>")], tag="") for s in re.findall(r"<details.*?</details>", html, re.S)]


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("tinybook")
    _write_book(root)
    return root, _build(root)


def _summary_rows(html: str) -> list[str]:
    table = html[html.index("<table"):html.index("</table>")]
    return [_text(row) for row in re.findall(r"<tr.*?</tr>", table, re.S)]


def _section(html: str, title: str) -> str:
    """The folded section (``<details>``) whose title reads ``title``."""
    sections = re.findall(r"<details.*?</details>", html, re.S)
    found = [s for s, shown in zip(sections, _titles(html)) if shown == title]
    assert len(found) == 1, _titles(html)
    return found[0]


def test_summary_counts_each_chapter_and_lists_one_without_claims(book: tuple[Path, str]) -> None:
    _, html = book
    header, *rows = _summary_rows(html)
    # "open" has its column because one claim is open; "other" has none
    assert header == "Chapter Claims ✓ reproduced ◐ partly ✎ corrected ✗ not reproduced ⊘ refuted ○ open"
    assert rows == ["Ch. 9: Toy 5 1 1 1 1 0 1", "Ch. 10: Empty no claims table yet", "Ch. 11: Stacked 2 1 0 0 0 1 0"]
    assert 'href="chapters/09-toy/index.html"' in html


def test_each_claim_links_to_its_row_and_shows_the_chapters_own_cells(book: tuple[Path, str]) -> None:
    root, html = book
    toy = _section(html, "Ch. 9: Toy: 5 claims (1 ✓, 1 ◐, 1 ✎, 1 ✗, 1 ○)")
    for k in range(1, 6):
        assert f'href="chapters/09-toy/index.html#claim-{k}"' in toy
    chapter = (root / "_build" / "html" / "chapters" / "09-toy" / "index.html").read_text(encoding="utf-8")
    for k in range(1, 6):
        assert f'id="claim-{k}"' in chapter
    text = _text(toy)
    # links written relative to the chapter page still land: a label, a notebook, a {doc} role
    assert 'href="chapters/09-toy/index.html#toy-detail"' in toy
    assert 'href="chapters/09-toy/09a-toy.html"' in toy
    # glued values are filled in, in the claim and in the evidence; the glued verdict decides the badge
    assert "Lemma 2 at 12" in text and "Monte Carlo (s.e. 0.01)" in _text(toy, tag="") and "09a::" not in toy
    assert "✗ not reproduced" in text and "not reproduced not reproduced" not in text
    # a cell that says more than its kind keeps its words after the badge; an empty evidence cell is "—"
    assert "◐ partly at large K" in text and "✎ corrected (eq. 7)" in text
    assert "Lemma 2 at 12 ✗ not reproduced —" in text and "(needs the long run) —" in text
    # grouped by verdict, worst first: corrected, not reproduced, partly, open, reproduced
    titles = ["✎ corrected 1 claim", "✗ not reproduced 1 claim", "◐ partly 1 claim", "○ open 1 claim", "✓ reproduced 1 claim"]
    assert [text.index(t) for t in titles] == sorted(text.index(t) for t in titles)
    assert text.endswith("Bayes beats naive (§4, Fig. 3 ) ✓ reproduced exact")
    # the claim from the included file, the footnotes left on the chapter page, no ids defined twice
    assert "Included claim" in text and "footnote" not in toy
    assert "inside a code fence" not in text
    assert len(re.findall(r'id="toy-detail"', html)) == 0


def test_the_tally_counts_every_verdict_worst_first(book: tuple[Path, str]) -> None:
    _, html = book
    tally = re.search(r'<p class="dpbayes-tally">.*?</p>', html, re.S)
    assert tally is not None
    assert _text(tally.group(0), tag="") == ("7 claims checked: ⊘ 1 refuted ✎ 1 corrected ✗ 1 not reproduced ◐ 1 partly "
                                             "○ 1 open ✓ 2 reproduced")
    assert 'href="#verdict-dashboard"' in tally.group(0)


def test_a_chapter_page_shows_its_claims_grouped_by_verdict(book: tuple[Path, str]) -> None:
    root, _ = book
    page = (root / "_build" / "html" / "chapters" / "11-stacked" / "index.html").read_text(encoding="utf-8")
    text = _text(page)
    assert text.index("⊘ refuted 1 claim") < text.index("Theorem B") < text.index("✓ reproduced 1 claim") < text.index("Theorem A")
    assert 'id="claim-1"' in page and 'id="claim-2"' in page  # the rows keep their ids (the dashboard's links)


def test_a_stacked_chapter_table_is_shown_without_its_labels(book: tuple[Path, str]) -> None:
    _, html = book
    stacked = _section(html, "Ch. 11: Stacked: 2 claims (1 ✓, 1 ⊘)")
    assert "dpbayes-cell-label" not in stacked and "Theorem A" in stacked


def test_a_changed_chapter_reaches_the_dashboard_in_an_incremental_build(tmp_path: Path) -> None:
    _write_book(tmp_path)
    _build(tmp_path)
    page = tmp_path / "chapters" / "11-stacked" / "index.md"
    page.write_text(STACKED.replace("| refuted |", "| reproduced |"), encoding="utf-8")
    html = _build(tmp_path)
    assert "Ch. 11: Stacked: 2 claims (2 ✓)" in _titles(html)
    assert "Ch. 11: Stacked 2 2 0 0 0 0 0" in _summary_rows(html)


# -- the doctree functions, on doctrees docutils builds --------------------------------------------
CLAIMS_RST = """
+-------------------+------------------------+----------+
| Claim             | Verdict                | Evidence |
+===================+========================+==========+
| a [#f]_           | reproduced             | exact    |
+-------------------+------------------------+----------+
| b                 | **Partly** (at large K)|          |
+-------------------+------------------------+----------+
|                   |                        |          |
+-------------------+------------------------+----------+

+---+---------+
| x | Verdict |
+===+=========+
| 1 | refuted |
+---+---------+

.. [#f] a footnote
"""


def test_claim_rows_are_numbered_and_copied_in_page_order() -> None:
    doctree = publish_doctree(CLAIMS_RST, settings_overrides={"report_level": 5})
    rows = dashboard.claim_rows(doctree)
    assert [(c.claim[0].astext().strip(), c.verdict[0].astext(), "".join(n.astext() for n in c.evidence)) for c in rows] == [
        ("a", "reproduced", "exact"), ("b", "Partly (at large K)", "")]
    assert not any(isinstance(n, nodes.footnote_reference) for c in rows for part in c.claim for n in part.findall())
    assert all(part.parent is None for c in rows for part in c.claim)  # copies: the page keeps its cells
    assert dashboard.label_claim_rows(doctree) == 2  # the empty row and the table without a Claim column are left
    assert [row["ids"] for row in doctree.findall(nodes.row) if row["ids"]] == [["claim-1"], ["claim-2"]]


def test_verdict_cells_of_a_chapter_get_the_dashboard_badges() -> None:
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
    stacked = next(doctree.findall(nodes.table))
    stacked["classes"].append(STACKED_TABLE_CLASS)
    assert label_stacked_cells(doctree) == 6  # the stacked layout's labels must not hide the verdict
    assert dashboard.badge_verdict_cells(doctree) == 2  # the empty cell and the table without a Claim column are left
    badges = [n for n in doctree.findall(nodes.inline) if "sd-badge" in n["classes"]]
    assert [b.astext() for b in badges] == ["✓ reproduced", "◐ partly"]
    assert "sd-bg-success" in badges[0]["classes"] and "sd-bg-warning" in badges[1]["classes"]
    rows = list(doctree.findall(nodes.row))

    def shown(entry: nodes.entry) -> str:
        return " ".join(c.astext() for c in entry.children if not isinstance(c, nodes.raw))

    assert shown(rows[1].children[1]) == "✓ reproduced"  # the kind alone: the badge replaces the word
    assert shown(rows[2].children[1]) == "◐ partly (at large K)"  # more words: kept after the badge, without the kind
    assert "dpbayes-cell-label" in rows[1].children[1].children[0].astext()  # the label stays in front
    assert dashboard.badge_verdict_cells(doctree) == 0  # idempotent


GROUP_RST = """
+-------+-------------+
| Claim | Verdict     |
+=======+=============+
| a     | reproduced  |
+-------+-------------+
| b     | refuted     |
+-------+-------------+
| c     | refuted     |
+-------+-------------+
| d     | refuted     |
+-------+-------------+
| e     | corrected   |
+-------+-------------+
"""


def test_a_claims_table_is_grouped_by_verdict_and_each_group_folded_after_its_first_rows() -> None:
    doctree = publish_doctree(GROUP_RST, settings_overrides={"report_level": 5})
    table = next(iter(doctree.findall(nodes.table)))
    dashboard.label_claim_rows(doctree)
    grouped = dashboard.group_claims_table(table, shown=2)
    shown = [child for child in grouped.children if isinstance(child, nodes.table)]
    folded = [child for child in grouped.children if child.get("design_component") == "dropdown"]

    def claims(t: nodes.Node) -> list[str]:
        return [row.children[0].astext() for row in t.findall(nodes.row) if not isinstance(row.parent, nodes.thead)]

    assert [claims(t) for t in shown] == [["b", "c"], ["e"], ["a"]]
    assert len(folded) == 1 and claims(folded[0]) == ["d"] and "1 more refuted claim" in folded[0].astext()
    assert [p.astext() for p in grouped.children if isinstance(p, nodes.paragraph)] == [
        "⊘ refuted 3 claims", "✎ corrected 1 claim", "✓ reproduced 1 claim"]
    ids = [row["ids"] for t in grouped.findall(nodes.table) for row in t.findall(nodes.row) if row["ids"]]
    assert sorted(i for found in ids for i in found) == [f"claim-{k}" for k in range(1, 6)]


def test_verdict_normalisation() -> None:
    norm = dashboard.normalise_verdict
    assert norm("**Not reproduced**") == "not reproduced"
    assert norm("Partly (see 03b)") == "partly" and norm("partly reproduced") == "partly"
    assert norm("reproduced") == "reproduced" and norm("holds") == "reproduced"
    assert norm("Corrected") == "corrected" and norm("fails as stated → corrected") == "corrected"
    assert norm("maybe") == "other"
    assert norm("holds (over-noised)") == "reproduced"
    assert norm("fails (not DP)") == "not reproduced"
    assert norm("**Refuted**") == "refuted"
    assert norm("**Open** (needs the paper-scale run)") == "open"


def test_claims_columns() -> None:
    assert dashboard.claims_columns(["Claim (source §)", "Measured", "Verdict", "Evidence", "Why"]) == {
        "claim": 0, "measured": 1, "verdict": 2, "why": 4, "evidence": 3}
    # without "Why", the last column is not mistaken for it when it is the evidence
    assert dashboard.claims_columns(["Claim", "Verdict", "Evidence"])["why"] == -1
    assert dashboard.claims_columns(["Claim", "Measured", "Verdict", "Why"])["evidence"] == -1
    assert dashboard.claims_columns(["Claim (notes §)", "Statement made precise", "Measured", "Verdict",
                                     "Counterexample"])["why"] == 4
    assert dashboard.claims_columns(["Name", "Measured", "Verdict"]) is None


def test_open_and_other_get_a_summary_column_only_when_some_claim_has_them() -> None:
    five = list(dashboard.VERDICT_ORDER)
    assert dashboard.summary_columns([["reproduced"], []]) == five
    assert dashboard.summary_columns([["reproduced"], ["open", "partly"]]) == [*five, "open"]
    assert dashboard.summary_columns([["other"], ["open"]]) == [*five, "open", "other"]
