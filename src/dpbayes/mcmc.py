"""Batch posterior of a normal population from truncated-Laplace releases: MCMC and quadrature.

The paper (Yildirim 2024, Section 4.1) compares its online SMC with a batch MCMC that targets
``p(theta | y_{1:n})`` for releases ``y_t = clamp(x_t, l_t, r_t) + (r_t - l_t) V_t`` made with a
fixed interval (eq. (14)); it uses MHAAR (ref. [29]) on the latent-variable model. Because the
likelihood ``p(y | mu, sigma; l, r, eps)`` is available in closed form
(:func:`dpbayes.truncation.loglik_privatised_normal`), the same posterior of ``theta`` is targeted
here *exactly* by a plain random-walk Metropolis-Hastings on ``(mu, log sigma)``: integrating the
latent ``x`` out does not change the marginal posterior of ``theta``, it only removes the
latent-variable noise from the acceptance ratio. :func:`grid_posterior` computes the same
posterior by quadrature on a ``(mu, sigma)`` grid; the tests check the samplers against it.

Priors: :class:`dpbayes.smc.NormalInvGammaPrior` (paper Section 4.1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp

from dpbayes import truncation
from dpbayes.smc import NormalInvGammaPrior
from dpbayes.validation import check_grid, check_int, check_positive, check_probability, check_rng

__all__ = ["MCMCResult", "GridPosterior", "log_posterior", "rwm_exact", "grid_posterior"]


@dataclass
class MCMCResult:
    """Chain after burn-in and summaries.

    Attributes
    ----------
    mu, sigma : ndarray, shape (n_iter - burn_in,)
        Post-burn-in draws.
    mean_mu, mean_sigma : float
        Posterior mean estimates (chain averages).
    acceptance : float
        Acceptance rate after burn-in.
    proposal_cov : ndarray, shape (2, 2)
        The frozen proposal covariance on ``(mu, log sigma)``.
    """

    mu: NDArray[np.float64]
    sigma: NDArray[np.float64]
    mean_mu: float
    mean_sigma: float
    acceptance: float
    proposal_cov: NDArray[np.float64]


def _check_data(y: ArrayLike, lower: ArrayLike, upper: ArrayLike) -> tuple[NDArray[np.float64], ...]:
    yy = np.asarray(y, dtype=float)
    if yy.ndim != 1 or yy.size == 0 or not np.all(np.isfinite(yy)):
        raise ValueError("y must be a non-empty 1-D array of finite released values")
    lo = np.broadcast_to(np.asarray(lower, dtype=float), yy.shape)
    hi = np.broadcast_to(np.asarray(upper, dtype=float), yy.shape)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo < hi)):
        raise ValueError("lower and upper must be finite with lower < upper for every release")
    return yy, lo, hi


def log_posterior(
    mu: ArrayLike,
    log_sigma: ArrayLike,
    y: ArrayLike,
    lower: ArrayLike,
    upper: ArrayLike,
    eps: float,
    prior: NormalInvGammaPrior = NormalInvGammaPrior(),
) -> NDArray[np.float64]:
    """Unnormalised log posterior of ``(mu, log sigma)`` given all releases (exact likelihood).

    ``mu`` and ``log_sigma`` broadcast against each other (any shape); the sum over releases is
    taken along a new last axis.
    """
    yy, lo, hi = _check_data(y, lower, upper)
    eps = check_positive("eps", eps)
    m = np.asarray(mu, dtype=float)[..., None]
    u = np.asarray(log_sigma, dtype=float)[..., None]
    ll = truncation.loglik_privatised_normal(yy, m, np.exp(u), lo, hi, eps).sum(axis=-1)
    return ll + prior.logpdf_mu_logsigma(m[..., 0], u[..., 0])


def rwm_exact(
    y: ArrayLike,
    lower: ArrayLike,
    upper: ArrayLike,
    eps: float,
    rng: np.random.Generator,
    *,
    n_iter: int = 20_000,
    burn_in: int = 5_000,
    prior: NormalInvGammaPrior = NormalInvGammaPrior(),
    init: tuple[float, float] | None = None,
    target_acceptance: float = 0.234,
    progress: Callable[[int, int], None] | None = None,
) -> MCMCResult:
    """Random-walk MH on ``(mu, log sigma)`` targeting ``p(theta | y_{1:n})`` exactly.

    A documented exact alternative to the paper's MHAAR baseline (Section 4.1, ref. [29]): same
    target, no latent variables. During burn-in the Gaussian proposal is adapted (adaptive
    Metropolis: covariance of the chain so far, scaled by a Robbins-Monro factor steering the
    acceptance rate to ``target_acceptance``); it is frozen afterwards, so the post-burn-in
    chain is a time-homogeneous MH chain with the exact posterior as its invariant law.

    Parameters
    ----------
    y, lower, upper : array_like, shape (n,)
        Releases and their intervals (scalars broadcast for a fixed interval).
    eps : float
        Privacy parameter of the releases.
    rng : numpy.random.Generator
        Source of randomness.
    n_iter, burn_in : int
        Total iterations and adaptive burn-in (``0 <= burn_in < n_iter``).
    prior : NormalInvGammaPrior
        Prior of ``(mu, sigma^2)``.
    init : (mu, sigma), optional
        Starting point; default: the median of ``y`` and the width of the widest interval / 4
        (a data-based start that needs no knowledge of the truth).
    target_acceptance : float
        Acceptance rate the burn-in adaptation aims at.
    progress : callable(i, n_iter), optional
        Called every 1000 iterations.
    """
    yy, lo, hi = _check_data(y, lower, upper)
    eps = check_positive("eps", eps)
    check_rng("rng", rng)
    n_iter = check_int("n_iter", n_iter, minimum=2)
    burn_in = check_int("burn_in", burn_in, minimum=0, maximum=n_iter - 1)
    check_probability("target_acceptance", target_acceptance, open_interval=True)
    if init is None:
        init = (float(np.median(yy)), float(np.max(hi - lo)) / 4.0)
    check_positive("init sigma", init[1])

    def logpost(theta: NDArray[np.float64]) -> float:
        ll = truncation.loglik_privatised_normal(yy, theta[0], np.exp(theta[1]), lo, hi, eps).sum()
        return float(ll + prior.logpdf_mu_logsigma(theta[0], theta[1]))

    theta = np.array([init[0], np.log(init[1])])
    lp = logpost(theta)
    cov = np.diag([max(np.var(yy) / yy.size, 1e-6), 0.01])
    log_scale = 0.0
    mean_run = theta.copy()
    cov_run = cov.copy()
    chain = np.empty((n_iter, 2))
    accepted_after = 0
    for i in range(n_iter):
        if i < burn_in:
            prop_cov = np.exp(2.0 * log_scale) * cov
        else:
            prop_cov = cov
        prop = theta + np.linalg.cholesky(prop_cov + 1e-12 * np.eye(2)) @ rng.standard_normal(2)
        lp_prop = logpost(prop)
        accept = np.log(rng.random()) < lp_prop - lp
        if accept:
            theta, lp = prop, lp_prop
        chain[i] = theta
        if i < burn_in:
            # Robbins-Monro step on the scale, running moments for the covariance.
            gamma = 1.0 / (i + 1) ** 0.6
            log_scale += gamma * (float(accept) - target_acceptance)
            delta = theta - mean_run
            mean_run = mean_run + delta / (i + 2)
            cov_run = cov_run + (np.outer(delta, theta - mean_run) - cov_run) / (i + 2)
            if i >= 200:
                cov = 2.38**2 / 2.0 * cov_run + 1e-10 * np.eye(2)
            if i == burn_in - 1:
                cov = np.exp(2.0 * log_scale) * cov  # freeze the tuned proposal
        else:
            accepted_after += int(accept)
        if progress is not None and (i + 1) % 1000 == 0:
            progress(i + 1, n_iter)
    kept = chain[burn_in:]
    sigma = np.exp(kept[:, 1])
    return MCMCResult(
        mu=kept[:, 0],
        sigma=sigma,
        mean_mu=float(kept[:, 0].mean()),
        mean_sigma=float(sigma.mean()),
        acceptance=accepted_after / (n_iter - burn_in),
        proposal_cov=cov,
    )


@dataclass
class GridPosterior:
    """Posterior of ``(mu, sigma)`` on a product grid (cell-width weights, normalised)."""

    mu_grid: NDArray[np.float64]
    sigma_grid: NDArray[np.float64]
    prob: NDArray[np.float64]  # shape (len(mu_grid), len(sigma_grid)), sums to 1
    mean_mu: float
    mean_sigma: float
    sd_mu: float
    sd_sigma: float


def grid_posterior(
    y: ArrayLike,
    lower: ArrayLike,
    upper: ArrayLike,
    eps: float,
    mu_grid: ArrayLike,
    sigma_grid: ArrayLike,
    prior: NormalInvGammaPrior = NormalInvGammaPrior(),
) -> GridPosterior:
    """Quadrature posterior of ``(mu, sigma)`` on a grid from the exact likelihood.

    The density in ``(mu, sigma)`` is prior(mu) * prior_{sigma^2}(sigma^2) * 2 sigma * likelihood;
    grid-cell widths as quadrature weights on both axes. The grid must cover the posterior mass (check that the
    edges carry negligible probability).
    """
    yy, lo, hi = _check_data(y, lower, upper)
    eps = check_positive("eps", eps)
    mg = check_grid("mu_grid", mu_grid)
    sg = check_grid("sigma_grid", sigma_grid, low=0.0)
    if sg[0] <= 0:
        raise ValueError("sigma_grid must be > 0")
    logp = np.empty((mg.size, sg.size))
    for i, m in enumerate(mg):  # one row at a time keeps memory at len(sigma_grid) * n
        ll = truncation.loglik_privatised_normal(yy[None, :], m, sg[:, None], lo[None, :], hi[None, :], eps).sum(axis=1)
        logp[i] = ll + prior.logpdf_mu_logsigma(m, np.log(sg)) - np.log(sg)  # d log sigma = d sigma / sigma
    wm = np.gradient(mg) if mg.size > 1 else np.ones(1)
    ws = np.gradient(sg) if sg.size > 1 else np.ones(1)
    logp = logp + np.log(wm)[:, None] + np.log(ws)[None, :]
    prob = np.exp(logp - logsumexp(logp))
    pm, ps = prob.sum(axis=1), prob.sum(axis=0)
    mean_mu, mean_sigma = float(pm @ mg), float(ps @ sg)
    return GridPosterior(
        mu_grid=mg,
        sigma_grid=sg,
        prob=prob,
        mean_mu=mean_mu,
        mean_sigma=mean_sigma,
        sd_mu=float(np.sqrt(pm @ (mg - mean_mu) ** 2)),
        sd_sigma=float(np.sqrt(ps @ (sg - mean_sigma) ** 2)),
    )
