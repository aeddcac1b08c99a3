"""Batch posterior of a normal population from truncated-Laplace releases: MCMC and quadrature.

The paper (Yildirim 2024, Section 4.1) compares its online SMC with a batch MCMC that targets
``p(theta | y_{1:n})`` for releases ``y_t = clamp(x_t, l_t, r_t) + (r_t - l_t) V_t`` made with a
fixed interval (eq. (14)); it uses MHAAR (Andrieu, Yildirim, Doucet and Chopin, arXiv:2101.01253) on the latent-variable model. Because the
likelihood ``p(y | mu, sigma; l, r, eps)`` is available in closed form
(:func:`dpbayes.smc.truncation.loglik_privatised_normal`), the same posterior of ``theta`` is targeted
here *exactly* by a plain random-walk Metropolis-Hastings on ``(mu, log sigma)``: integrating the
latent ``x`` out does not change the marginal posterior of ``theta``, it only removes the
latent-variable noise from the acceptance ratio. :func:`grid_posterior` computes the same
posterior by quadrature on a ``(mu, sigma)`` grid; the tests check the samplers against it.
:func:`quadrature_posterior` places such a grid itself (around the posterior mode, in the
coordinates of the mode's curvature, widened until its edges carry no mass), which makes the exact
posterior of ``n = 1000`` releases cost a fraction of a second: the chapter's reference for the
Monte-Carlo error of the samplers and for the baselines simulated without a sampler.

Priors: :class:`dpbayes.smc.samplers.NormalInvGammaPrior` (paper Section 4.1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize
from scipy.special import logsumexp

from dpbayes.smc import truncation
from dpbayes.smc.samplers import NormalInvGammaPrior
from dpbayes.core.validation import check_grid, check_int, check_positive, check_probability, check_rng

__all__ = ["MCMCResult", "GridPosterior", "QuadraturePosterior", "log_posterior", "rwm_exact", "grid_posterior",
           "quadrature_posterior"]


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

    A documented exact alternative to the paper's MHAAR baseline (Section 4.1; Andrieu et al., arXiv:2101.01253): same
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


@dataclass
class QuadraturePosterior:
    """Exact posterior summaries of ``(mu, sigma)`` from :func:`quadrature_posterior`.

    Attributes
    ----------
    mean_mu, mean_sigma, sd_mu, sd_sigma : float
        Posterior means and standard deviations.
    mode : ndarray, shape (2,)
        Posterior mode in ``(mu, log sigma)``, where the grid is centred.
    edge_mass : float
        Largest posterior probability in one outer row or column of the final grid (the
        quadrature's truncation error is of this order; below ``edge_tol`` unless ``max_expand``
        ran out).
    n_points : int
        Grid points of the final grid (likelihood evaluations = ``n_points * n``).
    """

    mean_mu: float
    mean_sigma: float
    sd_mu: float
    sd_sigma: float
    mode: NDArray[np.float64]
    edge_mass: float
    n_points: int


_SINH_SCALE = 3.0


def _hessian(f: Callable[[NDArray[np.float64]], float], x: NDArray[np.float64], h: NDArray[np.float64]) -> NDArray[np.float64]:
    """Central-difference Hessian of ``f`` at ``x`` with steps ``h`` per coordinate."""
    H = np.empty((2, 2))
    f0 = f(x)
    e = [np.array([h[0], 0.0]), np.array([0.0, h[1]])]
    for i in range(2):
        H[i, i] = (f(x + e[i]) - 2.0 * f0 + f(x - e[i])) / h[i] ** 2
    H[0, 1] = H[1, 0] = (f(x + e[0] + e[1]) - f(x + e[0] - e[1]) - f(x - e[0] + e[1]) + f(x - e[0] - e[1])) / (4.0 * h[0] * h[1])
    return H


def quadrature_posterior(
    y: ArrayLike,
    lower: ArrayLike,
    upper: ArrayLike,
    eps: float,
    prior: NormalInvGammaPrior = NormalInvGammaPrior(),
    *,
    n_grid: int = 25,
    half_width: float = 6.0,
    edge_tol: float = 1e-7,
    max_expand: int = 12,
) -> QuadraturePosterior:
    """Exact posterior means of ``(mu, sigma)`` by quadrature on a grid placed from the data.

    The posterior ``p(theta | y_{1:n}) ~ prior(theta) prod_t p(y_t | theta; l_t, r_t, eps)`` uses the
    closed-form likelihood of each release (:func:`dpbayes.smc.truncation.loglik_privatised_normal`; the
    paper's eq. (6) marginal, clamped normal plus Laplace noise), so it is exact for fixed intervals
    (eq. (14)) and for adaptive ones alike: an interval chosen from earlier releases and the sampler's
    own random draws enters the likelihood as a known constant (paper Proposition 1's factorisation).

    Steps: the mode of the log posterior in ``(mu, log sigma)`` is found by Nelder-Mead from two
    data-based starts (the median release with ``sigma`` = a quarter of the median interval width,
    and with the prior's ``sigma`` = 1); the Hessian there (central differences) defines affine
    coordinates ``s`` with ``theta = mode + L s``, ``L L^T = H^{-1}``; the log posterior is evaluated
    on an ``n_grid x n_grid`` grid over ``s in [-half_width, half_width]^2`` (spacing about half a
    posterior standard deviation for ``n_grid = 25``) and summed with equal weights (the trapezoid
    rule for a density negligible at the edges). While an outer row or column carries more than
    ``edge_tol`` of the mass, the grid is extended on that side by half its width at the same
    spacing (at most ``max_expand`` times); ``edge_mass`` reports what is left.

    Parameters
    ----------
    y, lower, upper : array_like, shape (n,)
        Releases and the interval of each (scalars broadcast for a fixed interval).
    eps : float
        Privacy parameter of the releases.
    prior : NormalInvGammaPrior
        Prior of ``(mu, sigma^2)`` (paper Section 4.1 by default).
    n_grid : int
        Grid points per axis before any extension (>= 5).
    half_width : float
        Initial grid half-width in curvature units (posterior standard deviations for a Gaussian).
    edge_tol : float
        Largest probability allowed in one outer row or column.
    max_expand : int
        Number of one-sided extensions allowed.

    Returns
    -------
    QuadraturePosterior
    """
    yy, lo, hi = _check_data(y, lower, upper)
    eps = check_positive("eps", eps)
    n_grid = check_int("n_grid", n_grid, minimum=5)
    half_width = check_positive("half_width", half_width)
    check_probability("edge_tol", edge_tol, open_interval=True)
    max_expand = check_int("max_expand", max_expand, minimum=0)

    def logpost(theta: NDArray[np.float64]) -> NDArray[np.float64]:
        """Log posterior at points ``theta[..., (mu, log sigma)]``, any leading shape."""
        m = theta[..., 0][..., None]
        u = theta[..., 1][..., None]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            ll = truncation._loglik(yy, m, np.exp(u), lo, hi, np.asarray(eps, dtype=float)).sum(axis=-1)
            return ll + prior.logpdf_mu_logsigma(m[..., 0], u[..., 0])

    def neg(theta: NDArray[np.float64]) -> float:
        if not np.all(np.isfinite(theta)) or abs(theta[1]) > 50:
            return np.inf
        v = float(logpost(np.asarray(theta, dtype=float)))
        return -v if np.isfinite(v) else np.inf

    width = float(np.median(hi - lo))
    starts = [np.array([float(np.median(yy)), np.log(width / 4.0)]), np.array([float(np.median(yy)), 0.0])]
    best = None
    for x0 in starts:
        res = optimize.minimize(neg, x0, method="Nelder-Mead",
                                options={"xatol": 1e-7, "fatol": 1e-9, "maxiter": 4000, "initial_simplex":
                                         [x0, x0 + [max(width, 1e-3) / 10.0, 0.0], x0 + [0.0, 0.3]]})
        if best is None or res.fun < best.fun:
            best = res
    assert best is not None
    mode = np.asarray(best.x, dtype=float)
    H = _hessian(neg, mode, np.array([max(1e-4 * width, 1e-6), 1e-4]))
    evals, evecs = np.linalg.eigh(0.5 * (H + H.T))
    # a flat or curved-away direction: fall back to a generous scale there (the edge checks widen it)
    evals = np.where(evals > 0, evals, np.nan)
    scale = np.where(np.isfinite(evals), 1.0 / np.sqrt(evals), np.array([width, 1.0]))
    L = evecs * scale[None, :]
    # Coordinates: theta = mode + L S(t), S(t) = a sinh(t / a) per axis: linear (curvature units) near the
    # mode, exponentially stretched in the tails, so a prior-shaped tail (the likelihood of clamped releases
    # tends to a positive constant as sigma -> infinity) is reached with few points; trapezoid rule in t
    # with the Jacobian cosh(t1/a) cosh(t2/a).
    a = _SINH_SCALE
    step = 2.0 * half_width / (n_grid - 1)
    k_lo = np.array([-(n_grid // 2)] * 2)
    k_hi = np.array([n_grid // 2] * 2)
    cache: dict[tuple[int, int], float] = {}

    def evaluate() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        i = np.arange(k_lo[0], k_hi[0] + 1)
        j = np.arange(k_lo[1], k_hi[1] + 1)
        ii, jj = np.meshgrid(i, j, indexing="ij")
        t = step * np.stack([ii, jj], axis=-1).astype(float)
        with np.errstate(over="ignore", invalid="ignore"):
            theta = mode + (a * np.sinh(t / a)) @ L.T
        todo = [(p, q) for p, q in zip(ii.ravel(), jj.ravel()) if (p, q) not in cache]
        if todo:
            tt = step * np.array(todo, dtype=float)
            with np.errstate(over="ignore", invalid="ignore"):
                th = mode + (a * np.sinh(tt / a)) @ L.T
            vals = np.concatenate([logpost(th[c:c + 200]) for c in range(0, len(th), 200)])
            cache.update(zip(todo, vals))
        lp = np.array([cache[(p, q)] for p, q in zip(ii.ravel(), jj.ravel())]).reshape(ii.shape)
        lp = np.where(np.isfinite(lp), lp, -np.inf) + np.log(np.cosh(t[..., 0] / a)) + np.log(np.cosh(t[..., 1] / a))
        return theta, np.exp(lp - logsumexp(lp))

    def edges(theta: NDArray[np.float64], prob: NDArray[np.float64]) -> dict[tuple[int, int], float]:
        # mass of each outer row/column, and its share of E[sigma] (the heavier tail of the two)
        with np.errstate(over="ignore", invalid="ignore"):
            ps = np.where(prob > 0, prob * np.exp(theta[..., 1]), 0.0)
        ps = ps / ps.sum()
        return {(0, -1): max(prob[0].sum(), ps[0].sum()), (0, 1): max(prob[-1].sum(), ps[-1].sum()),
                (1, -1): max(prob[:, 0].sum(), ps[:, 0].sum()), (1, 1): max(prob[:, -1].sum(), ps[:, -1].sum())}

    grow = max(1, n_grid // 4)
    for _ in range(max_expand):
        theta, prob = evaluate()
        sides = edges(theta, prob)
        if max(sides.values()) <= edge_tol:
            break
        for (axis, side), mass in sides.items():
            if mass > edge_tol:
                if side < 0:
                    k_lo[axis] -= grow
                else:
                    k_hi[axis] += grow
    theta, prob = evaluate()
    edge = max(edges(theta, prob).values())
    with np.errstate(over="ignore", invalid="ignore"):
        # far-tail points carry probability 0 (underflow) and may have sigma = inf
        live = prob > 0
        mu, sig, w = theta[..., 0][live], np.exp(theta[..., 1][live]), prob[live]
        mean_mu, mean_sigma = float(w @ mu), float(w @ sig)
        sd_mu, sd_sigma = float(np.sqrt(w @ (mu - mean_mu) ** 2)), float(np.sqrt(w @ (sig - mean_sigma) ** 2))
    return QuadraturePosterior(
        mean_mu=mean_mu,
        mean_sigma=mean_sigma,
        sd_mu=sd_mu,
        sd_sigma=sd_sigma,
        mode=mode,
        edge_mass=float(edge),
        n_points=int(prob.size),
    )
