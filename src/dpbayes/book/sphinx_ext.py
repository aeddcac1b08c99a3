"""Sphinx extension for the rendered book: verdict dashboard, parameter table, offline MathJax.

Loaded by Jupyter Book through ``sphinx.extra_extensions`` in ``_config.yml``. It adds:

``{dpbayes-verdicts}``
    The verdict dashboard: every chapter's claims, collected from the chapter pages' doctrees
    (``dpbayes.book.dashboard``), plus the summary table of ``chapters/privacy-audit.ipynb`` when
    that page exists. A chapter without a claims table is listed as "no claims table yet".
``{dpbayes-run-examples}``
    Per chapter, a ``python -m dpbayes run`` command overriding a parameter that the chapter's
    notebooks really declare, and the error printed for an out-of-range value.
``{dpbayes-params}``
    A directive that renders every notebook's declared parameters (read from the cell tagged
    ``parameters`` with :func:`dpbayes.book.params.notebook_parameters`), so the table never goes stale.
Section numbers of chapter pages
    A chapter page (``chapters/<nn>-<slug>/index``) is numbered by the book's table of contents
    ("1"), and its notebooks are its sections ("1.1", "1.2", ...). Sphinx would number the page's
    own headings first and let the notebooks continue after them ("1.7"); the page's headings are
    therefore left unnumbered (``skip_section_number`` on their table-of-contents entries, which
    Sphinx's section numbering honours). ``use_multitoc_numbering`` is off in ``_config.yml``, but
    Jupyter Book 1.x loads sphinx-multitoc-numbering anyway (it tests the option before reading
    the ``html`` section), whose numbering ignores that mark: with the option off, Sphinx's own
    numbering is put back.
Stacked tables
    A Markdown table wrapped in ``:::{table}`` with ``:class: dpbayes-stacked`` gets its column
    header as a label in front of every body cell (``label_stacked_cells``); ``_static/dpbayes.css``
    then shows each row as a block of labelled lines instead of side-by-side columns (Chapter 2's
    verdict table: five columns of long text and formulas).
Author-year bibliography
    The text cites author-year; the pybtex style ``dpbayes-author-year`` (``bibtex_default_style``),
    registered here, is pybtex's "plain" with labels of the same form ("Naldi and D'Acquisto,
    2014", "Dwork et al., 2006", "Lakshminarayanan et al., 2023a" when two labels would be
    equal), and the reference style of the same name (``bibtex_reference_style``) is
    sphinxcontrib-bibtex's ``author_year`` with the year read from that label, so the text cites
    "(Lakshminarayanan et al., 2023a)" exactly as the bibliography page lists the work.
MathJax
    ``mathjax_path`` must be a local path (relative to ``_static``). After the HTML build, the
    MathJax 3 distribution shipped by the PyPI package ``django-static-mathjax`` (Apache-2.0) is
    copied to ``_build/html/_static/mathjax/`` (the big combined bundles that are not used are
    skipped), so the book reads offline.

The directives record the files they read as dependencies, and the landing page is re-read whenever
a page changes, so an incremental build re-renders it when a chapter's claims change. The pure
functions (``markdown_tables``, ``params_markdown``...) are tested in ``tests/test_book.py``, the
dashboard in ``tests/test_dashboard.py``.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

from dpbayes.book import dashboard
from dpbayes.book.dashboard import CHAPTER_PAGE_RE, badge_verdict_cells, label_claim_rows
from dpbayes.book.formatting import escape_cell
from dpbayes.book.pagevalues import rebase_glued, resolve_notebook

AUDIT_NOTEBOOK = "chapters/privacy-audit.ipynb"
MATHJAX_KEEP = ("core.js", "loader.js", "startup.js")  # top-level files kept besides the bundle in use

_SPLIT_RE = re.compile(r"(?<!\\)\|")
_SEP_RE = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_MD_LINK_RE = re.compile(r"(?<!!)\]\(([^)\s]+)\)")
_DOC_ROLE_RE = re.compile(r"\{doc\}`([^`<]*?<)?([^`>]+)(>?)`")
_FOOTNOTE_RE = re.compile(r"\[\^[^\]]+\]")


# --------------------------------------------------------------------------------------------
# Markdown tables
# --------------------------------------------------------------------------------------------
def split_row(line: str) -> list[str]:
    """Cells of one Markdown table row; escaped pipes (``\\|``) stay inside their cell."""
    text = line.strip()
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    return [cell.strip() for cell in _SPLIT_RE.split(text)]


def markdown_tables(text: str) -> list[tuple[int, list[str], list[list[str]]]]:
    """Every pipe table of a Markdown text as ``(line number of header, header, rows)``.

    Tables inside fenced code blocks are ignored; a colon fence (``:::{table}``) is a MyST
    directive whose content is Markdown, so tables inside it count.
    """
    lines = text.splitlines()
    tables = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        marker = re.match(r"^(`{3,}|~{3,})", stripped)
        if fence is None and re.match(r"^:{3,}", stripped):
            i += 1
            continue
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * 3
            elif stripped.startswith(fence):
                fence = None
            i += 1
            continue
        if fence is None and stripped.startswith("|") and i + 1 < len(lines) and _SEP_RE.match(lines[i + 1]):
            header = split_row(lines[i])
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].strip().startswith("|"):
                rows.append(split_row(lines[j]))
                j += 1
            tables.append((i, header, rows))
            i = j
            continue
        i += 1
    return tables


def table_row_problems(text: str) -> list[str]:
    """Rows of the Markdown tables in ``text`` whose cell count differs from their header's.

    A row with more cells than its header holds an unescaped ``|`` (inside code or math too, where
    it must be written ``\\|``): MyST would cut the cell there and silently drop the rest.
    """
    problems = []
    for start, header, rows in markdown_tables(text):
        for k, row in enumerate(rows):
            if len(row) != len(header):
                problems.append(
                    f"line {start + 3 + k}: {len(row)} cells under a {len(header)}-column header "
                    f"(an unescaped | ?): {' | '.join(row)[:120]}"
                )
    return problems


def rebase_links(cell: str, folder: str) -> str:
    """Rewrite relative links of a cell written in ``folder`` so they work from the book root.

    Footnote references are dropped (their definitions live in the chapter page).
    """
    def fix(target: str) -> str:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
            return target
        return str(PurePosixPath(folder) / target)

    out = _MD_LINK_RE.sub(lambda m: f"]({fix(m.group(1))})", cell)
    out = _DOC_ROLE_RE.sub(lambda m: "{doc}`" + (m.group(1) or "") + fix(m.group(2)) + m.group(3) + "`", out)
    # normalise "chapters/01-x/../02-y" to "chapters/02-y"
    out = re.sub(r"[\w.-]+/\.\./", "", out)
    return _FOOTNOTE_RE.sub("", rebase_glued(out, folder))


def _cell(text: str) -> str:
    return escape_cell(text.replace("\n", " ").strip()) or "—"


def table_markdown(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown pipe table (one string per line) whose cells never split, whatever they hold."""
    width = len(header)
    lines = ["| " + " | ".join(escape_cell(h) for h in header) + " |", "|" + "---|" * width]
    for row in rows:
        cells = (list(row) + [""] * width)[:width]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return lines


