"""Ctrl-C or SIGTERM during `python -m dpbayes run` (issue 15, item 4).

Required: every worker and kernel stops within 2 s, one line is printed, no kernel traceback reaches
the user, and what is left is either nothing or a sweep folder marked ``-incomplete`` whose
summary.csv says which runs finished. A notebook that sleeps in small steps stands in for a long
computation; the signal goes out once the wanted number of kernels have started. The stop time is
measured from the signal to the moment the command has exited and no process it started is left;
the assertion allows slack for a loaded CI machine (STOP_LIMIT), the measured times are printed.
A run killed outright (SIGKILL: it cannot tidy up) must not leave its notebooks running either: they
watch their parent and stop with their kernels on their own (KILLED_LIMIT).
"""

from __future__ import annotations

import contextlib
import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from tiny_book import sigint_as_at_a_terminal, write_tiny_book

REQUIRED = 2.0  # seconds (the requirement; typically measured 0.1-0.3 s)
STOP_LIMIT = REQUIRED + 2.0  # slack for a loaded 2-core CI machine

PARAMS = "x: int = 0  # seconds to sleep; range [0, 600]\n"
BODY = """import os, time
from pathlib import Path
if x:
    Path(os.environ["MARK_DIR"], f"started-{x}").touch()
for _ in range(x * 10):
    time.sleep(0.1)
print(x)
"""


@pytest.fixture()
def book(tmp_path: Path) -> Path:
    root = tmp_path / "book"
    (root / "marks").mkdir(parents=True)  # where the slow notebooks mark that they run
    return write_tiny_book(root, "00a-slow.ipynb", PARAMS, BODY)


def _gone(procs: list[psutil.Process]) -> bool:
    for p in procs:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            pass
    return True


def wait_for_kernels(proc: subprocess.Popen, marks: Path, started: int) -> list[psutil.Process]:
    """Wait until ``started`` slow notebooks have marked that they run; the processes ``proc`` started."""
    deadline = time.monotonic() + 120
    while len(list(marks.iterdir())) < started:
        assert time.monotonic() < deadline and proc.poll() is None, "the slow notebooks never started"
        time.sleep(0.05)
    children = psutil.Process(proc.pid).children(recursive=True)
    assert len(children) >= 2 * started  # a worker and its kernel per running notebook
    return children


def interrupt(book: Path, sig: int, started: int, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    """Start the run, wait until ``started`` slow kernels run, send ``sig`` as a terminal would."""
    (book / "tmp").mkdir(exist_ok=True)  # the run's $TMPDIR: checked empty afterwards (check_message)
    proc = subprocess.Popen([sys.executable, "-m", "dpbayes", "run", "chapters/00-demo", *args], cwd=book,
                            env={**os.environ, "MARK_DIR": str(book / "marks"), "TMPDIR": str(book / "tmp")},
                            stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=sigint_as_at_a_terminal)
    try:
        started_procs = wait_for_kernels(proc, book / "marks", started)
        t0 = time.monotonic()
        if sig == signal.SIGINT:
            os.killpg(proc.pid, sig)  # Ctrl-C: the terminal signals the foreground process group
        else:
            proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        while not _gone(started_procs) and time.monotonic() - t0 < 30:
            time.sleep(0.01)
        elapsed = time.monotonic() - t0
        assert _gone(started_procs), "processes left behind"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    print(f"stopped {len(started_procs)} processes in {elapsed:.2f} s ({signal.Signals(sig).name})")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), elapsed


def check_message(result: subprocess.CompletedProcess, elapsed: float, book: Path | None = None) -> str:
    assert result.returncode == 130, result.stderr
    if book is not None:  # nothing left in $TMPDIR: no kernel connection file (it holds the kernel's key), no scratch
        assert not list((book / "tmp").rglob("*")), sorted(map(str, (book / "tmp").rglob("*")))
    assert elapsed < STOP_LIMIT, f"took {elapsed:.2f} s to stop"
    text = result.stderr
    for noise in ("Traceback", "DeadKernelError", "AssertionError", "KeyboardInterrupt", "[IPKernelApp]", "papermill"):
        assert noise not in text, text
    lines = [ln for ln in text.replace("\r", "\n").splitlines() if ln.startswith("interrupted")]
    assert len(lines) == 1, text
    return lines[0]


