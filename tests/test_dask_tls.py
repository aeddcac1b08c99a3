"""Issue 28: the TLS cluster of rerun.md, made from its own lines, on 127.0.0.1.

The key and certificate come from rerun.md's ``openssl`` command (run with a temporary home
directory); the scheduler and the worker are started from rerun.md's ``dask scheduler`` and
``dask worker`` lines with ``SCHEDULER-HOST``/``WORKER-HOST`` replaced by 127.0.0.1 and free ports;
the client's settings are rerun.md's YAML file with the temporary home in place of ``/home/YOU``.
A two-value sweep of a tiny book then runs through the cluster. Checked as well: every socket the
scheduler and the worker listen on is on 127.0.0.1, the scheduler speaks TLS only, and a client
without the settings, or with a certificate of another authority, is refused in one line.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from test_cli import BODY, PARAMS
from test_doc_commands import logical_lines, shell_blocks
from tiny_book import write_tiny_book

pytestmark = pytest.mark.xdist_group("dask-tls")

ROOT = Path(__file__).resolve().parents[1]
RERUN = (ROOT / "rerun.md").read_text(encoding="utf-8")
DASK = str(Path(sys.executable).parent / "dask")
START_TIMEOUT = 120


def _documented(first_word: str) -> list[list[str]]:
    """The argv of every command of rerun.md's shell blocks whose first word ends in ``first_word``."""
    import shlex

    found = []
    for block in shell_blocks(RERUN):
        for line in logical_lines(block):
            if line.strip() and not line.strip().startswith("#"):
                argv = shlex.split(line, comments=True)
                if argv[0].endswith(first_word):
                    found.append(argv)
    return found


def _home(argv: list[str], home: Path) -> list[str]:
    return [str(home / a[2:]) if a.startswith("~/") else a for a in argv]


def _replace(argv: list[str], option: str, value: str) -> list[str]:
    """``argv`` with the value of ``option`` replaced."""
    assert option in argv, f"rerun.md's `{' '.join(argv)}` has no {option}"
    i = argv.index(option)
    return [*argv[:i + 1], value, *argv[i + 2:]]


def _listening(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every listening socket of a process and its descendants."""
    out = []
    with contextlib.suppress(psutil.NoSuchProcess):
        parent = psutil.Process(pid)
        for p in (parent, *parent.children(recursive=True)):
            with contextlib.suppress(psutil.NoSuchProcess):
                out += [(c.laddr.ip, c.laddr.port) for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
    return out


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in reversed(procs):
        with contextlib.suppress(psutil.NoSuchProcess):
            parent = psutil.Process(proc.pid)
            victims = [parent, *parent.children(recursive=True)]
            for v in victims:
                with contextlib.suppress(psutil.Error):
                    v.kill()
            psutil.wait_procs(victims, timeout=30)
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    """(scheduler address, home with the key, the client's Dask config directory, the processes)."""
    tmp = tmp_path_factory.mktemp("tls")
    home = tmp / "home"
    home.mkdir()
    # the key and certificate, with rerun.md's commands
    (keygen,) = _documented("openssl")
    (mkdir,) = _documented("mkdir")
    for argv in (mkdir, keygen):
        done = subprocess.run(_home(argv, home), cwd=home, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "HOME": str(home)})
        assert done.returncode == 0, done.stderr
    key = home / ".dask-tls/dask.key"
    assert key.stat().st_mode & 0o077 == 0, "the key must be readable by its owner alone"
    # the client's settings: rerun.md's YAML file
    (yaml_text,) = re.findall(r"```yaml\n(.*?)```", RERUN, flags=re.S)
    config = tmp / "dask-config"
    config.mkdir()
    (config / "dpbayes-tls.yaml").write_text(yaml_text.replace("/home/YOU", str(home)))
    # the scheduler and the worker, with rerun.md's lines on 127.0.0.1 and free ports
    (scheduler,) = [a for a in _documented("dask") if a[1] == "scheduler"]
    (worker,) = [a for a in _documented("dask") if a[1] == "worker"]
    scheduler = _replace(_replace(_replace(_home(scheduler, home), "--host", "127.0.0.1"), "--port", "0"),
                         "--dashboard-address", "127.0.0.1:0")
    file = tmp / "scheduler.json"
    env = {**os.environ, "DASK_CONFIG": str(tmp / "no-config")}  # the servers use their options only
    procs = [subprocess.Popen([DASK, *scheduler[1:], "--scheduler-file", str(file)], stdout=(tmp / "scheduler.log").open("w"),
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env)]
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not file.exists():
            assert procs[0].poll() is None and time.monotonic() < deadline, (tmp / "scheduler.log").read_text()
            time.sleep(0.1)
        address = json.loads(file.read_text())["address"]
        assert address.startswith("tls://127.0.0.1:"), address
        worker = _replace(_replace(_home(worker, home), "--host", "127.0.0.1"), "--nworkers", "1")
        assert worker[2] == "tls://SCHEDULER-HOST:8786", worker
        worker[2] = address
        procs.append(subprocess.Popen([DASK, *worker[1:]], stdout=(tmp / "worker.log").open("w"), stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True, env=env))
        yield address, home, config, procs
    finally:
        _stop(procs)


def _run(book: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpbayes", "run", "chapters/00-demo/00a-demo.ipynb", "--quiet", *args],
                          cwd=book, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "DASK_CONFIG": str(config)})


