"""Private release of a Beta/Dirichlet posterior (chapter 2): the notes' mechanisms, their accuracy and optimum.

Source: ``laplace-optimality-notes.md`` ("notes"). This module is the chapter's entry point and
re-exports the modules that hold one concept each:

* :mod:`dpbayes.posterior_mechanisms` -- the mechanism registry (``LSDim``, ``LSHist``, ``EHD``,
  ``EHD-notes``, ``EHDL``, ``EHDS`` and the added ``LSHist-round`` and ``Geometric``): exact output
  laws, samplers, proven guarantees and exact privacy losses;
* the accuracy of a release (this module): error distributions, mean error, good-set probability,
  quantiles, releases outside ``R_alpha`` and their projection;
* the notes' statements made precise and the best eps-DP release (LP, closed form, minimax).

Every function that takes a mechanism name accepts every name of ``ALL_MECHANISMS``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse
from scipy.optimize import linprog
from scipy.special import logsumexp

from dpbayes.distances import hellinger_dirichlet
from dpbayes.geometric import truncated_geometric_logmatrix
from dpbayes.posterior_mechanisms import (
    ADDED_MECHANISMS,
    ALL_MECHANISMS,
    EXPONENTIAL_MECHANISMS,
    LAPLACE_MECHANISMS,
    MECHANISMS,
    REGISTRY,
    ReleaseMechanism,
    _LAPLACE_SCALED,
    _log_clamped_floor_pmf,
    _log_clamped_round_pmf,
    _log_laplace_interval,
    _log_truncated_geometric_pmf,
    exact_log_output_distribution,
    exact_output_distribution,
    get_mechanism,
    laplace_scale,
    privacy_loss_binary,
    privacy_loss_multi,
    proven_epsilon,
    release_log_distribution,
    sample_release,
)
from dpbayes.privacy_loss import _max_log_ratio, neighbour_pairs
from dpbayes.sensitivity import (
    NOTES_GLOBAL_SENSITIVITY,
    _check_counts,
    candidate_counts,
    check_prior,
    local_sensitivity,
    local_sensitivity_all,
)
from dpbayes.validation import check_choice, check_int, check_positive, check_probability

__all__ = [
    "ReleaseMechanism",
    "REGISTRY",
    "get_mechanism",
    "MECHANISMS",
    "ADDED_MECHANISMS",
    "ALL_MECHANISMS",
    "LAPLACE_MECHANISMS",
    "EXPONENTIAL_MECHANISMS",
    "proven_epsilon",
    "laplace_scale",
    "release_log_distribution",
    "exact_log_output_distribution",
    "exact_output_distribution",
    "privacy_loss_binary",
    "privacy_loss_multi",
    "sample_release",
    "error_distribution",
    "mean_error",
    "good_set_probability",
    "within_probability",
    "error_quantile",
    "sample_errors",
    "off_candidate_probability",
    "projected_release_log_distribution",
    "binary_distance_matrix",
    "window_half_widths",
    "theorem_2_5_rows",
    "good_set_rows",
    "laplace_window_bound",
    "notes_good_set_threshold",
    "notes_window_threshold",
    "crossover_n",
    "crossover_n_all_x",
    "theorem_2_3_rows",
    "LP_LOSSES",
    "LP_OBJECTIVES",
    "ReleaseLP",
    "binary_loss_matrix",
    "uniform_data_prior",
    "beta_binomial_data_prior",
    "optimal_release_lp",
    "optimal_release_bayes_exact",
    "release_risks",
    "is_monotone_loss",
    "NOTES_STATEMENTS",
    "notes_statement_checks",
    "MinimaxRelease",
    "optimal_release_minimax",
    "composition_neighbours",
    "optimal_release_lp_multi",
    "geometric_multi_release_log_distribution",
]

# the private helpers tests and notebooks reach through this module
_RE_EXPORTED_PRIVATE = (_log_clamped_floor_pmf, _log_clamped_round_pmf, _log_laplace_interval, _LAPLACE_SCALED)


def _check_mechanism(mechanism: str) -> str:
    return get_mechanism(mechanism).name


def _check_geometric_binary(mechanism: str, k: int) -> None:
    REGISTRY[mechanism].check_categories(k)


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
    distance, ``argmin_r H(Dir(alpha + c~), r)`` (the first in :func:`dpbayes.sensitivity.candidate_counts`
    order on ties); releases in ``R_alpha`` are kept. Privacy: post-processing of the mechanism, so the same
    guarantee (:func:`proven_epsilon`); the exact loss is tested.

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
    then evaluates :func:`dpbayes.distances.hellinger_dirichlet` on the near-best ones only.
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


# -- the notes' statements, made precise (binary case) -----------------------------------------------
def binary_distance_matrix(n: int, prior: ArrayLike) -> NDArray[np.float64]:
    """``D[x, j] = H(Beta(a + x, b + n - x), Beta(a + j, b + n - j))`` for ``x, j = 0..n``."""
    n = check_int("n", n, minimum=1, maximum=3000)
    post = candidate_counts(n, 2) + check_prior(prior, 2)
    return np.asarray(hellinger_dirichlet(post[:, None, :], post[None, :, :]))


def window_half_widths(distances: NDArray[np.float64], x: int, t: float) -> tuple[int, int]:
    """Two readings of the ``k`` of notes Thm 2.5 for data set ``x`` and threshold ``t``.

    Returns
    -------
    k_symmetric : int
        Largest ``k`` with ``H(DirP(x), DirP(x + k')) < t`` for every ``|k'| <= k`` whose candidate
        exists (``0 <= x + k' <= n``): the reading under which the Laplace bound is proved.
    k_one_sided : int
        Largest ``|k'|`` with ``H(DirP(x), DirP(x + k')) < t`` (the literal wording "``k = |k'|`` the
        largest integer satisfying ...").
    """
    n = distances.size - 1
    inside = distances < t
    k_sym = 0
    while k_sym < n:
        nxt = k_sym + 1
        lo_ok = x - nxt < 0 or inside[x - nxt]
        hi_ok = x + nxt > n or inside[x + nxt]
        if not (lo_ok and hi_ok) or (x - nxt < 0 and x + nxt > n):
            break
        k_sym = nxt
    idx = np.flatnonzero(inside)
    k_one = int(np.max(np.abs(idx - x))) if idx.size else 0
    return k_sym, k_one


def theorem_2_5_rows(n: int, eps: float, prior: ArrayLike, t_factor: float | list[float]) -> Any:
    """Every quantity of notes Thm 2.5 for all data sets ``x = 0..n`` with ``t = t_factor * LS(x)``.

    Keys: ``x``, ``t``, ``k_sym``, ``k_one``, the exact probabilities ``P[H < t]`` of ``LSHist``,
    ``EHD`` (computed GS), ``EHD-notes`` (GS = sqrt(1 - pi/4), as in the proof) and ``EHDL``, and the
    notes' bounds: ``lap_lower = 1 - exp(-k eps)``, ``ehd_lower = (2k e^-eps + 1)/n``,
    ``ehd_upper = (2k + 1)/(n e^-eps)``, ``ehdl_lower = (2k exp(-eps/(2 LS)) + 1)/n``,
    ``ehdl_upper = (2k + 1)/(n exp(-eps/(2 LS)))`` (all with the symmetric ``k``).
    """
    eps = check_positive("eps", eps)
    factors = np.atleast_1d(check_positive("t_factor", t_factor))
    alpha = check_prior(prior, 2)
    dist = binary_distance_matrix(n, alpha)
    _, ls = local_sensitivity_all(n, alpha)
    mats = {mech: np.exp(exact_log_output_distribution(mech, n, eps, alpha)) for mech in ("LSHist", "EHD", "EHD-notes", "EHDL")}
    results = [_theorem_2_5_one(n, eps, dist, ls, mats, float(f)) for f in factors]
    return results if np.ndim(t_factor) else results[0]


def _theorem_2_5_one(
    n: int, eps: float, dist: NDArray[np.float64], ls: NDArray[np.float64], mats: dict[str, NDArray[np.float64]], t_factor: float
) -> dict[str, NDArray[np.float64]]:
    t = np.minimum(t_factor * ls, 1.0)
    inside = dist < t[:, None]
    out: dict[str, NDArray[np.float64]] = {"x": np.arange(n + 1, dtype=float), "t": t, "ls": np.asarray(ls)}
    ks = np.array([window_half_widths(dist[x], x, t[x]) for x in range(n + 1)], dtype=float)
    out["k_sym"], out["k_one"] = ks[:, 0], ks[:, 1]
    for mech, P in mats.items():
        out["p_" + mech] = np.where(inside, P, 0.0).sum(axis=1)
    k = out["k_sym"]
    out["lap_lower"] = 1.0 - np.exp(-k * eps)
    out["lap_lower_one_sided"] = 1.0 - np.exp(-out["k_one"] * eps)
    out["ehd_lower"] = (2 * k * math.exp(-eps) + 1) / n
    out["ehd_upper"] = (2 * k + 1) / (n * math.exp(-eps))
    out["ehdl_lower"] = (2 * k * np.exp(-eps / (2 * ls)) + 1) / n
    out["ehdl_upper"] = (2 * k + 1) / (n * np.exp(-eps / (2 * ls)))
    return out


def good_set_rows(n: int, eps: float, prior: ArrayLike, mechanisms: tuple[str, ...] = MECHANISMS) -> dict[str, NDArray[np.float64]]:
    """``P[M(x) in R_g]`` (notes Cor 2.5.2), ``|R_g|`` and the ``(1 - e^-eps)``-quantile error for all ``x``.

    ``R_g = {r : H(DirP(x), r) <= LS(x)}``. Keys: ``x``, ``ls``, ``size_good`` (number of candidates in
    ``R_g``), ``good_<mech>``, ``elap`` (``LSHist`` error quantile at ``gamma = e^-eps``, notes Thm 2.2)
    and ``lt_ls_LSHist`` (``P[H < LS(x)]``, the strict inequality the notes write).
    """
    eps = check_positive("eps", eps)
    alpha = check_prior(prior, 2)
    dist = binary_distance_matrix(n, alpha)
    _, ls = local_sensitivity_all(n, alpha)
    good = dist <= (ls * (1 + _GOOD_SET_RTOL))[:, None]
    out: dict[str, NDArray[np.float64]] = {"x": np.arange(n + 1, dtype=float), "ls": ls, "size_good": good.sum(axis=1).astype(float)}
    for mech in mechanisms:
        P = np.exp(exact_log_output_distribution(mech, n, eps, alpha))
        out["good_" + mech] = np.where(good, P, 0.0).sum(axis=1)
        if mech == "LSHist":
            out["lt_ls_LSHist"] = np.where(dist < ls[:, None], P, 0.0).sum(axis=1)
            order = np.argsort(dist, axis=1, kind="stable")
            cum = np.cumsum(np.take_along_axis(P, order, axis=1), axis=1)
            first = np.argmax(cum >= (1 - math.exp(-eps)) * (1 - 1e-12), axis=1)
            out["elap"] = np.take_along_axis(np.take_along_axis(dist, order, axis=1), first[:, None], axis=1)[:, 0]
    return out


def laplace_window_bound(distances: NDArray[np.float64], x: int, K: int) -> float:
    """``M_K(x) = max_{|k| <= K} H(DirP(x), DirP(x + k))`` over existing candidates (notes Thm 2.3 numerator)."""
    n = distances.size - 1
    lo, hi = max(0, x - K), min(n, x + K)
    return float(distances[lo : hi + 1].max())


def notes_good_set_threshold(eps: float) -> float:
    """Sample size beyond which notes Cor 2.5.2 claims LSHist beats EHD: ``3 e^(eps/c) / (1 - e^-eps)``, ``c = 2 sqrt(1 - pi/4)``."""
    eps = check_positive("eps", eps)
    return 3.0 * math.exp(eps / (2 * NOTES_GLOBAL_SENSITIVITY)) / (1.0 - math.exp(-eps))


def notes_window_threshold(eps: float, k: int) -> float:
    """Sample size of notes Cor 2.5.1: ``(2k + 1) / (e^-eps (1 - e^-k eps))`` (``inf`` for ``k = 0``)."""
    eps = check_positive("eps", eps)
    k = check_int("k", k, minimum=0)
    if k == 0:
        return math.inf
    return (2 * k + 1) / (math.exp(-eps) * (1.0 - math.exp(-k * eps)))


def crossover_n(
    eps: float, prior: ArrayLike, theta: float, n_max: int, mechanism_a: str = "LSHist", mechanism_b: str = "EHD-notes"
) -> tuple[int, NDArray[np.float64], NDArray[np.float64]]:
    """Smallest ``n0`` with ``P[A(x) in R_g] > P[B(x) in R_g]`` for every ``n0 <= n <= n_max`` (``x = round(theta n)``).

    Returns ``n0`` (``n_max + 1`` if A never stays ahead) and the two probability curves for ``n = 1..n_max``.
    """
    theta = check_probability("theta", theta)
    n_max = check_int("n_max", n_max, minimum=1, maximum=100_000)
    pa = np.empty(n_max)
    pb = np.empty(n_max)
    for n in range(1, n_max + 1):
        x = int(round(theta * n))
        counts = (x, n - x)
        pa[n - 1] = good_set_probability(mechanism_a, counts, eps, prior)
        pb[n - 1] = good_set_probability(mechanism_b, counts, eps, prior)
    behind = np.flatnonzero(~(pa > pb))
    n0 = int(behind[-1]) + 2 if behind.size else 1
    return n0, pa, pb


def theorem_2_3_rows(n: int, eps: float, prior: ArrayLike, gamma: float) -> dict[str, NDArray[np.float64]]:
    """Quantities of notes Thm 2.3 made precise, for all binary data sets ``x = 0..n``.

    With ``K = ceil(ln(1/gamma)/eps)``, ``LSHist``'s floored noise lies in ``[-K, K]`` with probability
    ``1 - e^(-K eps)/2 - e^(-(K+1) eps)/2 >= 1 - gamma``, so the ``(1 - gamma)``-quantile error
    ``t_gamma(x)`` is at most ``M_K(x) = max_{|k| <= K} H(DirP(x), DirP(x + k))``. Returns ``t``
    (= ``t_gamma``), ``M`` (= ``M_K``), ``ls`` and ``K`` so that ``t <= M`` and ``M <= C K LS`` can be checked.
    """
    gamma = check_probability("gamma", gamma, open_interval=True)
    eps = check_positive("eps", eps)
    alpha = check_prior(prior, 2)
    K = max(1, math.ceil(math.log(1.0 / gamma) / eps))
    dist = binary_distance_matrix(n, alpha)
    _, ls = local_sensitivity_all(n, alpha)
    P = np.exp(exact_log_output_distribution("LSHist", n, eps, alpha))
    order = np.argsort(dist, axis=1, kind="stable")
    cum = np.cumsum(np.take_along_axis(P, order, axis=1), axis=1)
    first = np.argmax(cum >= (1 - gamma) * (1 - 1e-12), axis=1)
    t = np.take_along_axis(np.take_along_axis(dist, order, axis=1), first[:, None], axis=1)[:, 0]
    M = np.array([laplace_window_bound(dist[x], x, K) for x in range(n + 1)])
    return {"x": np.arange(n + 1, dtype=float), "t": t, "M": M, "ls": ls, "K": np.full(n + 1, float(K))}


def crossover_n_all_x(eps: float, prior: ArrayLike, n_max: int, mechanism_b: str = "EHD-notes") -> tuple[int, NDArray[np.float64]]:
    """Smallest ``n0`` such that ``P[LSHist(x) in R_g] > P[B(x) in R_g]`` for **every** data set of every
    size ``n0 <= n <= n_max``. Also returns ``min_x (P_LSHist - P_B)`` for ``n = 1..n_max``."""
    n_max = check_int("n_max", n_max, minimum=1, maximum=3000)
    margin = np.empty(n_max)
    for n in range(1, n_max + 1):
        g = good_set_rows(n, eps, prior, ("LSHist", mechanism_b))
        margin[n - 1] = float(np.min(g["good_LSHist"] - g["good_" + mechanism_b]))
    behind = np.flatnonzero(~(margin > 0))
    return (int(behind[-1]) + 2 if behind.size else 1), margin


# -- the best eps-DP release over the candidate set: a linear program (binary case) ------------------
# Not in the notes: it answers their title question. Module docstring of this section:
# The best eps-DP release of a Beta posterior from the candidate set: a finite linear program.
#
# Source: the question of ``laplace-optimality-notes.md`` ("notes", title and Thm 2.1-2.3): is the Laplace
# mechanism (LSHist) optimal for releasing a Beta posterior? For two categories and a public size ``n`` the
# inputs are the ``n + 1`` data sets (``x`` ones), the outputs the ``n + 1`` candidates
# ``Beta(a + j, b + n - j)`` of ``R_alpha``, and a mechanism is a row-stochastic matrix ``P[x, j]``. It is
# eps-DP for replace-one neighbours exactly when ``P[x, j] <= e^eps P[x +- 1, j]`` for all ``x, j``. Every
# accuracy criterion below is linear in ``P``, so the best mechanism is a linear program:
#
# * ``objective="bayes"``: minimise ``sum_x pi(x) sum_j P[x, j] L[x, j]`` (prior ``pi`` over data sets);
# * ``objective="minimax"``: minimise ``max_x sum_j P[x, j] L[x, j]``.
#
# With ``L = H`` (Hellinger distance between the true and the released posterior) these are the mean error
# under a prior and the worst case over data sets; with ``L = 1[H > LS(x)]`` they are one minus the good-set
# probability ``P[H <= LS(x)]`` (notes Cor 2.5.2).
#
# Solved with SciPy's HiGHS (``scipy.optimize.linprog``). The optimum has entries as small as
# ``e^(-eps n)`` that no solver resolves; the answer is therefore **certified**: clipped, mixed with the
# uniform (data-independent) mechanism with the smallest weight that makes every DP inequality hold in log
# space, and its exact privacy loss is recomputed. The certified value is that of the repaired matrix (an
# upper bound on the optimum); the solver's value is a lower bound up to the solver tolerance.
#
# For the Bayes objective the LP has a closed-form solution (Ghosh, Roughgarden & Sundararajan 2009): the
# truncated geometric mechanism followed by the remap ``z -> argmin_j E[L(x, j) | z]``, optimal for every
# prior when ``L[x, j]`` is non-decreasing in ``|j - x|`` for every ``x``. It is computed by chapter 1's
# :func:`dpbayes.ubapp.private_bayes_exact_count` (here with an identity likelihood), at any ``n`` where an
# ``(n + 1) x (n + 1)`` matrix fits, and checked against the LP where both are computed.
LP_LOSSES = ("hellinger", "good_set")
LP_OBJECTIVES = ("bayes", "minimax")
#: Log-space tolerance of the DP certificate.
LP_DP_LOG_TOL = 1e-9
#: Largest mixture weight the certificate may add before the answer is rejected.
LP_MAX_REPAIR_WEIGHT = 1e-5


@dataclass
class ReleaseLP:
    """Solution of :func:`optimal_release_lp` (or :func:`optimal_release_bayes_exact`).

    Attributes
    ----------
    P : ndarray, shape (n + 1, n + 1)
        ``P[x, j]``: probability of releasing candidate ``j`` on data set ``x`` (certified eps-DP).
    value : float
        Objective of the certified ``P`` (Bayes risk or worst-case risk; for the good-set loss, one
        minus the good-set probability).
    solver_value : float
        Objective reported by the solver before the repair (``nan`` for the closed form).
    privacy_loss : float
        Exact ``max |log P[x, j] - log P[x + 1, j]|`` of the certified ``P`` (``<= eps``).
    repair_weight : float
        Weight of the uniform mechanism mixed in by the certificate.
    per_x : ndarray, shape (n + 1,)
        ``sum_j P[x, j] L[x, j]`` for every data set.
    """

    P: NDArray[np.float64]
    value: float
    solver_value: float
    privacy_loss: float
    repair_weight: float
    per_x: NDArray[np.float64]
    info: dict[str, Any] = field(default_factory=dict)


def binary_loss_matrix(n: int, prior: ArrayLike, loss: str = "hellinger") -> NDArray[np.float64]:
    """``L[x, j]``: the loss of releasing candidate ``j`` on data set ``x`` (two categories).

    ``"hellinger"``: ``H(Beta(a + x, b + n - x), Beta(a + j, b + n - j))``. ``"good_set"``: ``1`` when the
    release is outside the good set ``R_g(x) = {r : H(DirP(x), r) <= LS(x)}`` (notes Cor 2.5.2), else 0.
    """
    loss = check_choice("loss", loss, LP_LOSSES)
    alpha = check_prior(prior, 2)
    D = binary_distance_matrix(n, alpha)
    if loss == "hellinger":
        return D
    _, ls = local_sensitivity_all(n, alpha)
    return (D > (ls * (1 + _GOOD_SET_RTOL))[:, None]).astype(float)


def uniform_data_prior(n: int) -> NDArray[np.float64]:
    """Uniform prior over the ``n + 1`` data sets (the Beta(1, 1)-binomial marginal of ``x``)."""
    n = check_int("n", n, minimum=1)
    return np.full(n + 1, 1.0 / (n + 1))


def beta_binomial_data_prior(n: int, prior: ArrayLike) -> NDArray[np.float64]:
    """Marginal law of ``x`` when ``theta ~ Beta(a, b)`` and ``x | theta ~ Bin(n, theta)``."""
    from scipy.stats import betabinom

    n = check_int("n", n, minimum=1)
    a, b = check_prior(prior, 2)
    return np.asarray(betabinom(n, a, b).pmf(np.arange(n + 1)), dtype=float)


def _check_data_prior(pi: ArrayLike | None, n: int) -> NDArray[np.float64]:
    if pi is None:
        return uniform_data_prior(n)
    p = np.asarray(pi, dtype=float)
    if p.shape != (n + 1,) or np.any(~np.isfinite(p)) or np.any(p < 0) or not math.isclose(float(p.sum()), 1.0, rel_tol=0, abs_tol=1e-9):
        raise ValueError(f"data_prior must be {n + 1} non-negative probabilities summing to 1")
    return p


def release_risks(P: ArrayLike, L: ArrayLike) -> NDArray[np.float64]:
    """``sum_j P[x, j] L[x, j]`` for every data set ``x``."""
    return np.einsum("xj,xj->x", np.asarray(P, dtype=float), np.asarray(L, dtype=float))


def is_monotone_loss(L: ArrayLike) -> bool:
    """True when ``L[x, j]`` is non-decreasing in ``|j - x|`` on both sides of ``x`` for every ``x``
    (the condition of the geometric mechanism's universal optimality)."""
    L = np.asarray(L, dtype=float)
    for x in range(L.shape[0]):
        right, left = L[x, x:], L[x, : x + 1][::-1]
        if np.any(np.diff(right) < -1e-15) or np.any(np.diff(left) < -1e-15):
            return False
    return True


def _binary_log_loss(P: NDArray[np.float64]) -> float:
    """Exact privacy loss of ``P[x, j]`` for neighbours ``x ~ x + 1`` (:mod:`dpbayes.privacy_loss`)."""
    if P.shape[0] < 2 or P.shape[1] == 0:
        return 0.0
    with np.errstate(divide="ignore"):
        logP = np.log(P)
    return max(_max_log_ratio(logP, neighbour_pairs(P.shape[0], "adjacent")), 0.0)


def _certify_release(P: NDArray[np.float64], eps: float) -> tuple[NDArray[np.float64], float, float]:
    """Mix ``P`` with the uniform mechanism so that every DP inequality holds; return it, the weight, the loss.

    Violation of ``P[x, j] <= e^eps P[x', j]`` by ``d`` is removed by weight ``lam`` when
    ``lam u (e^eps - 1) >= (1 - lam) d`` with ``u = 1/(n + 1)``; a margin of a factor 2 keeps the repaired
    inequalities strictly inside in floating point.
    """
    P = np.clip(P, 0.0, None)
    P /= P.sum(axis=1, keepdims=True)
    m = P.shape[1]
    ee = math.exp(eps)
    a, b = P[:-1], P[1:]
    d = float(max(np.max(a - ee * b, initial=0.0), np.max(b - ee * a, initial=0.0)))
    lam = 0.0
    if d > 0 or _binary_log_loss(P) > eps + LP_DP_LOG_TOL:
        u = 1.0 / m
        lam = min(1.0, 2.0 * max(d, 1e-300) / (u * (ee - 1.0) + 2.0 * max(d, 1e-300)))
        lam = max(lam, 1e-15)
        P = (1.0 - lam) * P + lam * u
        # ensure the log-space check passes (round-off in tiny entries); grow lam if needed
        while _binary_log_loss(P) > eps + LP_DP_LOG_TOL and lam < LP_MAX_REPAIR_WEIGHT:
            lam2 = min(1.0, lam * 10)
            P = (P - lam * u) / (1.0 - lam) * (1.0 - lam2) + lam2 * u
            lam = lam2
    loss = _binary_log_loss(P)
    if loss > eps + LP_DP_LOG_TOL or lam > LP_MAX_REPAIR_WEIGHT:
        raise RuntimeError(
            f"LP answer cannot be certified eps-DP: after mixing weight {lam:.3g} (limit {LP_MAX_REPAIR_WEIGHT:g}) "
            f"the loss is {loss:.6g} against eps = {eps:.6g}"
        )
    return P, lam, loss


def optimal_release_lp(
    n: int,
    eps: float,
    prior: ArrayLike = (1.0, 1.0),
    *,
    loss: str = "hellinger",
    objective: str = "bayes",
    data_prior: ArrayLike | None = None,
) -> ReleaseLP:
    """The best eps-DP mechanism releasing a candidate of ``R_alpha`` (two categories, ``n`` public).

    Parameters
    ----------
    n : int
        Public data-set size (``1 <= n <= 200``; the LP has ``(n + 1)^2`` variables).
    eps : float
        Privacy parameter (``> 0``); replace-one neighbours ``x ~ x + 1``.
    prior : (a, b)
        Beta prior of the posterior.
    loss : {"hellinger", "good_set"}
        See :func:`binary_loss_matrix`.
    objective : {"bayes", "minimax"}
        Prior-weighted mean over data sets, or worst case over data sets.
    data_prior : array_like, shape (n + 1,), optional
        Weights of the data sets for ``"bayes"`` (default uniform, :func:`uniform_data_prior`).

    Returns
    -------
    ReleaseLP
        The certified optimum (privacy loss ``<= eps`` recomputed exactly).
    """
    n = check_int("n", n, minimum=1, maximum=200)
    eps = check_positive("eps", eps)
    objective = check_choice("objective", objective, LP_OBJECTIVES)
    L = binary_loss_matrix(n, prior, loss)
    pi = _check_data_prior(data_prior, n)
    m = n + 1
    nv = m * m
    idx = np.arange(nv).reshape(m, m)
    ee = math.exp(eps)
    # DP rows: P[x, j] - e^eps P[x', j] <= 0 for x' = x +- 1
    a_idx = np.concatenate([idx[:-1].ravel(), idx[1:].ravel()])
    b_idx = np.concatenate([idx[1:].ravel(), idx[:-1].ravel()])
    r = np.arange(a_idx.size)
    rows = [r, r]
    cols = [a_idx, b_idx]
    vals = [np.ones(a_idx.size), np.full(a_idx.size, -ee)]
    n_dp = a_idx.size
    extra = 1 if objective == "minimax" else 0
    A_eq = sparse.csr_matrix((np.ones(nv), (np.repeat(np.arange(m), m), idx.ravel())), shape=(m, nv + extra))
    if objective == "bayes":
        c = (pi[:, None] * L).ravel()
        A_ub = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_dp, nv))
        b_ub = np.zeros(n_dp)
    else:
        # risk rows: sum_j P[x, j] L[x, j] - t <= 0
        rr = n_dp + np.repeat(np.arange(m), m)
        rows += [rr, n_dp + np.arange(m)]
        cols += [idx.ravel(), np.full(m, nv)]
        vals += [L.ravel(), -np.ones(m)]
        A_ub = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_dp + m, nv + 1))
        b_ub = np.zeros(n_dp + m)
        c = np.zeros(nv + 1)
        c[-1] = 1.0
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=np.ones(m), bounds=(0, None), method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on the release LP (n = {n}, eps = {eps:g}): {res.message}")
    P0 = np.asarray(res.x[:nv], dtype=float).reshape(m, m)
    P, lam, ploss = _certify_release(P0, eps)
    per_x = release_risks(P, L)
    value = float(pi @ per_x) if objective == "bayes" else float(per_x.max())
    return ReleaseLP(P=P, value=value, solver_value=float(res.fun), privacy_loss=ploss, repair_weight=lam, per_x=per_x,
                     info={"loss": loss, "objective": objective, "n": n, "eps": eps})


