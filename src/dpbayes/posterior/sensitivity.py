"""Candidate set and sensitivities of the Hellinger utility for private posterior release.

Setting (notes §1, "Background"): data ``x`` of ``n`` records in ``k`` categories, summarised by its
count vector ``c`` (``sum c = n``); prior ``Dir(alpha)``; posterior ``DirP(x) = Dir(alpha + c)``;
candidate set ``R_alpha = {Dir(alpha + c') : c' counts summing to n}``; utility
``u(x, r) = -H(DirP(x), r)``. Neighbouring data sets have the same size ``n`` and differ in one record,
i.e. ``c' = c - e_i + e_j`` (for two categories: ``x`` ones versus ``x + 1`` ones).

Sensitivities (all *computed* by enumeration, never assumed):

* local sensitivity ``LS(x) = max_{x' ~ x} max_r |u(x, r) - u(x', r)|``. By the triangle inequality
  for ``H`` the inner maximum is at most ``H(DirP(x), DirP(x'))`` and it is attained at
  ``r = DirP(x)`` (a candidate), so ``LS(x) = max_{x' ~ x} H(DirP(x), DirP(x'))`` exactly.
* global sensitivity ``GS(n, alpha) = max_x LS(x)``.
* smooth sensitivity (Nissim, Raskhodnikova & Smith 2007)
  ``S_beta(x) = max_{x'} LS(x') exp(-beta d(x, x'))`` with ``d`` the number of records to change.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import combinations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbayes.core.distances import hellinger_dirichlet
from dpbayes.core.validation import check_int, check_nonnegative, check_positive

__all__ = [
    "NOTES_GLOBAL_SENSITIVITY",
    "MAX_CANDIDATES",
    "check_prior",
    "candidate_counts",
    "neighbour_distances_binary",
    "local_sensitivity",
    "local_sensitivity_all",
    "global_sensitivity",
    "smooth_sensitivity",
    "smooth_sensitivity_all_binary",
    "pure_dp_smoothing_beta",
]

#: The constant the notes use for the global sensitivity (proof of Thm 2.5), sqrt(1 - pi/4), which is
#: H(Beta(2, 1), Beta(1, 2)), the distance between the two posteriors of n = 1 under a uniform prior.
NOTES_GLOBAL_SENSITIVITY = math.sqrt(1.0 - math.pi / 4.0)

#: Largest candidate set enumerated for k > 2 categories (memory guard, ~ 50 MB of float64 per axis).
MAX_CANDIDATES = 3_000_000


def check_prior(prior: ArrayLike, k: int | None = None) -> NDArray[np.float64]:
    """Validate a Dirichlet prior: a 1-D vector of ``k >= 2`` positive finite parameters."""
    arr = np.asarray(check_positive("prior", prior), dtype=float)
    if arr.ndim != 1 or arr.size < 2:
        raise ValueError(f"prior must be a 1-D vector of >= 2 positive parameters (a, b, ...), got shape {arr.shape}")
    if k is not None and arr.size != k:
        raise ValueError(f"prior must have {k} entries (one per category), got {arr.size}")
    return arr


def _n_candidates(n: int, k: int) -> int:
    return math.comb(n + k - 1, k - 1)


def candidate_counts(n: int, k: int) -> NDArray[np.int64]:
    """All count vectors of ``n`` records in ``k`` categories (the index set of ``R_alpha``).

    For ``k = 2`` the rows are ``(j, n - j)`` for ``j = 0..n`` in this order (``j`` = number of ones),
    which is the column order of every binary output distribution in :mod:`dpbayes.posterior.release`.

    Returns
    -------
    ndarray of int, shape (C(n + k - 1, k - 1), k)
    """
    n = check_int("n", n, minimum=1)
    k = check_int("k", k, minimum=2)
    size = _n_candidates(n, k)
    if size > MAX_CANDIDATES:
        raise ValueError(f"candidate set for n={n}, k={k} has {size} elements; at most {MAX_CANDIDATES} are enumerated")
    if k == 2:
        j = np.arange(n + 1)
        return np.stack([j, n - j], axis=1)
    # Stars and bars: choose k - 1 bar positions among n + k - 1 slots.
    bars = np.array(list(combinations(range(n + k - 1), k - 1)), dtype=np.int64)
    edges = np.concatenate([np.full((len(bars), 1), -1), bars, np.full((len(bars), 1), n + k - 1)], axis=1)
    return np.diff(edges, axis=1) - 1


def _check_counts(counts: ArrayLike, prior: NDArray[np.float64]) -> NDArray[np.int64]:
    arr = np.asarray(counts)
    if arr.ndim != 1 or arr.size != prior.size:
        raise ValueError(f"counts must be a 1-D vector with one entry per category ({prior.size}), got shape {arr.shape}")
    check_nonnegative("counts", arr)
    if not np.all(np.asarray(arr, dtype=float) == np.round(np.asarray(arr, dtype=float))):
        raise ValueError(f"counts must be non-negative integers, got {counts!r}")
    arr = arr.astype(np.int64)
    if arr.sum() < 1:
        raise ValueError("counts must describe at least one record (sum >= 1)")
    return arr


def neighbour_distances_binary(n: int, prior: ArrayLike) -> NDArray[np.float64]:
    """``H(DirP(x), DirP(x'))`` for the ``n`` binary neighbour pairs ``(x, x + 1)``, ``x = 0..n-1``."""
    n = check_int("n", n, minimum=1)
    a, b = check_prior(prior, 2)
    j = np.arange(n, dtype=float)
    return np.asarray(hellinger_dirichlet(np.stack([a + j, b + n - j], 1), np.stack([a + j + 1, b + n - j - 1], 1)))


def _neighbour_distance_matrix(counts: NDArray[np.int64], prior: NDArray[np.float64]) -> NDArray[np.float64]:
    """For each count vector (rows), ``max`` over the moves ``e_i -> e_j`` of ``H`` to that neighbour."""
    k = prior.size
    post = counts + prior
    best = np.zeros(len(counts))
    for i in range(k):
        for j in range(k):
            if i == j:
                continue
            valid = counts[:, i] >= 1
            if not np.any(valid):
                continue
            moved = post[valid].copy()
            moved[:, i] -= 1
            moved[:, j] += 1
            best[valid] = np.maximum(best[valid], hellinger_dirichlet(post[valid], moved))
    return best


def local_sensitivity_all(n: int, prior: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """``LS(x)`` for every data set of size ``n`` (rows of :func:`candidate_counts`).

    Returns
    -------
    counts : ndarray, shape (m, k)
    ls : ndarray, shape (m,)
    """
    alpha = check_prior(prior)
    n = check_int("n", n, minimum=1)
    return _local_sensitivity_all_cached(n, tuple(float(v) for v in alpha))


@lru_cache(maxsize=64)
def _local_sensitivity_all_cached(n: int, prior: tuple[float, ...]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    # Cached because every exponential mechanism, the good set and the smooth sensitivity need the
    # same table; the arrays are made read-only so that no caller can corrupt the cache.
    alpha = np.asarray(prior)
    counts = candidate_counts(n, alpha.size)
    if alpha.size == 2:
        nb = neighbour_distances_binary(n, alpha)
        ls = np.zeros(n + 1)
        ls[:-1] = nb  # neighbour x + 1
        ls[1:] = np.maximum(ls[1:], nb)  # neighbour x - 1
    else:
        ls = _neighbour_distance_matrix(counts, alpha)
    counts.setflags(write=False)
    ls.setflags(write=False)
    return counts, ls


def local_sensitivity(counts: ArrayLike, prior: ArrayLike) -> float:
    """Local sensitivity ``LS(x) = max_{x' ~ x} H(DirP(x), DirP(x'))`` of the Hellinger utility.

    Parameters
    ----------
    counts : array_like of int, shape (k,)
        Category counts of the data set (``n = sum counts``).
    prior : array_like, shape (k,)
        Dirichlet prior parameters.
    """
    alpha = check_prior(prior)
    c = _check_counts(counts, alpha)
    return float(_neighbour_distance_matrix(c[None, :], alpha)[0])


def global_sensitivity(n: int, prior: ArrayLike) -> float:
    """Global sensitivity ``GS(n, alpha) = max_x LS(x)`` of ``u(x, r) = -H(DirP(x), r)``, by enumeration.

    Compare with :data:`NOTES_GLOBAL_SENSITIVITY` (= sqrt(1 - pi/4)), the value the notes use in the
    proof of Thm 2.5 for every ``n`` and prior.
    """
    _, ls = local_sensitivity_all(n, prior)
    return float(ls.max())


def pure_dp_smoothing_beta(n: int, prior: ArrayLike) -> float:
    """Smoothing parameter ``beta = log(1 + 2 min_x LS(x))`` that makes EHDS pure ``eps``-DP.

    Why this value: EHDS samples ``r`` with probability proportional to ``exp(eps u(x, r) / (4 S(x)))``.
    For neighbours ``x ~ x'`` write ``s = S(x)``, ``s' = S(x')``. The log-ratio of the two output
    probabilities is ``D(r) - log E_{x'}[exp D]`` with
    ``D(r) = eps/4 * [(u(x, r) - u(x', r)) / s + u(x', r) (1/s - 1/s')]``, so the privacy loss is at
    most ``max_r D - min_r D <= eps/4 * (2 LS(x)/s + |1/s - 1/s'|)`` (``u`` ranges in ``[-1, 0]``).
    ``S >= LS`` bounds the first part by 2; a ``beta``-smooth bound has ``s' >= exp(-beta) s``, so
    ``|1/s - 1/s'| <= (exp(beta) - 1)/s``, which is ``<= 2`` when ``exp(beta) - 1 <= 2 min_x S(x)``.
    Since ``S(x) >= LS(x) >= min LS``, the stated ``beta`` gives total loss ``<= eps``.
    """
    _, ls = local_sensitivity_all(n, prior)
    return float(np.log1p(2.0 * ls.min()))


def smooth_sensitivity(counts: ArrayLike, prior: ArrayLike, beta: float | None = None) -> float:
    """``beta``-smooth sensitivity ``S(x) = max_{x'} LS(x') exp(-beta d(x, x'))`` (NRS 2007, Def. 2.2).

    Parameters
    ----------
    counts : array_like of int, shape (k,)
    prior : array_like, shape (k,)
    beta : float, optional
        Smoothing parameter ``> 0``; default :func:`pure_dp_smoothing_beta` (which makes EHDS ``eps``-DP).

    Notes
    -----
    ``d(x, x')`` = number of records to change = ``sum |c - c'| / 2``. The maximum runs over all data
    sets of the same size (exact, by enumeration).
    """
    alpha = check_prior(prior)
    c = _check_counts(counts, alpha)
    n = int(c.sum())
    all_counts, ls = local_sensitivity_all(n, alpha)
    if beta is None:
        beta = float(np.log1p(2.0 * ls.min()))
    beta = check_positive("beta", beta)
    dist = np.abs(all_counts - c).sum(axis=1) / 2
    return float(np.max(ls * np.exp(-beta * dist)))


def smooth_sensitivity_all_binary(n: int, prior: ArrayLike, beta: float | None = None) -> NDArray[np.float64]:
    """``S_beta(x)`` for every binary data set ``x = 0..n`` ones (see :func:`smooth_sensitivity`)."""
    _, ls = local_sensitivity_all(n, check_prior(prior, 2))
    if beta is None:
        beta = float(np.log1p(2.0 * ls.min()))
    beta = check_positive("beta", beta)
    x = np.arange(n + 1)
    return np.max(ls[None, :] * np.exp(-beta * np.abs(x[:, None] - x[None, :])), axis=1)
