"""Stored results: no silent overwrite (issue 15, item 5) and byte-stable re-storing (item 7)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from tiny_book import write_tiny_book


PARAMS = """eps: float = 1.0  # privacy parameter; range (0, inf)
"""
# last-digit noise (as from another summation order) in a plotted number, and a timing cell
BODY = """import time
import matplotlib.pyplot as plt
from dpbayes.book import figures
figures.use_style()
noisy = 1 / 3 + (time.time_ns() % 7) * 1e-17
fig, ax = plt.subplots()
ax.plot([0, 1], [0, 1 / eps])
figures.save_figure(fig, "00-demo", "fig1-line", data={"y": [0.0, 1 / eps], "noisy": noisy}, params={"eps": eps})
print(f"{1 / eps:.4g}")
plt.show()
"""
TIMING = "# NBVAL_IGNORE_OUTPUT\nimport time\nt0 = time.perf_counter()\nprint(f'took {time.perf_counter() - t0 + time.time_ns() % 1000:.6f} s')\n"


@pytest.fixture()
def book(tmp_path: Path) -> Path:
    root = write_tiny_book(tmp_path, "00a-demo.ipynb", PARAMS, BODY, title="# Demo")
    path = root / "chapters/00-demo/00a-demo.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(TIMING))
    nbformat.write(nb, path)
    other = nbformat.v4.new_notebook()
    other.metadata["kernelspec"] = nb.metadata["kernelspec"]
    other.cells = [nbformat.v4.new_code_cell(PARAMS, metadata={"tags": ["parameters"]}), nbformat.v4.new_code_cell(BODY.replace("fig1-line", "fig2-other"))]
    nbformat.write(other, root / "chapters/00-demo/00b-other.ipynb")
    return root


def dpbayes(book: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpbayes", *args], cwd=book, capture_output=True, text=True, timeout=300)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_into(book: Path, notebook: str, eps: str, out: str) -> Path:
    result = dpbayes(book, "run", f"chapters/00-demo/{notebook}", "-p", "eps", eps, "--out", out, "--quiet")
    assert result.returncode == 0, result.stderr
    (run_dir,) = (book / out).iterdir()
    return run_dir


def test_store_run_refuses_an_existing_label_unless_forced(book: Path) -> None:
    first = run_into(book, "00a-demo.ipynb", "0.5", "runs/a")
    second = run_into(book, "00a-demo.ipynb", "2", "runs/b")
    other = run_into(book, "00b-other.ipynb", "3", "runs/c")
    assert dpbayes(book, "store-run", str(first), "--as", "kept").returncode == 0
    kept = book / "figures/00-demo/runs/kept"
    before = snapshot(kept)

    again = dpbayes(book, "store-run", str(second), "--as", "kept")
    assert again.returncode == 2 and again.stderr.count("\n") == 1
    assert "exists" in again.stderr and "--force" in again.stderr
    foreign = dpbayes(book, "store-run", str(other), "--as", "kept")
    assert foreign.returncode == 2 and "a run of chapters/00-demo/00a-demo.ipynb" in foreign.stderr
    assert snapshot(kept) == before  # nothing touched

    forced = dpbayes(book, "store-run", str(second), "--as", "kept", "--force")
    assert forced.returncode == 0, forced.stderr
    assert json.loads((kept / "run.json").read_text())["parameters"] == {"eps": 2.0}


def test_update_stored_twice_changes_no_byte(book: Path) -> None:
    first = dpbayes(book, "run", "chapters/00-demo", "--update-stored", "--quiet")
    assert first.returncode == 0, first.stderr
    stored = snapshot(book / "figures") | snapshot(book / "chapters")
    payload = json.loads((book / "figures/00-demo/fig1-line.json").read_text())
    assert payload["data"]["noisy"] == float(f"{1 / 3:.12g}")
    second = dpbayes(book, "run", "chapters/00-demo", "--update-stored", "--quiet")
    assert second.returncode == 0, second.stderr
    assert snapshot(book / "figures") | snapshot(book / "chapters") == stored
    assert "kept the stored output of 1 timing cell(s)" in second.stdout
    assert "unchanged chapters/00-demo/00b-other.ipynb" in second.stdout
    # on request, the timing cell is refreshed (and only it differs)
    third = dpbayes(book, "run", "chapters/00-demo/00a-demo.ipynb", "--update-stored", "--refresh-volatile", "--quiet")
    assert third.returncode == 0, third.stderr
    after = snapshot(book / "figures") | snapshot(book / "chapters")
    assert [k for k in stored if stored[k] != after[k]] == ["00-demo/00a-demo.ipynb"]


def test_json_floats_have_fixed_precision() -> None:
    from dpbayes.book.figures import JSON_DIGITS, json_float

    assert JSON_DIGITS == 12
    assert json_float(1 / 3) == 0.333333333333
    assert json_float(1 / 3 + 1e-16) == json_float(1 / 3)
    assert json_float(1e-300 / 3) == float(f"{1e-300 / 3:.12g}")
