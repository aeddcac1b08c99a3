"""Accuracy of a private posterior release (chapter 2): the exact law of its Hellinger error.

Source: ``laplace-optimality-notes.md`` ("notes"), §2. The error of a release ``c~`` of the data set
with counts ``c`` is the Hellinger distance ``H(DirP(x), Dir(alpha + c~))`` between the true and the
released posterior (:func:`dpbayes.core.distances.hellinger_dirichlet`); its exact distribution follows
from the mechanism's exact output law (:mod:`dpbayes.posterior.mechanisms`): mean error, the
probability of the good set ``H <= LS(x)`` (notes Cor. 2.5.2), quantiles, releases outside
``R_alpha`` and their projection back onto it.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbayes.core.distances import hellinger_dirichlet
from dpbayes.posterior.mechanisms import (
    _LAPLACE_SCALED,
    get_mechanism,
    release_log_distribution,
    sample_release,
)
from dpbayes.posterior.sensitivity import (
    _check_counts,
    candidate_counts,
    check_prior,
    local_sensitivity,
    local_sensitivity_all,
)
from dpbayes.core.validation import check_choice, check_int, check_positive, check_probability

__all__ = [
    "error_distribution",
    "mean_error",
    "within_probability",
    "good_set_probability",
    "error_quantile",
    "sample_errors",
    "off_candidate_probability",
    "projected_release_log_distribution",
    "binary_local_sensitivities",
    "binary_distance_matrix",
]


# -- accuracy --------------------------------------------------------------------------------------
def error_distribution(
    mechanism: str, counts: ArrayLike, eps: float, prior: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Exact distribution of the released Hellinger error ``H(DirP(x), released posterior)``.

    Returns
    -------
    errors, probs : ndarray, shape (m,)
        One entry per support point of the release (errors may repeat).
    """
    alpha = check_prior(prior)
    c = _check_counts(counts, alpha)
    released, logp = release_log_distribution(mechanism, c, eps, alpha)
    errors = np.asarray(hellinger_dirichlet(alpha + c, alpha + released))
    return errors, np.exp(logp)


def mean_error(mechanism: str, counts: ArrayLike, eps: float, prior: ArrayLike) -> float:
    """``E[H(DirP(x), M(x))]``, exact."""
    errors, probs = error_distribution(mechanism, counts, eps, prior)
    return float(np.dot(errors, probs))


# Distances equal to LS(x) are computed by the same formula on the same pair, but allow for the last
# bit of rounding when deciding membership of the good set.
_GOOD_SET_RTOL = 1e-9


def within_probability(mechanism: str, counts: ArrayLike, eps: float, prior: ArrayLike, t: float, *, strict: bool = True) -> float:
    """``P[H(DirP(x), M(x)) < t]`` (``<= t`` with ``strict=False``), exact."""
    t = check_positive("t", t)
    errors, probs = error_distribution(mechanism, counts, eps, prior)
    inside = errors < t if strict else errors <= t * (1 + _GOOD_SET_RTOL)
    return float(probs[inside].sum())


def good_set_probability(mechanism: str, counts: ArrayLike, eps: float, prior: ArrayLike) -> float:
    """``P[M(x) in R_g]`` with the good set ``R_g = {r : H(DirP(x), r) <= LS(x)}`` (notes Cor. 2.5.2)."""
    ls = local_sensitivity(counts, prior)
    return within_probability(mechanism, counts, eps, prior, ls, strict=False)


def error_quantile(mechanism: str, counts: ArrayLike, eps: float, prior: ArrayLike, gamma: float) -> float:
    """``ELap``-type error (notes Thm 2.1): the smallest ``t`` with ``P[H <= t] >= 1 - gamma``.

    The notes write ``argmin_t {P[H < t] >= 1 - gamma}``; with a strict inequality the minimum is not
    attained, and its infimum is this quantile.
    """
    gamma = check_probability("gamma", gamma, open_interval=True)
    errors, probs = error_distribution(mechanism, counts, eps, prior)
    order = np.argsort(errors, kind="stable")
    cum = np.cumsum(probs[order])
    idx = int(np.searchsorted(cum, (1.0 - gamma) * (1 - 1e-12), side="left"))
    return float(errors[order][min(idx, len(order) - 1)])


