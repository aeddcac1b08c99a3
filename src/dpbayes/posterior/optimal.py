"""The best eps-DP release of a Beta/Dirichlet posterior over the candidate set (chapter 2, not in the notes).

It answers the notes' title question (is the Laplace mechanism optimal?) with the optimum itself:
the linear program over row-stochastic matrices ``P[x, j]`` with the eps-DP inequalities (binary
data, Bayes or minimax objective, with a certificate of its privacy), its closed form for the Bayes
objective (truncated geometric mechanism plus a remap, Ghosh, Roughgarden & Sundararajan 2009), the
minimax optimum at large ``n`` by column generation, and the LP over all compositions for ``k >= 3``
categories. The section comments below give the details.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse
from scipy.optimize import brentq, linprog
from scipy.special import gammaln

from dpbayes.core.distances import hellinger_dirichlet, kl_beta, total_variation_beta
from dpbayes.core.geometric import truncated_geometric_logmatrix
from dpbayes.posterior.accuracy import _GOOD_SET_RTOL, binary_distance_matrix, mean_error, projected_release_log_distribution
from dpbayes.posterior.mechanisms import geometric_multi_release_log_distribution
from dpbayes.core.privacy_loss import _max_log_ratio, neighbour_pairs
from dpbayes.posterior.sensitivity import (
    candidate_counts,
    check_prior,
    local_sensitivity_all,
)
from dpbayes.core.validation import check_choice, check_int, check_positive, check_probability

__all__ = [
    "LP_LOSSES",
    "LP_OBJECTIVES",
    "ReleaseLP",
    "binary_loss_matrix",
    "uniform_data_prior",
    "beta_binomial_data_prior",
    "release_risks",
    "is_monotone_loss",
    "optimal_release_lp",
    "optimal_release_bayes_exact",
    "MinimaxRelease",
    "optimal_release_minimax",
    "composition_neighbours",
    "optimal_release_lp_multi",
    "NOISE_MECHANISMS_MULTI",
    "constant_release",
    "dirichlet_multinomial_data_prior",
    "multi_distance_matrix",
    "multi_release_risks",
    "crossover_eps",
]


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
# :func:`dpbayes.ubapp.optimal.private_bayes_exact_count` (here with an identity likelihood), at any ``n`` where an
# ``(n + 1) x (n + 1)`` matrix fits, and checked against the LP where both are computed.
LP_LOSSES = ("hellinger", "good_set", "tv", "kl_true_release", "kl_release_true", "mean_abs", "mean_sq")
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

    With ``p_x = Beta(a + x, b + n - x)`` the true and ``p_j`` the released posterior:
    ``"hellinger"``: ``H(p_x, p_j)``; ``"good_set"``: ``1`` when the release is outside the good set
    ``R_g(x) = {r : H(DirP(x), r) <= LS(x)}`` (notes Cor 2.5.2), else 0; ``"tv"``: total variation
    distance (:func:`dpbayes.core.distances.total_variation_beta`); ``"kl_true_release"``: ``KL(p_x || p_j)``;
    ``"kl_release_true"``: ``KL(p_j || p_x)`` (:func:`dpbayes.core.distances.kl_beta`); ``"mean_abs"`` and
    ``"mean_sq"``: absolute and squared error of the released posterior mean, ``|j - x| / (a + b + n)`` and
    its square. Every loss is 0 on the diagonal.
    """
    loss = check_choice("loss", loss, LP_LOSSES)
    alpha = check_prior(prior, 2)
    n = check_int("n", n, minimum=1, maximum=3000)
    if loss in ("tv", "kl_true_release", "kl_release_true", "mean_abs", "mean_sq"):
        post = candidate_counts(n, 2) + alpha
        x1, y1 = post[:, None, 0], post[:, None, 1]
        x2, y2 = post[None, :, 0], post[None, :, 1]
        if loss == "tv":
            return np.asarray(total_variation_beta(x1, y1, x2, y2))
        if loss == "kl_true_release":
            return np.asarray(kl_beta(x1, y1, x2, y2))
        if loss == "kl_release_true":
            return np.asarray(kl_beta(x2, y2, x1, y1))
        steps = np.abs(np.arange(n + 1)[:, None] - np.arange(n + 1)[None, :]) / (alpha.sum() + n)
        return steps if loss == "mean_abs" else steps**2
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
    """Exact privacy loss of ``P[x, j]`` for neighbours ``x ~ x + 1`` (:mod:`dpbayes.core.privacy_loss`)."""
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

    Calls chapter 1's :func:`dpbayes.ubapp.optimal.private_bayes_exact_count` with the data set as the observation
    (identity likelihood), the candidates as estimates and ``L`` as the loss. Optimal among all eps-DP
    mechanisms when ``L[x, j]`` is non-decreasing in ``|j - x|`` (Ghosh, Roughgarden & Sundararajan 2009;
    checked by :func:`is_monotone_loss`, recorded in ``info["monotone_loss"]``, and against the LP in the
    tests). Privacy: post-processing of the geometric mechanism; the exact loss is recomputed.
    """
    from dpbayes.ubapp.optimal import private_bayes_exact_count

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
    """Exact privacy loss of ``log_P`` over the ordered ``pairs`` of rows (:mod:`dpbayes.core.privacy_loss`)."""
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
    (:func:`dpbayes.posterior.sensitivity.candidate_counts`, ``N`` of them); eps-DP constraints
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


# -- baselines for the comparison of mechanisms: the data-independent release and crossovers in eps -------
# Not in the notes. A release that ignores the data is 0-DP, hence eps-DP for every eps; its best version
# (the candidate with the smallest prior-averaged loss) is a floor below which no mechanism is worth its
# noise. :func:`crossover_eps` locates where two averaged errors cross, by Brent's method.

#: The ``k``-category mechanisms of :func:`multi_release_risks` that add noise to the counts (the notes'
#: Alg. 1-2, LSHist rounded, LSHist projected onto ``R_alpha`` and the geometric analogue).
NOISE_MECHANISMS_MULTI = ("LSDim", "LSHist", "LSHist-round", "LSHist projected", "Geometric (k categories)")


def constant_release(L: ArrayLike, pi: ArrayLike) -> tuple[int, float]:
    """The best data-independent release: ``j* = argmin_j sum_x pi(x) L[x, j]`` and that averaged loss.

    It releases the same candidate whatever the data, so it is 0-DP (eps-DP for every eps) and has zero
    loss at its own data set; its averaged loss is the value every eps-DP release's optimum is at most
    (not in the notes; the baseline of chapter 2's comparisons).

    Parameters
    ----------
    L : array_like, shape (m, r)
        ``L[x, j]``, the loss of release ``j`` at data set ``x`` (finite).
    pi : array_like, shape (m,)
        Weights of the data sets (non-negative, summing to 1).

    Returns
    -------
    (int, float)
        The index ``j*`` (the first of ties) and ``sum_x pi(x) L[x, j*]``.
    """
    Lm = np.asarray(L, dtype=float)
    w = np.asarray(pi, dtype=float)
    if Lm.ndim != 2 or not np.all(np.isfinite(Lm)):
        raise ValueError(f"L must be a finite matrix (data sets x releases), got shape {Lm.shape}")
    if w.shape != (Lm.shape[0],) or np.any(~np.isfinite(w)) or np.any(w < 0) or not math.isclose(float(w.sum()), 1.0, abs_tol=1e-9):
        raise ValueError(f"pi must be {Lm.shape[0]} non-negative weights summing to 1")
    risk = w @ Lm
    j = int(np.argmin(risk))
    return j, float(risk[j])


def dirichlet_multinomial_data_prior(n: int, prior: ArrayLike) -> NDArray[np.float64]:
    """Prior predictive of the compositions of ``n`` (order of :func:`dpbayes.posterior.sensitivity.candidate_counts`):
    ``n! / prod_i c_i! * B(alpha + c) / B(alpha)``, the ``k``-category analogue of :func:`beta_binomial_data_prior`."""
    alpha = check_prior(prior)
    n = check_int("n", n, minimum=1, maximum=3000 if alpha.size == 2 else 60)
    cand = candidate_counts(n, alpha.size).astype(float)

    def log_b(v: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(gammaln(v).sum(axis=-1) - gammaln(v.sum(axis=-1)))

    logp = gammaln(n + 1.0) - gammaln(cand + 1.0).sum(axis=1) + log_b(alpha + cand) - log_b(alpha)
    p = np.exp(logp - logp.max())
    return np.asarray(p / p.sum())


def multi_distance_matrix(n: int, prior: ArrayLike) -> NDArray[np.float64]:
    """``D[c, c'] = H(Dir(alpha + c), Dir(alpha + c'))`` over all compositions of ``n`` (any ``k >= 2``)."""
    alpha = check_prior(prior)
    n = check_int("n", n, minimum=1, maximum=3000 if alpha.size == 2 else 60)
    post = candidate_counts(n, alpha.size) + alpha
    return np.asarray(hellinger_dirichlet(post[:, None, :], post[None, :, :]), dtype=float)


def multi_release_risks(
    n: int, eps: float, prior: ArrayLike, mechanisms: tuple[str, ...] = NOISE_MECHANISMS_MULTI, *, data_prior: ArrayLike | None = None
) -> dict[str, float]:
    """Mean Hellinger error of each mechanism, averaged over all compositions of ``n`` (exact output laws).

    ``k = len(prior) >= 3`` categories. Names: any of ``dpbayes.posterior.mechanisms.ALL_MECHANISMS``
    (through :func:`dpbayes.posterior.accuracy.mean_error`), ``"LSHist projected"`` (LSHist followed by the
    Hellinger-nearest candidate, :func:`dpbayes.posterior.accuracy.projected_release_log_distribution`) and
    ``"Geometric (k categories)"`` (:func:`dpbayes.posterior.mechanisms.geometric_multi_release_log_distribution`).
    Weights: the Dirichlet-multinomial prior predictive unless ``data_prior`` is given.
    """
    eps = check_positive("eps", eps)
    alpha = check_prior(prior)
    if alpha.size < 3:
        raise ValueError("multi_release_risks needs k >= 3 categories (binary: exact_log_output_distribution)")
    n = check_int("n", n, minimum=1, maximum=60)
    cand = candidate_counts(n, alpha.size)
    w = dirichlet_multinomial_data_prior(n, alpha) if data_prior is None else np.asarray(data_prior, dtype=float)
    if w.shape != (len(cand),) or np.any(w < 0) or not math.isclose(float(w.sum()), 1.0, abs_tol=1e-9):
        raise ValueError(f"data_prior must be {len(cand)} non-negative weights summing to 1")
    out: dict[str, float] = {}
    for m in mechanisms:
        errs = np.empty(len(cand))
        for i, c in enumerate(cand):
            if m == "LSHist projected":
                rel, logq = projected_release_log_distribution("LSHist", c, eps, alpha)
            elif m == "Geometric (k categories)":
                rel, logq = geometric_multi_release_log_distribution(c, eps, alpha)
            else:
                errs[i] = mean_error(m, c, eps, alpha)
                continue
            errs[i] = float(np.exp(logq) @ np.asarray(hellinger_dirichlet(alpha + c, alpha + rel)))
        out[m] = float(w @ errs)
    return out


def _check_eps_scan(eps_range: tuple[float, float], scan: int, xtol: float) -> tuple[float, float, int, float]:
    """The arguments of a scan of eps followed by Brent's method: ``0 < low < high``, ``scan >= 2``, ``xtol > 0``."""
    lo, hi = (float(v) for v in eps_range)
    check_positive("eps_range", np.array([lo, hi]))
    if not lo < hi:
        raise ValueError(f"eps_range must be (low, high) with low < high, got {eps_range}")
    return lo, hi, check_int("scan", scan, minimum=2), float(check_positive("xtol", xtol))


def crossover_eps(
    diff: Callable[[float], float], eps_range: tuple[float, float], *, scan: int = 8, xtol: float = 1e-6
) -> NDArray[np.float64]:
    """Every eps in ``eps_range`` where ``diff`` (continuous in eps) changes sign, by Brent's method.

    ``diff`` is evaluated at ``scan`` log-spaced points; each bracket with a sign change is refined by
    ``scipy.optimize.brentq`` to ``xtol`` (default ``1e-6``, three orders below the 3 digits a crossover is
    printed with). Used for the difference of two averaged errors (a mechanism against
    :func:`constant_release`, or two mechanisms). Not in the notes.

    Returns
    -------
    ndarray
        The roots in increasing order (empty when the scan sees no sign change).
    """
    lo, hi, scan, xtol = _check_eps_scan(eps_range, scan, xtol)
    grid = np.geomspace(lo, hi, scan)
    vals = np.array([float(diff(float(e))) for e in grid])
    pos = vals > 0
    roots = [float(brentq(diff, grid[i], grid[i + 1], xtol=xtol)) for i in np.flatnonzero(pos[:-1] != pos[1:])]
    return np.asarray(roots, dtype=float)
