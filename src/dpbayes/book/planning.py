"""Planning the runs of ``python -m dpbayes run`` (:mod:`dpbayes.book.cli`): from a target and ``-p`` values to jobs.

Finds a target's notebooks, validates every value against the notebook's ``parameters`` cell and
the constraints of :mod:`dpbayes.book.constraints` before any kernel starts, expands sweeps
(comma lists) and names each run's directory by a hash of its notebook and parameters
(``runs/<notebook>-<hash>/``). Nothing here executes a notebook or writes a file.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
