"""Executing planned runs (:mod:`dpbayes.book.cli`): worker processes, interruption, a Dask back end.

Every notebook runs in a worker process of its own (papermill, a kernel in a session of its own),
written to a temporary directory that is renamed into place only when complete. Ctrl-C or SIGTERM
kills every worker and kernel at once (:func:`run_jobs` raises :class:`Interrupted`); a worker
whose starter dies stops itself, its kernel and its scratch (``_watch_parent``); kernel connection
files and control files live in a directory removed in every case. With ``--scheduler`` the
notebooks run as tasks of a Dask cluster the same way (:func:`run_jobs_on_cluster`).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from dpbayes.core import executors
from dpbayes.book.figures import (
    FIGURES_ENV,
    NOTEBOOK_ENV,
)
from dpbayes.book.progress import PROGRESS_FILE_ENV, read_report
from dpbayes.book.planning import (
    Job,
    _describe,
)


class LoopProgressBar:
    """A second bar under papermill's cell bar, fed by a notebook loop through ``dpbayes.book.progress``.

    The kernel writes ``(label, done, total)`` to a file outside the run directory; a thread polls it
    once a second. Used as a context manager around one notebook's execution.
    """

    def __init__(self, report_file: Path, poll_seconds: float = 1.0) -> None:
        self.report_file = report_file
        self.poll_seconds = poll_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._bar: Any = None
        self._last: tuple[str, int, int] | None = None

    def __enter__(self) -> "LoopProgressBar":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._show()  # the final state, in case the loop ended between two polls
        if self._bar is not None:
            self._bar.close()

    def _poll(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            self._show()

    def _show(self) -> None:
        from tqdm.auto import tqdm

        report = read_report(self.report_file)
        if report is None or report == self._last:
            return
        label, done, total = report
        if self._bar is None:
            self._bar = tqdm(total=total, desc=label, position=1, unit="it", dynamic_ncols=True)
        elif self._last is not None and (label, total) != (self._last[0], self._last[2]):
            self._bar.reset(total=total)  # a new loop in a later cell
            self._bar.set_description(label)
        self._bar.n = done
        self._bar.refresh()
        self._last = report


@contextlib.contextmanager
def loop_progress(show: bool) -> Iterator[None]:
    """While one notebook runs: listen to its ``dpbayes.book.progress`` reports (``show``) or to nothing.

    The reports go to a file in a temporary directory outside the run directory, never into the
    notebook; without ``show`` the variable is unset, so the notebook's ``reporter`` returns None.
    """
    if not show:
        os.environ.pop(PROGRESS_FILE_ENV, None)
        yield
        return
    with tempfile.TemporaryDirectory(prefix="dpbayes-progress-") as report_dir:
        report_file = Path(report_dir) / "progress.json"
        os.environ[PROGRESS_FILE_ENV] = str(report_file)
        try:
            with LoopProgressBar(report_file):
                yield
        finally:
            os.environ.pop(PROGRESS_FILE_ENV, None)


def execute(job: Job, progress: bool, timeout: int | None, work: Path | None = None) -> dict[str, Any]:
    """Run one job into a temporary directory (``work``, or a new one) and rename it into place when done."""
    import papermill

    work = _work_dir(job) if work is None else work
    status = "ok"
    started = _execution_start()
    try:
        _write_params(work, job)
        os.environ[FIGURES_ENV] = str(work / "figures")
        os.environ[NOTEBOOK_ENV] = job.notebook.name
        try:
            with loop_progress(progress):
                papermill.execute_notebook(
                    str(job.notebook),
                    str(work / job.notebook.name),
                    parameters=job.values,
                    kernel_name="python3",
                    progress_bar=progress,
                    cwd=str(job.notebook.parent),
                    request_save_on_cell_execute=False,
                    execution_timeout=timeout,
                    # the kernel listens on 127.0.0.1 only; its TCP-without-encryption warning is noise here
                    extra_arguments=["--IPKernelApp.log_level=ERROR"],
                )
        except Exception as exc:  # the executed notebook (with the traceback) is kept for inspection
            status = f"failed: {type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
        _write_params(work, job, _execution_record(started))
        return _move_into_place(work, job, status)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def _work_dir(job: Job) -> Path:
    """A new hidden temporary directory beside the job's run directory (renamed into place when done)."""
    job.run_dir.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".tmp-{job.run_dir.name}-", dir=job.run_dir.parent))


