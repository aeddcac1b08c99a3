"""Window spreads of the exploration offsets and their first-to-last ratio (dpbayes.smc.exploration; paper §3.2.1)."""

import numpy as np
import pytest

from dpbayes.smc import exploration


def test_window_spread_of_known_scales():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, s, 4000) for s in (4.0, 2.0, 1.0)])
    np.testing.assert_allclose(exploration.window_spread(x, 3), [4.0, 2.0, 1.0], rtol=0.05)


def test_ratio_of_shrinking_offsets_is_below_one_with_interval():
    rng = np.random.default_rng(1)
    t = np.arange(1, 1001)
    x = rng.standard_normal(1000) / np.sqrt(t)  # a posterior sd falling like 1/sqrt(t)
    ratio, lo, hi = exploration.spread_ratio(x, 10, n_boot=500, seed=2)
    assert lo <= ratio <= hi < 1.0


def test_constant_spread_is_not_declared_shrinking():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(2000)
    ratio, lo, hi = exploration.spread_ratio(x, 4, n_boot=500, seed=4)
    assert lo < 1.0 < hi


@pytest.mark.parametrize("args, match", [
    ((np.ones(3), 2), "offsets"),
    ((np.ones(10), 1), "n_windows"),
    ((np.array([1.0, np.nan, 2.0, 3.0]), 2), "offsets"),
])
def test_validation_names_parameter(args, match):
    with pytest.raises(ValueError, match=match):
        exploration.window_spread(*args)


def test_level_validated():
    with pytest.raises(ValueError, match="level"):
        exploration.spread_ratio(np.arange(10.0), 2, level=1.0)


def test_reference_window_and_its_validation():
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal(0, 10.0, 500), rng.normal(0, 1.0, 1500)])  # shrinks once, then stays
    assert exploration.spread_ratio(x, 4, n_boot=500, seed=1)[2] < 0.2
    ratio, lo, hi = exploration.spread_ratio(x, 4, n_boot=500, seed=1, reference=1)
    assert lo < 1.0 < hi
    with pytest.raises(ValueError, match="reference"):
        exploration.spread_ratio(x, 4, reference=3)
