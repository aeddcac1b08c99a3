"""Private release of a Beta/Dirichlet posterior (chapter 2): the notes' mechanisms, their accuracy and optimum.

Source: ``laplace-optimality-notes.md`` ("notes"). This module is the chapter's entry point: it
re-exports every name of the modules that hold one concept each,

* :mod:`dpbayes.posterior.mechanisms` -- the mechanism registry (``LSDim``, ``LSHist``, ``EHD``,
  ``EHD-notes``, ``EHDL``, ``EHDS`` and the added ``LSHist-round`` and ``Geometric``): exact output
  laws, samplers, proven guarantees and exact privacy losses;
* :mod:`dpbayes.posterior.accuracy` -- the exact law of a release's Hellinger error (mean error,
  good-set probability, quantiles, releases outside ``R_alpha`` and their projection);
* :mod:`dpbayes.posterior.statements` -- the notes' statements (Thm 2.3, Thm 2.5 and corollaries)
  made precise and checked as exact margins;
* :mod:`dpbayes.posterior.optimal` -- the best eps-DP release (LP with a certificate, closed form,
  minimax by column generation, the LP over all compositions for ``k >= 3``);
* :mod:`dpbayes.posterior.geometric` (not re-exported) -- the exact cost factors of LSHist and
  LSHist-round over the geometric mechanism and the closed-form certificate of its optimality.

``from dpbayes.posterior import release as pr`` gives the chapter's notebooks and tests every ``pr.<name>``
they use. Every function that takes a mechanism name accepts every name of
``ALL_MECHANISMS``.
"""

from __future__ import annotations

from dpbayes.posterior.mechanisms import (  # noqa: F401 (re-exported)
    ADDED_MECHANISMS,
    ALL_MECHANISMS,
    exact_log_output_distribution,
    exact_output_distribution,
    EXPONENTIAL_MECHANISMS,
    geometric_multi_release_log_distribution,
    get_mechanism,
    LAPLACE_MECHANISMS,
    laplace_scale,
    _LAPLACE_SCALED,
    _log_clamped_floor_pmf,
    _log_clamped_round_pmf,
    _log_laplace_interval,
    _log_truncated_geometric_pmf,
    MECHANISMS,
    privacy_loss_binary,
    privacy_loss_multi,
    proven_epsilon,
    REGISTRY,
    release_log_distribution,
    ReleaseMechanism,
    sample_release,
)
from dpbayes.posterior.accuracy import (  # noqa: F401 (re-exported)
    binary_distance_matrix,
    binary_local_sensitivities,
    error_distribution,
    error_quantile,
    good_set_probability,
    _GOOD_SET_RTOL,
    mean_error,
    _nearest_candidates,
    off_candidate_probability,
    projected_release_log_distribution,
    sample_errors,
    within_probability,
)
from dpbayes.posterior.statements import (  # noqa: F401 (re-exported)
    crossover_n,
    crossover_n_all_x,
    good_set_rows,
    laplace_window_bound,
    notes_good_set_threshold,
    notes_statement_checks,
    NOTES_STATEMENTS,
    notes_window_threshold,
    _STRICT_STATEMENTS,
    theorem_2_3_rows,
    _theorem_2_5_one,
    theorem_2_5_rows,
    window_half_widths,
)
from dpbayes.posterior.optimal import (  # noqa: F401 (re-exported)
    beta_binomial_data_prior,
    _binary_log_loss,
    binary_loss_matrix,
    _certify_release,
    _certify_release_pairs,
    _check_data_prior,
    composition_neighbours,
    _geometric_best_response,
    is_monotone_loss,
    LP_DP_LOG_TOL,
    LP_LOSSES,
    LP_MAX_REPAIR_WEIGHT,
    LP_OBJECTIVES,
    MinimaxRelease,
    optimal_release_bayes_exact,
    optimal_release_lp,
    optimal_release_lp_multi,
    optimal_release_minimax,
    _pairs_log_loss,
    release_risks,
    ReleaseLP,
    uniform_data_prior,
)

__all__ = [
    "ReleaseMechanism",
    "REGISTRY",
    "get_mechanism",
    "MECHANISMS",
    "ADDED_MECHANISMS",
    "ALL_MECHANISMS",
    "LAPLACE_MECHANISMS",
    "EXPONENTIAL_MECHANISMS",
    "proven_epsilon",
    "laplace_scale",
    "release_log_distribution",
    "exact_log_output_distribution",
    "exact_output_distribution",
    "privacy_loss_binary",
    "privacy_loss_multi",
    "sample_release",
    "error_distribution",
    "mean_error",
    "good_set_probability",
    "within_probability",
    "error_quantile",
    "sample_errors",
    "off_candidate_probability",
    "projected_release_log_distribution",
    "binary_distance_matrix",
    "window_half_widths",
    "theorem_2_5_rows",
    "good_set_rows",
    "laplace_window_bound",
    "notes_good_set_threshold",
    "notes_window_threshold",
    "crossover_n",
    "crossover_n_all_x",
    "theorem_2_3_rows",
    "LP_LOSSES",
    "LP_OBJECTIVES",
    "ReleaseLP",
    "binary_loss_matrix",
    "uniform_data_prior",
    "beta_binomial_data_prior",
    "optimal_release_lp",
    "optimal_release_bayes_exact",
    "release_risks",
    "is_monotone_loss",
    "NOTES_STATEMENTS",
    "notes_statement_checks",
    "MinimaxRelease",
    "optimal_release_minimax",
    "composition_neighbours",
    "optimal_release_lp_multi",
    "geometric_multi_release_log_distribution",
    "binary_local_sensitivities",
]
