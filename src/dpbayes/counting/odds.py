"""What one individual's posterior odds do after a Laplace-noised count is released (the paper's privacy claim, §1).

Source: M. Naldi and G. D'Acquisto, "Differential privacy for counting queries: can Bayes
estimation help uncover the true value?" (chapter 4). Model: the count ``C`` of ``n`` records, the noisy
response ``Y = C + R`` with ``R ~ Laplace(0, 1/eps)`` (eq. (1)); every quantity is exact in the sense of
:mod:`dpbayes.counting.risk` (closed forms outside ``[0, n]``, Gauss-Legendre between break points inside).

Neighbours: data sets that differ in one record (the count moves by at most 1, ``n`` public). The shift of
the log posterior odds that a given record satisfies the predicate is at most ``eps`` for every response: the
eps-DP bound, checked here exactly.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

from dpbayes.counting.risk import PriorPosterior, _check_model

__all__ = ["individual_odds_shift"]


def individual_odds_shift(n: int, p: float, eps: float, y: ArrayLike) -> NDArray[np.float64]:
    """``|log posterior odds - log prior odds|`` that record ``i`` satisfies the predicate, given ``Y = y``.

    Records are independent ``Bernoulli(p)`` (the model behind eq. (10)); the count of the other
    ``n - 1`` records is ``Binomial(n - 1, p)``. The likelihood ratio of ``x_i = 1`` to
    ``x_i = 0`` is ``sum_c B(c) e^{-eps|y - c - 1|} / sum_c B(c) e^{-eps|y - c|}``, between
    ``e^{-eps}`` and ``e^{eps}`` because the two Laplace densities are: the eps-DP bound, which
    every function of ``y`` (the posterior mean among them) inherits.
    """
    n, p, eps = _check_model(n, p, eps)
    if n < 2:
        raise ValueError("n must be >= 2")
    y = np.asarray(y, dtype=float)
    post = PriorPosterior(stats.binom.logpmf(np.arange(n), n - 1, p), eps)
    l1 = _log_norm(post, y - 1.0)
    l0 = _log_norm(post, y)
    return np.abs(l1 - l0)


def _log_norm(post: PriorPosterior, y: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log sum_c w_c exp(-eps |y - c|)`` for any real ``y`` (not clipped)."""
    n = post.n
    yc = np.clip(y, 0.0, float(n))
    _, j, ey = post._prep(yc)
    lz = post._log_z(0, j, ey)
    # outside [0, n] the kernel changes by the factor exp(-eps * distance to the interval)
    return lz - post.eps * (np.abs(y - yc))
