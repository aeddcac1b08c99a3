"""Verdicts under a declared rule: one test, one alternative, one level, Holm's correction over a family.

A claims table decides many comparisons at once. Each verdict word here comes from a rule declared before
the numbers (:class:`~dpbayes.core.verdicts.VerdictRule`: the test, its alternative, the family-wise level)
and from Holm's step-down adjustment of the rule's p-values over the whole family
(:func:`~dpbayes.core.verdicts.holm_adjust`, Holm 1979, "A simple sequentially rejective multiple test
procedure", Scand. J. Statist. 6, eq. of the step-down rule). :func:`~dpbayes.core.verdicts.judge_family`
refuses p-values of any other test, so a verdict cannot be upgraded by a test chosen after the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpbayes.core.validation import check_choice, check_probability

__all__ = ["ALTERNATIVES", "DIRECTIONAL_WORDS", "FamilyVerdicts", "Outcome", "VerdictRule", "holm_adjust", "judge_family"]

#: Alternatives a rule can declare: two-sided, or one-sided in favour of the first estimator ("greater") or against it.
ALTERNATIVES = ("two-sided", "greater", "less")

#: Verdict words, from the first estimator's point of view: effect above zero, below zero, equivalent, neither.
DIRECTIONAL_WORDS = ("more accurate", "less accurate", "indistinguishable", "undecided")


@dataclass(frozen=True)
class VerdictRule:
    """A verdict rule, declared before the numbers it judges.

    Parameters
    ----------
    test : str
        Name of the test whose p-values decide (every :class:`~dpbayes.core.verdicts.Outcome` judged by the
        rule must carry this name).
    alternative : {"two-sided", "greater", "less"}
        The alternative of that test.
    level : float
        Family-wise error rate, in (0, 1): a hypothesis is rejected when its Holm-adjusted p-value is below it.
    family : str
        What the family is (the set of comparisons corrected together), stated on the page.
    equivalence_test : str, optional
        Name of the test whose p-values can show equivalence ("indistinguishable"); ``""`` when the rule
        does not test equivalence (then no verdict is "indistinguishable").
    """

    test: str
    alternative: str
    level: float
    family: str
    equivalence_test: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.test, str) or not self.test.strip():
            raise ValueError("test must name the declared test, got an empty name")
        check_choice("alternative", self.alternative, ALTERNATIVES)
        check_probability("level", self.level, open_interval=True)
        if not isinstance(self.family, str) or not self.family.strip():
            raise ValueError("family must state which comparisons are corrected together, got an empty string")


@dataclass(frozen=True)
class Outcome:
    """One comparison's p-values, labelled with the tests that produced them.

    ``effect`` is the signed estimate the alternative refers to (for an MSE ratio ``MSE_b / MSE_a``:
    ``log`` of it; above 0 favours the first estimator). ``equivalence_p`` is the p-value of the
    equivalence test (``nan`` when not tested).
    """

    test: str
    p: float
    effect: float
    equivalence_test: str = ""
    equivalence_p: float = float("nan")


@dataclass(frozen=True)
class FamilyVerdicts:
    """The verdicts of a family under one rule (see :func:`~dpbayes.core.verdicts.judge_family`)."""

    #: the rule applied
    rule: VerdictRule
    #: raw p-values of the declared test, in the order given
    p: NDArray[np.float64]
    #: Holm-adjusted p-values of the declared test
    p_holm: NDArray[np.float64]
    #: Holm-adjusted p-values of the equivalence test (``nan`` where not tested)
    equivalence_p_holm: NDArray[np.float64]
    #: one of :data:`~dpbayes.core.verdicts.DIRECTIONAL_WORDS` per comparison
    verdicts: tuple[str, ...]


def holm_adjust(p: ArrayLike) -> NDArray[np.float64]:
    """Holm's step-down adjusted p-values of a family (Holm 1979).

    With the p-values sorted, ``p_(1) <= ... <= p_(m)``, the adjusted value of the ``j``-th smallest is
    ``max_{i <= j} min(1, (m - i + 1) p_(i))``; rejecting where it is below ``alpha`` controls the
    family-wise error rate at ``alpha`` under any dependence. ``nan`` entries are left out of the family and
    stay ``nan``.

    Parameters
    ----------
    p : array_like, shape (m,)
        Raw p-values in [0, 1] (or ``nan``).

    Returns
    -------
    ndarray, shape (m,)
        Adjusted p-values, in the input order.
    """
    arr = np.asarray(p, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"p must be one-dimensional, got shape {arr.shape}")
    ok = ~np.isnan(arr)
    if np.any((arr[ok] < 0) | (arr[ok] > 1)):
        raise ValueError("p must hold p-values in [0, 1]")
    out = np.full(arr.shape, np.nan)
    vals = arr[ok]
    m = vals.size
    if m == 0:
        return out
    order = np.argsort(vals, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * vals[order])
    adjusted = np.maximum.accumulate(scaled)
    res = np.empty(m)
    res[order] = adjusted
    out[ok] = res
    return out


def judge_family(outcomes: Sequence[Outcome], rule: VerdictRule) -> FamilyVerdicts:
    """Verdicts of a family of comparisons under a declared rule, with Holm's correction.

    Every outcome must carry the rule's test (and, where it has an equivalence p-value, the rule's
    equivalence test); a p-value of any other test is refused, so a verdict cannot rest on a test chosen after
    the numbers. The declared test's p-values are Holm-adjusted over the family; a comparison is *more* /
    *less accurate* when its adjusted p-value is below ``rule.level`` and its effect is above / below zero
    (for a one-sided alternative, only the declared direction can be found). Otherwise it is
    *indistinguishable* when the equivalence test's p-value, Holm-adjusted over the family's equivalence
    tests, is below ``rule.level``, else *undecided*.

    Parameters
    ----------
    outcomes : sequence of Outcome
        The family, at least one comparison.
    rule : VerdictRule
        The rule declared for this family.

    Returns
    -------
    FamilyVerdicts
    """
    if not isinstance(rule, VerdictRule):
        raise TypeError(f"a verdict needs its declared VerdictRule, got {type(rule).__name__}")
    outs = list(outcomes)
    if not outs:
        raise ValueError("outcomes must hold at least one comparison")
    for i, o in enumerate(outs):
        if not isinstance(o, Outcome):
            raise TypeError(f"outcomes[{i}] must be an Outcome, got {type(o).__name__}")
        if o.test != rule.test:
            raise ValueError(f"outcomes[{i}] comes from the test {o.test!r}, but the declared rule's test is {rule.test!r}")
        if not np.isfinite(o.p):
            raise ValueError(f"outcomes[{i}] has no p-value of the declared test")
        if not np.isnan(o.equivalence_p) and o.equivalence_test != rule.equivalence_test:
            raise ValueError(f"outcomes[{i}] shows equivalence by {o.equivalence_test!r}, but the declared rule's "
                             f"equivalence test is {rule.equivalence_test!r}")
    p = np.array([o.p for o in outs], dtype=float)
    effect = np.array([o.effect for o in outs], dtype=float)
    p_holm = holm_adjust(p)
    eq = np.array([o.equivalence_p if rule.equivalence_test else np.nan for o in outs], dtype=float)
    eq_holm = holm_adjust(eq)
    words = []
    for ph, ef, pe in zip(p_holm, effect, eq_holm):
        up = ef > 0 and rule.alternative in ("two-sided", "greater")
        down = ef < 0 and rule.alternative in ("two-sided", "less")
        if ph < rule.level and up:
            words.append(DIRECTIONAL_WORDS[0])
        elif ph < rule.level and down:
            words.append(DIRECTIONAL_WORDS[1])
        elif np.isfinite(pe) and pe < rule.level:
            words.append(DIRECTIONAL_WORDS[2])
        else:
            words.append(DIRECTIONAL_WORDS[3])
    return FamilyVerdicts(rule=rule, p=p, p_holm=p_holm, equivalence_p_holm=eq_holm, verdicts=tuple(words))