def optimal_release_bayes_exact(
    n: int, eps: float, prior: ArrayLike = (1.0, 1.0), *, loss: str = "hellinger", data_prior: ArrayLike | None = None
) -> ReleaseLP:
    """Bayes-optimal eps-DP release without an LP: truncated geometric mechanism + remap (any ``n <= 3000``).

    Calls chapter 1's :func:`dpbayes.ubapp.private_bayes_exact_count` with the data set as the observation
    (identity likelihood), the candidates as estimates and ``L`` as the loss. Optimal among all eps-DP
    mechanisms when ``L[x, j]`` is non-decreasing in ``|j - x|`` (Ghosh, Roughgarden & Sundararajan 2009;
    checked by :func:`is_monotone_loss`, recorded in ``info["monotone_loss"]``, and against the LP in the
    tests). Privacy: post-processing of the geometric mechanism; the exact loss is recomputed.
    """
    from dpbayes.ubapp import private_bayes_exact_count

    n = check_int("n", n, minimum=1, maximum=3000)
    eps = check_positive("eps", eps)
    L = binary_loss_matrix(n, prior, loss)
    pi = _check_data_prior(data_prior, n)
    sol = private_bayes_exact_count(L, np.eye(n + 1), pi, eps)
    P = np.asarray(sol.P, dtype=float).T  # ubapp: P[estimate, observation]
    per_x = release_risks(P, L)
    return ReleaseLP(P=P, value=float(pi @ per_x), solver_value=float("nan"), privacy_loss=_binary_log_loss(P), repair_weight=0.0,
                     per_x=per_x, info={"loss": loss, "objective": "bayes", "n": n, "eps": eps,
                                        "monotone_loss": is_monotone_loss(L), "remap": np.asarray(sol.info["remap"])})


