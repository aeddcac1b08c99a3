"""Sensitivity of a group median under one record replaced (dpbayes.smc.group_median; paper §4.2)."""

import numpy as np
import pytest

from dpbayes.smc import group_median


@pytest.mark.parametrize("m", range(1, 8))
def test_exhaustive_search_equals_closed_form(m):
    lo, hi = 10.0, 250.0
    exact = group_median.group_median_sensitivity(m, lo, hi)
    assert group_median.exhaustive_group_median_sensitivity(m, lo, hi, grid_points=5) == pytest.approx(exact, rel=1e-12)
    assert exact == pytest.approx(hi - lo if m % 2 else (hi - lo) / 2)


def test_worst_groups_by_hand():
    # {l, l, r}: replacing an l by r moves the median from l to r
    assert group_median.largest_median_change([0.0, 0.0, 1.0], 0.0, 1.0) == pytest.approx(1.0)
    # {l, r}: the median moves by half the range at most
    assert group_median.largest_median_change([0.0, 1.0], 0.0, 1.0) == pytest.approx(0.5)
    # a tight group moves only to its neighbouring order statistic
    assert group_median.largest_median_change([0.4, 0.5, 0.6], 0.0, 1.0) == pytest.approx(0.1)


def test_largest_change_against_brute_force_over_replacement_values():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, size=(40, 5))
    vals = np.linspace(0, 1, 401)
    brute = np.zeros(40)
    for i in range(5):
        for v in vals:
            y = x.copy()
            y[:, i] = v
            brute = np.maximum(brute, np.abs(np.median(y, axis=1) - np.median(x, axis=1)))
    np.testing.assert_allclose(group_median.largest_median_change(x, 0.0, 1.0), brute, rtol=1e-12)


def test_never_more_than_one_record():
    rng = np.random.default_rng(1)
    for m in range(1, 10):
        x = rng.uniform(-3, 3, size=(200, m))
        assert np.all(group_median.largest_median_change(x, -3.0, 3.0) <= 6.0 + 1e-12)


@pytest.mark.parametrize("kwargs, match", [
    (dict(m=0, lower=0.0, upper=1.0), "m"),
    (dict(m=3, lower=1.0, upper=1.0), "lower"),
    (dict(m=3, lower=0.0, upper=np.inf), "finite"),
])
def test_validation_names_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        group_median.group_median_sensitivity(**kwargs)


def test_records_outside_limits_rejected():
    with pytest.raises(ValueError, match="groups"):
        group_median.largest_median_change([0.0, 2.0], 0.0, 1.0)
    with pytest.raises(ValueError, match="grid_points"):
        group_median.exhaustive_group_median_sensitivity(3, 0.0, 1.0, grid_points=1)
