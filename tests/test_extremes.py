"""Tests for dpbayes.extremes (scan, then bounded Brent)."""

import numpy as np
import pytest

from dpbayes import counting as ct
from dpbayes import extremes as ex


def test_extreme_over_eps_finds_a_known_minimum():
    res = ex.extreme_over_eps(lambda e: (np.log(e) - np.log(0.37)) ** 2 + 2.0, 0.01, 10.0)
    assert res["eps"] == pytest.approx(0.37, rel=1e-3) and res["value"] == pytest.approx(2.0, abs=1e-7)
    res = ex.extreme_over_eps(lambda e: -e, 0.01, 10.0, maximize=True)  # maximum of -e at the left end
    assert res["at_boundary"] and res["eps"] == pytest.approx(0.01, rel=1e-3)


def test_extreme_beats_the_grid_for_the_paper_metric():
    f = lambda e: ct.prob_lower_error("mean", 100, 0.3, e)
    res = ex.extreme_over_eps(f, 0.01, 10.0, n_coarse=11)
    assert res["value"] <= res["scan_values"].min() + 1e-15


def test_bad_range_is_rejected_with_named_parameter():
    with pytest.raises(ValueError, match="eps_min"):
        ex.extreme_over_eps(lambda e: e, 1.0, 0.5)


def test_refinement_finds_the_peak_between_grid_points_and_keeps_a_better_grid_point():
    f = lambda x: -((x - 0.3137) ** 2)  # noqa: E731
    grid = np.linspace(0.0, 1.0, 11)
    x, v, nfev = ex.refine_scanned_extreme(f, grid, f(grid), maximize=True)
    assert x == pytest.approx(0.3137, abs=1e-8) and v == pytest.approx(0.0, abs=1e-15) and nfev > 0
    # a function the refinement cannot improve on inside the bracket: the grid point stays
    g = lambda x: 1.0 if x == 0.5 else 0.0  # noqa: E731
    x, v, _ = ex.refine_scanned_extreme(g, grid, np.array([g(t) for t in grid]), maximize=True)
    assert (x, v) == (0.5, 1.0)
    with pytest.raises(ValueError, match="grid"):
        ex.refine_scanned_extreme(f, grid[::-1], f(grid))