# -- every statement of notes §2 as exact margins, for any number of categories ----------------------
#: Keys of :func:`notes_statement_checks`, in the order of the notes (and of chapter 2's 02c summary).
NOTES_STATEMENTS = (
    "cor252_lshist_good",
    "thm22_strict",
    "thm22_elap",
    "cor252_rg_size",
    "cor252_ehd_bound",
    "cor252_ehd_bound_gs",
    "thm23_t_le_mk",
    "thm23_c1",
    "thm25_lshist_sym",
    "thm25_lshist_one",
    "thm25_ehdnotes_lower",
    "thm25_ehdnotes_upper_sym",
    "thm25_ehdnotes_upper_one",
    "thm25_ehd_upper_one",
    "thm25_ehdl_lower",
    "thm25_ehdl_upper",
    "cor251",
)
#: Statements written with a strict inequality (checked as ``margin > 0``; the others ``margin >= -1e-12``).
_STRICT_STATEMENTS = frozenset(
    {"thm25_ehdnotes_lower", "thm25_ehdnotes_upper_sym", "thm25_ehdnotes_upper_one", "thm25_ehd_upper_one",
     "thm25_ehdl_lower", "thm25_ehdl_upper", "cor251"}
)


def notes_statement_checks(
    n: int, eps: float, prior: ArrayLike, t_factors: ArrayLike = (0.5, 1.0, 2.0, 4.0), gammas: ArrayLike = (0.3, 0.05, 0.01)
) -> dict[str, dict[str, NDArray[Any]]]:
    """Every statement of notes §2 (Thm 2.2-2.5, Cor 2.5.1-2.5.2) as an exact margin, on every data set of size ``n``.

    Works for any number of categories ``k = len(prior)``. For ``k = 2`` it is the reading of
    :func:`theorem_2_5_rows`, :func:`good_set_rows` and :func:`theorem_2_3_rows` (same laws, same
    distances). For ``k >= 3`` the notes' one-dimensional notions are read on the replace-one graph:
    the "``k`` steps" between data sets are ``|c - c'|_1 / 2`` records, ``k_sym`` is the largest radius
    whose whole ball of candidates lies in ``{H < t}``, ``k_one`` the largest radius of a candidate in
    ``{H < t}``, and ``M_K`` the largest distance within ``K`` records. The formulas (``n`` candidates,
    ``2k + 1`` window) are the notes' as written. LSHist's release (``Lap(2/eps)``, clamped last
    coordinate for ``k >= 3``) may be off the candidate set; its error is measured as it is.

    Returns
    -------
    dict
        ``{statement: {"ok": bool array, "margin": float array}}`` over data sets (times ``t_factors``
        or ``gammas`` where the statement has them), keys :data:`NOTES_STATEMENTS`; plus
        ``"_info"`` with ``C`` (``M_K / (K LS)`` per data set and gamma), ``size_good``, ``elap_ls``.
        A margin is ``right - left`` of the inequality as the notes orient it (negative = violated).
    """
    eps = check_positive("eps", eps)
    alpha = check_prior(prior)
    k = alpha.size
    n = check_int("n", n, minimum=2, maximum=3000 if k == 2 else 40)
    tf = np.atleast_1d(np.asarray(t_factors, dtype=float))
    gam = np.atleast_1d(np.asarray(gammas, dtype=float))
    for g in gam:
        check_probability("gammas", float(g), open_interval=True)
    for f in tf:
        check_positive("t_factors", float(f))
    cand, ls = local_sensitivity_all(n, alpha)
    post = cand + alpha
    D = np.asarray(hellinger_dirichlet(post[:, None, :], post[None, :, :]))
    S = np.abs(cand[:, None, :] - cand[None, :, :]).sum(axis=2) // 2
    N = len(cand)
    # laws of the exponential mechanisms on the candidates (as exact_log_output_distribution)
    fac = {"EHD": np.full(N, eps / (2.0 * ls.max())), "EHD-notes": np.full(N, eps / (2.0 * NOTES_GLOBAL_SENSITIVITY)),
           "EHDL": eps / (2.0 * ls)}
    if k == 2:
        law = {m: np.exp(exact_log_output_distribution(m, n, eps, alpha)) for m in fac}
        lap_err = [D[i] for i in range(N)]
        lap_p = list(np.exp(exact_log_output_distribution("LSHist", n, eps, alpha)))
    else:
        law = {}
        for m, f in fac.items():
            score = -D * f[:, None]
            law[m] = np.exp(score - logsumexp(score, axis=1, keepdims=True))
        lap_err, lap_p = [], []
        for i in range(N):
            rel, lp = release_log_distribution("LSHist", cand[i], eps, alpha)
            lap_err.append(np.asarray(hellinger_dirichlet(post[i], alpha + rel)))
            lap_p.append(np.exp(lp))
    out: dict[str, dict[str, NDArray[Any]]] = {}  # "ok": booleans, "margin": floats

    def put(key: str, margin: ArrayLike) -> None:
        m = np.asarray(margin, dtype=float).ravel()
        ok = m > 0 if key in _STRICT_STATEMENTS else m >= -1e-12
        prev = out.get(key)
        if prev is not None:
            m, ok = np.concatenate([prev["margin"], m]), np.concatenate([prev["ok"], ok])
        out[key] = {"ok": ok, "margin": m}

    def quantile(i: int, level: float) -> float:
        order = np.argsort(lap_err[i], kind="stable")
        cum = np.cumsum(lap_p[i][order])
        j = int(np.searchsorted(cum, level * (1 - 1e-12), side="left"))
        return float(lap_err[i][order][min(j, order.size - 1)])

    # Thm 2.2 / Cor 2.5.2
    lb = 1 - 0.5 * (math.exp(-eps) + math.exp(-2 * eps))
    good = D <= (ls * (1 + _GOOD_SET_RTOL))[:, None]
    p_good = np.array([lap_p[i][lap_err[i] <= ls[i] * (1 + _GOOD_SET_RTOL)].sum() for i in range(N)])
    p_lt = np.array([lap_p[i][lap_err[i] < ls[i]].sum() for i in range(N)])
    elap = np.array([quantile(i, 1 - math.exp(-eps)) for i in range(N)])
    put("cor252_lshist_good", p_good - lb)
    put("thm22_strict", p_lt - lb)
    put("thm22_elap", ls - elap)
    size_good = good.sum(axis=1)
    put("cor252_rg_size", 3 - size_good)
    bound3 = 3 / (n * math.exp(-eps))
    put("cor252_ehd_bound", bound3 - np.where(good, law["EHD-notes"], 0).sum(axis=1))
    put("cor252_ehd_bound_gs", bound3 - np.where(good, law["EHD"], 0).sum(axis=1))
    # Thm 2.3
    C = []
    for g in gam:
        K = max(1, math.ceil(math.log(1.0 / g) / eps))
        M = np.where(S <= K, D, 0.0).max(axis=1)
        t = np.array([quantile(i, 1 - g) for i in range(N)])
        put("thm23_t_le_mk", M * (1 + 1e-12) - t)
        c = M / (K * ls)
        C.append(c)
        put("thm23_c1", 1 + 1e-12 - c)
    # Thm 2.5, Cor 2.5.1
    maxS = S.max(axis=1)
    for f in tf:
        t = np.minimum(f * ls, 1.0)
        inside = D < t[:, None]
        k_sym = np.minimum(np.where(~inside, S, maxS[:, None] + 1).min(axis=1) - 1, maxS).astype(float)
        k_one = np.where(inside, S, 0).max(axis=1).astype(float)
        p = {m: np.where(inside, P, 0.0).sum(axis=1) for m, P in law.items()}
        p_lap = np.array([lap_p[i][lap_err[i] < t[i]].sum() for i in range(N)])
        put("thm25_lshist_sym", p_lap - (1 - np.exp(-k_sym * eps)))
        put("thm25_lshist_one", p_lap - (1 - np.exp(-k_one * eps)))
        put("thm25_ehdnotes_lower", p["EHD-notes"] - (2 * k_sym * math.exp(-eps) + 1) / n)
        put("thm25_ehdnotes_upper_sym", (2 * k_sym + 1) / (n * math.exp(-eps)) - p["EHD-notes"])
        up_one = (2 * k_one + 1) / (n * math.exp(-eps))
        put("thm25_ehdnotes_upper_one", up_one - p["EHD-notes"])
        put("thm25_ehd_upper_one", up_one - p["EHD"])
        put("thm25_ehdl_lower", p["EHDL"] - (2 * k_sym * np.exp(-eps / (2 * ls)) + 1) / n)
        put("thm25_ehdl_upper", (2 * k_sym + 1) / (n * np.exp(-eps / (2 * ls))) - p["EHDL"])
        thr = np.array([notes_window_threshold(eps, int(kk)) for kk in k_sym])
        above = n > thr
        put("cor251", (p_lap - p["EHD-notes"])[above])
    out["_info"] = {"C": np.concatenate(C), "size_good": size_good.astype(float), "elap_ls": elap / ls,
                    "n_data_sets": np.array([float(N)])}
    return out


