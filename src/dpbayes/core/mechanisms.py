"""Additive-noise mechanisms for a counting query (sensitivity 1).

A count ``c`` in ``{0, ..., n}`` changes by at most 1 when one record is added, removed or
changed, so neighbouring databases have counts ``c`` and ``c + 1``. Two mechanisms are
implemented, each with its exact density or mass function so that privacy and Bayes
post-processing can be computed exactly:

* the Laplace mechanism ``y = c + R``, ``R ~ Laplace(0, 1/eps)``
  (Naldi & D'Acquisto, eqs. (1) and (8); Dwork et al. 2006);
* the geometric (two-sided geometric, "discrete Laplace") mechanism ``z = c + G``,
  ``P(G = k) = (1 - a) / (1 + a) * a**|k|`` with ``a = exp(-eps)`` (Ghosh, Roughgarden &
  Sundararajan 2009), and its version truncated to ``{0, ..., n}`` (outputs below 0 reported as
  0, above ``n`` as ``n``), which is a post-processing of the untruncated one.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbayes.core.geometric import sample_two_sided_geometric, two_sided_geometric_logpmf
from dpbayes.core.geometric import truncated_geometric_matrix as _truncated_geometric_matrix
from dpbayes.core.privacy_loss import _max_log_ratio, neighbour_pairs
from dpbayes.core.validation import check_int, check_positive, check_rng

__all__ = [
    "laplace_count",
    "laplace_count_logpdf",
    "geometric_count",
    "geometric_count_logpmf",
    "truncated_geometric_matrix",
    "max_privacy_loss",
]


def _as_counts(name: str, counts: ArrayLike) -> NDArray[np.int64]:
    arr = np.asarray(counts)
    if arr.dtype.kind not in "iu" and not (arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0")
    return arr.astype(np.int64)


def laplace_count(counts: ArrayLike, eps: float, rng: np.random.Generator) -> NDArray[np.float64]:
    """Release each count with Laplace noise of scale ``1/eps`` (paper eq. (1), Definition 2).

    Privacy: eps-differentially private for one counting query (sensitivity 1), because
    ``|log f(y | c) - log f(y | c + 1)| = eps * ||y - c| - |y - c - 1|| <= eps`` for every ``y``.

    For simulation only (seeded floating-point noise); to protect real data use
    :mod:`dpbayes.release.statistic`, which draws the noise with OpenDP.

    Parameters
    ----------
    counts : array_like of int
        True counts (any shape).
    eps : float
        Privacy parameter, ``> 0``.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    ndarray of float
        Noisy counts, same shape as ``counts``.
    """
    c = _as_counts("counts", counts)
    eps = check_positive("eps", eps)
    rng = check_rng("rng", rng)
    return c + rng.laplace(0.0, 1.0 / eps, size=c.shape)


def laplace_count_logpdf(y: ArrayLike, count: ArrayLike, eps: float) -> NDArray[np.float64]:
    """Log density of the Laplace-noised count ``y`` given the true count (paper eq. (8)).

    ``log f(y | c) = log(eps / 2) - eps * |y - c|``; broadcasts ``y`` against ``count``.
    """
    eps = check_positive("eps", eps)
    y = np.asarray(y, dtype=float)
    c = np.asarray(count, dtype=float)
    return np.log(eps / 2.0) - eps * np.abs(y - c)


def geometric_count(counts: ArrayLike, eps: float, rng: np.random.Generator) -> NDArray[np.int64]:
    """Release each count with two-sided geometric noise, ``P(G = k) ∝ exp(-eps |k|)``.

    Privacy: eps-differentially private for one counting query, since the log mass ratio of
    neighbouring counts is ``eps * ||z - c| - |z - c - 1|| <= eps`` for every integer ``z``.

    The noise is drawn by :func:`dpbayes.core.geometric.sample_two_sided_geometric` (the difference of
    two i.i.d. geometric variables with success probability ``1 - exp(-eps)``, which has exactly
    the two-sided geometric law).

    For simulation only (seeded NumPy sampler); to protect real data use :mod:`dpbayes.release.statistic`,
    which draws the noise with OpenDP.
    """
    c = _as_counts("counts", counts)
    eps = check_positive("eps", eps)
    rng = check_rng("rng", rng)
    return c + sample_two_sided_geometric(eps, rng, c.shape)


def geometric_count_logpmf(z: ArrayLike, count: ArrayLike, eps: float) -> NDArray[np.float64]:
    """Log mass of the geometric mechanism output ``z`` given the true count.

    ``log P(z | c) = log((1 - a) / (1 + a)) - eps |z - c|`` with ``a = exp(-eps)``
    (:func:`dpbayes.core.geometric.two_sided_geometric_logpmf`).
    """
    return two_sided_geometric_logpmf(z, count, eps)


def truncated_geometric_matrix(n: int, eps: float) -> NDArray[np.float64]:
    """Output probabilities of the geometric mechanism truncated to ``{0, ..., n}``.

    Returns ``M`` of shape ``(n + 1, n + 1)`` with ``M[z, c] = P(output = z | count = c)``:
    ``a**|z - c| * (1 - a) / (1 + a)`` inside, and the whole tail mass
    ``a**c / (1 + a)`` at ``z = 0`` and ``a**(n - c) / (1 + a)`` at ``z = n``
    (``a = exp(-eps)``). Truncation is post-processing, so ``M`` is eps-differentially
    private for neighbouring counts ``c, c + 1``; it is Ghosh et al.'s truncated geometric
    mechanism (the law of :func:`dpbayes.core.geometric.truncated_geometric_matrix`, here for
    ``1 <= n <= 20000``).
    """
    n = check_int("n", n, minimum=1, maximum=20000)
    eps = check_positive("eps", eps)
    return _truncated_geometric_matrix(n, eps)


def max_privacy_loss(matrix: ArrayLike) -> float:
    """Largest ``|log M[z, c] - log M[z, c + 1]|`` over outputs ``z`` and neighbours ``c, c + 1``.

    A mechanism given by the column-stochastic matrix ``M`` (outputs x counts) is
    eps-differentially private for counts exactly when this number is ``<= eps``. Entries that
    are zero in both columns are ignored; a zero next to a positive entry gives ``inf``. The
    loss is :func:`dpbayes.core.privacy_loss.worst_case_privacy_loss` with the counts on the columns.
    """
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.shape[1] < 2:
        raise ValueError(f"matrix must be 2-D with at least 2 columns, got shape {m.shape}")
    with np.errstate(divide="ignore", invalid="ignore"):
        log_m = np.log(m)
    return max(_max_log_ratio(log_m.T, neighbour_pairs(m.shape[1], "adjacent")), 0.0)
