"""Issue 18: the run command and the simulation study on a Dask cluster (loopback only).

A real ``dask scheduler`` and two ``dask worker`` processes are started on 127.0.0.1 (free ports
chosen by the scheduler) once for this module and stopped, with everything they started, at the end.
The tests run in one pytest-xdist group (``make unit`` uses ``--dist loadgroup``), so the cluster is
started once.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import numpy as np
import psutil
import pytest
from test_cli import BODY, PARAMS
from tiny_book import write_tiny_book

from dpbayes import executors, smc_study
from dpbayes.book import cli

pytestmark = pytest.mark.xdist_group("dask")

DASK = str(Path(sys.executable).parent / "dask")
START_TIMEOUT = 120  # seconds for the cluster to come up on a loaded machine
CONFIG = smc_study.StudyConfig(n=25, n_particles=40, mu_true=50.0, sigma_true=np.sqrt(10.0),
                               nonadaptive_halfwidth=10.0, mcmc_iter=200, mcmc_burn_in=50, store_every=5)
EPS_GRID, B_GRID = [2.0, 10.0], [0.12, 0.96]
# a replicate that takes a while (a second or more), so that a worker can be killed in the middle of one
SLOW = smc_study.StudyConfig(n=150, n_particles=300, mu_true=50.0, sigma_true=np.sqrt(10.0),
                             nonadaptive_halfwidth=10.0, methods=("SMC-adaptive", "SMC-nonadaptive"), store_every=50)


def _numbers(replicates):
    return [(r.eps_index, r.run, r.estimates, {k: v.tolist() for k, v in r.fisher.items()}) for r in replicates]


def _kill_tree(pid: int) -> None:
    """SIGKILL a process and everything it started (kernels of notebook tasks run in sessions of their own)."""
    try:
        parent = psutil.Process(pid)
        victims = [parent, *parent.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for v in victims:
        with contextlib.suppress(psutil.Error):
            v.kill()
    psutil.wait_procs(victims, timeout=30)


def _start_worker(scheduler_file: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen([DASK, "worker", "--scheduler-file", str(scheduler_file), "--host", "127.0.0.1",
                             "--nthreads", "1", "--no-nanny", "--no-dashboard"],
                            stdout=log.open("w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)


class Cluster:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.file = tmp / "scheduler.json"
        self.procs: list[subprocess.Popen] = []

    def start(self) -> None:
        self.procs.append(subprocess.Popen(
            [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(self.file)],
            stdout=(self.tmp / "scheduler.log").open("w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True))
        for i in range(2):
            self.add_worker()
        self.wait_for_workers(2)

    def add_worker(self) -> subprocess.Popen:
        proc = _start_worker(self.file, self.tmp / f"worker-{len(self.procs)}.log")
        self.procs.append(proc)
        return proc

    def client(self):
        import distributed

        deadline = time.monotonic() + START_TIMEOUT
        while not self.file.exists():  # written by the scheduler once it listens
            assert time.monotonic() < deadline, "the dask scheduler did not start"
            assert self.procs[0].poll() is None, (self.tmp / "scheduler.log").read_text()
            time.sleep(0.1)
        return distributed.Client(scheduler_file=str(self.file), timeout=START_TIMEOUT)

    @property
    def address(self) -> str:
        return json.loads(self.file.read_text())["address"]

    def wait_for_workers(self, n: int) -> None:
        with self.client() as c:
            c.wait_for_workers(n, timeout=START_TIMEOUT)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            _kill_tree(proc.pid)
            proc.wait(timeout=30)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("dask"))
    try:
        c.start()
        yield c
    finally:
        c.stop()


@pytest.fixture()
def no_env_scheduler(monkeypatch):
    monkeypatch.delenv(executors.SCHEDULER_ENV, raising=False)


def test_simulation_study_same_numbers_serial_processes_dask(cluster, monkeypatch, no_env_scheduler):
    serial = smc_study.simulation_study(CONFIG, EPS_GRID, B_GRID, n_runs=2)
    processes = smc_study.simulation_study(CONFIG, EPS_GRID, B_GRID, n_runs=2, n_jobs=2)
    progress = []
    dask = smc_study.simulation_study(CONFIG, EPS_GRID, B_GRID, n_runs=2, scheduler=cluster.address,
                                      progress=lambda done, total: progress.append((done, total)))
    local = smc_study.simulation_study(CONFIG, EPS_GRID, B_GRID, n_runs=2, scheduler="local:2")
    assert _numbers(processes) == _numbers(serial)
    assert _numbers(dask) == _numbers(serial)
    assert _numbers(local) == _numbers(serial)
    assert progress == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]  # counts finished cluster tasks
    np.testing.assert_array_equal(dask[0].latent_runs[0].stored_mu, serial[0].latent_runs[0].stored_mu)
    # DPBAYES_SCHEDULER (what a notebook under papermill sees) sends the replicates to the cluster too
    import distributed

    monkeypatch.setenv(executors.SCHEDULER_ENV, cluster.address)
    with cluster.client() as c, distributed.get_task_stream(c) as stream:
        via_env = smc_study.simulation_study(CONFIG, EPS_GRID, B_GRID, n_runs=1)
    assert _numbers(via_env) == _numbers([serial[0], serial[2]])
    assert sum(t["key"].startswith("replicate-") for t in stream.data) == 2


def _book(root: Path) -> Path:
    return write_tiny_book(root, "00a-demo.ipynb", PARAMS, BODY, title="# Demo")


def _outputs(nb_path: Path) -> list:
    return [c.get("outputs") for c in nbformat.read(nb_path, as_version=4).cells]


def _kernels(pids: list[int]) -> list[psutil.Process]:
    """The notebook kernels running under the given worker processes."""
    out = []
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            out += [p for p in psutil.Process(pid).children(recursive=True)
                    if any("ipykernel" in part for part in p.cmdline())]
    return out


def test_sweep_on_the_cluster_equals_the_serial_sweep_even_when_a_worker_dies(cluster, tmp_path, no_env_scheduler):
    """A two-value sweep, serial and on the cluster; a worker executing a notebook is killed (with its
    kernel) and the task re-runs on another: no partial result, and the same files bit for bit."""
    book = _book(tmp_path)
    cmd = [sys.executable, "-m", "dpbayes", "run", "chapters/00-demo/00a-demo.ipynb", "-p", "eps", "0.5,2", "--quiet"]
    with cluster.client() as c:
        workers = c.run(os.getpid)
    # both at once: the cluster's workers are separate processes
    serial = subprocess.Popen([*cmd, "--out", "runs/serial"], cwd=book, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dask = subprocess.Popen([*cmd, "--out", "runs/dask", "--scheduler", cluster.address], cwd=book,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not (busy := [pid for pid in workers.values() if _kernels([pid])]):  # a notebook runs on a worker
            assert dask.poll() is None and time.monotonic() < deadline, dask.stderr.read() if dask.poll() is not None else "no kernel"
            time.sleep(0.1)
        _kill_tree(busy[0])
        cluster.add_worker()  # the module's cluster keeps two workers
        out, err = dask.communicate(timeout=300)
        assert dask.returncode == 0, err
        out, err = serial.communicate(timeout=300)
        assert serial.returncode == 0, err
    finally:
        for proc in (serial, dask):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    cluster.wait_for_workers(2)
    a, b = book / "runs/serial", book / "runs/dask"
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())  # nothing partial, no .tmp-*
    assert len([f for f in files if f.suffix == ".ipynb"]) == 2
    for rel in files:
        if rel.suffix in (".json", ".csv", ".png"):  # figures, results, params, summary: bit for bit
            assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
        elif rel.suffix == ".ipynb":
            assert _outputs(a / rel) == _outputs(b / rel), rel
    params = json.loads(next(b.rglob("params.json")).read_text())
    assert params["notebook"] == "chapters/00-demo/00a-demo.ipynb"  # this machine's path, not the worker's
    rows = list(csv.DictReader(next(b.rglob("summary.csv")).open()))
    assert [r["status"] for r in rows] == ["ok", "ok"]


def test_ctrl_c_in_a_study_cancels_its_queued_tasks(cluster, no_env_scheduler):
    def interrupt(done: int, total: int) -> None:
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        smc_study.simulation_study(SLOW, EPS_GRID, B_GRID, n_runs=3, scheduler=cluster.address, progress=interrupt)
    with cluster.client() as c:  # the scheduler holds no task of the run any more
        deadline = time.monotonic() + 60
        while c.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert c.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) == 0


def test_ctrl_c_on_the_client_stops_the_notebooks_on_the_cluster(cluster, tmp_path, no_env_scheduler):
    book = write_tiny_book(tmp_path, "00a-slow.ipynb", "eps: float = 1.0  # privacy parameter; range (0, inf)\n",
                           "import time\nfor _ in range(3000):\n    time.sleep(0.1)\n")
    with cluster.client() as c:
        workers = list(c.run(os.getpid).values())
    proc = subprocess.Popen([sys.executable, "-m", "dpbayes", "run", "chapters/00-demo/00a-slow.ipynb", "-p", "eps", "1,2",
                             "--quiet", "--scheduler", cluster.address], cwd=book, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _kernels(workers):  # a notebook is executing on a worker
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() is not None else "no kernel"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "interrupted: nothing was written and nothing was stored"
    assert not (book / "runs").exists()
    deadline = time.monotonic() + 60  # the workers stop their kernels within about a second
    while _kernels(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _kernels(workers)


def _tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def _cli(book: Path, capsys, *args: str) -> tuple[int, list[str]]:
    old = Path.cwd()
    os.chdir(book)
    try:
        code = cli.main(["run", "chapters/00-demo/00a-demo.ipynb", "-p", "eps", "0.5,2", "--quiet", *args])
    finally:
        os.chdir(old)
    return code, capsys.readouterr().err.strip().splitlines()


def test_version_mismatch_is_one_line_exit_2_nothing_written(cluster, tmp_path, capsys, monkeypatch, no_env_scheduler):
    book = _book(tmp_path)
    before = _tree(book)
    real = executors._client_versions

    def older_here(packages):
        return real(packages) | {"dpbayes": "0.0.1"}

    monkeypatch.setattr(executors, "_client_versions", older_here)
    code, err = _cli(book, capsys, "--scheduler", cluster.address)
    assert code == 2
    import dpbayes

    assert len(err) == 1 and err[0].startswith("error: Dask worker tcp://127.0.0.1:"), err
    assert f"has dpbayes {dpbayes.__version__}, this client has dpbayes 0.0.1" in err[0]
    assert _tree(book) == before
    with pytest.raises(executors.SchedulerError, match="0.0.1"):
        smc_study.simulation_study(CONFIG, EPS_GRID, B_GRID, n_runs=1, scheduler=cluster.address)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("address, message", [
    ("no-port-here", "error: --scheduler must be a Dask scheduler address such as tcp://HOST:8786 or local:N, got 'no-port-here'"),
    ("local:0", "error: --scheduler local:N needs N workers in [1, 256], got 'local:0'"),
    ("unreachable", "error: cannot reach the Dask scheduler at tcp://127.0.0.1:"),
])
def test_bad_or_unreachable_scheduler_is_one_line_exit_2(address, message, tmp_path, capsys, monkeypatch, no_env_scheduler):
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT", 3.0)
    if address == "unreachable":
        address = f"tcp://127.0.0.1:{_closed_port()}"
    book = _book(tmp_path)
    before = _tree(book)
    code, err = _cli(book, capsys, "--scheduler", address)
    assert code == 2
    assert len(err) == 1 and err[0].startswith(message), err
    assert _tree(book) == before


def test_bad_environment_scheduler_fails_early(monkeypatch):
    monkeypatch.setenv(executors.SCHEDULER_ENV, "tcp://nohost")
    with pytest.raises(executors.SchedulerError, match="DPBAYES_SCHEDULER must be a Dask scheduler address"):
        smc_study.simulation_study(CONFIG, EPS_GRID, B_GRID, n_runs=1)