# -- the worst-case (minimax) optimum at large n: column generation with an exact certificate --------
@dataclass
class MinimaxRelease:
    """Solution of :func:`optimal_release_minimax`.

    Attributes
    ----------
    value : float
        Worst-case risk ``max_x sum_j P[x, j] L[x, j]`` of the returned mechanism (an upper bound on the
        optimum, attained by an eps-DP mechanism).
    lower_bound : float
        Certified lower bound on the optimum: the Bayes-optimal risk for the weights ``weights``.
    weights : ndarray, shape (n + 1,)
        Least-favourable weights over data sets found (the LP's dual variables).
    P : ndarray, shape (n + 1, n + 1)
        The mechanism (a mixture of remapped truncated geometric mechanisms).
    log_P : ndarray, shape (n + 1, n + 1)
        ``log P`` computed in log space (no underflow).
    privacy_loss : float
        Exact ``max |log P[x, j] - log P[x + 1, j]|`` (``<= eps``).
    per_x : ndarray, shape (n + 1,)
        Risk at every data set.
    iterations : int
        Column-generation rounds.
    """

    value: float
    lower_bound: float
    weights: NDArray[np.float64]
    P: NDArray[np.float64]
    log_P: NDArray[np.float64]
    privacy_loss: float
    per_x: NDArray[np.float64]
    iterations: int
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def gap(self) -> float:
        """Relative certified gap ``(value - lower_bound) / value``."""
        return (self.value - self.lower_bound) / self.value if self.value > 0 else 0.0


