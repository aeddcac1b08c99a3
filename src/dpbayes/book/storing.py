"""Storing and checking results (:mod:`dpbayes.book.cli`): stored outputs, kept runs, sweep summaries.

``--update-stored`` writes a run's outputs into the committed notebook and ``figures/`` (:func:`store`);
``store-run`` keeps a slow run under ``figures/<chapter>/runs/<label>/`` (:func:`store_run`) and
``verify-run`` re-executes it and compares (:func:`verify_run`); a sweep's ``summary.csv`` and the
table printed from it (:func:`write_summary`, :func:`summary_table`).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

from dpbayes.book._io import atomic_path
from dpbayes import __version__
from dpbayes.book.figures import (
    RUN_MANIFEST,
    STORED_RUNS_DIR,
    FigureDifference,
    compare_figure_dirs,
    compare_results,
)
from dpbayes.book.params import (ParameterError, notebook_parameters, validate_overrides)
from dpbayes.book.planning import (
    repo_root,
    Job,
    params_hash,
    full_values,
)
from dpbayes.book.execution import (
    run_jobs,
    _cluster,
)


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
        if "execution" in meta:  # wall time, machine and load of the run (absent for runs made before it was kept)
            manifest["execution"] = meta["execution"]
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