def sample_errors(
    mechanism: str, counts: ArrayLike, eps: float, prior: ArrayLike, rng: np.random.Generator, size: int
) -> NDArray[np.float64]:
    """Hellinger errors ``H(DirP(x), Dir(prior + c~))`` of ``size`` sampled releases (Monte Carlo)."""
    alpha = check_prior(prior)
    c = _check_counts(counts, alpha)
    released = sample_release(mechanism, c, eps, alpha, rng, size)
    return np.asarray(hellinger_dirichlet(alpha + c, alpha + released))


def off_candidate_probability(mechanism: str, counts: ArrayLike, eps: float, prior: ArrayLike) -> float:
    """Exact probability that the release is not in ``R_alpha`` (released counts do not sum to ``n``).

    Zero for the exponential mechanisms and for ``k = 2``; positive for ``LSDim``/``LSHist`` with
    ``k >= 3`` because notes Alg. 1-2 clamp the last coordinate instead of projecting.
    """
    mech = get_mechanism(mechanism)
    alpha = check_prior(prior)
    c = _check_counts(counts, alpha)
    mech.check_categories(alpha.size)
    if mech.kind == "exponential" or alpha.size == 2:
        return 0.0  # these always release a member of R_alpha
    released, logp = release_log_distribution(mechanism, c, eps, alpha)
    off = released.sum(axis=1) != c.sum()
    return float(np.exp(logp[off]).sum()) if np.any(off) else 0.0


