"""LBaPP: the Laplace-mechanism baseline of the UBaPP paper (Bernoulli example).

Source: B. Lakshminarayanan and C. R. Rojas, "A Unified Approach to Differentially Private
Bayes Point Estimation", eq. (5) (non-private Bayes estimate plus Laplace noise), eqs. (12)-(13)
(posterior mean ``(y + 1)/(K + 2)`` of the Bernoulli example and its sensitivity ``1/(K + 2)``) and
Algorithm 2 (Monte-Carlo MSE).

Generalised here to a ``Beta(a, b)`` prior (``a = b = 1`` is the paper's uniform prior): the posterior
mean is ``(y + a)/(K + a + b)``, its sensitivity to one changed trial ``1/(K + a + b)``.

Privacy guarantee: the estimate ``(y + a)/(K + a + b) + Lap(0, 1/((K + a + b) eps))`` is eps-DP for
inputs differing in one trial (Laplace mechanism, Dwork & Roth 2014, Thm 3.6): the log-density
ratio between neighbouring counts is at most ``eps * |shift| / scale = eps``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from scipy import special, stats

from dpbayes.core.validation import check_grid, check_int, check_positive, check_rng

__all__ = [
    "MCEstimate",
    "lbapp_scale",
    "lbapp_estimate",
    "bayes_mse_posterior_mean",
    "lbapp_mse",
    "lbapp_mse_mc",
    "lbapp_logpdf",
    "prior_variance",
    "clipped_lbapp_estimate",
    "clipped_lbapp_mse",
    "laplace_count_remap_mse",
    "laplace_count_median_mae",
    "lbapp_grid_mae",
]


class MCEstimate(NamedTuple):
    """A Monte-Carlo mean and its standard error."""

    mean: float
    stderr: float


def _check(K: int, eps: float, a: float, b: float) -> tuple[int, float, float, float]:
    return check_int("K", K, minimum=1), check_positive("eps", eps), check_positive("a", a), check_positive("b", b)


def lbapp_scale(K: int, eps: float, a: float = 1.0, b: float = 1.0) -> float:
    """Laplace scale ``sigma / eps = 1 / ((K + a + b) eps)`` (paper eq. (13) for ``a = b = 1``)."""
    K, eps, a, b = _check(K, eps, a, b)
    return 1.0 / ((K + a + b) * eps)


def lbapp_estimate(y: NDArray[np.int64], K: int, eps: float, rng: np.random.Generator, a: float = 1.0, b: float = 1.0) -> NDArray[np.float64]:
    """LBaPP estimates for counts ``y`` (paper eq. (5) with (12)-(13)).

    Privacy: eps-DP for counts differing by one (module docstring); the output is not clipped
    to ``[0, 1]``, as in the paper.

    For simulation only (seeded floating-point noise); to protect real data use
    :mod:`dpbayes.release.statistic`, which draws the noise with OpenDP.
    """
    K, eps, a, b = _check(K, eps, a, b)
    rng = check_rng("rng", rng)
    y = np.asarray(y)
    if y.dtype.kind not in "iu" or np.any(y < 0) or np.any(y > K):
        raise ValueError(f"y must hold integer counts in [0, {K}]")
    return (y + a) / (K + a + b) + rng.laplace(0.0, lbapp_scale(K, eps, a, b), size=y.shape)


def lbapp_logpdf(t: NDArray[np.float64], y: NDArray[np.int64], K: int, eps: float, a: float = 1.0, b: float = 1.0) -> NDArray[np.float64]:
    """Log density of the LBaPP estimate ``t`` given count ``y`` (for exact privacy-loss checks)."""
    K, eps, a, b = _check(K, eps, a, b)
    scale = lbapp_scale(K, eps, a, b)
    centre = (np.asarray(y) + a) / (K + a + b)
    return -np.log(2.0 * scale) - np.abs(np.asarray(t) - centre) / scale


def bayes_mse_posterior_mean(K: int, a: float = 1.0, b: float = 1.0) -> float:
    """Bayes MSE of the non-private posterior mean, ``E[Var(theta | y)] = ab / ((a+b)(a+b+1)(a+b+K))``.

    The posterior mean shrinks the sample proportion towards the prior mean with weight
    ``(a+b)/(a+b+K)``, so its Bayes MSE is that fraction of the prior variance; ``1/(6(K+2))`` for the
    uniform prior.
    """
    K = check_int("K", K, minimum=0)
    a, b = check_positive("a", a), check_positive("b", b)
    return a * b / ((a + b) * (a + b + 1.0) * (a + b + K))


def lbapp_mse(K: int, eps: float, a: float = 1.0, b: float = 1.0) -> float:
    """Exact Bayes MSE of LBaPP: ``bayes_mse_posterior_mean(K) + 2 / ((K + a + b) eps)^2``.

    The Laplace noise is independent of ``(theta, y)`` with mean 0 and variance ``2 scale^2``, so it
    adds its variance to the MSE of the posterior mean (the quantity Algorithm 2 estimates).
    """
    K, eps, a, b = _check(K, eps, a, b)
    return bayes_mse_posterior_mean(K, a, b) + 2.0 * lbapp_scale(K, eps, a, b) ** 2


def lbapp_mse_mc(K: int, eps: float, n_runs: int, rng: np.random.Generator, a: float = 1.0, b: float = 1.0) -> MCEstimate:
    """Monte-Carlo MSE of LBaPP, the paper's Algorithm 2 (vectorised over the ``n_runs`` draws).

    Each run draws ``theta ~ Beta(a, b)`` (uniform in the paper), ``y ~ Binomial(K, theta)``,
    the LBaPP estimate, and records ``(estimate - theta)^2``; returns the mean and its standard error.
    """
    K, eps, a, b = _check(K, eps, a, b)
    n_runs = check_int("n_runs", n_runs, minimum=2)
    rng = check_rng("rng", rng)
    theta = rng.beta(a, b, size=n_runs)
    y = rng.binomial(K, theta)
    err2 = (lbapp_estimate(y, K, eps, rng, a, b) - theta) ** 2
    return MCEstimate(float(err2.mean()), float(err2.std(ddof=1) / np.sqrt(n_runs)))


# --------------------------------------------------------------------------------------------
# Fairer baselines (beyond the paper): free post-processing of the Laplace mechanism
# --------------------------------------------------------------------------------------------


def prior_variance(a: float = 1.0, b: float = 1.0) -> float:
    """Bayes MSE of the prior mean ``a/(a+b)``, i.e. the prior variance ``ab/((a+b)^2 (a+b+1))``.

    The prior mean ignores the data, so it is 0-DP (hence eps-DP for every eps); ``1/12`` for the
    uniform prior. Any estimator worse than it under strong privacy is beaten by a constant.
    """
    a, b = check_positive("a", a), check_positive("b", b)
    return a * b / ((a + b) ** 2 * (a + b + 1.0))


def clipped_lbapp_estimate(y: NDArray[np.int64], K: int, eps: float, rng: np.random.Generator, a: float = 1.0, b: float = 1.0) -> NDArray[np.float64]:
    """LBaPP estimate clipped to ``[0, 1]``: ``clip((y + a)/(K + a + b) + Lap(0, 1/((K + a + b) eps)), 0, 1)``.

    Privacy: eps-DP for counts differing by one, because clipping is post-processing of the
    eps-DP LBaPP estimate (Dwork & Roth 2014, Prop. 2.1). For simulation only (seeded noise).
    """
    return np.clip(lbapp_estimate(y, K, eps, rng, a, b), 0.0, 1.0)


def _beta_binomial_weights(K: int, a: float, b: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    y = np.arange(K + 1, dtype=float)
    return stats.betabinom.pmf(y, K, a, b), (y + a) / (K + a + b)


def clipped_lbapp_mse(K: int, eps: float, a: float = 1.0, b: float = 1.0) -> float:
    """Exact Bayes MSE of clipped LBaPP (:func:`clipped_lbapp_estimate`), in closed form.

    Given ``y`` the estimate ``T`` is independent of ``theta`` and ``E[theta | y] = m_y``, so
    ``E[(T - theta)^2 | y] = Var(theta | y) + E[(T - m_y)^2 | y]``. With ``T - m_y = clip(Z, -m_y, 1 - m_y)``,
    ``Z ~ Lap(0, s)`` and ``s = 1/((K + a + b) eps)``, each side of the Laplace distribution gives
    ``E[min(Z, u)^2; Z > 0] = s^2 (1 - e^{-u/s}(1 + u/s)) = s^2 P(2, u/s)`` (``P`` the regularised lower
    incomplete gamma function, accurate for small and large ``u/s``). Hence

    ``MSE = bayes_mse_posterior_mean(K) + s^2 sum_y Pr(y) [P(2, m_y/s) + P(2, (1 - m_y)/s)]``

    with ``Pr(y)`` beta-binomial (``1/(K + 1)`` for the uniform prior). It tends to the LBaPP MSE
    as ``eps -> inf`` and stays below ``bayes_mse_posterior_mean(K) + E[max(m_y, 1 - m_y)^2]`` as ``eps -> 0``.
    """
    K, eps, a, b = _check(K, eps, a, b)
    p_y, m_y = _beta_binomial_weights(K, a, b)
    s = lbapp_scale(K, eps, a, b)
    noise = s**2 * (special.gammainc(2.0, m_y / s) + special.gammainc(2.0, (1.0 - m_y) / s))
    return bayes_mse_posterior_mean(K, a, b) + float(p_y @ noise)


def laplace_count_remap_mse(K: int, eps: float, a: float = 1.0, b: float = 1.0, n_nodes: int = 48) -> float:
    """Bayes MSE of "Laplace noise on the count, clamped to ``[0, K]``, then the Bayes remap".

    The mechanism releases ``v = clip(y + Lap(0, 1/eps), 0, K)`` (eps-DP: Laplace mechanism on a
    count of sensitivity 1, then post-processing) and reports ``E[theta | v]``, the posterior mean
    given the released value (again post-processing). Its MSE is
    ``bayes_mse_posterior_mean(K) + E[(m_y - E[m_y | v])^2]``, where ``v`` has a density on ``(0, K)``
    and atoms at 0 and K (``Pr(v = 0 | y) = e^{-eps y}/2``, ``Pr(v = K | y) = e^{-eps (K - y)}/2``).

    The atoms are summed exactly; the density part is integrated by Gauss-Legendre quadrature with
    ``n_nodes`` nodes on each unit interval ``(j, j + 1)``, on which every ``Pr(y) f(v | y)`` is
    ``c_y exp(+-eps v)`` (smooth), so the quadrature error is at rounding level for the default
    (the tests compare ``n_nodes`` = 48 with 96). Deterministic, not Monte Carlo.

    Compared with LBaPP (the same Laplace noise added to the posterior mean, i.e. a linear map
    of ``y + Lap(0, 1/eps)``), the difference is the gain of the Bayes remap; compared with UBaPP
    (truncated *geometric* noise on the count + Bayes remap), the gain of integer noise.
    """
    K, eps, a, b = _check(K, eps, a, b)
    n_nodes = check_int("n_nodes", n_nodes, minimum=2, maximum=1000)
    p_y, m_y = _beta_binomial_weights(K, a, b)
    y = np.arange(K + 1, dtype=float)

    def excess(weights: NDArray[np.float64]) -> NDArray[np.float64]:
        # weights[..., y] = Pr(y, v); returns sum_y w (m_y - E[m | v])^2 for each v
        w_sum = weights.sum(axis=-1)
        mean = (weights @ m_y) / w_sum
        return weights @ m_y**2 - w_sum * mean**2

    # atoms: v = 0 (y + Z <= 0) and v = K (y + Z >= K)
    w0 = p_y * 0.5 * np.exp(-eps * y)
    wK = p_y * 0.5 * np.exp(-eps * (K - y))
    total = float(excess(w0[None, :])[0] + excess(wK[None, :])[0])
    # density part: v in (j, j + 1), f(v | y) = eps/2 exp(-eps |v - y|)
    x, w = np.polynomial.legendre.leggauss(n_nodes)
    s = 0.5 * (x + 1.0)  # nodes on (0, 1)
    for j in range(K):
        v = j + s
        logf = np.log(0.5 * eps) - eps * np.abs(v[:, None] - y[None, :])
        top = logf.max(axis=1, keepdims=True)
        weights = p_y[None, :] * np.exp(logf - top)
        total += float(np.sum(0.5 * w * np.exp(top[:, 0]) * excess(weights)))
    # mean-square error from the remap's excess over the posterior mean; clip the rounding noise
    return bayes_mse_posterior_mean(K, a, b) + max(total, 0.0)


def lbapp_grid_mae(K: int, eps: float, theta_grid: NDArray[np.float64], prior: NDArray[np.float64] | None = None) -> float:
    """Exact Bayes mean absolute error of LBaPP (uniform-prior posterior mean ``(y+1)/(K+2)``) on a grid.

    theta is distributed on ``theta_grid`` with weights ``prior`` (uniform on the grid by default),
    as in the absolute-loss problem of the chapter's notebook 01e. For a Laplace variable
    ``Z ~ Lap(0, s)`` and a constant ``c``, ``E|c - Z| = |c| + s e^{-|c|/s}``, so the MAE is the finite sum
    ``sum_j pi_j sum_y Binom(y; K, theta_j) (|d| + s e^{-|d|/s})`` with ``d = theta_j - (y+1)/(K+2)``.
    """
    K = check_int("K", K, minimum=1)
    eps = check_positive("eps", eps)
    theta = check_grid("theta_grid", theta_grid, low=0.0, high=1.0)
    pi = np.full(theta.size, 1.0 / theta.size) if prior is None else np.asarray(prior, dtype=float)
    if pi.shape != theta.shape:
        raise ValueError(f"prior must have shape {theta.shape}, got {pi.shape}")
    y = np.arange(K + 1)
    Q = stats.binom.pmf(y[:, None], K, theta[None, :])  # (K+1, M)
    s = lbapp_scale(K, eps)
    d = np.abs(theta[None, :] - ((y + 1.0) / (K + 2.0))[:, None])
    return float(np.sum(Q * pi[None, :] * (d + s * np.exp(-d / s))))


def _grid_posterior_median_loss(w: NDArray[np.float64], theta: NDArray[np.float64]) -> NDArray[np.float64]:
    """``min_t sum_j w[r, j] |theta_j - t|`` per row: the (unnormalised) expected loss at a weighted median."""
    c = np.cumsum(w, axis=1)
    k = np.argmax(c >= 0.5 * c[:, -1:], axis=1)  # first grid point with at least half the mass at or below it
    t = theta[k]
    return np.asarray(np.sum(w * np.abs(theta[None, :] - t[:, None]), axis=1), dtype=np.float64)


def laplace_count_median_mae(
    K: int, eps: float, theta_grid: NDArray[np.float64], prior: NDArray[np.float64] | None = None, n_nodes: int = 48
) -> float:
    """Bayes mean absolute error of "Laplace noise on the count, clamped to ``[0, K]``, then the posterior median".

    The absolute-loss counterpart of :func:`laplace_count_remap_mse` (the fair baseline of chapter 1, beyond the
    paper): release ``v = clip(y + Lap(0, 1/eps), 0, K)`` (eps-DP: Laplace mechanism on a count of sensitivity 1,
    then post-processing) and report the median of the posterior of theta given ``v``, with theta on
    ``theta_grid`` under ``prior`` (uniform on the grid by default), as in LP (11) of the paper with absolute
    loss. The MAE is ``E_v[min_t sum_j Pr(theta_j, v) |theta_j - t|]``: the atoms ``v = 0`` and ``v = K`` are summed
    exactly; on each unit interval of ``v`` Gauss-Legendre quadrature with ``n_nodes`` nodes integrates the
    density part (the integrand is continuous, with kinks where the median moves to the next grid point, so the
    error is small but not at rounding level: the tests compare 48 with 192 nodes). Deterministic.
    """
    K = check_int("K", K, minimum=1)
    eps = check_positive("eps", eps)
    theta = check_grid("theta_grid", theta_grid, low=0.0, high=1.0)
    n_nodes = check_int("n_nodes", n_nodes, minimum=2, maximum=1000)
    pi = np.full(theta.size, 1.0 / theta.size) if prior is None else np.asarray(prior, dtype=float)
    if pi.shape != theta.shape or np.any(pi < 0) or not np.isclose(pi.sum(), 1.0):
        raise ValueError(f"prior must be a probability vector of shape {theta.shape}")
    y = np.arange(K + 1, dtype=float)
    joint = stats.binom.pmf(y[:, None], K, theta[None, :]) * pi[None, :]  # Pr(y, theta_j), shape (K+1, M)
    # atoms: v = 0 (y + Z <= 0) and v = K (y + Z >= K)
    atoms = np.vstack([0.5 * np.exp(-eps * y), 0.5 * np.exp(-eps * (K - y))]) @ joint
    total = float(np.sum(_grid_posterior_median_loss(atoms, theta)))
    x, w = np.polynomial.legendre.leggauss(n_nodes)
    s = 0.5 * (x + 1.0)
    for j in range(K):
        v = j + s
        dens = 0.5 * eps * np.exp(-eps * np.abs(v[:, None] - y[None, :]))  # f(v | y), shape (n_nodes, K+1)
        total += float(np.sum(0.5 * w * _grid_posterior_median_loss(dens @ joint, theta)))
    return total

