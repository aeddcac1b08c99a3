"""Dual certificates of optimality for the private Bayes LP (11) of a count with chain neighbours.

Source: B. Lakshminarayanan and C. R. Rojas, "A Unified Approach to Differentially Private
Bayes Point Estimation", linear program (11). Notation as in :mod:`dpbayes.ubapp.optimal`: an estimator is
a column-stochastic ``P[k, y]``, the risk is ``sum_{k,y} C[k, y] P[k, y]`` with
``C[k, y] = sum_j L[j, k] pi_j Q[y, j]``, and eps-DP asks ``P[k, y] <= e^eps P[k, y']`` for ``|y - y'| = 1``.

**The dual.** For each estimate ``k`` the row ``P[k, :]`` lies in the cone
``D = {p >= 0 : p_y <= e^eps p_{y'} for neighbours}``; the only other constraint is ``sum_k P[k, :] = 1``.
Weak duality: if ``nu`` (one number per observation) satisfies, for every ``k``,

    ``<C[k, :] - nu, p> >= 0`` for every ``p`` in ``D``            (dual feasibility)

then every eps-DP estimator has risk ``sum C P = sum_k <C[k] - nu, P[k]> + <nu, sum_k P[k]> >= sum(nu)``.
So ``sum(nu)`` is a lower bound on the Bayes risk of *every* eps-DP estimator with outputs in the
estimate grid (this is the dual of LP (11) with the multipliers of the DP inequalities eliminated).

**Checking dual feasibility exactly (no LP).** ``D`` is a polyhedral cone whose extreme rays are the
vectors with ``p_0 = 1`` and ``p_{y+1} = e^{+-eps} p_y`` (every DP inequality between neighbours tight,
one sign per edge). A linear function is ``>= 0`` on ``D`` iff it is on these ``2^n`` rays, and the
minimum over them is a dynamic programme from the last observation backwards:
``W_n = d_n``, ``W_y = d_y + (e^{-eps} W_{y+1} if W_{y+1} >= 0 else e^{eps} W_{y+1})``; ``min <d, p> = W_0``
(for rays normalised to ``p_0 = 1``). Cost ``O(n_est * n_obs)``.

**The certificate of the exact solver.** The exact solver (geometric mechanism + Bayes remap,
:func:`dpbayes.ubapp.optimal.private_bayes_exact_count`) uses the rays ``r_z(y) = a^{|z - y|}`` (``a = e^{-eps}``),
one per noisy count ``z``, each with the estimate ``k(z)``. Complementary slackness then forces
``<C[k(z)] - nu, r_z> = 0`` for every ``z``: ``A nu = b`` with ``A[z, y] = a^{|z - y|}`` (the Kac-Murdock-Szegő
matrix, whose inverse is tridiagonal) and ``b_z = min_k <C[k], r_z>``. This ``nu`` has
``sum(nu) = `` the exact solver's risk, so if it is dual feasible the exact solver is optimal and the gap
is zero; conversely, if the exact solver is optimal, this is the dual optimum (the equations have
one solution). In floating point the tight rows are feasible only to rounding, so
:func:`dual_lower_bound` lowers ``nu`` by the smallest ``delta * 1`` that makes every row pass the
check (found by bisection) and returns ``sum(nu) - n_obs * delta``, a valid bound whenever the
floating-point check is right; the tests verify the construction in exact rational arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbayes.core.validation import check_int, check_positive

__all__ = [
    "DualCertificate",
    "dual_cone_min",
    "is_dual_feasible",
    "exact_count_dual",
    "dual_lower_bound",
    "certify_count_problem",
    "certify_ubapp",
    "single_crossing",
    "random_target_problem",
    "target_cost_matrix",
    "OffGridBound",
    "off_grid_bound",
]


@dataclass(frozen=True)
class DualCertificate:
    """A dual feasible point of LP (11) for a count and the lower bound it proves.

    Attributes
    ----------
    nu : ndarray, shape (n_obs,)
        Dual variables of the column-sum constraints, already lowered by ``delta``: dual feasible.
    lower_bound : float
        ``sum(nu)``: no eps-DP estimator with outputs in the estimate grid has a smaller Bayes risk.
    delta : float
        Amount by which the complementary-slackness ``nu`` was lowered to pass the feasibility check.
    primal_risk : float
        Risk of the exact solver's estimator (an upper bound on the optimum).
    gap : float
        ``primal_risk - lower_bound`` (>= 0; the optimum lies in between).
    eps : float
        Privacy parameter.
    """

    nu: NDArray[np.float64]
    lower_bound: float
    delta: float
    primal_risk: float
    gap: float
    eps: float

    @property
    def relative_gap(self) -> float:
        """``gap / primal_risk``."""
        return self.gap / self.primal_risk


def _cost_matrix(C: ArrayLike) -> NDArray[np.float64]:
    C = np.asarray(C, dtype=float)
    if C.ndim != 2 or C.size == 0:
        raise ValueError(f"C must be a non-empty 2-D array (n_est, n_obs), got shape {C.shape}")
    if not np.all(np.isfinite(C)):
        raise ValueError("C must be finite")
    return C


def _cone_min_with_magnitude(d: NDArray[np.float64], eps: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    up, down = np.exp(eps), np.exp(-eps)
    W = d[:, -1].copy()
    S = np.abs(W)  # sum of |terms| along the minimising ray, for the rounding-error margin
    with np.errstate(over="ignore", invalid="ignore"):
        for y in range(d.shape[1] - 2, -1, -1):
            f = np.where(W >= 0, down, up)
            W = d[:, y] + f * W
            S = np.abs(d[:, y]) + f * S
    return W, S


def dual_cone_min(d: ArrayLike, eps: float) -> NDArray[np.float64]:
    """``min <d[k], p>`` over the extreme rays ``p`` of the DP cone (normalised ``p_0 = 1``), per row.

    ``d`` has shape ``(n_rows, n_obs)`` (or ``(n_obs,)``); the rows are checked independently. The
    result is ``>= 0`` for a row iff ``<d[k], p> >= 0`` for every ``p >= 0`` with
    ``p_y <= e^eps p_{y'}`` for ``|y - y'| = 1`` (module docstring). Values may be ``+-inf`` when the
    rays' ratio ``e^{eps n_obs}`` overflows; the sign stays right.
    """
    eps = check_positive("eps", eps)
    d = np.atleast_2d(np.asarray(d, dtype=float))
    return _cone_min_with_magnitude(d, eps)[0]


def is_dual_feasible(C: ArrayLike, nu: ArrayLike, eps: float, margin: bool = True) -> bool:
    """True iff ``nu`` is dual feasible for LP (11) with cost ``C`` (every row passes :func:`dual_cone_min`).

    With ``margin=True`` (default) each row must pass with room for the rounding of the check itself:
    ``W_0 >= gamma * S_0``, where ``S_0`` is the sum of the absolute values of the terms along the minimising
    ray and ``gamma = 4 (n_obs + 2) u`` (``u`` the unit roundoff), a generous form of the standard error
    bound of a recursive sum with one multiplication per step (Higham, *Accuracy and Stability of
    Numerical Algorithms*, 2002, §3.1). ``margin=False`` is the plain floating-point sign test.
    """
    C = _cost_matrix(C)
    eps = check_positive("eps", eps)
    nu = np.asarray(nu, dtype=float)
    if nu.shape != (C.shape[1],):
        raise ValueError(f"nu must have shape ({C.shape[1]},), got {nu.shape}")
    W, S = _cone_min_with_magnitude(C - nu[None, :], eps)
    gamma = 4.0 * (C.shape[1] + 2) * np.finfo(float).eps / 2 if margin else 0.0
    with np.errstate(invalid="ignore"):
        ok = W >= gamma * S
    return bool(np.all(ok))


def _kms_solve(a: float, one_minus_a2: float, b: NDArray[np.float64]) -> NDArray[np.float64]:
    """Solve ``A x = b`` for the KMS matrix ``A[z, y] = a^{|z - y|}`` with its tridiagonal inverse."""
    n = b.size
    if n == 1:
        return b.copy()
    x = (1.0 + a * a) * b
    x[0], x[-1] = b[0], b[-1]
    x[:-1] -= a * b[1:]
    x[1:] -= a * b[:-1]
    return x / one_minus_a2


def exact_count_dual(C: ArrayLike, eps: float) -> tuple[NDArray[np.float64], float]:
    """Complementary-slackness dual of the exact solver: ``nu = A^{-1} b`` (module docstring).

    Returns ``(nu, primal_risk)`` where ``primal_risk = sum_z w_z b_z`` (``w = A^{-1} 1``, the weights of
    the geometric mechanism's rows) is the risk of the exact solver's estimator; ``sum(nu)`` equals it
    up to rounding.
    """
    C = _cost_matrix(C)
    eps = check_positive("eps", eps)
    n = C.shape[1]
    a = float(np.exp(-eps))
    one_minus_a2 = float(-np.expm1(-2.0 * eps))
    z = np.arange(n)
    R = np.exp(-eps * np.abs(z[:, None] - z[None, :]).astype(float))  # rays r_z as rows
    b = (R @ C.T).min(axis=1)  # b_z = min_k <C[k], r_z>
    nu = _kms_solve(a, one_minus_a2, b)
    w = _kms_solve(a, one_minus_a2, np.ones(n))
    return nu, float(w @ b)


def dual_lower_bound(C: ArrayLike, nu: ArrayLike, eps: float, max_halvings: int = 200) -> tuple[NDArray[np.float64], float]:
    """Lower ``nu`` by the smallest ``delta >= 0`` (to bisection accuracy) that makes it dual feasible.

    Returns ``(nu - delta, delta)``; ``sum(nu - delta)`` is then a lower bound on the risk of every
    eps-DP estimator. ``delta`` is found by doubling from a rounding-level step and then bisecting;
    the returned point always passes :func:`is_dual_feasible`.
    """
    C = _cost_matrix(C)
    eps = check_positive("eps", eps)
    nu = np.asarray(nu, dtype=float)
    if nu.shape != (C.shape[1],):
        raise ValueError(f"nu must have shape ({C.shape[1]},), got {nu.shape}")
    if is_dual_feasible(C, nu, eps):
        return nu.copy(), 0.0
    scale = max(float(np.max(np.abs(C))), float(np.max(np.abs(nu))), np.finfo(float).tiny)
    hi = scale * 1e-16
    for _ in range(max_halvings):
        if is_dual_feasible(C, nu - hi, eps):
            break
        hi *= 2.0
    else:  # pragma: no cover - nu - hi with hi >= max C makes every row of C - nu positive
        raise RuntimeError("could not make nu dual feasible")
    lo = 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if is_dual_feasible(C, nu - mid, eps):
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-3 * hi:
            break
    return nu - hi, hi


def certify_count_problem(C: ArrayLike, eps: float, primal_risk: float | None = None) -> DualCertificate:
    """Dual certificate for LP (11) with cost ``C[k, y]`` and chain neighbours ``y, y + 1``.

    Builds the exact solver's complementary-slackness dual (:func:`exact_count_dual`), makes it
    feasible (:func:`dual_lower_bound`) and reports the bound and the gap to ``primal_risk``, the risk
    of an eps-DP estimator (default: the exact solver's risk as recomputed from the rays).
    """
    C = _cost_matrix(C)
    eps = check_positive("eps", eps)
    nu0, primal = exact_count_dual(C, eps)
    if primal_risk is not None:
        primal = float(primal_risk)
    nu, delta = dual_lower_bound(C, nu0, eps)
    lb = float(np.sum(nu))
    return DualCertificate(nu=nu, lower_bound=lb, delta=delta, primal_risk=primal, gap=primal - lb, eps=eps)


def certify_ubapp(K: int, eps: float, theta_grid: ArrayLike, loss: str = "squared", prior: ArrayLike | None = None) -> DualCertificate:
    """Certificate for the paper's Bernoulli example on ``theta_grid`` (estimates on the same grid).

    ``C[k, y] = sum_j L(theta_j, theta_k) pi_j Binom(y; K, theta_j)``, computed with
    :func:`dpbayes.ubapp.optimal.expected_loss_matrix` (no ``M x M`` loss matrix). ``primal_risk`` is the risk of
    ``ubapp_exact(K, eps, theta_grid, prior, loss)``, whose eps-DP that function verifies, so
    ``lower_bound <= optimum <= primal_risk``.
    """
    from dpbayes.ubapp.optimal import binomial_likelihood, expected_loss_matrix, ubapp_exact, uniform_prior

    K = check_int("K", K, minimum=1)
    eps = check_positive("eps", eps)
    theta = np.asarray(theta_grid, dtype=float)
    Q = binomial_likelihood(K, theta)
    pi = uniform_prior(theta) if prior is None else np.asarray(prior, dtype=float)
    C = expected_loss_matrix(Q * pi[None, :], theta, theta, loss).T  # (n_est, n_obs)
    primal = ubapp_exact(K, eps, theta, prior=prior, loss=loss).risk
    return certify_count_problem(C, eps, primal_risk=primal)


# --------------------------------------------------------------------------------------------
# When is the exact solver optimal? The single-crossing condition (issue 36)
# --------------------------------------------------------------------------------------------


def _crossing_down(C: NDArray[np.float64], tol: float) -> bool:
    for k in range(C.shape[0] - 1):
        D = C[k + 1 :] - C[k][None, :]
        s = np.where(D > tol, 1, np.where(D < -tol, -1, 0))
        # once a difference has been negative it may not become positive again
        seen_neg = np.maximum.accumulate(s < 0, axis=1)
        if np.any(seen_neg[:, :-1] & (s[:, 1:] > 0)):
            return False
    return True


def single_crossing(C: ArrayLike, rtol: float = 1e-12) -> bool:
    """True iff every pair of rows of ``C`` crosses at most once, the later row winning on the same side.

    ``C[k, y]`` is the (unnormalised) expected loss of estimate ``k`` at count ``y``, rows ordered by the
    estimate. The condition: for every ``k < k'`` the difference ``C[k', y] - C[k, y]`` changes sign at
    most once as ``y`` grows, from ``+`` to ``-`` for every pair (or, the count reversed, from ``-`` to ``+``
    for every pair); entries within ``rtol * max|C|`` of zero are skipped. It implies that the non-private
    Bayes action ``argmin_k C[k, y]`` is monotone in ``y``; for a likelihood with a monotone likelihood ratio
    and a loss increasing in ``|g(theta) - t|`` it follows from ``g`` monotone (variation diminishing).
    Cost ``O(n_est^2 n_obs)``.

    Parameters
    ----------
    C : array_like, shape (n_est, n_obs)
        Expected-loss matrix, finite.
    rtol : float
        Relative size below which a difference counts as zero, ``>= 0``.
    """
    C = _cost_matrix(C)
    if not (np.isfinite(rtol) and rtol >= 0):
        raise ValueError(f"rtol must be a finite number >= 0, got {rtol!r}")
    tol = rtol * float(np.max(np.abs(C)))
    return _crossing_down(C, tol) or _crossing_down(C[:, ::-1], tol)


def target_cost_matrix(
    K: int, theta_grid: ArrayLike, prior: ArrayLike, target: ArrayLike, estimates: ArrayLike, loss: str = "squared"
) -> NDArray[np.float64]:
    """``C[k, y] = sum_j L(g_j, t_k) pi_j Binom(y; K, theta_j)`` for estimating ``g(theta)`` from a count.

    Parameters
    ----------
    K : int
        Trials, ``>= 1``.
    theta_grid : array_like, shape (M,)
        Parameter grid in ``[0, 1]``.
    prior : array_like, shape (M,)
        Prior probabilities on the grid.
    target : array_like, shape (M,)
        Values ``g(theta_j)`` of the estimand.
    estimates : array_like, shape (n_est,)
        Candidate estimates ``t_k``.
    loss : {"squared", "absolute"}
        ``(g - t)^2`` or ``|g - t|``.
    """
    from dpbayes.ubapp.optimal import binomial_likelihood

    K = check_int("K", K, minimum=1)
    theta = np.asarray(theta_grid, dtype=float)
    Q = binomial_likelihood(K, theta)
    pi = np.asarray(prior, dtype=float)
    g = np.asarray(target, dtype=float)
    t = np.asarray(estimates, dtype=float)
    if pi.shape != theta.shape or g.shape != theta.shape:
        raise ValueError(f"prior and target must have the shape of theta_grid {theta.shape}, got {pi.shape} and {g.shape}")
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)):
        raise ValueError("estimates must be a non-empty 1-d array of finite numbers")
    if loss not in ("squared", "absolute"):
        raise ValueError(f"loss must be 'squared' or 'absolute', got {loss!r}")
    diff = np.abs(g[:, None] - t[None, :])
    L = diff**2 if loss == "squared" else diff
    return (Q @ (pi[:, None] * L)).T


def random_target_problem(
    rng: np.random.Generator, monotone: bool, loss: str = "squared"
) -> tuple[NDArray[np.float64], float]:
    """A random problem of estimating ``g(theta)`` from a binomial count: ``(C, eps)`` for :func:`certify_count_problem`.

    ``K`` uniform in ``1..30``, a grid of ``M`` (5..41) equally spaced thetas with a ``Beta(a, b)`` prior on it
    (``log10 a, log10 b`` uniform in ``[-0.5, 1]``), eps log-uniform in ``[0.01, 10]``, 3..29 estimates drawn
    uniformly in the range of ``g``. ``monotone=True``: ``g`` increasing or decreasing at random (cumulative
    sums of exponential steps); ``False``: ``g(theta_j)`` independent uniforms.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness.
    monotone : bool
        Whether the target is monotone in theta.
    loss : {"squared", "absolute"}
        Loss in the target, see :func:`target_cost_matrix`.
    """
    from dpbayes.ubapp.optimal import beta_prior_on_grid
    from dpbayes.core.validation import check_rng

    rng = check_rng("rng", rng)
    K, M = int(rng.integers(1, 31)), int(rng.integers(5, 42))
    eps = float(10 ** rng.uniform(-2, 1))
    theta = np.linspace(0.0, 1.0, M)
    a, b = 10 ** rng.uniform(-0.5, 1.0, 2)
    if monotone:
        g = np.cumsum(rng.exponential(size=M))
        g = (g - g[0]) / (g[-1] - g[0])
        g = g if rng.random() < 0.5 else g[::-1]
    else:
        g = rng.uniform(size=M)
    est = np.sort(rng.uniform(g.min(), g.max(), int(rng.integers(3, 30))))
    return target_cost_matrix(K, theta, beta_prior_on_grid(theta, a, b), g, est, loss), eps


# --------------------------------------------------------------------------------------------
# Outputs off the grid (squared loss): rounding is post-processing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OffGridBound:
    """Bounds on the Bayes MSE of every eps-DP estimator of ``theta`` from the count, outputs anywhere in R.

    Attributes
    ----------
    lower : float
        ``(sqrt(grid_lower) - h/2)^2``: no eps-DP estimator with real outputs has a smaller Bayes MSE.
    upper : float
        Bayes MSE of the geometric mechanism + posterior mean (real outputs; eps-DP), so the optimum lies
        in ``[lower, upper]``.
    grid_lower : float
        Certified lower bound (:func:`certify_count_problem`) for estimators with outputs on the grid.
    h : float
        Spacing of the output grid.
    """

    lower: float
    upper: float
    grid_lower: float
    h: float

    @property
    def relative_width(self) -> float:
        """``(upper - lower) / upper``: how far any estimator with real outputs can be below ``upper``."""
        return (self.upper - self.lower) / self.upper


def off_grid_bound(K: int, eps: float, M_out: int = 5000, beta_prior: tuple[float, float] = (1.0, 1.0)) -> OffGridBound:
    """Lower and upper bounds on the best Bayes MSE over *all* eps-DP estimators of theta with real outputs.

    Continuous ``Beta(a, b)`` prior on theta, ``K`` Bernoulli trials, the count released (neighbours ``y``,
    ``y + 1``), squared loss. An estimator ``delta`` with real outputs can be clipped to ``[0, 1]`` (never
    worse, theta being in ``[0, 1]``) and rounded to the nearest point of the grid of ``M_out`` equally
    spaced points (spacing ``h = 1 / (M_out - 1)``): both are post-processing, so the rounded estimator is
    eps-DP with outputs on the grid, and by Minkowski's inequality its root MSE is at most
    ``sqrt(MSE(delta)) + h/2``. Hence ``MSE(delta) >= (sqrt(LP_h) - h/2)^2`` where ``LP_h`` is the optimum
    over grid outputs, itself bounded below by a dual certificate (:func:`certify_count_problem` on
    ``C[k, y] = P(y) ((t_k - m_y)^2 + v_y)``, ``m_y`` and ``v_y`` the posterior mean and variance, ``P(y)``
    Beta-binomial). The upper bound is the geometric mechanism + posterior mean
    (:func:`dpbayes.ubapp.optimal.ubapp_exact` without grid).

    Parameters
    ----------
    K : int
        Trials, ``1 <= K <= 2000``.
    eps : float
        Privacy parameter, ``> 0``.
    M_out : int
        Points of the output grid, ``2 <= M_out <= 200000``.
    beta_prior : tuple of float
        ``(a, b)``, both ``> 0``.
    """
    from dpbayes.ubapp.optimal import betabinom_logpmf, ubapp_exact

    K = check_int("K", K, minimum=1, maximum=2000)
    eps = check_positive("eps", eps)
    M_out = check_int("M_out", M_out, minimum=2, maximum=200000)
    a, b = check_positive("beta_prior[0]", beta_prior[0]), check_positive("beta_prior[1]", beta_prior[1])
    y = np.arange(K + 1, dtype=float)
    p_y = np.exp(betabinom_logpmf(y, K, a, b))
    m = (a + y) / (a + b + K)
    v = m * (1.0 - m) / (a + b + K + 1.0)
    t = np.linspace(0.0, 1.0, M_out)
    C = p_y[None, :] * ((t[:, None] - m[None, :]) ** 2 + v[None, :])
    cert = certify_count_problem(C, eps)
    h = 1.0 / (M_out - 1)
    root = max(float(np.sqrt(max(cert.lower_bound, 0.0))) - h / 2.0, 0.0)
    upper = ubapp_exact(K, eps, beta_prior=(a, b)).risk
    return OffGridBound(lower=root**2, upper=upper, grid_lower=cert.lower_bound, h=h)