def skip_heading_numbers(toc: Any) -> int:
    """Mark every heading below the title in a page's table of contents as unnumbered.

    ``toc`` is the page's entry of ``env.tocs`` (bullet list -> list item (title) -> bullet list of
    headings, with the page's own toctree among them). Returns how many entries were marked.
    """
    from docutils import nodes
    from sphinx import addnodes

    marked = 0
    for top in toc.children:  # the page title's list item(s)
        if not isinstance(top, nodes.list_item):
            continue
        for sub in top.children:
            if isinstance(sub, nodes.bullet_list):
                for para in sub.findall(addnodes.compact_paragraph):
                    para["skip_section_number"] = True
                    for ref in para.findall(nodes.reference):
                        ref["secnumber"] = None  # sphinx-external-toc reads it back
                    marked += 1
    return marked


def audit_summary(notebook: Path, folder: str = "chapters") -> str | None:
    """The summary table of the privacy-audit notebook as Markdown, or ``None``.

    Takes the first Markdown table with a column mentioning "verdict" (else the first table) found
    in the notebook's Markdown cells or ``text/markdown`` outputs.
    """
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    texts: list[str] = []
    for cell in nb.get("cells", []):
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else src
        if cell.get("cell_type") == "markdown":
            texts.append(src)
        for output in cell.get("outputs", []) or []:
            md = output.get("data", {}).get("text/markdown")
            if md:
                texts.append("".join(md) if isinstance(md, list) else md)
    found: list[tuple[list[str], list[list[str]]]] = []
    for text in texts:
        for _, header, rows in markdown_tables(text):
            found.append((header, rows))
    if not found:
        return None
    header, rows = next(((h, r) for h, r in found if any("verdict" in x.lower() for x in h)), found[0])
    if len(header) > 5:  # keep the dashboard narrow: the columns that say what was checked and the verdict
        keep = [i for i, h in enumerate(header) if re.search(r"mechanism|used in|proven|exact|verdict", h, re.I)]
        if len(keep) >= 2:
            header = [header[i] for i in keep]
            rows = [[(row + [""] * (max(keep) + 1))[i] for i in keep] for row in rows]
    return "\n".join(table_markdown([rebase_links(h, folder) for h in header],
                                     [[rebase_links(c, folder) for c in row] for row in rows]))


def audit_markdown(audit: str | None, audit_link: str) -> str:
    """The privacy audit's part of the dashboard (MyST Markdown): its summary table, folded, and a link to it."""
    if not audit:
        return f"**Privacy audit** ([full page]({audit_link})): the audit page has no summary table yet.\n"
    tables = markdown_tables(audit)
    rows = len(tables[0][2]) if tables else 0
    return "\n".join([f"**Privacy audit** ([full page]({audit_link})): the privacy claim of every mechanism the book uses.",
                      "", f"::::{{dropdown}} Privacy audit: {rows} mechanisms and settings checked", audit, "::::", ""])


def chapter_folders(root: Path) -> list[Path]:
    """Chapter folders (``chapters/<nn>-<slug>/`` holding an ``index.md``), in name order."""
    base = root / "chapters"
    return sorted(p for p in base.iterdir() if p.is_dir() and (p / "index.md").exists()) if base.exists() else []


_INCLUDE_RE = re.compile(r"^(`{3,}|:{3,})\{include\}\s+(\S+)\s*\n(?:.*\n)*?\1\s*$", re.M)


