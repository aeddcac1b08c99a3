"""The parameters-cell grammar and the validation done before a kernel starts."""

import json

import pytest

from dpbayes.book.params import ParameterError, notebook_parameters, parse_parameters_source, validate_overrides

CELL = """eps: float = 1.0  # privacy parameter epsilon; range (0, inf)
K: int = 100  # number of Bernoulli trials; range [1, 100000]
eps_grid: list[float] = [0.001, 0.002]  # eps values on the x axis; range (0, inf)
method: str = "exact"  # how the metric is computed; choices exact, mc
p: float = 0.3  # prior success probability; range [0, 1]
show: bool = True  # draw the inset; range (-inf, inf)
"""


@pytest.fixture()
def declared():
    return parse_parameters_source(CELL)


def test_declarations_are_read(declared):
    assert list(declared) == ["eps", "K", "eps_grid", "method", "p", "show"]
    assert declared["eps"].allowed == "(0, inf)"
    assert declared["K"].allowed == "[1, 100000]"
    assert declared["method"].choices == ("exact", "mc")
    assert declared["eps_grid"].default == [0.001, 0.002]
    assert declared["K"].meaning == "number of Bernoulli trials"


def test_valid_overrides_are_converted(declared):
    got = validate_overrides(declared, {"eps": "0.5", "K": "7", "eps_grid": "0.1,0.2", "method": "mc", "show": "false"})
    assert got == {"eps": 0.5, "K": 7, "eps_grid": [0.1, 0.2], "method": "mc", "show": False}
    assert validate_overrides(declared, {"eps_grid": "[1, 2.5]"})["eps_grid"] == [1.0, 2.5]


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("eps", "-1", "parameter eps must lie in (0, inf)"),
        ("eps", "0", "parameter eps must lie in (0, inf)"),
        ("eps", "abc", "parameter eps must be a number"),
        ("eps", "nan", "parameter eps must be a number"),
        ("K", "0", "parameter K must lie in [1, 100000]"),
        ("K", "2.5", "parameter K must be an integer"),
        ("p", "1.5", "parameter p must lie in [0, 1]"),
        ("method", "foo", "parameter method must be one of exact, mc"),
        ("eps_grid", "0.1,-2", "parameter eps_grid must lie in (0, inf)"),
        ("eps_grid", "", "non-empty list"),
        ("show", "maybe", "parameter show must be true or false"),
        ("nope", "1", "unknown parameter nope"),
    ],
)
def test_invalid_overrides_name_the_parameter(declared, name, value, fragment):
    with pytest.raises(ParameterError) as err:
        validate_overrides(declared, {name: value})
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "bad_cell",
    [
        "eps = 1.0  # no annotation; range (0, inf)\n",
        "eps: float = 1.0\n",
        "eps: float = 1.0  # no range given\n",
        "eps: complex = 1.0  # meaning; range (0, inf)\n",
        "eps: float = -1.0  # default outside its own range; range (0, inf)\n",
        "eps: float = 1.0  # test value outside the range; range (0, inf); test -1\n",
        "method: str = \"a\"  # test value not a choice; choices a, b; test c\n",
        "eps: float = 1.0  # empty test value; range (0, inf); test\n",
        "eps: float = 1.0  # test value without a range; test 0.5\n",
    ],
)
def test_malformed_cells_are_rejected(bad_cell):
    with pytest.raises(ParameterError):
        parse_parameters_source(bad_cell)


def test_notebook_parameters_reads_tagged_cell(tmp_path):
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# t"]},
            {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": CELL.splitlines(True), "outputs": [], "execution_count": None},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps(nb))
    assert list(notebook_parameters(path)) == ["eps", "K", "eps_grid", "method", "p", "show"]


def test_list_of_choices_from_the_command_line():
    declared = parse_parameters_source(
        'methods: list[str] = ["a", "b"]  # which estimators; choices a, b, c\n'
    )
    assert validate_overrides(declared, {"methods": "a, c"}) == {"methods": ["a", "c"]}
    assert validate_overrides(declared, {"methods": ["b"]}) == {"methods": ["b"]}
    with pytest.raises(ParameterError, match="methods must be one of a, b, c, got 'd'"):
        validate_overrides(declared, {"methods": "a,d"})


def test_the_test_value_is_declared_with_the_parameter():
    cell = (
        "eps: float = 1.0  # privacy; with a semicolon; range (0, inf); test 0.5\n"
        "eps_grid: list[float] = [0.1]  # grid; range (0, inf); test 2.0,0.5\n"
        "method: str = \"a\"  # how; choices a, b; test b\n"
        "K: int = 3  # no test value; range [1, 9]\n"
    )
    declared = parse_parameters_source(cell)
    assert declared["eps"].test == "0.5" and declared["eps"].meaning == "privacy; with a semicolon"
    assert declared["eps"].allowed == "(0, inf)"
    assert declared["eps_grid"].convert(declared["eps_grid"].test) == [2.0, 0.5]
    assert declared["method"].test == "b" and declared["method"].choices == ("a", "b")
    assert declared["K"].test is None


def test_a_file_path_and_free_names(tmp_path, monkeypatch):
    """``file``: any path, made absolute when it names a file from where the command runs; ``names``: any text."""
    declared = parse_parameters_source(
        'csv_path: str = "data/x.csv"  # the records; file; test other.csv\n'
        'columns: list[str] = ["a", "b"]  # columns; names; test c\n'
    )
    (tmp_path / "mine.csv").write_text("a\n1\n")
    monkeypatch.chdir(tmp_path)
    out = validate_overrides(declared, {"csv_path": "mine.csv", "columns": "x,y z"})
    assert out["csv_path"] == str(tmp_path / "mine.csv") and out["columns"] == ["x", "y z"]
    assert validate_overrides(declared, {"csv_path": "elsewhere.csv"})["csv_path"] == "elsewhere.csv"
    with pytest.raises(ParameterError, match="csv_path must be a file path"):
        validate_overrides(declared, {"csv_path": ""})
