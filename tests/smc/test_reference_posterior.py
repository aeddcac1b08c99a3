"""A quadrature reference posterior refined until its moments settle (dpbayes.smc.reference_posterior)."""

from __future__ import annotations

import numpy as np
import pytest

from dpbayes.smc import mcmc, reference_posterior as R, samplers as smc, truncation


def _adaptive_releases(eps, n, seed):
    rng = np.random.default_rng(seed)
    x = 50.0 + np.sqrt(10.0) * rng.standard_normal(n)
    b = truncation.best_interval(eps, "paper", refine=True)[1]
    r = smc.smc_exact(x, eps, np.random.default_rng([seed, 1]), n_particles=100, ab=(-b, b))
    return r.y, r.lower, r.upper


@pytest.mark.parametrize("eps", [0.5, 1.0])
def test_the_moments_stay_within_the_tolerance_under_one_more_refinement(eps):
    y, lo, hi = _adaptive_releases(eps, 60, 3)
    ref = R.reference_posterior(y, lo, hi, eps, tol=0.02)
    if not ref.converged:  # a reported non-convergence is an answer too, but then nothing is claimed
        assert ref.last_change > ref.tol and len(ref.n_grids) == 4
        return
    finer = mcmc.quadrature_posterior(y, lo, hi, eps, n_grid=2 * ref.n_grids[-1] - 1)
    assert max(R.moment_changes(ref.posterior, finer).values()) <= ref.tol


def test_non_convergence_is_reported_not_hidden():
    y, lo, hi = _adaptive_releases(0.5, 60, 3)
    ref = R.reference_posterior(y, lo, hi, 0.5, tol=1e-9, n_grid=9, max_refinements=1)
    assert not ref.converged and ref.n_grids == (9, 17) and ref.last_change > 1e-9


def test_moment_changes_are_in_posterior_units():
    a = mcmc.QuadraturePosterior(1.0, 2.0, 0.5, 1.0, np.zeros(2), 0.0, 1)
    b = mcmc.QuadraturePosterior(1.1, 2.2, 0.4, 1.0, np.zeros(2), 0.0, 1)
    ch = R.moment_changes(a, b)
    assert ch == pytest.approx({"mean_mu": 0.25, "sd_mu": 0.25, "mean_sigma": 0.2 / 2.2})


def test_bad_arguments():
    with pytest.raises(ValueError):
        R.reference_posterior([1.0], 0.0, 1.0, 1.0, tol=0.0)
    with pytest.raises(ValueError):
        R.reference_posterior([1.0], 0.0, 1.0, 1.0, max_refinements=0)
