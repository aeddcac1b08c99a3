"""The prior-free baseline of chapter 4: the geometric mechanism, and the optimum over every private estimator.

Beyond Naldi & D'Acquisto: the count released with the (truncated) geometric mechanism of Ghosh,
Roughgarden & Sundararajan (2009) and post-processed by a Bayes rule, and the linear program of
chapter 1 (UBaPP) applied to the count, whose value bounds the absolute error of every eps-DP
estimator of it from below.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbayes.ubapp import optimal as ubapp
from dpbayes.core._extras import lazy_module
from dpbayes.counting.model import _check_model
from dpbayes.core.mechanisms import truncated_geometric_matrix
from dpbayes.core.validation import check_choice

stats = lazy_module("scipy.stats")

__all__ = ["GEOMETRIC_ESTIMATORS", "geometric_mean_abs_error", "optimal_private_estimator"]


GEOMETRIC_ESTIMATORS = ("naive", "clamped", "mean", "median")


def geometric_mean_abs_error(estimator: str, n: int, p: float, eps: float) -> float:
    """``E|C - estimate(Z)|`` for the geometric mechanism, exactly (finite sums).

    ``naive`` reports ``Z = C + G`` itself, ``E|G| = 2a / (1 - a**2)`` with ``a = e^{-eps}``;
    the other estimators only need ``Z`` clipped to ``{0, ..., n}`` (the posterior is constant
    below 0 and above ``n``), i.e. Ghosh et al.'s truncated geometric mechanism, followed by
    the clamped response, the posterior mean, or the posterior median (the Bayes remap for
    absolute error). Cost O(n**2); ``n <= 5000``.
    """
    estimator = check_choice("estimator", estimator, GEOMETRIC_ESTIMATORS)
    n, p, eps = _check_model(n, p, eps)
    if estimator == "naive":
        a = np.exp(-eps)
        return float(2 * a / (-np.expm1(-2 * eps)))
    if n > 5000:
        raise ValueError(f"n must be <= 5000 for the geometric mechanism, got {n}")
    k = np.arange(n + 1, dtype=float)
    prior = stats.binom.pmf(k, n, p)
    joint = truncated_geometric_matrix(n, eps) * prior[None, :]  # joint[z, c]
    if estimator == "clamped":
        est = k
    else:
        pz = joint.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            post = np.where(pz > 0, joint / pz, 1.0 / (n + 1))
        if estimator == "mean":
            est = post @ k
        else:
            est = np.argmax(np.cumsum(post, axis=1) >= 0.5 - 1e-12, axis=1).astype(float)
    return float(np.sum(joint * np.abs(k[None, :] - est[:, None])))


def optimal_private_estimator(n: int, p: float, eps: float, solver: str | None = None) -> Any:
    """Best eps-DP randomised estimator of the count for absolute error: the LP of chapter 01.

    The UBaPP linear program (:func:`dpbayes.ubapp.optimal.private_bayes_lp`) applied to the count
    itself: parameter = observation = ``C`` in ``{0..n}`` with the ``Binomial(n, p)`` prior,
    identity likelihood, neighbours ``c ~ c + 1``, estimates ``0..n``, loss ``|c - k|``. Its
    ``.risk`` is a lower bound on ``E|C - estimate|`` for *every* eps-DP mechanism followed by
    any estimator, the Laplace ones included: a real estimate can be clamped to ``[0, n]`` and
    randomly rounded to a neighbouring integer without changing ``E|c - .|`` for integer ``c``
    (post-processing keeps eps-DP). By Ghosh, Roughgarden & Sundararajan (2009) the truncated
    geometric mechanism followed by the posterior median attains it
    (:func:`geometric_mean_abs_error` with ``"median"``).

    The LP has ``(n + 1)**2`` variables; ``n`` is limited to 300.

    Returns
    -------
    dpbayes.ubapp.optimal.UbappSolution
    """
    n, p, eps = _check_model(n, p, eps)
    if n > 300:
        raise ValueError(f"n must be <= 300 for the LP, got {n}")
    k = np.arange(n + 1, dtype=float)
    loss = np.abs(k[:, None] - k[None, :])
    prior = stats.binom.pmf(k, n, p)
    return ubapp.private_bayes_lp(loss, np.eye(n + 1), prior, eps, ubapp.chain_neighbours(n + 1), solver=solver)
