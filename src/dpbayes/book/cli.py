"""``python -m dpbayes``: re-run a chapter's notebooks with new parameters (papermill).

Examples
--------
python -m dpbayes run chapters/01-ubapp/01b-mse-vs-eps.ipynb -p K 50
python -m dpbayes run chapters/04-counting-queries -p eps 0.1,0.5,1 --jobs 2
python -m dpbayes run chapters/01-ubapp --update-stored
python -m dpbayes params chapters/
python -m dpbayes store-run runs/03b-smc-simulated-1a2b3c4d --as paper-n
python -m dpbayes verify-run figures/03-adaptive-truncation/runs/paper-n
python -m dpbayes redraw figures/03-adaptive-truncation/runs/paper-n
python -m dpbayes run chapters/04-counting-queries -p eps 0.1,0.5,1 --scheduler tls://HOST:8786

Every value is validated against the notebook's ``parameters`` cell before a kernel starts; a bad
value prints one line naming the parameter and what is allowed, and exits with status 2 without
creating any output directory. Runs go to ``runs/<notebook>-<hash>/`` (executed notebook,
``figures/``, ``params.json``), are written to a temporary directory first and renamed into place
only when complete. The stored notebooks and ``figures/`` are touched only with ``--update-stored``.

A run with non-default parameters that is too slow for CI (a chapter's paper-scale configuration)
can be kept beside the stored figures with ``store-run`` (``figures/<chapter>/runs/<label>/``: its
figures, scalar results and a ``run.json`` manifest with the notebook and parameters); anyone can
re-execute it and compare against what is stored with ``verify-run``. When the book's figure style
changes, ``redraw`` draws a stored run's figures again from the numbers their JSON keeps
(:mod:`dpbayes.book.chapter_figures`), without re-running it.

``--scheduler ADDRESS`` (or ``local:N``) uses a Dask cluster (:mod:`dpbayes.core.executors`): several
notebooks (a sweep, a chapter) run as cluster tasks, each shipped to a worker with its parameters and
sent back as data (executed notebook, figures, results), which this process writes with the same
atomic renames; a single notebook runs here and its own parallel loops (chapter 3's replicates) run
on the cluster through ``DPBAYES_SCHEDULER``.

The command is built from four modules of one job each: :mod:`dpbayes.book.planning` (targets,
values, sweeps, run directories), :mod:`dpbayes.book.execution` (worker processes, interruption,
the Dask back end), :mod:`dpbayes.book.storing` (stored outputs, kept runs, summaries) and this
one (subcommands, argument parsing, messages); every name of the first three is importable from here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
from pathlib import Path

from dpbayes.core import executors
from dpbayes.book.params import (ParameterError, notebook_parameters)
from dpbayes.book.planning import (
    EXIT_USAGE,
    repo_root,
    find_notebooks,
    Job,
    plan_jobs,
    check_timeout,
    check_out_dir,
    _describe,
)
from dpbayes.book.execution import (
    Interrupted,
    run_jobs,
    run_jobs_on_cluster,
    _cluster,
)
from dpbayes.book.storing import (
    store,
    run_command,
    store_run,
    plan_verify,
    verify_run,
    write_summary,
)

# Every name of the modules this command line is built from stays importable from here
# (``from dpbayes.book.cli import Job, summary_table, _worker_main, ...``).
from dpbayes.book.planning import (
    SCALAR_TYPES as SCALAR_TYPES,
    without_defaults as without_defaults,
    _same as _same,
    params_hash as params_hash,
    expand_sweeps as expand_sweeps,
    _naming as _naming,
    full_values as full_values,
)
from dpbayes.book.execution import (
    LoopProgressBar as LoopProgressBar,
    loop_progress as loop_progress,
    execute as execute,
    _work_dir as _work_dir,
    _write_params as _write_params,
    _ORPHANED as _ORPHANED,
    _PLACING as _PLACING,
    _move_into_place as _move_into_place,
    _worker_main as _worker_main,
    _watch_parent as _watch_parent,
    RunLostWorker as RunLostWorker,
    _interrupt as _interrupt,
    _Worker as _Worker,
    _kill_tree as _kill_tree,
    _start_worker as _start_worker,
    _collect as _collect,
    _execute_on_worker as _execute_on_worker,
    _write_returned as _write_returned,
)
from dpbayes.book.storing import (
    VOLATILE_MARK as VOLATILE_MARK,
    _source as _source,
    _clean_for_storage as _clean_for_storage,
    LABEL_CHARS as LABEL_CHARS,
    check_label as check_label,
    SUMMARY_FIXED as SUMMARY_FIXED,
    summary_rows as summary_rows,
    _cell as _cell,
    _varies as _varies,
    summary_table as summary_table,
)


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


def cmd_redraw(args: argparse.Namespace) -> int:
    from dpbayes.book import chapter_figures  # matplotlib: only for this command

    try:
        plans = {stored: chapter_figures.plan_redraw(Path(stored)) for stored in args.stored}
    except chapter_figures.RedrawError as exc:  # checked for every folder before any file is written
        raise ParameterError(str(exc)) from None
    for stored, paths in plans.items():
        if args.dry_run:
            print(f"would redraw {', '.join(p.stem for p in paths)} in {stored}")
            continue
        for figure_id, layout in chapter_figures.redraw_stored(Path(stored)).items():
            print(f"redrawn  {os.path.join(stored, figure_id)}.png  (smallest text "
                  f"{chapter_figures.figures.on_screen_font_px(layout):.1f} px on screen)")
    return 0


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
    "redraw": "python -m dpbayes redraw figures/03-adaptive-truncation/runs/paper-n",
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
    "redraw": ("draw the figures of stored runs again from their JSON, without re-running",
               "Draw every figure of stored runs again from the numbers and parameters its JSON\n"
               "keeps, in the book's current figure style, and rewrite its PNG and the JSON's\n"
               "layout (data, params, note and tolerance stay as they are). Every figure of\n"
               "every folder must have a drawing function in dpbayes.book.chapter_figures;\n"
               "otherwise nothing is written and the command exits with status 2."),
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
    redraw = command("redraw")
    redraw.add_argument("stored", metavar="STORED", nargs="+", help="figures/<chapter>/runs/<label> folders")
    redraw.add_argument("--dry-run", action="store_true", help="check the folders and list their figures; write nothing")
    redraw.set_defaults(func=cmd_redraw)
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
