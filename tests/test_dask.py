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
from typing import Any

import nbformat
import numpy as np
import psutil
import pytest
from test_cli import BODY, PARAMS
from test_interrupt import BODY as SLOW_BODY
from test_interrupt import PARAMS as SLOW_PARAMS
from tiny_book import sigint_as_at_a_terminal, write_tiny_book

from dpbayes.core import executors
from dpbayes.smc import study as smc_study
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


def _start_worker(scheduler_file: Path, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([DASK, "worker", "--scheduler-file", str(scheduler_file), "--host", "127.0.0.1",
                             "--nthreads", "1", "--no-nanny", "--no-dashboard", "--dashboard-address", "127.0.0.1:0"],
                            stdout=log.open("w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, env=env)


class Cluster:
    """A scheduler and two workers on 127.0.0.1; ``env``: their environment (default: this process's)."""

    def __init__(self, tmp: Path, env: dict[str, str] | None = None) -> None:
        self.tmp = tmp
        self.env = env
        self.file = tmp / "scheduler.json"
        self.procs: list[subprocess.Popen] = []

    def start(self) -> None:
        self.procs.append(subprocess.Popen(
            # --no-dashboard alone still serves the status page on every interface: bind it too
            [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--dashboard-address", "127.0.0.1:0",
             "--scheduler-file", str(self.file)],
            stdout=(self.tmp / "scheduler.log").open("w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env=self.env))
        for i in range(2):
            self.add_worker()
        self.wait_for_workers(2)
        opened = [(pid, ip, port) for proc in self.procs for pid, ip, port in _listening(proc.pid)]
        assert opened and all(ip == "127.0.0.1" for _, ip, _ in opened), opened  # nothing beyond loopback

    def add_worker(self) -> subprocess.Popen:
        proc = _start_worker(self.file, self.tmp / f"worker-{len(self.procs)}.log", self.env)
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
    tmp = tmp_path_factory.mktemp("dask")
    (tmp / "scratch").mkdir()  # the workers' temporary directories: checked for leftovers
    c = Cluster(tmp, env={**os.environ, "TMPDIR": str(tmp / "scratch")})
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
    """A two-value sweep, serial and on the cluster; a worker executing a notebook is killed (SIGKILL to the
    worker process alone) and the task re-runs on another: the notebook it ran stops with its kernel and
    leaves no scratch, no partial result, and the same files bit for bit."""
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
        orphans = psutil.Process(busy[0]).children(recursive=True)  # the notebook's process and its kernel
        os.kill(busy[0], signal.SIGKILL)
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
    assert _gone(orphans)  # long before the re-run has finished
    assert not list((cluster.tmp / "scratch").glob("dpbayes-task-*"))
    a, b = book / "runs/serial", book / "runs/dask"
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())  # nothing partial, no .tmp-*
    assert len([f for f in files if f.suffix == ".ipynb"]) == 2
    for rel in files:
        if rel.name == "params.json":  # the same parameters; each run's own wall time and load
            pa, pb = (json.loads((d / rel).read_text()) for d in (a, b))
            assert pa.pop("execution")["wall_seconds"] > 0 and pb.pop("execution")["wall_seconds"] > 0
            assert pa == pb, rel
        elif rel.suffix in (".json", ".csv", ".png"):  # figures, results, summary: bit for bit
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
                            stderr=subprocess.PIPE, text=True, preexec_fn=sigint_as_at_a_terminal)
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


def _listening(pid: int | None = None) -> set[tuple[int, str, int]]:
    """(pid, address, port) of every listening socket of a process (default: this one) and its descendants."""
    me = psutil.Process(pid)
    out = set()
    for p in (me, *me.children(recursive=True)):
        with contextlib.suppress(psutil.NoSuchProcess):
            out |= {(p.pid, c.laddr.ip, c.laddr.port) for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
    return out


def test_a_local_cluster_listens_on_loopback_only(no_env_scheduler):
    """`--scheduler local:N` (and DPBAYES_SCHEDULER=local:N in a kernel) starts its scheduler, its
    dashboard, the nannies and the workers on 127.0.0.1: nothing of it is reachable from another machine."""
    from urllib.parse import urlsplit

    before = _listening()
    with executors.connect("local:2") as client:
        opened = _listening() - before
        scheduler = urlsplit(client.scheduler.address)
        dashboard = urlsplit(client.dashboard_link)
        workers = [urlsplit(w) for w in client.scheduler_info()["workers"]]
    assert all(ip == "127.0.0.1" for _, ip, _ in opened), sorted(opened)
    ports = {port for _, _, port in opened}
    assert {scheduler.port, dashboard.port, *(w.port for w in workers)} <= ports, (sorted(opened), scheduler, dashboard)
    assert len({pid for pid, _, _ in opened}) == 3  # this process (scheduler, nannies) and two workers
    assert dashboard.hostname == "127.0.0.1"


def test_bad_environment_scheduler_fails_early(monkeypatch):
    monkeypatch.setenv(executors.SCHEDULER_ENV, "tcp://nohost")
    with pytest.raises(executors.SchedulerError, match="DPBAYES_SCHEDULER must be a Dask scheduler address"):
        smc_study.simulation_study(CONFIG, EPS_GRID, B_GRID, n_runs=1)


# ------------------------------------------------------------------ a task lost its worker too often
LOST = "failed (lost its Dask worker)"
CANCELLED = "not started or cancelled (a run lost its Dask worker)"


@pytest.fixture()
def fake_cluster(monkeypatch):
    """``run --scheduler`` against a fake cluster whose map returns the tasks ``finish`` (executed
    nowhere: a made-up notebook and results) in that order, then raises :class:`executors.WorkerLost`
    for task ``lose``; yields the run's cancel events, to check that the running notebooks are told to stop."""
    import distributed

    events: list[Any] = []

    class Event:
        def __init__(self, name: str, client: Any = None) -> None:
            self.name, self.is_set = name, False
            events.append(self)

        def set(self) -> None:
            self.is_set = True

    @contextlib.contextmanager
    def cluster(scheduler, several):
        yield object()

    def setup(finish: list[int], lose: int) -> list[Any]:
        def fake_map(client, fn, tasks, done=None, label=""):
            for i in finish:
                name, values = tasks[i][0], tasks[i][2]
                done(i, {"status": "ok", "files": {name: b"{}\n", "figures/results-demo.json": json.dumps(values).encode()}})
            raise executors.WorkerLost(f"task {lose + 1} of {len(tasks)} lost its Dask worker 1 time", index=lose)

        monkeypatch.setattr(executors, "map_on_cluster", fake_map)
        return events

    monkeypatch.setattr(distributed, "Event", Event)
    monkeypatch.setattr(cli, "_cluster", cluster)
    return setup


def test_worker_lost_in_a_sweep_keeps_an_incomplete_sweep_with_its_summary(fake_cluster, tmp_path, capsys, no_env_scheduler):
    events = fake_cluster(finish=[2, 0], lose=1)
    book = _book(tmp_path)
    old = Path.cwd()
    os.chdir(book)
    try:
        code = cli.main(["run", "chapters/00-demo/00a-demo.ipynb", "-p", "eps", "0.5,1,2,4", "--quiet",
                         "--scheduler", "tcp://127.0.0.1:9"])
    finally:
        os.chdir(old)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    (sweep,) = (book / "runs").iterdir()
    assert sweep.name.endswith("-incomplete")
    assert len(err) == 1 and err[0].startswith('error: 00a-demo.ipynb {"eps": 1.0}: task 2 of 4 lost its Dask worker'), err
    assert err[0].endswith(f"incomplete sweep kept in {sweep.relative_to(book)} (2 of 4 runs done, "
                           "summary.csv lists which); nothing was stored"), err
    rows = list(csv.DictReader((sweep / "summary.csv").open()))
    assert [(r["eps"], r["status"]) for r in rows] == [("0.5", "ok"), ("1.0", LOST), ("2.0", "ok"), ("4.0", CANCELLED)]
    assert [r["demo.eps"] for r in rows] == ["0.5", "", "2.0", ""]  # the finished runs' results
    assert sorted(p.name for p in sweep.iterdir()) == sorted([rows[0]["run_dir"], rows[2]["run_dir"], "summary.csv"])
    assert [e.is_set for e in events] == [True]  # the notebooks still running elsewhere stop


def test_worker_lost_before_any_run_finished_leaves_nothing(fake_cluster, tmp_path, capsys, no_env_scheduler):
    fake_cluster(finish=[], lose=0)
    book = _book(tmp_path)
    before = _tree(book)
    code, err = _cli(book, capsys, "--scheduler", "tcp://127.0.0.1:9")
    assert code == 1
    assert len(err) == 1 and err[0].startswith('error: 00a-demo.ipynb {"eps": 0.5}: task 1 of 2 lost its Dask worker'), err
    assert err[0].endswith(": nothing was written and nothing was stored"), err
    assert _tree(book) == before


def test_worker_lost_in_a_chapter_run_stores_nothing(fake_cluster, tmp_path, capsys, no_env_scheduler):
    """--update-stored on a chapter: the notebook that finished is not stored when another lost its worker."""
    fake_cluster(finish=[0], lose=1)
    book = _book(tmp_path)
    second = book / "chapters/00-demo/00b-demo.ipynb"
    second.write_bytes((book / "chapters/00-demo/00a-demo.ipynb").read_bytes())
    stored = {p: p.read_bytes() for p in (book / "chapters/00-demo").iterdir()}
    old = Path.cwd()
    os.chdir(book)
    try:
        code = cli.main(["run", "chapters/00-demo", "--update-stored", "--quiet", "--scheduler", "tcp://127.0.0.1:9"])
    finally:
        os.chdir(old)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert len(err) == 1 and err[0].startswith("error: 00b-demo.ipynb (defaults): task 2 of 2 lost its Dask worker"), err
    assert "1 of 2 notebooks finished" in err[0] and err[0].endswith("nothing was stored"), err
    assert {p: p.read_bytes() for p in (book / "chapters/00-demo").iterdir()} == stored
    assert not (book / "figures").exists()
    (run,) = (book / "runs").iterdir()  # the finished run, complete; nothing of the lost one
    assert run.name.startswith("00a-demo-") and (run / "params.json").exists()


def _gone(procs: list[psutil.Process]) -> bool:
    """No process of ``procs`` runs any more (a zombie waits for a parent that is gone: it runs nothing)."""
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            if p.status() != psutil.STATUS_ZOMBIE:
                return False
    return True


def test_a_worker_lost_for_good_ends_the_sweep_incomplete_and_its_notebook_stops(tmp_path, no_env_scheduler):
    """End to end, on a cluster whose scheduler allows no lost worker (allowed-failures 0): a sweep of three
    notebooks, the first finishes, the two slow ones run; the Dask worker process of one (only that
    process, as the OOM killer would) is SIGKILLed. Its notebook and kernel stop within seconds and remove
    their scratch; the run ends with one line, exit code 1 and an -incomplete sweep whose summary.csv
    marks each run; the other worker's notebook is cancelled."""
    marks, scratch = tmp_path / "marks", tmp_path / "scratch"
    marks.mkdir()
    scratch.mkdir()
    (tmp_path / "book").mkdir()
    book = write_tiny_book(tmp_path / "book", "00a-slow.ipynb", SLOW_PARAMS, SLOW_BODY)
    env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0", "MARK_DIR": str(marks), "TMPDIR": str(scratch)}
    (tmp_path / "dask").mkdir()
    strict = Cluster(tmp_path / "dask", env=env)
    proc = None
    try:
        strict.start()
        workers = [p.pid for p in strict.procs[1:]]
        proc = subprocess.Popen([sys.executable, "-m", "dpbayes", "run", "chapters/00-demo/00a-slow.ipynb", "-p", "x", "0,30,31",
                                 "--quiet", "--scheduler", strict.address], cwd=book, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + START_TIMEOUT
        # both slow notebooks run (one per worker), and the quick one has been written on this side
        while len(list(marks.iterdir())) < 2 or not list((book / "runs").glob("*/00a-slow-*")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() is not None else "not started"
            time.sleep(0.1)
        victim, other = workers
        orphans = psutil.Process(victim).children(recursive=True)
        assert _kernels([victim]) and _kernels([other]) and len(orphans) >= 2  # a notebook process and its kernel
        t0 = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        while not _gone(orphans) and time.monotonic() - t0 < 15:  # the slow notebooks would sleep for 30 s
            time.sleep(0.05)
        stopped_in = time.monotonic() - t0
        out, err = proc.communicate(timeout=120)
        ended_in = time.monotonic() - t0
        deadline = time.monotonic() + 30  # the cancelled notebook stops within about a second
        while (_kernels([other]) or list(scratch.glob("dpbayes-task-*"))) and time.monotonic() < deadline:
            time.sleep(0.1)
        print(f"the lost worker's {len(orphans)} processes stopped in {stopped_in:.2f} s; the run ended in {ended_in:.2f} s")
        assert _gone(orphans) and stopped_in < 5.0, f"the killed worker's notebook ran on for {stopped_in:.1f} s"
        assert not _kernels([other])
        assert not list(scratch.glob("dpbayes-task-*"))  # neither task left its scratch directory
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        strict.stop()
    assert proc.returncode == 1, err
    lines = err.strip().splitlines()
    (sweep,) = (book / "runs").iterdir()
    assert sweep.name.endswith("-incomplete")
    assert lines[-1].startswith('error: 00a-slow.ipynb {"x": 3') and " lost its Dask worker 1 time, last tcp://127.0.0.1:" in lines[-1]
    assert lines[-1].endswith(f"incomplete sweep kept in {sweep.relative_to(book)} (1 of 3 runs done, summary.csv lists which); "
                              "nothing was stored"), lines
    assert len(lines) == 1, err
    rows = {r["x"]: r["status"] for r in csv.DictReader((sweep / "summary.csv").open())}
    assert rows["0"] == "ok" and sorted([rows["30"], rows["31"]]) == sorted([LOST, CANCELLED])
    assert sorted(p.name for p in sweep.iterdir()) == sorted([next(sweep.glob("00a-slow-*")).name, "summary.csv"])
