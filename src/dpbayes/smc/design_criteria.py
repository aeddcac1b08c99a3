"""Design criteria for the truncation interval: which interval is best depends on what "best" means.

Source: Yildirim (2024), Sections 4.1-4.2 ("the paper"). The paper chooses the interval ``[a, b]`` for the
base distribution N(0, 1) by maximising a scalar *score* of the Fisher information ``F`` of one release
``Y = T_a^b(X) + (b - a) V`` (eq. (13)): ``F[0, 0]`` (information about ``mu``, Section 4.1) or the
harmonic mean of the diagonal (Section 4.2, which says it "somewhat accounts for the squared error
... since the mean squared error is implied by the inverse of the Fisher information matrix").

The squared error is governed by the *inverse* of ``F`` (Cramer-Rao), whose diagonal involves the
off-diagonal ``F[0, 1]`` as well. This module computes the classical optimal-design criteria of one
release, all as *losses* (smaller is better):

* ``"F_mumu"``: ``1 / F[0, 0]``, the variance bound for ``mu`` when ``sigma`` is known (the paper's score);
* ``"harmonic"``: ``1 / F[0, 0] + 1 / F[1, 1]``, the inverse of the paper's harmonic score;
* ``"A"``: ``trace(F^-1)``, the sum of the Cramer-Rao variance bounds of ``mu`` and ``sigma`` (A-optimality);
* ``"D"``: ``1 / det F``, the squared volume of the Cramer-Rao ellipse (D-optimality);

for three families of designs:

* ``"symmetric"``: ``[-h, h]``;
* ``"offcentre"``: any ``[a, b]``, used with a fixed orientation;
* ``"mirror"``: any ``[a, b]``, mirrored to ``[-b, -a]`` with probability 1/2 independently for each release
  (the coin is public: it is part of the released interval, drawn without looking at the data). The
  information of one such release is the average of the two orientations'. For N(0, 1) the mirror image
  has the same diagonal and the opposite off-diagonal, so the average is ``diag(F[0, 0], F[1, 1])``:
  the harmonic loss of an interval *is* the A-loss of its mirror-randomised design.

Exact Fisher information by quadrature (:func:`dpbayes.smc.truncation.fisher_information_normal`); optima
by multi-start optimisation (Nelder-Mead in ``(centre, log width)`` or bounded searches in the log
half-width, from a fixed set of starting points). Beyond the paper.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize

from dpbayes.smc import truncation
from dpbayes.core.validation import check_choice, check_int, check_positive

__all__ = ["CRITERIA", "DESIGNS", "design_information", "criterion_loss", "cramer_rao_bounds", "DesignOptimum",
           "optimal_design"]

FloatArray = NDArray[np.float64]

# search range of the interval's log width: widths 0.02 to 24 standard deviations
_LOG_WIDTH_MIN, _LOG_WIDTH_MAX = float(np.log(0.02)), float(np.log(24.0))

#: The criteria, as losses (smaller is better); see the module docstring.
CRITERIA = ("F_mumu", "harmonic", "A", "D")
#: The design families; see the module docstring.
DESIGNS = ("symmetric", "offcentre", "mirror")


def design_information(a: ArrayLike, b: ArrayLike, eps: float, design: str = "offcentre") -> FloatArray:
    """Fisher information about ``(mu, sigma)`` of one release through ``[a, b]`` at N(0, 1).

    Parameters
    ----------
    a, b : array_like
        Interval ends for the base distribution, broadcast together, ``a < b``. For ``"symmetric"``
        they must satisfy ``a = -b`` (to a relative 1e-12).
    eps : float
        Privacy parameter, ``> 0``.
    design : {"symmetric", "offcentre", "mirror"}
        ``"mirror"`` averages the information of ``[a, b]`` and ``[-b, -a]``.

    Returns
    -------
    ndarray, shape ``S + (2, 2)``
        Index 0 is ``mu``, index 1 is ``sigma``. At ``(m, c)`` with interval ``[m + a c, m + b c]`` the
        information is this divided by ``c^2`` (paper Theorem 3).
    """
    check_choice("design", design, DESIGNS)
    a_arr, b_arr = (np.asarray(v, dtype=float) for v in np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float)))
    if design == "symmetric" and not np.allclose(a_arr, -b_arr, rtol=1e-12, atol=1e-12):
        raise ValueError("a symmetric design needs a = -b")
    F = truncation.fisher_information_normal(0.0, 1.0, a_arr, b_arr, eps)
    if design == "mirror":
        F = 0.5 * (F + truncation.fisher_information_normal(0.0, 1.0, -b_arr, -a_arr, eps))
    return F


def _information_parts(F: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(F00, F11, det F)`` of Fisher information matrices (trailing shape ``(2, 2)``, off-diagonal symmetrised)."""
    F_arr = np.asarray(F, dtype=float)
    if F_arr.shape[-2:] != (2, 2) or not np.all(np.isfinite(F_arr)):
        raise ValueError(f"F must be finite with trailing shape (2, 2), got shape {F_arr.shape}")
    f00, f01, f11 = F_arr[..., 0, 0], 0.5 * (F_arr[..., 0, 1] + F_arr[..., 1, 0]), F_arr[..., 1, 1]
    return f00, f11, f00 * f11 - f01 * f01


