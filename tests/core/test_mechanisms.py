"""Tests for dpbayes.core.mechanisms: laws of the noise and exact privacy loss."""

import numpy as np
import pytest

from dpbayes.core import mechanisms as mech


@pytest.mark.parametrize("eps", [1e-3, 0.1, 1.0, 5.0])
def test_truncated_geometric_is_stochastic_and_eps_private(eps):
    m = mech.truncated_geometric_matrix(30, eps)
    np.testing.assert_allclose(m.sum(axis=0), 1.0, rtol=1e-12)
    loss = mech.max_privacy_loss(m)
    assert loss <= eps * (1 + 1e-9)
    # the bound is attained: the mechanism is not more private than claimed
    assert loss >= eps * (1 - 1e-9)


def test_max_privacy_loss_detects_a_violation():
    m = mech.truncated_geometric_matrix(10, 0.5)
    m[:, 3] = m[:, 4]
    m[:, 4] = mech.truncated_geometric_matrix(10, 2.0)[:, 4]
    assert mech.max_privacy_loss(m) > 0.5


def test_geometric_logpmf_sums_to_one_and_is_eps_private():
    eps = 0.7
    z = np.arange(-200, 201)
    lp0 = mech.geometric_count_logpmf(z, 0, eps)
    lp1 = mech.geometric_count_logpmf(z, 1, eps)
    assert np.exp(lp0).sum() == pytest.approx(1.0, abs=1e-12)
    assert np.max(np.abs(lp0 - lp1)) == pytest.approx(eps, rel=1e-12)


def test_laplace_logpdf_privacy_loss_bounded_by_eps():
    eps = 0.3
    y = np.linspace(-50, 50, 20001)
    loss = np.abs(mech.laplace_count_logpdf(y, 7, eps) - mech.laplace_count_logpdf(y, 8, eps))
    assert loss.max() <= eps + 1e-12
    assert loss.max() >= eps - 1e-12


def test_geometric_sampler_matches_pmf():
    rng = np.random.default_rng(3)
    eps = 0.5
    z = mech.geometric_count(np.zeros(200_000, dtype=int), eps, rng)
    for k in (-2, 0, 1, 3):
        p = np.exp(mech.geometric_count_logpmf(k, 0, eps))
        freq = np.mean(z == k)
        assert abs(freq - p) < 4 * np.sqrt(p * (1 - p) / z.size)


def test_laplace_sampler_scale():
    rng = np.random.default_rng(4)
    y = mech.laplace_count(np.full(200_000, 5), 0.25, rng)
    # E|R| = 1/eps
    assert abs(np.mean(np.abs(y - 5)) - 4.0) < 4 * 4.0 / np.sqrt(y.size)


def test_bad_input():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="eps"):
        mech.laplace_count([1, 2], -1.0, rng)
    with pytest.raises(TypeError, match="rng"):
        mech.geometric_count([1, 2], 1.0, 3)
    with pytest.raises(ValueError, match="counts"):
        mech.laplace_count([-1], 1.0, rng)
    with pytest.raises(ValueError, match="n"):
        mech.truncated_geometric_matrix(0, 1.0)
