"""``python -m dpbayes``: re-run a chapter's notebooks with new parameters (papermill).

Examples
--------
python -m dpbayes run chapters/01-ubapp/01a-mse-vs-eps.ipynb -p K 50
python -m dpbayes run chapters/04-counting-queries -p eps 0.1,0.5,1 --jobs 2
python -m dpbayes run chapters/01-ubapp --update-stored
python -m dpbayes params chapters/
python -m dpbayes store-run runs/03b-smc-simulated-1a2b3c4d --as paper-n
python -m dpbayes verify-run figures/03-adaptive-truncation/runs/paper-n
python -m dpbayes run chapters/04-counting-queries -p eps 0.1,0.5,1 --scheduler tls://HOST:8786

Every value is validated against the notebook's ``parameters`` cell before a kernel starts; a bad
value prints one line naming the parameter and what is allowed, and exits with status 2 without
creating any output directory. Runs go to ``runs/<notebook>-<hash>/`` (executed notebook,
``figures/``, ``params.json``), are written to a temporary directory first and renamed into place
only when complete. The stored notebooks and ``figures/`` are touched only with ``--update-stored``.

A run with non-default parameters that is too slow for CI (a chapter's paper-scale configuration)
can be kept beside the stored figures with ``store-run`` (``figures/<chapter>/runs/<label>/``: its
figures, scalar results and a ``run.json`` manifest with the notebook and parameters); anyone can
re-execute it and compare against what is stored with ``verify-run``.

``--scheduler ADDRESS`` (or ``local:N``) uses a Dask cluster (:mod:`dpbayes.executors`): several
notebooks (a sweep, a chapter) run as cluster tasks, each shipped to a worker with its parameters and
sent back as data (executed notebook, figures, results), which this process writes with the same
atomic renames; a single notebook runs here and its own parallel loops (chapter 3's replicates) run
on the cluster through ``DPBAYES_SCHEDULER``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from dpbayes.book._io import atomic_path
from dpbayes import __version__, executors
from dpbayes.book.figures import (
    FIGURES_ENV,
    NOTEBOOK_ENV,
    RUN_MANIFEST,
    STORED_RUNS_DIR,
    FigureDifference,
    compare_figure_dirs,
    compare_results,
)
from dpbayes.book.progress import PROGRESS_FILE_ENV, read_report
from dpbayes.book import constraints
from dpbayes.book.params import (Parameter, ParameterError, notebook_parameters, split_list, unknown_parameter,
                                 validate_overrides)

EXIT_USAGE = 2
SCALAR_TYPES = ("int", "float", "bool", "str")


def repo_root() -> Path:
    """The book's top level: the nearest parent of the working directory holding ``_toc.yml``."""
    here = Path.cwd().resolve()
    for candidate in (here, *here.parents):
        if (candidate / "_toc.yml").exists():
            return candidate
    return here


def find_notebooks(target: Path, root: Path | None = None) -> list[Path]:
    """A notebook path, or every notebook of a chapter folder (recursively), sorted.

    With ``root`` (the book's top level) the target must lie inside the book.
    """
    if root is not None:
        try:
            target.resolve().relative_to(root.resolve())
        except ValueError:
            raise ParameterError(f"{target} is outside the book at {root}; give a chapter folder or a notebook of it") from None
    if target.is_file() and target.suffix == ".ipynb":
        return [target]
    if target.is_dir():
        found = sorted(p for p in target.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts and "_build" not in p.parts)
        if found:
            return found
        raise ParameterError(f"no notebooks under {target}")
    raise ParameterError(f"{target} is neither a notebook (.ipynb) nor a folder of notebooks")


@dataclass(frozen=True)
class Job:
    """One notebook execution with fully validated parameter values.

    ``values`` are the parameters that differ from the notebook's defaults (injected by papermill,
    hashed into the run directory's name, written to ``params.json``), so a default given explicitly
    (``-p seed 1``) plans the same run as leaving it out; ``given`` are the values as the command
    named them (shown in messages and in a sweep's summary), ``None`` when the same as ``values``.
    """

    notebook: Path
    values: dict[str, Any]
    run_dir: Path
    chapter: str
    given: dict[str, Any] | None = None

    @property
    def shown(self) -> dict[str, Any]:
        """The values to show: as given, defaults given explicitly included."""
        return self.values if self.given is None else self.given


def without_defaults(declared: dict[str, Parameter], values: dict[str, Any]) -> dict[str, Any]:
    """``values`` without the entries equal to their parameter's declared default."""
    return {k: v for k, v in values.items() if k not in declared or not _same(v, declared[k].default)}


def _same(value: Any, default: Any) -> bool:
    """A validated value equals a declared default (``1`` and ``1.0`` alike, list by list)."""
    if isinstance(value, (list, tuple)) or isinstance(default, (list, tuple)):
        return (isinstance(value, (list, tuple)) and isinstance(default, (list, tuple)) and len(value) == len(default)
                and all(_same(a, b) for a, b in zip(value, default)))
    if isinstance(value, bool) or isinstance(default, bool):
        return type(value) is type(default) and value == default
    return value == default


