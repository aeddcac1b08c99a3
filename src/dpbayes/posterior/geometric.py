"""The geometric release as chapter 2's yardstick: the exact cost of LSHist over it, and when it is optimal.

Not in the notes (``laplace-optimality-notes.md``); it answers how far their Laplace mechanism (LSHist,
Alg. 2, binary data) is from the best eps-DP release. Binary data: data set ``x`` (ones) of public size
``n``, release ``j`` (the candidate ``Beta(a + j, b + n - j)``), a loss ``L[x, j]`` that is 0 on the
diagonal (Hellinger distance, total variation, KL, error of the posterior mean), weights ``pi`` over
data sets. All three mechanisms add noise ``D`` to ``x`` and clamp to ``[0, n]``; ``a = e^-eps``.

**The offsets** (:func:`offset_pmf`). Geometric: ``P[D = d] = tanh(eps/2) a^|d|``. LSHist-round
(``round(eta)``, ``eta ~ Lap(1/eps)``): ``P[D = 0] = 1 - e^(-eps/2)``, ``P[D = d] = sinh(eps/2) a^|d|``
otherwise. LSHist (``floor(eta)``): ``P[D = d] = (1 - a)/2 a^d`` for ``d >= 0``, ``(1 - a)/2 a^(-d-1)`` for
``d < 0``. Two identities follow:

* rounded Laplace = ``cosh(eps/2)`` x geometric ``- (cosh(eps/2) - 1)`` x (point mass at 0), as signed
  measures (``sinh / tanh = cosh``). The clamp is a function of ``x + D`` and the loss vanishes at ``D = 0``,
  so **at every data set, for every prior and every loss with a zero diagonal**, the mean loss of
  LSHist-round is ``cosh(eps/2)`` times the geometric mechanism's: the cost of continuous noise on a count.
* floored Laplace = the geometric offset, shifted by ``-1`` with probability ``1/2`` (check the two sides);
  its symmetrised law ``(P[d] + P[-d])/2`` is ``cosh(eps/2)^2`` times the geometric one for ``d != 0``. When
  the problem is symmetric under ``x -> n - x, j -> n - j`` (a symmetric prior ``a = b`` with its
  prior-predictive weights, and every loss of chapter 2), the averaged loss of a mechanism depends on its
  offset law only through the symmetrised law, so **the averaged** mean loss of LSHist is
  ``cosh(eps/2)^2 = (1 + cosh eps)/2`` times the geometric mechanism's, and ``cosh(eps/2)`` times
  LSHist-round's: the cost of flooring. At a single data set, or under an asymmetric prior, this factor
  does not hold.

Neither identity depends on ``n``, the prior's parameters or the loss (:func:`cost_factor`). The ratios to
the **optimum** are these factors times ``geometric / optimum``, which is exactly 1 where the geometric
mechanism is optimal and depends on ``n``, the prior and the loss elsewhere.

**When is the geometric mechanism optimal?** (:func:`geometric_certificate`). In the notation of
:mod:`dpbayes.ubapp.certificates` (cost ``C[k, y] = pi_y L[y, k]``, estimate ``k`` = release, observation ``y`` =
data set), the truncated geometric mechanism has rows ``P[k, :] = c_k r_k`` with the rays
``r_k(y) = a^|k - y|`` (``c_k = tanh(eps/2)`` inside, ``1/(1 + a)`` at ``0`` and ``n``). If it is optimal, complementary
slackness forces the dual ``nu`` to solve ``A nu = b`` with ``A[k, y] = a^|k - y|`` (Kac-Murdock-Szegő,
tridiagonal inverse) and ``b_k = <C[k], r_k>``: ``nu`` in closed form. With ``d_k = C[k] - nu`` the DP
inequalities tight on ``r_k`` represent ``d_k`` uniquely, with multipliers proportional to the discounted
tail sums

    ``T+_k(y) = sum_{y' >= y} a^(y' - y) d_k(y')`` for ``y > k``,  ``T-_k(y) = sum_{y' <= y} a^(y - y') d_k(y')`` for ``y < k``,

so ``nu`` is dual feasible -- and the geometric mechanism optimal among **all** eps-DP releases -- **if and
only if every tail sum is >= 0**. Its smallest value divided by the geometric mechanism's averaged loss
is the *margin*; it is a continuous function of eps, and the exact threshold below which the
geometric mechanism stops being optimal is its root (``eps_star_exact`` of :func:`geometric_threshold`,
Brent's method on a bracket from a scan). Under concentrated priors that root can be set by data sets of
negligible mass (Beta(50, 5), ``n = 50``: exact root near 4.2, relative excess over the optimum about
1e-6 from eps = 1.4), so the threshold eps*(n) the book reports carries a stated tolerance ``rtol``:
the largest eps at which ``geometric / optimum - 1`` equals ``rtol`` (``rtol = 0``: the exact root). The sufficiency is weak duality and needs no assumption on the loss;
the lower bound ``sum(nu)`` is checked in floating point with a rounding margin by
:func:`dpbayes.ubapp.certificates.dual_lower_bound` (Higham's bound of a recursive sum), and the tests repeat the
check in exact rational arithmetic at small ``n``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq

from dpbayes.ubapp.certificates import dual_lower_bound
from dpbayes.core.geometric import geometric_kernel_sums
from dpbayes.posterior.optimal import _check_eps_scan, beta_binomial_data_prior, binary_loss_matrix
from dpbayes.core.validation import check_choice, check_int, check_positive

__all__ = [
    "COST_FACTORS",
    "OFFSET_KINDS",
    "cost_factor",
    "offset_pmf",
    "GeometricCertificate",
    "geometric_certificate",
    "binary_geometric_certificate",
    "GeometricThreshold",
    "geometric_threshold",
    "binary_geometric_threshold",
    "relative_excess",
]

#: ``"floor"``: LSHist / LSHist-round; ``"continuous"``: LSHist-round / geometric; ``"lshist"``: LSHist / geometric.
COST_FACTORS = ("floor", "continuous", "lshist")
#: The noise offsets of the three count mechanisms (before clamping).
OFFSET_KINDS = ("geometric", "round", "floor")


def cost_factor(kind: str, eps: ArrayLike) -> NDArray[np.float64] | float:
    """Exact ratio of two count mechanisms' mean losses (module docstring), vectorised over ``eps``.

    Parameters
    ----------
    kind : {"floor", "continuous", "lshist"}
        ``"continuous"``: LSHist-round / Geometric, ``cosh(eps/2)``, at every data set, for every prior and
        every loss that vanishes on the diagonal. ``"floor"``: LSHist / LSHist-round, ``cosh(eps/2)``, and
        ``"lshist"``: LSHist / Geometric, ``cosh(eps/2)^2 = (1 + cosh eps)/2``, both averaged over data sets
        under a problem symmetric in ``x -> n - x`` (symmetric prior).
    eps : float or array_like
        Privacy parameter, ``> 0``.

    Returns
    -------
    float or ndarray
        The factor (``>= 1``), shaped like ``eps``.
    """
    kind = check_choice("kind", kind, COST_FACTORS)
    e = np.asarray(check_positive("eps", eps), dtype=float)
    c = np.cosh(e / 2.0)
    out = c * c if kind == "lshist" else c
    return float(out) if out.ndim == 0 else out


def offset_pmf(kind: str, d: ArrayLike, eps: float) -> NDArray[np.float64] | float:
    """``P[D = d]`` for the offset ``D`` (release minus ``x`` before clamping) of a count mechanism.

    Parameters
    ----------
    kind : {"geometric", "round", "floor"}
        Two-sided geometric noise, Laplace noise ``Lap(1/eps)`` rounded, or floored (LSHist, ``k = 2``).
    d : int or array_like of int
        Offsets.
    eps : float
        Privacy parameter, ``> 0``.
    """
    kind = check_choice("kind", kind, OFFSET_KINDS)
    eps = float(check_positive("eps", eps))
    dd = np.asarray(d)
    if not np.issubdtype(dd.dtype, np.integer):
        raise ValueError("d must hold integers (offsets of a count)")
    dd = dd.astype(float)
    if kind == "geometric":
        out = math.tanh(eps / 2.0) * np.exp(-eps * np.abs(dd))
    elif kind == "round":
        out = np.where(dd == 0, -math.expm1(-eps / 2.0), math.sinh(eps / 2.0) * np.exp(-eps * np.abs(dd)))
    else:
        out = -0.5 * math.expm1(-eps) * np.exp(-eps * np.where(dd >= 0, dd, -dd - 1.0))
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class GeometricCertificate:
    """The closed-form dual of the geometric mechanism for one loss, weights and eps (module docstring).

    Attributes
    ----------
    eps : float
        Privacy parameter.
    nu : ndarray, shape (n + 1,)
        ``A^{-1} b``: the dual the geometric mechanism's optimality would force.
    margin : float
        Smallest tail sum divided by ``primal_risk`` (continuous in eps): ``>= 0`` iff the geometric
        mechanism is optimal.
    margin_at : tuple of int
        ``(k, y)``: the release and the data set of the smallest tail sum.
    primal_risk : float
        Averaged loss of the truncated geometric mechanism, ``sum_k c_k b_k``.
    lower_bound : float
        ``sum(nu - delta)``: a lower bound on the averaged loss of every eps-DP release, with ``delta >= 0``
        the smallest shift (to bisection accuracy) that passes the floating-point dual check with its
        rounding margin (:func:`dpbayes.ubapp.certificates.dual_lower_bound`).
    delta : float
        That shift.
    """

    eps: float
    nu: NDArray[np.float64]
    margin: float
    margin_at: tuple[int, int]
    primal_risk: float
    lower_bound: float
    delta: float

    @property
    def gap(self) -> float:
        """``primal_risk - lower_bound`` (``>= 0`` up to rounding)."""
        return self.primal_risk - self.lower_bound

    @property
    def relative_gap(self) -> float:
        """``gap / primal_risk``."""
        return self.gap / self.primal_risk if self.primal_risk > 0 else 0.0

    @property
    def optimal(self) -> bool:
        """True when the margin is ``>= 0``: the geometric mechanism is optimal among all eps-DP releases."""
        return self.margin >= 0.0


def _check_problem(L: ArrayLike, pi: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    Lm = np.asarray(L, dtype=float)
    if Lm.ndim != 2 or Lm.shape[0] != Lm.shape[1] or Lm.shape[0] < 2:
        raise ValueError(f"L must be a square matrix of size at least 2 (data sets x releases), got shape {Lm.shape}")
    if not np.all(np.isfinite(Lm)) or np.any(Lm < 0):
        raise ValueError("L must hold finite non-negative losses")
    w = np.asarray(pi, dtype=float)
    if w.shape != (Lm.shape[0],) or np.any(~np.isfinite(w)) or np.any(w < 0) or not math.isclose(float(w.sum()), 1.0, abs_tol=1e-9):
        raise ValueError(f"pi must be {Lm.shape[0]} non-negative weights summing to 1")
    return Lm, w


def _dual_and_margin(C: NDArray[np.float64], eps: float) -> tuple[NDArray[np.float64], float, float, tuple[int, int]]:
    """``nu``, the geometric mechanism's averaged loss, and the smallest tail sum of ``d_k = C[k] - nu``
    relative to that loss, with its ``(k, y)`` (module docstring)."""
    m = C.shape[0]
    a = math.exp(-eps)
    idx = np.arange(m)
    R = np.exp(-eps * np.abs(idx[:, None] - idx[None, :]).astype(float))
    b = np.einsum("ky,ky->k", C, R)
    c = np.full(m, math.tanh(eps / 2.0))
    c[0] = c[-1] = 1.0 / (1.0 + a)
    primal = float(c @ b)
    nu = (1.0 + a * a) * b
    nu[0], nu[-1] = b[0], b[-1]
    nu[:-1] -= a * b[1:]
    nu[1:] -= a * b[:-1]
    nu /= -math.expm1(-2.0 * eps)
    d = C - nu[None, :]
    best, where = math.inf, (0, 0)
    T = d[:, -1].copy()  # right tails (rows k < y), from the last data set down
    for y in range(m - 1, 0, -1):
        if y < m - 1:
            T = d[:, y] + a * T
        k = int(np.argmin(T[:y]))
        if T[k] < best:
            best, where = float(T[k]), (k, y)
    T = d[:, 0].copy()  # left tails (rows k > y), from the first data set up
    for y in range(0, m - 1):
        if y > 0:
            T = d[:, y] + a * T
        k = int(np.argmin(T[y + 1 :]))
        if T[y + 1 + k] < best:
            best, where = float(T[y + 1 + k]), (y + 1 + k, y)
    scale = primal if primal > 0 else 1.0
    return nu, primal, best / scale, where


def geometric_certificate(L: ArrayLike, pi: ArrayLike, eps: float, *, lower_bound: bool = True) -> GeometricCertificate:
    """Is the truncated geometric mechanism the best eps-DP release for loss ``L`` and weights ``pi``?

    Parameters
    ----------
    L : array_like, shape (n + 1, n + 1)
        ``L[x, j]``, the loss of release ``j`` at data set ``x`` (finite, ``>= 0``), ``n >= 1``.
    pi : array_like, shape (n + 1,)
        Weights of the data sets (non-negative, summing to 1).
    eps : float
        Privacy parameter, ``> 0``; neighbours ``x ~ x + 1``.
    lower_bound : bool
        Compute the rounding-safe lower bound (``O(n^2)`` per bisection step); otherwise
        ``lower_bound = sum(nu)`` and ``delta = nan``.

    Returns
    -------
    GeometricCertificate
        The closed-form dual, its margin (``>= 0`` iff the geometric mechanism is optimal), the geometric
        mechanism's averaged loss and the certified lower bound on every eps-DP release's.
    """
    Lm, w = _check_problem(L, pi)
    eps = float(check_positive("eps", eps))
    C = (w[:, None] * Lm).T  # C[k, y] = pi_y L[y, k]
    nu, primal, margin, where = _dual_and_margin(C, eps)
    if lower_bound:
        nu_low, delta = dual_lower_bound(C, nu, eps)
        lb = float(np.sum(nu_low))
    else:
        lb, delta = float(np.sum(nu)), float("nan")
    return GeometricCertificate(eps=eps, nu=nu, margin=margin, margin_at=where, primal_risk=primal, lower_bound=lb, delta=delta)


def binary_geometric_certificate(
    n: int, eps: float, prior: ArrayLike = (1.0, 1.0), *, loss: str = "hellinger", data_prior: ArrayLike | None = None
) -> GeometricCertificate:
    """:func:`geometric_certificate` for chapter 2's binary release: ``L`` from
    :func:`dpbayes.posterior.optimal.binary_loss_matrix` (``n <= 3000``), weights the prior predictive
    (:func:`dpbayes.posterior.optimal.beta_binomial_data_prior`) unless ``data_prior`` is given."""
    n = check_int("n", n, minimum=1, maximum=3000)
    L = binary_loss_matrix(n, prior, loss)
    w = beta_binomial_data_prior(n, prior) if data_prior is None else data_prior
    return geometric_certificate(L, w, eps)


@dataclass(frozen=True)
class GeometricThreshold:
    """Result of :func:`geometric_threshold`.

    Attributes
    ----------
    eps_star : float
        eps*(n) at tolerance ``rtol``: the largest eps in ``eps_range`` at which the geometric mechanism's
        relative excess over the optimum, ``geometric / optimum - 1``, equals ``rtol``; just above it the
        excess is at most ``rtol``. Equal to ``eps_star_exact`` when ``rtol = 0``. ``nan`` when the margin
        has no sign change on the scan.
    sign_changes : int
        Number of sign changes of the margin on the scan (1: a single exact threshold in the range).
    optimal_at_low : bool
        Margin ``>= 0`` at the lower end of the range.
    optimal_at_high : bool
        Margin ``>= 0`` at the upper end of the range.
    eps_star_exact : float
        The largest root of the margin in ``eps_range``: the geometric mechanism is exactly optimal just
        above it and not just below (``nan`` without a sign change).
    rtol : float
        The tolerance of ``eps_star``.
    """

    eps_star: float
    sign_changes: int
    optimal_at_low: bool
    optimal_at_high: bool
    eps_star_exact: float = math.nan
    rtol: float = 0.0


def relative_excess(L: ArrayLike, pi: ArrayLike, eps: float) -> float:
    """``geometric / optimum - 1``: the truncated geometric mechanism's averaged loss over the best eps-DP release's.

    The optimum is the geometric mechanism followed by its Bayes-optimal remap (Ghosh, Roughgarden and
    Sundararajan 2009), exact when ``L[x, j]`` is non-decreasing in ``|j - x|`` (every loss of
    :func:`dpbayes.posterior.optimal.binary_loss_matrix`); where the certificate's margin is ``>= 0`` the
    excess is 0 without that computation. Not in the notes; the yardstick of chapter 2's eps*(n).
    """
    Lm, w = _check_problem(L, pi)
    eps = float(check_positive("eps", eps))
    C = (w[:, None] * Lm).T
    _, primal, margin, _ = _dual_and_margin(C, eps)
    return _excess(C, eps, primal, margin)


def _excess(C: NDArray[np.float64], eps: float, primal: float, margin: float) -> float:
    """The geometric mechanism's excess over its Bayes remap: ``best = sum_z min_j (G C^T)[z, j]``, the
    products of ``G`` with ``C``'s rows by :func:`dpbayes.core.geometric.geometric_kernel_sums` (``O(n^2)``,
    not the ``O(n^3)`` matrix product; the same sums to a few ulp, tested against it)."""
    if margin >= 0.0 or primal <= 0.0:
        return 0.0
    best = float(geometric_kernel_sums(C, eps, 0, axis=1)[0].min(axis=0).sum())  # C[j, x] = w[x] L[x, j]
    return max(primal / best - 1.0, 0.0) if best > 0 else math.inf


def geometric_threshold(
    L: ArrayLike,
    pi: ArrayLike,
    eps_range: tuple[float, float] = (0.01, 10.0),
    *,
    scan: int = 48,
    xtol: float = 1e-12,
    rtol: float = 1e-6,
) -> GeometricThreshold:
    """eps*(n): above it the geometric mechanism is within ``rtol`` of the best eps-DP release.

    The margin of :func:`geometric_certificate` is scanned at ``scan`` log-spaced values of ``eps_range``;
    the largest bracket with a sign change is refined by ``scipy.optimize.brentq`` to ``xtol``: the exact
    threshold ``eps_star_exact``. With ``rtol > 0``, the scan points below it are visited downwards until
    the relative excess (:func:`relative_excess`) exceeds ``rtol``, and the root of ``excess - rtol`` on
    that bracket is ``eps_star`` (Brent's method, ``xtol``). Not in the notes; the module docstring
    gives the certificate.

    Parameters
    ----------
    L, pi : array_like
        As in :func:`geometric_certificate`.
    eps_range : (float, float)
        ``0 < low < high``.
    scan : int
        Scan points, ``>= 2``.
    xtol : float
        Absolute tolerance of the root, ``> 0``.
    rtol : float
        Tolerance of eps*(n), ``>= 0``: the relative excess of the geometric mechanism over the optimum
        below which it counts as optimal. Default ``1e-6``, below every digit the book prints; ``0`` gives
        the exact threshold, which data sets of negligible prior mass can set.
    """
    Lm, w = _check_problem(L, pi)
    lo, hi, scan, xtol = _check_eps_scan(eps_range, scan, xtol)
    rtol = float(rtol)
    if not (math.isfinite(rtol) and rtol >= 0.0):
        raise ValueError(f"rtol must be a finite number >= 0, got {rtol}")
    C = (w[:, None] * Lm).T

    def margin(e: float) -> float:
        return _dual_and_margin(C, e)[2]

    def excess_minus_rtol(e: float) -> float:
        _, primal, m, _ = _dual_and_margin(C, e)
        return _excess(C, e, primal, m) - rtol

    grid = np.geomspace(lo, hi, scan)
    vals = np.array([margin(e) for e in grid])
    ok = vals >= 0
    changes = np.flatnonzero(ok[:-1] != ok[1:])
    star = star_tol = math.nan
    if changes.size:
        i = int(changes[-1])
        star = star_tol = float(brentq(margin, grid[i], grid[i + 1], xtol=xtol))
        if rtol > 0.0:
            # walk down from the exact root (excess 0 there) to the first scan point whose excess exceeds rtol
            upper = star
            for e in grid[: i + 1][::-1]:
                if excess_minus_rtol(float(e)) > 0.0:
                    star_tol = float(brentq(excess_minus_rtol, float(e), upper, xtol=xtol))
                    break
                upper = float(e)
            else:
                star_tol = lo  # within rtol on the whole scanned range below the exact root
    return GeometricThreshold(eps_star=star_tol, sign_changes=int(changes.size), optimal_at_low=bool(ok[0]),
                              optimal_at_high=bool(ok[-1]), eps_star_exact=star, rtol=rtol)


def binary_geometric_threshold(
    n: int,
    prior: ArrayLike = (1.0, 1.0),
    *,
    loss: str = "hellinger",
    data_prior: ArrayLike | None = None,
    eps_range: tuple[float, float] = (0.01, 10.0),
    scan: int = 48,
    rtol: float = 1e-6,
) -> GeometricThreshold:
    """:func:`geometric_threshold` for chapter 2's binary release (loss and weights as in
    :func:`binary_geometric_certificate`; ``rtol`` as there, default ``1e-6``)."""
    n = check_int("n", n, minimum=1, maximum=3000)
    L = binary_loss_matrix(n, prior, loss)
    w = beta_binomial_data_prior(n, prior) if data_prior is None else data_prior
    return geometric_threshold(L, w, eps_range, scan=scan, rtol=rtol)
