"""Where independent tasks run: this process, local worker processes, or a Dask cluster.

The parallel loops of the library (the replicates of :func:`dpbayes.smc.study.simulation_study`, the
designs of :mod:`dpbayes.smc.designs`: :func:`map_tasks`) and the run command's notebooks are lists of
independent tasks, each seeding itself from its parameters, so the numbers do not depend on where a
task runs. This module says where they run:

* nothing given: as before (this process, or ``n_jobs`` local processes);
* a *scheduler*: ``"tls://HOST:PORT"`` or ``"tcp://HOST:PORT"`` (any address of a running
  ``dask scheduler`` with workers connected: ``dask worker tls://HOST:PORT``), or ``"local:N"`` for a
  ``distributed.LocalCluster`` of N worker processes on this machine (with the Dask dashboard), all
  of whose servers listen on 127.0.0.1 only;
* a ``tls://`` scheduler is reached with the client certificate of Dask's configuration
  (``distributed.comm.tls.ca-file``, ``distributed.comm.tls.client.cert``/``key``; rerun.md shows the
  recipe: whoever reaches a scheduler without TLS runs code on its workers);
* the environment variable ``DPBAYES_SCHEDULER`` gives the scheduler when the caller gives none, so a
  notebook executed by papermill uses a cluster without a new parameter.

Within one process, :func:`thread_map` runs a list of tasks that release the GIL (NumPy on arrays, the
``nogil`` compiled kernels) on a few threads, results in order (``DPBAYES_THREADS`` sets how many), and
:func:`one_blas_thread` keeps the BLAS library on one thread where its threads would only change the bits
and cost time (many small calls, as in L-BFGS-B).

A worker needs the same ``dpbayes`` and the same versions of the pinned packages
(``requirements.txt``) as the client, and nothing else: no working tree, no shared directory (tasks
and results travel as data). :func:`connect` checks the versions before any task is submitted.
A task whose worker dies is re-run on another worker by the scheduler (up to Dask's
``distributed.scheduler.allowed-failures`` times); beyond that the run fails with
:class:`WorkerLost`. Ctrl-C while waiting cancels every task of the run on the cluster.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

from dpbayes.core._extras import require
from dpbayes.core.validation import check_int

__all__ = ["map_tasks", "thread_map", "thread_count", "one_blas_thread", "THREADS_ENV", "SCHEDULER_ENV", "SchedulerError", "WorkerLost", "resolve_scheduler", "check_scheduler", "connect",
           "check_versions", "map_on_cluster", "PINNED_PACKAGES"]

SCHEDULER_ENV = "DPBAYES_SCHEDULER"
#: The only interface the servers of a ``local:N`` cluster listen on.
LOOPBACK = "127.0.0.1"
#: Seconds to wait for the scheduler to answer and for a first worker to be connected.
CONNECT_TIMEOUT = 10.0

#: Packages whose versions must be the same on the client and on every worker: the library, what
#: computes the numbers, what executes notebooks, and what moves tasks and results.
PINNED_PACKAGES = ("dpbayes", "numpy", "scipy", "cvxpy", "matplotlib", "pandas", "papermill", "nbclient",
                   "ipykernel", "dask", "distributed", "cloudpickle", "msgpack", "tornado")

_ADDRESS = re.compile(r"^(?:(?P<scheme>tcp|tls|ws|wss)://)?(?P<host>\[[0-9a-fA-F:]+\]|[A-Za-z0-9.\-_]+):(?P<port>\d{1,5})$")
_LOCAL = re.compile(r"^local:(?P<n>\d+)$")


class SchedulerError(ValueError):
    """The scheduler cannot be used (bad address, unreachable, no workers, version mismatch): one line."""


class WorkerLost(RuntimeError):
    """A task lost its worker more often than the scheduler allows; nothing of that task was returned.

    ``index`` is the task's position in the tasks of :func:`map_on_cluster`.
    """

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


def resolve_scheduler(scheduler: str | None) -> str | None:
    """``scheduler``, else ``$DPBAYES_SCHEDULER``, else None (local execution); checked."""
    if scheduler is None:
        scheduler = os.environ.get(SCHEDULER_ENV) or None
        if scheduler is None:
            return None
        return check_scheduler(scheduler, SCHEDULER_ENV)
    return check_scheduler(scheduler)


def check_scheduler(text: str, name: str = "scheduler") -> str:
    """A scheduler address ``[tcp://]HOST:PORT`` or ``local:N``; raises :class:`SchedulerError` otherwise."""
    if not isinstance(text, str):
        raise SchedulerError(f"{name} must be an address such as tcp://HOST:8786 or local:N, got {text!r}")
    local = _LOCAL.match(text)
    if local:
        if not 1 <= int(local["n"]) <= 256:
            raise SchedulerError(f"{name} local:N needs N workers in [1, 256], got {text!r}")
        return text
    m = _ADDRESS.match(text)
    if not m or not 1 <= int(m["port"]) <= 65535:
        raise SchedulerError(f"{name} must be a Dask scheduler address such as tcp://HOST:8786 or local:N, got {text!r}")
    return text if m["scheme"] else f"tcp://{text}"


def _client_versions(packages: Sequence[str]) -> dict[str, str | None]:
    get_versions = require("distributed.versions", "dpbayes.core.executors").get_versions

    return dict(get_versions(list(packages))["packages"])


def check_versions(client: Any, packages: Sequence[str] = PINNED_PACKAGES) -> None:
    """Raise :class:`SchedulerError` naming the first package whose version differs on a worker."""
    mine = _client_versions(packages)
    theirs = client.get_versions(packages=list(packages))
    for address, info in sorted(theirs["workers"].items()):
        pkgs = info.get("packages", {}) if isinstance(info, dict) else {}
        for pkg in ("python", *packages):
            want, got = mine.get(pkg), pkgs.get(pkg)
            if want != got:
                raise SchedulerError(
                    f"Dask worker {address} has {pkg} {got or 'not installed'}, this client has {pkg} "
                    f"{want or 'not installed'}; every worker needs the same dpbayes and pinned packages (requirements.txt)")


#: Dask's configuration keys of the client's TLS settings (``tls://`` scheduler addresses).
TLS_SETTINGS = {"tls_ca_file": "distributed.comm.tls.ca-file", "tls_client_cert": "distributed.comm.tls.client.cert",
                "tls_client_key": "distributed.comm.tls.client.key"}


def _security(address: str) -> Any:
    """The ``distributed.Security`` of this client, from Dask's configuration (files in
    ``~/.config/dask`` or ``$DASK_CONFIG``, or ``DASK_DISTRIBUTED__COMM__TLS__...`` variables).

    A ``tls://`` address needs the CA file, the client certificate and its key: raises
    :class:`SchedulerError` naming the missing settings (Dask itself would fail with a TypeError)
    or a file that cannot be read.
    """
    from distributed.security import Security

    security = Security()
    if not address.startswith("tls://"):
        return security
    missing = [key for attr, key in TLS_SETTINGS.items() if not getattr(security, attr)]
    if missing:
        raise SchedulerError(f"{address} is a TLS address, but Dask's configuration sets no {', '.join(missing)}; "
                             "see rerun.md, 'Running on a Dask cluster', for the settings file")
    for attr, key in TLS_SETTINGS.items():
        value = getattr(security, attr)
        if "\n" not in value and not os.access(value, os.R_OK):  # a path (Dask also takes PEM text)
            raise SchedulerError(f"{key} is {value}, which cannot be read")
    return security


@contextlib.contextmanager
def connect(scheduler: str, timeout: float | None = None) -> Iterator[Any]:
    """A ``distributed.Client`` for ``scheduler`` (checked, reachable, with workers of the same versions).

    ``local:N`` starts a ``LocalCluster`` of N single-threaded worker processes for the duration.
    Raises :class:`SchedulerError` (one line) when the scheduler is unreachable within ``timeout``
    seconds (default ``CONNECT_TIMEOUT`` = 10), no worker connects within ``timeout`` seconds, or a worker's versions differ.
    """
    distributed = require("distributed", "dpbayes.core.executors (a Dask cluster)")

    address = check_scheduler(scheduler)
    timeout = CONNECT_TIMEOUT if timeout is None else timeout
    with contextlib.ExitStack() as stack:
        local = _LOCAL.match(address)
        if local:
            # every server of the cluster (scheduler, dashboard, workers, nannies) on the loopback
            # interface only: nothing of it is reachable from another machine
            cluster = stack.enter_context(distributed.LocalCluster(
                n_workers=int(local["n"]), threads_per_worker=1, processes=True, host=LOOPBACK,
                dashboard_address=f"{LOOPBACK}:0", worker_dashboard_address=None))
            client = stack.enter_context(distributed.Client(cluster))
        else:
            security = _security(address)
            try:
                client = distributed.Client(address, timeout=timeout, security=security)
            except (OSError, TimeoutError) as exc:
                hint = ("is `dask scheduler` running there, with a certificate signed by "
                        f"{security.tls_ca_file}?" if address.startswith("tls://") else
                        "is `dask scheduler` running there?")
                raise SchedulerError(f"cannot reach the Dask scheduler at {address} within {timeout:g} s "
                                     f"({type(exc).__name__}); {hint}") from None
            stack.enter_context(client)
            try:
                client.wait_for_workers(1, timeout=timeout)
            except TimeoutError:
                raise SchedulerError(f"no Dask worker is connected to {address} (waited {timeout:g} s); "
                                     f"start one with `dask worker {address}`") from None
        check_versions(client)
        yield client


def map_on_cluster(client: Any, fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]],
                   done: Callable[[int, Any], None] | None = None, label: str = "dpbayes") -> list[Any]:
    """``[fn(*task) for task in tasks]`` on the cluster of ``client``, in the order of ``tasks``.

    ``done(index, result)`` is called in this process as each task finishes (in completion order), so
    a progress bar counts finished cluster tasks and a caller can write each result as it arrives.
    A task whose worker dies is re-run elsewhere by the scheduler; past Dask's allowed failures this
    raises :class:`WorkerLost`, after passing to ``done`` the tasks that had finished meanwhile (so that
    a caller writing results as they arrive keeps every finished one). On any exception here (Ctrl-C
    included) every task of this call that has not finished is cancelled on the cluster before the
    exception propagates.
    """
    import uuid

    distributed = require("distributed", "dpbayes.core.executors (a Dask cluster)")

    run = uuid.uuid4().hex[:8]
    futures = [client.submit(fn, *task, key=f"{label}-{run}-{i}", pure=False) for i, task in enumerate(tasks)]
    index = {f.key: i for i, f in enumerate(futures)}
    results: list[Any] = [None] * len(futures)
    delivered: set[int] = set()

    def deliver(i: int) -> None:
        results[i] = futures[i].result()
        futures[i].release()
        delivered.add(i)
        if done is not None:
            done(i, results[i])

    try:
        for future in distributed.as_completed(futures):
            i = index[future.key]
            try:
                deliver(i)
            except distributed.KilledWorker as exc:
                for j, other in enumerate(futures):  # finished, but not yet reached by as_completed
                    if j not in delivered and other.status == "finished":
                        deliver(j)
                failures = getattr(exc, "allowed_failures", None)
                last = getattr(getattr(exc, "last_worker", None), "address", "?")
                times = f"{failures + 1} time{'s' if failures else ''}" if isinstance(failures, int) else "too often"
                raise WorkerLost(f"task {i + 1} of {len(futures)} lost its Dask worker {times}, last {last} "
                                 "(more than distributed.scheduler.allowed-failures)", index=i) from None
    except BaseException:
        client.cancel([f for f in futures if not f.done()], force=True)
        raise
    return results