def test_a_sweep_runs_through_the_documented_tls_cluster(tls_cluster, tmp_path, monkeypatch):
    address, home, config, procs = tls_cluster
    monkeypatch.delenv("DPBAYES_SCHEDULER", raising=False)
    book = write_tiny_book(tmp_path, "00a-demo.ipynb", PARAMS, BODY, title="# Demo")
    result = _run(book, config, "-p", "eps", "0.5,2", "--scheduler", address)
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(next((book / "runs").rglob("summary.csv")).open()))
    assert [(r["eps"], r["status"]) for r in rows] == [("0.5", "ok"), ("2.0", "ok")]
    # nothing of the cluster listens beyond the loopback interface (the scheduler, its dashboard,
    # the nanny, the worker and the worker's status page)
    sockets = [s for proc in procs for s in _listening(proc.pid)]
    assert len(sockets) >= 4, sockets
    assert all(ip == "127.0.0.1" for ip, _ in sockets), sockets


def test_the_tls_scheduler_refuses_what_has_no_certificate_of_its_own(tls_cluster, tmp_path, monkeypatch):
    address, home, config, procs = tls_cluster
    monkeypatch.delenv("DPBAYES_SCHEDULER", raising=False)
    book = write_tiny_book(tmp_path, "00a-demo.ipynb", PARAMS, BODY, title="# Demo")
    # no settings: one line naming them, before any connection
    empty = tmp_path / "empty-config"
    empty.mkdir()
    result = _run(book, empty, "-p", "eps", "0.5,2", "--scheduler", address)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {address} is a TLS address, but Dask's configuration sets no distributed.comm.tls.ca-file, "
        "distributed.comm.tls.client.cert, distributed.comm.tls.client.key; see rerun.md, "
        "'Running on a Dask cluster', for the settings file"]
    assert not (book / "runs").exists()
    # a certificate of another authority, and plain TCP: the scheduler does not answer
    from dpbayes.core import executors

    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-days", "1", "-nodes", "-subj", "/CN=other",
                    "-keyout", str(other / "k.pem"), "-out", str(other / "c.pem")], check=True, capture_output=True)
    import dask
    import distributed  # noqa: F401 - its defaults in dask.config before the set below

    foreign = {"distributed.comm.tls.ca-file": str(other / "c.pem"), "distributed.comm.tls.client.cert": str(other / "c.pem"),
               "distributed.comm.tls.client.key": str(other / "k.pem")}
    with dask.config.set(foreign), pytest.raises(executors.SchedulerError, match="cannot reach the Dask scheduler at tls://"):
        with executors.connect(address, timeout=3):
            pass
    with pytest.raises(executors.SchedulerError, match="cannot reach the Dask scheduler at tcp://"):
        with executors.connect(address.replace("tls://", "tcp://"), timeout=3):
            pass
