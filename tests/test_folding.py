"""The code-folding rule (CONTRIBUTING.md "Folding code cells", ``dpbayes.book.folding``).

Every notebook under ``chapters/`` follows the rule: plotting, imports and set-up, glue-only
"numbers for the page", table-formatting and long cells, and the parameters cell, carry
``hide-input``. The command ``python -m dpbayes.book.folding`` checks and (with ``--apply``) tags.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dpbayes.book import folding
from dpbayes.book.folding import (
    REASON_GLUE,
    REASON_LONG,
    REASON_PARAMETERS,
    REASON_PLOTTING,
    REASON_SETUP,
    REASON_TABLE,
    cell_needs_folding,
    folding_problems,
    library_names,
    plotting_functions,
    unfolded_code_lines,
)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "chapters").rglob("*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts)


@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_notebook_follows_the_folding_rule(rel: str) -> None:
    problems = folding_problems(json.loads((ROOT / rel).read_text(encoding="utf-8")))
    assert not problems, f"{rel} (fix with `python -m dpbayes.book.folding --apply {rel}`):\n" + "\n".join(problems)


# ------------------------------------------------------------------------------------------------
# the classifier on small cells
# ------------------------------------------------------------------------------------------------
PARAMETERS = 'eps: float = 1.0  # privacy parameter; range (0, inf)\nseed: int = 1  # seed; range [0, inf)'
SETUP = "import numpy as np\nfrom dpbayes import counting as ct\n\nuse_style()\nrng = np.random.default_rng(seed)\n"
PLOT = "fig, ax = plt.subplots()\nax.plot(x, y)\nplt.show()\n"
COLUMN_PLOT = "fig, axes = column_subplots(1, 2)\naxes[0].plot(x, y)\nsave_figure(fig, 'ch', 'id', data={})\n"
GLUE = "glue_number('ratio', a / b, 4)\nfor k, v in d.items():\n    glue_text(k, v)\n"
GLUE_WITH_IMPORT = "from dpbayes.book.pagevalues import glue_number\n\nglue_number('n', n, style='int')\n"
TABLE = "rows = [{'eps': e, 'risk': r} for e, r in zip(eps_grid, risk)]\ndisplay(Markdown(pd.DataFrame(rows).to_markdown()))\n"
COMPUTE_TABLE = "rows = [{'eps': e, 'risk': ct.mean_abs_error('mean', n, p, e)} for e in eps_grid]\ndisplay(Markdown(markdown_table(rows)))\n"
COMPUTE = "risk = ct.mean_abs_error('mean', n, p, eps)\nprint(f'{risk:.4g}')\n"
COMPUTE_AND_GLUE = "risk = ct.mean_abs_error('mean', n, p, eps)\nglue_number('risk', risk, 4)\nprint(f'{risk:.4g}')\n"
LIB = frozenset({"ct"})


@pytest.mark.parametrize(("source", "tags", "reason"), [
    (PARAMETERS, ["parameters"], REASON_PARAMETERS),
    (SETUP, [], REASON_SETUP),
    (PLOT, [], REASON_PLOTTING),
    (COLUMN_PLOT, [], REASON_PLOTTING),
    ("error_figure(n, x, y)\n", [], REASON_PLOTTING),  # a drawing function of the notebook
    (GLUE, [], REASON_GLUE),
    (GLUE_WITH_IMPORT, [], REASON_GLUE),
    (TABLE, [], REASON_TABLE),
    (COMPUTE_TABLE, [], None),  # computes with the library: stays visible
    (COMPUTE, [], None),
    (COMPUTE_AND_GLUE, [], None),  # shows its number: stays visible
    ("x = ct.f(1)\n" * (folding.LONG_CELL_LINES + 1), [], REASON_LONG),
    ("x = ct.f(1)\n" * folding.LONG_CELL_LINES, [], None),
    ("", [], None),
    ("%timeit f()\n", [], None),  # IPython magic: judged by length only
    ("def show(df):\n    display(Markdown(df.to_markdown()))\n\nimport numpy as np\n", [], None),
])
def test_cell_needs_folding(source: str, tags: list[str], reason: str | None) -> None:
    assert cell_needs_folding(source, tags, LIB, {"error_figure"}) == reason


def test_library_names_and_plotting_functions() -> None:
    sources = ["from dpbayes import counting as ct, book\nfrom dpbayes.release.statistic import MAX_N\n"
               "from dpbayes.book.figures import save_figure\nimport dpbayes.ubapp.lbapp\nimport numpy as np\n",
               "def error_figure(n):\n    fig, ax = plt.subplots()\n\ndef helper(x):\n    return x\n",
               "%magic"]
    assert library_names(sources) == {"ct", "MAX_N", "dpbayes"}
    assert plotting_functions(sources) == {"error_figure"}


def _notebook(cells: list[tuple[str, list[str]]]) -> dict:
    return {"cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {"tags": tags} if tags else {},
                       "outputs": [], "source": src} for i, (src, tags) in enumerate(cells)],
            "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}


def test_problems_name_unfolded_cells_and_an_unfolded_parameters_cell() -> None:
    nb = _notebook([(PARAMETERS, ["parameters"]), (SETUP, []), (PLOT, ["hide-input"]), (COMPUTE, [])])
    problems = folding_problems(nb)
    assert len(problems) == 2, problems
    assert problems[0].startswith("cell 0 (parameters) is not folded: eps")
    assert problems[1].startswith("cell 1 (imports and set-up) is not folded: import numpy")
    assert unfolded_code_lines(nb) == 2 + 5 + 2  # parameters, the setup cell (with its blank line), the computation


# ------------------------------------------------------------------------------------------------
# the command
# ------------------------------------------------------------------------------------------------
def test_command_checks_then_applies_tags_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nb.ipynb"
    nb = _notebook([(PARAMETERS, ["parameters"]), (SETUP, []), (COMPUTE, []), (PLOT, [])])
    nb["cells"][2]["outputs"] = [{"name": "stdout", "output_type": "stream", "text": "0.5\n"}]
    original = folding.dump_notebook(nb)
    path.write_text(original, encoding="utf-8")

    assert folding.main([str(path)]) == 1  # check only: refuses to write
    out = capsys.readouterr().out
    assert "cell 0 (parameters)" in out and "cell 1 (imports and set-up)" in out and "cell 3 (plotting)" in out and "--apply" in out
    assert path.read_text(encoding="utf-8") == original

    assert folding.main(["--apply", str(path)]) == 0
    after = json.loads(path.read_text(encoding="utf-8"))
    assert [c.get("metadata", {}).get("tags") for c in after["cells"]] == [
        ["parameters", "hide-input"], ["hide-input"], None, ["hide-input"]]
    for old, new in zip(nb["cells"], after["cells"]):  # nothing but the tags changed
        old, new = dict(old), dict(new)
        old.pop("metadata"), new.pop("metadata")
        assert old == new
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write left no temporary file
    text = path.read_text(encoding="utf-8")
    assert folding.main(["--apply", str(path)]) == 0  # idempotent
    assert path.read_text(encoding="utf-8") == text
    assert folding.main([str(path)]) == 0


def test_command_rejects_a_file_that_is_not_a_notebook(tmp_path: Path) -> None:
    (tmp_path / "x.md").write_text("# x\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        folding.main([str(tmp_path / "x.md")])
    assert exc.value.code == 2


def test_apply_on_a_real_notebook_changes_metadata_only(tmp_path: Path) -> None:
    """On a copy of every chapter notebook: --apply leaves sources and outputs byte-equal."""
    for rel in NOTEBOOKS:
        copy = tmp_path / Path(rel).name
        shutil.copyfile(ROOT / rel, copy)
        folding.main(["--apply", str(copy)])
        before = json.loads((ROOT / rel).read_text(encoding="utf-8"))
        after = json.loads(copy.read_text(encoding="utf-8"))
        assert [(c["source"], c.get("outputs")) for c in before["cells"]] == \
               [(c["source"], c.get("outputs")) for c in after["cells"]], rel
        assert not folding_problems(after), rel