def map_tasks(
    fn: Callable[..., Any],
    tasks: Sequence[tuple[Any, ...]],
    n_jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
    scheduler: str | None = None,
    label: str = "task",
) -> list[Any]:
    """``[fn(*task) for task in tasks]`` on the executor the study's replicates use, in task order.

    The choice :func:`dpbayes.smc.study.simulation_study` makes for its replicates: a Dask cluster when ``scheduler`` (or the environment
    variable ``DPBAYES_SCHEDULER``) names one, else ``n_jobs`` spawned local processes, else (``n_jobs = 1``)
    this process. ``fn`` must be a module-level function of self-seeded tasks, so that the results do
    not depend on where or in which order the tasks run.

    Parameters
    ----------
    fn : callable
        Picklable function applied to each task's arguments.
    tasks : sequence of tuple
        Positional arguments, one tuple per task.
    n_jobs : int
        Worker processes (ignored on a cluster).
    progress : callable, optional
        ``progress(0, total)`` before the first task and ``progress(done, total)`` after each one.
    scheduler : str, optional
        As in :func:`dpbayes.smc.study.simulation_study`.
    label : str
        Prefix of the cluster task keys.

    Returns
    -------
    list
        One result per task, in the order of ``tasks``.
    """
    check_int("n_jobs", n_jobs, minimum=1)
    address = resolve_scheduler(scheduler)
    tasks = list(tasks)
    if progress is not None:
        progress(0, len(tasks))

    def collect(results: Iterable[Any]) -> list[Any]:
        out: list[Any] = []
        for result in results:
            out.append(result)
            if progress is not None:
                progress(len(out), len(tasks))
        return out

    if address is not None:
        finished = 0

        def count(index: int, result: Any) -> None:
            nonlocal finished
            finished += 1
            if progress is not None:
                progress(finished, len(tasks))

        with connect(address) as client:
            return map_on_cluster(client, fn, tasks, done=count, label=label)
    if n_jobs == 1 or len(tasks) <= 1:
        return collect(fn(*task) for task in tasks)  # lazily: progress follows the work
    # spawn, not fork: the caller may be a Jupyter kernel with live threads
    with ProcessPoolExecutor(max_workers=min(n_jobs, len(tasks)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(fn, *task) for task in tasks]
        return collect(fut.result() for fut in futures)


#: Environment variable: how many threads :func:`thread_map` uses (``1``: none, the calling thread only).
THREADS_ENV = "DPBAYES_THREADS"


def thread_count() -> int:
    """Threads for :func:`thread_map`: ``DPBAYES_THREADS`` if set (1-256), else the CPUs this process may use (at most 8)."""
    text = os.environ.get(THREADS_ENV, "").strip()
    if text:
        if not text.isdigit() or not 1 <= int(text) <= 256:
            raise ValueError(f"{THREADS_ENV} must be an integer in [1, 256], got {text!r}")
        return int(text)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


def thread_map(fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[Any]:
    """``map(fn, items)`` on a pool of :func:`thread_count` threads, results in the order of ``items``.

    For work that releases the GIL (NumPy on arrays, the ``nogil`` compiled kernels): each item's result is
    what one thread would compute, and the caller combines them in order, so the bits do not depend on the
    number of threads. With one thread (or one item) it runs in the calling thread.
    """
    threads = min(thread_count(), len(items))
    if threads <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="dpbayes") as pool:
        yield from pool.map(fn, items)


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Within the block, the BLAS libraries loaded (OpenBLAS, MKL, BLIS) use one thread (threadpoolctl's
    ``threadpool_limits``; the setting from before is restored at its end, also on an error).

    A threaded BLAS splits a dot product or a matrix-vector product between its threads, and so sums in an
    order that depends on how many it has: a result computed inside the block has the same bits on a machine
    of 2 cores and of 64. Many small calls (L-BFGS-B's level-1 operations on ``10^4`` entries) also run faster
    on one thread, whose caller does not wait for the others to wake: the minimax solver at ``n = 10^4``, ``eps
    = 0.1`` took 0.87 [0.85, 0.90] times as long as with OpenBLAS's two threads on an idle 2-core machine, and
    0.33 [0.30, 0.37] times with another process spinning on a core (6 interleaved pairs each,
    ``benchmarks/bench_blas_threads.py``, record ``benchmarks/results/minimax-blas-threads.json``). The limit is
    the process's, set from the main thread: OpenBLAS 0.3.31 ignores a limit set from another thread (measured),
    so a block entered elsewhere changes nothing. Also a decorator (``@one_blas_thread()``): each call of the
    function runs in a block of its own.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
