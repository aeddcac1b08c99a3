"""Minimax (worst-case optimal) remaps of the truncated geometric count, with duality certificates.

Setting: ``n`` records, a confidential count ``c`` in ``{0..n}``, released by the truncated
two-sided geometric mechanism ``z = clamp(c + G, 0, n)``, ``P(G = k) ∝ a^|k|``, ``a = exp(-eps)``
(Ghosh, Roughgarden & Sundararajan 2009). A *remap* is a function ``est(z)`` (post-processing, so
still ``eps``-DP). For an estimand (``"proportion"``: truth ``c/n``; ``"theta"``: truth ``theta``
with ``c ~ Binomial(n, theta)``) and a loss (``"squared"`` or ``"absolute"``) the risk of a remap at
a state ``s`` (a count or a theta) is ``R_s(est) = E[loss(est(z), truth_s) | s]``, and this module
finds the remap minimising ``max_s R_s``: the worst-case (minimax) criterion, against the Bayes criterion
(average over a prior) of :mod:`dpbayes.choosing.candidates`. Gupte & Sundararajan (PODS 2010) show that the
geometric mechanism followed by a consumer-specific remap is optimal for every minimax consumer;
:func:`certify_over_all_mechanisms` checks it at small ``n`` against the LP over all eps-DP mechanisms.

Privacy: every remap is post-processing of the truncated geometric mechanism, so eps-DP for data sets of
``n`` records that differ in one record replaced (``n`` public), the mechanism's own guarantee.

Deterministic remaps suffice. Both losses are convex in the estimate, so by Jensen a randomised
remap ``z -> O`` is dominated, state by state, by the deterministic remap ``z -> E[O | z]``.

Duality. ``R_s`` is convex in the remap, so (minimax theorem, finitely many outputs ``z``)
``min_est max_s R_s = max_w min_est sum_s w_s R_s``: the minimax risk is the Bayes risk of a
least-favourable prior (LFP) ``w``, and the minimax remap is Bayes for ``w`` and has constant risk on
its support. Any prior ``w`` therefore gives a *lower* bound (its Bayes risk over remaps) and any
remap an *upper* bound (its worst-case risk); :class:`MinimaxRemap` carries both.

Algorithms.

* ``proportion`` / ``squared`` (any ``n``, ``O(n)`` memory and ``O(n)`` per iteration): in count
  units ``x_z = n est(z) - z``, ``n^2 R_c = R0_c + sum_z G[z, c] x_z^2 + 2 sum_z G[z, c] (z - c) x_z``
  with ``R0_c`` the (closed-form) risk of ``z/n``. All sums against ``G`` are two one-sided
  first-order recursions (:func:`dpbayes.core.geometric.geometric_kernel_sums`), never the ``(n+1)^2`` matrix. The non-smooth
  ``max_c`` is replaced by ``tau log sum_c exp(R_c / tau)`` and minimised by L-BFGS for a
  decreasing sequence of ``tau`` (warm starts). The gradient is ``2 (x_z S0_z - S1_z)`` with
  ``S_r`` the kernel sums of the softmax weights ``p``; at a stationary point ``x`` is the Bayes
  remap of ``p``, so ``p`` is the candidate LFP, and its Bayes risk (``O(n)``) the lower bound.
  The flat prior is also tried as a lower bound, and the best prior found is polished by
  multiplicative-weights (exponentiated-gradient) ascent on the Bayes risk, whose gradient is the
  risk vector ``R_c`` of the prior's Bayes remap (envelope theorem). Stops when the relative gap
  ``(upper - lower)/upper <= tol``.
* the other combinations (small ``n``): the convex program ``min t s.t. R_s(est) <= t`` in CVXPY
  (CLARABEL; an SOCP for squared loss, an LP for absolute loss), whose constraint duals are the LFP.
  For ``theta`` the states are a grid; the sup over the continuum ``[0, 1]`` is located by a dense
  scan plus bounded Brent refinement of each local maximum, the located maximisers are added to the
  grid and the program is re-solved (exchange / cutting-plane) until the continuum sup exceeds the
  grid optimum by at most ``tol`` (relative). The lower bound is the Bayes risk of the grid LFP,
  which is a valid prior on the continuum.

:func:`all_mechanism_minimax_lp` and :func:`all_mechanism_bayes_lp` solve the minimax and Bayes
problems over *all* ``eps``-DP mechanisms of the count with outputs on a grid (HiGHS LP); with
randomised rounding onto the grid (post-processing, mean-preserving) any continuum-output
mechanism loses at most ``h^2/4`` (squared loss, grid spacing ``h``) and nothing (absolute loss,
``proportion``, grid containing every ``c/n``), which turns the grid optima into bounds for
continuum outputs (:func:`certify_over_all_mechanisms`).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, stats

from dpbayes.choosing.candidates import _geometric_count_posterior_mean, _geometric_expectations, candidate_moments
from dpbayes.core.executors import one_blas_thread
from dpbayes.core.validation import check_choice, check_in_range, check_int
from dpbayes.core.geometric import geometric_kernel_sums, truncated_geometric_matrix

__all__ = [
    "ESTIMANDS",
    "LOSSES",
    "MinimaxRemap",
    "McCertificate",
    "identity_risk_counts",
    "bayes_remap",
    "remap_risk",
    "remap_theta_risk",
    "remap_bayes_risk",
    "minimax_remap",
    "all_mechanism_minimax_lp",
    "all_mechanism_bayes_lp",
    "certify_over_all_mechanisms",
]

FloatArray = NDArray[np.float64]

ESTIMANDS = ("proportion", "theta")
LOSSES = ("squared", "absolute")

#: Largest ``n`` for the dense CVXPY paths (absolute loss, theta estimand).
DENSE_MAX_N = {("proportion", "absolute"): 300, ("theta", "squared"): 1000, ("theta", "absolute"): 200}
#: Largest ``n`` for the O(n) path (proportion, squared).
MAX_N = 10_000_000
#: Above this ``n`` the O(n) solver skips L-BFGS and runs multiplicative weights only.
LBFGS_MAX_N = 20000
#: Above this ``n`` the proportion/squared solver starts from a prior lifted from a reduced problem
#: (:func:`_lifted_prior`) instead of solving the full problem from the flat prior.
LIFT_MIN_N = 2000
#: The reduced problem's ``eps`` is at least this (its ``n`` at most ``2 * LIFT_HALF_WIDTH / LIFT_EPS``).
LIFT_EPS = 0.1
#: Half-width, in noise units ``count * eps``, of each end region the reduced problem resolves.
LIFT_HALF_WIDTH = 60.0
_LOG_FLOOR = -50.0  # softmax / exp weights below exp(-50) relative are floored (no subnormals)


# --------------------------------------------------------------------------------------------
# validation


def _check_n(n: Any, maximum: int = MAX_N) -> int:
    return check_int("n", n, minimum=1, maximum=maximum)


def _check_eps(eps: Any) -> float:
    return float(check_in_range("eps", eps, 0.0, 50.0, low_open=True))


def _check_all(n: Any, eps: Any, estimand: Any, loss: Any) -> tuple[int, float, str, str]:
    estimand = check_choice("estimand", estimand, ESTIMANDS)
    loss = check_choice("loss", loss, LOSSES)
    maximum = MAX_N if (estimand, loss) == ("proportion", "squared") else DENSE_MAX_N[(estimand, loss)]
    return _check_n(n, maximum), _check_eps(eps), estimand, loss


# --------------------------------------------------------------------------------------------
# the mechanism and O(n) kernel sums


def identity_risk_counts(n: int, eps: float) -> FloatArray:
    """``E[(z - c)^2 | c]`` for ``c = 0..n``: the risk of the clamped count ``z`` itself, in count units.

    The closed form of :func:`dpbayes.choosing.candidates.candidate_moments` (candidate ``"geometric"``,
    ``msd * n^2``): the untruncated noise's variance ``2a/(1-a)^2`` less the two tails removed by clamping.

    Parameters
    ----------
    n : int
        Largest count.
    eps : float
        Privacy parameter.

    Returns
    -------
    ndarray, shape (n + 1,)
    """
    return candidate_moments("geometric", n, eps)[1] * float(n) ** 2


def _risk_counts(x: FloatArray, eps: float, r0: FloatArray, scale: float = 1.0) -> FloatArray:
    """``n^2 R_c / scale`` of the remap ``est(z) = (z + x_z)/n``, proportion estimand, squared loss, O(n).

    ``n^2 R_c = r0_c + sum_z P(z | c) x_z^2 + 2 sum_z P(z | c) x_z (z - c)`` with ``r0`` the risk of ``z`` itself
    (``r0`` is passed already divided by ``scale``); the sums are the candidates' kernel sums against the
    truncated geometric law (:func:`dpbayes.choosing.candidates._geometric_expectations`).
    """
    (t0,) = _geometric_expectations(x * x, eps, 0)
    _, t1 = _geometric_expectations(x, eps, 1)
    return r0 + (t0 + 2.0 * t1) / scale


def _bayes_offsets(w: FloatArray, eps: float) -> FloatArray:
    """``x_z = E_w[c | z] - z`` (count units): the posterior-mean remap of prior weights ``w > 0``, O(n)
    (:func:`dpbayes.choosing.candidates._geometric_count_posterior_mean`)."""
    return _geometric_count_posterior_mean(np.log(w), eps)


def bayes_remap(prior: ArrayLike, eps: float) -> FloatArray:
    """The Bayes remap ``E_w[c/n | z]`` (posterior mean of the proportion), ``z = 0..n``, O(n).

    Parameters
    ----------
    prior : array_like, shape (n + 1,)
        Non-negative weights on the counts (normalised internally; need not be strictly positive).
    eps : float
        Privacy parameter.

    Returns
    -------
    ndarray, shape (n + 1,)
    """
    w = np.asarray(prior, dtype=float)
    n = w.size - 1
    _check_n(n)
    eps = _check_eps(eps)
    if np.any(w < 0) or not np.isfinite(w).all() or w.sum() <= 0:
        raise ValueError("prior must be finite, non-negative and not all zero")
    w = np.maximum(w / w.max(), np.exp(_LOG_FLOOR))
    return (np.arange(n + 1) + _bayes_offsets(w, eps)) / n


def _truths(n: int, estimand: str, theta: FloatArray | None) -> FloatArray:
    return np.arange(n + 1) / n if estimand == "proportion" else np.asarray(theta, dtype=float)


def _state_kernel(n: int, eps: float, estimand: str, theta: FloatArray | None) -> FloatArray:
    """``Q[z, s] = P(z | state s)``: ``G`` for counts, ``G @ Binomial(n, theta)`` for thetas (dense)."""
    g = truncated_geometric_matrix(n, eps)
    if estimand == "proportion":
        return g
    b = stats.binom.pmf(np.arange(n + 1)[:, None], n, np.asarray(theta, dtype=float)[None, :])
    return g @ b


def remap_risk(remap: ArrayLike, eps: float, loss: str = "squared") -> FloatArray:
    """Exact risk ``E[loss(est(z), c/n) | c]`` of a remap at every count ``c = 0..n``.

    Squared loss is computed in O(n) (offsets from ``z/n``, no cancellation); absolute loss uses
    the dense mechanism matrix.

    Parameters
    ----------
    remap : array_like, shape (n + 1,)
        ``est(z)`` for ``z = 0..n`` (proportion scale).
    eps : float
        Privacy parameter.
    loss : {"squared", "absolute"}

    Returns
    -------
    ndarray, shape (n + 1,)
    """
    est = np.asarray(remap, dtype=float)
    n = _check_n(est.size - 1)
    eps = _check_eps(eps)
    loss = check_choice("loss", loss, LOSSES)
    if loss == "squared":
        x = n * est - np.arange(n + 1, dtype=float)
        return _risk_counts(x, eps, identity_risk_counts(n, eps)) / n**2
    g = truncated_geometric_matrix(n, eps)
    return (g * np.abs(est[:, None] - np.arange(n + 1)[None, :] / n)).sum(axis=0)


def remap_theta_risk(remap: ArrayLike, eps: float, theta: ArrayLike, loss: str = "squared") -> FloatArray:
    """Exact risk ``E[loss(est(z), theta) | theta]`` with ``c ~ Binomial(n, theta)``, at each ``theta``.

    Parameters
    ----------
    remap : array_like, shape (n + 1,)
        ``est(z)`` for ``z = 0..n``.
    eps : float
        Privacy parameter.
    theta : array_like
        Points in ``[0, 1]``.
    loss : {"squared", "absolute"}

    Returns
    -------
    ndarray, shaped like ``theta``
    """
    est = np.asarray(remap, dtype=float)
    n = _check_n(est.size - 1)
    eps = _check_eps(eps)
    loss = check_choice("loss", loss, LOSSES)
    th = np.atleast_1d(np.asarray(theta, dtype=float))
    q = _state_kernel(n, eps, "theta", th)
    diff = est[:, None] - th[None, :]
    lz = diff * diff if loss == "squared" else np.abs(diff)
    return (q * lz).sum(axis=0).reshape(np.shape(theta))


def remap_bayes_risk(prior: ArrayLike, eps: float, loss: str = "squared") -> float:
    """``min_est sum_c w_c R_c(est)``: the Bayes risk over remaps of a prior on the counts (proportion).

    For squared loss the minimiser is the posterior mean (O(n)); for absolute loss the posterior
    median (dense). This is a lower bound on the minimax risk over remaps.

    Parameters
    ----------
    prior : array_like, shape (n + 1,)
    eps : float
    loss : {"squared", "absolute"}

    Returns
    -------
    float
    """
    w = np.asarray(prior, dtype=float)
    w = w / w.sum()
    n = _check_n(w.size - 1)
    loss = check_choice("loss", loss, LOSSES)
    if loss == "squared":
        return float(w @ remap_risk(bayes_remap(w, eps), eps, "squared"))
    g = truncated_geometric_matrix(n, eps)
    joint = g * w[None, :]
    cdf = np.cumsum(joint, axis=1)
    med = np.argmax(cdf >= 0.5 * cdf[:, -1:], axis=1) / n
    return float(w @ remap_risk(med, eps, "absolute"))


# --------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class MinimaxRemap:
    """A minimax remap with its duality certificate.

    Attributes
    ----------
    n, eps, estimand, loss
        The problem.
    remap : ndarray, shape (n + 1,)
        ``est(z)``, ``z = 0..n``, on the proportion scale.
    worst_risk : float
        ``max_s R_s(remap)`` (upper bound on the minimax risk over remaps); for ``theta`` the sup
        over the continuum ``[0, 1]`` as located by scan + Brent.
    lower_bound : float
        Bayes risk over remaps of ``prior`` (lower bound on the minimax risk over remaps).
    prior : ndarray
        The (approximately) least-favourable prior on ``states``.
    states : ndarray
        The counts ``0..n`` (proportion) or the theta grid (theta).
    method : str
    iterations : int
    seconds : float
    """

    n: int
    eps: float
    estimand: str
    loss: str
    remap: FloatArray
    worst_risk: float
    lower_bound: float
    prior: FloatArray
    states: FloatArray
    method: str
    iterations: int = 0
    seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def relative_gap(self) -> float:
        """``(worst_risk - lower_bound)/worst_risk``."""
        return float((self.worst_risk - self.lower_bound) / self.worst_risk)


# --------------------------------------------------------------------------------------------
# proportion, squared loss: O(n) smoothed-max L-BFGS + prior polish


def _softmax(r: FloatArray, tau: float) -> FloatArray:
    e = np.exp(np.maximum((r - r.max()) / tau, _LOG_FLOOR))
    return e / e.sum()


@one_blas_thread()
def _solve_proportion_squared(n: int, eps: float, tol: float, max_evals: int, max_seconds: float) -> MinimaxRemap:
    """The O(n) solver of the proportion / squared-loss problem (the module's docstring); BLAS on one thread, so
    that its dot products and L-BFGS-B's steps have the same bits whatever the machine's number of cores."""
    t_start = time.perf_counter()
    deadline = t_start + max_seconds
    r0 = identity_risk_counts(n, eps)
    scale = float(r0.max())  # everything below is in units of the worst risk of z/n
    r0s = r0 / scale

    def risk(x: FloatArray) -> FloatArray:
        return _risk_counts(x, eps, r0s, scale)

    def prior_bound(w: FloatArray) -> tuple[float, FloatArray, FloatArray]:
        x = _bayes_offsets(np.maximum(w / w.max(), np.exp(_LOG_FLOOR)), eps)
        r = risk(x)
        return float(w @ r), x, r

    flat = np.full(n + 1, 1.0 / (n + 1))
    lower, x_best, r = prior_bound(flat)
    best_prior = flat
    upper = float(r.max())
    if 1.0 < upper:  # the clamped count itself (x = 0) has worst risk 1 in these units
        upper, x_best = 1.0, np.zeros(n + 1)
    x = x_best.copy()
    evals = [1]
    start = "flat prior"
    if n > LIFT_MIN_N:
        lifted = _lifted_prior(n, eps, max(tol, 1e-7), 0.5 * max_seconds)
        b, xw, rw = prior_bound(lifted)
        evals[0] += 1
        if b > lower:
            lower, best_prior, start = b, lifted, "lifted prior"
        if rw.max() < upper:
            upper, x_best = float(rw.max()), xw
        x = x_best.copy()
    if (upper - lower) / upper <= tol:
        return _pack_prop(n, eps, x_best, upper, lower, best_prior, scale, start, evals[0], t_start)

    def consider_prior(w: FloatArray) -> None:
        nonlocal lower, best_prior, upper, x_best
        b, xw, rw = prior_bound(w)
        evals[0] += 1
        if b > lower:
            lower, best_prior = b, w
        if rw.max() < upper:
            upper, x_best = float(rw.max()), xw

    if n > LBFGS_MAX_N:  # L-BFGS per-iteration overhead dominates: multiplicative weights only
        _polish_prior(best_prior, eps, risk, consider_prior, evals, max_evals, deadline, upper_tol=(tol, lambda: (upper, lower)))
        return _pack_prop(n, eps, x_best, upper, lower, best_prior, scale, f"MW ascent from {start}", evals[0], t_start)
    tau = 1e-2
    while evals[0] < max_evals and (upper - lower) / upper > tol and time.perf_counter() < deadline:

        def fun(xv: FloatArray, tau: float = tau) -> tuple[float, FloatArray]:
            nonlocal upper, x_best
            evals[0] += 1
            rv = risk(xv)
            m = float(rv.max())
            if m < upper:
                upper, x_best = m, xv.copy()
            p = _softmax(rv, tau)
            # gradient of the smoothed max: 2 sum_c p_c P(z | c) (x_z - (c - z)) / scale
            p0, p1 = geometric_kernel_sums(p, eps, 1)
            s = np.exp(np.maximum((rv - m) / tau, _LOG_FLOOR)).sum()
            return m + tau * np.log(s), 2.0 * (xv * p0 - p1) / scale

        budget = max(1, min(100 + 50 * int(np.log10(n + 1)), max_evals - evals[0]))
        res = optimize.minimize(fun, x, jac=True, method="L-BFGS-B",
                                options={"maxiter": budget, "maxfun": budget, "maxcor": 30, "ftol": 1e-15, "gtol": 1e-14})
        x = res.x
        consider_prior(_softmax(risk(x), tau))
        if (upper - lower) / upper > tol:
            _polish_prior(best_prior, eps, risk, consider_prior, evals, min(max_evals, evals[0] + 50), deadline)
        tau = max(tau / 10.0, 1e-13)
    return _pack_prop(n, eps, x_best, upper, lower, best_prior, scale, "softmax L-BFGS + MW polish", evals[0], t_start)


def _lifted_prior(n: int, eps: float, tol: float, max_seconds: float) -> FloatArray:
    """A near-least-favourable prior for a large ``n``, lifted from a reduced problem.

    The problem depends on ``(n, eps)`` mostly through ``n eps`` (the range in noise units), and far
    from both ends the least-favourable prior is flat (the translation-invariant problem, whose
    minimax remap is the identity). So: solve the problem at ``eps_r = max(eps, LIFT_EPS)`` and
    ``n_r = round(min(n eps, 2 LIFT_HALF_WIDTH) / eps_r)``; spread its prior back onto ``0..n`` by
    interpolating its distribution function in noise units (the atom at 0 kept at 0); if ``n eps``
    exceeds ``2 LIFT_HALF_WIDTH``, fill the middle at the reduced prior's central density; mirror.
    Only a starting point: any prior gives a valid lower bound, so its quality changes the gap, never
    its validity.
    """
    kappa = n * eps
    eps_r = max(eps, LIFT_EPS)
    n_r = max(2, int(round(min(kappa, 2.0 * LIFT_HALF_WIDTH) / eps_r)))
    n_r += n_r % 2  # even: a central count
    red = _solve_proportion_squared(n_r, eps_r, tol, 20000, max_seconds)
    w = red.prior / red.prior.sum()
    w = 0.5 * (w + w[::-1])
    half_r = n_r // 2
    cdf_r = np.cumsum(w[: half_r + 1])
    cdf_r[-1] -= 0.5 * w[half_r]  # the central count is shared by both halves
    knots = np.r_[0.0, (np.arange(half_r) + 0.5) * eps_r, half_r * eps_r]
    values = np.r_[w[0], cdf_r[:-1], cdf_r[-1]]
    half = n // 2
    edges = np.r_[(np.arange(half) + 0.5) * eps, 0.5 * kappa]  # upper edge of each fine count's cell, left half
    cdf = np.asarray(np.interp(edges, knots, values), dtype=float)
    beyond = edges > knots[-1]
    cdf[beyond] = values[-1] + (edges[beyond] - knots[-1]) * w[half_r] / eps_r
    left = np.diff(np.r_[0.0, cdf])
    prior = np.empty(n + 1)
    prior[: half + 1] = left
    prior[n - np.arange(half + 1)] = left
    if n % 2 == 0:
        prior[half] = 2.0 * left[half]
    return np.maximum(prior, 0.0) / np.maximum(prior, 0.0).sum()


def _polish_prior(w0: FloatArray, eps: float, risk: Any, consider: Any, evals: list[int], stop: int, deadline: float,
                  upper_tol: tuple[float, Any] | None = None) -> None:
    """Multiplicative-weights ascent of the Bayes risk from ``w0`` (gradient = risk vector).

    ``w <- w exp(eta (R - B)/B)``, normalised; ``eta`` grows by 1.5 after an ascent step and halves
    after a rejected one. Every accepted prior is passed to ``consider`` (lower bound from its Bayes
    risk, upper bound from its Bayes remap's worst risk).
    """
    lw = np.log(np.maximum(w0 / w0.max(), np.exp(_LOG_FLOOR)))
    eta = 1.0

    def state(lw: FloatArray) -> tuple[FloatArray, float, FloatArray]:
        w = np.exp(np.maximum(lw - lw.max(), _LOG_FLOOR))
        w /= w.sum()
        x = _bayes_offsets(w, eps)
        r = risk(x)
        return w, float(w @ r), r

    w, b, r = state(lw)
    while evals[0] < stop and time.perf_counter() < deadline:
        if upper_tol is not None:
            up, lo = upper_tol[1]()
            if (up - lo) / up <= upper_tol[0]:
                break
        lw2 = lw + eta * (r - b) / b
        w2, b2, r2 = state(lw2)
        evals[0] += 1
        if b2 >= b:
            lw, w, b, r = lw2, w2, b2, r2
            consider(w)
            eta *= 1.5
        else:
            eta *= 0.5


def _pack_prop(n: int, eps: float, x: FloatArray, upper: float, lower: float, prior: FloatArray,
               scale: float, method: str, evals: int, t0: float) -> MinimaxRemap:
    remap = (np.arange(n + 1) + x) / n
    # recompute the upper bound from the returned remap itself (exact, O(n))
    worst = float(remap_risk(remap, eps, "squared").max())
    return MinimaxRemap(n, eps, "proportion", "squared", remap, worst, lower * scale / n**2, prior / prior.sum(),
                        np.arange(n + 1, dtype=float), method, evals, time.perf_counter() - t0,
                        {"upper_scaled": upper, "lower_scaled": lower})


# --------------------------------------------------------------------------------------------
# dense CVXPY path (absolute loss; theta estimand)


def _solve_dense(n: int, eps: float, estimand: str, loss: str, states: FloatArray, solver: str | None) -> tuple[FloatArray, float, FloatArray]:
    """``min t s.t. R_s(est) <= t`` over the given states; returns (remap, t, normalised duals)."""
    import cvxpy as cp

    with warnings.catch_warnings():
        # CVXPY's bound propagation multiplies infinite bounds by zero while the problem is built (its
        # utilities/bounds.py): a harmless NaN in a bound estimate, not in the problem or its solution
        warnings.filterwarnings("ignore", message="invalid value encountered in matmul", category=RuntimeWarning,
                                module=r"cvxpy\.")
        q = _state_kernel(n, eps, estimand, states if estimand == "theta" else None)
        y = _truths(n, estimand, states)
        z = np.arange(n + 1, dtype=float)
        d = z[:, None] - n * y[None, :]  # est(z) - y = (x_z + d[z, s]) / n
        x = cp.Variable(n + 1)
        t = cp.Variable()
        if loss == "squared":
            const = (q * d * d).sum(axis=0)
            scale = float(const.max())
            risk = (const + q.T @ cp.square(x) + 2 * (q * d).T @ x) / scale
        else:
            const = (q * np.abs(d)).sum(axis=0)
            scale = float(const.max())
            risk = cp.sum(cp.multiply(q, cp.abs(x[:, None] + d)), axis=0) / scale
        con = risk <= t
        prob = cp.Problem(cp.Minimize(t), [con])
        prob.solve(solver=solver or ("CLARABEL" if loss == "squared" else "HIGHS"))
    if prob.status not in ("optimal", "optimal_inaccurate") or x.value is None:
        raise RuntimeError(f"CVXPY failed: {prob.status}")
    w = np.maximum(np.asarray(con.dual_value, dtype=float).ravel(), 0.0)
    remap = np.clip((z + x.value) / n, 0.0, 1.0)
    t_value = float(np.asarray(t.value, dtype=float))
    return remap, t_value * scale / (n**2 if loss == "squared" else n), w / w.sum()


def _bayes_remap_states(prior: FloatArray, q: FloatArray, y: FloatArray, loss: str) -> FloatArray:
    joint = q * prior[None, :]
    if loss == "squared":
        return (joint @ y) / joint.sum(axis=1)
    order = np.argsort(y)
    cdf = np.cumsum(joint[:, order], axis=1)
    return y[order][np.argmax(cdf >= 0.5 * cdf[:, -1:], axis=1)]


def _state_bayes_risk(n: int, eps: float, estimand: str, loss: str, prior: FloatArray, states: FloatArray) -> float:
    q = _state_kernel(n, eps, estimand, states if estimand == "theta" else None)
    y = _truths(n, estimand, states)
    est = _bayes_remap_states(prior, q, y, loss)
    diff = est[:, None] - y[None, :]
    lz = diff * diff if loss == "squared" else np.abs(diff)
    return float(prior @ (q * lz).sum(axis=0))


def _theta_sup(remap: FloatArray, eps: float, loss: str, n_scan: int = 4001) -> tuple[float, FloatArray]:
    """Sup over ``theta in [0, 1]`` of the risk: dense scan, then bounded Brent on each local max."""
    grid = np.linspace(0.0, 1.0, n_scan)
    r = remap_theta_risk(remap, eps, grid, loss)
    idx = [i for i in range(n_scan) if r[i] >= r[max(i - 1, 0)] and r[i] >= r[min(i + 1, n_scan - 1)]]
    idx = sorted(idx, key=lambda i: -r[i])[:40]
    h = grid[1] - grid[0]
    found = []
    for i in idx:
        lo, hi = max(grid[i] - h, 0.0), min(grid[i] + h, 1.0)
        res = optimize.minimize_scalar(lambda t: -float(remap_theta_risk(remap, eps, [t], loss)[0]), bounds=(lo, hi),
                                       method="bounded", options={"xatol": 1e-10})
        cand = [(float(-res.fun), float(res.x)), (float(r[i]), float(grid[i]))]
        found.append(max(cand))
    found.sort(reverse=True)
    return found[0][0], np.array([t for _, t in found])


def _solve_theta(n: int, eps: float, loss: str, tol: float, theta_grid: ArrayLike | None, solver: str | None,
                 max_rounds: int = 8) -> MinimaxRemap:
    t0 = time.perf_counter()
    states = np.linspace(0.0, 1.0, 201) if theta_grid is None else np.unique(np.clip(np.asarray(theta_grid, float), 0, 1))
    for rounds in range(1, max_rounds + 1):
        remap, t_grid, w = _solve_dense(n, eps, "theta", loss, states, solver)
        sup, maximisers = _theta_sup(remap, eps, loss)
        if sup <= t_grid * (1 + tol):
            break
        new = maximisers[remap_theta_risk(remap, eps, maximisers, loss) > t_grid * (1 + tol)]
        states = np.unique(np.concatenate([states, new]))
    lower = _state_bayes_risk(n, eps, "theta", loss, w, states)
    return MinimaxRemap(n, eps, "theta", loss, remap, max(sup, t_grid), lower, w, states, "cvxpy + exchange",
                        rounds, time.perf_counter() - t0, {"grid_optimum": t_grid})


# --------------------------------------------------------------------------------------------
# public solver


def minimax_remap(n: int, eps: float, estimand: str = "proportion", loss: str = "squared", *, tol: float = 1e-6,
                  theta_grid: ArrayLike | None = None, max_evals: int = 20000, max_seconds: float = 30.0,
                  solver: str | None = None) -> MinimaxRemap:
    """The remap of the truncated geometric count minimising the worst-case risk, with a certificate.

    Parameters
    ----------
    n : int
        Number of records, ``1 <= n <= 10^7`` for ``proportion``/``squared`` (O(n) solver); the
        dense paths allow ``n <= 300`` (proportion, absolute), ``n <= 1000`` (theta, squared) and
        ``n <= 200`` (theta, absolute).
    eps : float
        Privacy parameter, ``0 < eps <= 50``.
    estimand : {"proportion", "theta"}
        ``"proportion"``: truth ``c/n``, worst case over ``c = 0..n``. ``"theta"``: truth ``theta``,
        ``c ~ Binomial(n, theta)``, worst case over ``theta in [0, 1]`` (grid + exchange, see module
        docstring).
    loss : {"squared", "absolute"}
    tol : float
        Target relative gap ``(worst_risk - lower_bound)/worst_risk`` (proportion/squared), or the
        allowed relative excess of the continuum sup over the grid optimum (theta).
    theta_grid : array_like, optional
        Initial theta grid (default 201 equispaced points).
    max_evals : int
        Budget of O(n) risk evaluations (proportion/squared).
    max_seconds : float
        Wall-clock budget (proportion/squared); the result always carries its certified gap. A finite budget
        makes the remap depend on the machine's speed and load when it is reached; ``np.inf`` (with
        ``max_evals`` as the budget) makes it reproducible.
    solver : str, optional
        CVXPY solver for the dense paths (default CLARABEL).

    Returns
    -------
    MinimaxRemap

    Raises
    ------
    ValueError
        For ``n`` outside its range, ``eps`` not in ``(0, 50]``, an unknown ``estimand`` or
        ``loss``, or ``tol`` not in ``(0, 1)``; checked before any computation.
    """
    n, eps, estimand, loss = _check_all(n, eps, estimand, loss)
    if not (isinstance(tol, (int, float)) and 0.0 < float(tol) < 1.0):
        raise ValueError(f"tol must be in (0, 1), got {tol!r}")
    if estimand == "proportion" and loss == "squared":
        return _solve_proportion_squared(n, eps, float(tol), int(max_evals), float(max_seconds))
    if estimand == "theta":
        return _solve_theta(n, eps, loss, float(tol), theta_grid, solver)
    t0 = time.perf_counter()
    states = np.arange(n + 1, dtype=float)
    remap, t, w = _solve_dense(n, eps, "proportion", "absolute", states, solver)
    worst = float(remap_risk(remap, eps, "absolute").max())
    lower = remap_bayes_risk(w, eps, "absolute")
    return MinimaxRemap(n, eps, estimand, loss, remap, worst, lower, w, states, "cvxpy LP", 1, time.perf_counter() - t0)


# --------------------------------------------------------------------------------------------
# all eps-DP mechanisms (outputs on a grid): LPs


def _output_grid(n: int, refine: int) -> FloatArray:
    """``{k/(n refine)}``: contains every ``c/n``; spacing ``h = 1/(n refine)``."""
    return np.arange(n * refine + 1) / (n * refine)


def _mechanism_lp(n: int, eps: float, risk_rows: Any, prior: FloatArray | None) -> float:
    """LP over mechanisms ``q[k, c]`` (m outputs, counts ``c = 0..n``; variable index ``c m + k``).

    Constraints: ``q >= 0``, ``sum_k q[k, c] = 1``, ``q[k, c] <= e^eps q[k, c +- 1]``. ``risk_rows``
    (S x (n+1) m, sparse) maps ``q`` to the risk at each state. Minimax (``min t s.t. risk <= t``) if
    ``prior`` is None, else Bayes (``min prior @ risk``). Solved by HiGHS.
    """
    from scipy import sparse
    from scipy.optimize import linprog

    nc = n + 1
    nq = risk_rows.shape[1]
    m = nq // nc
    e = float(np.exp(eps))
    eye = sparse.identity(m, format="csr")
    diff = sparse.diags([np.ones(n), -e * np.ones(n)], [0, 1], shape=(n, nc))  # q_c - e q_{c+1}
    diff2 = sparse.diags([-e * np.ones(n), np.ones(n)], [0, 1], shape=(n, nc))  # q_{c+1} - e q_c
    a_dp = sparse.vstack([sparse.kron(diff, eye), sparse.kron(diff2, eye)]).tocsr()
    a_eq = sparse.kron(sparse.identity(nc), np.ones((1, m))).tocsr()
    risk_rows = sparse.csr_matrix(risk_rows)
    if prior is not None:
        cost = np.asarray(risk_rows.T @ np.asarray(prior, float)).ravel()
        res = linprog(cost, A_ub=a_dp, b_ub=np.zeros(a_dp.shape[0]), A_eq=a_eq, b_eq=np.ones(nc),
                      bounds=(0, None), method="highs")
        if res.status != 0:
            raise RuntimeError(res.message)
        return float(res.fun)
    ns = risk_rows.shape[0]
    cost = np.zeros(nq + 1)
    cost[-1] = 1.0
    a_ub = sparse.vstack([sparse.hstack([a_dp, sparse.csr_matrix((a_dp.shape[0], 1))]),
                          sparse.hstack([risk_rows, sparse.csr_matrix(-np.ones((ns, 1)))])]).tocsr()
    a_eq2 = sparse.hstack([a_eq, sparse.csr_matrix((nc, 1))]).tocsr()
    res = linprog(cost, A_ub=a_ub, b_ub=np.zeros(a_ub.shape[0]), A_eq=a_eq2, b_eq=np.ones(nc), bounds=(0, None),
                  method="highs")
    if res.status != 0:
        raise RuntimeError(res.message)
    return float(res.fun)


def _mechanism_risk_rows(n: int, estimand: str, loss: str, outputs: FloatArray, theta: FloatArray | None) -> Any:
    """Sparse map from ``q`` (index ``c m + k``) to the risk at each state."""
    from scipy import sparse

    m = outputs.size
    if estimand == "proportion":
        diff = outputs[:, None] - np.arange(n + 1)[None, :] / n
        lk = diff * diff if loss == "squared" else np.abs(diff)  # (m, n+1)
        return sparse.kron(sparse.identity(n + 1), np.ones((1, m))).multiply(lk.T.reshape(1, -1)).tocsr()
    th = np.asarray(theta, float)
    diff = outputs[:, None] - th[None, :]
    lk = diff * diff if loss == "squared" else np.abs(diff)  # (m, S)
    mix = stats.binom.pmf(np.arange(n + 1)[:, None], n, th[None, :])  # (n+1, S)
    rows = mix.T[:, :, None] * lk.T[:, None, :]  # (S, n+1, m)
    return sparse.csr_matrix(rows.reshape(th.size, (n + 1) * m))


def _rounding_slack(loss: str, estimand: str, refine: int, n: int) -> float:
    h = 1.0 / (n * refine)
    if loss == "squared":
        return h * h / 4.0
    return 0.0 if estimand == "proportion" else h / 2.0


def all_mechanism_minimax_lp(n: int, eps: float, estimand: str = "proportion", loss: str = "squared", refine: int = 10,
                             theta: ArrayLike | None = None) -> tuple[float, float]:
    """Minimax risk over ALL ``eps``-DP mechanisms of the count, outputs on ``{k/(n refine)}`` (HiGHS LP).

    Returns ``(grid_optimum, continuum_lower_bound)``: the grid optimum is an upper bound on the
    continuum-output minimax; ``grid_optimum - slack`` a lower bound, where ``slack = h^2/4``
    (squared; mean-preserving randomised rounding adds variance ``<= h^2/4``), 0 (absolute,
    proportion: the truths are grid points, where rounding is exact in expectation) or ``h/2``
    (absolute, theta).

    Parameters
    ----------
    n : int
        ``1 <= n <= 60``.
    eps : float
    estimand : {"proportion", "theta"}
    loss : {"squared", "absolute"}
    refine : int
        Output grid refinement (spacing ``1/(n refine)``).
    theta : array_like, optional
        The theta states (required for ``estimand="theta"``).
    """
    estimand = check_choice("estimand", estimand, ESTIMANDS)
    loss = check_choice("loss", loss, LOSSES)
    n, eps = _check_n(n, 200), _check_eps(eps)
    if estimand == "theta" and theta is None:
        raise ValueError("theta must be given for estimand='theta'")
    thetas = None if theta is None else np.asarray(theta, dtype=float)
    rows = _mechanism_risk_rows(n, estimand, loss, _output_grid(n, refine), thetas)
    val = _mechanism_lp(n, eps, rows, None)
    return val, val - _rounding_slack(loss, estimand, refine, n)


def all_mechanism_bayes_lp(prior: ArrayLike, n: int, eps: float, estimand: str = "proportion", loss: str = "squared",
                           refine: int = 10, theta: ArrayLike | None = None) -> tuple[float, float]:
    """Bayes risk of ``prior`` (on the states) over ALL ``eps``-DP mechanisms, outputs on a grid.

    Returns ``(grid_optimum, continuum_lower_bound)`` as in :func:`all_mechanism_minimax_lp`.
    ``continuum_lower_bound`` is a lower bound on the all-mechanism minimax risk with continuum
    outputs (a prior's Bayes risk never exceeds the minimax risk).
    """
    estimand = check_choice("estimand", estimand, ESTIMANDS)
    loss = check_choice("loss", loss, LOSSES)
    n, eps = _check_n(n, 200), _check_eps(eps)
    thetas = None if theta is None else np.asarray(theta, dtype=float)
    rows = _mechanism_risk_rows(n, estimand, loss, _output_grid(n, refine), thetas)
    w = np.asarray(prior, float)
    val = _mechanism_lp(n, eps, rows, w / w.sum())
    return val, val - _rounding_slack(loss, estimand, refine, n)


@dataclass(frozen=True)
class McCertificate:
    """Bounds on the minimax risk over ALL ``eps``-DP mechanisms (continuum outputs).

    ``lower``: Bayes risk of the remap's least-favourable prior over all mechanisms (grid LP minus
    rounding slack). ``upper``: the minimax remap's worst-case risk. ``lp_minimax``: the grid minimax
    LP (an upper bound too). The minimax remap is optimal over all mechanisms to within
    ``upper - lower``.
    """

    lower: float
    upper: float
    lp_minimax: float
    lp_bayes: float

    @property
    def relative_gap(self) -> float:
        return float((self.upper - self.lower) / self.upper)


def certify_over_all_mechanisms(result: MinimaxRemap, refine: int = 10, with_minimax_lp: bool = True) -> McCertificate:
    """Certificate that ``result`` (a minimax remap) is minimax over ALL ``eps``-DP mechanisms.

    Parameters
    ----------
    result : MinimaxRemap
        With ``n <= 200``.
    refine : int
        Output-grid refinement for the LPs.
    with_minimax_lp : bool
        Also solve the (larger) all-mechanism minimax LP.
    """
    theta = result.states if result.estimand == "theta" else None
    lp_b, lower = all_mechanism_bayes_lp(result.prior, result.n, result.eps, result.estimand, result.loss, refine, theta)
    lp_m = np.nan
    if with_minimax_lp:
        lp_m, _ = all_mechanism_minimax_lp(result.n, result.eps, result.estimand, result.loss, refine, theta)
    return McCertificate(lower, result.worst_risk, lp_m, lp_b)
