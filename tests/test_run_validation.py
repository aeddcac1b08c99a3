"""Whole parameter sets are validated before any kernel starts (issue 15, items 2 and 6).

On the book's own notebooks: each inconsistent set of values the issue reported must stop with one
line naming the parameters, exit code 2 and nothing written; a dependent value is derived where it
has a natural default. Smaller command-line defects (item 6) are checked on a tiny book.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from tiny_book import write_tiny_book

from dpbayes.book.figures import compare_figure_json
from dpbayes.book.params import ParameterError, notebook_parameters, parse_parameters_source

ROOT = Path(__file__).resolve().parents[1]
CH2, CH3, CH4 = "chapters/02-posterior-release", "chapters/03-adaptive-truncation", "chapters/04-counting-queries"


def dpbayes(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpbayes", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def assert_refused(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.parametrize(
    ("target", "args", "fragments"),
    [
        (f"{CH3}/03b-smc-simulated.ipynb", ["-p", "eps_grid", "1,2", "-p", "b_grid", "0.1,0.2,0.3"], ["b_grid", "eps_grid"]),
        (f"{CH2}/02a-sensitivity-privacy.ipynb", ["-p", "prior_a", "1,2"], ["prior_b", "prior_a"]),
        (CH2, ["-p", "prior_a", "1,2"], ["prior_b", "02a-sensitivity-privacy.ipynb"]),
        ("chapters/privacy-audit.ipynb", ["-p", "trunc_low", "2", "-p", "trunc_high", "1"], ["trunc_low", "trunc_high"]),
        (f"{CH3}/03b-smc-simulated.ipynb", ["-p", "mcmc_burn_in", "5000", "-p", "mcmc_iter", "1000"], ["mcmc_burn_in", "mcmc_iter"]),
        (f"{CH3}/03c-real-income.ipynb", ["-p", "mcmc_burn_in", "5000", "-p", "mcmc_iter", "1000"], ["mcmc_burn_in"]),
        (f"{CH3}/03b-smc-simulated.ipynb", ["-p", "mu_true", "inf"], ["mu_true", "finite", "inf"]),
        (f"{CH4}/04b-bayes-vs-naive.ipynb", ["-p", "eps_min", "5", "-p", "eps_max", "1"], ["eps_min", "eps_max"]),
        (CH4, ["-p", "eps_min", "5", "-p", "eps_max", "1"], ["eps_min", "eps_max"]),
    ],
)
def test_inconsistent_parameter_sets_are_refused_before_any_kernel(tmp_path, target, args, fragments):
    result = dpbayes(ROOT, "run", target, *args, "--out", str(tmp_path / "runs"), "--quiet")
    assert_refused(result, *fragments)
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_b_grid_is_derived_from_eps_grid():
    result = dpbayes(ROOT, "run", f"{CH3}/03b-smc-simulated.ipynb", "-p", "eps_grid", "1,2,5,3", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert '"b_grid": [0.06, 0.12, 0.54, 0.42]' in result.stdout  # the paper's b* where it has one, else the exact best


def test_constraints_name_declared_parameters_and_notebooks_check_them():
    """Every rule names parameters its notebook declares, and the notebook checks it too."""
    from dpbayes.book import constraints

    notebooks = {nb.stem: nb for nb in (ROOT / "chapters").rglob("*.ipynb")}
    cli_only = {"04c-beyond-the-paper"}  # its code cells are another issue's; the run command checks it
    for stem, rules in constraints.RULES.items():
        declared = notebook_parameters(notebooks[stem])
        for rule in rules:
            assert set(rule.names) <= set(declared), f"{stem}: {rule.names}"
        constraints.check(stem, {n: p.default for n, p in declared.items()})  # the defaults are consistent
        if stem not in cli_only:
            source = "".join("".join(c.source) for c in nbformat.read(notebooks[stem], as_version=4).cells)
            assert f'check("{stem}", globals())' in source, f"{stem} does not call dpbayes.book.constraints.check"


def test_constraint_messages_and_derivation():
    from dpbayes.book import constraints

    with pytest.raises(ParameterError, match=r"^parameter eps_min must be smaller than eps_max, got eps_min = 5.0 and eps_max = 1.0$"):
        constraints.check("04b-bayes-vs-naive", {"eps_min": 5.0, "eps_max": 1.0})
    with pytest.raises(ParameterError, match="b_grid needs one entry per entry of eps_grid"):
        constraints.check("03b-smc-simulated", {"eps_grid": [1.0], "b_grid": [1.0, 2.0], "mcmc_iter": 10, "mcmc_burn_in": 1})
    assert constraints.derive("03b-smc-simulated", {"eps_grid": [2.0]}, {"eps_grid"}) == {"b_grid": [0.12]}
    assert constraints.derive("03b-smc-simulated", {"eps_grid": [2.0], "b_grid": [1.0]}, {"eps_grid", "b_grid"}) == {}


def test_non_finite_floats_are_refused_unless_the_range_includes_inf():
    declared = parse_parameters_source(
        "x: float = 1.0  # any; range (-inf, inf)\n"
        "cap: float = 1.0  # a cap, inf for none; range [0, inf]\n"
        "xs: list[float] = [1.0]  # values; range (0, inf)\n"
    )
    for raw in ("inf", "-inf", "nan", "Infinity"):
        with pytest.raises(ParameterError, match="finite number in \\(-inf, inf\\)|must be a number in \\(-inf, inf\\)"):
            declared["x"].convert(raw)
    with pytest.raises(ParameterError, match="finite"):
        declared["xs"].convert("[1, Infinity]")
    assert declared["cap"].convert("inf") == float("inf")
    assert declared["x"].allowed == "(-inf, inf)"


@pytest.mark.parametrize("text", ["50,", ",50", "50,,60", "5_0", "0x10", " "])
def test_malformed_numbers_and_lists_are_refused(text):
    declared = parse_parameters_source(
        "n: int = 1  # size; range [1, 1000]\nns: list[int] = [1]  # sizes; range [1, 1000]\n")
    with pytest.raises(ParameterError):
        declared["ns"].convert(text)
    if "," not in text:
        with pytest.raises(ParameterError):
            declared["n"].convert(text)


# ------------------------------------------------------------------ item 6 on a tiny book
PARAMS = """n: int = 10  # size; range [1, 1000]
p: float = 0.5  # probability; range [0, 1]
x: float = 0.0  # anything; range (-inf, inf)
"""
BODY = """from dpbayes.book import figures
figures.save_results("demo", {"total": n * p})
# what a kernel logs goes to its own stderr (the run command must keep it off the terminal)
from ipykernel.kernelapp import IPKernelApp
IPKernelApp.instance().log.error("kernel log noise")
print(n, p, x)
"""


@pytest.fixture()
def book(tmp_path: Path) -> Path:
    root = write_tiny_book(tmp_path, "00a-demo.ipynb", PARAMS, BODY)
    other = nbformat.v4.new_notebook()
    other.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    other.cells = [nbformat.v4.new_code_cell("seed: int = 1  # seed; range [0, inf)", metadata={"tags": ["parameters"]}),
                   nbformat.v4.new_code_cell("print(seed)")]
    nbformat.write(other, root / "chapters/00-demo/00b-other.ipynb")
    return root


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["-p", "n", "50,"], "empty entry"),
        (["-p", "n", ",50"], "empty entry"),
        (["-p", "n", "50,,60"], "empty entry"),
        (["-p", "n", "5_0"], "parameter n must be an integer"),
        (["-p", "n", "5,5"], "appears twice"),
        (["-p", "p", "-inf"], "parameter p must be a finite number in [0, 1], got -inf"),
        (["-p", "p=-1"], "parameter p must lie in [0, 1], got -1.0"),
        (["-p", "x", "nan"], "parameter x must be a number in (-inf, inf), got 'nan'"),
        (["-p", "x"], "-p x is missing its value before --quiet"),  # an option is never a value (issue 28)
        (["--timeout", "0"], "--timeout"),
        (["--timeout", "-5"], "--timeout"),
        (["--out", "_toc.yml"], "not a directory"),
        (["--out", "/proc/nope"], "cannot create"),
        (["--bogus"], "unrecognized arguments"),
        # the cluster's workers set how many notebooks run at once: refused before the scheduler is contacted
        (["-p", "n", "20,30", "--jobs", "2", "--scheduler", "tcp://127.0.0.1:9"],
         "--jobs 2 does not apply with --scheduler: the Dask cluster's workers set how many notebooks run at once"),
        (["-p", "n", "20,30", "--jobs", "2", "--scheduler", "local:2", "--dry-run"], "--jobs 2 does not apply with --scheduler"),
        (["--jobs", "4", "--scheduler", "local:1", "--dry-run"], "--jobs 4 does not apply with --scheduler"),
    ],
)
def test_command_line_mistakes_are_one_line(book, args, fragment):
    before = tree(book)
    result = dpbayes(book, "run", "chapters/00-demo/00a-demo.ipynb", *args, "--quiet")
    assert_refused(result, fragment)
    assert tree(book) == before


def test_jobs_1_is_the_default_and_goes_with_a_scheduler(book):
    result = dpbayes(book, "run", "chapters/00-demo/00a-demo.ipynb", "-p", "n", "20,30", "--jobs", "1",
                     "--scheduler", "tcp://127.0.0.1:9", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "on the Dask scheduler tcp://127.0.0.1:9: each notebook a task" in result.stdout


def test_a_folder_outside_the_book_is_one_line(book, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "broken.ipynb").write_text("{ not json")
    assert_refused(dpbayes(book, "run", str(outside), "--quiet"), "outside the book")


def test_a_chapter_range_error_names_the_notebook():
    result = dpbayes(ROOT, "run", CH4, "-p", "n", "6000", "--dry-run")
    assert_refused(result, "parameter n of 04c-beyond-the-paper.ipynb must lie in [1, 5000]")


def test_sweep_skips_notebooks_without_the_parameter_and_summary_is_relative(book):
    result = dpbayes(book, "run", "chapters/00-demo", "-p", "n", "20,30", "--jobs", "2", "--quiet")
    assert result.returncode == 0, result.stderr
    assert "skipping chapters/00-demo/00b-other.ipynb: it declares none of n" in result.stderr
    assert "kernel log noise" not in result.stderr and "[IPKernelApp]" not in result.stderr
    (sweep,) = (book / "runs").iterdir()
    with (sweep / "summary.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [r["notebook"] for r in rows] == ["00a-demo.ipynb", "00a-demo.ipynb"]
    assert all(not Path(r["run_dir"]).is_absolute() and (sweep / r["run_dir"]).is_dir() for r in rows)
    assert [float(r["demo.total"]) for r in rows] == [10.0, 15.0]


def test_figure_differences_print_plain_numbers():
    stored = {"data": {"y": [1.0, 2.0]}, "tolerance": {"rtol": 1e-9, "atol": 0}}
    (problem,) = compare_figure_json(stored, {"data": {"y": [1.0, 2.5]}}, "fig")
    assert "np.float64" not in str(problem) and "stored 2.0, fresh 2.5" in str(problem)


def test_params_json_never_holds_infinity(book):
    result = dpbayes(book, "run", "chapters/00-demo/00a-demo.ipynb", "-p", "x", "1e308", "--quiet")
    assert result.returncode == 0, result.stderr
    (run_dir,) = (book / "runs").iterdir()
    text = (run_dir / "params.json").read_text()
    assert "Infinity" not in text and json.loads(text)["parameters"] == {"x": 1e308}


@pytest.mark.parametrize(("target", "old", "new"), [
    (f"{CH3}/03a-fisher-intervals.ipynb", "eps_list", "eps_grid"),
    (CH3, "eps_list", "eps_grid"),
    ("chapters/01-ubapp/01d-heatmaps.ipynb", "eps_values", "eps_grid"),
    ("chapters/01-ubapp/01b-mse-vs-eps.ipynb", "eps_high", "eps_grid_high"),
])
def test_an_old_parameter_name_says_its_new_name(target, old, new):
    result = dpbayes(ROOT, "run", target, "-p", old, "1.0", "--dry-run")
    assert_refused(result, f"unknown parameter {old}", f"{old} was renamed {new}")


def test_one_name_for_the_swept_privacy_levels():
    """``eps`` is one privacy level, ``eps_grid`` the list a notebook sweeps: no notebook declares an old name."""
    from dpbayes.book.params import RENAMED_PARAMETERS

    for nb in sorted((ROOT / "chapters").rglob("*.ipynb")):
        declared = notebook_parameters(nb)
        for old, new in RENAMED_PARAMETERS.items():
            if old in declared:  # allowed only as a single level (01c's eps_high / eps_low)
                assert declared[old].type == "float", f"{nb.name}: {old} is a {declared[old].type}; call it {new}"
        for name, p in declared.items():
            if name == "eps" or name.startswith("eps_grid"):
                assert (p.type == "float") == (name == "eps"), f"{nb.name}: {name} is a {p.type}"
    result = dpbayes(ROOT, "run", "chapters/01-ubapp", "-p", "eps_high", "0.002", "--dry-run")
    assert result.returncode == 0, result.stderr  # 01c's single eps_high is still a parameter
