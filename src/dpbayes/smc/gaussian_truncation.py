"""Truncate-then-Gaussian releases of a normal population: calibration, likelihood, Fisher information.

Source: Yildirim (2024), *Differentially private online Bayesian estimation with adaptive
truncation* ("the paper"), Section 2 (after Theorem 2) and Section 5: the method "applies to the
Gaussian mechanism in an almost identical manner", because only the law of ``Y_t`` given the
clamped value changes. The paper does not carry this out; this module does, for the part of the
method that decides the truncation interval (the Fisher information, paper eqs. (6) and (13)).

An individual with sensitive value ``x`` reports

    Y = T_l^r(x) + W,   T_l^r(x) = min(max(x, l), r),   W ~ N(0, s^2),   s = kappa (r - l),

where ``kappa`` is the noise standard deviation per unit of sensitivity. With ``kappa`` from
:func:`gaussian_noise_multiplier` each release is ``(eps, delta)``-differentially private (the
analytic Gaussian mechanism of Balle and Wang, 2018, Theorem 8), the guarantee the paper's
Section 2 alludes to ("the Gaussian mechanism can also provide (eps, delta)-DP").

For ``X ~ N(mu, sigma^2)`` the density of ``Y`` is closed form (:func:`loglik_privatised_normal_gaussian`),
so, as for the Laplace mechanism in :mod:`dpbayes.smc.truncation`, the Fisher information is a
one-dimensional quadrature and the best interval an exact optimisation. Parametrisation as in
:mod:`dpbayes.smc.truncation`: ``theta = (mu, sigma)``, index 0 is ``mu``, index 1 is ``sigma``.
Beyond the paper.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from dpbayes.core.extremes import refine_scanned_extreme

# the same input checks as the Laplace module (finite arrays, r > l)
from dpbayes.smc.truncation import _finite, _interval, fisher_score
from dpbayes.core.validation import check_choice, check_grid, check_in_range, check_positive, check_rng

__all__ = [
    "gaussian_mechanism_delta",
    "gaussian_noise_multiplier",
    "sample_privatised_gaussian",
    "loglik_privatised_normal_gaussian",
    "fisher_information_normal_gaussian",
    "fisher_information_gaussian",
    "best_interval_gaussian",
]

FloatArray = NDArray[np.float64]

_SQRT2 = np.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
_SCORES = ("paper", "harmonic")


def _scalar(name: str, value: Any) -> float:
    if np.ndim(value) != 0:
        raise ValueError(f"{name} must be a scalar")
    return float(value)


# --------------------------------------------------------------------------------------------
# privacy calibration
# --------------------------------------------------------------------------------------------
def gaussian_mechanism_delta(noise_multiplier: ArrayLike, eps: ArrayLike) -> Any:
    """Smallest ``delta`` for which adding ``N(0, (kappa Delta)^2)`` to a ``Delta``-sensitive value is ``(eps, delta)``-DP.

    The exact privacy profile of the Gaussian mechanism (Balle and Wang, 2018, Theorem 8):

        delta(eps) = Phi(1/(2 kappa) - eps kappa) - exp(eps) Phi(-1/(2 kappa) - eps kappa),

    with ``kappa = s / Delta`` the noise standard deviation per unit of sensitivity. It is the
    hockey-stick divergence ``int max(0, p(y) - e^eps p'(y)) dy`` between the release densities
    of two neighbouring inputs at distance ``Delta``. The second term is formed in log space, so
    large ``eps`` does not overflow.

    Parameters
    ----------
    noise_multiplier : array_like
        ``kappa > 0``.
    eps : array_like
        ``eps >= 0``.

    Returns
    -------
    float or ndarray
        ``delta`` in ``[0, 1]``, of the broadcast shape.
    """
    kappa = np.asarray(check_positive("noise_multiplier", noise_multiplier), dtype=float)
    eps_arr = np.asarray(check_in_range("eps", eps, 0.0, np.inf), dtype=float)
    first = special.ndtr(0.5 / kappa - eps_arr * kappa)
    second = np.exp(eps_arr + special.log_ndtr(-0.5 / kappa - eps_arr * kappa))
    delta = np.clip(first - second, 0.0, 1.0)
    return float(delta) if delta.ndim == 0 else delta


def gaussian_noise_multiplier(eps: float, delta: float) -> float:
    """Noise standard deviation per unit of sensitivity, ``kappa``, that makes the Gaussian mechanism ``(eps, delta)``-DP.

    The smallest ``kappa`` with :func:`gaussian_mechanism_delta` ``(kappa, eps) <= delta`` (the
    analytic calibration of Balle and Wang, 2018, Algorithm 1, solved here by root finding on
    ``log kappa``; the profile decreases in ``kappa``). Unlike the classical bound
    ``sqrt(2 log(1.25/delta))/eps`` it is exact and valid for every ``eps > 0``.

    Parameters
    ----------
    eps : float
        ``> 0``.
    delta : float
        In ``(0, 1)``.

    Returns
    -------
    float
        ``kappa``, to a relative accuracy of about 1e-12.
    """
    eps_f = _scalar("eps", check_positive("eps", eps))
    delta_f = _scalar("delta", check_in_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True))

    def excess(log_kappa: float) -> float:
        # compared in log space: delta may be 1e-300
        d = float(gaussian_mechanism_delta(np.exp(log_kappa), eps_f))
        return float(np.log(max(d, 1e-320))) - np.log(delta_f)

    lo, hi = -10.0, 10.0
    while excess(lo) < 0:  # noise too large already: move down
        lo -= 10.0
    while excess(hi) > 0:
        hi += 10.0
    root = optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=1e-13)
    kappa = float(np.exp(root))
    # the root may sit a rounding error on the wrong side: take the side that is private
    if gaussian_mechanism_delta(kappa, eps_f) > delta_f:
        kappa *= 1.0 + 1e-12
    return kappa


# --------------------------------------------------------------------------------------------
# mechanism and likelihood
# --------------------------------------------------------------------------------------------
def sample_privatised_gaussian(
    x: ArrayLike, l: ArrayLike, r: ArrayLike, noise_multiplier: ArrayLike, rng: np.random.Generator
) -> FloatArray:
    """Privatise sensitive values by truncation to ``[l, r]`` and Gaussian noise of sd ``kappa (r - l)``.

    Privacy: the clamped value has sensitivity ``r - l``, so each release is ``(eps, delta)``-DP
    with respect to its individual's ``x`` for every pair with
    ``delta >= gaussian_mechanism_delta(kappa, eps)`` (in particular for
    ``kappa = gaussian_noise_multiplier(eps, delta)``), provided ``l``, ``r`` do not depend on that
    ``x``. For simulation only (seeded floating-point noise). All arguments broadcast.
    """
    x_arr = _finite("x", x)
    l_arr, r_arr = _interval(l, r)
    kappa = np.asarray(check_positive("noise_multiplier", noise_multiplier), dtype=float)
    rng = check_rng("rng", rng)
    clamped = np.clip(x_arr, l_arr, r_arr)
    sd = kappa * (r_arr - l_arr)
    shape = np.broadcast_shapes(clamped.shape, np.shape(sd))
    return np.broadcast_to(clamped, shape) + rng.standard_normal(shape) * sd


def _log_phi_diff(lo: FloatArray, hi: FloatArray) -> FloatArray:
    """``log(Phi(hi) - Phi(lo))`` for ``lo < hi`` without cancellation in either tail."""
    with np.errstate(divide="ignore", invalid="ignore"):
        # both in the lower tail: Phi(hi) (1 - Phi(lo)/Phi(hi))
        log_hi, log_lo = special.log_ndtr(hi), special.log_ndtr(lo)
        lower = log_hi + np.log(-np.expm1(log_lo - log_hi))
        # both in the upper tail: mirror image
        log_mlo, log_mhi = special.log_ndtr(-lo), special.log_ndtr(-hi)
        upper = log_mlo + np.log(-np.expm1(log_mhi - log_mlo))
        # straddling zero: a sum of two positive erf terms
        middle = np.log(0.5 * (special.erf(hi / _SQRT2) - special.erf(lo / _SQRT2)))
    return np.where(hi <= 0, lower, np.where(lo >= 0, upper, middle))


def _loglik(y: FloatArray, mu: FloatArray, sigma: FloatArray, l: FloatArray, r: FloatArray, sd: FloatArray) -> FloatArray:
    """Unchecked core of :func:`loglik_privatised_normal_gaussian`."""
    y, mu, sigma, l, r, sd = np.broadcast_arrays(y, mu, sigma, l, r, sd)
    var_sum = sigma * sigma + sd * sd
    # the atoms at l and r, each blurred by the noise
    log_atom_l = special.log_ndtr((l - mu) / sigma) - 0.5 * ((y - l) / sd) ** 2 - np.log(sd) - _LOG_SQRT_2PI
    log_atom_r = special.log_ndtr((mu - r) / sigma) - 0.5 * ((y - r) / sd) ** 2 - np.log(sd) - _LOG_SQRT_2PI
    # the normal part on (l, r): phi_sigma(x - mu) phi_sd(y - x) = phi_v(y - mu) phi_tau(x - m)
    tau = sigma * sd / np.sqrt(var_sum)
    m = (mu * sd * sd + y * sigma * sigma) / var_sum
    log_inner = (
        -0.5 * (y - mu) ** 2 / var_sum - 0.5 * np.log(var_sum) - _LOG_SQRT_2PI + _log_phi_diff((l - m) / tau, (r - m) / tau)
    )
    stacked = np.stack([log_atom_l, log_atom_r, log_inner])
    out: FloatArray = special.logsumexp(stacked, axis=0)
    return out


def loglik_privatised_normal_gaussian(
    y: ArrayLike, mu: ArrayLike, sigma: ArrayLike, l: ArrayLike, r: ArrayLike, noise_multiplier: ArrayLike
) -> FloatArray:
    """Exact ``log p(y | mu, sigma)`` of ``Y = T_l^r(X) + W``, ``W ~ N(0, (kappa (r - l))^2)``, ``X ~ N(mu, sigma^2)``.

    The Gaussian counterpart of the paper's eq. (6) marginal likelihood. With ``s = kappa (r - l)``,
    ``v^2 = sigma^2 + s^2``, ``tau = sigma s / v`` and ``m = (mu s^2 + y sigma^2) / v^2``::

        p(y) = Phi((l - mu)/sigma) phi_s(y - l) + Phi((mu - r)/sigma) phi_s(y - r)
               + phi_v(y - mu) [Phi((r - m)/tau) - Phi((l - m)/tau)],

    because the product of the normal densities of ``x`` and of the noise is a normal density in
    ``y`` (variance ``v^2``) times a normal density in ``x`` (mean ``m``, sd ``tau``). The three
    terms are combined in log space.

    Parameters
    ----------
    y : array_like
        Observations.
    mu, sigma : array_like
        Population mean and standard deviation (``sigma > 0``).
    l, r : array_like
        Truncation points, ``r > l``.
    noise_multiplier : array_like
        ``kappa > 0``, see :func:`gaussian_noise_multiplier`.

    Returns
    -------
    ndarray
        Log densities, of the broadcast shape of all arguments.
    """
    y_arr = _finite("y", y)
    mu_arr = _finite("mu", mu)
    sigma_arr = np.asarray(check_positive("sigma", sigma), dtype=float)
    l_arr, r_arr = _interval(l, r)
    kappa = np.asarray(check_positive("noise_multiplier", noise_multiplier), dtype=float)
    return _loglik(y_arr, mu_arr, sigma_arr, l_arr, r_arr, kappa * (r_arr - l_arr))


# --------------------------------------------------------------------------------------------
# Fisher information
# --------------------------------------------------------------------------------------------
_FD_REL_STEP = 1e-5
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)
#: the quadrature covers [l - _TAIL sd, r + _TAIL sd]; beyond, the density is below
#: exp(-_TAIL^2 / 2) ~ 1e-44 of its peak
_TAIL = 14.0


def _fisher_exact(
    mu: ArrayLike, sigma: ArrayLike, l: ArrayLike, r: ArrayLike, kappa: float, panel_width: float = 0.5
) -> FloatArray:
    """``E[s(Y) s(Y)^T]`` by composite Gauss-Legendre quadrature over ``y``, for a batch of intervals.

    Every term of the density is smooth in ``y`` on the scale of the noise sd ``s`` or wider (the
    atoms' images vary on ``s``, the normal part on ``v >= s`` and ``s v / sigma >= s``), and the
    interval ``[l, r]`` is ``1/kappa`` noise sds wide, so panels of width ``s/2`` with 16 nodes
    each resolve it (panels five times narrower change the result by less than 1e-8 relative in the
    tests; the finite-difference score, not the quadrature, limits the accuracy). The
    score is the central difference of the closed-form log density (step ``1e-5 sigma``, as in
    :mod:`dpbayes.smc.truncation`).
    """
    mu, sigma, l, r = (np.asarray(v, dtype=float) for v in np.broadcast_arrays(mu, sigma, l, r))
    batch = mu.shape
    mu, sigma, l, r = (v.reshape(-1, 1) for v in (mu, sigma, l, r))
    sd = kappa * (r - l)
    # standardised panel edges u in [-_TAIL, 1/kappa + _TAIL] (units of sd, from l)
    span = 1.0 / kappa + 2.0 * _TAIL
    n_panels = int(np.ceil(span / panel_width))
    edges = np.linspace(-_TAIL, 1.0 / kappa + _TAIL, n_panels + 1)
    half = 0.5 * np.diff(edges)
    u = ((0.5 * (edges[1:] + edges[:-1]))[:, None] + half[:, None] * _GL_NODES[None, :]).ravel()
    w = (half[:, None] * _GL_WEIGHTS[None, :]).ravel()
    y = l + sd * u[None, :]
    h = _FD_REL_STEP * sigma
    d_mu = (_loglik(y, mu + h, sigma, l, r, sd) - _loglik(y, mu - h, sigma, l, r, sd)) / (2.0 * h)
    d_sigma = (_loglik(y, mu, sigma + h, l, r, sd) - _loglik(y, mu, sigma - h, l, r, sd)) / (2.0 * h)
    score = np.stack([d_mu, d_sigma], axis=-1)
    density = np.exp(_loglik(y, mu, sigma, l, r, sd))
    weights = sd * w[None, :] * density
    F = np.einsum("bn,bni,bnj->bij", weights, score, score)
    return F.reshape(batch + (2, 2))


def fisher_information_normal_gaussian(
    mu: ArrayLike, sigma: ArrayLike, l: ArrayLike, r: ArrayLike, noise_multiplier: float
) -> FloatArray:
    """Exact Fisher information of one Gaussian-mechanism release about ``(mu, sigma)`` at fixed ``[l, r]``.

    The quantity of the paper's eq. (6) with the Laplace noise replaced by ``N(0, (kappa (r - l))^2)``,
    computed by quadrature from :func:`loglik_privatised_normal_gaussian` (no Monte Carlo). The
    paper's Theorem 3 carries over because the noise sd scales with the interval's width:
    ``F(m, c; m + a c, m + b c) = F(0, 1; a, b) / c^2``.

    Parameters
    ----------
    mu, sigma, l, r : array_like
        Broadcast to a batch shape ``S``; ``sigma > 0``, ``r > l``.
    noise_multiplier : float
        ``kappa > 0``.

    Returns
    -------
    ndarray, shape ``S + (2, 2)``
        Index 0 is ``mu``, index 1 is ``sigma``.
    """
    mu_arr = _finite("mu", mu)
    sigma_arr = check_positive("sigma", sigma)
    l_arr, r_arr = _interval(l, r)
    kappa = _scalar("noise_multiplier", check_positive("noise_multiplier", noise_multiplier))
    return _fisher_exact(mu_arr, sigma_arr, l_arr, r_arr, kappa)


def fisher_information_gaussian(a: ArrayLike, b: ArrayLike, noise_multiplier: float) -> FloatArray:
    """Fisher information of a Gaussian-mechanism release through ``[a, b]`` at ``X ~ N(0, 1)``.

    The Gaussian counterpart of ``F^eps_{a,b}(0, 1)`` (paper eq. (13)); ``a`` and ``b`` broadcast.

    Returns
    -------
    ndarray, shape ``S + (2, 2)``
    """
    return fisher_information_normal_gaussian(0.0, 1.0, a, b, noise_multiplier)


def best_interval_gaussian(
    noise_multiplier: float,
    score: str = "paper",
    grid: ArrayLike | None = None,
    *,
    min_half_width: float = 1e-4,
) -> tuple[float, float]:
    """Best symmetric interval ``[-b*, b*]`` for N(0, 1) under the Gaussian mechanism, and its score.

    The search of the paper's eq. (13) with the exact information: the score (see
    :func:`dpbayes.smc.truncation.fisher_score`) on ``grid`` of half-widths (default: 300 points,
    geometric on ``[0.005, 4]``) brackets the maximum, which a bounded scalar maximisation between
    the grid neighbours then locates (``xatol = 1e-9``; the score's quadrature noise, about 1e-10
    relative, limits ``b*`` to about 5 significant digits).

    Returns
    -------
    (b_star, score_value) : tuple of float
    """
    kappa = _scalar("noise_multiplier", check_positive("noise_multiplier", noise_multiplier))
    check_choice("score", score, _SCORES)
    min_b = _scalar("min_half_width", check_positive("min_half_width", min_half_width))
    b_grid = np.geomspace(0.005, 4.0, 300) if grid is None else check_grid("grid", grid, low=0.0)
    if np.any(b_grid <= 0):
        raise ValueError("grid must hold half-widths b > 0")
    scores = fisher_score(_fisher_exact(0.0, 1.0, -b_grid, b_grid, kappa), score)

    def score_at(b: float) -> float:
        return float(fisher_score(_fisher_exact(0.0, 1.0, -b, b, kappa), score))

    # between the grid neighbours of the best b; from the first grid point down to min_half_width
    b_star, value, _ = refine_scanned_extreme(score_at, b_grid, scores, maximize=True, xatol=1e-9, limits=(min_b, None))
    return b_star, value
