"""Tests for dpbayes.core.extremes (scan, then bounded Brent)."""

import numpy as np
import pytest

from dpbayes.counting import metrics as cmet
from dpbayes.core import extremes as ex


def test_extreme_over_eps_finds_a_known_minimum():
    res = ex.extreme_over_eps(lambda e: (np.log(e) - np.log(0.37)) ** 2 + 2.0, 0.01, 10.0)
    assert res["eps"] == pytest.approx(0.37, rel=1e-3) and res["value"] == pytest.approx(2.0, abs=1e-7)
    res = ex.extreme_over_eps(lambda e: -e, 0.01, 10.0, maximize=True)  # maximum of -e at the left end
    assert res["at_boundary"] and res["eps"] == pytest.approx(0.01, rel=1e-3)


def test_extreme_beats_the_grid_for_the_paper_metric():
    f = lambda e: cmet.prob_lower_error("mean", 100, 0.3, e)
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


def test_limits_extend_the_end_cell_and_clip_the_bracket():
    f = lambda x: -((x - 1.3) ** 2)  # noqa: E731  the peak lies beyond the last grid point
    grid = np.linspace(0.0, 1.0, 11)
    x, _, _ = ex.refine_scanned_extreme(f, grid, f(grid), maximize=True)
    assert x == pytest.approx(1.0, abs=1e-8)  # no limit: the end cell only
    x, _, _ = ex.refine_scanned_extreme(f, grid, f(grid), maximize=True, limits=(None, 2.0))
    assert x == pytest.approx(1.3, abs=1e-8)  # reaches out to the limit
    x, _, _ = ex.refine_scanned_extreme(f, grid, f(grid), maximize=True, limits=(None, 1.2))
    assert 1.0 < x <= 1.2 and x == pytest.approx(1.2, abs=1e-6)  # never past it
    g = lambda x: (x + 0.25) ** 2  # noqa: E731  the minimum lies below the first grid point
    x, _, _ = ex.refine_scanned_extreme(g, grid, g(grid), limits=(-1.0, None))
    assert x == pytest.approx(-0.25, abs=1e-8)
    # a limit inside the best cell clips it; a bracket clipped to nothing keeps the scanned point
    h = lambda x: (x - 0.33) ** 2  # noqa: E731  best scanned point 0.3, its cell [0.2, 0.4] clipped at 0.32
    x, _, _ = ex.refine_scanned_extreme(h, grid, h(grid), limits=(None, 0.32))
    assert 0.3 < x <= 0.32 and x == pytest.approx(0.32, abs=1e-6)
    x, v, nfev = ex.refine_scanned_extreme(g, grid, g(grid), limits=(0.0, 0.0))
    assert (x, v, nfev) == (0.0, g(0.0), 0)


def test_nan_scan_values_are_skipped_and_all_nan_is_rejected():
    f = lambda x: -((x - 0.3137) ** 2)  # noqa: E731
    grid = np.linspace(0.0, 1.0, 11)
    values = f(grid)
    values[0] = np.nan
    x, _, _ = ex.refine_scanned_extreme(f, grid, values, maximize=True)
    assert x == pytest.approx(0.3137, abs=1e-8)
    with pytest.raises(ValueError, match="NaN"):
        ex.refine_scanned_extreme(f, grid, np.full(11, np.nan))
