"""Compare the figures written while `make notebooks` ran with the stored ones in figures/.

`make test` sets DPBAYES_FRESH_FIGURES to the directory the notebooks wrote to. Run on its own
(without that variable) this module is skipped, because there is nothing fresh to compare.
"""

import os
from pathlib import Path

import pytest

from dpbayes.book.figures import compare_figure_dirs

STORED = Path(__file__).resolve().parents[1] / "figures"
FRESH = os.environ.get("DPBAYES_FRESH_FIGURES")


@pytest.mark.skipif(not FRESH, reason="set DPBAYES_FRESH_FIGURES (make test does) to compare fresh figures")
def test_fresh_figures_match_stored():
    assert FRESH is not None
    assert any(STORED.rglob("*.json")), "no stored figures under figures/"
    # DPBAYES_FRESH_NOTEBOOKS (make figures-narrow): the notebooks that ran, when not all did
    ran = os.environ.get("DPBAYES_FRESH_NOTEBOOKS")
    notebooks = [Path(p).name for p in ran.split()] if ran is not None else None
    assert notebooks is None or notebooks, "DPBAYES_FRESH_NOTEBOOKS names no notebook"
    problems = compare_figure_dirs(STORED, Path(FRESH), notebooks=notebooks)
    assert not problems, "figures differ from the stored ones:\n" + "\n".join(map(str, problems))