def _write_params(work: Path, job: Job, execution: dict[str, Any] | None = None) -> None:
    """The run's ``params.json``: this machine's notebook path, the parameters it ran with and, once it
    has run, how long it took on what (:func:`_execution_record`)."""
    meta: dict[str, Any] = {"notebook": str(job.notebook), "parameters": job.values}
    if execution is not None:
        meta["execution"] = execution
    (work / "params.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")


def _execution_start() -> tuple[float, str, list[float], float]:
    """Wall clock, UTC time, load average and the CPU time of finished child processes when a notebook
    starts (for :func:`_execution_record`)."""
    return time.monotonic(), datetime.now(timezone.utc).isoformat(timespec="seconds"), _load(), _children_cpu()


def _children_cpu() -> float:
    """User + system CPU seconds of this process's finished (waited-for) descendants: after papermill
    has shut the kernel down, the kernel and the worker processes it waited for."""
    try:
        import resource
    except ImportError:  # not on Windows
        return float("nan")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # not every platform has a load average
        return []


def _execution_record(started: tuple[float, str, list[float], float]) -> dict[str, Any]:
    """How a run went: wall seconds, the CPU seconds of the kernel and its worker processes, start time,
    the machine's logical CPUs and its load average at the start and the end (1, 5, 15 minutes), so a
    stored run can say how long it took and on what (on a loaded machine the CPU time says more)."""
    t0, when, load_before, cpu0 = started
    cpu = _children_cpu() - cpu0
    return {
        "wall_seconds": round(time.monotonic() - t0, 1),
        "cpu_seconds": round(cpu, 1) if cpu == cpu else None,
        "started_utc": when,
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "load_before": load_before,
        "load_after": _load(),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


#: Set (and :data:`_PLACING` held for good) by a worker process's watchdog once the process that
#: started it is gone: from then on no run directory is renamed into place.
_ORPHANED = threading.Event()


_PLACING = threading.Lock()


def _move_into_place(work: Path, job: Job, status: str) -> dict[str, Any]:
    """Rename a finished ``work`` directory to the run directory (``-failed`` unless ok); the outcome."""
    final = job.run_dir if status == "ok" else job.run_dir.with_name(job.run_dir.name + "-failed")
    with _PLACING:  # not while an orphaned worker removes its scratch (it never lets go: it exits)
        if _ORPHANED.is_set():
            raise RuntimeError("the process that started this run is gone")
        if final.exists():
            shutil.rmtree(final)
        os.replace(work, final)
    return {"run_dir": str(final), "status": status}


# --------------------------------------------------------------------------------------------
# running jobs in worker processes that can be stopped at once
# --------------------------------------------------------------------------------------------
def _worker_main() -> None:
    """Entry point of one worker process: execute the job described by the JSON file ``argv[1]``.

    The worker's file descriptor 2 goes to a log file, so the kernel it starts (which inherits it)
    writes its own messages there and never to the user's terminal; with ``progress`` the worker's
    Python ``sys.stderr`` stays on the terminal for papermill's bar and the loop bar. A watchdog thread
    (:func:`_watch_parent`) ends the worker, its kernel and its scratch if the process that started it dies.
    """
    spec = json.loads(Path(sys.argv[1]).read_text())
    threading.Thread(target=_watch_parent, args=(spec["lifeline_fd"], [Path(spec["work"]), *map(Path, spec["scratch"])]),
                     daemon=True, name="dpbayes-lifeline").start()
    if spec["progress"] and spec.get("terminal_fd") is not None:
        sys.stderr = os.fdopen(spec["terminal_fd"], "w", buffering=1)
    job = Job(Path(spec["notebook"]), spec["values"], Path(spec["run_dir"]), spec["chapter"])
    try:
        outcome = execute(job, progress=spec["progress"], timeout=spec["timeout"], work=Path(spec["work"]))
    except Exception as exc:  # noqa: BLE001 - reported as the run's status
        outcome = {"run_dir": str(job.run_dir) + "-failed", "status": f"failed: {type(exc).__name__}: {exc}".splitlines()[0]}
    Path(spec["outcome"]).write_text(json.dumps(outcome))


def _watch_parent(lifeline: int, scratch: list[Path]) -> None:
    """Watchdog thread of a worker process: wait for EOF on ``lifeline``, the read end of a pipe whose
    only write end the starting process holds, then stop everything this worker started and exit.

    EOF comes when the starter is gone however it ended (SIGKILL, a Dask worker killed or restarted by
    its nanny), also where ``os.getppid`` is no use; a parent-death signal would not reach the kernel,
    which runs in a session of its own. The worker runs in a session of its own too (so the terminal's
    Ctrl-C reaches only the starter), hence nobody else stops it: without this, an orphaned notebook
    would run to its end, writing into a directory no one will read. Killed: every descendant (the
    kernel and what it started); removed: ``scratch`` (the temporary run directory, the control files).
    """
    import psutil

    with contextlib.suppress(OSError):
        while os.read(lifeline, 512):  # the starter never writes: only EOF (or an error) ends this
            pass
    _ORPHANED.set()
    _PLACING.acquire()  # a rename in progress completes; none starts after this
    victims = psutil.Process().children(recursive=True)
    for v in victims:
        with contextlib.suppress(psutil.Error):
            v.kill()
    psutil.wait_procs(victims, timeout=2.0)  # dead before their files are removed
    for d in scratch:
        shutil.rmtree(d, ignore_errors=True)
    os._exit(1)


class Interrupted(Exception):
    """Ctrl-C or SIGTERM arrived while jobs were running; the workers are already stopped."""

    #: the start of the line that says what is left, and the command's exit code
    headline = "interrupted"
    exit_code = 130

    def __init__(self, outcomes: dict[Path, dict[str, Any]], stopped: list[Path]) -> None:
        super().__init__("interrupted")
        self.outcomes = outcomes
        self.stopped = stopped  # run directories of the jobs that were running

    def status(self, run_dir: Path) -> str:
        """The summary's status of a run without outcome."""
        return "stopped (interrupted)" if run_dir in self.stopped else "not started (interrupted)"


class RunLostWorker(Interrupted):
    """A cluster task lost its worker too often (:class:`executors.WorkerLost`): the run failed; the
    other tasks are cancelled (queued ones never start, running ones stop their kernel). Reported
    like an interruption, with exit code 1."""

    exit_code = 1

    def __init__(self, outcomes: dict[Path, dict[str, Any]], job: Job, lost: executors.WorkerLost) -> None:
        super().__init__(outcomes, [])
        self.lost = job.run_dir
        self.headline = f"error: {job.notebook.name} {_describe(job.shown)}: {lost}"

    def status(self, run_dir: Path) -> str:
        return "failed (lost its Dask worker)" if run_dir == self.lost else "not started or cancelled (a run lost its Dask worker)"


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@dataclass
class _Worker:
    job: Job
    proc: subprocess.Popen
    work: Path
    outcome: Path
    log: Path
    lifeline: int  # write end of the pipe the worker watches (see _watch_parent); -1 once released

    def release(self) -> None:
        """Close the lifeline once the worker has ended (it would otherwise stay open until we exit)."""
        if self.lifeline >= 0:
            with contextlib.suppress(OSError):
                os.close(self.lifeline)
            self.lifeline = -1


def _kill_tree(workers: list[_Worker], grace: float = 1.5) -> None:
    """SIGKILL every worker and everything it started (kernels run in sessions of their own)."""
    import psutil

    victims: list[psutil.Process] = []
    for w in workers:
        try:
            parent = psutil.Process(w.proc.pid)
            victims += [parent, *parent.children(recursive=True)]
        except psutil.NoSuchProcess:
            pass
    for v in victims:
        with contextlib.suppress(psutil.Error):
            v.kill()
    for w in workers:  # our own children: reaped here
        with contextlib.suppress(subprocess.TimeoutExpired):
            w.proc.wait(timeout=grace)

    def dead(v: psutil.Process) -> bool:  # a killed kernel stays a zombie until init reaps it
        try:
            return v.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    deadline = time.monotonic() + grace
    while not all(dead(v) for v in victims) and time.monotonic() < deadline:
        time.sleep(0.02)


def run_jobs(jobs: list[Job], parallel: int, progress: bool, timeout: int | None) -> dict[Path, dict[str, Any]]:
    """Execute ``jobs``, ``parallel`` at a time, each in a worker process; return each job's outcome.

    Ctrl-C (SIGINT) or SIGTERM kills every worker and its kernel at once, removes their unfinished
    temporary run directories and raises :class:`Interrupted` with the outcomes of the finished jobs.
    """
    from tqdm import tqdm

    one_at_a_time = parallel == 1 or len(jobs) == 1
    outcomes: dict[Path, dict[str, Any]] = {}
    pending = list(jobs)
    running: list[_Worker] = []
    old_term = signal.signal(signal.SIGTERM, _interrupt)
    old_int = signal.getsignal(signal.SIGINT)
    bar = tqdm(total=len(jobs), desc="notebooks", disable=not progress or one_at_a_time, leave=False)
    control = Path(tempfile.mkdtemp(prefix="dpbayes-run-"))
    started = 0
    try:
        try:
            while pending or running:
                while pending and len(running) < parallel:
                    if one_at_a_time:
                        print(f"running {pending[0].notebook} {_describe(pending[0].shown)}", file=sys.stderr)
                    running.append(_start_worker(pending.pop(0), control, started, progress and one_at_a_time, timeout,
                                                 scratch=(control,)))
                    started += 1
                for w in list(running):
                    if w.proc.poll() is not None:
                        running.remove(w)
                        outcomes[w.job.run_dir] = _collect(w)
                        bar.update(1)
                time.sleep(0.05)
        except KeyboardInterrupt:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            _kill_tree(running)
            stopped = []
            for w in running:
                w.release()
                if w.outcome.exists() and json.loads(w.outcome.read_text() or "{}").get("status") == "ok":
                    outcomes[w.job.run_dir] = _collect(w)  # finished just before the signal
                else:
                    stopped.append(w.job.run_dir)
                    shutil.rmtree(w.work, ignore_errors=True)
            raise Interrupted(outcomes, stopped) from None
    finally:
        bar.close()
        shutil.rmtree(control, ignore_errors=True)
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGINT, old_int)
    return outcomes