def expand_includes(text: str, folder: Path, seen: set[Path] | None = None) -> tuple[str, list[Path]]:
    """Inline the files pulled in by ``{include}`` directives (a claims table may live in one)."""
    seen = set() if seen is None else seen
    used: list[Path] = []

    def inline(m: re.Match[str]) -> str:
        path = (folder / m.group(2)).resolve()
        if path in seen or not path.is_file():
            return m.group(0)
        seen.add(path)
        used.append(path)
        inner, more = expand_includes(path.read_text(encoding="utf-8"), path.parent, seen)
        used.extend(more)
        return inner

    return _INCLUDE_RE.sub(inline, text + "\n"), used


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("$", "\\$")


def book_notebooks(root: Path) -> list[Path]:
    base = root / "chapters"
    if not base.exists():
        return []
    return sorted(
        p for p in base.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts and "_build" not in p.parts
    )


def _short_default(value: Any) -> str:
    if isinstance(value, list):
        items = [json.dumps(v) for v in value]
        if len(items) > 4:
            return f"[{items[0]}, {items[1]}, …, {items[-1]}] ({len(items)} values)"
        return "[" + ", ".join(items) + "]"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return repr(value)


def params_markdown(root: Path, linkable: set[str] | None = None) -> str:
    """Every notebook's declared parameters: per notebook, a table (name, type, default, range, meaning).

    ``linkable`` holds the document names (path without suffix) that may be linked to.
    """
    from dpbayes.book.params import notebook_parameters

    out: list[str] = []
    for nb in book_notebooks(root):
        rel = nb.relative_to(root).as_posix()
        docname = rel[: -len(".ipynb")]
        label = f"[`{rel}`]({rel})" if linkable is None or docname in linkable else f"`{rel}`"
        params = notebook_parameters(nb)
        if not params:
            out += [f"**{label}**: no parameters.", ""]
            continue
        # one fold per notebook: the page lists every notebook, a reader opens the one they re-run
        names = ", ".join(p.name for p in params.values())
        out += [f"::::{{dropdown}} {rel}: {names}", "", f"Notebook: {label}", "",
                "| Parameter (type) | Default | Allowed | Meaning |", "|---|---|---|---|"]
        for p in params.values():
            out.append(
                f"| `{p.name}` ({p.type}) | `{_escape(_short_default(p.default))}` | {_escape(p.allowed)} | {_escape(p.meaning)} |"
            )
        out += ["::::", ""]
    if not out:
        return "No notebook has been written yet.\n"
    return "\n".join(out) + "\n"