def test_parallel_sweep_ctrl_c_keeps_a_marked_incomplete_sweep(book: Path) -> None:
    result, elapsed = interrupt(book, signal.SIGINT, 2, "-p", "x", "0,30,31,32,33", "--jobs", "2", "--quiet")
    line = check_message(result, elapsed, book)
    (sweep,) = (book / "runs").iterdir()
    assert sweep.name.endswith("-incomplete") and str(sweep.relative_to(book)) in line
    assert "1 of 5 runs done" in line
    with (sweep / "summary.csv").open() as fh:
        rows = {r["x"]: r["status"] for r in csv.DictReader(fh)}
    assert rows["0"] == "ok"
    assert sorted(rows[x] for x in ("30", "31")) == ["stopped (interrupted)"] * 2
    assert rows["32"] == rows["33"] == "not started (interrupted)"
    assert not [p for p in sweep.iterdir() if p.name.startswith(".tmp")]
    assert len([p for p in sweep.iterdir() if p.is_dir()]) == 1


def test_sequential_sweep_ctrl_c(book: Path) -> None:
    result, elapsed = interrupt(book, signal.SIGINT, 1, "-p", "x", "0,30,31")
    line = check_message(result, elapsed, book)
    (sweep,) = (book / "runs").iterdir()
    assert sweep.name.endswith("-incomplete") and "1 of 3 runs done" in line


def test_sigterm_on_a_single_run_leaves_nothing(book: Path) -> None:
    result, elapsed = interrupt(book, signal.SIGTERM, 1, "-p", "x", "30", "--quiet")
    line = check_message(result, elapsed, book)
    assert line == "interrupted: nothing was written and nothing was stored"
    assert not (book / "runs").exists()  # no hidden .tmp-* folders either


KILLED_LIMIT = 5.0  # seconds for the orphaned notebook processes to notice and stop (typically well under 1 s)


@pytest.mark.parametrize("args, started", [(("-p", "x", "30"), 1), (("-p", "x", "30,31", "--jobs", "2"), 2)],
                         ids=["single", "parallel-sweep"])
def test_a_killed_run_leaves_no_notebook_running(book: Path, args: tuple[str, ...], started: int) -> None:
    """SIGKILL of `python -m dpbayes run` (no chance to clean up): its notebook processes, which run in
    sessions of their own, notice that their parent is gone, stop with their kernels and remove their
    temporary run directories."""
    marks = book / "marks"
    (book / "tmp").mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "dpbayes", "run", "chapters/00-demo", *args, "--quiet"], cwd=book,
                            env={**os.environ, "MARK_DIR": str(marks), "TMPDIR": str(book / "tmp")}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    orphans: list[psutil.Process] = []
    try:
        orphans = wait_for_kernels(proc, marks, started)
        assert list((book / "runs").rglob(".tmp-*"))
        t0 = time.monotonic()
        proc.kill()  # this process only: what it started is left to itself
        proc.wait()
        while not _gone(orphans) and time.monotonic() - t0 < 3 * KILLED_LIMIT:
            time.sleep(0.01)
        elapsed = time.monotonic() - t0
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        leftover = [p for p in orphans if not _gone([p])]
        for p in leftover:  # nothing of this test may outlive it
            with contextlib.suppress(psutil.Error):
                p.kill()
    print(f"{len(orphans)} orphaned processes stopped in {elapsed:.2f} s")
    assert not leftover, f"{len(leftover)} of {len(orphans)} processes still running after {elapsed:.1f} s"
    assert elapsed < KILLED_LIMIT
    assert not list((book / "runs").rglob(".tmp-*"))  # no half-written run directory either
    deadline = time.monotonic() + KILLED_LIMIT  # the orphans' last act: removing their control files
    while list((book / "tmp").rglob("*")) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not list((book / "tmp").rglob("*")), "kernel connection files or control files left in $TMPDIR"
