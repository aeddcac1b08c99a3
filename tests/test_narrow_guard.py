"""The notebooks left out of the narrow-path validation still compute the same on the narrow path.

``make notebooks-narrow`` validates on the narrow floating-point path (``tests/narrow_cpu.py``) every
notebook but the few listed as ``guarded`` in ``tests/narrow-survey.json``: notebooks measured to give
exactly the same outputs on both paths (``make narrow-survey`` runs every notebook at its defaults on
both), at their test parameters too, and whose full run costs much more than their test run. Each of
those is run here on the narrow path at its test parameters (the small, non-default values of
``test_nondefault_runs.py``), and every compared output and every figure's data must equal, exactly,
the run of the same parameters on this machine's own path that ``make unit`` kept
(``DPBAYES_KEEP_RUNS``). A guarded notebook that starts to differ fails here: survey again, and it is
validated in full.

The guard is weaker than a full run: of the 12 notebooks that differ at their defaults, the runs at
test parameters showed a difference for 6 (``guard_power`` in the record): small sizes often stay on
NumPy's scalar loops. That is why only three expensive notebooks are guarded rather than validated.

Run by ``make notebooks-narrow`` on the narrow path; elsewhere the comparison tests are skipped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from notebook_runs import KEEP_ENV, NOTEBOOKS, ROOT, comparable_outputs, differences, run_at_test_values

SURVEY = ROOT / "tests" / "narrow-survey.json"
ON_NARROW_PATH = bool(os.environ.get("NPY_DISABLE_CPU_FEATURES")) or os.environ.get("NUMBA_CPU_NAME") == "generic"


def survey() -> dict:
    return json.loads(SURVEY.read_text())


def guarded_notebooks() -> list[Path]:
    return [ROOT / rel for rel in survey()["guarded"]]


def test_survey_covers_every_notebook_once() -> None:
    # a new notebook, or one renamed, is not in the survey yet: survey again (make narrow-survey)
    record = survey()
    listed = record["differ"] + record["same"]
    assert len(listed) == len(set(listed)), "a notebook is listed twice"
    assert sorted(listed) == sorted(nb.relative_to(ROOT).as_posix() for nb in NOTEBOOKS), \
        "tests/narrow-survey.json does not list every notebook exactly once: run make narrow-survey"
    # a guarded notebook was measured the same on both paths; one that differs is validated in full
    assert set(record["guarded"]) <= set(record["same"]), "a guarded notebook differs on the narrow path"


@pytest.mark.skipif(not ON_NARROW_PATH, reason="runs on the narrow path only (make notebooks-narrow)")
@pytest.mark.parametrize("notebook", guarded_notebooks(), ids=[nb.stem for nb in guarded_notebooks()])
def test_notebook_computes_the_same_on_the_narrow_path(notebook: Path, tmp_path: Path) -> None:
    kept = os.environ.get(KEEP_ENV)
    assert kept, f"set {KEEP_ENV} to the runs kept by make unit"
    wide = Path(kept) / notebook.stem
    assert wide.is_dir(), f"no kept run of {notebook.stem} in {kept}: run make unit first"
    narrow, result = run_at_test_values(notebook, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    differ = differences(comparable_outputs(wide, notebook), comparable_outputs(narrow, notebook))
    assert not differ, (f"{notebook.stem} now computes differently on the narrow path ({', '.join(differ[:5])}): "
                        "run make narrow-survey, which moves it to the notebooks validated there")


def test_the_comparison_sees_one_ulp_and_skips_what_nbval_skips(tmp_path: Path) -> None:
    import nbformat
    import numpy as np

    notebook = tmp_path / "demo.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print(x)"), nbformat.v4.new_code_cell("# NBVAL_IGNORE_OUTPUT\nprint(draw)")]
    runs = {}
    for name, value, draw in (("a", 0.1, "1"), ("b", 0.1, "2"), ("c", float(np.nextafter(0.1, 1.0)), "1")):
        run = tmp_path / name
        (run / "figures" / "ch").mkdir(parents=True)
        nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="took 1.5 s\n")]
        nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text=draw)]
        nbformat.write(nb, run / notebook.name)
        (run / "figures" / "ch" / "f.json").write_text(json.dumps({"data": {"y": [value]}}))
        runs[name] = comparable_outputs(run, notebook)
    assert differences(runs["a"], runs["b"]) == []  # only the ignored cell's random draw differs
    assert differences(runs["a"], runs["c"]) == ["figure ch/f.json"]  # one ulp in a figure's data
