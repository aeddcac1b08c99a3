"""Large-``n`` limits of the posterior mean's error ratio and ``P(closer)`` for a Laplace-noised count (beyond the paper).

Source: M. Naldi and G. D'Acquisto, "Differential privacy for counting queries: can Bayes
estimation help uncover the true value?" (chapter 4). Model: the count ``C`` of ``n`` records, the noisy
response ``Y = C + R`` with ``R ~ Laplace(0, 1/eps)`` (eq. (1)); every quantity is exact in the sense of
:mod:`dpbayes.counting.risk` (closed forms outside ``[0, n]``, Gauss-Legendre between break points inside).

Two limits, for two regimes: the Gaussian approximation (the noise much wider than one count) and the
lattice limit (a prior flat on the scale of the noise, the count still an integer).
"""

from __future__ import annotations

import numpy as np
from scipy import integrate, special

from dpbayes.counting.risk import MAX_N_RISK, _check_model, fixed_count_risk
from dpbayes.core.validation import check_positive

__all__ = ["gaussian_limit", "lattice_limit"]


def gaussian_limit(n: int, p: float, eps: float) -> dict[str, float]:
    """Error ratio and ``P(closer)`` of the posterior mean in the Gaussian approximation.

    The count is replaced by ``N(np, s**2)``, ``s**2 = np(1 - p)``, and the posterior mean by its
    linear form ``np + k (y - np)``, ``k = s**2 / (s**2 + 2/eps**2)`` (the posterior mean when the
    Laplace noise is replaced by a normal one of the same variance ``2/eps**2``; for a wide prior
    it is also the first-order tilt of the exact posterior mean). With ``D = C - np`` and the
    Laplace noise ``R``, the error is ``k R - (1 - k) D``. Both quantities are one-dimensional
    integrals over ``R`` (``scipy.integrate.quad``):

    * ``ratio = E|k R - (1 - k) D| * eps`` (a folded normal given ``R``);
    * ``closer = P(|k R - (1 - k) D| < |R|)``: given ``R = r > 0`` it is
      ``Phi((1 + k) r / ((1 - k) s)) - Phi(-r / s)``.

    The approximation forgets that the count is an integer: it is the large-``n`` limit only
    where the noise is much wider than one count (``eps`` well below 1); compare
    :func:`lattice_limit`.

    Returns ``{"ratio", "closer"}``.
    """
    n, p, eps = _check_model(n, p, eps)
    if not 0 < p < 1:
        raise ValueError("p must lie in (0, 1)")
    s = np.sqrt(n * p * (1 - p))
    k = s**2 / (s**2 + 2.0 / eps**2)
    d = (1 - k) * s  # sd of (1 - k) D

    def folded(r: float) -> float:
        mu = k * r
        return d * np.sqrt(2 / np.pi) * np.exp(-0.5 * (mu / d) ** 2) + mu * (1 - 2 * special.ndtr(-mu / d))

    def closer(r: float) -> float:
        return special.ndtr((1 + k) * r / d) - special.ndtr(-r / s)

    dens = lambda r: eps * np.exp(-eps * r)  # density of |R|
    upper = 60.0 / eps
    ratio = integrate.quad(lambda r: dens(r) * folded(r), 0, upper, limit=200, epsabs=1e-13, epsrel=1e-11)[0] * eps
    prob = integrate.quad(lambda r: dens(r) * closer(r), 0, upper, limit=200, epsabs=1e-13, epsrel=1e-11)[0]
    return {"ratio": float(ratio), "closer": float(prob)}


def lattice_limit(eps: float) -> dict[str, float]:
    """Error ratio and ``P(closer)`` of the posterior mean when the prior is flat over the integers.

    The large-``n`` limit at fixed ``eps``: the binomial prior becomes flat on the scale of the
    noise, but the count stays an integer, which the posterior mean still exploits (it pulls
    ``y`` towards the nearest integers). Computed exactly with :func:`dpbayes.counting.risk.fixed_count_risk` at the
    central count ``a = N/2`` of a uniform prior on ``{0, ..., N}``, ``N = 2 ceil(50 / eps)``, so
    that both ends are ``50/eps`` away (their influence is below ``e^-50``). For a flat prior the
    risk does not depend on ``a``: this is also the average risk.

    Returns ``{"ratio", "closer", "N"}``.
    """
    eps = float(check_positive("eps", eps))
    big_n = int(2 * np.ceil(50.0 / eps))
    if big_n > MAX_N_RISK:
        raise ValueError(f"eps must be >= {100.0 / MAX_N_RISK} for lattice_limit, got {eps}")
    a = big_n // 2
    ratio = float(fixed_count_risk(a, "mean", big_n, 0.5, eps, "abs", "beta-binomial", 2.0)) * eps
    closer = float(fixed_count_risk(a, "mean", big_n, 0.5, eps, "closer", "beta-binomial", 2.0))
    return {"ratio": ratio, "closer": closer, "N": big_n}
