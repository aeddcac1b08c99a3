"""End to end: `python -m dpbayes run` on a tiny book in a temporary directory."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from tiny_book import write_tiny_book

PARAMS = """eps: float = 1.0  # privacy parameter; range (0, inf)
seed: int = 3  # seed of numpy.random.default_rng; range [0, inf)
"""
BODY = """import numpy as np
import matplotlib.pyplot as plt
from dpbayes.book import figures
figures.use_style()
rng = np.random.default_rng(seed)
noise = rng.laplace(0.0, 1.0 / eps, size=5)
fig, ax = plt.subplots()
ax.plot(noise)
figures.save_figure(fig, "00-demo", "fig1-noise", data={"noise": noise}, params={"eps": eps, "seed": seed})
figures.save_results("noise", {"mean_abs": float(np.abs(noise).mean())})
print(f"{np.abs(noise).mean():.4f}")
plt.show()
"""


@pytest.fixture()
def book(tmp_path: Path) -> Path:
    return write_tiny_book(tmp_path, "00a-demo.ipynb", PARAMS, BODY, title="# Demo")


def run(book: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpbayes", "run", *args, "--quiet"], cwd=book, capture_output=True, text=True, timeout=300)


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-p", "eps", "-1"], "error: parameter eps must lie in (0, inf), got -1.0"),
        (["-p", "seed", "1.5"], "error: parameter seed must be an integer in [0, inf), got '1.5'"),
        (["-p", "K", "3"], "error: unknown parameter K"),
        (["-p", "eps", "1,-2"], "error: parameter eps must lie in (0, inf), got -2.0"),
    ],
)
def test_bad_parameters_exit_2_without_output(book, args, message):
    before = tree(book)
    result = run(book, "chapters/00-demo/00a-demo.ipynb", *args)
    assert result.returncode == 2
    assert result.stderr.strip().startswith(message)
    assert len(result.stderr.strip().splitlines()) == 1
    assert tree(book) == before  # no runs/ directory, nothing touched


def test_update_stored_refuses_overrides(book):
    result = run(book, "chapters/00-demo", "-p", "eps", "2", "--update-stored")
    assert result.returncode == 2 and "--update-stored" in result.stderr


def test_run_writes_only_under_runs(book):
    stored = (book / "chapters/00-demo/00a-demo.ipynb").read_bytes()
    result = run(book, "chapters/00-demo/00a-demo.ipynb", "-p", "eps", "0.5")
    assert result.returncode == 0, result.stderr
    (run_dir,) = (book / "runs").iterdir()
    assert run_dir.name.startswith("00a-demo-")
    assert sorted(p.name for p in run_dir.iterdir()) == ["00a-demo.ipynb", "figures", "params.json"]
    assert (run_dir / "figures/00-demo/fig1-noise.png").stat().st_size > 0
    payload = json.loads((run_dir / "figures/00-demo/fig1-noise.json").read_text())
    assert payload["params"] == {"eps": 0.5, "seed": 3}
    executed = nbformat.read(run_dir / "00a-demo.ipynb", as_version=4)
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in executed.cells)
    assert (book / "chapters/00-demo/00a-demo.ipynb").read_bytes() == stored
    assert not (book / "figures").exists()
    # same parameters, same directory and the same numbers
    first = payload["data"]
    assert run(book, "chapters/00-demo/00a-demo.ipynb", "-p", "eps", "0.5").returncode == 0
    assert [p.name for p in (book / "runs").iterdir()] == [run_dir.name]
    assert json.loads((run_dir / "figures/00-demo/fig1-noise.json").read_text())["data"] == first


#: The notebook glues its key numbers (CONTRIBUTING.md, "Numbers on pages"): a sweep's columns.
GLUE = """from dpbayes.book.pagevalues import glue_number, source_value
glue_number("k", 1 / eps)
glue_number("eps", 2 * eps)  # a parameter's name too: the column is glued.eps
source_value("k_paper", 0.5, "made up for this test")  # the same in every run: no column
"""


def test_sweep_in_parallel_writes_summary_with_glued_values_and_prints_it(tmp_path):
    book = write_tiny_book(tmp_path, "00a-demo.ipynb", PARAMS, BODY + GLUE, title="# Demo")
    result = run(book, "chapters/00-demo", "-p", "eps", "0.5,1,2", "--jobs", "2")
    assert result.returncode == 0, result.stderr
    (sweep,) = (book / "runs").iterdir()
    assert "sweep" in sweep.name
    with (sweep / "summary.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["notebook", "eps", "run_dir", "status", "k", "glued.eps", "noise.mean_abs"]
    assert [float(r["eps"]) for r in rows] == [0.5, 1.0, 2.0]
    assert all(r["status"] == "ok" for r in rows)
    assert [(r["k"], r["glued.eps"]) for r in rows] == [("2", "1"), ("1", "2"), ("0.5000", "4")]  # as the page shows them
    assert len({r["noise.mean_abs"] for r in rows}) == 3
    # the end of the output: the summary's path, then the table
    out = result.stdout.splitlines()
    assert out[3] == f"summary  runs/{sweep.name}/summary.csv" and out[4] == ""
    table = [line.split() for line in out[5:]]
    assert table[0] == ["eps", "status", "k", "glued.eps", "noise.mean_abs"]
    assert [line[:4] for line in table[1:]] == [["0.5", "ok", "2", "1"], ["1.0", "ok", "1", "2"], ["2.0", "ok", "0.5000", "4"]]


def test_update_stored_writes_notebook_and_figures(book):
    result = run(book, "chapters/00-demo", "--update-stored")
    assert result.returncode == 0, result.stderr
    nb = nbformat.read(book / "chapters/00-demo/00a-demo.ipynb", as_version=4)
    assert nb.cells[2].outputs, "stored notebook must hold the outputs"
    assert "papermill" not in nb.metadata
    assert sorted(p.name for p in (book / "figures/00-demo").iterdir()) == ["fig1-noise.json", "fig1-noise.png"]
    assert json.loads((book / "figures/00-demo/fig1-noise.json").read_text())["notebook"] == "00a-demo.ipynb"


def dpbayes(book: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpbayes", *args], cwd=book, capture_output=True, text=True, timeout=300)


def test_stored_run_round_trip_and_check_bites(book):
    assert run(book, "chapters/00-demo", "--update-stored").returncode == 0
    result = run(book, "chapters/00-demo/00a-demo.ipynb", "-p", "eps", "0.5", "--out", "runs/big")
    assert result.returncode == 0, result.stderr
    (run_dir,) = (book / "runs/big").iterdir()
    bad = dpbayes(book, "store-run", str(run_dir), "--as", "Big Run")
    assert bad.returncode == 2 and "--as" in bad.stderr
    assert run(book, "chapters/00-demo/00a-demo.ipynb", "--out", "runs/defaults").returncode == 0
    (default_run,) = (book / "runs/defaults").iterdir()
    bad = dpbayes(book, "store-run", str(default_run), "--as", "defaults")
    assert bad.returncode == 2 and "--update-stored" in bad.stderr

    kept = book / "figures/00-demo/runs/eps-half"
    assert dpbayes(book, "store-run", str(run_dir), "--as", "eps-half").returncode == 0
    assert sorted(p.name for p in kept.iterdir()) == ["fig1-noise.json", "fig1-noise.png", "results-noise.json", "run.json"]
    manifest = json.loads((kept / "run.json").read_text())
    assert manifest["notebook"] == "chapters/00-demo/00a-demo.ipynb"
    assert manifest["parameters"] == {"eps": 0.5}
    assert manifest["command"] == "python -m dpbayes run chapters/00-demo/00a-demo.ipynb -p eps 0.5"
    # the run's own record of how long it took and on what (a stored run's page can quote it)
    execution = manifest["execution"]
    assert execution == json.loads((run_dir / "params.json").read_text())["execution"]
    assert 0 < execution["wall_seconds"] < 600 and execution["cpus"] >= 1 and execution["cpu_model"]
    assert 0 < execution["cpu_seconds"] < 600 * execution["cpus"]  # the kernel's CPU time (it imports numpy)
    assert len(execution["load_before"]) in (0, 3) and execution["started_utc"].endswith("+00:00")

    # the default-parameter figures are untouched, and re-storing the defaults keeps the kept run
    assert json.loads((book / "figures/00-demo/fig1-noise.json").read_text())["params"]["eps"] == 1.0
    assert run(book, "chapters/00-demo", "--update-stored").returncode == 0
    assert (kept / "fig1-noise.json").exists()

    ok = dpbayes(book, "verify-run", str(kept.relative_to(book)), "--quiet")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.lstrip().startswith("ok")

    # a perturbed stored value, or a perturbed stored result, is reported
    payload = json.loads((kept / "fig1-noise.json").read_text())
    payload["data"]["noise"][2] += 1e-3
    (kept / "fig1-noise.json").write_text(json.dumps(payload))
    results = json.loads((kept / "results-noise.json").read_text())
    results["mean_abs"] *= 1.01
    (kept / "results-noise.json").write_text(json.dumps(results))
    differs = dpbayes(book, "verify-run", str(kept.relative_to(book)), "--quiet")
    assert differs.returncode == 1
    assert "data.noise" in differs.stdout and "results-noise" in differs.stdout


def test_summary_table_shows_what_differs_and_keeps_to_the_terminal_width():
    from dpbayes.book import cli

    jobs = [cli.Job(Path(f"{nb}.ipynb"), {"eps": eps, "seed": 3}, Path(f"r{i}"), "00-demo")
            for i, (nb, eps) in enumerate([("00a-demo", 0.5), ("00b-demo", 2.0)])]
    rows = [{"notebook": "00a-demo.ipynb", "eps": 0.5, "seed": 3, "status": "ok", "k": "2", "a_long_glued_key": "1.806×10⁻³"},
            {"notebook": "00b-demo.ipynb", "eps": 2.0, "seed": 3,
             "status": "failed: PapermillExecutionError: ZeroDivisionError: division by zero"}]
    table = cli.summary_table(rows, jobs, ["k", "a_long_glued_key"], width=60).splitlines()
    assert [line.split()[:3] for line in table[:3]] == [["notebook", "eps", "status"], ["00a-demo.ipynb", "0.5", "ok"],
                                                         ["00b-demo.ipynb", "2.0", "failed:"]]
    assert "seed" not in table[0] and all(len(line) <= 60 for line in table[:3])
    assert table[0].split()[-1] == "k" and table[2].split()[-1].endswith("...")  # a long status is cut
    assert table[3] == "(1 more column in summary.csv: a_long_glued_key)"
    assert cli.summary_table(rows, jobs, ["k", "a_long_glued_key"], width=200).splitlines()[0].split()[-1] == "a_long_glued_key"


def test_summary_table_leads_with_the_columns_that_vary():
    from dpbayes.book import cli

    jobs = [cli.Job(Path("00a-demo.ipynb"), {"eps": eps, "seed": 3}, Path(f"r{i}"), "00-demo") for i, eps in enumerate([0.5, 2.0])]
    same = {f"same{i}": "7" for i in range(10)}  # equal in every run: summary.csv only
    rows = [{"notebook": "00a-demo.ipynb", "eps": eps, "seed": 3, "status": "ok", **same, "k": k} for eps, k in [(0.5, "2"), (2.0, "0.5")]]
    table = cli.summary_table(rows, jobs, [*same, "k"], width=40).splitlines()
    assert table[0].split() == ["eps", "status", "k"]  # the varying output is shown, not crowded out
    assert [line.split() for line in table[1:3]] == [["0.5", "ok", "2"], ["2.0", "ok", "0.5"]]
    assert table[3] == ("(10 columns equal in every run, in summary.csv only: "
                        "same0, same1, same2, same3, same4, same5, same6, same7, ... (2 more))")
    # one run: nothing to compare, every output is shown
    assert cli.summary_table(rows[:1], jobs[:1], ["same0", "k"], width=80).splitlines()[0].split() == ["status", "same0", "k"]
