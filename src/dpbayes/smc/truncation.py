"""Truncate-then-Laplace observations of a normal population: sampler, exact likelihood, Fisher information.

Source: Yildirim (2024), *Differentially private online Bayesian estimation with adaptive
truncation* ("the paper"). An individual with sensitive value ``x`` reports

    Y = T_l^r(x) + (r - l) V,   T_l^r(x) = min(max(x, l), r),   V ~ Laplace(0, 1/eps)

(paper Example 1 and eq. (10); ``Laplace(0, 1/eps)`` has density ``(eps/2) exp(-eps |v|)``, so
the noise added to the clamped value has scale ``beta = (r - l) / eps``).

For a normal population ``X ~ N(mu, sigma^2)`` the marginal density of ``Y`` has a closed form
(derived below, :func:`loglik_privatised_normal`), which gives the *exact* Fisher information of
``Y`` about ``theta = (mu, sigma)`` by one-dimensional quadrature. The paper instead estimates
it by Monte Carlo (eq. (7) with the importance-sampling score of Algorithm 5);
:func:`fisher_information` offers both. :func:`best_interval` reproduces the interval search
of Section 4.1 / eq. (13) for the base distribution ``N(0, 1)``.

Parametrisation: throughout, ``theta = (mu, sigma)`` with ``sigma`` the standard deviation, as
in the paper (Section 4.1: "theta = (mu, sigma)") and in the author's score code (gradients with
respect to the mean and the standard deviation). Index 0 is ``mu``, index 1 is ``sigma``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

from dpbayes.smc import _kernels as _smc_kernels
from dpbayes.core.extremes import refine_scanned_extreme
from dpbayes.core.validation import check_choice, check_grid, check_int, check_positive, check_rng

__all__ = [
    "laplace_noise_scale",
    "sample_privatised",
    "log_density_privatised_given_x",
    "loglik_privatised_normal",
    "score_privatised_normal",
    "fisher_information_normal",
    "fisher_information",
    "fisher_information_mc",
    "fisher_score",
    "interval_scores",
    "best_interval",
    "best_interval_asymmetric",
    "PAPER_A_GRID",
    "PAPER_INTERVALS",
]

FloatArray = NDArray[np.float64]

#: The symmetric grid of the author's interval search, 51 values of ``a`` in ``[-3, 0]``, ``b = -a``.
#: The last value ``a = 0`` is a zero-width interval (no valid mechanism; the author's code gets
#: NaN there and never selects it), so the default search grid drops it.
PAPER_A_GRID: FloatArray = np.linspace(-3.0, 0.0, 51)

#: Best symmetric intervals ``[a, b]`` for N(0, 1) reported in the paper, Section 4.1 (score F[0, 0]).
PAPER_INTERVALS: dict[float, tuple[float, float]] = {
    1.0: (-0.06, 0.06),
    2.0: (-0.12, 0.12),
    5.0: (-0.54, 0.54),
    10.0: (-0.96, 0.96),
}

_SCORES = ("paper", "harmonic")
_METHODS = ("exact", "mc")
_SQRT2 = np.sqrt(2.0)


# --------------------------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------------------------
def _finite(name: str, value: ArrayLike) -> FloatArray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a real number or an array of real numbers, got {value!r}") from exc
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr


def _interval(l: ArrayLike, r: ArrayLike) -> tuple[FloatArray, FloatArray]:
    l_arr = _finite("l", l)
    r_arr = _finite("r", r)
    if not np.all(r_arr > l_arr):
        raise ValueError("the truncation interval must have r > l (positive sensitivity r - l)")
    return l_arr, r_arr


def laplace_noise_scale(l: ArrayLike, r: ArrayLike, eps: ArrayLike) -> Any:
    """Scale ``beta = (r - l) / eps`` of the Laplace noise added to the clamped value (paper eq. (2))."""
    l_arr, r_arr = _interval(l, r)
    eps_arr = check_positive("eps", eps)
    return (r_arr - l_arr) / eps_arr


# --------------------------------------------------------------------------------------------
# mechanism
# --------------------------------------------------------------------------------------------
def sample_privatised(x: ArrayLike, l: ArrayLike, r: ArrayLike, eps: ArrayLike, rng: np.random.Generator) -> FloatArray:
    """Privatise sensitive values by truncation to ``[l, r]`` and the Laplace mechanism.

    ``Y = min(max(x, l), r) + (r - l) V`` with ``V ~ Laplace(0, 1/eps)`` (density
    ``(eps/2) exp(-eps |v|)``), paper Example 1 / eq. (10). All arguments broadcast.

    Privacy: the clamped value has sensitivity ``r - l`` (it lies in ``[l, r]``), so by the
    Laplace mechanism (paper Theorem 2) each released ``Y`` is ``eps``-differentially private
    with respect to its individual's ``x`` (``eps``-local DP, paper Remark 1), provided ``l``, ``r``
    do not depend on that ``x`` (in the adaptive scheme they depend only on earlier releases).
    The log density ratio ``log p(y|x) - log p(y|x')`` is at most ``eps`` for all ``x, x', y``.

    Note: the noise *scale* is ``(r - l)/eps`` (standard deviation ``sqrt(2) (r - l)/eps``). The
    author's MATLAB sampler treats its argument as a standard deviation and so adds noise of
    scale ``(r - l)/(eps sqrt 2)``, which is only ``eps sqrt 2``-DP; this function does not.

    For simulation only (seeded floating-point noise); to protect real data draw the noise with a
    vetted sampler such as OpenDP's (as :mod:`dpbayes.release.statistic` does for counts).

    Parameters
    ----------
    x : array_like
        Sensitive values.
    l, r : array_like
        Truncation points, ``r > l``.
    eps : array_like
        Privacy parameter, ``> 0``.
    rng : numpy.random.Generator
        Source of the Laplace noise.

    Returns
    -------
    ndarray
        The privatised observations, of the broadcast shape of ``x, l, r, eps``.
    """
    x_arr = _finite("x", x)
    l_arr, r_arr = _interval(l, r)
    eps_arr = check_positive("eps", eps)
    rng = check_rng("rng", rng)
    clamped = np.clip(x_arr, l_arr, r_arr)
    scale = (r_arr - l_arr) / eps_arr
    shape = np.broadcast_shapes(clamped.shape, np.shape(scale))
    return np.broadcast_to(clamped, shape) + rng.laplace(0.0, 1.0, size=shape) * scale


def log_density_privatised_given_x(
    y: ArrayLike, x: ArrayLike, l: ArrayLike, r: ArrayLike, eps: ArrayLike
) -> FloatArray:
    """``log p(y | x)`` of the mechanism: Laplace density at ``y - T_l^r(x)`` with scale ``(r-l)/eps``.

    This is the factor ``Laplace(y_k - s_k(x_k), Delta s_k / eps)`` of the paper's eq. (5) and
    Algorithm 2's weights. All arguments broadcast.
    """
    y_arr = _finite("y", y)
    x_arr = _finite("x", x)
    l_arr, r_arr = _interval(l, r)
    eps_arr = check_positive("eps", eps)
    beta = (r_arr - l_arr) / eps_arr
    return -np.abs(y_arr - np.clip(x_arr, l_arr, r_arr)) / beta - np.log(2.0 * beta)


# --------------------------------------------------------------------------------------------
# exact likelihood of a normal population
# --------------------------------------------------------------------------------------------
def _log_ndtr(x: FloatArray) -> FloatArray:
    """``log Phi(x)`` via one scaled complementary error function (faster than ``log_ndtr``).

    With ``E = erfcx(|x|/sqrt 2)``: ``Phi(x) = E exp(-x^2/2)/2`` for ``x < 0`` and
    ``1 - E exp(-x^2/2)/2`` for ``x >= 0``; both branches are accurate to rounding.
    """
    x = np.asarray(x, dtype=float)
    e = special.erfcx(np.abs(x) / _SQRT2)
    half_sq = 0.5 * x * x
    out = np.empty(np.shape(x))
    neg = x < 0
    pos = ~neg  # NaN goes here, as with np.where(x < 0, ...)
    # each branch only where it applies (elementwise ufuncs: the same bits as computing it everywhere)
    out[neg] = np.log(0.5 * e[neg]) - half_sq[neg]
    with np.errstate(over="ignore"):
        out[pos] = np.log1p(-0.5 * e[pos] * np.exp(-half_sq[pos]))
    return out


def _log1mexp(x: FloatArray) -> FloatArray:
    """``log(1 - exp(x))`` for ``x <= 0`` (Maechler's two-branch recipe); ``-inf`` at ``x = 0``."""
    x = np.minimum(np.asarray(x, dtype=float), 0.0)
    out = np.empty(np.shape(x))
    near = x > -np.log(2.0)
    far = ~near
    with np.errstate(divide="ignore"):
        out[near] = np.log(-np.expm1(x[near]))
        out[far] = np.log1p(-np.exp(x[far]))
    return out


def _log_tilted_normal_mass(lo: FloatArray, hi: FloatArray, d: FloatArray, z: FloatArray) -> FloatArray:
    """``log int_lo^hi phi(t) exp(-z (d - t)) dt`` for ``lo <= hi <= d`` and ``z > 0``.

    Completing the square, ``phi(t) e^{z t} = phi(t - z) e^{z^2/2}``, so the integral is
    ``exp(z^2/2 - z d) [Phi(w_hi) - Phi(w_lo)]`` with ``w = t - z`` at the two ends. The factor
    ``exp(z^2/2)`` overflows for narrow intervals (large ``z``) while the ``Phi`` underflow, so
    with ``E(w) = erfcx(|w|/sqrt 2)`` (``Phi(-|w|) = E exp(-w^2/2)/2``) three cases are combined,
    each free of cancellation:

    * ``w_hi <= 0`` (both ends in the lower tail): the huge terms cancel analytically,
      ``log = log(E_hi/2) - hi^2/2 - z (d - hi) + log(1 - R)`` with
      ``log R = log E_lo - log E_hi + (hi - lo)(hi + lo - 2 z)/2`` (a product);
    * ``w_lo >= 0`` (both in the upper tail, mirror image):
      ``log = log(E_lo/2) - lo^2/2 - z (d - lo) + log(1 - R')`` with
      ``log R' = log E_hi - log E_lo - (hi - lo)(hi + lo - 2 z)/2``;
    * ``w_lo < 0 < w_hi``: ``Phi(w_hi) - Phi(w_lo) = (erf(w_hi/sqrt 2) + erf(-w_lo/sqrt 2))/2``,
      a sum of positive terms, times ``exp(z (z/2 - d))`` (here ``d >= hi > z``).
    """
    lo, hi, d, z = np.broadcast_arrays(lo, hi, d, z)
    w_lo = lo - z
    w_hi = hi - z
    out = np.empty(w_lo.shape)
    # Each case is computed only where it applies (the same elementwise operations as evaluating
    # all three everywhere and selecting with np.where, so the same bits, in a fraction of the time).
    in_lower = w_hi <= 0
    in_upper = ~in_lower & (w_lo >= 0)
    in_straddle = ~(in_lower | in_upper)  # also NaN, as np.where's last branch
    for mask, is_lower in ((in_lower, True), (in_upper, False)):
        lo_m, hi_m, d_m, z_m = lo[mask], hi[mask], d[mask], z[mask]
        log_e_lo = np.log(special.erfcx(np.abs(w_lo[mask]) / _SQRT2))
        log_e_hi = np.log(special.erfcx(np.abs(w_hi[mask]) / _SQRT2))
        spread = 0.5 * (hi_m - lo_m) * (hi_m + lo_m - 2.0 * z_m)
        if is_lower:
            out[mask] = (
                log_e_hi - np.log(2.0) - 0.5 * hi_m * hi_m - z_m * (d_m - hi_m) + _log1mexp(log_e_lo - log_e_hi + spread)
            )
        else:
            out[mask] = (
                log_e_lo - np.log(2.0) - 0.5 * lo_m * lo_m - z_m * (d_m - lo_m) + _log1mexp(log_e_hi - log_e_lo - spread)
            )
    w_lo_s, w_hi_s, d_s, z_s = w_lo[in_straddle], w_hi[in_straddle], d[in_straddle], z[in_straddle]
    out[in_straddle] = (
        np.log(0.5 * (special.erf(w_hi_s / _SQRT2) - special.erf(w_lo_s / _SQRT2))) + z_s * (0.5 * z_s - d_s)
    )
    return out


def loglik_privatised_normal(
    y: ArrayLike, mu: ArrayLike, sigma: ArrayLike, l: ArrayLike, r: ArrayLike, eps: ArrayLike
) -> FloatArray:
    """Exact ``log p(y | mu, sigma; l, r, eps)`` of ``Y = T_l^r(X) + (r - l) V``, ``X ~ N(mu, sigma^2)``.

    This is the marginal likelihood ``p^eps_{l,r}(y | theta)`` of the paper's eq. (6), which the
    paper treats as intractable (Section 3.2) and handles with latent ``x`` (eq. (5)) or Monte
    Carlo (Algorithm 5). With ``beta = (r - l)/eps``, ``L(v) = exp(-|v|/beta)/(2 beta)``,
    ``alpha = (l - mu)/sigma``, ``rho = (r - mu)/sigma``, ``d = (y - mu)/sigma`` and
    ``z = sigma/beta``, the clamped value is a mixture of two atoms and a truncated normal, so::

        p(y) = Phi(alpha) L(y - l) + Phi(-rho) L(y - r)
               + 1/(2 beta) int_alpha^rho phi(t) exp(-z |d - t|) dt,

    and the integral splits at ``t = d`` into two exponentially tilted normal masses with closed
    forms in ``Phi`` (the private ``_log_tilted_normal_mass``; the part with ``t > d`` is the mirror image
    ``t -> -t``). Everything is combined in log space (log-sum-exp), so extreme ``y``,
    extreme ``mu`` and very narrow intervals (``z`` up to ~1e8) stay finite and accurate. For
    ``y`` outside ``[l, r]`` the density is exactly ``p(clip(y)) exp(-dist(y, [l, r])/beta)``,
    which the formula reproduces (log-linear tails).

    Parameters
    ----------
    y : array_like
        Observations.
    mu, sigma : array_like
        Population mean and standard deviation (``sigma > 0``), e.g. particle arrays.
    l, r : array_like
        Truncation points, ``r > l``.
    eps : array_like
        Privacy parameter, ``> 0``.

    Returns
    -------
    ndarray
        Log densities, of the broadcast shape of all arguments.
    """
    y_arr = _finite("y", y)
    mu_arr = _finite("mu", mu)
    sigma_arr = check_positive("sigma", sigma)
    l_arr, r_arr = _interval(l, r)
    eps_arr = check_positive("eps", eps)
    return _loglik(y_arr, mu_arr, np.asarray(sigma_arr, dtype=float), l_arr, r_arr, np.asarray(eps_arr, dtype=float))


def _loglik(
    y: FloatArray, mu: FloatArray, sigma: FloatArray, l: FloatArray, r: FloatArray, eps: FloatArray
) -> FloatArray:
    """Unchecked core of :func:`loglik_privatised_normal` (used inside quadrature loops).

    The arguments are not broadcast up front: each intermediate has only the shape of the arguments it
    depends on (``beta`` of a fixed interval is one number, the atoms' ``log Phi`` one per ``(mu,
    sigma)``), the same elementwise operations on fewer elements; the result has the broadcast shape.
    """
    y, mu, sigma, l, r, eps = (np.asarray(a, dtype=float) for a in (y, mu, sigma, l, r, eps))
    if _smc_kernels.compiled_enabled():  # the same formulas compiled element by element (optional numba)
        return _smc_kernels.loglik(y, mu, sigma, l, r, eps)
    shape = np.broadcast_shapes(y.shape, mu.shape, sigma.shape, l.shape, r.shape, eps.shape)
    beta = (r - l) / eps
    z = sigma / beta
    alpha = (l - mu) / sigma
    rho = (r - mu) / sigma
    d = (y - mu) / sigma
    dc = np.clip(d, alpha, rho)  # standardised clip(y, l, r)
    log_atom_l = _log_ndtr(alpha) - np.abs(y - l) / beta
    log_atom_r = _log_ndtr(-rho) - np.abs(y - r) / beta
    with np.errstate(divide="ignore", invalid="ignore"):
        # t in [alpha, min(d, rho)]  and  t in [max(d, alpha), rho] (mirrored t -> -t)
        log_below = _log_tilted_normal_mass(alpha, dc, d, z)
        log_above = _log_tilted_normal_mass(-rho, -dc, -d, z)
        # log-sum-exp of the four terms; the atoms' terms are always finite
        top = np.maximum(np.maximum(log_atom_l, log_atom_r), np.maximum(log_below, log_above))
        total = np.exp(log_atom_l - top) + np.exp(log_atom_r - top) + np.exp(log_below - top) + np.exp(log_above - top)
    out = top + np.log(total) - np.log(2.0 * beta)
    return out if out.shape == shape else np.array(np.broadcast_to(out, shape))  # a writeable array, as before


# --------------------------------------------------------------------------------------------
# score and Fisher information
# --------------------------------------------------------------------------------------------
_FD_REL_STEP = 1e-5


def _score(
    y: FloatArray, mu: FloatArray, sigma: FloatArray, l: FloatArray, r: FloatArray, eps: FloatArray
) -> FloatArray:
    """Central finite differences of the exact log-likelihood in ``(mu, sigma)``; last axis = 2.

    The log-likelihood is analytic in ``(mu, sigma)`` for fixed ``y`` and varies on the scale
    ``sigma`` (through ``(l - mu)/sigma`` etc.), so a step ``1e-5 sigma`` gives truncation error
    ~1e-10 and round-off ~1e-10 relative — far below any Monte-Carlo error in this chapter.
    """
    h = _FD_REL_STEP * sigma
    d_mu = (_loglik(y, mu + h, sigma, l, r, eps) - _loglik(y, mu - h, sigma, l, r, eps)) / (2.0 * h)
    d_sigma = (_loglik(y, mu, sigma + h, l, r, eps) - _loglik(y, mu, sigma - h, l, r, eps)) / (2.0 * h)
    return np.stack(np.broadcast_arrays(d_mu, d_sigma), axis=-1)


def score_privatised_normal(
    y: ArrayLike, mu: ArrayLike, sigma: ArrayLike, l: ArrayLike, r: ArrayLike, eps: ArrayLike
) -> FloatArray:
    """Exact score ``grad_(mu, sigma) log p(y | mu, sigma; l, r, eps)``; the last axis holds (mu, sigma).

    The quantity that the paper's Algorithm 5 approximates by self-normalised importance
    sampling (Fisher's identity), here from the closed-form likelihood by central differences.
    """
    y_arr = _finite("y", y)
    mu_arr = _finite("mu", mu)
    sigma_arr = np.asarray(check_positive("sigma", sigma), dtype=float)
    l_arr, r_arr = _interval(l, r)
    eps_arr = np.asarray(check_positive("eps", eps), dtype=float)
    return _score(y_arr, mu_arr, sigma_arr, l_arr, r_arr, eps_arr)


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)


def _panel_edges(eps_max: float, sigma_over_width: float) -> FloatArray:
    """Panel edges on ``[0, 1]`` (the interval ``[l, r]`` rescaled) for composite Gauss-Legendre.

    Inside ``[l, r]`` the density has two kinds of structure: the Laplace images of the atoms at
    ``l`` and ``r`` decay on the noise scale ``beta = width / eps`` (``1/eps`` here), and the
    normal part varies on the scale ``sigma`` (``sigma/width`` here); the integrand is analytic
    in between. A 16-point Gauss-Legendre panel integrates ``exp(-t/beta)`` over a width of
    ``2 beta``, or a normal density over a width ``sigma``, to ~1e-15, so panels are uniform with
    step ``min(1/4, sigma/width, 2/eps)`` (at most 400 of them); if ``1/(4 eps)`` is smaller than
    that step, geometric panels of widths ``1/(4 eps) * 2^k`` grade both ends.
    """
    step = min(0.25, sigma_over_width, 2.0 / eps_max)
    n_uniform = int(np.ceil(1.0 / max(step, 1.0 / 400)))
    edges: list[NDArray[np.floating[Any]]] = [np.linspace(0.0, 1.0, n_uniform + 1)]
    uniform_step = 1.0 / n_uniform
    fine = 0.25 / eps_max
    if fine < uniform_step:
        grade = fine * 2.0 ** np.arange(int(np.ceil(np.log2(uniform_step / fine))) + 1)
        grade = np.concatenate([[0.0], grade[grade < 0.5]])
        edges += [grade, 1.0 - grade]
    return np.unique(np.concatenate(edges))


def _fisher_exact(
    mu: ArrayLike, sigma: ArrayLike, l: ArrayLike, r: ArrayLike, eps: float, noise_scale_factor: float
) -> FloatArray:
    """``E_q[s_p(Y) s_p(Y)^T]`` by quadrature, for a batch of intervals; ``q = p`` when the factor is 1.

    ``p`` is the model (noise scale ``beta = (r-l)/eps``) whose score ``s_p`` is used; ``q`` is
    the law the observations really follow, with noise scale ``noise_scale_factor * beta``.
    Outside ``[l, r]`` both densities are exactly exponential in ``y`` (all of ``T(X)`` lies on one
    side), so the score is constant there and each tail contributes ``beta_q q(edge) s s^T``
    exactly. Inside ``[l, r]`` the integrand is smooth (analytic); composite 16-point
    Gauss-Legendre panels resolve the scales ``beta`` and ``sigma``. ``mu, sigma, l, r`` broadcast
    to a batch shape ``S``; the result has shape ``S + (2, 2)``.
    """
    mu, sigma, l, r = (np.asarray(v, dtype=float) for v in np.broadcast_arrays(mu, sigma, l, r))
    batch = mu.shape
    mu, sigma, l, r = (v.reshape(-1, 1) for v in (mu, sigma, l, r))
    k = noise_scale_factor
    t_edges = _panel_edges(eps / min(k, 1.0), float(np.min(sigma / (r - l))))
    half = 0.5 * np.diff(t_edges)
    t_nodes = ((0.5 * (t_edges[1:] + t_edges[:-1]))[:, None] + half[:, None] * _GL_NODES[None, :]).ravel()
    t_weights = (half[:, None] * _GL_WEIGHTS[None, :]).ravel()
    width = r - l
    y = np.concatenate([l + width * t_nodes[None, :], l, r], axis=1)
    eps_arr = np.asarray(eps, dtype=float)
    score = _score(y, mu, sigma, l, r, eps_arr)
    q = np.exp(_loglik(y, mu, sigma, l, r, eps_arr / k))
    beta_q = k * width / eps
    weights = np.concatenate([width * t_weights[None, :] * q[:, :-2], beta_q * q[:, -2:]], axis=1)
    F = np.einsum("bn,bni,bnj->bij", weights, score, score)
    return F.reshape(batch + (2, 2))


def fisher_information_normal(
    mu: ArrayLike, sigma: ArrayLike, l: ArrayLike, r: ArrayLike, eps: float, *, noise_scale_factor: float = 1.0
) -> FloatArray:
    """Exact Fisher information of one observation ``Y`` about ``(mu, sigma)`` at fixed ``[l, r]``.

    Paper eq. (6), ``F^eps_{l,r}(theta) = E[grad log p grad log p^T]``, computed by quadrature
    over ``y`` from the closed-form density (no Monte Carlo). By paper Theorem 3,
    ``fisher_information_normal(m, c, m + a c, m + b c, eps) = fisher_information(a, b, eps) / c^2``.

    ``noise_scale_factor = k != 1`` computes instead ``E_q[s_p s_p^T]`` where the data have noise
    scale ``k (r - l)/eps`` but the score is that of the model with scale ``(r - l)/eps`` — the
    quantity the author's code estimates (``k = 1/sqrt 2``); it is *not* a Fisher information then.

    Parameters
    ----------
    mu, sigma, l, r : array_like
        Broadcast to a batch shape ``S`` (e.g. one interval per time step); ``sigma > 0``, ``r > l``.
    eps : float
        Privacy parameter, ``> 0``.

    Returns
    -------
    ndarray, shape ``S + (2, 2)``
        Index 0 is ``mu``, index 1 is ``sigma`` (standard deviation); ``(2, 2)`` for scalars.
    """
    mu_arr = _finite("mu", mu)
    sigma_arr = check_positive("sigma", sigma)
    l_arr, r_arr = _interval(l, r)
    eps_f = check_positive("eps", eps)
    if np.ndim(eps_f) != 0:
        raise ValueError("eps must be a scalar here")
    k = check_positive("noise_scale_factor", noise_scale_factor)
    if np.ndim(k) != 0:
        raise ValueError("noise_scale_factor must be a scalar")
    return _fisher_exact(mu_arr, sigma_arr, l_arr, r_arr, eps_f, k)


def fisher_information_mc(
    a: float,
    b: float,
    eps: float,
    rng: np.random.Generator,
    n_obs: int = 1000,
    n_is: int = 10000,
    *,
    noise_scale_factor: float = 1.0,
    x_obs: ArrayLike | None = None,
    v_obs: ArrayLike | None = None,
    estimate_is_bias: bool = True,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The paper's Monte-Carlo Fisher information for base N(0, 1): eq. (7) with Algorithm 5.

    Draw ``n_obs`` observations ``y_j = T_a^b(x_j) + (b - a) k v_j`` (``x_j ~ N(0,1)``,
    ``v_j ~ Laplace(0, 1/eps)``, ``k = noise_scale_factor``); for each, estimate the score by
    self-normalised importance sampling with ``n_is`` fresh proposals ``x ~ N(0, 1)`` and weights
    ``Laplace(y_j - T_a^b(x); (b - a)/eps)`` applied to ``grad log N(x; mu, sigma)`` at
    ``(0, 1)``, i.e. ``(x, x^2 - 1)``; average the outer products.

    ``x_obs``/``v_obs`` (standard normal and unit-scale Laplace draws) may be supplied to reuse
    the same observations across intervals (common random numbers, as the author's grid search
    does); then ``n_obs`` is their length.

    Returns
    -------
    F : ndarray, shape (2, 2)
        The estimate.
    standard_error : ndarray, shape (2, 2)
        Element-wise standard error over the ``n_obs`` outer products.
    is_bias : ndarray, shape (2, 2)
        Estimated bias from the importance-sampling noise: ``E[s_hat s_hat^T] = s s^T + Cov(s_hat)``,
        so the estimator exceeds the Fisher information by about the average (delta-method)
        covariance of the score estimates, O(1/effective sample size). It matters for ``F[1, 1]``
        on narrow intervals, where the true information about ``sigma`` is tiny. NaN when
        ``estimate_is_bias=False`` (saves about a third of the time).
    """
    a_arr, b_arr = _interval(a, b)
    a_f, b_f = float(a_arr), float(b_arr)
    eps_f = check_positive("eps", eps)
    rng = check_rng("rng", rng)
    n_is = check_int("n_is", n_is, minimum=2)
    k = check_positive("noise_scale_factor", noise_scale_factor)
    if x_obs is None or v_obs is None:
        n_obs = check_int("n_obs", n_obs, minimum=2)
        x_obs_arr = rng.standard_normal(n_obs)
        v_obs_arr = rng.laplace(0.0, 1.0, n_obs)
    else:
        x_obs_arr = _finite("x_obs", x_obs).ravel()
        v_obs_arr = _finite("v_obs", v_obs).ravel()
        if x_obs_arr.size != v_obs_arr.size or x_obs_arr.size < 2:
            raise ValueError("x_obs and v_obs must have the same length >= 2")
    beta = (b_f - a_f) / eps_f
    y = np.clip(x_obs_arr, a_f, b_f) + k * beta * v_obs_arr
    chunk = max(1, 2_000_000 // n_is)  # bound memory to ~2e6 proposals at a time
    scores = np.empty((y.size, 2))
    is_cov = np.zeros((2, 2)) if estimate_is_bias else np.full((2, 2), np.nan)
    for start in range(0, y.size, chunk):
        y_c = y[start : start + chunk, None]
        x_p = rng.standard_normal((y_c.size, n_is))  # one row of proposals per observation
        # log weights -|y - T(x)|/beta, shifted by their supremum -dist(y, [a, b])/beta (no overflow)
        w = np.clip(x_p, a_f, b_f)
        w -= y_c
        np.abs(w, out=w)
        w -= np.maximum(np.maximum(a_f - y_c, y_c - b_f), 0.0)
        w *= -1.0 / beta
        np.exp(w, out=w)
        w /= w.sum(axis=1, keepdims=True)
        x_sq = x_p * x_p
        # grad log N(x; mu, sigma) at (0, 1) is (x, x^2 - 1); weights sum to one
        s_mu = np.einsum("ij,ij->i", w, x_p)
        s_sigma = np.einsum("ij,ij->i", w, x_sq) - 1.0
        scores[start : start + chunk, 0] = s_mu
        scores[start : start + chunk, 1] = s_sigma
        if estimate_is_bias:
            # delta-method variance of the self-normalised estimate: sum_i w_i^2 (h_i - s)(h_i - s)^T
            w *= w
            d0 = x_p - s_mu[:, None]
            d1 = x_sq - 1.0 - s_sigma[:, None]
            c01 = np.einsum("ij,ij,ij->", w, d0, d1)
            is_cov += np.array([[np.einsum("ij,ij,ij->", w, d0, d0), c01], [c01, np.einsum("ij,ij,ij->", w, d1, d1)]])
    outer = scores[:, :, None] * scores[:, None, :]
    return outer.mean(axis=0), outer.std(axis=0, ddof=1) / np.sqrt(y.size), is_cov / y.size


def fisher_information(
    a: float,
    b: float,
    eps: float,
    method: str = "exact",
    rng: np.random.Generator | None = None,
    n_obs: int = 1000,
    n_is: int = 10000,
    *,
    noise_scale_factor: float = 1.0,
) -> FloatArray:
    """Fisher information of ``Y = T_a^b(X) + (b - a) V`` about ``(mu, sigma)`` at ``X ~ N(0, 1)``.

    ``F^eps_{a,b}(0, 1)`` of paper eq. (13); by Theorem 3 the information at ``(m, c)`` with
    interval ``[m + a c, m + b c]`` is this matrix divided by ``c^2``.

    Parameters
    ----------
    a, b : float
        Interval for the base distribution, ``a < b``.
    eps : float
        Privacy parameter, ``> 0``.
    method : {"exact", "mc"}
        ``"exact"``: quadrature of the closed-form density (:func:`fisher_information_normal`).
        ``"mc"``: the paper's estimator (:func:`fisher_information_mc`), needs ``rng``; sizes
        ``n_obs`` (paper: 1000) and ``n_is`` (paper: 10,000).
    noise_scale_factor : float
        See :func:`fisher_information_normal`; ``1/sqrt(2)`` reproduces the author's code.

    Returns
    -------
    ndarray, shape (2, 2)
        Index 0 is ``mu``, index 1 is ``sigma``.
    """
    check_choice("method", method, _METHODS)
    if method == "exact":
        return fisher_information_normal(0.0, 1.0, a, b, eps, noise_scale_factor=noise_scale_factor)
    if rng is None:
        raise ValueError("rng must be a numpy.random.Generator when method='mc'")
    return fisher_information_mc(a, b, eps, rng, n_obs, n_is, noise_scale_factor=noise_scale_factor)[0]


def fisher_score(F: ArrayLike, score: str = "paper") -> Any:
    """Scalar score of Fisher information matrices (last two axes 2 x 2).

    ``"paper"``: ``F[0, 0]``, the information about ``mu`` (paper Section 4.1).
    ``"harmonic"``: ``(1/F[0, 0] + 1/F[1, 1])^-1`` (paper Section 4.2).
    """
    check_choice("score", score, _SCORES)
    F_arr = np.asarray(F, dtype=float)
    if F_arr.shape[-2:] != (2, 2):
        raise ValueError(f"F must have trailing shape (2, 2), got {F_arr.shape}")
    f00, f11 = F_arr[..., 0, 0], F_arr[..., 1, 1]
    if score == "paper":
        return f00
    with np.errstate(divide="ignore"):
        return 1.0 / (1.0 / f00 + 1.0 / f11)


# --------------------------------------------------------------------------------------------
# interval search
# --------------------------------------------------------------------------------------------
def _default_grid() -> FloatArray:
    return PAPER_A_GRID[:-1]


def interval_scores(
    eps: float,
    score: str = "paper",
    method: str = "exact",
    grid: ArrayLike | None = None,
    *,
    rng: np.random.Generator | None = None,
    n_obs: int = 1000,
    n_is: int = 10000,
    noise_scale_factor: float = 1.0,
) -> tuple[FloatArray, FloatArray]:
    """Fisher information and its score for the symmetric intervals ``[a, -a]``, ``a`` in ``grid``.

    ``grid`` defaults to the author's 51-point grid on ``[-3, 0]`` without the zero-width ``a = 0``.
    With ``method="mc"`` the same ``n_obs`` observations are reused for every interval (common
    random numbers, as in the author's search) and the importance samples are fresh.

    Returns
    -------
    F : ndarray, shape (len(grid), 2, 2)
    scores : ndarray, shape (len(grid),)
    """
    eps_f = check_positive("eps", eps)
    check_choice("score", score, _SCORES)
    check_choice("method", method, _METHODS)
    a_grid = _default_grid() if grid is None else check_grid("grid", grid)
    if np.any(a_grid >= 0):
        raise ValueError("grid must hold values a < 0 (interval [a, -a] of positive width)")
    k = check_positive("noise_scale_factor", noise_scale_factor)
    if method == "exact":
        F = _fisher_exact(0.0, 1.0, a_grid, -a_grid, eps_f, k)
    else:
        rng = check_rng("rng", rng)
        n_obs = check_int("n_obs", n_obs, minimum=2)
        x_obs = rng.standard_normal(n_obs)
        v_obs = rng.laplace(0.0, 1.0, n_obs)
        F = np.stack(
            [
                fisher_information_mc(
                    a, -a, eps_f, rng, n_is=n_is, noise_scale_factor=k, x_obs=x_obs, v_obs=v_obs,
                    estimate_is_bias=False,
                )[0]
                for a in a_grid
            ]
        )
    return F, fisher_score(F, score)


def best_interval(
    eps: float,
    score: str = "paper",
    method: str = "exact",
    grid: ArrayLike | None = None,
    *,
    refine: bool = False,
    rng: np.random.Generator | None = None,
    n_obs: int = 1000,
    n_is: int = 10000,
    noise_scale_factor: float = 1.0,
    min_half_width: float = 1e-4,
) -> tuple[float, float]:
    """Best symmetric interval ``(a*, b*) = (a, -a)`` for N(0, 1), paper eq. (13).

    Grid search over ``grid`` (default: the author's ``a`` grid on ``[-3, 0)``, step 0.06) of
    ``score`` (see :func:`fisher_score`) computed by ``method``. With ``refine=True`` (exact
    method only) the grid optimum is polished by a bounded scalar maximisation between its grid
    neighbours (half-widths down to ``min_half_width``), giving the continuous optimum.

    Accuracy of the continuous optimum: the exact score carries quadrature and rounding noise of
    about 1e-10 relative, and the maximum is flat (quadratic), so ``b*`` is determined to about
    1e-5 relative (measured: 3e-7 absolute at ``eps = 1`` between two CPU code paths). The bounded
    search runs to ``xatol = 1e-9``, below that noise; print ``b*`` with at most 4 significant
    digits.

    Returns
    -------
    (a, b) : tuple of float
    """
    _, scores = interval_scores(
        eps, score, method, grid, rng=rng, n_obs=n_obs, n_is=n_is, noise_scale_factor=noise_scale_factor
    )
    a_grid = _default_grid() if grid is None else np.asarray(grid, dtype=float)
    a_best = float(a_grid[int(np.nanargmax(scores))])
    if refine:
        if method != "exact":
            raise ValueError("refine=True needs method='exact' (a noisy objective cannot be polished)")
        check_positive("min_half_width", min_half_width)
        k = float(noise_scale_factor)
        eps_f = float(eps)

        def score_at(a: float) -> float:
            return float(fisher_score(_fisher_exact(0.0, 1.0, a, -a, eps_f, k), score))

        # between the grid neighbours of the best a; from the last grid point on to half-width min_half_width
        a_best, _, _ = refine_scanned_extreme(score_at, a_grid, scores, maximize=True, xatol=1e-9,
                                              limits=(None, -float(min_half_width)))
    return a_best, -a_best


def best_interval_asymmetric(
    eps: float,
    score: str = "paper",
    grid: ArrayLike | None = None,
    *,
    noise_scale_factor: float = 1.0,
) -> tuple[float, float, float]:
    """Best interval ``[a, b]`` for N(0, 1) without the symmetry ``a = -b`` (exact method).

    The paper's text describes a 50 x 50 grid over ``[-3, 3]^2`` (Section 4.1); the author's code
    searched symmetric intervals only. This searches all pairs ``a < b`` of ``grid`` (default: 51
    points on ``[-3, 3]``, step 0.12) with the exact Fisher information, then polishes the best
    pair with Nelder-Mead in ``(centre, log width)`` so that widths below the grid step are
    reachable. Because N(0, 1) is symmetric, ``[a, b]`` and ``[-b, -a]`` score the same; the
    representative with ``a + b >= 0`` is returned. Beyond the paper.

    Returns
    -------
    (a, b, score_value) : tuple of float
    """
    eps_f = check_positive("eps", eps)
    check_choice("score", score, _SCORES)
    k = check_positive("noise_scale_factor", noise_scale_factor)
    pts = np.linspace(-3.0, 3.0, 51) if grid is None else check_grid("grid", grid)
    if pts.size < 2:
        raise ValueError("grid must hold at least two points")
    ia, ib = np.triu_indices(pts.size, k=1)
    # N(0, 1) is symmetric, so [a, b] and [-b, -a] have the same diagonal information (F[0, 1]
    # changes sign only): search centres >= 0 and report that representative of a mirror pair
    keep = pts[ia] + pts[ib] >= -1e-12
    ia, ib = ia[keep], ib[keep]
    F = _fisher_exact(0.0, 1.0, pts[ia], pts[ib], eps_f, k)
    scores = fisher_score(F, score)
    i = int(np.nanargmax(scores))
    a0, b0 = float(pts[ia[i]]), float(pts[ib[i]])

    def negative_score(p: FloatArray) -> float:
        half = 0.5 * np.exp(p[1])
        return -float(fisher_score(_fisher_exact(0.0, 1.0, p[0] - half, p[0] + half, eps_f, k), score))

    res = optimize.minimize(
        negative_score,
        np.array([0.5 * (a0 + b0), np.log(b0 - a0)]),
        method="Nelder-Mead",
        options={"xatol": 1e-6, "fatol": 1e-12, "maxiter": 2000},
    )
    if -res.fun <= scores[i]:
        return a0, b0, float(scores[i])
    centre, half = abs(float(res.x[0])), 0.5 * float(np.exp(res.x[1]))
    return centre - half, centre + half, float(-res.fun)
