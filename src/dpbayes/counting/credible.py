"""Coverage and width of the posterior's credible interval for a Laplace-noised count, at fixed counts (beyond the paper).

Source: M. Naldi and G. D'Acquisto, "Differential privacy for counting queries: can Bayes
estimation help uncover the true value?" (chapter 4). Model: the count ``C`` of ``n`` records, the noisy
response ``Y = C + R`` with ``R ~ Laplace(0, 1/eps)`` (eq. (1)); every quantity is exact in the sense of
:mod:`dpbayes.counting.risk` (closed forms outside ``[0, n]``, Gauss-Legendre between break points inside).

The interval for a response ``y`` is the equal-tailed interval of the posterior of the count under a
binomial or Beta-binomial prior (:class:`dpbayes.counting.risk.PriorPosterior`). Its coverage at a fixed
true count is a Laplace probability between two roots in ``y``, because the posterior is stochastically
increasing in ``y``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbayes.counting.risk import PriorPosterior, _check_counts, _check_model, _check_prior, _laplace_cdf, prior_logpmf
from dpbayes.core.validation import check_probability

__all__ = ["credible_width", "credible_coverage"]


def _quantile_root(post: PriorPosterior, t: NDArray[np.int64], q: float) -> NDArray[np.float64]:
    """Largest ``y`` in ``[0, n]`` with ``P(C <= t | y) >= q`` (60 halvings); ``+inf`` when all of it, ``-inf`` when none.

    The posterior is stochastically increasing in ``y`` (log-concave Laplace kernel), so the set is ``y <= root``.
    """
    n = post.n

    def ok(y: NDArray[np.float64]) -> NDArray[np.bool_]:
        return post.cdf(t, y) >= q

    lo = np.zeros(t.size)
    hi = np.full(t.size, float(n))
    ok_lo, ok_hi = ok(lo), ok(hi)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        good = ok(mid)
        lo = np.where(good, mid, lo)
        hi = np.where(good, hi, mid)
    y = 0.5 * (lo + hi)
    y = np.where(ok_hi, np.inf, y)  # ok on all of [0, n], hence everywhere (constant outside)
    return np.where(~ok_lo, -np.inf, y)


def credible_width(
    a: ArrayLike, n: int, p: float, eps: float, level: float = 0.9, prior: str = "binomial",
    concentration: float | None = None,
) -> NDArray[np.float64]:
    """Expected span ``E[q_hi(Y) - q_lo(Y) | a]`` of the posterior's equal-tailed credible interval at fixed counts.

    The quantiles of :func:`credible_coverage` are nondecreasing integer step functions of ``y``: ``q(y) > t``
    exactly for ``y > y_t`` (the root of ``P(C <= t | y) = q``), so ``E[q(Y) | a] = sum_(t=0..n-1) P(Y > y_t | a)``,
    a sum of Laplace tail probabilities (roots by bisection, as in :func:`credible_coverage`).
    """
    n, p, eps = _check_model(n, p, eps)
    level = float(check_probability("level", level, open_interval=True))
    prior, concentration = _check_prior(prior, concentration)
    a_arr = _check_counts(a, n)
    post = PriorPosterior(prior_logpmf(n, p, prior, concentration), eps)
    t = np.arange(n, dtype=np.int64)
    out = np.zeros(a_arr.size)
    av = a_arr.reshape(-1).astype(float)
    for sign, q in ((1.0, 0.5 * (1 + level)), (-1.0, 0.5 * (1 - level))):
        roots = _quantile_root(post, t, q)
        with np.errstate(invalid="ignore"):
            tail = 1.0 - _laplace_cdf(roots[None, :] - av[:, None], eps)
        tail = np.where(np.isneginf(roots)[None, :], 1.0, np.where(np.isposinf(roots)[None, :], 0.0, tail))
        out += sign * tail.sum(axis=1)
    return out.reshape(a_arr.shape)


def credible_coverage(
    a: ArrayLike, n: int, p: float, eps: float, level: float = 0.9, prior: str = "binomial",
    concentration: float | None = None,
) -> NDArray[np.float64]:
    """Frequentist coverage at fixed counts of the posterior's equal-tailed credible interval.

    The interval for response ``y`` is ``[q_lo(y), q_hi(y)]``, the posterior quantiles at
    ``(1 - level)/2`` and ``(1 + level)/2`` (smallest integer ``t`` with ``P(C <= t | y) >= q``).
    The Laplace kernel is log-concave in ``y - c``, so the posterior is stochastically increasing
    in ``y``: ``q_lo(y) <= a`` exactly for ``y <= y1(a)`` and ``q_hi(y) >= a`` exactly for
    ``y > y0(a)``; both roots are found by bisection (60 halvings of ``[0, n]``) and the
    coverage is the Laplace probability ``P(y0 < Y <= y1 | a)``.
    """
    n, p, eps = _check_model(n, p, eps)
    level = float(check_probability("level", level, open_interval=True))
    prior, concentration = _check_prior(prior, concentration)
    a_arr = _check_counts(a, n)
    shape = a_arr.shape
    av = a_arr.reshape(-1)
    post = PriorPosterior(prior_logpmf(n, p, prior, concentration), eps)
    q_lo, q_hi = 0.5 * (1 - level), 0.5 * (1 + level)

    y1 = _quantile_root(post, av, q_lo)  # q_lo(y) <= a  <=>  P(C <= a | y) >= q_lo
    y0 = _quantile_root(post, av - 1, q_hi)  # q_hi(y) < a  <=>  P(C <= a - 1 | y) >= q_hi
    with np.errstate(invalid="ignore"):
        cov = _laplace_cdf(y1 - av, eps) - _laplace_cdf(y0 - av, eps)
    return np.clip(np.where(y1 > y0, cov, 0.0), 0.0, 1.0).reshape(shape)
