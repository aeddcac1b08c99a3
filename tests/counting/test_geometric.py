"""Tests for dpbayes.counting.geometric: the geometric baseline and the LP optimum over every private estimator."""

import numpy as np
import pytest

from dpbayes.counting import geometric as cgeo
from dpbayes.counting import metrics as cmet


def test_geometric_metrics_against_simulation():
    from dpbayes.core.mechanisms import geometric_count

    n, p, eps = 20, 0.3, 0.5
    rng = np.random.default_rng(8)
    c = rng.binomial(n, p, size=200_000)
    z = geometric_count(c, eps, rng)
    err = np.abs(c - z)
    assert abs(cgeo.geometric_mean_abs_error("naive", n, p, eps) - err.mean()) < 4 * err.std() / np.sqrt(c.size)
    err = np.abs(c - np.clip(z, 0, n))
    assert abs(cgeo.geometric_mean_abs_error("clamped", n, p, eps) - err.mean()) < 4 * err.std() / np.sqrt(c.size)


def test_geometric_median_beats_other_remaps():
    n, p, eps = 30, 0.3, 0.4
    med = cgeo.geometric_mean_abs_error("median", n, p, eps)
    for other in ("naive", "clamped", "mean"):
        assert med <= cgeo.geometric_mean_abs_error(other, n, p, eps) + 1e-12


@pytest.mark.parametrize("p,eps", [(0.3, 0.1), (0.3, 1.0), (0.05, 2.0)])
def test_optimal_private_estimator_is_a_lower_bound_attained_by_geometric_median(p, eps):
    """Ghosh et al. (2009): geometric mechanism + Bayes remap is optimal among eps-DP estimators."""
    n = 20
    lp = cgeo.optimal_private_estimator(n, p, eps).risk
    geo = cgeo.geometric_mean_abs_error("median", n, p, eps)
    assert geo == pytest.approx(lp, abs=1e-7)
    for name in ("naive", "clamped", "mean", "median"):
        assert lp <= cmet.mean_abs_error(name, n, p, eps) + 1e-9


@pytest.mark.parametrize("p,eps", [(0.3, 1.0), (0.02, 0.3)])
def test_optimal_private_estimator_at_n100(p, eps):
    """Regression: the default solver (HiGHS) fails on these; the fallback solves them."""
    sol = cgeo.optimal_private_estimator(100, p, eps)
    assert sol.info["dp_verified"] and sol.privacy_loss <= eps * (1 + 1e-9)
    # the interior-point answer (after the DP repair) is accurate to ~1e-6 relative
    assert sol.risk == pytest.approx(cgeo.geometric_mean_abs_error("median", 100, p, eps), rel=1e-5)