def params_hash(notebook: Path, values: dict[str, Any]) -> str:
    """Short stable hash of a notebook name and its parameter overrides."""
    blob = json.dumps({"notebook": notebook.name, "values": values}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


def expand_sweeps(declared: dict[str, Parameter], raw: dict[str, str]) -> list[dict[str, Any]]:
    """Turn ``-p NAME a,b,c`` on scalar parameters into one override set per combination."""
    axes: list[list[tuple[str, str]]] = []
    for name, text in raw.items():
        param = declared.get(name)
        if param is not None and param.type in SCALAR_TYPES and "," in text:
            values = split_list(text, name)
            if not values:
                raise ParameterError(f"parameter {name}: empty sweep list")
            if len(set(values)) != len(values):
                raise ParameterError(f"parameter {name}: a value appears twice in the sweep {text!r}")
            axes.append([(name, v) for v in values])
        else:
            axes.append([(name, text)])
    return [dict(combo) for combo in itertools.product(*axes)] if axes else [{}]


def _naming(message: str, name: str, notebook: Path) -> str:
    """``parameter NAME ...`` -> ``parameter NAME of NOTEBOOK ...`` (whose declaration sets the limit)."""
    head = f"parameter {name}"
    return message.replace(head, f"{head} of {notebook.name}", 1) if message.startswith(head) else f"{notebook.name}: {message}"


def full_values(nb: Path, declared: dict[str, Parameter], overrides: dict[str, Any]) -> dict[str, Any]:
    """The overrides plus derived dependent parameters, after checking the notebook's constraints.

    Raises :class:`ParameterError` naming the notebook when the whole parameter set is inconsistent.
    """
    values = dict(overrides)
    everything = {n: p.default for n, p in declared.items()} | values
    derived = constraints.derive(nb.stem, everything, set(overrides))
    values.update(derived)
    try:
        constraints.check(nb.stem, everything | derived)
    except ParameterError as exc:
        raise ParameterError(f"{exc} ({nb.name})") from None
    return values


def plan_jobs(target: Path, raw: dict[str, str], out_base: Path, update_stored: bool,
              root: Path | None = None) -> tuple[list[Job], bool, list[Path]]:
    """Validate everything and return the jobs, whether it is a sweep, and the notebooks skipped.

    A notebook of a chapter that declares none of the ``-p`` names is skipped (it would only repeat
    its stored run). Raises :class:`ParameterError` on any problem, before anything is written.
    """
    notebooks = find_notebooks(target, root)
    try:
        declared_by_nb = {nb: notebook_parameters(nb) for nb in notebooks}
    except ParameterError:  # already one line (and a ValueError, which the next clause would reword)
        raise
    except (OSError, ValueError, SyntaxError) as exc:  # not a notebook, or a parameters cell that is not Python
        raise ParameterError(f"cannot read the parameters of the notebooks under {target}: {type(exc).__name__}") from None
    for name in raw:
        if not any(name in d for d in declared_by_nb.values()):
            raise unknown_parameter(name, sorted({n for d in declared_by_nb.values() for n in d}), str(target))
    if update_stored and raw:
        raise ParameterError("--update-stored only stores runs with the default parameters; drop the -p options")
    skipped = [nb for nb, d in declared_by_nb.items() if raw and not any(k in d for k in raw)]
    jobs: list[Job] = []
    is_sweep = False
    for nb, declared in declared_by_nb.items():
        if nb in skipped:
            continue
        mine = {k: v for k, v in raw.items() if k in declared}
        combos = expand_sweeps(declared, mine)
        is_sweep = is_sweep or len(combos) > 1
        for combo in combos:
            try:
                values = validate_overrides(declared, combo, where=str(nb))
            except ParameterError as exc:
                if len(notebooks) == 1:
                    raise
                name = next((k for k in combo if str(exc).startswith(f"parameter {k} ")), "")
                raise ParameterError(_naming(str(exc), name, nb) if name else str(exc)) from None
            given = full_values(nb, declared, values)
            values = without_defaults(declared, given)  # the same computation, the same run directory
            chapter = nb.parent.name if nb.parent.name != "chapters" else nb.stem
            jobs.append(Job(nb, values, out_base / f"{nb.stem}-{params_hash(nb, values)}", chapter,
                            given if given != values else None))
    if is_sweep:  # named after the runs it holds, so explicit defaults do not change it either
        runs = [[j.notebook.name, j.values] for j in jobs]
        sweep_dir = out_base / f"{target.stem}-sweep-{params_hash(target, {'runs': runs})}"
        jobs = [Job(j.notebook, j.values, sweep_dir / j.run_dir.name, j.chapter, j.given) for j in jobs]
    return jobs, is_sweep, skipped


VOLATILE_MARK = "# NBVAL_IGNORE_OUTPUT"


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _clean_for_storage(nb_path: Path, stored: Path | None = None, keep_volatile: bool = True) -> int:
    """Make an executed notebook byte-stable for storage; return how many volatile outputs were kept.

    Drops papermill's volatile metadata (timestamps, durations) and the empty ``tags`` lists it adds
    (unless the stored cell has one).
    With ``stored`` (the notebook as committed), a cell marked ``# NBVAL_IGNORE_OUTPUT`` (timings:
    different on every run, and not compared by nbval) whose source is unchanged keeps its stored
    outputs, so re-storing unchanged code rewrites the same bytes.
    """
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    nb.get("metadata", {}).pop("papermill", None)
    previous: dict[str, dict[str, Any]] = {}
    stored_tags: dict[str, Any] = {}  # cell id -> the stored cell's tags (absent: no key)
    if stored is not None and stored.exists():
        for cell in json.loads(stored.read_text(encoding="utf-8")).get("cells", []):
            if "tags" in cell.get("metadata", {}):
                stored_tags[cell.get("id", "")] = cell["metadata"]["tags"]
            if (keep_volatile and cell.get("cell_type") == "code" and _source(cell).lstrip().startswith(VOLATILE_MARK)
                    and cell.get("outputs")):
                previous[_source(cell)] = cell
    kept = 0
    for cell in nb["cells"]:
        meta = cell.get("metadata", {})
        meta.pop("papermill", None)
        meta.pop("execution", None)
        if meta.get("tags") == [] and stored_tags.get(cell.get("id", "")) != []:
            del meta["tags"]  # papermill adds an empty list; keep it only where the stored notebook has one
        old = previous.get(_source(cell)) if cell.get("cell_type") == "code" else None
        if old is not None:
            cell["outputs"] = old["outputs"]
            cell["execution_count"] = old.get("execution_count")
            kept += 1
    nb_path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return kept


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
        return _move_into_place(work, job, status)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def _work_dir(job: Job) -> Path:
    """A new hidden temporary directory beside the job's run directory (renamed into place when done)."""
    job.run_dir.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".tmp-{job.run_dir.name}-", dir=job.run_dir.parent))


