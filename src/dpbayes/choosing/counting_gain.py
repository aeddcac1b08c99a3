"""What the Bayes gain of a Laplace-noised count needs: a known ``p``, a prior on an unknown ``p``, or no prior (beyond the paper).

Source: M. Naldi and G. D'Acquisto, "Differential privacy for counting queries: can Bayes
estimation help uncover the true value?" (chapter 4). Model: the count ``C`` of ``n`` records, the noisy
response ``Y = C + R`` with ``R ~ Laplace(0, 1/eps)`` (eq. (1)); every quantity is exact in the sense of
:mod:`dpbayes.counting.risk` (closed forms outside ``[0, n]``, Gauss-Legendre between break points inside).

The paper's gain (its posterior mean against the naive ``1/eps``, eq. (14)) assumes ``p`` known. This module
sets it beside the estimates that need less: a Beta prior on ``p``, ``p`` estimated from the response itself
(a plug-in), and two estimates with no prior at all; and it says how far a simulation of the paper's size can
resolve the gap.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

from dpbayes.counting.risk import _check_model, _function_risk, average_risk
from dpbayes.core.validation import check_choice, check_int, check_positive, check_probability

__all__ = [
    "GAIN_COLUMNS",
    "gain_over_naive",
    "PRIOR_FREE",
    "prior_free_fixed_count_ratio",
    "plugin_estimate",
    "plugin_ratio",
    "monte_carlo_resolution",
]


#: The columns of :func:`gain_over_naive`: the paper's posterior mean with ``p`` known, with an unknown ``p``
#: (a Beta prior on it, i.e. a Beta-binomial prior on the count), and two estimates that use no prior.
GAIN_COLUMNS = (
    "p known",
    "flat prior on p",
    "Jeffreys prior on p",
    "plug-in p",
    "Beta-binomial centred",
    "rounded clamped count",
    "truncated geometric",
)


def gain_over_naive(n: int, p: float, eps: float, concentration: float = 20.0) -> dict[str, float]:
    """Average absolute error over the naive ``1/eps`` (eq. (14)) of the estimates of :data:`GAIN_COLUMNS`, exactly.

    The counts are ``Binomial(n, p)`` (the paper's model); every error is averaged over that true prior.

    * ``"p known"``: the paper's posterior mean (eq. (11)), Laplace noise;
    * ``"flat prior on p"``, ``"Jeffreys prior on p"``: ``p ~ Beta(1, 1)`` or ``Beta(1/2, 1/2)``; the posterior mean of the count when ``p`` is
      unknown with that Beta prior (the count is then Beta-binomial a priori), Laplace noise;
    * ``"plug-in p"``: the posterior mean with ``p`` estimated from the noisy count itself
      (:func:`plugin_estimate`, :func:`plugin_ratio`), Laplace noise;
    * ``"Beta-binomial centred"``: ``p ~ Beta(concentration p, concentration (1 - p))``, centred on the
      truth (the robust prior of :func:`dpbayes.counting.risk.misspecified_ratio`), Laplace noise;
    * ``"rounded clamped count"``: the Laplace answer clamped to ``[0, n]`` and rounded: no prior, no ``p``;
    * ``"truncated geometric"``: the two-sided geometric mechanism clamped to ``[0, n]``: no prior.

    Computed by :func:`dpbayes.choosing.candidates.compare_estimators` (absolute loss about ``c / n``,
    multiplied by ``n``), whose Laplace + posterior mean candidate uses this module's integrator.

    Parameters
    ----------
    n : int
        Database size, ``1 <= n <= 2000`` (the absolute-loss limit of the Laplace candidates).
    p : float
        True predicate probability, in ``(0, 1)``.
    eps : float
        Privacy parameter, ``> 0`` (at most 20).
    concentration : float
        Concentration of the centred Beta-binomial prior, ``> 0``.

    Returns
    -------
    dict
        Column name -> error / naive error (below 1: better than the naive answer).
    """
    from dpbayes.choosing import candidates as ec

    n = check_int("n", n, minimum=1, maximum=ec.LAPLACE_ABS_MAX_N)
    p = float(check_probability("p", p))
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie in (0, 1), got {p}")
    eps = float(check_positive("eps", eps))
    concentration = float(check_positive("concentration", concentration))
    truth = ec.CountPrior.binomial(p)
    priors = {
        "p known": truth,
        "flat prior on p": ec.CountPrior.beta(1.0, 1.0),
        "Jeffreys prior on p": ec.CountPrior.beta(0.5, 0.5),
        "Beta-binomial centred": ec.CountPrior.beta(concentration * p, concentration * (1.0 - p)),
    }
    out: dict[str, float] = {}
    for label, prior in priors.items():
        cmp = ec.compare_estimators(n, eps, prior=prior, estimand="proportion", true_prior=truth,
                                    candidates=["laplace-bayes"], loss="absolute")
        out[label] = float(cmp.bayes_risk[0]) * n * eps
    free = ec.compare_estimators(n, eps, prior=truth, estimand="proportion", true_prior=truth,
                                 candidates=["laplace-rounded", "geometric"], loss="absolute")
    risk = dict(zip(free.names, free.bayes_risk))
    out["plug-in p"] = plugin_ratio(n, p, eps)
    out["rounded clamped count"] = float(risk["laplace-rounded"]) * n * eps
    out["truncated geometric"] = float(risk["geometric"]) * n * eps
    return {k: out[k] for k in GAIN_COLUMNS}


#: The estimates that use no prior and no ``p``: the Laplace answer clamped to ``[0, n]`` and rounded, and the
#: truncated (clamped) two-sided geometric mechanism; values: their names in :data:`dpbayes.choosing.candidates.CANDIDATES`.
PRIOR_FREE = {"rounded clamped count": "laplace-rounded", "truncated geometric": "geometric"}


def prior_free_fixed_count_ratio(estimate: str, n: int, eps: float) -> NDArray[np.float64]:
    """``E|est - a|`` over the naive ``1/eps`` at every fixed true count ``a = 0..n`` for an estimate of :data:`PRIOR_FREE`.

    Closed forms of :func:`dpbayes.choosing.candidates.candidate_abs_risk` (absolute error about ``a / n``,
    multiplied by ``n``). Neither estimate uses a prior, so the ratio is the same whatever ``p`` is.

    Parameters
    ----------
    estimate : {"rounded clamped count", "truncated geometric"}
    n : int
        Database size, ``1 <= n <= 20000``.
    eps : float
        Privacy parameter, ``> 0`` (at most 20).

    Returns
    -------
    ndarray, shape (n + 1,)
    """
    from dpbayes.choosing import candidates as ec

    estimate = check_choice("estimate", estimate, tuple(PRIOR_FREE))
    n, _, eps = _check_model(n, 0.5, eps)
    return np.asarray(ec.candidate_abs_risk(PRIOR_FREE[estimate], n, eps), dtype=float) * n * eps


def plugin_estimate(y: ArrayLike, n: int, eps: float) -> NDArray[np.float64]:
    """The posterior mean of the count with ``p`` estimated from the noisy count itself (a plug-in, empirical Bayes).

    ``p_hat(y) = clip(y, 1/2, n - 1/2) / n`` (the clamped noisy count as a fraction, kept half a record from
    the ends so that the prior is never certain of the count), then the paper's posterior mean (eq. (11)) with
    the ``Binomial(n, p_hat(y))`` prior: no ``p`` needed, a function of ``y`` only, so as private as ``y``.
    Constant for ``y <= 0`` and for ``y >= n``. ``O(n)`` per response (a dense posterior, in log space).

    Parameters
    ----------
    y : array_like
        Noisy responses.
    n : int
        Database size, ``1 <= n <= 20000``.
    eps : float
        Privacy parameter, ``> 0``.
    """
    n, _, eps = _check_model(n, 0.5, eps)
    y_arr = np.asarray(y, dtype=float)
    if not np.all(np.isfinite(y_arr)):
        raise ValueError("y must be finite")
    flat = np.clip(y_arr.reshape(-1), 0.0, float(n))
    q = np.clip(flat, 0.5, n - 0.5) / n
    c = np.arange(n + 1, dtype=float)
    log_choose = special.gammaln(n + 1.0) - special.gammaln(c + 1.0) - special.gammaln(n - c + 1.0)
    out = np.empty(flat.size)
    rows = max(1, 4_000_000 // (n + 1))
    for s in range(0, flat.size, rows):
        yy, qq = flat[s : s + rows, None], q[s : s + rows, None]
        lw = log_choose + c * np.log(qq) + (n - c) * np.log1p(-qq) - eps * np.abs(yy - c)
        w = np.exp(lw - lw.max(axis=1, keepdims=True))
        out[s : s + rows] = (w @ c) / w.sum(axis=1)
    return out.reshape(y_arr.shape)


def plugin_ratio(n: int, p: float, eps: float, mass_cut: float = 1e-15) -> float:
    """Average absolute error of :func:`plugin_estimate` over the naive ``1/eps``, counts ``Binomial(n, p)``, exactly.

    The fixed-count risk of :func:`dpbayes.counting.risk.fixed_count_risk` (closed-form tails, Gauss-Legendre between the points
    where the estimate crosses an integer) averaged over the counts carrying all but ``mass_cut`` of the
    binomial mass, as in :func:`dpbayes.counting.risk.average_risk`. ``O(n^2)`` work (the dense posterior at each node).
    """
    n, p, eps = _check_model(n, p, eps)
    mass_cut = float(check_positive("mass_cut", mass_cut))
    k = np.arange(n + 1)
    w = stats.binom.pmf(k, n, p)
    lo = max(int(stats.binom.ppf(mass_cut / 2, n, p)) - 1, 0)
    hi = min(int(stats.binom.isf(mass_cut / 2, n, p)) + 1, n)
    risk = _function_risk(lambda y: plugin_estimate(y, n, eps), k[lo : hi + 1].astype(float), n, eps, "abs")
    return float(np.sum(w[lo : hi + 1] * risk) / np.sum(w[lo : hi + 1])) * eps


def monte_carlo_resolution(n: int, p: float, eps: float, runs: int = 100_000) -> dict[str, float]:
    """What a simulation of ``runs`` draws can resolve of the gap ``1/eps - E|C - m(Y)|``, exactly.

    The paper (§4) estimates the Bayes error ``B = E|C - m(Y)|`` (posterior mean ``m``, ``p`` known) by the
    mean of ``runs`` simulated absolute errors and compares it with the naive error ``1/eps`` (eq. (14)):
    an unpaired design whose standard error is ``sqrt(Var|C - m(Y)| / runs)``. A paired design
    simulates both errors on the same draws: ``sqrt(Var(|C - Y| - |C - m(Y)|) / runs)``. The variances follow
    from the exact moments of :func:`dpbayes.counting.risk.average_risk` (``abs``, ``sq``, ``cross``).

    Parameters
    ----------
    n, p, eps : database size (``<= 20000``), predicate probability, privacy parameter.
    runs : int
        Simulated draws, ``>= 2``.

    Returns
    -------
    dict
        ``gap`` (naive minus Bayes error), ``se_unpaired``, ``se_paired`` and the gap in units of each,
        ``z_unpaired`` and ``z_paired``.
    """
    n, p, eps = _check_model(n, p, eps)
    runs = check_int("runs", runs, minimum=2)
    b = average_risk("mean", n, p, p, eps, "abs")
    sq = average_risk("mean", n, p, p, eps, "sq")
    cross = average_risk("mean", n, p, p, eps, "cross")
    gap = 1.0 / eps - b
    var_bayes = max(sq - b * b, 0.0)
    var_diff = max(2.0 / eps**2 + sq - 2.0 * cross - gap * gap, 0.0)
    se_u, se_p = np.sqrt(var_bayes / runs), np.sqrt(var_diff / runs)
    return {"gap": gap, "se_unpaired": float(se_u), "se_paired": float(se_p),
            "z_unpaired": gap / se_u if se_u > 0 else np.inf, "z_paired": gap / se_p if se_p > 0 else np.inf}
