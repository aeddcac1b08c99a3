"""Tests for dpbayes.counting.odds (an individual's posterior odds after the release)."""

import numpy as np
import pytest
from scipy import stats

from dpbayes.counting import odds as co


@pytest.mark.parametrize("eps", [0.1, 1.0])
def test_individual_odds_shift_is_bounded_by_eps_and_attained(eps):
    y = np.linspace(-300, 400, 7001)
    shift = co.individual_odds_shift(100, 0.3, eps, y)
    assert shift.max() <= eps * (1 + 1e-12)
    assert shift.max() == pytest.approx(eps, rel=1e-9)  # attained outside [0, n]


def test_individual_odds_shift_against_dense_sum():
    n, p, eps = 12, 0.3, 0.8
    y = np.array([-3.0, 0.4, 5.5, 11.0, 20.0])
    c = np.arange(n)
    b = stats.binom.pmf(c, n - 1, p)
    f1 = (b[None, :] * np.exp(-eps * np.abs(y[:, None] - c[None, :] - 1))).sum(axis=1)
    f0 = (b[None, :] * np.exp(-eps * np.abs(y[:, None] - c[None, :]))).sum(axis=1)
    np.testing.assert_allclose(co.individual_odds_shift(n, p, eps, y), np.abs(np.log(f1 / f0)), rtol=1e-10, atol=1e-13)