def _start_worker(job: Job, control: Path, index: int, show: bool, timeout: int | None,
                  drop_env: tuple[str, ...] = (), scratch: tuple[Path, ...] = ()) -> _Worker:
    """Start a worker process executing ``job`` (see :func:`_worker_main`); its files go to ``control``.

    The worker stops itself and its kernel, and removes its temporary run directory and ``scratch``,
    as soon as this process is gone (:func:`_watch_parent`): call :meth:`_Worker.release` once it has ended.
    """
    work = _work_dir(job)
    spec_path, outcome, log = (control / f"{index}.{suffix}" for suffix in ("json", "outcome", "log"))
    # the kernel's connection files (jupyter_client writes them to JUPYTER_RUNTIME_DIR or, as
    # tempfile.mkstemp, to TMPDIR; they hold the kernel's key) and the worker's temporary files:
    # removed with `control`, also after Ctrl-C or when an orphaned worker stops (_watch_parent)
    runtime = control / f"{index}.runtime"
    runtime.mkdir()
    terminal = os.dup(2) if show else None  # the worker's bars go to our stderr, the kernel's noise to the log
    # only this process holds the write end (os.pipe's descriptors are not inherited by other children)
    watched, lifeline = os.pipe()
    spec = {"notebook": str(job.notebook), "values": job.values, "run_dir": str(job.run_dir), "chapter": job.chapter,
            "work": str(work), "progress": show, "timeout": timeout, "outcome": str(outcome), "terminal_fd": terminal,
            "lifeline_fd": watched, "scratch": [str(d) for d in scratch]}
    spec_path.write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if k not in drop_env} | {"JUPYTER_RUNTIME_DIR": str(runtime), "TMPDIR": str(runtime)}
    try:
        with log.open("w") as log_fh:
            # a session of its own: the terminal's Ctrl-C reaches this process only, which stops the workers
            proc = subprocess.Popen(
                [sys.executable, "-c", "from dpbayes.book.execution import _worker_main; _worker_main()", str(spec_path)],
                stdin=subprocess.DEVNULL, stdout=log_fh, stderr=log_fh, env=env, start_new_session=True,
                pass_fds=(watched,) if terminal is None else (watched, terminal),
            )
    except BaseException:
        os.close(lifeline)
        raise
    finally:
        os.close(watched)
        if terminal is not None:
            os.close(terminal)
    return _Worker(job, proc, work, outcome, log, lifeline)