def criterion_loss(F: ArrayLike, criterion: str) -> FloatArray:
    """Loss (smaller is better) of Fisher information matrices ``F`` (trailing shape ``(2, 2)``).

    ``"F_mumu"``: ``1/F00``; ``"harmonic"``: ``1/F00 + 1/F11``; ``"A"``: ``trace(F^-1)``; ``"D"``: ``1/det F``.
    A singular or indefinite ``F`` (``det F <= 0``) has loss ``inf`` under ``"A"`` and ``"D"``.
    """
    check_choice("criterion", criterion, CRITERIA)
    f00, f11, det = _information_parts(F)
    with np.errstate(divide="ignore", invalid="ignore"):
        if criterion == "F_mumu":
            out = np.where(f00 > 0, 1.0 / f00, np.inf)
        elif criterion == "harmonic":
            out = np.where((f00 > 0) & (f11 > 0), 1.0 / f00 + 1.0 / f11, np.inf)
        elif criterion == "A":
            out = np.where(det > 0, (f00 + f11) / det, np.inf)
        else:
            out = np.where(det > 0, 1.0 / det, np.inf)
    return np.asarray(out, dtype=float)


def cramer_rao_bounds(F: ArrayLike, n: int) -> FloatArray:
    """Cramer-Rao standard-deviation bounds of ``mu`` and ``sigma`` from ``n`` releases of information ``F`` each.

    In units of ``sigma`` when ``F`` is the base information (N(0, 1)): ``sqrt(diag(F^-1) / n)``.
    ``inf`` where ``F`` is singular.

    Returns
    -------
    ndarray, shape ``S + (2,)``
    """
    n = check_int("n", n, minimum=1)
    f00, f11, det = _information_parts(F)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = np.stack([np.where(det > 0, f11 / det, np.inf), np.where(det > 0, f00 / det, np.inf)], axis=-1)
    return np.sqrt(var / n)


@dataclass(frozen=True)
class DesignOptimum:
    """The best interval of one design family under one criterion (see :func:`optimal_design`)."""

    criterion: str
    design: str
    eps: float
    #: the interval ``[a, b]`` for N(0, 1) (for ``"mirror"``: the representative with ``a + b >= 0``)
    a: float
    b: float
    #: the criterion's loss at the optimum
    loss: float
    #: Fisher information of one release of the design at the optimum
    fisher: FloatArray
    #: number of starting points
    n_starts: int
    #: how many starts ended within a relative ``1e-6`` of the best loss (the quadrature's noise is ~1e-10)
    n_agree: int


