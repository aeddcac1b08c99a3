"""The best eps-DP release of a Beta posterior from the candidate set: a finite linear program.

Source: the question of ``laplace-optimality-notes.md`` ("notes", title and Thm 2.1-2.3): is the Laplace
mechanism (LSHist) optimal for releasing a Beta posterior? For two categories and a public size ``n`` the
inputs are the ``n + 1`` data sets (``x`` ones), the outputs the ``n + 1`` candidates
``Beta(a + j, b + n - j)`` of ``R_alpha``, and a mechanism is a row-stochastic matrix ``P[x, j]``. It is
eps-DP for replace-one neighbours exactly when ``P[x, j] <= e^eps P[x +- 1, j]`` for all ``x, j``. Every
accuracy criterion below is linear in ``P``, so the best mechanism is a linear program:

* ``objective="bayes"``: minimise ``sum_x pi(x) sum_j P[x, j] L[x, j]`` (prior ``pi`` over data sets);
* ``objective="minimax"``: minimise ``max_x sum_j P[x, j] L[x, j]``.

With ``L = H`` (Hellinger distance between the true and the released posterior) these are the mean error
under a prior and the worst case over data sets; with ``L = 1[H > LS(x)]`` they are one minus the good-set
probability ``P[H <= LS(x)]`` (notes Cor 2.5.2).

Solved with SciPy's HiGHS (``scipy.optimize.linprog``). The optimum has entries as small as
``e^(-eps n)`` that no solver resolves; the answer is therefore **certified**: clipped, mixed with the
uniform (data-independent) mechanism with the smallest weight that makes every DP inequality hold in log
space, and its exact privacy loss is recomputed. The certified value is that of the repaired matrix (an
upper bound on the optimum); the solver's value is a lower bound up to the solver tolerance.

For the Bayes objective the LP has a closed-form solution (Ghosh, Roughgarden & Sundararajan 2009): the
truncated geometric mechanism followed by the remap ``z -> argmin_j E[L(x, j) | z]``, optimal for every
prior when ``L[x, j]`` is non-decreasing in ``|j - x|`` for every ``x``. It is computed by chapter 1's
:func:`dpbayes.ubapp.private_bayes_exact_count` (here with an identity likelihood), at any ``n`` where an
``(n + 1) x (n + 1)`` matrix fits, and checked against the LP where both are computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse
from scipy.optimize import linprog

from dpbayes.posterior_release import binary_distance_matrix
from dpbayes.sensitivity import check_prior, local_sensitivity_all
from dpbayes.validation import check_choice, check_int, check_positive

__all__ = [
    "LOSSES",
    "OBJECTIVES",
    "ReleaseLP",
    "binary_loss_matrix",
    "uniform_data_prior",
    "beta_binomial_data_prior",
    "optimal_release_lp",
    "optimal_release_bayes_exact",
    "risks",
    "is_monotone_loss",
]

LOSSES = ("hellinger", "good_set")
OBJECTIVES = ("bayes", "minimax")
#: Relative tolerance of the good-set membership test (as in :mod:`dpbayes.posterior_release`).
_GOOD_SET_RTOL = 1e-9
#: Log-space tolerance of the DP certificate.
DP_LOG_TOL = 1e-9
#: Largest mixture weight the certificate may add before the answer is rejected.
MAX_REPAIR_WEIGHT = 1e-5


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
    loss = check_choice("loss", loss, LOSSES)
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


def risks(P: ArrayLike, L: ArrayLike) -> NDArray[np.float64]:
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


def _log_loss(P: NDArray[np.float64]) -> float:
    with np.errstate(divide="ignore"):
        logP = np.log(P)
    a, b = logP[:-1], logP[1:]
    both = np.isneginf(a) & np.isneginf(b)
    with np.errstate(invalid="ignore"):
        diff = np.where(both, 0.0, np.abs(a - b))
    return float(np.max(diff)) if diff.size else 0.0


def _certify(P: NDArray[np.float64], eps: float) -> tuple[NDArray[np.float64], float, float]:
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
    if d > 0 or _log_loss(P) > eps + DP_LOG_TOL:
        u = 1.0 / m
        lam = min(1.0, 2.0 * max(d, 1e-300) / (u * (ee - 1.0) + 2.0 * max(d, 1e-300)))
        lam = max(lam, 1e-15)
        P = (1.0 - lam) * P + lam * u
        # ensure the log-space check passes (round-off in tiny entries); grow lam if needed
        while _log_loss(P) > eps + DP_LOG_TOL and lam < MAX_REPAIR_WEIGHT:
            lam2 = min(1.0, lam * 10)
            P = (P - lam * u) / (1.0 - lam) * (1.0 - lam2) + lam2 * u
            lam = lam2
    loss = _log_loss(P)
    if loss > eps + DP_LOG_TOL or lam > MAX_REPAIR_WEIGHT:
        raise RuntimeError(
            f"LP answer cannot be certified eps-DP: after mixing weight {lam:.3g} (limit {MAX_REPAIR_WEIGHT:g}) "
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
    objective = check_choice("objective", objective, OBJECTIVES)
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
    P, lam, ploss = _certify(P0, eps)
    per_x = risks(P, L)
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
    per_x = risks(P, L)
    return ReleaseLP(P=P, value=float(pi @ per_x), solver_value=float("nan"), privacy_loss=_log_loss(P), repair_weight=0.0,
                     per_x=per_x, info={"loss": loss, "objective": "bayes", "n": n, "eps": eps,
                                        "monotone_loss": is_monotone_loss(L), "remap": np.asarray(sol.info["remap"])})
