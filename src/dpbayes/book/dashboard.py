"""The verdict dashboard of the landing page, collected from the chapter pages' doctrees.

A chapter page (``chapters/<nn>-<slug>/index``) holds one or more claims tables: a table whose
header has a "Claim" and a "Verdict" column (format of CONTRIBUTING.md). The dashboard shows, per
chapter, how many claims got each verdict, and every claim with its verdict and evidence, linked to
its row on the chapter page. It is built in three steps, each on the doctree Sphinx already has:

1. ``doctree-read`` of a chapter page (:func:`claim_rows`): every claims-table row gets the id
   ``claim-<n>`` and a copy of its Claim, Verdict and Evidence cells is kept in the build
   environment, so the dashboard shows exactly what the chapter shows (links, maths, citations,
   glued values included).
2. A post-transform of the landing page (:class:`FillVerdictDashboard`, priority 4: before myst-nb
   resolves glued values at 5, so the copied ``{glued}`` values are resolved with the rest) puts
   one folded section per chapter in place of the ``{dpbayes-verdicts}`` directive's placeholder.
3. ``doctree-resolved`` of the landing page (:func:`finish_dashboard`): a glued verdict is text by
   now, so the verdicts are classified (:func:`normalise_verdict`), counted into the summary table
   and the section titles, and every verdict cell gets its badge (:func:`badge_verdict_cells`, the
   same as on the chapter pages).

Between steps 2 and 3 a post-transform of every page (:class:`GroupVerdictRows`, priority 6: just after
myst-nb's glued values are resolved, before sphinx-design turns dropdowns into ``<details>``) groups the
rows of every claims table, on the chapter pages and in the dashboard, by verdict (:data:`GROUP_ORDER`:
refuted and corrected first, reproduced last); each group shows its first :data:`GROUP_SHOWN` rows and
folds the rest. The rows keep their ``claim-<n>`` ids, so the dashboard's links still land. A
``{dpbayes-tally}`` directive on the dashboard's page becomes one line counting every verdict
(:func:`tally_line`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import docname_join
from sphinx.util.osutil import SEP
from sphinx_design.shared import create_component

__all__ = [
    "CHAPTER_PAGE_RE",
    "CLAIM_ROW_ID",
    "VERDICT_BADGE",
    "VERDICT_MARK",
    "VERDICT_OPTIONAL",
    "VERDICT_ORDER",
    "ChapterClaims",
    "FillVerdictDashboard",
    "GROUP_ORDER",
    "GROUP_SHOWN",
    "GroupVerdictRows",
    "group_claims_table",
    "tally_line",
    "badge_verdict_cells",
    "chapter_label",
    "claim_rows",
    "claims_columns",
    "claims_tables",
    "dashboard_chapters",
    "finish_dashboard",
    "label_claim_rows",
    "normalise_verdict",
    "summary_columns",
    "verdicts_placeholder",
]

VERDICT_ORDER = ("reproduced", "partly", "corrected", "not reproduced", "refuted")
# plain symbols present in common text fonts (emoji fonts are often missing, e.g. headless Chromium)
VERDICT_MARK = {"reproduced": "✓", "partly": "◐", "corrected": "✎", "not reproduced": "✗", "refuted": "⊘",
                "open": "○", "other": "?"}
# kinds shown in the dashboard's summary only when some claim has them
VERDICT_OPTIONAL = ("open", "other")
# sphinx-design badge classes, one colour per verdict
VERDICT_BADGE = {"reproduced": "bdg-success", "partly": "bdg-warning", "corrected": "bdg-info",
                 "not reproduced": "bdg-secondary", "refuted": "bdg-danger", "open": "bdg-primary",
                 "other": "bdg-light"}
CLAIM_ROW_ID = "claim-{}"  # id of the n-th row (from 1) of a chapter page's claims tables
CHAPTER_PAGE_RE = re.compile(r"^chapters/(\d+)-[^/]+/index$")
ENV_KEY = "dpbayes_claims"  # attribute of the build environment: {chapter docname: [ClaimCells]}
DASHBOARD_TABLE_CLASS = "dpbayes-dashboard-claims"
COUNTS_CLASS = "dpbayes-claim-counts"
DASHBOARD_HEADER = ("", "Claim (source §)", "Verdict", "Evidence")
# the order of the verdict groups of a claims table: what the book found wrong first
GROUP_ORDER = ("refuted", "corrected", "not reproduced", "partly", "open", "other", "reproduced")
GROUP_SHOWN = 2  # rows of each verdict group shown before the group's fold
GROUPS_CLASS = "dpbayes-verdict-groups"
GROUP_TITLE_CLASS = "dpbayes-verdict-group-title"
TALLY_CLASS = "dpbayes-tally"
CHAPTER_ATTR = "dpbayes_chapter"  # a dashboard table's chapter docname (kept by the tables it is split into)


def claims_columns(header: list[str]) -> dict[str, int] | None:
    """Column index of claim / measured / verdict / why / evidence in a claims-table header, or ``None``.

    The format of CONTRIBUTING.md is ``| Claim (source §) | Measured | Verdict | Why |``, with an
    optional ``Evidence`` column (what the verdict rests on: "exact", "Monte Carlo (N = 10^5,
    s.e. ...)", "stored run <label>"); columns are found by their first word, so extra columns
    (or ``Claim (notes §)``) are tolerated. A table needs a "Claim" and a "Verdict" column; "Why"
    falls back to the last column that is none of the others. A missing column is ``-1``.
    """
    names = [h.strip("*_ ").lower() for h in header]

    def find(*words: str) -> int | None:
        return next((i for i, n in enumerate(names) if n.startswith(words)), None)

    claim, verdict = find("claim"), find("verdict")
    if claim is None or verdict is None:
        return None
    measured = find("measured")
    evidence = find("evidence")
    why = find("why")
    if why is None and len(names) - 1 not in (claim, verdict, measured, evidence):
        why = len(names) - 1
    return {"claim": claim, "measured": -1 if measured is None else measured, "verdict": verdict,
            "why": -1 if why is None else why, "evidence": -1 if evidence is None else evidence}


def normalise_verdict(text: str) -> str:
    """One of ``VERDICT_ORDER``, ``open`` or ``other`` for a verdict cell like ``**Partly** (see below)``.

    Besides the five verdicts of CONTRIBUTING.md ("refuted": the book shows the claim false; "not
    reproduced": the book could not obtain it) and "open" (the book cannot decide yet), the wording
    "holds" (reproduced), "holds only ..." (partly) and "fails" (not reproduced) is understood;
    "corrected" anywhere wins.
    """
    low = re.sub(r"[*_`]", "", text).strip().lower()
    if "corrected" in low:
        return "corrected"
    if low.startswith(("refuted", "false")):
        return "refuted"
    if low.startswith(("not reproduced", "not-reproduced", "no ", "fails", "violated")) or low == "no":
        return "not reproduced"
    if low.startswith(("partly", "partially", "holds only", "mostly")):
        return "partly"
    if low.startswith(("reproduced", "holds", "confirmed", "yes")):
        return "reproduced"
    if low.startswith(("open", "undecided")):
        return "open"
    return "other"


def chapter_label(folder: str, title: str) -> str:
    """``Ch. 1: <title>`` for ``chapters/01-x`` (the title itself when the folder has no number)."""
    m = re.match(r"^(\d+)", folder.rsplit("/", 1)[-1])
    return f"Ch. {int(m.group(1))}: {title}" if m else title


# --------------------------------------------------------------------------------------------
# Claims tables of a doctree
# --------------------------------------------------------------------------------------------
def claims_tables(doctree: Any) -> Iterator[tuple[dict[str, int], list[Any]]]:
    """``(columns, body rows)`` of every claims table of a doctree, in page order (:func:`claims_columns`)."""
    for table in doctree.findall(nodes.table):
        head = next(table.findall(nodes.thead), None)
        body = next(table.findall(nodes.tbody), None)
        header_row = next(head.findall(nodes.row), None) if head is not None else None
        if body is None or header_row is None:
            continue
        cols = claims_columns([entry.astext() for entry in header_row.children])
        if cols is not None:
            yield cols, [row for row in body.children if isinstance(row, nodes.row)]


def _claim_body_rows(doctree: Any) -> Iterator[tuple[dict[str, int], Any]]:
    """The non-empty body rows of a page's claims tables, in page order: the rows a dashboard counts."""
    for cols, rows in claims_tables(doctree):
        for row in rows:
            if not all(_blank(entry) for entry in row.children):
                yield cols, row


def label_claim_rows(doctree: Any) -> int:
    """Give every body row of a page's claims tables the id ``claim-<n>`` (n from 1, page order).

    The dashboard links each claim to its row (:func:`claim_rows` numbers them the same way).
    Returns how many were labelled.
    """
    n = 0
    for n, (_, row) in enumerate(_claim_body_rows(doctree), start=1):
        row["ids"].append(CLAIM_ROW_ID.format(n))
    return n


@dataclass
class ClaimCells:
    """Copies of one claims-table row's cells (lists of nodes), as the dashboard shows them."""

    claim: list[Any]
    verdict: list[Any]
    evidence: list[Any] = field(default_factory=list)


def _portable(entry: Any) -> list[Any]:
    """A copy of a table cell's content that can stand on another page.

    Footnote references go (their footnotes stay on the chapter page), and so do ids and targets (the
    chapter page keeps them; a copy would define them twice). Links are made to work from the other
    page when the copy is placed there (:func:`_relocate`).
    """
    out = []
    for child in entry.children:
        if isinstance(child, nodes.raw):  # a stacked table's column label
            continue
        child = child.deepcopy()  # docutils' copy: the node and its children, not its parent document
        for node in list(child.findall(lambda n: isinstance(n, (nodes.footnote_reference, nodes.target)))):
            node.parent.remove(node)
        for node in child.findall(nodes.Element):
            node["ids"] = []
            node["names"] = []
        out.append(child)
    return out


def _blank(entry: Any) -> bool:
    """A cell with nothing in it: empty paragraphs at most (a glued value has no text until it is resolved)."""
    return all(isinstance(n, (nodes.entry, nodes.paragraph)) or (isinstance(n, nodes.Text) and not n.strip())
               for n in entry.findall())


def claim_rows(doctree: Any) -> list[ClaimCells]:
    """The Claim, Verdict and Evidence cells of every claims-table row of a page, in page order."""
    found = []
    for cols, row in _claim_body_rows(doctree):
        cells = row.children

        def cell(key: str) -> list[Any]:
            k = cols[key]
            return _portable(cells[k]) if 0 <= k < len(cells) and not _blank(cells[k]) else []

        found.append(ClaimCells(cell("claim"), cell("verdict"), cell("evidence")))
    return found


# --------------------------------------------------------------------------------------------
# Verdict badges
# --------------------------------------------------------------------------------------------
def _drop_leading_word(entry: Any, kind: str) -> None:
    """Remove the verdict word the badge repeats from the start of a cell (``Partly: at large K``)."""

    def words(node: Any) -> bool:  # text the reader sees, not a stacked table's raw HTML label
        return isinstance(node, nodes.Text) and not isinstance(node.parent, nodes.raw)

    text = next(entry.findall(words), None)
    if text is None or not str(text).lower().lstrip().startswith(kind):
        return
    rest = str(text).lstrip()[len(kind):].lstrip(" :;,—-")
    parent = text.parent
    if rest:
        parent.replace(text, nodes.Text(rest))
        return
    parent.remove(text)
    while parent is not entry and not parent.astext().strip() and isinstance(parent, (nodes.strong, nodes.emphasis)):
        grand = parent.parent
        grand.remove(parent)
        parent = grand
    # the next text starts lower-case after a separator: "Partly** (see below)" -> "(see below)"
    following = next(entry.findall(words), None)
    if following is not None and str(following) != str(following).lstrip(" :;,—-"):
        following.parent.replace(following, nodes.Text(str(following).lstrip(" :;,—-")))


def _shown_text(entry: Any) -> str:
    return " ".join(" ".join(c.astext() for c in entry.children if not isinstance(c, nodes.raw)).split())


def badge_verdict_cells(doctree: Any) -> int:
    """Put the verdict badge in front of every Verdict cell of a page's claims tables.

    Runs on the resolved doctree (glued verdicts are text by then). A cell that says no more than the
    kind (``reproduced``) becomes the badge alone; otherwise the badge precedes the cell's own words.
    Returns how many cells got a badge.
    """
    n = 0
    for cols, rows in claims_tables(doctree):
        for row in rows:
            if len(row.children) <= cols["verdict"]:
                continue
            entry = row.children[cols["verdict"]]
            labels = [c for c in entry.children if isinstance(c, nodes.raw)]  # label_stacked_cells' label
            said = _shown_text(entry)
            if not said or any("sd-badge" in node.get("classes", []) for node in entry.findall(nodes.inline)):
                continue
            kind = normalise_verdict(said)
            colour = VERDICT_BADGE[kind].removeprefix("bdg-")
            badge = nodes.inline("", f"{VERDICT_MARK[kind]} {kind}",
                                 classes=["sd-sphinx-override", "sd-badge", f"sd-bg-{colour}", f"sd-bg-text-{colour}"])
            if said.strip("*_ ").lower() == kind:
                entry.children = []
                for label in labels:
                    entry += label
                entry += nodes.paragraph("", "", badge)
            else:
                _drop_leading_word(entry, kind)
                first = next(entry.findall(nodes.paragraph), None)
                if first is None:
                    first = nodes.paragraph()
                    entry.insert(0, first)
                first.insert(0, nodes.Text(" "))
                first.insert(0, badge)
            n += 1
    return n


# --------------------------------------------------------------------------------------------
# The dashboard
# --------------------------------------------------------------------------------------------
class verdicts_placeholder(nodes.General, nodes.Element):  # noqa: N801 (docutils node names are lower case)
    """Where ``{dpbayes-verdicts}`` puts the chapters' claims (filled by :class:`FillVerdictDashboard`)."""


class verdicts_summary(nodes.General, nodes.Element):  # noqa: N801
    """Where the per-chapter summary table goes (filled by :func:`finish_dashboard`)."""


class verdicts_tally(nodes.General, nodes.Element):  # noqa: N801
    """Where ``{dpbayes-tally}`` puts the count of every verdict (filled by :func:`finish_dashboard`)."""


@dataclass
class ChapterClaims:
    """One chapter page's claims, as collected at ``doctree-read``."""

    docname: str  # e.g. "chapters/01-ubapp/index"
    title: str
    claims: list[ClaimCells]

    @property
    def label(self) -> str:
        return chapter_label(self.docname.rsplit("/", 1)[0], self.title)


def dashboard_chapters(env: Any) -> list[ChapterClaims]:
    """Every chapter page of the build with the claims collected from it, in name order."""
    stored = getattr(env, ENV_KEY, {})
    return [ChapterClaims(doc, env.titles[doc].astext() if doc in env.titles else doc, stored.get(doc, []))
            for doc in sorted(d for d in env.found_docs if CHAPTER_PAGE_RE.match(d))]


def _table(header: list[list[Any]], rows: list[list[list[Any]]], classes: list[str]) -> Any:
    """A docutils table (as MyST builds one from a pipe table): cells are lists of inline nodes or paragraphs."""
    def row_of(cells: list[list[Any]]) -> Any:
        row = nodes.row()
        for content in cells:
            entry = nodes.entry()
            if content and all(isinstance(c, nodes.Body) and not isinstance(c, nodes.Inline) for c in content):
                entry.extend(content)
            else:
                entry += nodes.paragraph("", "", *content)
            row += entry
        return row

    table = nodes.table(classes=["colwidths-auto", *classes])
    group = nodes.tgroup(cols=len(header))
    table += group
    group.extend(nodes.colspec(colwidth=1) for _ in header)
    group += nodes.thead("", row_of(header))
    group += nodes.tbody("", *(row_of(r) for r in rows))
    return table


def _relocate(content: list[Any], source: str, here: str, source_uri: str) -> list[Any]:
    """Copies of a chapter page's cell content whose links work on page ``here``.

    Sphinx resolves a cross-reference from its ``refdoc`` and writes the link relative to that page,
    so a copied reference gets ``refdoc = here``; a ``{doc}`` target written relative to the chapter
    is made absolute first. A link to an anchor of the chapter page itself (MyST resolves those while
    reading, to a ``refid``) becomes a link to that anchor of the chapter page (``source_uri``).
    """
    out = [node.deepcopy() for node in content]
    for part in out:
        for xref in part.findall(addnodes.pending_xref):
            if xref.get("refdomain") == "std" and xref.get("reftype") == "doc" and not xref["reftarget"].startswith(SEP):
                xref["reftarget"] = SEP + docname_join(xref.get("refdoc", source), xref["reftarget"])
            xref["refdoc"] = here
        for ref in part.findall(nodes.reference):
            if "refid" in ref and "refuri" not in ref:
                ref["refuri"] = f"{source_uri}#{ref['refid']}"
                del ref["refid"]
    return out


def _text(text: str) -> list[Any]:
    return [nodes.Text(text)] if text else []


def chapter_section(chapter: ChapterClaims, here: str, page_uri: str) -> Any:
    """One chapter's claims as a folded sphinx-design dropdown for page ``here``; each number links to the
    claim's row of the chapter page (``page_uri``, relative to ``here``)."""
    rows = []
    for k, claim in enumerate(chapter.claims, start=1):
        link = nodes.reference("", str(k), internal=True, refuri=f"{page_uri}#{CLAIM_ROW_ID.format(k)}")
        cells = [_relocate(c, chapter.docname, here, page_uri) for c in (claim.claim, claim.verdict, claim.evidence)]
        rows.append([[link], cells[0] or _text("—"), cells[1], cells[2] or _text("—")])
    table = _table([_text(h) for h in DASHBOARD_HEADER], rows, [DASHBOARD_TABLE_CLASS])
    table[CHAPTER_ATTR] = chapter.docname
    title = nodes.rubric("", f"{chapter.label}: {len(chapter.claims)} claims (",
                         nodes.inline("", "", classes=[COUNTS_CLASS]), nodes.Text(")"))
    dropdown = create_component("dropdown", opened=False, type="dropdown", has_title=True, icon=None,
                                chevron=None, container_classes=["sd-mb-3"], title_classes=[], body_classes=[])
    dropdown += title
    dropdown += table
    return dropdown


class FillVerdictDashboard(SphinxPostTransform):
    """Put each chapter's claims where ``{dpbayes-verdicts}`` left its placeholder."""

    # before myst-nb's ReplacePendingGlueReferences (5): the copied {glued} values are resolved with the page's own
    default_priority = 4

    def run(self, **kwargs: Any) -> None:
        for placeholder in list(self.document.findall(verdicts_placeholder)):
            here = self.env.docname
            chapters = dashboard_chapters(self.env)
            content: list[Any] = [verdicts_summary()]
            if not chapters:
                content = [nodes.paragraph("", "No chapter has been written yet.")]
            for chapter in chapters:
                if chapter.claims:
                    content.append(chapter_section(chapter, here, self.app.builder.get_relative_uri(here, chapter.docname)))
            placeholder.replace_self(content)


# --------------------------------------------------------------------------------------------
# Claims tables grouped by verdict
# --------------------------------------------------------------------------------------------
def _badge(kind: str, text: str) -> Any:
    colour = VERDICT_BADGE[kind].removeprefix("bdg-")
    return nodes.inline("", text, classes=["sd-sphinx-override", "sd-badge", f"sd-bg-{colour}", f"sd-bg-text-{colour}"])


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _table_with(table: Any, rows: list[Any], *, first: bool) -> Any:
    """A table like ``table`` (classes, caption, column specs, header) holding ``rows``.

    Only the ``first`` of the tables a table is split into keeps its ids and its caption; the rows are
    moved, with their ids (``claim-<n>``).
    """
    new = table.copy()
    if not first:
        new["ids"], new["names"] = [], []
    for child in table.children:
        if isinstance(child, nodes.title):
            if first:
                new += child.deepcopy()
        elif isinstance(child, nodes.tgroup):
            group = child.copy()
            for part in child.children:
                if isinstance(part, nodes.tbody):
                    body = part.copy()
                    for row in rows:
                        row.parent = None
                        body += row
                    group += body
                else:
                    copy = part.deepcopy()
                    for node in copy.findall(nodes.Element):
                        node["ids"] = []
                    group += copy
            new += group
        elif first:
            new += child.deepcopy()
    return new


def group_claims_table(table: Any, shown: int = GROUP_SHOWN) -> Any:
    """The rows of a claims table grouped by verdict (:data:`GROUP_ORDER`), each group folded after ``shown`` rows.

    Returns a container: per verdict present, a title (badge and count), a table with the group's first rows
    and, when it has more, a folded sphinx-design dropdown holding a table with the others. The verdict of a
    row is read from its Verdict cell (:func:`normalise_verdict`, glued verdicts resolved); rows keep their
    order within a group, and empty rows are left out.
    """
    (cols, rows), = claims_tables(table)  # findall starts at the table itself
    groups: dict[str, list[Any]] = {kind: [] for kind in GROUP_ORDER}
    for row in rows:
        if all(_blank(entry) for entry in row.children):
            continue
        said = _shown_text(row.children[cols["verdict"]]) if len(row.children) > cols["verdict"] else ""
        groups[normalise_verdict(said)].append(row)
    out = nodes.container(classes=[GROUPS_CLASS])
    first = True
    for kind in GROUP_ORDER:
        found = groups[kind]
        if not found:
            continue
        claims = "claim" if len(found) == 1 else "claims"
        out += nodes.paragraph("", "", _badge(kind, f"{VERDICT_MARK[kind]} {kind}"), nodes.Text(f" {len(found)} {claims}"),
                               classes=[GROUP_TITLE_CLASS])
        out += _table_with(table, found[:shown], first=first)
        first = False
        rest = found[shown:]
        if rest:
            dropdown = create_component("dropdown", opened=False, type="dropdown", has_title=True, icon=None,
                                        chevron=None, container_classes=["sd-mb-3", "dpbayes-verdict-more"],
                                        title_classes=[], body_classes=[])
            dropdown += nodes.rubric("", f"{len(rest)} more {kind} {'claim' if len(rest) == 1 else 'claims'}")
            dropdown += _table_with(table, rest, first=False)
            out += dropdown
    return out


def _top_claims_tables(doctree: Any, dashboard: bool) -> list[Any]:
    """The claims tables to group: a chapter page's own, or the dashboard's (``dashboard``)."""
    found = []
    for table in doctree.findall(nodes.table):
        if any(isinstance(a, nodes.table) for a in _ancestors(table)) or any(
                GROUPS_CLASS in a.get("classes", []) for a in _ancestors(table) if isinstance(a, nodes.Element)):
            continue
        if (DASHBOARD_TABLE_CLASS in table["classes"]) != dashboard:
            continue
        if next(claims_tables(table), None) is not None:
            found.append(table)
    return found


def _ancestors(node: Any) -> Iterator[Any]:
    node = node.parent
    while node is not None:
        yield node
        node = node.parent


class GroupVerdictRows(SphinxPostTransform):
    """Group the claims-table rows of a chapter page, and the dashboard's, by verdict (:func:`group_claims_table`)."""

    # after myst-nb's ReplacePendingGlueReferences (5): a glued verdict is text; before sphinx-design's dropdowns (199)
    default_priority = 6

    def run(self, **kwargs: Any) -> None:
        chapter = bool(CHAPTER_PAGE_RE.match(self.env.docname))
        tables = _top_claims_tables(self.document, dashboard=False) if chapter else []
        tables += _top_claims_tables(self.document, dashboard=True)
        for table in tables:
            table.replace_self(group_claims_table(table))


def tally_line(counts: dict[str, int], dashboard_uri: str = "#verdict-dashboard") -> Any:
    """One paragraph counting every verdict, worst first, linked to the dashboard: "101 claims: ⊘ 12 refuted, ..."."""
    total = sum(counts.values())
    para = nodes.paragraph("", "", classes=[TALLY_CLASS])
    para += nodes.reference("", "", nodes.strong("", _plural(total, "claim") + " checked"), internal=True, refuri=dashboard_uri)
    para += nodes.Text(": ")
    present = [k for k in GROUP_ORDER if counts.get(k)]
    for i, kind in enumerate(present):
        para += _badge(kind, f"{VERDICT_MARK[kind]} {counts[kind]} {kind}")
        if i < len(present) - 1:
            para += nodes.Text(" ")
    return para


def summary_columns(kinds: Iterable[list[str]]) -> list[str]:
    """The verdict columns of the summary table: the five verdicts, then "open" / "other" where some claim has them."""
    present = {kind for found in kinds for kind in found}
    return [*VERDICT_ORDER, *(k for k in VERDICT_OPTIONAL if k in present)]


def _kinds(table: Any) -> list[str]:
    (cols, rows), = claims_tables(table)  # findall starts at the table itself
    return [normalise_verdict(_shown_text(row.children[cols["verdict"]])) for row in rows]


def _chapter_kinds(tables: list[Any], chapters: list[ChapterClaims]) -> dict[str, list[str]]:
    """The verdicts of each chapter's claims, read from the dashboard's tables (one or more per chapter)."""
    kinds: dict[str, list[str]] = {ch.docname: [] for ch in chapters}
    for table in tables:
        doc = table.get(CHAPTER_ATTR)
        if doc in kinds:
            kinds[doc] += _kinds(table)
    return kinds


def finish_dashboard(doctree: Any, env: Any, uri: Callable[[str], str]) -> bool:
    """Count the verdicts into the summary table and the section titles, then badge the verdict cells.

    ``uri(docname)`` is the link from the page being written to a chapter page. Runs on the resolved
    doctree of the page holding the dashboard; returns whether there was one.
    """
    summaries = list(doctree.findall(verdicts_summary))
    tallies = list(doctree.findall(verdicts_tally))
    if not summaries:
        for tally in tallies:
            tally.replace_self(nodes.paragraph("", "The verdicts are counted on the page with the dashboard."))
        return False
    chapters = dashboard_chapters(env)
    tables = [t for t in doctree.findall(nodes.table) if DASHBOARD_TABLE_CLASS in t["classes"]]
    counts_nodes = [n for n in doctree.findall(nodes.inline) if COUNTS_CLASS in n["classes"]]
    kinds = _chapter_kinds(tables, chapters)
    every = [kind for found in kinds.values() for kind in found]
    for tally in tallies:
        tally.replace_self(tally_line({k: every.count(k) for k in GROUP_ORDER}))
    for counts_node, chapter in zip(counts_nodes, [ch for ch in chapters if ch.claims]):
        found = kinds[chapter.docname]
        said = ", ".join(f"{found.count(v)} {VERDICT_MARK[v]}" for v in (*VERDICT_ORDER, *VERDICT_OPTIONAL)
                         if v in found)
        counts_node += nodes.Text(said)
    columns = summary_columns(kinds.values())
    header = [_text("Chapter"), _text("Claims"), *(_text(f"{VERDICT_MARK[v]} {v}") for v in columns)]
    rows = []
    for chapter in chapters:
        link = [nodes.reference("", chapter.label, internal=True, refuri=uri(chapter.docname))]
        found = kinds[chapter.docname]
        if not chapter.claims:
            rows.append([link, _text("no claims table yet"), *([] for _ in columns)])
        else:
            rows.append([link, _text(str(len(found))), *(_text(str(found.count(v))) for v in columns)])
    for summary in summaries:
        summary.replace_self(_table(header, rows, []))
    badge_verdict_cells(doctree)
    return True


# --------------------------------------------------------------------------------------------
# The build environment (parallel reads, incremental builds)
# --------------------------------------------------------------------------------------------
def store_claims(env: Any, docname: str, claims: list[ClaimCells]) -> None:
    if not hasattr(env, ENV_KEY):
        setattr(env, ENV_KEY, {})
    getattr(env, ENV_KEY)[docname] = claims


def purge_claims(app: Any, env: Any, docname: str) -> None:
    getattr(env, ENV_KEY, {}).pop(docname, None)


def merge_claims(app: Any, env: Any, docnames: set[str], other: Any) -> None:
    for doc, claims in getattr(other, ENV_KEY, {}).items():
        if doc in docnames:
            store_claims(env, doc, claims)
