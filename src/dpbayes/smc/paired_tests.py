"""Verdicts with their uncertainty: paired comparisons of two estimators and the sign test (chapter 3).

Beyond the paper: two estimators run on shared replicates (the same individuals and noise) are compared by
their MSE ratio with a sign-flip permutation test, two one-sided permutation tests of equivalence, a paired
bootstrap interval (descriptive) and a Wilcoxon signed-rank test
(:func:`~dpbayes.smc.paired_tests.paired_comparison`). A comparison carries p-values, not a verdict: verdicts
come from a declared rule over the whole family (:func:`~dpbayes.smc.paired_tests.paired_rule`,
:func:`dpbayes.core.verdicts.judge_family`, Holm's correction). :func:`~dpbayes.smc.paired_tests.sign_test_p` is
the exact sign test of a handful of runs.
Re-exported by :mod:`dpbayes.smc.study`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from dpbayes.smc.summaries import _finite_1d
from dpbayes.core.validation import check_int, check_positive, check_probability
from dpbayes.core.verdicts import DIRECTIONAL_WORDS, Outcome, VerdictRule

__all__ = ["PAIRED_VERDICTS", "PERMUTATION_TEST", "PairedComparison", "equivalence_test_name", "paired_comparison",
           "paired_rule", "sign_test_p"]


#: Verdict words of a paired comparison, from the first estimator's point of view.
PAIRED_VERDICTS = DIRECTIONAL_WORDS

#: Name of the test behind a paired comparison's ``permutation_p`` (the declared test of :func:`~dpbayes.smc.paired_tests.paired_rule`).
PERMUTATION_TEST = "sign-flip permutation test of log(MSE_b / MSE_a), two-sided"


def equivalence_test_name(equivalence: float) -> str:
    """Name of the equivalence test of :func:`~dpbayes.smc.paired_tests.paired_comparison` for a band ``equivalence``."""
    return f"two one-sided sign-flip permutation tests of MSE_b / MSE_a at 1/{equivalence:g} and {equivalence:g}"


def paired_rule(level: float, family: str, equivalence: float = 1.25) -> VerdictRule:
    """The declared rule of paired MSE comparisons: the two-sided sign-flip permutation test at ``level``
    (family-wise, Holm), equivalence by two one-sided permutation tests at the band ``equivalence``.

    Parameters
    ----------
    level : float
        Family-wise error rate, in (0, 1) (0.05 for the chapter's 95 %).
    family : str
        The comparisons corrected together.
    equivalence : float
        MSE ratio band ``[1/equivalence, equivalence]`` of equivalence, ``> 1``.
    """
    equivalence = float(check_positive("equivalence", equivalence))
    if equivalence <= 1.0:
        raise ValueError(f"equivalence must be > 1, got {equivalence!r}")
    return VerdictRule(test=PERMUTATION_TEST, alternative="two-sided", level=level, family=family,
                       equivalence_test=equivalence_test_name(equivalence))


@dataclass(frozen=True)
class PairedComparison:
    """Two estimators on the same replicates (see :func:`~dpbayes.smc.paired_tests.paired_comparison`)."""

    #: number of shared replicates
    n: int
    #: ``MSE_b / MSE_a`` over the replicates (above 1: the first estimator is more accurate)
    mse_ratio: float
    #: paired bootstrap percentile interval of ``mse_ratio`` (descriptive only: it undercovers with few
    #: heavy-tailed replicates, and no verdict uses it)
    ci_low: float
    ci_high: float
    #: two-sided sign-flip permutation p-value of ``log mse_ratio`` (exact level under exchangeable pairs)
    permutation_p: float
    #: p-value of equivalence within ``[1/equivalence, equivalence]``: the larger of two one-sided sign-flip
    #: permutation tests of the ratio at the band's ends
    equivalence_p: float
    #: the band of ``equivalence_p``
    equivalence: float
    #: two-sided Wilcoxon signed-rank p-value of the paired differences ``|err_b| - |err_a|`` (reported, never
    #: a verdict's test)
    wilcoxon_p: float
    #: how many replicates the first estimator has the smaller absolute error
    wins: int

    def outcome(self) -> Outcome:
        """This comparison's p-values for :func:`dpbayes.core.verdicts.judge_family` (under :func:`~dpbayes.smc.paired_tests.paired_rule`)."""
        return Outcome(test=PERMUTATION_TEST, p=self.permutation_p, effect=float(np.log(self.mse_ratio)),
                       equivalence_test=equivalence_test_name(self.equivalence), equivalence_p=self.equivalence_p)


def paired_comparison(
    est_a: ArrayLike,
    est_b: ArrayLike,
    truth: float,
    *,
    level: float = 0.95,
    equivalence: float = 1.25,
    n_boot: int = 10000,
    seed: int = 0,
) -> PairedComparison:
    """Is estimator ``a`` more accurate than ``b`` on the same replicates? MSE ratio, paired tests.

    Replicate ``i`` gives both estimators the same data, so the errors are paired. The declared test is a
    two-sided sign-flip permutation test of ``log(MSE_b / MSE_a)``: under the null hypothesis that the two
    squared errors of a replicate are exchangeable, swapping them within random pairs (``n_boot`` times)
    gives the statistic's null distribution, so the test has its level exactly (a paired percentile
    bootstrap of the ratio rejects too often with 10-30 heavy-tailed replicates: about 10 % at the 5 %
    level). Equivalence within ``[1/equivalence, equivalence]`` is tested by two one-sided permutation tests
    with the same swaps: at the upper end the null hypothesis is that ``a``'s squared error and ``b``'s divided
    by ``equivalence`` are exchangeable (ratio ``equivalence``), rejected when the observed ratio is small;
    the lower end alike; ``equivalence_p`` is the larger of the two p-values. The comparison returns p-values
    only: the verdict words come from :func:`dpbayes.core.verdicts.judge_family` under :func:`~dpbayes.smc.paired_tests.paired_rule`,
    Holm-corrected over the family. The paired bootstrap percentile interval of the ratio (replicate indices
    resampled, same ``n_boot``) is descriptive, and the Wilcoxon signed-rank test of ``|err_b| - |err_a|``
    (a rank test of the absolute errors, robust to one wild replicate) is reported beside it.
    Random numbers: ``numpy.random.default_rng(seed)``.

    Parameters
    ----------
    est_a, est_b : array_like, shape (n,)
        Estimates of the two estimators, replicate by replicate; ``n >= 2``.
    truth : float
        The true value.
    level : float
        Level of the (descriptive) bootstrap interval, in (0, 1).
    equivalence : float
        MSE ratio band of the equivalence test, ``> 1``.
    """
    a = _finite_1d("est_a", est_a)
    b = _finite_1d("est_b", est_b)
    if a.shape != b.shape or a.size < 2:
        raise ValueError(f"est_a and est_b must have the same length >= 2, got {a.size} and {b.size}")
    if not np.isfinite(truth):
        raise ValueError(f"truth must be a finite number, got {truth!r}")
    level = float(check_probability("level", level, open_interval=True))
    equivalence = float(check_positive("equivalence", equivalence))
    if equivalence <= 1.0:
        raise ValueError(f"equivalence must be > 1, got {equivalence!r}")
    n_boot = check_int("n_boot", n_boot, minimum=100)
    seed = check_int("seed", seed, minimum=0)
    ea, eb = (a - truth) ** 2, (b - truth) ** 2
    if ea.sum() == 0:
        raise ValueError("estimator a has zero error on every replicate: the MSE ratio is undefined")
    if eb.sum() == 0:
        raise ValueError("estimator b has zero error on every replicate: the MSE ratio is undefined")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, a.size, size=(n_boot, a.size))
    sa, sb = ea[idx].sum(axis=1), eb[idx].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(sa > 0, sb / sa, np.inf)
    lo, hi = np.quantile(ratios, [(1 - level) / 2, (1 + level) / 2])
    observed = abs(np.log(eb.sum() / ea.sum()))
    swap = rng.random((n_boot, a.size)) < 0.5
    pa, pb = np.where(swap, eb, ea).sum(axis=1), np.where(swap, ea, eb).sum(axis=1)
    with np.errstate(divide="ignore"):
        null = np.abs(np.log(pb) - np.log(pa))
    p_perm = float((1 + np.sum(null >= observed * (1 - 1e-12))) / (n_boot + 1))
    p_equiv = 0.0
    for scale, sign in ((equivalence, -1.0), (1.0 / equivalence, 1.0)):  # upper end: ratio below it; lower: above
        es = eb / scale
        obs = sign * np.log(es.sum() / ea.sum())
        qa, qb = np.where(swap, es, ea).sum(axis=1), np.where(swap, ea, es).sum(axis=1)
        nul = sign * (np.log(qb) - np.log(qa))
        p_equiv = max(p_equiv, float((1 + np.sum(nul >= obs - 1e-12 * abs(obs))) / (n_boot + 1)))
    diff = np.abs(b - truth) - np.abs(a - truth)
    p = float(stats.wilcoxon(diff).pvalue) if np.any(diff != 0) else 1.0
    ratio = float(eb.sum() / ea.sum())
    return PairedComparison(n=int(a.size), mse_ratio=ratio, ci_low=float(lo), ci_high=float(hi), permutation_p=p_perm,
                            equivalence_p=p_equiv, equivalence=equivalence, wilcoxon_p=p, wins=int(np.sum(diff > 0)))


def sign_test_p(wins: int, n: int) -> float:
    """Two-sided exact sign test: ``P`` of a split at least as lopsided as ``wins`` of ``n`` under 1/2.

    With ``n = 5`` runs the smallest possible value is ``2 / 2^5 = 0.0625`` (``wins`` 0 or 5): five runs
    cannot reach the 5 % level whatever they show.
    """
    n = check_int("n", n, minimum=1)
    wins = check_int("wins", wins, minimum=0, maximum=n)
    return float(stats.binomtest(wins, n, 0.5, alternative="two-sided").pvalue)
