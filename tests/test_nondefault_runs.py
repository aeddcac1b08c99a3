"""Every notebook, run with a non-default value of every parameter, stays consistent with itself.

The stored outputs only show the defaults, so a value hard-wired to a default (a label, an index,
"the first element is the smallest") goes unnoticed there. Here each notebook runs once through
``python -m dpbayes run`` with small, fast, non-default values for all its parameters, and the run must

* finish without error;
* record in every figure exactly the parameter values it ran with (``params`` of the figure JSON);
* pass the notebook's own consistency checks below (the numbers a table names are the ones it shows).

The values are declared with the parameters themselves, as the last clause of each parameter's comment
(``# meaning; range [a, b]; test VALUE``, :mod:`dpbayes.book.params`): a new parameter without one fails
the coverage test.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import nbformat
import pytest

from dpbayes.counting import geometric as counting_geometric
from dpbayes.counting import metrics as counting_metrics
from dpbayes.book.params import notebook_parameters
from notebook_runs import NOTEBOOKS, keep, nondefault_values, run_at_test_values


def test_every_parameter_of_every_notebook_gets_a_nondefault_value() -> None:
    for nb in NOTEBOOKS:
        declared = notebook_parameters(nb)
        values = nondefault_values(nb)
        missing = sorted(set(declared) - set(values))
        assert not missing, f"{nb.name}: declare a test value ('; test VALUE' in the comment) for {', '.join(missing)}"
        assert sorted(values) == sorted(declared), f"{nb.name}: cover exactly the declared parameters"
        for name, text in values.items():
            assert declared[name].convert(text) != declared[name].default, f"{nb.name}: {name} = {text} is the default"


def _close(a, b) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)
    return a == b


def _markdown_tables(nb: nbformat.NotebookNode, raw: bool = False) -> list:
    """Every Markdown table in the notebook's outputs, as rows of column -> cell text (``raw``: lists of cells)."""
    tables = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("data", {}).get("text/markdown", "")
            lines = [ln for ln in text.splitlines() if ln.startswith("|")]
            if len(lines) < 3:
                continue
            header = [c.strip() for c in lines[0].strip("|").split("|")]
            if raw:
                tables.append([[c.strip() for c in ln.strip("|").split("|")] for ln in lines])
                continue
            tables.append([dict(zip(header, (c.strip() for c in ln.strip("|").split("|")))) for ln in lines[2:]])
    return tables


def _figure(run_dir: Path, figure_id: str) -> dict:
    (path,) = (run_dir / "figures").rglob(f"{figure_id}.json")
    return json.loads(path.read_text())


def _check_01b(values: dict, nb: nbformat.NotebookNode, run_dir: Path) -> None:
    # eps_grid_high is given unsorted: "at smallest eps" must still be the row of the smallest eps
    table = next(t for t in _markdown_tables(nb, raw=True) if t and t[0][:2] == ["quantity", "value"])
    shown = {"|".join(cells[:-1]): float(cells[-1]) for cells in table[2:]}  # a quantity may hold a raw "|"
    data = _figure(run_dir, "fig3-mse-high-privacy")["data"]
    i = data["eps"].index(min(data["eps"]))
    assert shown["UBaPP MSE at smallest ε"] == pytest.approx(data["UBaPP (grid, exact solver)"][i], rel=1e-3)
    assert shown["LBaPP MSE at smallest ε"] == pytest.approx(data["LBaPP exact"][i], rel=1e-3)


def _check_02a(values: dict, nb: nbformat.NotebookNode, run_dir: Path) -> None:
    # the figure compares the first prior with another one, whatever the number of priors
    priors = _figure(run_dir, "privacy-loss-vs-n")["params"]["priors"]
    assert len(priors) == 2 and priors[0] != priors[1], priors


def _check_04b(values: dict, nb: nbformat.NotebookNode, run_dir: Path) -> None:
    rows = next(t for t in _markdown_tables(nb) if t and "Bayes error at eps_min" in t[0])
    for row in rows:
        n = int(row["n"])
        assert float(row["naive at eps_min"]) == pytest.approx(1 / values["eps_min"], rel=1e-3)
        expected = counting_metrics.mean_abs_error("mean", n, values["p"], values["eps_min"])
        assert float(row["Bayes error at eps_min"]) == pytest.approx(expected, rel=1e-3), row


def _check_usage(values: dict, nb: nbformat.NotebookNode, run_dir: Path) -> None:
    # the count table of using-dpbayes.md (glued as one table): one row per eps of the grid, computed at it
    rows = next(t for t in _markdown_tables(nb) if t and "optimal (geometric + posterior median)" in t[0])
    assert [float(r["ε"]) for r in rows] == [float(e) for e in values["eps_grid"]]
    for row, e in zip(rows, values["eps_grid"]):
        expected = counting_geometric.geometric_mean_abs_error("median", values["n"], values["p"], e)
        assert float(row["optimal (geometric + posterior median)"]) == pytest.approx(expected, rel=1e-3)
        assert float(row["Laplace count"].split()[0]) == pytest.approx(1 / e, rel=1e-3)


CHECKS = {"01b-mse-vs-eps": _check_01b, "02a-sensitivity-privacy": _check_02a, "04b-bayes-vs-naive": _check_04b,
          "using-dpbayes-numbers": _check_usage}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_notebook_with_nondefault_parameters_is_consistent(notebook: Path, tmp_path: Path) -> None:
    overrides = nondefault_values(notebook)
    run_dir, result = run_at_test_values(notebook, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert run_dir != tmp_path, "the run left no single run folder"
    ran_with = json.loads((run_dir / "params.json").read_text())["parameters"]
    declared = notebook_parameters(notebook)
    values = {name: p.default for name, p in declared.items()} | ran_with
    assert set(overrides) <= set(ran_with)
    for fig in sorted((run_dir / "figures").rglob("*.json")):
        if fig.name.startswith("results-"):
            continue
        recorded = json.loads(fig.read_text())["params"]
        for name, value in recorded.items():
            if name in values:
                assert _close(value, values[name]), f"{fig.name}: records {name} = {value!r}, the run used {values[name]!r}"
    executed = nbformat.read(run_dir / notebook.name, as_version=4)
    if notebook.stem in CHECKS:
        CHECKS[notebook.stem](values, executed, run_dir)
    # no label in an output still names a default that was overridden, e.g. "n = 100" after -p n 20
    text = "\n".join(out.get("text", "") + out.get("data", {}).get("text/plain", "")
                     for cell in executed.cells for out in cell.get("outputs", []))
    for name in overrides:
        default = declared[name].default
        if declared[name].type in ("int", "float") and not isinstance(default, bool):
            assert not re.search(rf"\b{re.escape(name)} = {re.escape(format(default, 'g'))}\b", text), \
                f"an output still says {name} = {default:g}"
    keep(notebook, run_dir)  # for the narrow-path guard (test_narrow_guard.py)
