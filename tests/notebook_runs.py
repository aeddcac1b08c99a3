"""Runs of a notebook at its declared test parameters, and what two runs must share.

Used by ``test_nondefault_runs.py`` (every notebook at non-default parameters, on this machine's
floating-point path) and ``test_narrow_guard.py`` (the same runs on the narrow path, compared with
those). ``DPBAYES_KEEP_RUNS=<dir>`` (``make unit`` sets it) keeps each run as ``<dir>/<notebook stem>/``.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from dpbayes.book.params import notebook_parameters

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p for p in (ROOT / "chapters").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
KEEP_ENV = "DPBAYES_KEEP_RUNS"
# nbval's own markers: a cell whose output is not compared (a random draw) or not run
_IGNORED = ("NBVAL_IGNORE_OUTPUT", "NBVAL_SKIP")


def nondefault_values(notebook: Path) -> dict[str, str]:
    """The non-default value of each declared parameter: its declared ``test`` clause."""
    return {name: p.test for name, p in notebook_parameters(notebook).items() if p.test is not None}


def run_at_test_values(notebook: Path, out: Path, env: dict[str, str] | None = None,
                       values: dict[str, str] | None = None) -> tuple[Path, subprocess.CompletedProcess]:
    """``python -m dpbayes run`` of ``notebook`` into ``out`` at its test values (or at ``values``: ``{}`` runs the
    defaults); returns the run folder and the finished process."""
    values = nondefault_values(notebook) if values is None else values
    args = [a for name, text in values.items() for a in ("-p", name, text)]
    result = subprocess.run([sys.executable, "-m", "dpbayes", "run", str(notebook.relative_to(ROOT)), *args,
                             "--out", str(out), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=3600, env=env)
    dirs = [d for d in out.iterdir() if d.is_dir()] if out.exists() else []
    return (dirs[0] if len(dirs) == 1 else out), result


def keep(notebook: Path, run_dir: Path) -> None:
    """Copy a finished run to ``$DPBAYES_KEEP_RUNS/<stem>`` (replacing an older one), if that is set."""
    base = os.environ.get(KEEP_ENV)
    if not base:
        return
    target = Path(base) / notebook.stem
    tmp = target.with_name(target.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(run_dir, tmp)
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)  # a reader of the folder never sees half a run


def _sanitizers() -> list[tuple[re.Pattern[str], str]]:
    cfg = configparser.RawConfigParser()
    cfg.read(ROOT / "tests" / "nbval-sanitize.cfg")
    return [(re.compile(cfg[s]["regex"]), cfg[s]["replace"]) for s in cfg.sections()]


def comparable_outputs(run_dir: Path, notebook: Path) -> dict[str, object]:
    """What two runs of the same notebook and parameters must share, exactly.

    Every text output of every cell (after nbval's sanitizers, with the run's own folder replaced;
    images left out, as their pixels follow from the data) except the cells nbval itself does not
    compare, and the ``data`` of every figure the run wrote.
    """
    subs = _sanitizers()
    nb = nbformat.read(run_dir / notebook.name, as_version=4)
    texts: dict[str, object] = {}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or any(m in cell.source for m in _IGNORED):
            continue
        for j, out in enumerate(cell.get("outputs", [])):
            items = {"text": out.get("text", "")} if out.get("output_type") == "stream" else {
                k: v for k, v in out.get("data", {}).items() if not k.startswith("image/")}
            if out.get("output_type") == "error":
                items = {"error": out.get("ename", "")}
            for kind, value in items.items():
                text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
                text = text.replace(str(run_dir), "<RUN>")
                for pattern, replacement in subs:
                    text = pattern.sub(replacement, text)
                texts[f"cell {i} output {j} {kind}"] = text
    for fig in sorted((run_dir / "figures").rglob("*.json")):
        texts[f"figure {fig.relative_to(run_dir / 'figures').as_posix()}"] = json.loads(fig.read_text()).get("data")
    return texts


def differences(a: dict[str, object], b: dict[str, object]) -> list[str]:
    """The keys whose values differ (or exist in one only)."""
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