def _collect(w: _Worker) -> dict[str, Any]:
    """A finished worker's outcome; a worker that died without one is a failed run (its temp dir removed)."""
    w.release()
    try:
        outcome = json.loads(w.outcome.read_text())
    except (OSError, json.JSONDecodeError):
        shutil.rmtree(w.work, ignore_errors=True)
        lines = [ln for ln in w.log.read_text(errors="replace").splitlines() if ln.strip()] if w.log.exists() else []
        last = lines[-1].strip() if lines else ""
        outcome = {"run_dir": str(w.job.run_dir) + "-failed", "status": f"failed: worker exited with code {w.proc.returncode}{': ' + last if last else ''}"}
    return outcome


# --------------------------------------------------------------------------------------------
# running notebooks as tasks of a Dask cluster (--scheduler with several notebooks)
# --------------------------------------------------------------------------------------------
def _execute_on_worker(name: str, notebook: bytes, values: dict[str, Any], chapter: str, run_name: str,
                       timeout: int | None, cancel: str) -> dict[str, Any]:
    """A cluster task: execute one notebook (shipped as bytes) in a scratch directory of the worker,
    exactly as a local run does (a worker process of its own, see :func:`_start_worker`), and return
    its status and files as data. The kernel does not use the cluster itself (no ``DPBAYES_SCHEDULER``).
    The Dask ``Event`` named ``cancel`` stops it (the client's Ctrl-C)."""
    import distributed

    top = Path(tempfile.mkdtemp(prefix="dpbayes-task-"))
    w: _Worker | None = None
    try:
        (top / "notebook").mkdir()
        (top / "control").mkdir()
        (top / "notebook" / name).write_bytes(notebook)
        job = Job(top / "notebook" / name, values, top / "runs" / run_name, chapter)
        # if this Dask worker dies (killed, restarted by its nanny), the notebook stops and `top` goes too
        w = _start_worker(job, top / "control", 0, False, timeout, drop_env=(executors.SCHEDULER_ENV,), scratch=(top,))
        stop = distributed.Event(cancel)
        while True:
            try:
                w.proc.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                if stop.is_set():
                    return {"status": "stopped (interrupted)", "files": {}}  # stopped below
        outcome = _collect(w)
        final = Path(outcome["run_dir"])
        files = {p.relative_to(final).as_posix(): p.read_bytes() for p in sorted(final.rglob("*")) if p.is_file()}
        return {"status": outcome["status"], "files": files}
    except Exception as exc:  # noqa: BLE001 - reported as the run's status
        return {"status": f"failed: {type(exc).__name__}: {exc}".splitlines()[0], "files": {}}
    finally:
        if w is not None:  # cancelled, or this task failed while it ran: no notebook outlives the task
            if w.proc.poll() is None:
                _kill_tree([w])
            w.release()
        shutil.rmtree(top, ignore_errors=True)


