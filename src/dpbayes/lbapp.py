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

from dpbayes.validation import check_int, check_positive, check_rng

__all__ = ["MCEstimate", "lbapp_scale", "lbapp_estimate", "bayes_mse_posterior_mean", "lbapp_mse", "lbapp_mse_mc", "lbapp_logpdf"]


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
    :mod:`dpbayes.release`, which draws the noise with OpenDP.
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
