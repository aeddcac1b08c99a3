"""The notebooks left out of the narrow-path validation still compute the same on the narrow path.

``make notebooks-narrow`` validates on the narrow floating-point path (``tests/narrow_cpu.py``) only
the notebooks whose stored outputs were measured to differ there (``tests/narrow-survey.json``,
written by ``make narrow-survey``, which runs every notebook at its defaults on both paths). For
every other notebook this guard runs it on the narrow path at its test parameters (the small,
non-default values of ``test_nondefault_runs.py``) and requires every compared output and every
figure's data to equal, exactly, the run of the same parameters on this machine's own path that
``make unit`` kept (``DPBAYES_KEEP_RUNS``). A notebook that starts to differ fails here: survey
again, and it joins the validated set.

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


def sensitive_notebooks() -> list[Path]:
    """The notebooks the narrow path validates in full (paths, in the survey's order)."""
    return [ROOT / rel for rel in survey()["differ"]]


def guarded_notebooks() -> list[Path]:
    differ = set(survey()["differ"])
    return [nb for nb in NOTEBOOKS if nb.relative_to(ROOT).as_posix() not in differ]


def test_survey_covers_every_notebook_once() -> None:
    # a new notebook, or one renamed, is not in the survey yet: survey again (make narrow-survey)
    record = survey()
    listed = record["differ"] + record["same"]
    assert len(listed) == len(set(listed)), "a notebook is listed twice"
    assert sorted(listed) == sorted(nb.relative_to(ROOT).as_posix() for nb in NOTEBOOKS), \
        "tests/narrow-survey.json does not list every notebook exactly once: run make narrow-survey"


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
