"""dpbayes.book.pagesize: what a reader meets on a page before opening a fold."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from dpbayes.book import pagesize
from dpbayes.book.pagesize import PageSize, count_numbers, count_words, measure_page, measure_text, unfolded_markdown


@pytest.mark.parametrize(("text", "numbers"), [
    ("0.25 and 1,234 and 1e-3 and 12 %", 4),
    ("K = 100, eps = 0.001", 2),
    ("no digits here", 0),
    ("v1.2 (a name, not a number) and 3.5", 1),
])
def test_count_numbers(text: str, numbers: int) -> None:
    assert count_numbers(text) == numbers


def test_count_words_skips_exponents() -> None:
    assert count_words("MSE at 1e-3 is low") == 4


def test_folded_blocks_and_markup_are_not_counted() -> None:
    text = """# Title

Visible words 1.5

:::{dropdown} The evidence
hidden 2.5 3.5
```{glue} key
:doc: 01a.ipynb
```
:::

(label)=
[a link](https://example.org/x-1.2) after
"""
    body = unfolded_markdown(text)
    assert "hidden" not in body and "example" not in body and "label" not in body
    assert "The evidence" not in body  # the dropdown's title line goes with it
    size = measure_text("p.md", text)
    assert size.numbers == 1 and size.words == count_words("Title Visible words a link after")


def test_cells_of_markdown_and_html_tables() -> None:
    text = "| a | b |\n|---|---|\n| 1, 2, 3 | x |\n\n<table><tr><td>4 5 6 7</td></tr></table>\n"
    size = measure_text("p.md", text)
    assert size.max_numbers_per_cell == 4 and size.numbers == 7


def test_problems_name_each_target() -> None:
    size = PageSize("p.md", 3000, 200, 9)
    problems = size.problems()
    assert len(problems) == 3 and "3000 unfolded words" in problems[0] and "9 numbers" in problems[2]
    assert PageSize("p.md", 10, 10, 1).problems() == []


def test_measure_page_resolves_glued_values_and_includes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "chapters" / "01-x"
    folder.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    out = nbformat.v4.new_output("display_data", data={"text/plain": "'0.125'"},
                                 metadata={"scrapbook": {"name": "k", "mime_prefix": ""}})
    nb.cells = [nbformat.v4.new_code_cell('glue_number("k", 0.125)', outputs=[out])]
    nbformat.write(nb, folder / "01a-one.ipynb")
    (folder / "_part.md").write_text("included 7 8\n", encoding="utf-8")
    page = folder / "index.md"
    page.write_text("value {glued}`01a::k`\n\n```{include} _part.md\n```\n", encoding="utf-8")
    size = measure_page(page, tmp_path)
    assert (size.page, size.words, size.numbers) == ("chapters/01-x/index.md", 2, 3)
    assert pagesize.main([str(page)]) == 0
    assert "chapters/01-x/index.md" in capsys.readouterr().out


def test_unused_glued_keys(tmp_path: Path) -> None:
    folder = tmp_path / "chapters" / "01-x"
    folder.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    outs = [nbformat.v4.new_output("display_data", data={"text/plain": f"'{k}'"},
                                   metadata={"scrapbook": {"name": k, "mime_prefix": ""}})
            for k in ("shown", "table", "own", "lost", "source.x")]
    nb.cells = [nbformat.v4.new_markdown_cell("In this notebook: {glue:text}`own`."),
                nbformat.v4.new_code_cell("glue(...)", outputs=outs)]
    nbformat.write(nb, folder / "01a-one.ipynb")
    (folder / "index.md").write_text("{glued}`01a::shown`\n\n```{glue} table\n:doc: 01a-one.ipynb\n```\n", encoding="utf-8")
    assert pagesize.unused_glued_keys(tmp_path) == {"chapters/01-x/01a-one.ipynb": ["lost"]}