def projected_release_log_distribution(
    mechanism: str, counts: ArrayLike, eps: float, prior: ArrayLike, *, chunk: int = 256, mass_tol: float = 0.0
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """``LSDim``/``LSHist`` (or ``LSHist-round``) with every off-candidate release projected back onto ``R_alpha``.

    Not in the notes (they clamp the last coordinate, which can leave ``R_alpha`` for ``k >= 3``). A release
    ``c~`` whose counts do not sum to ``n`` is replaced by the candidate ``r`` nearest to it in Hellinger
    distance, ``argmin_r H(Dir(alpha + c~), r)`` (the first in :func:`dpbayes.posterior.sensitivity.candidate_counts`
    order on ties); releases in ``R_alpha`` are kept. Privacy: post-processing of the mechanism, so the same
    guarantee (:func:`dpbayes.posterior.mechanisms.proven_epsilon`); the exact loss is tested.

    The nearest candidate is found without evaluating ``H`` against every candidate: with the released
    posterior ``Dir(a)`` fixed and ``sum(alpha + r)`` the same for every candidate, ``log BC(Dir(a), Dir(alpha + r))``
    is, up to a constant, ``sum_i [lgamma((a_i + alpha_i + r_i)/2) - lgamma(alpha_i + r_i)/2]``, a sum of
    one-dimensional tables. The table sum ranks every candidate at the cost of an addition; the library's
    ``H`` is then evaluated on the candidates within ``1e-9`` of the best (ties included), and the first of
    them with the smallest ``H`` is taken, as a full search would.

    ``mass_tol > 0`` projects only the most likely off-candidate releases and leaves out a set of them of
    total probability at most ``mass_tol`` (``logsumexp(log_prob) >= log(1 - mass_tol)``); a mean error
    computed from it is then exact up to ``mass_tol`` (the Hellinger distance is at most 1).

    Returns
    -------
    released : ndarray of int, shape (m, k)
        All candidates (``candidate_counts(n, k)``), the same support for every data set.
    log_prob : ndarray, shape (m,)
        Log-probabilities (``-inf`` for candidates never released).
    """
    check_choice("mechanism", mechanism, _LAPLACE_SCALED)
    mass_tol = float(mass_tol)
    if not (0.0 <= mass_tol < 1.0):
        raise ValueError(f"mass_tol must be in [0, 1), got {mass_tol!r}")
    alpha = check_prior(prior)
    c = _check_counts(counts, alpha)
    chunk = check_int("chunk", chunk, minimum=1)
    n = int(c.sum())
    released, logp = release_log_distribution(mechanism, c, eps, alpha)
    cand = candidate_counts(n, alpha.size)
    index = {tuple(int(v) for v in r): i for i, r in enumerate(cand)}
    target = np.empty(len(released), dtype=np.int64)
    on = released.sum(axis=1) == n
    target[on] = [index[tuple(int(v) for v in r)] for r in released[on]]
    off = np.flatnonzero(~on)
    keep = np.ones(len(released), dtype=bool)
    if mass_tol > 0 and off.size:
        # drop the least likely off-candidate releases while their total mass stays <= mass_tol
        order_off = off[np.argsort(logp[off], kind="stable")]
        cum = np.cumsum(np.exp(logp[order_off]))
        n_drop = int(np.searchsorted(cum, mass_tol, side="right"))
        keep[order_off[:n_drop]] = False
        off = np.sort(order_off[n_drop:])
    target[off] = _nearest_candidates(released[off], cand, alpha, chunk)
    out = np.full(len(cand), -np.inf)
    finite = np.isfinite(logp) & keep
    t_f, l_f = target[finite], logp[finite]
    # log-sum-exp per target candidate, shifted by each group's maximum (no underflow)
    np.maximum.at(out, t_f, l_f)
    sums = np.bincount(t_f, weights=np.exp(l_f - out[t_f]), minlength=len(cand))
    with np.errstate(divide="ignore"):
        out = np.where(np.isfinite(out), out + np.log(sums), -np.inf)
    return cand, out


def _nearest_candidates(points: NDArray[np.int64], cand: NDArray[np.int64], alpha: NDArray[np.float64], chunk: int) -> NDArray[np.int64]:
    """Index of the Hellinger-nearest candidate to ``Dir(alpha + p)`` for every row ``p`` (first on ties).

    Ranks all candidates by the separable form of ``log BC`` (see :func:`projected_release_log_distribution`),
    then evaluates :func:`dpbayes.core.distances.hellinger_dirichlet` on the near-best ones only.
    """
    from scipy.special import gammaln

    n = int(cand.sum(axis=1)[0]) if len(cand) else 0
    k = alpha.size
    out = np.empty(len(points), dtype=np.int64)
    r = np.arange(n + 1, dtype=float)
    half_lg_b = 0.5 * gammaln(alpha[:, None] + r[None, :])  # (k, n + 1)
    rows_per_chunk = max(1, (chunk * 256) // max(1, len(cand)))
    for start in range(0, len(points), rows_per_chunk):
        p = points[start : start + rows_per_chunk].astype(float) + alpha  # (P, k)
        score = np.zeros((len(p), len(cand)))
        for i in range(k):
            table = gammaln(0.5 * (p[:, i][:, None] + alpha[i] + r[None, :])) - half_lg_b[i][None, :]  # (P, n + 1)
            score += table[:, cand[:, i]]
        best = score.max(axis=1, keepdims=True)
        near = score >= best - 1e-9 * np.maximum(1.0, np.abs(best))
        for row in range(len(p)):
            idx = np.flatnonzero(near[row])
            if idx.size == 1:
                out[start + row] = idx[0]
            else:
                d = np.asarray(hellinger_dirichlet(p[row], alpha + cand[idx]))
                out[start + row] = idx[int(np.argmin(d))]
    return out


def binary_local_sensitivities(n: int, prior: ArrayLike) -> NDArray[np.float64]:
    """``LS(x)`` for ``x = 0..n`` ones (binary convenience wrapper)."""
    return local_sensitivity_all(n, check_prior(prior, 2))[1]


def binary_distance_matrix(n: int, prior: ArrayLike) -> NDArray[np.float64]:
    """``D[x, j] = H(Beta(a + x, b + n - x), Beta(a + j, b + n - j))`` for ``x, j = 0..n``.

    A fresh copy of a cached matrix: the chapter's tables ask for the same ``(n, prior)`` once per eps
    and per mechanism (1.4 s at ``n = 2000``; the copy about 0.01 s).
    """
    n = check_int("n", n, minimum=1, maximum=3000)
    alpha = check_prior(prior, 2)
    return _binary_distance_matrix(n, float(alpha[0]), float(alpha[1])).copy()


@functools.lru_cache(maxsize=4)  # at most 4 x 72 MB (n = 3000)
def _binary_distance_matrix(n: int, a: float, b: float) -> NDArray[np.float64]:
    post = candidate_counts(n, 2) + np.array([a, b])
    D = np.asarray(hellinger_dirichlet(post[:, None, :], post[None, :, :]))
    D.setflags(write=False)
    return D