def _write_returned(job: Job, result: dict[str, Any]) -> dict[str, Any]:
    """Write the files a cluster task returned into a temporary directory, then rename it into place."""
    work = _work_dir(job)
    try:
        for rel, data in result["files"].items():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_bytes(data)
        returned = json.loads(result["files"]["params.json"]) if "params.json" in result["files"] else {}
        # as a local run writes it: this machine's notebook path; the worker's own execution record
        _write_params(work, job, returned.get("execution"))
        return _move_into_place(work, job, result["status"])
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def run_jobs_on_cluster(client: Any, jobs: list[Job], progress: bool, timeout: int | None) -> dict[Path, dict[str, Any]]:
    """Like :func:`run_jobs`, with every notebook a task of the Dask cluster of ``client``.

    Each finished task is written under its run directory as it arrives. Ctrl-C or SIGTERM cancels the
    run's tasks on the cluster (queued ones never start, running ones stop their kernel) and raises
    :class:`Interrupted`; a task that lost its worker too often cancels them too and raises
    :class:`RunLostWorker` (an :class:`Interrupted`), with the outcomes of the tasks that finished.
    """
    import uuid

    import distributed
    from tqdm import tqdm

    outcomes: dict[Path, dict[str, Any]] = {}
    cancel = distributed.Event(f"dpbayes-cancel-{uuid.uuid4().hex}", client=client)
    tasks = [(j.notebook.name, j.notebook.read_bytes(), j.values, j.chapter, j.run_dir.name, timeout, cancel.name) for j in jobs]
    bar = tqdm(total=len(jobs), desc="notebooks (Dask)", disable=not progress, leave=False)

    def done(i: int, result: dict[str, Any]) -> None:
        outcomes[jobs[i].run_dir] = _write_returned(jobs[i], result)
        bar.update(1)

    old_term = signal.signal(signal.SIGTERM, _interrupt)
    try:
        executors.map_on_cluster(client, _execute_on_worker, tasks, done=done, label="notebook")
    except KeyboardInterrupt:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        cancel.set()
        raise Interrupted(outcomes, [j.run_dir for j in jobs if j.run_dir not in outcomes]) from None
    except executors.WorkerLost as lost:
        cancel.set()  # map_on_cluster cancelled the futures; a notebook already running stops on this
        raise RunLostWorker(outcomes, jobs[lost.index], lost) from None
    finally:
        bar.close()
        signal.signal(signal.SIGTERM, old_term)
    return outcomes


@contextlib.contextmanager
def _cluster(scheduler: str | None, several: bool) -> Iterator[Any]:
    """The Dask client for ``several`` notebooks as tasks, or None; a single notebook runs here with
    ``DPBAYES_SCHEDULER`` set for its kernel (checked first, unless it is a ``local:N`` the kernel starts)."""
    if scheduler is None:
        yield None
        return
    if several:
        with executors.connect(scheduler) as client:
            if scheduler.startswith("local:"):
                print(f"Dask dashboard: {client.dashboard_link}", file=sys.stderr)
            yield client
        return
    if not scheduler.startswith("local:"):
        with executors.connect(scheduler):
            pass  # reachable, with workers of the same versions
    old = os.environ.get(executors.SCHEDULER_ENV)
    os.environ[executors.SCHEDULER_ENV] = scheduler
    try:
        yield None
    finally:
        if old is None:
            os.environ.pop(executors.SCHEDULER_ENV, None)
        else:
            os.environ[executors.SCHEDULER_ENV] = old
