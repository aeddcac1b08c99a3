"""The notes' statements on posterior release, made precise and checked exactly (chapter 2).

Source: ``laplace-optimality-notes.md`` ("notes"), §2: Thm 2.3 and Thm 2.5 with their corollaries,
for two categories (the window of candidates around the true posterior, good-set probabilities,
the crossover size where one mechanism overtakes another) and, by :func:`notes_statement_checks`,
every statement of §2 as an exact margin for any number of categories.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp

from dpbayes.core.distances import hellinger_dirichlet
from dpbayes.posterior.mechanisms import (
    MECHANISMS,
    exact_log_output_distribution,
    release_log_distribution,
)
from dpbayes.posterior.accuracy import _GOOD_SET_RTOL, binary_distance_matrix, good_set_probability
from dpbayes.posterior.sensitivity import (
    NOTES_GLOBAL_SENSITIVITY,
    check_prior,
    local_sensitivity_all,
)
from dpbayes.core.validation import check_int, check_positive, check_probability

__all__ = [
    "window_half_widths",
    "theorem_2_5_rows",
    "good_set_rows",
    "laplace_window_bound",
    "notes_good_set_threshold",
    "notes_window_threshold",
    "crossover_n",
    "theorem_2_3_rows",
    "crossover_n_all_x",
    "NOTES_STATEMENTS",
    "notes_statement_checks",
]


# -- the notes' statements, made precise (binary case) -----------------------------------------------
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


def crossover_n_all_x(
    eps: float, prior: ArrayLike, n_max: int, mechanism_b: str = "EHD-notes", *, tie_tol: float = 1e-12
) -> tuple[int, NDArray[np.float64]]:
    """Smallest ``n0`` such that ``P[LSHist(x) in R_g] > P[B(x) in R_g]`` for **every** data set of every
    size ``n0 <= n <= n_max`` (notes Cor 2.5.2, a strict inequality). Also returns ``min_x (P_LSHist - P_B)``
    for ``n = 1..n_max``.

    LSHist counts as ahead at ``x`` only when its margin exceeds ``tie_tol`` (default ``1e-12``, far above
    the rounding of the two summed exact laws, about ``1e-16``, and far below every margin that is not a
    tie). A margin within ``tie_tol`` of 0 is a tie, e.g. when the good set holds every candidate and both
    probabilities are 1; the strict inequality of the notes does not hold at a tie.
    """
    n_max = check_int("n_max", n_max, minimum=1, maximum=3000)
    tie_tol = float(tie_tol)
    if not (math.isfinite(tie_tol) and tie_tol >= 0.0):
        raise ValueError(f"tie_tol must be a finite number >= 0, got {tie_tol}")
    margin = np.empty(n_max)
    for n in range(1, n_max + 1):
        g = good_set_rows(n, eps, prior, ("LSHist", mechanism_b))
        margin[n - 1] = float(np.min(g["good_LSHist"] - g["good_" + mechanism_b]))
    behind = np.flatnonzero(~(margin > tie_tol))
    return (int(behind[-1]) + 2 if behind.size else 1), margin


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
        or ``gammas`` where the statement has them), keys :data:`dpbayes.posterior.statements.NOTES_STATEMENTS`; plus
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