def _starts(design: str, n_starts: int) -> list[tuple[float, float]]:
    """Deterministic starting points ``(centre, log width)``; the centre is 0 for symmetric designs."""
    widths = np.exp(np.linspace(np.log(0.05), np.log(6.0), n_starts if design == "symmetric" else max(2, int(np.ceil(np.sqrt(n_starts))))))
    if design == "symmetric":
        return [(0.0, float(np.log(w))) for w in widths]
    centres = np.linspace(0.0, 2.0, max(2, int(np.ceil(n_starts / widths.size))))
    pts = [(float(c), float(np.log(w))) for c in centres for w in widths]
    return pts[:n_starts]


def optimal_design(eps: float, criterion: str, design: str, *, n_starts: int = 12) -> DesignOptimum:
    """Best interval of a design family under a criterion, by multi-start optimisation.

    Nelder-Mead on the log loss, in the log width (``"symmetric"``) or in ``(centre, log width)``
    (``"offcentre"``, ``"mirror"``), widths restricted to ``[0.02, 24]``, from ``n_starts`` starting points
    (widths log-spaced in ``[0.05, 6]``, centres in ``[0, 2]``), keeping the best; by the symmetry of N(0, 1)
    the centre ``>= 0`` representative is reported (for ``"offcentre"`` the mirror image has the same loss
    under every criterion here, since they depend on ``F[0, 1]`` through its square only).

    Parameters
    ----------
    eps : float
        Privacy parameter, ``> 0``.
    criterion : {"F_mumu", "harmonic", "A", "D"}
    design : {"symmetric", "offcentre", "mirror"}
    n_starts : int
        Number of starting points, ``>= 2``.
    """
    eps_f = float(check_positive("eps", eps))
    check_choice("criterion", criterion, CRITERIA)
    check_choice("design", design, DESIGNS)
    n_starts = check_int("n_starts", n_starts, minimum=2)

    def loss_cw(centre: float, log_width: float) -> float:
        """Log of the loss (the optimisers see relative changes; quadrature noise is ~1e-10 relative)."""
        if not (np.isfinite(centre) and _LOG_WIDTH_MIN <= log_width <= _LOG_WIDTH_MAX):
            return np.inf
        half = 0.5 * np.exp(log_width)
        F = design_information(centre - half, centre + half, eps_f, "offcentre" if design == "symmetric" else design)
        value = float(criterion_loss(F, criterion))
        return float(np.log(value)) if np.isfinite(value) and value > 0 else np.inf

    ends: list[tuple[float, float, float]] = []  # (log loss, centre, log width)
    for c0, lw0 in _starts(design, n_starts):
        if design == "symmetric":
            res = optimize.minimize(lambda p: loss_cw(0.0, p[0]), np.array([lw0]), method="Nelder-Mead",
                                    options={"xatol": 1e-6, "fatol": 1e-10, "maxiter": 400})
            ends.append((float(res.fun), 0.0, float(res.x[0])))
        else:
            res = optimize.minimize(lambda p: loss_cw(p[0], p[1]), np.array([c0, lw0]), method="Nelder-Mead",
                                    options={"xatol": 1e-5, "fatol": 1e-9, "maxiter": 600})
            ends.append((float(res.fun), abs(float(res.x[0])), float(res.x[1])))
    ends.sort(key=lambda e: e[0])
    best_log_loss, centre, log_width = ends[0]
    n_agree = sum(1 for e in ends if e[0] <= best_log_loss + 1e-6)
    best_loss = float(np.exp(best_log_loss))
    half = 0.5 * float(np.exp(log_width))
    a, b = centre - half, centre + half
    F = design_information(a, b, eps_f, "offcentre" if design == "symmetric" else design)
    return DesignOptimum(criterion=criterion, design=design, eps=eps_f, a=a, b=b, loss=best_loss, fisher=F,
                         n_starts=len(ends), n_agree=n_agree)
