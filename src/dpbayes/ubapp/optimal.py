"""UBaPP: the optimal eps-differentially private Bayes point estimator on a finite problem.

Source: B. Lakshminarayanan and C. R. Rojas, "A Unified Approach to Differentially Private
Bayes Point Estimation" (IFAC World Congress 2023), Section 4.1, linear program (11), and
Algorithm 1. Notation: a randomised estimator is a column-stochastic matrix ``P`` with
``P[k, i] = Pr(estimate = t_k | observation y_i)``; ``Q[i, j] = Pr(y_i | theta_j)`` is the
likelihood, ``pi`` the prior on the parameter grid and ``L[j, k] = loss(theta_j, t_k)``.

Two solvers of the same problem are provided:

* :func:`private_bayes_lp` / :func:`ubapp_lp` solve (11) as a linear program with CVXPY, for any
  loss, likelihood, prior and neighbour structure (the paper's method);
* :func:`private_bayes_exact_count` / :func:`ubapp_exact` solve it in closed form when the
  observation is a count ``y in {0..n}`` whose neighbours are ``y`` and ``y + 1``: release the
  count through the truncated geometric mechanism (Ghosh, Roughgarden & Sundararajan 2009) and
  map every noisy count to the estimate of least posterior expected loss. It attains the LP
  optimum (to rounding) for likelihoods with a monotone likelihood ratio (binomial, truncated
  Poisson) and losses increasing in ``|theta - t|`` in every case we tried, but *not* for arbitrary
  loss/likelihood matrices (gaps of a few per cent); this is verified numerically, not proved.
  The argument and the evidence are in the chapter (``chapters/01-ubapp``); the tests compare
  it with the LP on random cases.

Beyond the paper, in modules of their own: :mod:`dpbayes.choosing.ubapp_advantage` (UBaPP's advantage over
the Laplace baselines, and where it is largest) and :mod:`dpbayes.ubapp.scope` (the reduction to the
count, the neighbour relation, the grid and targets other than ``theta``: where the exact solver's
optimality holds).

Privacy guarantee of every returned ``P`` (both solvers): for each neighbouring pair
``(i, i')`` and each estimate ``k``, ``P[k, i] <= exp(eps) * P[k, i']``, i.e. the estimator is
eps-differentially private with respect to the neighbour relation on observations (and hence
on inputs, the statistic being locally injective, paper Section 4). This is *checked* on the
returned matrix (in log space, to a relative tolerance of ``DP_RTOL``) before it is returned.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from dpbayes.core._extras import lazy_module, require
from dpbayes.core.geometric import KERNEL_CHUNK, geometric_kernel_sums_by_chunk
from dpbayes.core.geometric import geometric_kernel_sums as geometric_kernel_sums
from dpbayes.core.geometric import geometric_row_factors as _geometric_row_factors  # noqa: F401 (dpbayes.release.statistic imports it from here)
from dpbayes.core.geometric import truncated_geometric_logmatrix as truncated_geometric_logmatrix
from dpbayes.core.losses import LOSSES
from dpbayes.core.privacy_loss import _max_log_ratio
from dpbayes.core.validation import check_choice, check_distribution, check_grid, check_int, check_positive

stats = lazy_module("scipy.stats")  # imported on first use: keeps `import dpbayes.release.statistic` fast

__all__ = [
    "DP_RTOL",
    "MAX_REPAIR_WEIGHT",
    "UbappSolution",
    "PrivacyCheckError",
    "binomial_likelihood",
    "chain_neighbours",
    "uniform_prior",
    "beta_prior_on_grid",
    "expected_loss_matrix",
    "dp_log_violation",
    "privacy_loss",
    "DPBreaches",
    "dp_breaches",
    "HIGHS_DEFAULT_TOLERANCES",
    "truncated_geometric_logmatrix",
    "private_bayes_lp",
    "private_bayes_exact_count",
    "ubapp_lp",
    "ubapp_exact",
    "ubapp_exact_dense",
    "geometric_kernel_sums",
    "beta_posterior_mean_remap",
    "check_dense_size",
    "MAX_COUNT",
    "MAX_DENSE_ENTRIES",
    "MAX_GRID",
    "MAX_GRID_WORK",
    "LP_SOLVERS",
    "DEFAULT_LP_SOLVER",
    "bayes_risk",
]

#: Relative tolerance of the DP check, ``P[k, i] <= exp(eps) * P[k, i'] * (1 + DP_RTOL)``.
DP_RTOL = 1e-9
#: Largest weight of the data-independent mixture used to repair a slightly infeasible LP solution.
MAX_REPAIR_WEIGHT = 1e-6
#: LP solvers shipped with CVXPY that this module accepts.
LP_SOLVERS = ("HIGHS", "CLARABEL", "SCS", "OSQP")
#: Default LP solver, chosen by measurement (``benchmarks/bench_ubapp.py``, K = 100). HiGHS (simplex)
#: returns a vertex, whose active DP inequalities hold to rounding error, and it is the only one of
#: the four whose answers could be certified eps-DP over the whole eps range. At eps = 0.001
#: (M = 101) its raw answer is DP to 1e-14 and equals the exact optimum, while CLARABEL (faster:
#: 2.8 s vs 10.5 s) needs a repair weight 9e-6 and SCS 2.6e-2 (both above ``MAX_REPAIR_WEIGHT``);
#: at eps = 1 (M = 201) CLARABEL is faster (0.8 s vs 2.9 s) and repairable, SCS and OSQP are not.
DEFAULT_LP_SOLVER = "HIGHS"
#: Tried in turn when the default fails and no solver was named. With its tightened tolerances HiGHS
#: can stop without a solution (seen on the count LP of chapter 04 at n = 100: p = 0.3 and 0.02 at
#: eps = 1, p = 0.02 at eps = 0.3; CLARABEL solves each in 1-2 s and its answer passes the DP check).
#: HiGHS at its default tolerances is no fallback: there its answers failed the DP check on two of three.
FALLBACK_LP_SOLVERS = ("CLARABEL",)
#: HiGHS's own feasibility tolerances (what CVXPY passes when no option is given, as in the paper's
#: Algorithm 1); ``private_bayes_lp`` tightens them (``_DEFAULT_OPTIONS``). Pass these as
#: ``solver_options`` to see a raw answer as the paper's Algorithm 1 would get it.
HIGHS_DEFAULT_TOLERANCES: dict[str, float] = {"primal_feasibility_tolerance": 1e-7, "dual_feasibility_tolerance": 1e-7}
# HiGHS's default feasibility tolerance (1e-7) lets tiny entries break the DP inequalities and the
# objective fall below the true optimum by ~1e-9; tighter tolerances keep it within ~1e-12.
_DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "HIGHS": {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
}


class PrivacyCheckError(RuntimeError):
    """A computed estimator does not satisfy the DP inequalities to the required tolerance."""


@dataclass(frozen=True)
class UbappSolution:
    """A private Bayes estimator and its Bayes risk.

    Attributes
    ----------
    P : ndarray, shape (n_est, n_obs)
        ``P[k, i] = Pr(estimate = estimates[k] | observation i)``; columns sum to 1.
    risk : float
        Bayes risk of ``P`` (the objective of paper eq. (11); the Bayes MSE for squared loss),
        recomputed in NumPy from ``P`` rather than taken from the solver.
    solver : str
        ``"exact"`` (geometric mechanism + Bayes remap), ``"exact-continuous"`` or the LP solver.
    solve_seconds : float
        Wall-clock time of the solve (for the LP: CVXPY's compilation plus the solver).
    estimates : ndarray, shape (n_est,)
        Value of the estimate that each row of ``P`` stands for.
    eps : float
        Privacy parameter the estimator was computed for.
    privacy_loss : float
        Largest ``|log P[k, i] - log P[k, i']|`` over neighbours (``<= eps`` up to ``DP_RTOL``).
    repair_weight : float
        Weight ``lam`` of the mixture with a data-independent column in the repair of an LP
        solution that broke a DP inequality by more than ``DP_RTOL`` (0 when none was needed; see
        ``info["envelope_mass"]`` for the other step of the repair).
    log_P : ndarray
        ``log(P)``, exact where ``P`` underflows (the exact solver computes it in log space).
    info : dict
        Extra diagnostics (solver status, objective before repair, remap, ...).
    """

    P: NDArray[np.float64]
    risk: float
    solver: str
    solve_seconds: float
    estimates: NDArray[np.float64]
    eps: float
    privacy_loss: float
    repair_weight: float = 0.0
    log_P: NDArray[np.float64] | None = None
    info: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Problem ingredients
# --------------------------------------------------------------------------------------------


def binomial_likelihood(K: int, theta_grid: ArrayLike) -> NDArray[np.float64]:
    """Likelihood matrix ``Q[y, j] = Binomial(y; K, theta_j)`` for ``y = 0..K`` (paper Section 5.3).

    The count of successes in ``K`` Bernoulli(theta) trials is the sufficient statistic of the
    paper's example; returns shape ``(K + 1, len(theta_grid))``.
    """
    K = check_int("K", K, minimum=1)
    theta = check_grid("theta_grid", theta_grid, low=0.0, high=1.0)
    y = np.arange(K + 1, dtype=float)[:, None]
    # log pmf in closed form (several times faster than scipy.stats.binom.pmf on large grids);
    # xlogy / xlog1py make 0 * log(0) = 0, so theta = 0 and theta = 1 are exact
    log_choose = special.gammaln(K + 1.0) - special.gammaln(y + 1.0) - special.gammaln(K - y + 1.0)
    return np.exp(log_choose + special.xlogy(y, theta[None, :]) + special.xlog1py(K - y, -theta[None, :]))


def chain_neighbours(n_obs: int) -> NDArray[np.int64]:
    """Neighbour pairs ``(i, i + 1)`` of a count taking ``n_obs`` values (paper Section 5.1)."""
    n_obs = check_int("n_obs", n_obs, minimum=1)
    i = np.arange(n_obs - 1)
    return np.stack([i, i + 1], axis=1)


def uniform_prior(theta_grid: ArrayLike) -> NDArray[np.float64]:
    """Uniform prior on the grid, ``pi_j = 1 / M_theta`` (paper Section 5.3)."""
    theta = check_grid("theta_grid", theta_grid)
    return np.full(theta.size, 1.0 / theta.size)


def beta_prior_on_grid(theta_grid: ArrayLike, a: float, b: float) -> NDArray[np.float64]:
    """Beta(a, b) prior discretised to the grid: each point gets the Beta mass of its cell.

    Cells are delimited by the midpoints between grid points (the first and last cells extend
    to 0 and 1), so the weights are finite for every ``a, b > 0`` and sum to 1.
    """
    theta = check_grid("theta_grid", theta_grid, low=0.0, high=1.0)
    a = check_positive("a", a)
    b = check_positive("b", b)
    edges = np.concatenate([[0.0], 0.5 * (theta[1:] + theta[:-1]), [1.0]])
    mass = np.diff(stats.beta.cdf(edges, a, b))
    return mass / mass.sum()


def expected_loss_matrix(
    weights: ArrayLike, theta_grid: ArrayLike, estimate_grid: ArrayLike, loss: str | ArrayLike
) -> NDArray[np.float64]:
    """``E[r, k] = sum_j weights[r, j] * loss(theta_j, t_k)`` without forming the loss matrix.

    For the squared and absolute losses this costs ``O(n_rows * (n_theta + n_est))`` instead of
    a dense product with the ``n_theta x n_est`` loss matrix (moments for squared loss, prefix
    sums for absolute loss); a loss matrix given as an array is multiplied directly.
    """
    w = np.asarray(weights, dtype=float)
    theta = check_grid("theta_grid", theta_grid)
    est = check_grid("estimate_grid", estimate_grid)
    if w.ndim != 2 or w.shape[1] != theta.size:
        raise ValueError(f"weights must have shape (n_rows, {theta.size}), got {w.shape}")
    if not isinstance(loss, str):
        L = np.asarray(loss, dtype=float)
        if L.shape != (theta.size, est.size):
            raise ValueError(f"loss must have shape ({theta.size}, {est.size}), got {L.shape}")
        return w @ L
    check_choice("loss", loss, LOSSES)
    if loss == "squared":
        # sum_j w_j (theta_j - t)^2 = s0 t^2 - 2 s1 t + s2
        s0, s1, s2 = w.sum(axis=1), w @ theta, w @ theta**2
        return s0[:, None] * est[None, :] ** 2 - 2.0 * s1[:, None] * est[None, :] + s2[:, None]
    # absolute loss: split the sum at t with prefix sums of w and w * theta
    cw = np.concatenate([np.zeros((w.shape[0], 1)), np.cumsum(w, axis=1)], axis=1)
    cwt = np.concatenate([np.zeros((w.shape[0], 1)), np.cumsum(w * theta, axis=1)], axis=1)
    n_le = np.searchsorted(theta, est, side="right")  # number of theta_j <= t_k
    w_le, wt_le = cw[:, n_le], cwt[:, n_le]
    w_gt, wt_gt = cw[:, -1:] - w_le, cwt[:, -1:] - wt_le
    return est[None, :] * (w_le - w_gt) - (wt_le - wt_gt)


def _neighbour_array(neighbours: Iterable[Any], n_obs: int) -> NDArray[np.int64]:
    arr = np.asarray(list(neighbours) if not isinstance(neighbours, np.ndarray) else neighbours)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"neighbours must be a sequence of index pairs (i, i'), got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"neighbours must hold integer indices, got dtype {arr.dtype}")
    if np.any(arr < 0) or np.any(arr >= n_obs):
        raise ValueError(f"neighbours must hold observation indices in [0, {n_obs - 1}]")
    if np.any(arr[:, 0] == arr[:, 1]):
        raise ValueError("neighbours must pair two different observations")
    return arr.astype(np.int64)


def _both_directions(nb: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    return np.concatenate([nb[:, 0], nb[:, 1]]), np.concatenate([nb[:, 1], nb[:, 0]])


def _check_problem(
    loss: ArrayLike, likelihood: ArrayLike, prior: ArrayLike, eps: float, neighbours: Iterable[Any]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float, NDArray[np.int64]]:
    eps = check_positive("eps", eps)
    L = np.asarray(loss, dtype=float)
    Q = np.asarray(likelihood, dtype=float)
    pi = np.asarray(prior, dtype=float)
    if L.ndim != 2 or L.size == 0:
        raise ValueError(f"loss must be a non-empty 2-D array (n_theta, n_est), got shape {L.shape}")
    if Q.ndim != 2 or Q.size == 0:
        raise ValueError(f"likelihood must be a non-empty 2-D array (n_obs, n_theta), got shape {Q.shape}")
    if pi.ndim != 1 or pi.size != L.shape[0] or Q.shape[1] != L.shape[0]:
        raise ValueError(
            f"shapes do not match: loss {L.shape} (n_theta, n_est), likelihood {Q.shape} (n_obs, n_theta), prior {pi.shape} (n_theta,)"
        )
    for name, arr in (("loss", L), ("likelihood", Q), ("prior", pi)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite")
    if np.any(Q < 0):
        raise ValueError("likelihood must be >= 0 (probabilities of observations)")
    check_distribution("prior", pi)
    nb = _neighbour_array(neighbours, Q.shape[0])
    return L, Q, pi, eps, nb


def bayes_risk(P: ArrayLike, loss: ArrayLike, likelihood: ArrayLike, prior: ArrayLike) -> float:
    """Bayes risk ``tr(Q diag(pi) L P)`` of a randomised estimator ``P`` (paper eqs. (7), (11)).

    Lets an estimator optimised for one loss be scored under another.
    """
    P = np.asarray(P, dtype=float)
    L, Q, pi, _, _ = _check_problem(loss, likelihood, prior, 1.0, [])
    if P.shape != (L.shape[1], Q.shape[0]):
        raise ValueError(f"P must have shape ({L.shape[1]}, {Q.shape[0]}), got {P.shape}")
    return float(np.sum((Q @ (pi[:, None] * L)).T * P))


def dp_log_violation(log_P: ArrayLike, eps: float, neighbours: Iterable[Any]) -> float:
    """Largest ``log P[k, i] - log P[k, i'] - eps`` over neighbours, both directions, and ``k``.

    ``<= log1p(DP_RTOL)`` means eps-DP to the tolerance; ``inf`` means some estimate has
    positive probability under ``i`` and zero under a neighbour ``i'``. Entries that are zero
    (``-inf``) under both are fine. Pass ``np.log(P)`` for a matrix in linear scale. The log ratio
    is computed by :mod:`dpbayes.core.privacy_loss` (columns of ``log_P`` are its inputs).
    """
    lp = np.asarray(log_P, dtype=float)
    nb = _neighbour_array(neighbours, lp.shape[1])
    if nb.shape[0] == 0:
        return -np.inf
    I, J = _both_directions(nb)
    return _max_log_ratio(lp.T, np.column_stack([I, J]).astype(np.intp)) - eps


def privacy_loss(log_P: ArrayLike, neighbours: Iterable[Any]) -> float:
    """Exact privacy loss ``max |log P[k, i] - log P[k, i']|`` of an estimator over neighbours.

    The worst-case loss of :func:`dpbayes.core.privacy_loss.worst_case_privacy_loss` with the estimator's
    inputs (observations) on the columns of ``log_P`` and explicit neighbour pairs.
    """
    return dp_log_violation(log_P, 0.0, neighbours)


@dataclass(frozen=True)
class DPBreaches:
    """How a randomised estimator breaks the eps-DP inequalities of paper eq. (11).

    Attributes
    ----------
    n_zero_positive : int
        Triples ``(k, i, i')``, ``(i, i')`` an unordered neighbour pair, with one of ``P[k, i]``,
        ``P[k, i']`` zero and the other positive: each gives an infinite privacy loss.
    n_violations : int
        Ordered triples with ``P[k, i] > exp(eps) P[k, i'] (1 + DP_RTOL)`` (both orders of every
        pair): broken beyond the relative tolerance of the library's DP check.
    max_violation : float
        Largest ``P[k, i] - exp(eps) P[k, i']`` over those (``<= 0`` when none breaks), in
        probability units: how far the answer is from feasible for LP (11).
    """

    n_zero_positive: int
    n_violations: int
    max_violation: float


def dp_breaches(P: ArrayLike, eps: float, neighbours: Iterable[Any]) -> DPBreaches:
    """Count the DP inequalities ``P[k, i] <= exp(eps) P[k, i']`` (paper eq. (11)) that ``P`` breaks.

    A diagnostic of a raw LP answer (paper Algorithm 1 before any repair): the linear-scale
    counterpart of :func:`dp_log_violation`, which gives the privacy loss itself.

    Parameters
    ----------
    P : array_like, shape (n_est, n_obs)
        ``P[k, i] = Pr(estimate k | observation i)``, non-negative.
    eps : float
        Privacy parameter, ``> 0``.
    neighbours : iterable of (int, int)
        Pairs of neighbouring observations; each constrains both directions.

    Returns
    -------
    DPBreaches
    """
    P = np.asarray(P, dtype=float)
    if P.ndim != 2 or np.any(P < 0) or not np.all(np.isfinite(P)):
        raise ValueError("P must be a 2-D array of finite non-negative probabilities")
    eps = check_positive("eps", eps)
    nb = _neighbour_array(neighbours, P.shape[1])
    if nb.shape[0] == 0:
        return DPBreaches(0, 0, -np.inf)
    a, b = P[:, nb[:, 0]], P[:, nb[:, 1]]
    zero_positive = int(np.sum((a == 0) != (b == 0)))
    excess = np.concatenate([a - np.exp(eps) * b, b - np.exp(eps) * a], axis=1)
    bound = np.exp(eps) * DP_RTOL * np.concatenate([b, a], axis=1)
    return DPBreaches(zero_positive, int(np.sum(excess > bound)), float(excess.max()))


def _safe_log(P: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore"):
        return np.log(P)


def _require_dp(log_P: NDArray[np.float64], eps: float, nb: NDArray[np.int64], what: str) -> float:
    excess = dp_log_violation(log_P, eps, nb)
    if excess > np.log1p(DP_RTOL):
        raise PrivacyCheckError(
            f"{what}: the estimator breaks the eps-DP inequalities (largest log-ratio exceeds eps by {excess:.3g}, "
            f"tolerance {np.log1p(DP_RTOL):.1e})"
        )
    return excess + eps


# --------------------------------------------------------------------------------------------
# The linear program (11)
# --------------------------------------------------------------------------------------------


def _upper_envelope(P: NDArray[np.float64], eps: float, I: NDArray[np.int64], J: NDArray[np.int64]) -> NDArray[np.float64]:
    """Smallest ``H >= P`` with ``H[k, i'] >= exp(-eps) H[k, i]`` for every neighbour pair.

    ``H[k, i] = max_i' P[k, i'] exp(-eps dist(i, i'))`` (graph distance), computed by relaxing the
    edges until nothing changes. It fills the entries a solver rounded to zero (the optimum has
    entries as small as ``exp(-eps n_obs)``, far below any solver tolerance) with the smallest
    values the DP inequalities allow.
    """
    H = P.copy()
    shrink = np.exp(-eps)
    for _ in range(P.shape[1] + 1):
        changed = False
        for src, dst in zip(np.concatenate([I, I[::-1]]), np.concatenate([J, J[::-1]])):
            floor = shrink * H[:, src]
            mask = H[:, dst] < floor
            if np.any(mask):
                H[mask, dst] = floor[mask]
                changed = True
        if not changed:
            return H
    return H


def _repair(P: NDArray[np.float64], eps: float, I: NDArray[np.int64], J: NDArray[np.int64]) -> tuple[NDArray[np.float64], float, float]:
    """Turn a slightly infeasible LP answer into an exactly eps-DP estimator close to it.

    Step 1: raise the entries to the DP upper envelope (:func:`_upper_envelope`) and renormalise
    the columns; the envelope's rows are DP, the renormalisation breaks the inequalities by at
    most the relative column excess ``delta``. Step 2: mix with the average column ``u`` (an
    estimator that ignores the data, hence 0-DP): ``P' = (1 - lam) P + lam u 1^T`` satisfies
    ``P'[k,i] <= e^eps P'[k,i']`` as soon as
    ``lam / (1 - lam) >= (P[k,i] - e^eps P[k,i']) / ((e^eps - 1) u_k)``; take the smallest such
    ``lam`` (with a 1 % safety factor). Returns ``(P', lam, delta)``.
    """
    H = _upper_envelope(P, eps, I, J)
    col = H.sum(axis=0)
    delta = float(col.max() - 1.0)
    H = H / col[None, :]
    u = H.mean(axis=1)
    excess = H[:, I] - np.exp(eps) * H[:, J]
    bad = excess > 0
    if not np.any(bad):
        return H, 0.0, delta
    uk = np.broadcast_to(u[:, None], excess.shape)[bad]
    ratio = excess[bad] / (np.expm1(eps) * uk)
    lam = float(np.max(ratio / (1.0 + ratio)))
    lam = min(1.0, lam * 1.01)
    return (1.0 - lam) * H + lam * u[:, None], lam, delta


def private_bayes_lp(
    loss: ArrayLike,
    likelihood: ArrayLike,
    prior: ArrayLike,
    eps: float,
    neighbours: Iterable[Any],
    solver: str | None = None,
    estimates: ArrayLike | None = None,
    require_dp: bool = True,
    solver_options: dict[str, Any] | None = None,
) -> UbappSolution:
    """Optimal eps-DP randomised Bayes estimator of a finite problem: the LP (11) of the paper.

    Minimises the Bayes risk ``tr(Q diag(pi) L P)`` over column-stochastic ``P`` subject to
    ``P[k, i] <= exp(eps) P[k, i']`` for every neighbouring pair, in both directions (paper
    eq. (11), Algorithm 1 steps 2-5), with CVXPY.

    Privacy: the returned ``P`` is eps-DP for the given neighbour relation; this is verified in
    log space to relative tolerance ``DP_RTOL`` after solving. The optimum has entries as small
    as ``exp(-eps * diameter)``, which no solver resolves (they come back as 0 or noise of the
    size of the solver tolerance), so the answer is then repaired (see ``_repair``): entries are
    raised to the smallest values the DP inequalities allow and the result is mixed with a
    data-independent column with weight ``repair_weight``. Both changes must stay below
    ``MAX_REPAIR_WEIGHT`` or :class:`PrivacyCheckError` is raised; the reported risk is that of the
    repaired ``P`` (``info["risk_before_repair"]`` keeps the solver's).

    Parameters
    ----------
    loss : array_like, shape (n_theta, n_est)
        ``L[j, k] = loss(theta_j, estimate_k)``; the estimate grid may differ from the theta grid.
    likelihood : array_like, shape (n_obs, n_theta)
        ``Q[i, j] = Pr(observation i | theta_j)``.
    prior : array_like, shape (n_theta,)
        Prior probabilities (non-negative, summing to 1).
    eps : float
        Privacy parameter, ``> 0``.
    neighbours : iterable of (int, int)
        Pairs ``(i, i')`` of neighbouring observations; each constrains both directions.
    solver : str, optional
        One of ``LP_SOLVERS``. Default: ``DEFAULT_LP_SOLVER`` (see its comment for why), then
        ``FALLBACK_LP_SOLVERS`` in turn if it fails or its answer cannot be certified; the failures
        are listed in ``info["failed_solvers"]``. A named solver is never replaced.
    estimates : array_like, shape (n_est,), optional
        Values the rows of ``P`` stand for (stored in the solution; default ``0..n_est-1``).
    require_dp : bool
        ``True`` (default): verify, repair or raise as described above. ``False`` is for
        diagnostics and benchmarks only: the solver's answer is returned as it is (clipped at 0,
        columns renormalised) with its measured ``privacy_loss`` and ``info["dp_verified"] = False``.
    solver_options : dict, optional
        Passed to ``cvxpy.Problem.solve`` (on top of the tightened defaults in ``_DEFAULT_OPTIONS``).

    Returns
    -------
    UbappSolution
    """
    cp = require("cvxpy", "dpbayes.ubapp.optimal.private_bayes_lp (the linear program)")  # slow to import: here only

    L, Q, pi, eps, nb = _check_problem(loss, likelihood, prior, eps, neighbours)
    n_est = L.shape[1]
    est = np.arange(n_est, dtype=float) if estimates is None else np.asarray(estimates, dtype=float)
    if est.shape != (n_est,):
        raise ValueError(f"estimates must have shape ({n_est},), got {est.shape}")
    if solver is not None:
        return _solve_private_lp(L, Q, pi, eps, nb, check_choice("solver", solver, LP_SOLVERS), est, require_dp, solver_options)
    failures: list[str] = []
    for name in (DEFAULT_LP_SOLVER, *FALLBACK_LP_SOLVERS):
        try:
            solution = _solve_private_lp(L, Q, pi, eps, nb, name, est, require_dp, solver_options)
        # SolverError: no answer; ValueError: cvxpy could not unpack the solver's answer (HiGHS status
        # UNKNOWN, seen at n = 100, p = 0.02, eps = 0.3 on the count LP; inputs were validated above);
        # RuntimeError: failed status, or PrivacyCheckError (an answer that cannot be certified).
        except (cp.error.SolverError, ValueError, RuntimeError) as exc:
            failures.append(f"{name}: {(str(exc).splitlines() or [type(exc).__name__])[0]}")
            continue
        if failures:
            solution.info["failed_solvers"] = failures
        return solution
    raise RuntimeError("every LP solver failed: " + "; ".join(failures))


def _solve_private_lp(
    L: NDArray[np.float64],
    Q: NDArray[np.float64],
    pi: NDArray[np.float64],
    eps: float,
    nb: NDArray[np.int64],
    solver: str,
    est: NDArray[np.float64],
    require_dp: bool,
    solver_options: dict[str, Any] | None,
) -> UbappSolution:
    """One solve of the LP (11) with a given solver, then the DP check/repair of ``private_bayes_lp``."""
    cp = require("cvxpy", "dpbayes.ubapp.optimal.private_bayes_lp (the linear program)")

    n_obs, n_est = Q.shape[0], L.shape[1]

    # C[k, i] = sum_j L[j, k] pi_j Q[i, j], so tr(Q diag(pi) L P) = sum(C * P).
    C = (Q @ (pi[:, None] * L)).T
    scale = float(np.max(np.abs(C))) or 1.0  # the entries are tiny (~1/(M n_obs)); rescale for the solver
    P_var = cp.Variable((n_est, n_obs), nonneg=True)
    constraints = [cp.sum(P_var, axis=0) == 1]
    I, J = _both_directions(nb)
    if I.size:
        constraints.append(P_var[:, I] <= np.exp(eps) * P_var[:, J])
    problem = cp.Problem(cp.Minimize(cp.sum(cp.multiply(C / scale, P_var))), constraints)
    t0 = time.perf_counter()
    options = dict(_DEFAULT_OPTIONS.get(solver, {}))
    options.update(solver_options or {})
    problem.solve(solver=solver, **options)
    seconds = time.perf_counter() - t0
    if problem.status not in ("optimal", "optimal_inaccurate") or P_var.value is None:
        raise RuntimeError(f"LP solver {solver} failed: status {problem.status}")

    P = np.clip(np.asarray(P_var.value, dtype=float), 0.0, None)
    P /= P.sum(axis=0, keepdims=True)
    risk_raw = float(np.sum(C * P))
    lam, delta = 0.0, 0.0
    if not require_dp:
        log_P = _safe_log(P)
        return UbappSolution(
            P=P, risk=risk_raw, solver=solver, solve_seconds=seconds, estimates=est, eps=eps,
            privacy_loss=privacy_loss(log_P, nb) if I.size else 0.0, log_P=log_P,
            info={"status": problem.status, "dp_verified": False, "solver_objective": float(problem.value) * scale},
        )
    if I.size and dp_log_violation(_safe_log(P), eps, nb) > np.log1p(DP_RTOL):
        P, lam, delta = _repair(P, eps, I, J)
        if lam > MAX_REPAIR_WEIGHT or delta > MAX_REPAIR_WEIGHT:
            raise PrivacyCheckError(
                f"LP solver {solver} returned a solution that breaks the DP inequalities; repairing it needs "
                f"a mixture weight {lam:.3g} and adds mass {delta:.3g} (limit {MAX_REPAIR_WEIGHT:g}). Use solver='HIGHS'."
            )
    log_P = _safe_log(P)
    loss_eps = _require_dp(log_P, eps, nb, f"LP solver {solver}") if I.size else 0.0
    return UbappSolution(
        P=P,
        risk=float(np.sum(C * P)),
        solver=solver,
        solve_seconds=seconds,
        estimates=est,
        eps=eps,
        privacy_loss=loss_eps,
        repair_weight=lam,
        log_P=log_P,
        info={"status": problem.status, "dp_verified": True, "risk_before_repair": risk_raw, "envelope_mass": delta, "solver_objective": float(problem.value) * scale},
    )


# --------------------------------------------------------------------------------------------
# The exact solver for a count: truncated geometric mechanism + Bayes remap. The mechanism's law
# (truncated_geometric_logmatrix) and its O(n) kernel sums (geometric_kernel_sums) are written
# once, in dpbayes.core.geometric, and re-exported here.
# --------------------------------------------------------------------------------------------

#: Largest count ``n`` (or ``K``) of the O(n) solvers: about 0.2 kB of working memory per count
#: (a few dozen float64 vectors of length ``n + 1``), so 10**8 counts need ~ 20 GB. Checked
#: before anything is allocated.
MAX_COUNT = 10**8
#: Largest number of entries of a dense matrix this module builds on request (the reference
#: solvers and the lazily built ``P`` / ``log_P`` of :func:`ubapp_exact`): 2.5e8 float64 = 2 GB.
MAX_DENSE_ENTRIES = 250_000_000
#: Largest ``len(theta_grid)`` of :func:`ubapp_exact` (the grid is looped over in blocks).
MAX_GRID = 10**6
#: Largest ``(K + 1) * len(theta_grid)``: the O(K M) work of the grid solver (~ 1 minute at 1e10).
MAX_GRID_WORK = 10**10
_BLOCK_ENTRIES = 1 << 20  # entries of one (K + 1) x block slice of the grid solver (8 MB)


def check_dense_size(what: str, rows: int, cols: int) -> None:
    """Refuse a dense ``rows x cols`` float64 matrix above :data:`MAX_DENSE_ENTRIES` entries."""
    if rows * cols > MAX_DENSE_ENTRIES:
        raise ValueError(
            f"{what} would be a dense {rows} x {cols} matrix ({rows * cols * 8 / 1e9:.3g} GB of float64), "
            f"above the limit of {MAX_DENSE_ENTRIES} entries (dpbayes.ubapp.optimal.MAX_DENSE_ENTRIES)"
        )


def _log_poch(x: NDArray[np.float64], d: float) -> NDArray[np.float64]:
    """``log(Gamma(x + d) / Gamma(x))`` for ``x >= 1`` and ``-1 < d <= 60``, in chunks of at most 15."""
    out = np.zeros_like(x)
    first = d - 15.0 * np.floor(max(d, 0.0) / 15.0)  # the part that is not a whole chunk (may be < 0)
    with np.errstate(over="ignore"):
        out += np.log(special.poch(x, first))
        shift = first
        while shift < d - 1e-12:
            out += np.log(special.poch(x + shift, 15.0))
            shift += 15.0
    return out


def betabinom_logpmf(y: ArrayLike, n: int, a: float, b: float) -> NDArray[np.float64]:
    """``log P(y)`` of the ``BetaBinomial(n, a, b)`` law, accurate to a few ulps for large ``n``.

    ``scipy.stats.betabinom`` subtracts log-gammas of size ``n log n``, which loses digits as ``n``
    grows (its pmf sums to ``1 + 2e-11`` at ``n = 10**4`` and ``1 - 1.3e-8`` at ``10**7`` for
    ``Beta(2, 5)``). Here the pmf is written as ratios of gamma functions whose arguments differ by
    ``a - 1``, ``b - 1`` and ``a + b - 1``, each a Pochhammer symbol (``scipy.special.poch``):
    ``P(y) = poch(y + 1, a - 1) poch(n - y + 1, b - 1) / (poch(n + 1, a + b - 1) B(a, b))``. Used
    for ``a, b <= 30``; larger shapes fall back to :mod:`scipy.stats` (accuracy ~ ``u n log n``).
    """
    y = np.asarray(y, dtype=float)
    if max(a, b) > 30.0:
        return np.asarray(stats.betabinom.logpmf(y, n, a, b), dtype=float)
    return (
        _log_poch(y + 1.0, a - 1.0) + _log_poch(n - y + 1.0, b - 1.0)
        - _log_poch(np.array([n + 1.0]), a + b - 1.0)[0] - special.betaln(a, b)
    )


def beta_posterior_mean_remap(
    n: int, eps: float, a: float, b: float, *, with_p_z: bool = True
) -> tuple[NDArray[np.float64], float, NDArray[np.float64] | None]:
    """Posterior mean remap of the truncated geometric mechanism under a ``Beta(a, b)`` prior, O(n).

    The count ``y`` of ``n`` Bernoulli(theta) trials is Beta-binomial a priori; given the noisy count
    ``z``, ``E[theta | z] = (a + E[y | z]) / (a + b + n)``, and the Bayes risk is
    ``sum_y P(y) Var(theta | y) + sum_z P(z) Var(y | z) / (a + b + n)^2`` (the continuous-theta
    limit of UBaPP, paper Algorithm 1 step 5). ``P(z)``, ``E[y - z | z]`` and ``E[(y - z)^2 | z]``
    come from :func:`geometric_kernel_sums` on the Beta-binomial weights (scaled by their largest
    value so that nothing overflows). Rows whose scaled ``P(z)`` is below ``1e-280`` (a prior so
    concentrated that the weights underflow far from its mass) get ``E[y | z]`` from cumulative
    sums in log space instead (relative accuracy about ``eps n`` ulps there; their share of the
    risk is below ``1e-280``).

    Returns
    -------
    estimates : ndarray, shape (n + 1,)
        ``E[theta | z]`` for ``z = 0..n``.
    risk : float
        Exact Bayes risk (mean squared error) of the remapped mechanism.
    p_z : ndarray, shape (n + 1,), or None
        ``P(z)``, the law of the noisy count (``None`` with ``with_p_z=False``, which saves its array).
    """
    n = check_int("n", n, minimum=1, maximum=MAX_COUNT)
    eps = check_positive("eps", eps)
    a, b = check_positive("a", a), check_positive("b", b)
    abn = a + b + n
    # chunk by chunk (geometric_kernel_sums_by_chunk: the same bits as the one-array sums), so that
    # only the weights, the estimates and P(z) are arrays of n + 1 numbers
    w = np.empty(n + 1)
    for lo in range(0, n + 1, KERNEL_CHUNK):
        hi = min(lo + KERNEL_CHUNK, n + 1)
        w[lo:hi] = betabinom_logpmf(np.arange(lo, hi, dtype=float), n, a, b)
    top = float(np.max(w))
    np.subtract(w, top, out=w)
    with np.errstate(under="ignore"):
        np.exp(w, out=w)
    estimates = np.empty(n + 1)
    p_z = np.empty(n + 1) if with_p_z else None
    weighted_var, spread_sum, underflow = 0.0, 0.0, False
    for lo, hi, (s0, s1, s2) in geometric_kernel_sums_by_chunk(lambda lo, hi: w[lo:hi], n, eps, 2):
        y = np.arange(lo, hi, dtype=float)
        post_mean = (a + y) / abn
        post_var = post_mean * (b + n - y) / (abn * (abn + 1.0))
        ok = s0 > 1e-280
        shift = np.zeros(hi - lo)
        shift[ok] = s1[ok] / s0[ok]
        underflow |= not np.all(ok)
        estimates[lo:hi] = (a + y + shift) / abn
        if p_z is not None:
            p_z[lo:hi] = np.exp(top) * s0
        weighted_var += float(np.sum(w[lo:hi] * post_var))
        spread_sum += float(np.sum(np.where(ok, np.maximum(s2 - s1 * shift, 0.0), 0.0)))
    if underflow:  # E[y | z] in log space where P(z) underflows (their share of the risk is below 1e-280)
        y = np.arange(n + 1, dtype=float)
        log_w = betabinom_logpmf(y, n, a, b)
        bad = np.zeros(n + 1, dtype=bool)
        for lo, hi, (s0,) in geometric_kernel_sums_by_chunk(lambda lo, hi: w[lo:hi], n, eps, 0):
            bad[lo:hi] = ~(s0 > 1e-280)
        estimates[bad] = (a + y[bad] + _log_space_mean_offset(log_w, eps)[bad]) / abn
    risk = float(np.exp(top) * (weighted_var + spread_sum / abn**2))
    return estimates, risk, p_z


def _log_space_mean_offset(log_w: NDArray[np.float64], eps: float) -> NDArray[np.float64]:
    """``E[y | z] - z`` for every ``z`` from log-space sums (the underflow fallback), centred at ``z``.

    With ``a = e^-eps`` and prior weights ``w = exp(log_w)``: ``S0(z) = sum_y w_y a^|y - z|`` and the offset
    ``(R1(z) - L1(z)) / S0(z)``, where ``L1(z) = sum_(y < z) w_y a^(z - y) (z - y)`` and ``R1`` its mirror image.
    Each one-sided sum is a kernel sum of the one before (``L1(z) = sum_(y < z) L0(y) a^(z - y)`` with
    ``L0(z) = sum_(y <= z) w_y a^(z - y)``), so all are cumulative log-sum-exps. Centring matters: forming
    ``E[y | z]`` and subtracting ``z`` loses the offset (about ``1/eps`` counts) against ``z`` itself (up to ``n``),
    1e-3 counts at ``n = 10^6`` where the log sums carry a relative error of about 1e-9.
    """
    n = log_w.size - 1
    y = np.arange(n + 1, dtype=float)
    lw = np.asarray(log_w, dtype=float)

    def left(lv: NDArray[np.float64]) -> NDArray[np.float64]:
        """``log sum_(y' <= z) exp(lv[y']) a^(z - y')`` for every ``z``."""
        return np.logaddexp.accumulate(lv + eps * y) - eps * y

    def strictly_left(lv: NDArray[np.float64]) -> NDArray[np.float64]:
        """``log sum_(y' < z) exp(lv[y']) a^(z - y')``: ``a`` times ``left`` at ``z - 1``."""
        return np.concatenate(([-np.inf], left(lv)[:-1] - eps))

    with np.errstate(invalid="ignore"):
        l0 = left(lw)
        l1 = strictly_left(l0)
        r0_strict = strictly_left(lw[::-1])[::-1]  # sum over y' > z
        r1 = strictly_left(left(lw[::-1]))[::-1]
        s0 = np.logaddexp(l0, r0_strict)
        offset = np.exp(r1 - s0) - np.exp(l1 - s0)
    return np.where(np.isfinite(offset), offset, 0.0)


def _remap_exact(
    logG: NDArray[np.float64], expected_loss: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64], float]:
    """Bayes remap: noisy output ``z`` -> estimate ``k`` of least expected loss.

    Returns the remap, ``P`` and ``log P`` (``log P[k] = logsumexp of log G[z]`` over the ``z`` mapped
    to ``k``, vectorised with a per-row maximum so that nothing underflows) and the risk.
    """
    choice = np.argmin(expected_loss, axis=1)
    risk = float(np.sum(expected_loss[np.arange(expected_loss.shape[0]), choice]))
    P, log_P = _group_rows(logG, choice, expected_loss.shape[1])
    return choice, P, log_P, risk


def private_bayes_exact_count(
    loss: ArrayLike,
    likelihood: ArrayLike,
    prior: ArrayLike,
    eps: float,
    estimates: ArrayLike | None = None,
) -> UbappSolution:
    """Optimal eps-DP Bayes estimator when the observation is a count with neighbours ``y, y+1``.

    Same problem as :func:`private_bayes_lp` with ``neighbours = chain_neighbours(n_obs)``,
    solved without an LP: release ``y`` through the truncated geometric mechanism on
    ``{0..n_obs-1}`` (:func:`truncated_geometric_logmatrix`) and report, for each noisy count
    ``z``, the estimate ``k`` minimising ``sum_y G[z, y] sum_j Q[y, j] pi_j L[j, k]`` (the
    posterior expected loss given ``z``, up to the factor ``Pr(z)``). See the chapter for the
    argument (Ghosh, Roughgarden & Sundararajan 2009) and the numerical comparison with the LP.

    Optimality caveat: this equals the LP optimum when the likelihood has a monotone likelihood
    ratio in (y, theta) and the loss increases in ``|theta - t|`` (verified numerically, not
    proved); for arbitrary ``loss`` / ``likelihood`` matrices it is a feasible eps-DP estimator whose
    risk can exceed the optimum by a few per cent. Use :func:`private_bayes_lp` to be sure.

    Privacy: eps-DP for neighbours ``y, y + 1`` (post-processing of the geometric mechanism),
    verified on the returned ``log_P``.
    """
    L, Q, pi, eps, _ = _check_problem(loss, likelihood, prior, eps, [])
    n_obs, n_est = Q.shape[0], L.shape[1]
    est = np.arange(n_est, dtype=float) if estimates is None else np.asarray(estimates, dtype=float)
    t0 = time.perf_counter()
    logG = truncated_geometric_logmatrix(n_obs - 1, eps)
    expected = np.exp(logG) @ (Q @ (pi[:, None] * L))  # (n_z, n_est)
    choice, P, log_P, risk = _remap_exact(logG, expected)
    seconds = time.perf_counter() - t0
    nb = chain_neighbours(n_obs)
    ploss = _require_dp(log_P, eps, nb, "exact solver") if n_obs > 1 else 0.0
    return UbappSolution(
        P=P, risk=risk, solver="exact", solve_seconds=seconds, estimates=est, eps=eps,
        privacy_loss=ploss, log_P=log_P, info={"remap": choice},
    )


def ubapp_lp(
    K: int,
    eps: float,
    theta_grid: ArrayLike,
    prior: ArrayLike | None = None,
    solver: str | None = None,
    loss: str = "squared",
    require_dp: bool = True,
) -> UbappSolution:
    """UBaPP for the paper's Bernoulli example by the LP (11) (paper Sections 5.1 and 5.3).

    ``K`` Bernoulli(theta) trials summarised by their count ``y in {0..K}`` (neighbours ``y`` and
    ``y + 1``), parameter and estimates on ``theta_grid`` (square ``L``), prior uniform on the grid
    unless given, squared loss unless ``loss="absolute"``. With squared loss ``.risk`` is the
    Bayes MSE of Algorithm 1 step 5. Privacy: see :func:`private_bayes_lp`.
    """
    K = check_int("K", K, minimum=1)
    eps = check_positive("eps", eps)
    theta = check_grid("theta_grid", theta_grid, low=0.0, high=1.0)
    check_choice("loss", loss, LOSSES)
    from dpbayes.core.losses import loss_matrix

    pi = uniform_prior(theta) if prior is None else np.asarray(prior, dtype=float)
    return private_bayes_lp(
        loss_matrix(loss, theta), binomial_likelihood(K, theta), pi, eps, chain_neighbours(K + 1), solver=solver, estimates=theta,
        require_dp=require_dp,
    )


def _group_rows(
    logG: NDArray[np.float64], choice: NDArray[np.int64], n_est: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``P[k] = sum of G[z]`` over the ``z`` with ``choice[z] = k``, and ``log P`` (log space, no underflow)."""
    n_obs = logG.shape[1]
    used, group = np.unique(choice, return_inverse=True)
    top = np.full((used.size, n_obs), -np.inf)
    np.maximum.at(top, group, logG)
    total = np.zeros((used.size, n_obs))
    np.add.at(total, group, np.exp(logG - top[group]))
    log_P = np.full((n_est, n_obs), -np.inf)
    log_P[used] = top + np.log(total)
    P = np.zeros((n_est, n_obs))
    P[used] = np.exp(log_P[used])
    return P, log_P


class _LazyExactSolution(UbappSolution):
    """A :class:`UbappSolution` of :func:`ubapp_exact` whose dense parts are built on first access.

    ``P`` and ``log_P`` (``n_est x (K + 1)``) and ``privacy_loss`` (checked on ``log_P``) are
    computed from the remap when first read, so that a solution used for its risk and remap
    costs ``O(K + M)`` memory. Reading them is refused above :data:`MAX_DENSE_ENTRIES` entries.
    """

    _dense_spec: tuple[Any, ...]
    _dense: tuple[NDArray[np.float64], NDArray[np.float64]] | None
    _privacy_loss: float | None

    def __init__(self, *, dense_spec: tuple[Any, ...], **fields: Any) -> None:
        fields.setdefault("repair_weight", 0.0)
        fields.setdefault("info", {})
        for name, value in fields.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_dense_spec", dense_spec)
        object.__setattr__(self, "_dense", None)
        object.__setattr__(self, "_privacy_loss", None)

    def _build(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        if self._dense is None:
            K, eps, choice, n_est = self._dense_spec
            check_dense_size("P of ubapp_exact", n_est, K + 1)
            check_dense_size("G of ubapp_exact", K + 1, K + 1)
            logG = truncated_geometric_logmatrix(K, eps)
            dense = (np.exp(logG), logG) if choice is None else _group_rows(logG, choice, n_est)
            object.__setattr__(self, "_dense", dense)
        assert self._dense is not None
        return self._dense

    @property
    def P(self) -> NDArray[np.float64]:
        return self._build()[0]

    @property
    def log_P(self) -> NDArray[np.float64]:
        return self._build()[1]

    @property
    def privacy_loss(self) -> float:
        if self._privacy_loss is None:
            K, eps = self._dense_spec[0], self._dense_spec[1]
            what = "exact continuous solver" if self.solver == "exact-continuous" else "exact solver"
            object.__setattr__(self, "_privacy_loss", _require_dp(self.log_P, eps, chain_neighbours(K + 1), what))
        assert self._privacy_loss is not None
        return self._privacy_loss

    def __repr__(self) -> str:
        return (
            f"UbappSolution(risk={self.risk!r}, solver={self.solver!r}, eps={self.eps!r}, "
            f"n_est={self.estimates.size}, n_obs={self._dense_spec[0] + 1}, P=<built on first access>)"
        )

    def __reduce__(self) -> Any:
        fields = {name: getattr(self, name) for name in ("risk", "solver", "solve_seconds", "estimates", "eps", "info")}
        return (_rebuild_lazy, (self._dense_spec, fields))


def _rebuild_lazy(dense_spec: tuple[Any, ...], fields: dict[str, Any]) -> _LazyExactSolution:
    return _LazyExactSolution(dense_spec=dense_spec, **fields)


def _grid_remap(
    K: int, eps: float, theta: NDArray[np.float64], pi: NDArray[np.float64], loss: str
) -> tuple[NDArray[np.int64], float]:
    """Bayes remap ``z -> k`` on the grid and its risk, in O(K M) time and O(K + M) memory.

    ``W[j, z] = pi_j P(z | theta_j)`` is built in blocks of grid points: the binomial pmf of each
    ``theta_j`` filtered by the truncated geometric kernel (:func:`geometric_kernel_sums`). Squared
    loss: the sums ``s_r[z] = sum_j W[j, z] theta_j^r`` give the posterior mean and the expected
    loss ``s0 t^2 - 2 s1 t + s2`` of the two grid points around it. Absolute loss: a second pass
    finds, for each ``z``, the first grid point whose posterior CDF reaches 1/2 (the weighted
    median, the minimiser of the piecewise-linear expected loss).
    """
    n_obs, M = K + 1, theta.size
    block = max(1, _BLOCK_ENTRIES // n_obs)
    y = np.arange(n_obs, dtype=float)[None, :]
    log_choose = special.gammaln(K + 1.0) - special.gammaln(y + 1.0) - special.gammaln(K - y + 1.0)

    with np.errstate(divide="ignore"):
        log_t, log_1mt = np.log(theta), np.log1p(-theta)

    def weights(j0: int, j1: int) -> NDArray[np.float64]:
        # binomial pmf of each grid point (rows); theta = 0 and 1 are point masses at y = 0 and K
        inner = (theta[j0:j1] > 0.0) & (theta[j0:j1] < 1.0)
        with np.errstate(invalid="ignore"):
            log_q = log_choose + y * log_t[j0:j1, None] + (K - y) * log_1mt[j0:j1, None]
        Q = np.exp(log_q, where=inner[:, None], out=np.zeros((j1 - j0, n_obs)))
        Q[theta[j0:j1] == 0.0, 0] = 1.0
        Q[theta[j0:j1] == 1.0, K] = 1.0
        return geometric_kernel_sums(Q, eps, 0, axis=1)[0] * pi[j0:j1, None]

    s0, s1, s2 = np.zeros(n_obs), np.zeros(n_obs), np.zeros(n_obs)
    for j0 in range(0, M, block):
        W = weights(j0, min(M, j0 + block))
        th = theta[j0 : j0 + block]
        s0 += W.sum(axis=0)
        s1 += th @ W
        if loss == "squared":
            s2 += (th * th) @ W
    if loss == "squared":
        mean = s1 / s0
        hi = np.clip(np.searchsorted(theta, mean), 0, M - 1)
        lo = np.maximum(hi - 1, 0)
        e_lo = s0 * theta[lo] ** 2 - 2.0 * s1 * theta[lo] + s2
        e_hi = s0 * theta[hi] ** 2 - 2.0 * s1 * theta[hi] + s2
        take_hi = e_hi < e_lo
        return np.where(take_hi, hi, lo).astype(np.int64), float(np.sum(np.where(take_hi, e_hi, e_lo)))
    # absolute loss: E[z, k] = theta_k (2 C_k - s0) - (2 CT_k - s1) with C_k, CT_k the sums of W and
    # W theta over j <= k; it decreases while 2 C_k < s0, so the minimiser is the first k with 2 C_k >= s0
    choice = np.full(n_obs, M - 1, dtype=np.int64)
    c_at, ct_at = s0.copy(), s1.copy()
    open_ = np.ones(n_obs, dtype=bool)
    C, CT = np.zeros(n_obs), np.zeros(n_obs)
    for j0 in range(0, M, block):
        cols = np.nonzero(open_)[0]
        if cols.size == 0:
            break
        j1 = min(M, j0 + block)
        W = weights(j0, j1)[:, cols]
        cw = C[cols] + np.cumsum(W, axis=0)
        cwt = CT[cols] + np.cumsum(W * theta[j0:j1, None], axis=0)
        reached = 2.0 * cw >= s0[cols]
        hit = reached.any(axis=0)
        first = np.argmax(reached, axis=0)[hit]
        z = cols[hit]
        choice[z] = j0 + first
        c_at[z], ct_at[z] = cw[first, hit], cwt[first, hit]
        open_[z] = False
        C[cols], CT[cols] = cw[-1], cwt[-1]
    t = theta[choice]
    return choice, float(np.sum(t * (2.0 * c_at - s0) - (2.0 * ct_at - s1)))


def _continuous_limit_prior(loss: str, prior: Any, beta_prior: tuple[float, float]) -> tuple[float, float]:
    """The Beta prior's parameters of the continuous-theta limit (``theta_grid=None``), checked."""
    if loss != "squared":
        raise ValueError("loss must be 'squared' when theta_grid is None (continuous-theta limit)")
    if prior is not None:
        raise ValueError("prior must be None when theta_grid is None; use beta_prior=(a, b)")
    return check_positive("beta_prior[0]", beta_prior[0]), check_positive("beta_prior[1]", beta_prior[1])


def ubapp_exact(
    K: int,
    eps: float,
    theta_grid: ArrayLike | None = None,
    prior: ArrayLike | None = None,
    loss: str = "squared",
    beta_prior: tuple[float, float] = (1.0, 1.0),
) -> UbappSolution:
    """UBaPP for the Bernoulli example without an LP: geometric mechanism + Bayes remap.

    With ``theta_grid`` this solves the same problem as :func:`ubapp_lp` (same grid, prior and
    loss) in ``O(K M)`` time and ``O(K + M)`` memory (``M = len(theta_grid)``; the private ``_grid_remap``).
    With ``theta_grid=None`` it gives the continuous-theta limit for squared loss and a
    ``Beta(*beta_prior)`` prior (uniform by default) in ``O(K)``: the estimate for noisy count ``z``
    is the posterior mean ``E[theta | z]`` under the Beta-binomial mixture
    (:func:`beta_posterior_mean_remap`), ``estimates[z] = E[theta | z]`` and ``P`` is the geometric
    mechanism itself. Neither builds the ``(K + 1)^2`` matrix: ``P``, ``log_P`` and
    ``privacy_loss`` are computed when first read (then ``O(K (K + M))``, refused above
    :data:`MAX_DENSE_ENTRIES` entries). :func:`ubapp_exact_dense` is the dense reference.

    Sizes are checked before anything is allocated: ``K <= MAX_COUNT``, ``M <= MAX_GRID``,
    ``(K + 1) M <= MAX_GRID_WORK``.

    Privacy: eps-DP for neighbouring counts (post-processing of the truncated geometric
    mechanism); ``privacy_loss`` verifies it on ``log_P`` when read.
    """
    K = check_int("K", K, minimum=1, maximum=MAX_COUNT)
    eps = check_positive("eps", eps)
    check_choice("loss", loss, LOSSES)
    t0 = time.perf_counter()
    if theta_grid is None:
        a, b = _continuous_limit_prior(loss, prior, beta_prior)
        m_z, risk, p_z = beta_posterior_mean_remap(K, eps, a, b)
        return _LazyExactSolution(
            dense_spec=(K, eps, None, K + 1), risk=risk, solver="exact-continuous",
            solve_seconds=time.perf_counter() - t0, estimates=m_z, eps=eps, info={"p_z": p_z},
        )
    if np.size(theta_grid) > MAX_GRID:
        raise ValueError(f"theta_grid must have at most {MAX_GRID} points (dpbayes.ubapp.optimal.MAX_GRID), got {np.size(theta_grid)}")
    if (K + 1) * np.size(theta_grid) > MAX_GRID_WORK:
        raise ValueError(
            f"(K + 1) * len(theta_grid) must be <= {MAX_GRID_WORK:.0e} (dpbayes.ubapp.optimal.MAX_GRID_WORK: the solver's "
            f"O(K M) work), got {(K + 1) * np.size(theta_grid):.3g}"
        )
    theta = check_grid("theta_grid", theta_grid, low=0.0, high=1.0)
    pi = uniform_prior(theta) if prior is None else check_distribution("prior", prior, shape=theta.shape)
    choice, risk = _grid_remap(K, eps, theta, pi, loss)
    return _LazyExactSolution(
        dense_spec=(K, eps, choice, theta.size), risk=risk, solver="exact",
        solve_seconds=time.perf_counter() - t0, estimates=theta, eps=eps, info={"remap": choice},
    )


def ubapp_exact_dense(
    K: int,
    eps: float,
    theta_grid: ArrayLike | None = None,
    prior: ArrayLike | None = None,
    loss: str = "squared",
    beta_prior: tuple[float, float] = (1.0, 1.0),
) -> UbappSolution:
    """Dense reference of :func:`ubapp_exact`: the same solution from the ``(K + 1)^2`` matrix ``G``.

    ``O(K^2 + K M)`` time and ``O(K^2 + K M)`` memory; kept as the reference the tests compare
    the O(K M) solver with (and refused above :data:`MAX_DENSE_ENTRIES` entries).

    With ``theta_grid`` this solves the same problem as :func:`ubapp_lp` (same grid, prior and
    loss) in ``O(K^2 + K M)`` operations. With ``theta_grid=None`` it gives the continuous-theta
    limit for squared loss and a ``Beta(*beta_prior)`` prior (uniform by default): the estimate
    for noisy count ``z`` is the posterior mean ``E[theta | z]`` under the Beta-binomial mixture,
    ``P`` is the geometric mechanism itself and ``estimates[z] = E[theta | z]``.

    Privacy: eps-DP for neighbouring counts (post-processing of the truncated geometric
    mechanism), verified on the returned ``log_P``.
    """
    K = check_int("K", K, minimum=1)
    eps = check_positive("eps", eps)
    check_choice("loss", loss, LOSSES)
    check_dense_size("ubapp_exact_dense: G", K + 1, K + 1)
    if theta_grid is not None:
        check_dense_size("ubapp_exact_dense: P", K + 1, np.size(theta_grid))
    t0 = time.perf_counter()
    logG = truncated_geometric_logmatrix(K, eps)
    G = np.exp(logG)
    nb = chain_neighbours(K + 1)
    if theta_grid is None:
        a, b = _continuous_limit_prior(loss, prior, beta_prior)
        y = np.arange(K + 1)
        p_y = stats.betabinom.pmf(y, K, a, b)
        post_mean = (a + y) / (a + b + K)
        post_var = post_mean * (b + K - y) / ((a + b + K) * (a + b + K + 1))
        joint = G * p_y[None, :]  # Pr(z, y)
        p_z = joint.sum(axis=1)
        m_z = (joint @ post_mean) / p_z
        # E[(theta - m_z)^2] = sum_{z,y} Pr(z, y) (Var(theta|y) + (E[theta|y] - m_z)^2)
        risk = float(np.sum(joint * (post_var[None, :] + (post_mean[None, :] - m_z[:, None]) ** 2)))
        seconds = time.perf_counter() - t0
        ploss = _require_dp(logG, eps, nb, "exact continuous solver")
        return UbappSolution(
            P=G, risk=risk, solver="exact-continuous", solve_seconds=seconds, estimates=m_z, eps=eps,
            privacy_loss=ploss, log_P=logG, info={"p_z": p_z},
        )
    theta = check_grid("theta_grid", theta_grid, low=0.0, high=1.0)
    pi = uniform_prior(theta) if prior is None else check_distribution("prior", prior, shape=theta.shape)
    Q = binomial_likelihood(K, theta)
    weights = G @ (Q * pi[None, :])  # weights[z, j] = Pr(z, theta_j)
    expected = expected_loss_matrix(weights, theta, theta, loss)
    choice, P, log_P, risk = _remap_exact(logG, expected)
    seconds = time.perf_counter() - t0
    ploss = _require_dp(log_P, eps, nb, "exact solver")
    return UbappSolution(
        P=P, risk=risk, solver="exact", solve_seconds=seconds, estimates=theta, eps=eps,
        privacy_loss=ploss, log_P=log_P, info={"remap": choice},
    )