def _geometric_best_response(G: NDArray[np.float64], L: NDArray[np.float64], w: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Bayes-optimal remap of the geometric output for data-set weights ``w`` and its risk at every ``x``."""
    E = G @ (w[:, None] * L)  # E[z, j] = sum_x G[z, x] w_x L[x, j]
    choice = np.argmin(E, axis=1)
    risk = np.einsum("zx,xz->x", G, L[:, choice])
    return choice, risk


def optimal_release_minimax(
    n: int,
    eps: float,
    prior: ArrayLike = (1.0, 1.0),
    *,
    loss: str = "hellinger",
    rtol: float = 1e-6,
    max_iter: int = 2000,
    smoothing: float = 0.7,
) -> MinimaxRelease:
    """The eps-DP release with the smallest worst-case risk over data sets (binary, ``n`` public), any ``n <= 3000``.

    Criterion (b) of chapter 2: ``min_P max_x sum_j P[x, j] L[x, j]`` over eps-DP mechanisms ``P``
    (replace-one neighbours ``x ~ x + 1``). :func:`optimal_release_lp` solves it as one LP with
    ``(n + 1)^2`` unknowns; here it is solved by **column generation** on its saddle-point form
    ``max_w min_P sum_x w_x r_x(P)``:

    * the inner problem (best mechanism for weights ``w`` over data sets) is solved exactly by the
      truncated geometric mechanism and a remap (Ghosh, Roughgarden & Sundararajan 2009; valid because
      ``L[x, j]`` grows with ``|j - x|``, checked by :func:`is_monotone_loss`). Its value ``B(w)`` is a
      **lower bound** on the minimax risk for every ``w``;
    * a small master LP mixes the mechanisms found so far to minimise the worst risk; its dual gives the
      next ``w`` (smoothed towards the best ``w`` so far, Wentges' stabilisation). A mixture of
      eps-DP mechanisms is eps-DP, so the master's value is an **upper bound** attained by a mechanism.

    Each column is a remap mixed with its mirror image ``x -> n - x`` when the loss is symmetric
    (symmetric prior), which halves the problem. The loop stops when the certified gap
    ``(upper - lower) / upper <= rtol``. The returned mechanism's privacy loss is recomputed exactly in
    log space.

    Raises
    ------
    ValueError
        If the loss is not monotone in ``|j - x|`` (the lower bound would not be certified).
    RuntimeError
        If the gap is not closed within ``max_iter`` rounds.
    """
    n = check_int("n", n, minimum=1, maximum=3000)
    eps = check_positive("eps", eps)
    rtol = check_positive("rtol", rtol)
    max_iter = check_int("max_iter", max_iter, minimum=1)
    smoothing = check_probability("smoothing", smoothing)
    L = binary_loss_matrix(n, prior, loss)
    if not is_monotone_loss(L):
        raise ValueError("the loss is not monotone in |j - x|: the geometric lower bound does not apply")
    m = n + 1
    symmetric = bool(np.allclose(L, L[::-1, ::-1], rtol=1e-12, atol=1e-15))
    h = n // 2 + 1 if symmetric else m  # master rows (x <= n/2 suffice under symmetry)
    logG = truncated_geometric_logmatrix(n, eps)  # logG[z, x]
    G = np.exp(logG)
    w_master = np.full(m, 1.0 / m)
    w_best, lower = w_master.copy(), -math.inf
    cols: list[NDArray[np.float64]] = []
    choices: list[NDArray[np.int64]] = []
    res = None
    upper = math.inf
    it = 0
    for it in range(1, max_iter + 1):
        queries = [w_master] if it == 1 else [smoothing * w_best + (1 - smoothing) * w_master, w_master]
        for w in queries:
            ch, r = _geometric_best_response(G, L, w)
            b = float(w @ r)
            if b > lower:
                lower, w_best = b, w.copy()
            cols.append(0.5 * (r + r[::-1]) if symmetric else r)
            choices.append(ch)
        R = np.asarray(cols)
        K = R.shape[0]
        c = np.zeros(K + 1)
        c[-1] = 1.0
        A_ub = np.hstack([R[:, :h].T, -np.ones((h, 1))])
        A_eq = np.concatenate([np.ones(K), [0.0]])[None, :]
        res = linprog(c, A_ub=A_ub, b_ub=np.zeros(h), A_eq=A_eq, b_eq=[1.0],
                      bounds=[(0, None)] * K + [(None, None)], method="highs")
        if res.status != 0:
            raise RuntimeError(f"HiGHS failed on the master LP (n = {n}, eps = {eps:g}): {res.message}")
        lam = np.clip(res.x[:K], 0.0, None)
        lam /= lam.sum()
        upper = float(np.max(lam @ R))
        y = np.clip(-np.asarray(res.ineqlin.marginals), 0.0, None)
        w_master = np.zeros(m)
        w_master[:h] += y
        if symmetric:
            w_master[n - np.arange(h)] += y
        w_master /= w_master.sum()
        if upper - lower <= rtol * upper:
            break
    else:
        raise RuntimeError(f"column generation did not reach rtol = {rtol:g} in {max_iter} rounds (gap {(upper - lower) / upper:.3g})")
    # the mechanism, in log space: P = sum_k lam_k (remap_k of G) (+ its mirror)
    log_P = np.full((m, m), -np.inf)
    for lk, ch in zip(lam, choices):
        if lk <= 0:
            continue
        parts = [(ch, math.log(lk) + (math.log(0.5) if symmetric else 0.0))]
        if symmetric:
            parts.append((n - ch[::-1], parts[0][1]))
        for chv, lw in parts:
            for z in range(m):
                log_P[:, chv[z]] = np.logaddexp(log_P[:, chv[z]], logG[z] + lw)
    P = np.exp(log_P)
    per_x = release_risks(P, L)
    a, b_ = log_P[:-1], log_P[1:]
    both = np.isneginf(a) & np.isneginf(b_)
    with np.errstate(invalid="ignore"):
        ploss = float(np.max(np.where(both, 0.0, np.abs(a - b_))))
    if ploss > eps + LP_DP_LOG_TOL:
        raise RuntimeError(f"minimax mechanism fails its DP check: loss {ploss:.6g} > eps = {eps:g}")
    value = float(per_x.max())
    return MinimaxRelease(value=value, lower_bound=lower, weights=w_best, P=P, log_P=log_P, privacy_loss=ploss,
                          per_x=per_x, iterations=it,
                          info={"n": n, "eps": eps, "loss": loss, "columns": len(cols), "master_value": upper,
                                "symmetric": symmetric})


# -- the best eps-DP release for k >= 3 categories: an LP over all compositions -----------------------
def composition_neighbours(n: int, k: int) -> NDArray[np.int64]:
    """Ordered pairs ``(i, i')`` of compositions (rows of ``candidate_counts(n, k)``) that differ in one record
    (replace-one: one count down by one, another up by one). Both orientations are listed."""
    cand = candidate_counts(check_int("n", n, minimum=1), check_int("k", k, minimum=2))
    S = np.abs(cand[:, None, :] - cand[None, :, :]).sum(axis=2)
    i, j = np.nonzero(S == 2)
    return np.stack([i, j], axis=1).astype(np.int64)


def _pairs_log_loss(log_P: NDArray[np.float64], pairs: NDArray[np.int64]) -> float:
    """Exact privacy loss of ``log_P`` over the ordered ``pairs`` of rows (:mod:`dpbayes.privacy_loss`)."""
    if pairs.shape[0] == 0 or log_P.shape[1] == 0:
        return 0.0
    return max(_max_log_ratio(log_P, pairs.astype(np.intp)), 0.0)


def _certify_release_pairs(P: NDArray[np.float64], eps: float, pairs: NDArray[np.int64]) -> tuple[NDArray[np.float64], float, float]:
    """:func:`_certify_release` for any neighbour relation (``pairs`` of row indices)."""
    P = np.clip(P, 0.0, None)
    P /= P.sum(axis=1, keepdims=True)
    m = P.shape[1]
    ee = math.exp(eps)
    d = float(max(np.max(P[pairs[:, 0]] - ee * P[pairs[:, 1]]), 0.0))
    lam = 0.0
    with np.errstate(divide="ignore"):
        loss = _pairs_log_loss(np.log(P), pairs)
    if d > 0 or loss > eps + LP_DP_LOG_TOL:
        u = 1.0 / m
        lam = max(min(1.0, 2.0 * max(d, 1e-300) / (u * (ee - 1.0) + 2.0 * max(d, 1e-300))), 1e-15)
        base = P.copy()
        while True:
            P = (1.0 - lam) * base + lam * u
            loss = _pairs_log_loss(np.log(P), pairs)
            if loss <= eps + LP_DP_LOG_TOL or lam >= LP_MAX_REPAIR_WEIGHT:
                break
            lam = min(1.0, lam * 10)
    if loss > eps + LP_DP_LOG_TOL or lam > LP_MAX_REPAIR_WEIGHT:
        raise RuntimeError(
            f"LP answer cannot be certified eps-DP: after mixing weight {lam:.3g} (limit {LP_MAX_REPAIR_WEIGHT:g}) "
            f"the loss is {loss:.6g} against eps = {eps:.6g}"
        )
    return P, lam, loss


def optimal_release_lp_multi(n: int, eps: float, prior: ArrayLike, *, data_prior: ArrayLike | None = None) -> ReleaseLP:
    """The eps-DP release of a candidate of ``R_alpha`` with the smallest mean Hellinger error, any ``k``.

    Inputs and outputs are all compositions of ``n`` into ``k = len(prior)`` parts
    (:func:`dpbayes.sensitivity.candidate_counts`, ``N`` of them); eps-DP constraints
    ``P[c, j] <= e^eps P[c', j]`` between compositions that differ in one record (replace-one, ``n``
    public); objective ``sum_c pi(c) sum_j P[c, j] H(DirP(c), Dir(alpha + c_j))`` with ``pi`` uniform
    unless ``data_prior`` is given. ``N^2`` unknowns: ``N <= 200`` (``n <= 18`` for ``k = 3``).
    Solved by HiGHS; the answer is certified as in :func:`optimal_release_lp` (mixing with the uniform
    mechanism, exact loss recomputed). ``value`` is the certified objective, ``solver_value`` the solver's.
    """
    eps = check_positive("eps", eps)
    alpha = check_prior(prior)
    k = alpha.size
    n = check_int("n", n, minimum=1)
    cand = candidate_counts(n, k)
    N = len(cand)
    if N > 200:
        raise ValueError(f"n must give at most 200 compositions (got {N} for n = {n}, k = {k})")
    post = cand + alpha
    L = np.asarray(hellinger_dirichlet(post[:, None, :], post[None, :, :]))
    if data_prior is None:
        pi = np.full(N, 1.0 / N)
    else:
        pi = np.asarray(data_prior, dtype=float)
        if pi.shape != (N,) or np.any(~np.isfinite(pi)) or np.any(pi < 0) or not math.isclose(float(pi.sum()), 1.0, abs_tol=1e-9):
            raise ValueError(f"data_prior must be {N} non-negative probabilities summing to 1")
    pairs = composition_neighbours(n, k)
    idx = np.arange(N * N).reshape(N, N)
    ee = math.exp(eps)
    a_idx = idx[pairs[:, 0]].ravel()
    b_idx = idx[pairs[:, 1]].ravel()
    r = np.arange(a_idx.size)
    A_ub = sparse.csr_matrix(
        (np.concatenate([np.ones(a_idx.size), np.full(a_idx.size, -ee)]), (np.concatenate([r, r]), np.concatenate([a_idx, b_idx]))),
        shape=(a_idx.size, N * N),
    )
    A_eq = sparse.csr_matrix((np.ones(N * N), (np.repeat(np.arange(N), N), idx.ravel())), shape=(N, N * N))
    res = linprog((pi[:, None] * L).ravel(), A_ub=A_ub, b_ub=np.zeros(a_idx.size), A_eq=A_eq, b_eq=np.ones(N),
                  bounds=(0, None), method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on the release LP (n = {n}, k = {k}, eps = {eps:g}): {res.message}")
    P, lam, ploss = _certify_release_pairs(np.asarray(res.x, dtype=float).reshape(N, N), eps, pairs)
    per_x = release_risks(P, L)
    return ReleaseLP(P=P, value=float(pi @ per_x), solver_value=float(res.fun), privacy_loss=ploss, repair_weight=lam,
                     per_x=per_x, info={"n": n, "k": k, "eps": eps, "candidates": cand, "data_prior": pi})


def geometric_multi_release_log_distribution(counts: ArrayLike, eps: float, prior: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The natural ``k``-category generalisation of the truncated geometric mechanism (not in the notes).

    LSHist's structure with geometric instead of Laplace noise: the first ``k - 1`` counts get independent
    two-sided geometric noise ``P(z) ∝ e^{-eps |z| / 2}``, each clamped to ``[0, n]``; the last count is
    ``n`` minus their sum, clamped (so, as for LSHist, the release can leave ``R_alpha``). Privacy:
    replacing one record changes at most two of the first ``k - 1`` counts by one, so the loss is at most
    ``2 (eps / 2) = eps`` (exact loss tested). For ``k = 2`` the noise would be calibrated to ``eps/2``;
    use the binary ``"Geometric"`` mechanism there. Returns ``(released, log_prob)`` as
    :func:`release_log_distribution`.
    """
    eps = check_positive("eps", eps)
    alpha = check_prior(prior)
    c = _check_counts(counts, alpha)
    k = c.size
    if k < 3:
        raise ValueError("geometric_multi_release_log_distribution needs k >= 3 categories (use 'Geometric' for k = 2)")
    n = int(c.sum())
    pmfs = [_log_truncated_geometric_pmf(int(c[i]), n, eps / 2.0) for i in range(k - 1)]
    grids = np.meshgrid(*[np.arange(n + 1)] * (k - 1), indexing="ij")
    first = np.stack([g.ravel() for g in grids], axis=1)
    logp = sum(pmfs[i][first[:, i]] for i in range(k - 1))
    last = np.clip(n - first.sum(axis=1), 0, n)
    return np.concatenate([first, last[:, None]], axis=1).astype(np.int64), np.asarray(logp)
