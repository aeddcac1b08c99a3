"""Constraints between a notebook's parameters, checked before a kernel starts and by the notebook.

A single parameter's type and range live in the notebook's ``parameters`` cell (:mod:`dpbayes.book.params`).
What involves two parameters (two lists of equal length, a burn-in shorter than the chain, an
ordered pair of bounds) is declared here, once per notebook, and used by both sides:

* ``python -m dpbayes run`` calls :func:`derive` and :func:`check` on the full parameter set (the
  notebook's defaults plus the overrides) before any kernel starts: a violation is one line, exit 2;
* the notebook calls ``constraints.check("<notebook stem>", globals())`` right after its parameters,
  so that an edited parameters cell fails the same way inside Jupyter.

Where a dependent parameter has a sensible value derived from another one, :func:`derive` fills it
in when only its source was given (notebook 03b: the half-widths ``b_grid`` from ``eps_grid``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dpbayes.book.params import ParameterError


@dataclass(frozen=True)
class Rule:
    """One constraint: ``holds(values)`` must be true, otherwise ``message(values)`` is the error."""

    names: tuple[str, ...]
    holds: Callable[[Mapping[str, Any]], bool]
    message: Callable[[Mapping[str, Any]], str]


def less(a: str, b: str) -> Rule:
    """``a < b`` (e.g. the smallest and the largest eps of a curve, a burn-in and the chain length)."""
    return Rule((a, b), lambda v: v[a] < v[b], lambda v: f"parameter {a} must be smaller than {b}, got {a} = {v[a]!r} and {b} = {v[b]!r}")


def at_most(a: str, b: str) -> Rule:
    """``a <= b`` (a count and its number of records)."""
    return Rule((a, b), lambda v: v[a] <= v[b], lambda v: f"parameter {a} must be at most {b}, got {a} = {v[a]!r} and {b} = {v[b]!r}")


def same_length(a: str, b: str) -> Rule:
    """``len(b) == len(a)``: one entry of ``b`` per entry of ``a``."""
    return Rule(
        (a, b),
        lambda v: len(v[a]) == len(v[b]),
        lambda v: f"parameter {b} needs one entry per entry of {a} ({len(v[a])}), got {len(v[b])}",
    )


def min_length(a: str, k: int, why: str) -> Rule:
    """``len(a) >= k``."""
    return Rule((a,), lambda v: len(v[a]) >= k, lambda v: f"parameter {a} needs at least {k} entries ({why}), got {len(v[a])}")


def _b_grid(values: Mapping[str, Any]) -> list[float]:
    from dpbayes.smc.study import default_b_grid

    return default_b_grid(values["eps_grid"])


#: notebook stem -> constraints between its parameters
RULES: dict[str, list[Rule]] = {
    "02a-sensitivity-privacy": [same_length("prior_a", "prior_b"),
                                min_length("prior_a", 2, "the figures compare the first prior with another")],
    "02c-notes-claims": [same_length("prior_a", "prior_b")],
    "03b-smc-simulated": [same_length("eps_grid", "b_grid"), less("mcmc_burn_in", "mcmc_iter")],
    "03c-real-income": [less("mcmc_burn_in", "mcmc_iter")],
    "03d-fair-baselines": [same_length("eps_grid", "b_grid")],
    "04b-bayes-vs-naive": [less("eps_min", "eps_max")],
    "04c-beyond-the-paper": [less("eps_min", "eps_max")],
    "04d-fixed-counts-and-wrong-priors": [less("eps_min", "eps_max")],
    "using-dpbayes-numbers": [at_most("count", "n")],
    "using-dpbayes-csv": [same_length("columns", "attribute_weights")],
    "privacy-audit": [less("trunc_low", "trunc_high")],
}

#: notebook stem -> {dependent parameter: (its sources, how it is derived from the full values)}
DERIVED: dict[str, dict[str, tuple[tuple[str, ...], Callable[[Mapping[str, Any]], Any]]]] = {
    "03b-smc-simulated": {"b_grid": (("eps_grid",), _b_grid)},
    "03d-fair-baselines": {"b_grid": (("eps_grid",), _b_grid)},  # the same oracle half-widths as 03b
}


def check(notebook: str, values: Mapping[str, Any]) -> None:
    """Raise :class:`~dpbayes.book.params.ParameterError` (one line) if ``values`` break a constraint of ``notebook``.

    ``notebook`` is the notebook's file stem (``"03b-smc-simulated"``); ``values`` holds at least the
    parameters the constraints name (a notebook passes ``globals()``).
    """
    for rule in RULES.get(notebook, []):
        if not rule.holds(values):
            raise ParameterError(rule.message(values))


def derive(notebook: str, values: Mapping[str, Any], given: set[str]) -> dict[str, Any]:
    """Values for dependent parameters not in ``given`` whose sources are: derived from ``values``."""
    out: dict[str, Any] = {}
    for name, (sources, rule) in DERIVED.get(notebook, {}).items():
        if name not in given and any(s in given for s in sources):
            out[name] = rule({**values, **out})
    return out