def _alternative(p: Any) -> str | None:
    """A valid non-default command-line value for parameter ``p`` (or ``None``)."""
    from dpbayes.book.params import ParameterError

    if p.type in ("bool",):
        candidates = [str(not p.default)]
    elif p.choices:
        candidates = [c for c in p.choices if c != p.default]
    elif p.type in ("int", "float"):
        d = p.default
        cands = [d * 2, d / 2, d + 1, d - 1] if p.type == "float" else [d // 2, d * 2, d + 1, d - 1]
        candidates = [repr(float(c)) if p.type == "float" else str(int(c)) for c in cands]
    elif p.type.startswith("list[") and isinstance(p.default, list) and len(p.default) > 1:
        candidates = [",".join(str(v) for v in p.default[: max(1, len(p.default) // 2)])]
    else:
        return None
    for text in candidates:
        try:
            p.convert(text)
        except ParameterError:
            continue
        return text
    return None


def _invalid(p: Any) -> str | None:
    """A command-line value that ``p`` rejects because of its range (or ``None``)."""
    from dpbayes.book.params import ParameterError

    if p.type not in ("int", "float") or p.low is None:
        return None
    text = str(int(p.low) - 1) if p.type == "int" else repr(float(p.low) - 1.0)
    try:
        p.convert(text)
    except ParameterError:
        return text
    return None


# A code line of the book fits the text column at 1300 and 800 px (about 76 monospace characters;
# tests/browser_layout.py checks every page): longer commands are continued with "\\".
CODE_LINE_CHARS = 72


STACKED_TABLE_CLASS = "dpbayes-stacked"


def label_stacked_cells(doctree: Any) -> int:
    """Give every body cell of a table with class ``dpbayes-stacked`` its column's header as a label.

    The label is a ``<span class="dpbayes-cell-label">`` before the cell's content, so that
    ``_static/dpbayes.css`` can show each row as a block of "header: content" lines (a table with
    five columns of long text and formulas reads poorly in a 700 px column). Returns the number of
    labelled cells.
    """
    import html

    from docutils import nodes

    labelled = 0
    for table in doctree.findall(nodes.table):
        if STACKED_TABLE_CLASS not in table["classes"]:
            continue
        def children(node: Any, kind: type) -> list[Any]:  # not findall: a nested table keeps its own
            return [child for child in node.children if isinstance(child, kind)]

        for tgroup in children(table, nodes.tgroup):
            heads = [row for thead in children(tgroup, nodes.thead) for row in children(thead, nodes.row)]
            if not heads:
                continue
            labels = [" ".join(entry.astext().split()) for entry in children(heads[0], nodes.entry)]
            for tbody in children(tgroup, nodes.tbody):
                for row in children(tbody, nodes.row):
                    for label, entry in zip(labels, children(row, nodes.entry)):
                        span = f'<span class="dpbayes-cell-label">{html.escape(label)}</span>'
                        entry.insert(0, nodes.raw("", span, format="html"))
                        labelled += 1
    return labelled


FINDINGS_CLASS = "findings"
CALL_CLASS = "dpbayes-call"  # inline code in a table cell that is a call: wraps between its words only


def findings_heading(doctree: Any) -> int:
    """Make a chapter page's ``:::{admonition} Findings`` (class ``findings``) a section titled "Findings".

    The admonition keeps its box (without its own title) under a real heading, so that "Findings" is
    in the page's contents sidebar and the reader's first screen ends on findings, not on a box title.
    The page's body after the box, up to its next heading (the chapter's figure), goes into the new
    section with it. Runs at ``doctree-read`` before Sphinx collects the page's table of contents.
    Returns the number of sections made.
    """
    from docutils import nodes

    made = 0
    for box in list(doctree.findall(nodes.admonition)):
        parent = box.parent
        title = box.children[0] if box.children and isinstance(box.children[0], nodes.title) else None
        if (FINDINGS_CLASS not in box["classes"] or not isinstance(parent, nodes.section) or title is None
                or title.astext().strip() != "Findings"):
            continue
        start = parent.index(box)
        following = []
        for child in parent.children[start + 1:]:
            if isinstance(child, nodes.section):
                break
            following.append(child)
        ident = "findings" if "findings" not in doctree.ids else f"findings-{made + 1}"
        section = nodes.section("", ids=[ident], names=["findings"])
        section += nodes.title("", "Findings")
        box.remove(title)
        parent.children[start:start + 1 + len(following)] = []
        section += box
        section.extend(following)
        parent.insert(start, section)
        doctree.ids[ident] = section
        made += 1
    return made


def break_code_at_arguments(doctree: Any) -> int:
    """Let a library call in a table cell wrap after its opening parenthesis, never inside a name.

    Inline code with a parenthesis (a call) gets the class ``dpbayes-call``, for which
    ``_static/dpbayes.css`` keeps every word whole (Sphinx writes one
    ``<span class="pre">`` per word, and the spaces after the commas between arguments are the
    breaks); a ``<wbr>`` after each ``(`` that opens arguments lets ``release_count_geometric(`` stand
    on its own line. ``<wbr>`` adds no character: code copied from the page is unchanged. Returns the
    number of break points added.
    """
    from docutils import nodes

    added = 0
    for literal in list(doctree.findall(nodes.literal)):
        if not any(isinstance(a, nodes.entry) for a in _ancestors(literal)):
            continue
        if "(" not in literal.astext():
            continue
        literal["classes"].append(CALL_CLASS)
        for text in [c for c in literal.children if isinstance(c, nodes.Text)]:
            parts = re.split(r"(?<=\()(?=[^)\s])", str(text))
            if len(parts) < 2:
                continue
            new: list[Any] = []
            for k, part in enumerate(parts):
                if k:
                    new.append(nodes.raw("", "<wbr>", format="html"))
                    added += 1
                new.append(nodes.Text(part))
            index = literal.index(text)
            literal[index:index + 1] = new
    return added


def _ancestors(node: Any) -> Any:
    node = node.parent
    while node is not None:
        yield node
        node = node.parent


def shell_command_lines(command: str, width: int = CODE_LINE_CHARS) -> list[str]:
    """``command`` broken into lines of at most ``width`` characters with shell continuations.

    The program with its subcommand (``.venv/bin/python -m dpbayes run``) and an option with its
    values (``-p eps 2.0``) stay on one line; the continuation lines are indented by four spaces and
    every line but the last ends in `` \\``. A single word longer than the line stays whole. The
    shell reads the lines back as the one command.
    """
    head = re.match(r"\S*python\S* -m \S+ \S+|\S+ \S+", command.strip())
    units: list[str] = [head.group(0)] if head else []
    for word in command.strip()[head.end() if head else 0:].split():
        option = word.startswith("-") and not re.match(r"-[\d.]", word)  # -1.0 is a value
        if units and not option and units[-1].startswith("-"):
            units[-1] += " " + word  # a value of the option before it
        else:
            units.append(word)
    lines: list[str] = []
    current = ""
    for unit in units:
        indent = "    " if lines else ""
        candidate = f"{current} {unit}" if current else indent + unit
        if current and len(candidate) + 2 > width:
            lines.append(current + " \\")
            current = "    " + unit
        else:
            current = candidate
    lines.append(current)
    return lines


def shell_comment_lines(text: str, width: int = CODE_LINE_CHARS) -> list[str]:
    """A ``# comment`` wrapped between words into lines of at most ``width`` characters."""
    import textwrap

    return textwrap.wrap(text, width=width, initial_indent="# ", subsequent_indent="# ",
                         break_long_words=False, break_on_hyphens=False)


def run_examples_markdown(root: Path) -> str:
    """Per chapter, a ``python -m dpbayes run`` example with a real parameter, plus one rejected value.

    Built from the declared parameters so the examples always name parameters that exist; the
    error line shown is the message the CLI prints for that value.
    """
    from dpbayes.book.params import ParameterError, notebook_parameters, validate_overrides

    preferred = ("eps", "epsilon", "n", "K", "seed")
    lines: list[str] = []
    bad_example: tuple[str, str, str, str] | None = None
    for folder in chapter_folders(root):
        rel = folder.relative_to(root).as_posix()
        notebooks = [nb for nb in book_notebooks(root) if nb.parent == folder]
        if not notebooks:
            continue
        declared = {nb: notebook_parameters(nb) for nb in notebooks}
        options = []
        for nb, params in declared.items():
            for p in params.values():
                value = _alternative(p)
                if value is not None:
                    rank = preferred.index(p.name) if p.name in preferred else len(preferred)
                    options.append((rank, nb, p, value))
        if not options:
            lines += shell_comment_lines(f"{rel}: its notebooks declare no parameter yet")
            lines += shell_command_lines(f".venv/bin/python -m dpbayes run {rel}")
            lines.append("")
            continue
        options.sort(key=lambda o: (o[0], o[1].name))
        _, nb, p, value = options[0]
        shared = all(p.name in params for params in declared.values())
        target = rel if shared else nb.relative_to(root).as_posix()
        lines += shell_comment_lines(f"{rel}: {p.name} = {value} instead of {p.default!r} ({p.meaning})")
        lines += shell_command_lines(f".venv/bin/python -m dpbayes run {target} -p {p.name} {value}")
        lines.append("")
        if bad_example is None:
            bad = _invalid(p)
            if bad is not None:
                try:
                    validate_overrides(declared[nb], {p.name: bad})
                except ParameterError as exc:
                    bad_example = (nb.relative_to(root).as_posix(), p.name, bad, str(exc))
    if not lines:
        return "No chapter has notebooks yet.\n"
    out = ["```bash", *lines[:-1], "```", ""]
    if bad_example is not None:
        nb_rel, name, bad, message = bad_example
        out += [
            "A value outside the allowed range is refused before any kernel starts (exit code 2):",
            "",
            "```bash",
            *shell_command_lines(f".venv/bin/python -m dpbayes run {nb_rel} -p {name} {bad}"),
            f"# error: {message}",
            "```",
            "",
        ]
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
# Sphinx glue
# --------------------------------------------------------------------------------------------
def _mathjax_source() -> Path:
    try:
        import mathjax  # the package django-static-mathjax installs
    except ImportError as exc:  # pragma: no cover - exercised only on a broken setup
        raise RuntimeError(
            "offline MathJax needs the PyPI package django-static-mathjax (run `make setup`)"
        ) from exc
    base = Path(mathjax.__file__).resolve().parent / "static" / "mathjax" / "es5"
    if not (base / "tex-svg.js").exists():  # pragma: no cover
        raise RuntimeError(f"no MathJax 3 distribution under {base}")
    return base


def copy_mathjax(target: Path, bundle: str = "tex-svg.js") -> None:
    """Copy the MathJax 3 es5 distribution to ``target``, without the combined bundles not in use.

    The components (input/output jax, TeX extensions loaded on demand, accessibility, menu) are
    all kept, so a TeX package that MathJax autoloads is there offline too.
    """
    source = _mathjax_source()
    if not (source / bundle).exists():
        raise RuntimeError(f"mathjax_path names {bundle}, which MathJax {source} does not ship")
    if target.exists():
        shutil.rmtree(target)

    def ignore(directory: str, names: list[str]) -> list[str]:
        if Path(directory) != source:
            return []
        return [n for n in names if n.endswith(".js") and n != bundle and n not in MATHJAX_KEEP]

    shutil.copytree(source, target, ignore=ignore)
    licence = source.parent / "LICENSE"
    if licence.exists():
        shutil.copyfile(licence, target / "LICENSE")


# --------------------------------------------------------------------------------------------
# Author-year labels for the bibliography
# --------------------------------------------------------------------------------------------
def author_year_label(entry: Any) -> str:
    """``"Dwork and Roth, 2014"`` / ``"Dwork et al., 2006"`` for a pybtex entry (no suffix)."""
    from pybtex.richtext import Text

    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [Text.from_latex(" ".join(p.prelast_names + p.last_names)).render_as("text") for p in people]
    if not names:
        who = "Anonymous"
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


def author_year_labels(entries: list[Any]) -> list[str]:
    """Labels of ``entries`` (in order); equal labels get "a", "b", ... after the year."""
    labels = [author_year_label(e) for e in entries]
    seen: dict[str, int] = {}
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
    count: dict[str, int] = {}
    out = []
    for label in labels:
        if seen[label] > 1:
            count[label] = count.get(label, 0) + 1
            label = label + "abcdefghijklmnopqrstuvwxyz"[count[label] - 1]
        out.append(label)
    return out


def register_author_year_style() -> None:
    """Register the pybtex label style and formatting style ``dpbayes-author-year``."""
    from pybtex.plugin import register_plugin
    from pybtex.style.formatting.plain import Style as PlainStyle
    from pybtex.style.labels import BaseLabelStyle

    class AuthorYearLabelStyle(BaseLabelStyle):
        def format_labels(self, sorted_entries: Any) -> Any:
            return iter(author_year_labels(list(sorted_entries)))

    class AuthorYearStyle(PlainStyle):
        default_label_style = "dpbayes-author-year"

    register_plugin("pybtex.style.labels", "dpbayes-author-year", AuthorYearLabelStyle, force=True)
    register_plugin("pybtex.style.formatting", "dpbayes-author-year", AuthorYearStyle, force=True)


def year_of_label(label: str, year: str) -> str:
    """The year as the bibliography label shows it: ``"2023a"`` for ``"Lakshminarayanan et al., 2023a"``.

    The label style (:func:`author_year_labels`) adds "a", "b", ... after the year of equal labels;
    the in-text citation must show the same suffix. A label that does not end in the year (plus
    letters) gives ``year`` unchanged.
    """
    m = re.search(r"(?:^|\s)(\S+)$", label)
    if m and re.fullmatch(re.escape(year) + r"[a-z]*", m.group(1)):
        return m.group(1)
    return year


def register_author_year_reference_style() -> None:
    """Register the sphinxcontrib-bibtex reference style ``dpbayes-author-year``.

    sphinxcontrib-bibtex's ``author_year`` style prints the entry's ``year`` field, so two works of
    the same authors and year are both cited "(Lakshminarayanan et al., 2023)" while the
    bibliography lists them as "2023a" and "2023b". This style is ``author_year`` with the year
    taken from the formatted entry's label (:func:`year_of_label`): in-text citations and the
    bibliography agree. Selected by ``bibtex_reference_style: dpbayes-author-year`` in ``_config.yml``.
    """
    import dataclasses

    from pybtex.richtext import Text
    from pybtex.style.template import node
    from sphinxcontrib.bibtex.plugin import register_plugin
    from sphinxcontrib.bibtex.style.referencing import GroupReferenceStyle
    from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle
    from sphinxcontrib.bibtex.style.referencing.basic_author_year import (
        BasicAuthorYearParentheticalReferenceStyle,
        BasicAuthorYearTextualReferenceStyle,
    )
    from sphinxcontrib.bibtex.style.referencing.extra_year import ExtraYearReferenceStyle
    from sphinxcontrib.bibtex.style.template import join, join2, post_text, pre_text, reference
    from sphinxcontrib.bibtex.style.template import year as plain_year

    @node
    def labelled_year(children: Any, data: dict[str, Any]) -> Any:
        assert not children
        text = str(plain_year.format_data(data))
        entry = data.get("formatted_entry")
        return Text(year_of_label(str(getattr(entry, "label", "") or ""), text))

    @dataclasses.dataclass
    class Parenthetical(BasicAuthorYearParentheticalReferenceStyle):
        def inner(self, role_name: str) -> Any:
            return join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[
                pre_text,
                reference[join(sep=self.author_year_sep)[
                    self.person.author_or_editor_or_title(full="s" in role_name), labelled_year]],
                post_text,
            ]

    @dataclasses.dataclass
    class Textual(BasicAuthorYearTextualReferenceStyle):
        def inner(self, role_name: str) -> Any:
            return join(sep=self.text_reference_sep)[
                self.person.author_or_editor_or_title(full="s" in role_name),
                join[self.bracket.left,
                     join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[pre_text, reference[labelled_year], post_text],
                     self.bracket.right],
            ]

    @dataclasses.dataclass
    class YearOnly(ExtraYearReferenceStyle):
        def inner(self, role_name: str) -> Any:
            return reference[labelled_year]

    swap = {BasicAuthorYearParentheticalReferenceStyle: Parenthetical,
            BasicAuthorYearTextualReferenceStyle: Textual, ExtraYearReferenceStyle: YearOnly}

    @dataclasses.dataclass
    class DpbayesAuthorYearReferenceStyle(AuthorYearReferenceStyle):
        def __post_init__(self) -> None:
            super().__post_init__()
            self.styles = [swap[type(style)](**{f.name: getattr(style, f.name) for f in dataclasses.fields(style)})
                           if type(style) in swap else style for style in self.styles]
            self.role_style = {}
            GroupReferenceStyle.__post_init__(self)

    register_plugin("sphinxcontrib.bibtex.style.referencing", "dpbayes-author-year",
                    DpbayesAuthorYearReferenceStyle, force=True)


def sphinx_section_numbering() -> Any:
    """Sphinx's own ``TocTreeCollector.assign_section_numbers``, even after an extension replaced it.

    sphinx-multitoc-numbering overwrites the class attribute when it is loaded; the original
    function is taken from a fresh, private copy of Sphinx's module. Setting
    ``use_multitoc_numbering: false`` does not keep it out: sphinx-external-toc 1.1 (its PR #112)
    calls ``app.setup_extension("sphinx_multitoc_numbering")`` unconditionally.
    """
    import importlib.util

    spec = importlib.util.find_spec("sphinx.environment.collectors.toctree")
    assert spec is not None and spec.loader is not None  # Sphinx is installed (narrows for mypy)
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    return fresh.TocTreeCollector.assign_section_numbers


def citation_metadata(root: Path) -> dict[str, Any]:
    """The book's ``CITATION.cff`` (title, authors, version, licence), checked for what the pages use."""
    import yaml  # type: ignore[import-untyped]  # (no stubs pinned; safe_load returns plain data)

    path = Path(root) / "CITATION.cff"
    meta = yaml.safe_load(path.read_text(encoding="utf-8"))
    missing = [k for k in ("cff-version", "title", "authors", "version") if not meta.get(k)]
    if missing:
        raise ValueError(f"{path}: missing {', '.join(missing)}")
    return meta


def citation_authors(meta: dict[str, Any]) -> list[str]:
    """Author names as a citation prints them (``given family`` or the entity's ``name``)."""
    names = []
    for a in meta["authors"]:
        person = " ".join(p for p in (a.get("given-names"), a.get("name-particle"), a.get("family-names")) if p)
        names.append(person or a.get("name", ""))
    return [n for n in names if n]


def build_commit(root: Path) -> tuple[str, str] | None:
    """``(short hash, ISO date)`` of the commit the book is built from, or ``None`` outside a git checkout."""
    import subprocess

    try:
        out = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%h %cs"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    return (out[0], out[1]) if len(out) == 2 else None


def citation_markdown(meta: dict[str, Any], commit: tuple[str, str] | None) -> str:
    """The "How to cite" block: a sentence to copy and a BibTeX entry, from ``CITATION.cff``."""
    import textwrap

    authors = citation_authors(meta)
    year = commit[1][:4] if commit else None
    built = f", commit {commit[0]} ({commit[1]})" if commit else ""
    sentence = f"{', '.join(authors)}{f' ({year})' if year else ''}. *{meta['title']}*. Version {meta['version']}{built}."
    fields = [("author", " and ".join("{" + a + "}" if len(a.split()) > 2 else a for a in authors)),
              ("title", "{" + meta["title"] + "}"), ("version", str(meta["version"]))]
    if year:
        fields.append(("year", year))
    if commit:
        fields.append(("note", f"commit {commit[0]}"))
    if meta.get("repository-code"):
        fields.append(("url", meta["repository-code"]))
    bib = ["@software{dpbayes,"]
    for k, v in fields:  # long values continue on indented lines (the code column is about 72 characters)
        lead = f"  {k} = "
        lines = textwrap.wrap(f"{{{v}}},", width=72 - len(lead), break_long_words=False, break_on_hyphens=False)
        bib += [lead + lines[0]] + [" " * len(lead) + rest for rest in lines[1:]]
    bib.append("}")
    return "\n".join([sentence, "", "```bibtex", *bib, "```", ""])


def footer_html(meta: dict[str, Any], commit: tuple[str, str] | None, cite_href: str) -> str:
    """The footer line every page shows below the authors: version, the commit built, "How to cite"."""
    from html import escape

    parts = [f"dpbayes {escape(str(meta['version']))}"]
    if meta.get("license"):
        parts.append(f"licence {escape(str(meta['license']))}")
    if commit:
        parts.append(f"built from commit {escape(commit[0])} ({escape(commit[1])})")
    if meta.get("repository-code"):
        parts.append(f'<a href="{escape(meta["repository-code"])}">source repository</a>')
    parts.append(f'<a href="{escape(cite_href)}">How to cite</a>')
    return "<p>" + " · ".join(parts) + "</p>"


def setup(app: Any) -> dict[str, Any]:
    from docutils.parsers.rst import Directive
    from docutils.statemachine import StringList
    from sphinx.environment.collectors.toctree import TocTreeCollector

    register_author_year_style()
    register_author_year_reference_style()

    def _root(directive: Directive) -> Path:
        return Path(directive.state.document.settings.env.srcdir)

    class _MarkdownDirective(Directive):
        has_content = False

        def markdown(self, root: Path, env: Any) -> str:  # pragma: no cover - overridden
            raise NotImplementedError

        def run(self) -> list[Any]:
            from docutils import nodes

            env = self.state.document.settings.env
            text = self.markdown(_root(self), env)
            container = nodes.container(classes=[f"dpbayes-{self.name}"])
            self.state.nested_parse(StringList(text.splitlines(), source="dpbayes.book.sphinx_ext"), self.content_offset, container)
            return [container]

    class VerdictsDirective(_MarkdownDirective):
        """The chapters' claims (a placeholder, filled once every page is read) and the audit's summary."""

        def markdown(self, root: Path, env: Any) -> str:
            audit_path = root / AUDIT_NOTEBOOK
            if audit_path.exists() and AUDIT_NOTEBOOK[: -len(".ipynb")] in env.found_docs:
                env.note_dependency(str(audit_path))
                return audit_markdown(audit_summary(audit_path), AUDIT_NOTEBOOK)
            return ""

        def run(self) -> list[Any]:
            (container,) = super().run()
            container.insert(0, dashboard.verdicts_placeholder())
            return [container]

    class TallyDirective(Directive):
        """One line counting every verdict of the book's claims tables (filled where the dashboard is built)."""

        has_content = False

        def run(self) -> list[Any]:
            return [dashboard.verdicts_tally()]

    class CitationDirective(_MarkdownDirective):
        def markdown(self, root: Path, env: Any) -> str:
            env.note_dependency(str(root / "CITATION.cff"))
            return citation_markdown(citation_metadata(root), build_commit(root))

    class ParamsDirective(_MarkdownDirective):
        def markdown(self, root: Path, env: Any) -> str:
            for nb in book_notebooks(root):
                env.note_dependency(str(nb))
            return params_markdown(root, set(env.found_docs))

    class RunExamplesDirective(_MarkdownDirective):
        def markdown(self, root: Path, env: Any) -> str:
            for nb in book_notebooks(root):
                env.note_dependency(str(nb))
            return run_examples_markdown(root)

    def glued_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
                   options: Any = None, content: Any = None) -> tuple[list[Any], list[Any]]:
        """``{glued}`ref::key```: myst-nb's cross-document ``{glue:text}`` for a notebook named
        by the start of its file name (``dpbayes.book.pagevalues``)."""
        from myst_nb.ext.glue.utils import PendingGlueReferenceError, create_pending_glue_ref

        document = inliner.document
        env = document.settings.env
        root = Path(env.srcdir)
        ref, sep, key = text.partition("::")
        try:
            if not sep or not ref.strip() or not key.strip():
                raise ValueError(f"{{glued}} needs `notebook::key`, got {text!r}")
            notebook = resolve_notebook(ref.strip(), Path(env.doc2path(env.docname)).parent, root)
            env.note_dependency(str(notebook))
            pending = create_pending_glue_ref(document, document["source"], lineno,
                                              "/" + notebook.relative_to(root).as_posix(), key.strip(),
                                              inline=True, gtype="text", fmt_spec="s")
        except (ValueError, PendingGlueReferenceError) as exc:
            msg = inliner.reporter.warning(str(exc), line=lineno)
            problem = inliner.problematic(rawtext, rawtext, msg)
            return [problem], [msg]
        return [pending], []

    def _citation(app: Any, config: Any) -> None:
        # the authors every page's footer names come from CITATION.cff, the one place that lists them
        root = Path(app.srcdir)
        if (root / "CITATION.cff").exists():
            meta = citation_metadata(root)
            config.author = ", ".join(citation_authors(meta))
            app._dpbayes_citation = (meta, build_commit(root))
            if meta.get("repository-code"):  # the theme's repository button, from the same one place
                options = dict(config.html_theme_options or {})
                options.update(repository_url=meta["repository-code"], use_repository_button=True)
                config.html_theme_options = options
        else:
            app._dpbayes_citation = ({"version": "?", "authors": []}, None)

    def _check_mathjax_path(app: Any, config: Any) -> None:
        path = str(config.mathjax_path or "")
        if re.match(r"^(https?:)?//", path):
            raise RuntimeError(f"mathjax_path must be a local file under _static for offline reading, got {path}")

    def _page_context(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
        # Launch buttons and thebe are off, yet sphinx-thebe still injects its loader (twice: a JS
        # error "THEBE_JS_URL has already been declared") naming a CDN URL: drop it from every page.
        def is_thebe(asset: Any) -> bool:
            body = str(getattr(asset, "attributes", {}).get("body", ""))
            return "thebe" in str(getattr(asset, "filename", asset) or "").lower() or "THEBE_JS_URL" in body

        for key in ("script_files", "css_files"):
            if key in context:
                context[key] = [asset for asset in context[key] if not is_thebe(asset)]
        # pydata-sphinx-theme logs a console error when the colour mode is left empty
        if not context.get("default_mode"):
            context["default_mode"] = "auto"
        # version, commit and "How to cite" under the authors (CITATION.cff); the link is relative to the page
        meta, commit = app._dpbayes_citation
        cite = "how-to-cite"
        if cite in app.env.found_docs:
            context["theme_extra_footer"] = footer_html(meta, commit, context["pathto"](cite))

    def _copy_mathjax(app: Any, exception: Exception | None) -> None:
        if exception is not None or app.builder.format != "html":
            return
        path = PurePosixPath(str(app.config.mathjax_path))
        if len(path.parts) != 2:
            raise RuntimeError(f"mathjax_path must look like 'mathjax/tex-svg.js', got {path}")
        copy_mathjax(Path(app.outdir) / "_static" / path.parts[0], path.parts[1])

    def _unnumber_chapter_headings(app: Any, doctree: Any) -> None:
        # runs after Sphinx's TocTreeCollector (priority 500) has built env.tocs[docname]
        env = app.env
        if CHAPTER_PAGE_RE.match(env.docname) and env.docname in env.tocs:
            skip_heading_numbers(env.tocs[env.docname])

    def _findings_heading(app: Any, doctree: Any) -> None:
        if CHAPTER_PAGE_RE.match(app.env.docname):
            findings_heading(doctree)

    def _label_stacked_tables(app: Any, doctree: Any) -> None:
        if CHAPTER_PAGE_RE.match(app.env.docname):
            # the dashboard's copies first: a stacked table's labels are the chapter page's layout
            dashboard.store_claims(app.env, app.env.docname, dashboard.claim_rows(doctree))
            label_claim_rows(doctree)
        label_stacked_cells(doctree)

    def _badge_verdicts(app: Any, doctree: Any, docname: str) -> None:
        if app.builder.format == "html":
            break_code_at_arguments(doctree)
        if CHAPTER_PAGE_RE.match(docname):
            badge_verdict_cells(doctree)
        else:
            dashboard.finish_dashboard(doctree, app.env, lambda doc: app.builder.get_relative_uri(docname, doc))

    def _sphinx_section_numbers(app: Any) -> None:
        # (a plain Sphinx build without Jupyter Book has neither the option nor the extension)
        if "use_multitoc_numbering" in app.config and not app.config.use_multitoc_numbering:
            # restores Sphinx's own method, which sphinx-multitoc-numbering replaced on the class
            TocTreeCollector.assign_section_numbers = sphinx_section_numbering()  # type: ignore[method-assign]

    def _mark_outdated(app: Any, env: Any, added: set[str], changed: set[str], removed: set[str]) -> list[str]:
        # pages that hold a directive are rebuilt whenever any chapter page or notebook changes
        return [doc for doc in ("intro", "rerun") if doc in env.found_docs and (added or changed or removed)]

    app.add_role("glued", glued_role)
    app.add_directive("dpbayes-verdicts", VerdictsDirective)
    app.add_directive("dpbayes-tally", TallyDirective)
    app.add_directive("dpbayes-params", ParamsDirective)
    app.add_directive("dpbayes-run-examples", RunExamplesDirective)
    app.connect("config-inited", _check_mathjax_path)
    app.connect("config-inited", _citation)
    app.add_directive("dpbayes-citation", CitationDirective)
    app.connect("html-page-context", _page_context, priority=900)
    app.connect("env-get-outdated", _mark_outdated)
    app.connect("doctree-read", _findings_heading, priority=400)  # before Sphinx's TocTreeCollector (500)
    app.connect("doctree-read", _unnumber_chapter_headings, priority=800)
    app.connect("doctree-read", _label_stacked_tables)
    app.connect("doctree-resolved", _badge_verdicts)
    app.add_post_transform(dashboard.FillVerdictDashboard)
    app.add_post_transform(dashboard.GroupVerdictRows)
    app.connect("env-purge-doc", dashboard.purge_claims)
    app.connect("env-merge-info", dashboard.merge_claims)
    app.connect("builder-inited", _sphinx_section_numbers, priority=900)
    app.connect("build-finished", _copy_mathjax)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
