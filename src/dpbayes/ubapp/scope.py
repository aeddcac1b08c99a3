"""Where the exact solver's optimality holds (chapter 1, beyond the paper).

Source: B. Lakshminarayanan and C. R. Rojas, "A Unified Approach to Differentially Private Bayes
Point Estimation" (IFAC World Congress 2023), Section 4 (the reduction of the data set to its count,
eq. (8), and Definition 1's neighbour relation: one record replaced). The checks of what the optimum
of :mod:`dpbayes.ubapp.optimal` depends on:

* the reduction: the LP over all ``2^K`` binary data sets with Hamming neighbours
  (:func:`ubapp_full_data_lp`) against the LP on the count;
* the neighbour relation: the exact privacy loss of the count's optimal estimator when a record is
  added or removed (:func:`add_remove_privacy_loss`), and an eps-DP release under add/remove
  neighbours with the size private (:func:`add_remove_release_mse`);
* the parameter grid (:func:`grid_deficit`) and targets ``g(theta)`` other than ``theta``
  (:func:`target_scope_gap`, :func:`largest_scope_gap`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from dpbayes.core.losses import LOSSES
from dpbayes.ubapp.optimal import (
    MAX_COUNT,
    MAX_GRID,
    UbappSolution,
    _safe_log,
    binomial_likelihood,
    chain_neighbours,
    private_bayes_exact_count,
    private_bayes_lp,
    ubapp_exact,
    uniform_prior,
)
from dpbayes.core.validation import check_choice, check_grid, check_int, check_positive

__all__ = [
    "MAX_FULL_DATA_K",
    "hamming_neighbours",
    "binary_data_likelihood",
    "ubapp_full_data_lp",
    "neighbour_tv",
    "add_remove_privacy_loss",
    "add_remove_release_mse",
    "grid_deficit",
    "SCOPE_TARGETS",
    "target_scope_gap",
    "largest_scope_gap",
]

#: Largest number of records of the full-data LP (its observations are the ``2^K`` binary vectors).
MAX_FULL_DATA_K = 10


def hamming_neighbours(K: int) -> NDArray[np.int64]:
    """Neighbour pairs of the ``2^K`` binary data sets of ``K`` records (paper Definition 1: one record replaced).

    Data set ``i`` has record ``r`` equal to bit ``r`` of ``i``; pairs ``(i, i xor 2^r)`` with ``i < i xor 2^r``.
    """
    K = check_int("K", K, minimum=1, maximum=MAX_FULL_DATA_K)
    i = np.arange(2**K)
    pairs = [np.stack([i, i ^ (1 << r)], axis=1) for r in range(K)]
    nb = np.concatenate(pairs)
    return nb[nb[:, 0] < nb[:, 1]]


def binary_data_likelihood(K: int, theta_grid: ArrayLike) -> NDArray[np.float64]:
    """``Q[i, j] = theta_j^(s_i) (1 - theta_j)^(K - s_i)`` for the ``2^K`` binary data sets, ``s_i`` their count of ones."""
    K = check_int("K", K, minimum=1, maximum=MAX_FULL_DATA_K)
    theta = check_grid("theta_grid", theta_grid, low=0.0, high=1.0)
    s = np.array([bin(i).count("1") for i in range(2**K)], dtype=float)[:, None]
    return np.exp(special.xlogy(s, theta[None, :]) + special.xlog1py(K - s, -theta[None, :]))


def ubapp_full_data_lp(K: int, eps: float, theta_grid: ArrayLike, solver: str | None = None, loss: str = "squared") -> UbappSolution:
    """LP (9)/(11) over the full data ``x in {0, 1}^K`` with Hamming neighbours, not over the count.

    The paper (Section 4, eq. (8)) writes the DP constraint on the sufficient statistic ``y = S(x)``
    and optimises over estimators of ``y`` only. This LP optimises over every eps-DP estimator of
    ``x`` (uniform prior on ``theta_grid``, estimates on the same grid), so its optimum is at most
    :func:`~dpbayes.ubapp.optimal.ubapp_lp`'s; equality is the reduction. ``K <= MAX_FULL_DATA_K``.
    """
    from dpbayes.core.losses import loss_matrix

    theta = check_grid("theta_grid", theta_grid, low=0.0, high=1.0)
    check_choice("loss", loss, LOSSES)
    Q = binary_data_likelihood(K, theta)
    return private_bayes_lp(loss_matrix(loss, theta), Q, uniform_prior(theta), eps, hamming_neighbours(K),
                            solver=solver, estimates=theta)


def neighbour_tv(P: ArrayLike) -> NDArray[np.float64]:
    """Total-variation distance between the estimate's laws for neighbouring counts ``y`` and ``y + 1``.

    ``P[k, y]`` as in :class:`~dpbayes.ubapp.optimal.UbappSolution` (columns are laws). An eps-DP estimator has every value at most
    ``tanh(eps/2)``; a value of 1 means the two counts are told apart with certainty.
    """
    P = np.asarray(P, dtype=float)
    if P.ndim != 2 or P.shape[1] < 2:
        raise ValueError(f"P must be a 2-d array with at least 2 columns, got shape {P.shape}")
    return 0.5 * np.abs(np.diff(P, axis=1)).sum(axis=0)


def add_remove_privacy_loss(K: int, eps: float, theta_grid: ArrayLike | None = None) -> float:
    """Privacy loss of UBaPP under add/remove neighbours when the number of records is private.

    The chapter's guarantee is for one record *replaced* with ``K`` public (the count moves by one, ``K``
    stays). If instead a record may be added or removed and ``K`` is the data set's own size, UBaPP is
    run with ``K`` for one data set and ``K + 1`` for its neighbour, whose count is ``y`` or ``y + 1``.
    Returns the largest ``|log Pr(t | K, y) - log Pr(t | K + 1, y')|`` over those pairs and outputs ``t``
    (:func:`~dpbayes.ubapp.optimal.ubapp_exact`, on ``theta_grid`` or in the continuous limit): ``inf`` when some output is possible
    for one data set and impossible for its neighbour, so that no eps protects it.
    """
    K = check_int("K", K, minimum=1, maximum=MAX_COUNT - 1)
    eps = check_positive("eps", eps)
    sols = [ubapp_exact(k, eps, theta_grid) for k in (K, K + 1)]
    values = np.unique(np.concatenate([s.estimates for s in sols]))
    tables = []
    for s in sols:
        log_P = np.asarray(s.log_P if s.log_P is not None else _safe_log(s.P), dtype=float)
        logp = np.full((values.size, log_P.shape[1]), -np.inf)
        rows = np.searchsorted(values, s.estimates)
        # several rows may stand for one value (never for these solvers, whose estimates are distinct)
        np.logaddexp.at(logp, rows, log_P)
        tables.append(logp)
    a, b = tables
    worst = 0.0
    for shift in (0, 1):  # the added record is 0 (count y) or 1 (count y + 1)
        la, lb = a, b[:, shift:shift + K + 1]
        both_impossible = np.isneginf(la) & np.isneginf(lb)
        with np.errstate(invalid="ignore"):
            diff = np.abs(la - lb)
        diff[both_impossible] = 0.0
        worst = max(worst, float(np.max(diff)))
    return worst


def add_remove_release_mse(K: int, eps: float, n_max: int | None = None) -> float:
    """Bayes MSE of an eps-DP release under add/remove neighbours with the number of records private.

    Adding or removing one record changes the count of ones or the count of zeros by one, not both: the pair
    has L1 sensitivity 1, so releasing both with independent two-sided geometric noise (``Pr(d) prop. to
    e^{-eps |d|}``) is eps-DP for add/remove neighbours, and the size ``n`` stays private. The estimate is the
    posterior mean of theta given both noisy counts under a uniform prior on theta and a flat prior on
    ``n in {0, ..., n_max}`` (post-processing). Returned: its Bayes MSE when the true size is ``K`` (theta
    uniform), an exact sum (noise tails beyond ``e^{-eps D} < 1e-18`` dropped).

    Parameters
    ----------
    K : int
        True number of records, ``1 <= K <= 1000``.
    eps : float
        Privacy parameter, ``0.05 <= eps <= 20`` (the noise support grows like ``1/eps``).
    n_max : int, optional
        Largest size under the flat prior on ``n``, ``>= K`` (default ``3 K``).
    """
    K = check_int("K", K, minimum=1, maximum=1000)
    eps = float(check_positive("eps", eps))
    if not 0.05 <= eps <= 20.0:
        raise ValueError(f"eps must be in [0.05, 20], got {eps!r}")
    n_max = 3 * K if n_max is None else check_int("n_max", n_max, minimum=K, maximum=3000)
    D = int(np.ceil(np.log(1e18) / eps))
    outs = np.arange(-D, n_max + D + 1, dtype=float)  # possible noisy counts
    y = np.arange(n_max + 1, dtype=float)
    G = np.tanh(eps / 2.0) * np.exp(-eps * np.abs(outs[:, None] - y[None, :]))  # (1 - a)/(1 + a) a^|d|, a = e^-eps
    n = y[:, None] + y[None, :]  # (ones, zeros) -> size
    inside = n <= n_max
    H0 = np.where(inside, 1.0 / (n + 1.0), 0.0)  # prior weight of (ones, zeros): p(n) / (n + 1)
    H1 = H0 * (y[:, None] + 1.0) / (n + 2.0)  # times E[theta | ones, zeros]
    den = G @ H0 @ G.T
    est = (G @ H1 @ G.T) / den  # est[a, b]: posterior mean given a noisy ones count a and zeros count b
    m = (np.arange(K + 1) + 1.0) / (K + 2.0)  # posterior mean and variance given the true counts (n = K)
    v = m * (1.0 - m) / (K + 3.0)
    ones = G[:, : K + 1]  # law of the noisy ones count for y = 0..K
    zeros = G[:, K::-1]  # law of the noisy zeros count for K - y
    t1 = np.einsum("ay,ab,by->y", ones, est, zeros)
    t2 = np.einsum("ay,ab,by->y", ones, est * est, zeros)
    mass = ones.sum(axis=0) * zeros.sum(axis=0)
    return float(np.mean(v + m * m * mass - 2.0 * m * t1 + t2))


def grid_deficit(K: int, eps: float, M: int) -> float:
    """UBaPP's Bayes MSE on an ``M``-point equally spaced grid (uniform prior on it) minus LBaPP's exact MSE.

    The paper (Section 5.5) reports UBaPP above LBaPP by about ``1e-3`` at moderate eps and attributes it to
    the discretisation of Theta; a positive value here is such a deficit. The grid's prior has variance
    ``(M + 1) / (12 (M - 1))`` instead of ``1/12``, so coarse grids change the risk the most. ``2 <= M <= MAX_GRID``.
    """
    from dpbayes.ubapp.lbapp import lbapp_mse

    K = check_int("K", K, minimum=1, maximum=MAX_COUNT)
    eps = check_positive("eps", eps)
    M = check_int("M", M, minimum=2, maximum=MAX_GRID)
    return ubapp_exact(K, eps, np.linspace(0.0, 1.0, M)).risk - lbapp_mse(K, eps)


#: Targets ``g(theta)`` of :func:`target_scope_gap`: two monotone, two not.
SCOPE_TARGETS = ("theta", "theta^2", "theta(1-theta)", "|theta-1/2|")


def _scope_target(target: str, theta: NDArray[np.float64]) -> NDArray[np.float64]:
    return {"theta": theta, "theta^2": theta**2, "theta(1-theta)": theta * (1.0 - theta),
            "|theta-1/2|": np.abs(theta - 0.5)}[target]


def target_scope_gap(target: str, K: int, eps: float, M: int = 41, solver: str | None = None) -> tuple[float, bool]:
    """How far "geometric mechanism + Bayes remap" is from the LP optimum for estimating ``g(theta)``.

    Binomial likelihood, uniform prior on an ``M``-point grid of theta, squared loss ``(g(theta) - t)^2`` with
    estimates ``t`` on ``M`` equally spaced points of ``[min g, max g]``. Returns ``(exact / LP - 1, monotone)``:
    the relative excess risk of :func:`~dpbayes.ubapp.optimal.private_bayes_exact_count` over the LP optimum (:func:`~dpbayes.ubapp.optimal.private_bayes_lp`),
    and whether the non-private Bayes action ``E[g(theta) | y]`` is monotone in the count ``y``.

    Parameters
    ----------
    target : str
        One of :data:`SCOPE_TARGETS`.
    K : int
        Trials, ``1 <= K <= 200``.
    eps : float
        Privacy parameter, ``> 0``.
    M : int
        Grid points of theta and of the estimates, ``3 <= M <= 1000``.
    solver : str, optional
        LP solver (see :func:`~dpbayes.ubapp.optimal.private_bayes_lp`).
    """
    target = check_choice("target", target, SCOPE_TARGETS)
    K = check_int("K", K, minimum=1, maximum=200)
    eps = check_positive("eps", eps)
    M = check_int("M", M, minimum=3, maximum=1000)
    theta = np.linspace(0.0, 1.0, M)
    g = _scope_target(target, theta)
    est = np.linspace(float(g.min()), float(g.max()), M)
    L = (g[:, None] - est[None, :]) ** 2
    Q = binomial_likelihood(K, theta)
    pi = uniform_prior(theta)
    lp = private_bayes_lp(L, Q, pi, eps, chain_neighbours(K + 1), solver=solver, estimates=est)
    ex = private_bayes_exact_count(L, Q, pi, eps, est)
    post = Q * pi[None, :]
    action = (post @ g) / post.sum(axis=1)
    d = np.diff(action)
    monotone = bool(np.all(d >= -1e-12) or np.all(d <= 1e-12))
    return ex.risk / lp.risk - 1.0, monotone


def largest_scope_gap(
    target: str, K: int, M: int = 41, eps_range: tuple[float, float] = (1e-2, 10.0), n_scan: int = 13,
    solver: str | None = None,
) -> tuple[float, float]:
    """``(eps*, gap)``: the largest :func:`target_scope_gap` over eps in ``eps_range``, located by optimisation.

    A scan of ``n_scan`` log-spaced values of eps, then bounded Brent search in log eps between the
    neighbours of the largest scanned gap (``xatol = 1e-4``); the better of the two is returned.

    Parameters
    ----------
    target : str
        One of :data:`SCOPE_TARGETS`.
    K : int
        Trials, ``1 <= K <= 200``.
    M : int
        Grid points of theta and of the estimates, ``3 <= M <= 1000``.
    eps_range : tuple of float
        ``(low, high)``, ``0 < low < high``.
    n_scan : int
        Scanned values, ``>= 3``.
    solver : str, optional
        LP solver (see :func:`~dpbayes.ubapp.optimal.private_bayes_lp`).
    """
    from dpbayes.core.extremes import refine_scanned_extreme

    target = check_choice("target", target, SCOPE_TARGETS)
    lo, hi = check_positive("eps_range", np.asarray(eps_range, dtype=float))
    if not lo < hi:
        raise ValueError(f"eps_range must be increasing, got {eps_range!r}")
    n_scan = check_int("n_scan", n_scan, minimum=3)

    def gap(log_e: float) -> float:
        return target_scope_gap(target, K, float(np.exp(log_e)), M=M, solver=solver)[0]

    grid = np.log(np.geomspace(lo, hi, n_scan))
    log_eps, value, _ = refine_scanned_extreme(gap, grid, np.array([gap(g) for g in grid]), maximize=True, xatol=1e-4)
    return float(np.exp(log_eps)), value
