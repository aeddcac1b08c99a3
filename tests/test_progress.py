"""dpbayes.book.progress and the run command's second progress bar."""

import json
import subprocess
import sys

import nbformat
import pytest
from tiny_book import write_tiny_book

from dpbayes.book import progress
from dpbayes.book.cli import LoopProgressBar


def test_no_listener_no_callback(monkeypatch):
    monkeypatch.delenv(progress.PROGRESS_FILE_ENV, raising=False)
    assert progress.reporter("loop") is None


def test_report_round_trip_is_atomic(monkeypatch, tmp_path):
    target = tmp_path / "progress.json"
    monkeypatch.setenv(progress.PROGRESS_FILE_ENV, str(target))
    report = progress.reporter("03b replicates")
    assert progress.read_report(target) is None  # nothing reported yet
    report(3, 120)
    report(4, 120)
    assert progress.read_report(target) == ("03b replicates", 4, 120)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["progress.json"]  # no temporary file left


def test_unreadable_report_is_none(tmp_path):
    (tmp_path / "half.json").write_text('{"label": "x", "do')
    assert progress.read_report(tmp_path / "half.json") is None
    assert progress.read_report(tmp_path / "missing.json") is None


@pytest.mark.parametrize("label", ["", None, 3])
def test_bad_label(label):
    with pytest.raises(ValueError, match="label must be a non-empty string"):
        progress.reporter(label)


def test_bar_follows_the_reports_and_resets_for_a_new_loop(tmp_path):
    target = tmp_path / "progress.json"
    with LoopProgressBar(target, poll_seconds=0.01) as watcher:
        target.write_text(json.dumps({"label": "first", "done": 2, "total": 5}))
        watcher._show()
        assert (watcher._bar.n, watcher._bar.total, watcher._bar.desc) == (2, 5, "first")
        target.write_text(json.dumps({"label": "second", "done": 1, "total": 7}))
    # the final state is shown on exit even without another poll
    assert (watcher._bar.n, watcher._bar.total) == (1, 7)
    assert watcher._bar.desc.startswith("second")


LOOP_NOTEBOOK = """from dpbayes.book import progress
report = progress.reporter("demo loop")
for i in range(3):
    if report is not None:
        report(i + 1, 3)
print("done", report is not None)
"""


def test_run_shows_the_loop_bar_and_keeps_it_out_of_the_notebook(tmp_path):
    write_tiny_book(tmp_path, "00a-loop.ipynb", "seed: int = 1  # unused; range [0, inf)\n", LOOP_NOTEBOOK)
    result = subprocess.run([sys.executable, "-m", "dpbayes", "run", "chapters/00-demo/00a-loop.ipynb"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "demo loop" in result.stderr and "3/3" in result.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert sorted(p.name for p in run_dir.iterdir()) == ["00a-loop.ipynb", "params.json"]  # no report file
    executed = nbformat.read(run_dir / "00a-loop.ipynb", as_version=4)
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert [o.get("text") for o in outputs] == ["done True\n"]
    # --quiet: no listener, so the notebook's callback is None
    quiet = subprocess.run([sys.executable, "-m", "dpbayes", "run", "chapters/00-demo/00a-loop.ipynb", "-p", "seed", "2",
                            "--quiet"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0, quiet.stderr
    assert "demo loop" not in quiet.stderr