def _write_params(work: Path, job: Job) -> None:
    """The run's ``params.json``: this machine's notebook path and the parameters it ran with."""
    (work / "params.json").write_text(
        json.dumps({"notebook": str(job.notebook), "parameters": job.values}, indent=1, sort_keys=True) + "\n"
    )


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
                [sys.executable, "-c", "from dpbayes.book.cli import _worker_main; _worker_main()", str(spec_path)],
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
        _write_params(work, job)  # as a local run writes it: this machine's notebook path
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


def store(job: Job, run_dir: Path, root: Path, refresh_volatile: bool = False) -> list[str]:
    """Copy a successful default-parameter run over the stored notebook and stored figures.

    Timing cells (``# NBVAL_IGNORE_OUTPUT``) keep their stored outputs unless ``refresh_volatile``.
    """
    changed: list[str] = []
    executed = run_dir / job.notebook.name
    kept = _clean_for_storage(executed, job.notebook, keep_volatile=not refresh_volatile)
    if job.notebook.read_bytes() != executed.read_bytes():
        with atomic_path(job.notebook) as tmp:
            shutil.copyfile(executed, tmp)
        changed.append(str(job.notebook))
    if kept:
        changed.append(f"(kept the stored output of {kept} timing cell(s) of {job.notebook.name}; --refresh-volatile replaces it)")
    produced = run_dir / "figures"
    stored_root = root / "figures"
    new_files = {p.relative_to(produced) for p in produced.rglob("*") if p.is_file()} if produced.exists() else set()
    # figures this notebook stored earlier but no longer produces are stale: remove them
    for old_json in stored_root.rglob("*.json") if stored_root.exists() else []:
        try:
            owner = json.loads(old_json.read_text()).get("notebook")
        except json.JSONDecodeError:
            continue
        rel = old_json.relative_to(stored_root)
        if STORED_RUNS_DIR in rel.parts[:-1]:  # a kept non-default run is not this run's output
            continue
        if owner == job.notebook.name and rel not in new_files:
            for stale in (old_json, old_json.with_suffix(".png")):
                if stale.exists():
                    stale.unlink()
                    changed.append(f"removed {stale}")
    for rel in sorted(new_files):
        if rel.name.startswith("results-"):
            continue
        target = stored_root / rel
        if target.exists() and target.read_bytes() == (produced / rel).read_bytes():
            continue
        with atomic_path(target) as tmp:
            shutil.copyfile(produced / rel, tmp)
        changed.append(str(target))
    return changed


LABEL_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")


def run_command(notebook: str, values: dict[str, Any]) -> str:
    """The ``python -m dpbayes run`` command line that reproduces a run."""
    def fmt(v: Any) -> str:
        return ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)

    opts = "".join(f" -p {k} {fmt(v)}" for k, v in sorted(values.items()))
    return f"python -m dpbayes run {notebook}{opts}"


def check_label(label: str) -> str:
    """A stored run's label: lower-case letters, digits and '-' (not leading)."""
    if not label or not set(label) <= LABEL_CHARS or label.startswith("-"):
        raise ParameterError(f"--as must be a label of lower-case letters, digits and '-', got {label!r}")
    return label


def store_run(run_dir: Path, label: str, root: Path, force: bool = False) -> tuple[Path, list[str]]:
    """Keep a finished run (figures, scalar results, manifest) as ``figures/<chapter>/runs/<label>/``.

    An existing label is refused unless ``force``; then the previous copy is replaced atomically
    (staged, then renamed) and the files it held that the new run does not are returned.
    """
    check_label(label)
    manifest_in = run_dir / "params.json"
    if not manifest_in.exists():
        raise ParameterError(f"{run_dir} is not a finished run (no params.json); run `python -m dpbayes run` first")
    meta = json.loads(manifest_in.read_text())
    if not meta.get("parameters"):
        raise ParameterError("a run with the default parameters is stored with `run ... --update-stored`, not store-run")
    notebook = Path(meta["notebook"])
    if not notebook.is_absolute():
        notebook = (root / notebook) if (root / notebook).exists() else notebook.resolve()
    rel_nb = notebook.resolve().relative_to(root)
    produced = run_dir / "figures"
    chapters = [d for d in produced.iterdir() if d.is_dir()] if produced.exists() else []
    if len(chapters) != 1:
        raise ParameterError(f"{run_dir}: expected the figures of one chapter, found {len(chapters)}")
    target = root / "figures" / chapters[0].name / STORED_RUNS_DIR / label
    replaced: list[str] = []
    if target.exists():
        try:
            owner = json.loads((target / RUN_MANIFEST).read_text()).get("notebook", "?")
        except (OSError, json.JSONDecodeError):
            owner = "?"
        if not force:
            whose = "" if owner == rel_nb.as_posix() else f", a run of {owner} (this run is of {rel_nb.as_posix()})"
            raise ParameterError(f"stored run {target.relative_to(root)} exists{whose}; choose another --as label, or add --force to replace it")
        new_names = {f.name for f in chapters[0].iterdir() if f.is_file()} | {f.name for f in produced.glob("results-*.json")} | {RUN_MANIFEST}
        replaced = sorted(str((target / f.name).relative_to(root)) for f in target.iterdir() if f.name not in new_names)
    target.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".tmp-{label}-", dir=target.parent))
    try:
        for f in sorted(chapters[0].iterdir()):
            if f.is_file():
                shutil.copyfile(f, stage / f.name)
        for f in sorted(produced.glob("results-*.json")):
            shutil.copyfile(f, stage / f.name)
        manifest = {
            "label": label,
            "notebook": rel_nb.as_posix(),
            "parameters": meta.get("parameters", {}),
            "command": run_command(rel_nb.as_posix(), meta.get("parameters", {})),
            "library_version": __version__,
        }
        (stage / RUN_MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        old = None
        if target.exists():
            old = target.with_name(f".old-{label}")
            if old.exists():
                shutil.rmtree(old)
            os.replace(target, old)
        os.replace(stage, target)
        if old is not None:
            shutil.rmtree(old)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
    return target, replaced


def plan_verify(stored: Path) -> tuple[dict[str, Any], Path, dict[str, Any]]:
    """A stored run's manifest, notebook and validated parameters (raises :class:`ParameterError`)."""
    manifest_path = stored / RUN_MANIFEST
    if not manifest_path.exists():
        raise ParameterError(f"{stored} holds no {RUN_MANIFEST}: not a stored run")
    manifest = json.loads(manifest_path.read_text())
    root = repo_root()
    notebook = root / manifest["notebook"]
    if not notebook.exists():
        raise ParameterError(f"stored run {stored.name}: notebook {manifest['notebook']} does not exist")
    declared = notebook_parameters(notebook)
    values = validate_overrides(declared, manifest["parameters"], where=str(notebook))
    return manifest, notebook, full_values(notebook, declared, values)


def verify_run(stored: Path, out_base: Path, progress: bool, timeout: int | None,
               scheduler: str | None = None) -> tuple[str, list[FigureDifference]]:
    """Re-execute a stored run from its manifest and compare figures and scalar results with it."""
    manifest, notebook, values = plan_verify(stored)
    job = Job(notebook, values, out_base / f"verify-{manifest['label']}-{params_hash(notebook, values)}", notebook.parent.name)
    with _cluster(scheduler, several=False):
        outcome = run_jobs([job], 1, progress, timeout)[job.run_dir]
    if outcome["status"] != "ok":
        return outcome["run_dir"], [FigureDifference(manifest["label"], "*", outcome["status"])]
    fresh = Path(outcome["run_dir"]) / "figures"
    problems = compare_figure_dirs(stored, fresh / stored.parent.parent.name)
    for res in sorted(stored.glob("results-*.json")):
        other = fresh / res.name
        if not other.exists():
            problems.append(FigureDifference(res.stem, "*", "stored results were not produced by the re-run"))
        else:
            problems += compare_results(json.loads(res.read_text()), json.loads(other.read_text()), res.stem)
    return outcome["run_dir"], problems


def cmd_store_run(args: argparse.Namespace) -> int:
    target, removed = store_run(Path(args.run_dir), args.label, repo_root(), force=args.force)
    print(f"stored {target}")
    for name in removed:
        print(f"        removed {name} (not produced by this run)")
    return 0


def cmd_verify_run(args: argparse.Namespace) -> int:
    out_base = check_out_dir(Path(args.out) if args.out else repo_root() / "runs")
    check_timeout(args.timeout)
    scheduler = executors.check_scheduler(args.scheduler, "--scheduler") if args.scheduler else None
    if args.dry_run:
        for stored in args.stored:
            manifest, notebook, values = plan_verify(Path(stored))
            where = f" (its parallel loops on the Dask scheduler {scheduler})" if scheduler else ""
            print(f"would re-run {run_command(manifest['notebook'], values)}{where} and compare with {stored}")
        return 0
    failed = 0
    for stored in args.stored:
        run_dir, problems = verify_run(Path(stored), out_base, progress=not args.quiet, timeout=args.timeout,
                                       scheduler=scheduler)
        print(f"{'ok' if not problems else 'DIFFERS':>7}  {stored}  (re-run in {run_dir})")
        for p in problems:
            print(f"         {p}")
        failed += bool(problems)
    return 1 if failed else 0


#: Columns of every summary row before the parameters and after them.
SUMMARY_FIXED = ("notebook", "run_dir", "status")


def summary_rows(jobs: list[Job], outcomes: dict[Path, dict[str, Any]], sweep_dir: Path,
                 unfinished: Callable[[Path], str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per run: notebook, parameters, directory (relative to the sweep), status, the values the
    notebook glued, and its recorded scalar results; and the names of the glued columns.

    A run without outcome (the sweep was stopped) has the status ``unfinished(run_dir)``
    (:meth:`Interrupted.status`: stopped, not started, lost its worker, cancelled). Glued values
    (:func:`dpbayes.book.pagevalues.stored_glue_values`: the key numbers a page shows, as text) come
    from the executed notebook of a run that finished ok; a key is its column's name (``glued.KEY`` if
    it is also a parameter's or one of :data:`SUMMARY_FIXED`); the source's own numbers
    (``source.*``, the same in every run) are left out. Results are ``<name>.<key>`` columns.
    """
    from dpbayes.book.pagevalues import stored_glue_values

    params = {k for job in jobs for k in job.shown}
    rows, glued_columns = [], []
    for job in jobs:
        missing = unfinished(job.run_dir) if unfinished is not None else "not started"
        outcome = outcomes.get(job.run_dir, {"run_dir": "", "status": missing})
        rel = os.path.relpath(outcome["run_dir"], sweep_dir) if outcome["run_dir"] else ""
        row: dict[str, Any] = {"notebook": job.notebook.name, **job.shown, "run_dir": rel, "status": outcome["status"]}
        executed = Path(outcome["run_dir"]) / job.notebook.name if outcome["run_dir"] else None
        if outcome["status"] == "ok" and executed is not None and executed.exists():
            for key, text in stored_glue_values(executed).items():
                if key.startswith("source."):
                    continue
                column = f"glued.{key}" if key in params or key in SUMMARY_FIXED else key
                row[column] = text
                glued_columns.append(column)
        figs = Path(outcome["run_dir"]) / "figures" if outcome["run_dir"] else Path("/nonexistent")
        for res in sorted(figs.glob("results-*.json")) if figs.exists() else []:
            for key, value in json.loads(res.read_text()).items():
                row[f"{res.stem[len('results-'):]}.{key}"] = value
        rows.append(row)
    return rows, list(dict.fromkeys(glued_columns))


def write_summary(jobs: list[Job], outcomes: dict[Path, dict[str, Any]], sweep_dir: Path,
                  unfinished: Callable[[Path], str] | None = None) -> tuple[Path, str]:
    """Write the sweep's ``summary.csv`` (:func:`summary_rows`); return its path and a short table
    of it for the terminal (:func:`summary_table`)."""
    rows, glued = summary_rows(jobs, outcomes, sweep_dir, unfinished)
    fields = list(dict.fromkeys(k for r in rows for k in r))
    target = sweep_dir / "summary.csv"
    with atomic_path(target) as tmp, tmp.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    results = [k for k in fields if k not in glued and k not in SUMMARY_FIXED and not any(k in j.shown for j in jobs)]
    return target, summary_table(rows, jobs, glued + results)


def _cell(value: Any, limit: int = 32) -> str:
    text = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _varies(rows: list[dict[str, Any]], column: str) -> bool:
    """Whether ``column`` takes more than one value over ``rows`` (a missing value counts as one)."""
    return len({json.dumps(r.get(column, ""), default=str) for r in rows}) > 1


def summary_table(rows: list[dict[str, Any]], jobs: list[Job], outputs: list[str], width: int | None = None) -> str:
    """The summary as a short aligned table that leads with what differs between runs: the notebook
    (if several), the parameters that differ, the status, then those ``outputs`` columns (glued
    values, then recorded results) that differ between runs. Columns equal in every run are left to
    summary.csv (a last line names them), and so are the columns that do not fit in ``width`` (the
    terminal's; another last line names them). A single run shows all its outputs."""
    varying = [k for k in dict.fromkeys(k for j in jobs for k in j.shown) if _varies(rows, k)]
    same = [c for c in outputs if len(rows) > 1 and not _varies(rows, c)]
    outputs = [c for c in outputs if c not in same]
    columns = (["notebook"] if len({r["notebook"] for r in rows}) > 1 else []) + varying + ["status"] + outputs
    width = shutil.get_terminal_size((100, 24)).columns if width is None else width
    cells = [[_cell(c) for c in columns]] + [[_cell(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    shown = 0
    while shown < len(columns) and sum(widths[:shown + 1]) + 2 * shown <= max(width - 1, widths[0]):
        shown += 1
    shown = max(shown, 1)
    lines = ["  ".join(line[i].ljust(widths[i]) for i in range(shown)).rstrip() for line in cells]
    if shown < len(columns):
        lines.append(f"({len(columns) - shown} more column{'s' if len(columns) - shown > 1 else ''} in summary.csv: "
                     f"{', '.join(columns[shown:])})")
    if same:
        names = ", ".join(same[:8]) + (f", ... ({len(same) - 8} more)" if len(same) > 8 else "")
        lines.append(f"({len(same)} column{'s' if len(same) > 1 else ''} equal in every run, in summary.csv only: {names})")
    return "\n".join(lines)


def check_timeout(timeout: int | None) -> None:
    if timeout is not None and timeout < 1:
        raise ParameterError(f"--timeout must be an integer number of seconds >= 1, got {timeout}")


def check_out_dir(out: Path) -> Path:
    """The runs' base directory, resolved; it must be (or be creatable as) a writable directory."""
    out = out.resolve()
    if out.exists() and not out.is_dir():
        raise ParameterError(f"--out {out} exists and is not a directory")
    existing = next(p for p in (out, *out.parents) if p.exists())
    try:  # a probe that leaves nothing behind (os.access says yes to root even in /proc)
        Path(tempfile.mkdtemp(prefix=".dpbayes-probe-", dir=existing)).rmdir()
    except OSError as exc:
        raise ParameterError(f"--out {out}: cannot create a directory in {existing} ({exc.strerror or exc})") from None
    return out


def _describe(values: dict[str, Any]) -> str:
    return json.dumps(values) if values else "(defaults)"


def cmd_run(args: argparse.Namespace) -> int:
    root = repo_root()
    raw: dict[str, str] = {}
    for name, value in args.param or []:
        if name in raw:
            raise ParameterError(f"parameter {name} given twice; use a comma list to sweep it")
        raw[name] = value
    if args.jobs < 1:
        raise ParameterError(f"--jobs must be an integer >= 1, got {args.jobs}")
    check_timeout(args.timeout)
    scheduler = executors.check_scheduler(args.scheduler, "--scheduler") if args.scheduler else None
    if scheduler and args.jobs != 1:  # silently ignoring it would hide that it limits nothing
        raise ParameterError(f"--jobs {args.jobs} does not apply with --scheduler: {JOBS_ON_CLUSTER}")
    if args.refresh_volatile and not args.update_stored:
        raise ParameterError("--refresh-volatile only applies with --update-stored")
    out_base = check_out_dir(Path(args.out) if args.out else root / "runs")  # the kernel runs in the chapter folder
    jobs, is_sweep, skipped = plan_jobs(Path(args.target), raw, out_base, args.update_stored, root)
    for nb in skipped:
        print(f"skipping {nb}: it declares none of {', '.join(raw)}", file=sys.stderr)
    if not jobs:
        raise ParameterError(f"no notebook under {args.target} declares {', '.join(raw)}")
    if args.dry_run:
        for job in jobs:
            same = " (= the defaults)" if job.given and not job.values else ""
            print(f"would run {job.notebook} {_describe(job.shown)}{same} -> {os.path.relpath(job.run_dir)}")
        if is_sweep:
            print(f"would write {os.path.relpath(jobs[0].run_dir.parent / 'summary.csv')}")
        if scheduler:
            print(f"on the Dask scheduler {scheduler}: " + ("each notebook a task" if len(jobs) > 1 else
                                                            "the notebook here, its parallel loops as tasks"))
        return 0

    with _cluster(scheduler, several=len(jobs) > 1) as client:  # checked before anything is written
        base = jobs[0].run_dir.parent
        created = [d for d in (base, *base.parents) if not d.exists()]  # removed again if nothing is kept
        try:
            base.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ParameterError(f"cannot create {base}: {exc.strerror or exc}") from None
        try:
            if client is not None:
                outcomes = run_jobs_on_cluster(client, jobs, progress=not args.quiet, timeout=args.timeout)
            else:
                outcomes = run_jobs(jobs, args.jobs, progress=not args.quiet, timeout=args.timeout)
        except Interrupted as stop:  # Ctrl-C, SIGTERM, or a cluster task that lost its worker too often
            bar_open = not args.quiet and client is None and (args.jobs == 1 or len(jobs) == 1)  # papermill's bar ends without a newline
            print(("\n" if bar_open else "") + _interrupted(stop, jobs, is_sweep, created), file=sys.stderr)
            return stop.exit_code

    summary = write_summary(jobs, outcomes, jobs[0].run_dir.parent) if is_sweep else None  # before any output
    failed = 0
    for job in jobs:
        outcome = outcomes[job.run_dir]
        print(f"{outcome['status']:>6}  {os.path.relpath(outcome['run_dir'])}")
        if outcome["status"] != "ok":
            failed += 1
        elif args.update_stored:
            changes = store(job, Path(outcome["run_dir"]), root, refresh_volatile=args.refresh_volatile)
            for changed in changes:
                print(f"        {changed if changed.startswith(('(', 'removed')) else 'stored ' + changed}")
            if not changes:
                print(f"        unchanged {job.notebook} and its figures")
    if summary is not None:
        path, table = summary
        print(f"summary  {os.path.relpath(path)}")
        print()
        print(table)
    return 1 if failed else 0


def _interrupted(stop: Interrupted, jobs: list[Job], is_sweep: bool, created: list[Path]) -> str:
    """Tidy up after Ctrl-C / SIGTERM / a lost worker and say in one line what is left."""
    done = [j for j in jobs if j.run_dir in stop.outcomes]
    if is_sweep and done:
        sweep = jobs[0].run_dir.parent
        write_summary(jobs, stop.outcomes, sweep, stop.status)
        marked = sweep.with_name(sweep.name + "-incomplete")
        if marked.exists():
            shutil.rmtree(marked)
        os.replace(sweep, marked)
        return (f"{stop.headline}: incomplete sweep kept in {os.path.relpath(marked)} "
                f"({len(done)} of {len(jobs)} runs done, summary.csv lists which); nothing was stored")
    for d in created:  # only directories this command created, and only if empty
        with contextlib.suppress(OSError):
            d.rmdir()
    if done:
        return (f"{stop.headline}: {len(done)} of {len(jobs)} notebooks finished (their runs are complete, "
                f"e.g. {os.path.relpath(done[0].run_dir)}); the rest was stopped; nothing was stored")
    return f"{stop.headline}: nothing was written and nothing was stored"


def cmd_params(args: argparse.Namespace) -> int:
    """Print every notebook's parameters as a Markdown table."""
    print("| Notebook | Parameter | Type | Default | Allowed | Meaning |")
    print("|---|---|---|---|---|---|")
    for nb in find_notebooks(Path(args.target)):
        for p in notebook_parameters(nb).values():
            print(f"| `{nb.as_posix()}` | `{p.name}` | `{p.type}` | `{p.default!r}` | {p.allowed} | {p.meaning} |")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``error: ...``) and exit code 2, like a bad value."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _is_option(token: str) -> bool:
    """A token that is an option of the command line, never a parameter's value: ``--anything``,
    ``-p``, ``-h`` (a value may start with one ``-``: ``-1``, ``-inf``)."""
    return token.startswith("--") or token in ("-p", "-h")


def _split_params(argv: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Take ``-p NAME VALUE`` / ``-p NAME=VALUE`` out of ``argv`` before argparse sees it.

    argparse would read a value such as ``-inf`` as an option; here the token after the name is
    the value unless it is an option (:func:`_is_option`): ``-p eps --dry-run`` is a missing value.
    """
    rest: list[str] = []
    pairs: list[tuple[str, str]] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in ("-p", "--param") or token.startswith("--param="):
            if token.startswith("--param="):
                first, i = token[len("--param="):], i + 1
            elif i + 1 < len(argv) and not _is_option(argv[i + 1]):
                first, i = argv[i + 1], i + 2
            else:
                after = f" before {argv[i + 1]}" if i + 1 < len(argv) else ""
                raise ParameterError(f"{token} is missing its parameter name and value{after}: "
                                     "-p NAME VALUE or -p NAME=VALUE")
            if "=" in first:
                name, value = first.split("=", 1)
            elif i < len(argv) and not _is_option(argv[i]):
                name, value, i = first, argv[i], i + 1
            else:
                after = f" before {argv[i]}" if i < len(argv) else ""
                raise ParameterError(f"-p {first} is missing its value{after}: -p NAME VALUE or -p NAME=VALUE")
            if not name.isidentifier():
                raise ParameterError(f"-p needs a parameter name first, got {name!r}")
            pairs.append((name, value))
        else:
            rest.append(token)
            i += 1
    return rest, pairs


#: What sets the parallelism on a cluster (why --jobs is refused with --scheduler).
JOBS_ON_CLUSTER = ("the Dask cluster's workers set how many notebooks run at once "
                   "(one per worker thread: start more or fewer `dask worker`s); drop --jobs")
SCHEDULER_HELP = ("run on a Dask cluster: tls://HOST:PORT of a running dask scheduler (its TLS settings from "
                  "Dask's configuration, see the book's page 'Re-running and extending'), or local:N for N worker "
                  "processes on this machine (listening on 127.0.0.1 only); several notebooks run as tasks "
                  "(as many at once as the workers have threads), a single notebook runs here and its parallel "
                  "loops run on the cluster")

#: What ``python -m dpbayes --help`` says (plain text: argparse prints it as it is).
DESCRIPTION = """\
Re-run the book's notebooks with new parameters (through papermill), and keep
or re-check runs too slow for CI. Every value is checked against the
notebook's parameters cell before a kernel starts; a bad value prints one
line and exits with status 2. Runs go to runs/; the stored notebooks and
figures/ change only with run --update-stored."""

#: One example per subcommand, shown by its --help and by the top-level --help, and executed by
#: tests/test_doc_commands.py (run/verify-run with --dry-run, params as is, store-run checked
#: against the run that the run example plans).
EXAMPLES = {
    "run": "python -m dpbayes run chapters/04-counting-queries -p eps 0.5",
    "params": "python -m dpbayes params chapters/04-counting-queries",
    "store-run": "python -m dpbayes store-run runs/04b-bayes-vs-naive-d6f9c698 --as eps-half",
    "verify-run": "python -m dpbayes verify-run figures/03-adaptive-truncation/runs/paper-n",
}

SUBCOMMANDS = {
    "run": ("execute a notebook or a chapter with new parameters",
            "Execute a notebook, or every notebook of a chapter that declares the -p names,\n"
            "into runs/<notebook>-<hash>/. A comma list on a scalar parameter is a sweep:\n"
            "one run per value, under runs/<target>-sweep-<hash>/ with a summary.csv (the\n"
            "parameters, the status, the values the notebook glues and its recorded\n"
            "results), printed as a table at the end. A default given explicitly plans\n"
            "the same run as leaving it out."),
    "params": ("list the declared parameters of notebooks as a Markdown table",
               "Print every declared parameter (type, default, allowed range, meaning) of\n"
               "the notebooks under a folder, or of one notebook, as a Markdown table."),
    "store-run": ("keep a finished non-default run as figures/<chapter>/runs/<label>/",
                  "Keep a run too slow for CI beside the stored figures: its figures, scalar\n"
                  "results and a run.json manifest (the notebook, the parameters, the command)."),
    "verify-run": ("re-execute stored runs and compare them with what is stored",
                   "Re-execute stored runs from their manifests and compare figures and results\n"
                   "with what is stored; prints ok or each difference, exits with 1 on any."),
}


def _epilog(*commands: str) -> str:
    if len(commands) == 1:
        return f"example:\n  {EXAMPLES[commands[0]]}"
    return "examples:\n" + "\n".join(f"  {EXAMPLES[c]}" for c in commands) + \
        "\n\npython -m dpbayes COMMAND --help describes a command and its options."


def build_parser() -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    parser = _Parser(prog="python -m dpbayes", description=DESCRIPTION, epilog=_epilog(*EXAMPLES), formatter_class=raw)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    def command(name: str) -> argparse.ArgumentParser:
        summary, description = SUBCOMMANDS[name]
        return sub.add_parser(name, help=summary, description=description, epilog=_epilog(name), formatter_class=raw)

    run = command("run")
    run.add_argument("target", help="a notebook (.ipynb) or a chapter folder")
    run.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                     help="set a parameter (also -p NAME=VALUE); a comma list on a scalar parameter sweeps it; "
                          "a value may start with '-' (-p x -1), an option in its place (-p x --dry-run) "
                          "is a missing value")
    run.add_argument("--out", metavar="DIR", help="base directory for runs (default: runs/)")
    run.add_argument("--jobs", metavar="N", type=int, default=1,
                     help="notebooks executed in parallel on this machine (default 1); not with --scheduler, "
                          "where the cluster's workers set it")
    run.add_argument("--update-stored", action="store_true",
                     help="overwrite the stored notebook outputs and figures/ (default parameters only)")
    run.add_argument("--refresh-volatile", action="store_true",
                     help="with --update-stored: also replace the stored outputs of timing cells (# NBVAL_IGNORE_OUTPUT)")
    run.add_argument("--timeout", metavar="S", type=int, default=None, help="per-cell timeout in seconds, >= 1 (default: none)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--scheduler", metavar="ADDRESS", help=SCHEDULER_HELP)
    run.add_argument("--dry-run", action="store_true",
                     help="validate the parameters and print the planned runs; execute and write nothing")
    run.set_defaults(func=cmd_run)
    params = command("params")
    params.add_argument("target", nargs="?", default="chapters",
                        help="a chapter folder, a notebook (.ipynb), or chapters (the default: every notebook)")
    params.set_defaults(func=cmd_params)
    keep = command("store-run")
    keep.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by run (holds params.json and figures/)")
    keep.add_argument("--as", dest="label", metavar="LABEL", required=True,
                      help="the stored run's name: lower-case letters, digits, '-'")
    keep.add_argument("--force", action="store_true", help="replace a stored run of the same label")
    keep.set_defaults(func=cmd_store_run)
    verify = command("verify-run")
    verify.add_argument("stored", metavar="STORED", nargs="+", help="figures/<chapter>/runs/<label> folders")
    verify.add_argument("--out", metavar="DIR", help="base directory for the re-runs (default: runs/)")
    verify.add_argument("--timeout", metavar="S", type=int, default=None, help="per-cell timeout in seconds, >= 1 (default: none)")
    verify.add_argument("--quiet", action="store_true", help="no progress bar")
    verify.add_argument("--scheduler", metavar="ADDRESS", help=SCHEDULER_HELP)
    verify.add_argument("--dry-run", action="store_true", help="check the manifests and print the re-runs; execute nothing")
    verify.set_defaults(func=cmd_verify_run)
    return parser


#: Exit status after output to a closed pipe (``... | head -1``): what a Unix tool that SIGPIPE
#: ends returns (128 + 13), without Python's traceback.
EXIT_BROKEN_PIPE = 141


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null, so that the interpreter's final flush of what is left
    in ``sys.stdout`` cannot fail again (and print "Exception ignored ...")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    with contextlib.suppress(OSError, ValueError):
        os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def _main(argv: list[str] | None) -> int:
    try:
        rest, pairs = _split_params(list(sys.argv[1:] if argv is None else argv))
        args = build_parser().parse_args(rest)
        if pairs:
            if args.command != "run":
                raise ParameterError("-p is an option of `run` only")
            args.param = (args.param or []) + [list(p) for p in pairs]
        return int(args.func(args))
    except (ParameterError, executors.SchedulerError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except executors.WorkerLost as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: nothing was stored", file=sys.stderr)
        return 130
