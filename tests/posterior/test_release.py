"""Posterior-release mechanisms: exact distributions, samplers, sensitivities and privacy losses."""

import math

import numpy as np
import pytest
from scipy import stats

from dpbayes.posterior import mechanisms as pm
from dpbayes.posterior import release as pr
from dpbayes.posterior import sensitivity as se
from dpbayes.core.distances import hellinger_dirichlet

PRIORS = [(1.0, 1.0), (0.5, 0.5), (4.0, 1.5)]


# -- candidate set and sensitivities ---------------------------------------------------------------
def test_candidate_counts():
    c = se.candidate_counts(6, 3)
    assert c.shape == (math.comb(8, 2), 3)
    assert np.all(c.sum(axis=1) == 6) and np.all(c >= 0)
    assert len({tuple(r) for r in c}) == len(c)
    assert se.candidate_counts(4, 2).tolist() == [[0, 4], [1, 3], [2, 2], [3, 1], [4, 0]]


@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.5, 0.5), (1.0, 1.0, 1.0)])
def test_local_sensitivity_is_brute_force_maximum(prior):
    # LS(x) = max over neighbours x' and all candidates r of |H(DirP(x), r) - H(DirP(x'), r)|
    alpha = np.asarray(prior)
    n = 5
    cand = se.candidate_counts(n, alpha.size)
    for c in cand:
        best = 0.0
        for i in range(alpha.size):
            for j in range(alpha.size):
                if i == j or c[i] == 0:
                    continue
                nb = c.copy()
                nb[i] -= 1
                nb[j] += 1
                diff = np.abs(hellinger_dirichlet(alpha + c, alpha + cand) - hellinger_dirichlet(alpha + nb, alpha + cand))
                best = max(best, diff.max())
        assert se.local_sensitivity(c, alpha) == pytest.approx(best, abs=1e-14)


def test_global_sensitivity_against_notes_constant():
    # Uniform prior, n = 1: the two posteriors Beta(2,1), Beta(1,2) are at sqrt(1 - pi/4).
    assert se.global_sensitivity(1, (1, 1)) == pytest.approx(se.NOTES_GLOBAL_SENSITIVITY, abs=1e-15)
    assert se.global_sensitivity(20, (1, 1)) < se.NOTES_GLOBAL_SENSITIVITY
    # Jeffreys prior: the notes' constant is too small.
    assert se.global_sensitivity(1, (0.5, 0.5)) > se.NOTES_GLOBAL_SENSITIVITY


def test_smooth_sensitivity_properties():
    prior = (1.0, 1.0)
    n = 30
    _, ls = se.local_sensitivity_all(n, prior)
    beta = se.pure_dp_smoothing_beta(n, prior)
    s = se.smooth_sensitivity_all_binary(n, prior)
    assert np.all(s >= ls - 1e-15)
    assert np.all(s[1:] <= math.exp(beta) * s[:-1] * (1 + 1e-12))
    assert np.all(s[:-1] <= math.exp(beta) * s[1:] * (1 + 1e-12))
    assert se.smooth_sensitivity((12, 18), prior) == pytest.approx(s[12], rel=1e-14)


# -- exact distributions ---------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", pr.REGISTRY)
def test_exact_distribution_rows_sum_to_one(mechanism):
    P = pr.exact_output_distribution(mechanism, 15, 0.7, (2.0, 3.0))
    assert P.shape == (16, 16)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(P >= 0)


def test_laplace_pmf_matches_scipy_cdf():
    n, scale, c = 12, 1.7, 5
    logp = pr._log_clamped_floor_pmf(c, n, scale)
    cdf = stats.laplace(loc=c, scale=scale).cdf
    edges = np.arange(1, n + 1, dtype=float)
    expected = np.diff(np.concatenate([[0.0], cdf(edges), [1.0]]))
    np.testing.assert_allclose(np.exp(logp), expected, rtol=1e-12, atol=1e-15)


def test_laplace_pmf_log_space_far_tail():
    # eps = 40 on n = 50: tail probabilities ~ e^-2000 underflow as probabilities but not as logs
    logp = pr._log_clamped_floor_pmf(0, 50, 1 / 40)
    assert np.all(np.isfinite(logp))
    assert logp[-1] == pytest.approx(-40 * 50 - math.log(2), rel=1e-12)


def test_three_category_support_sums_and_probability():
    released, logp = pr.release_log_distribution("LSHist", (2, 3, 1), 1.0, (1, 1, 1))
    assert np.exp(logp).sum() == pytest.approx(1.0, abs=1e-12)
    # The notes' clamp of the last coordinate can leave the candidate set (sum != n): measured, not hidden.
    off = released.sum(axis=1) != 6
    assert np.exp(logp)[off].sum() > 0


# -- samplers against exact distributions ------------------------------------------------------------
def _chi_square_pvalue(observed, expected_prob, size):
    expected = expected_prob * size
    keep = expected >= 5  # pool the sparse cells into one
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


@pytest.mark.parametrize("mechanism", pr.REGISTRY)
def test_binary_sampler_matches_exact(mechanism):
    n, eps, prior, x, size = 20, 1.0, (1.0, 1.0), 6, 20000
    rng = np.random.default_rng(4321)
    draws = pr.sample_release(mechanism, (x, n - x), eps, prior, rng, size)
    assert np.all(draws.sum(axis=1) == n)
    observed = np.bincount(draws[:, 0], minlength=n + 1)
    exact = pr.exact_output_distribution(mechanism, n, eps, prior)[x]
    assert _chi_square_pvalue(observed, exact, size) > 1e-3


MULTI_CATEGORY = [m for m, mech in pr.REGISTRY.items() if mech.max_categories is None]


@pytest.mark.parametrize("mechanism", MULTI_CATEGORY)
def test_three_category_sampler_matches_exact(mechanism):
    counts, eps, prior, size = (3, 1, 4), 1.0, (1.0, 2.0, 0.5), 20000
    rng = np.random.default_rng(99)
    draws = pr.sample_release(mechanism, counts, eps, prior, rng, size)
    support, logp = pr.release_log_distribution(mechanism, counts, eps, prior)
    index = {tuple(r): i for i, r in enumerate(support)}
    observed = np.bincount([index[tuple(r)] for r in draws], minlength=len(support))
    assert _chi_square_pvalue(observed, np.exp(logp), size) > 1e-3


def test_chi_square_check_can_fail():
    # The sampler check must be able to fail: LSHist draws against LSDim's distribution.
    n, x, size = 20, 6, 20000
    draws = pr.sample_release("LSHist", (x, n - x), 1.0, (1, 1), np.random.default_rng(1), size)
    observed = np.bincount(draws[:, 0], minlength=n + 1)
    assert _chi_square_pvalue(observed, pr.exact_output_distribution("LSDim", n, 1.0)[x], size) < 1e-6


# -- privacy -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", pr.REGISTRY)
@pytest.mark.parametrize("prior", PRIORS)
@pytest.mark.parametrize("eps", [0.3, 2.0])
def test_exact_privacy_loss_within_proven_guarantee(mechanism, prior, eps):
    """Every registered mechanism: its exact loss (binary data) never exceeds its proven guarantee."""
    for n in (1, 2, 7, 25):
        loss = pr.privacy_loss_binary(mechanism, n, eps, prior)
        assert loss <= pr.proven_epsilon(mechanism, eps, n, prior) * (1 + 1e-9), (mechanism, n)


@pytest.mark.parametrize("mechanism", MULTI_CATEGORY)
@pytest.mark.parametrize("eps", [0.3, 2.0])
def test_exact_privacy_loss_within_proven_guarantee_three_categories(mechanism, eps):
    """Every registered mechanism defined for k >= 3: the same over every data set of 4 records, 3 categories."""
    prior = (1.0, 0.5, 2.0)
    loss = pr.privacy_loss_multi(mechanism, 4, eps, prior)
    assert loss <= pr.proven_epsilon(mechanism, eps, 4, prior) * (1 + 1e-9), mechanism


def test_registry_is_the_one_list_of_mechanisms():
    assert tuple(pr.REGISTRY) == pr.ALL_MECHANISMS == pr.MECHANISMS + pr.ADDED_MECHANISMS
    for name, mech in pr.REGISTRY.items():
        assert mech.name == name and mech.kind in ("noise", "exponential")
        assert f"``{name}``" in pm.__doc__  # the module's list of mechanisms is generated from the registry
        assert pr.get_mechanism(name) is mech
    with pytest.raises(ValueError, match="either noise_log_pmf"):
        pm.ReleaseMechanism("broken", False, "", "", lambda eps, n, alpha: eps)


def test_laplace_losses_are_tight():
    # Lap(1/eps) on a sensitivity-1 count: the tails attain e^eps exactly; LSDim (Lap(2/eps)) is eps/2.
    assert pr.privacy_loss_binary("LSHist", 10, 1.3, (1, 1)) == pytest.approx(1.3, rel=1e-12)
    assert pr.privacy_loss_binary("LSDim", 10, 1.3, (1, 1)) == pytest.approx(0.65, rel=1e-12)


def test_notes_gs_and_local_sensitivity_break_privacy():
    # Computed, not asserted: EHD with GS = sqrt(1 - pi/4) under a small prior exceeds its eps ...
    assert pr.privacy_loss_binary("EHD-notes", 5, 1.0, (0.01, 0.01)) > 1.1
    # ... and so does EHDL (local sensitivity in place of global) for larger n.
    assert pr.privacy_loss_binary("EHDL", 300, 1.0, (0.1, 0.1)) > 1.0


# -- accuracy helpers -------------------------------------------------------------------------------
def test_good_set_and_quantile():
    counts, prior = (10, 30), (1.0, 1.0)
    p_good = pr.good_set_probability("LSHist", counts, 1.0, prior)
    # notes Cor 2.5.2 (first part): P >= 1 - (e^-eps + e^-2eps)/2
    assert p_good >= 1 - 0.5 * (math.exp(-1) + math.exp(-2)) - 1e-12
    t = pr.error_quantile("LSHist", counts, 1.0, prior, math.exp(-1.0))
    assert t <= se.local_sensitivity(counts, prior) * (1 + 1e-12)
    errors, probs = pr.error_distribution("EHD", counts, 1.0, prior)
    assert pr.mean_error("EHD", counts, 1.0, prior) == pytest.approx(float(errors @ probs))


# -- validation ------------------------------------------------------------------------------------
def test_bad_input_is_rejected():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="mechanism must be one of"):
        pr.exact_output_distribution("Laplace", 5, 1.0)
    with pytest.raises(ValueError, match="eps must be > 0"):
        pr.exact_output_distribution("EHD", 5, 0.0)
    with pytest.raises(ValueError, match=r"n must be an integer in \[1"):
        pr.exact_output_distribution("EHD", 0, 1.0)
    with pytest.raises(ValueError, match="prior must have 2 entries"):
        pr.exact_output_distribution("EHD", 5, 1.0, (1, 1, 1))
    with pytest.raises(ValueError, match="counts must be non-negative integers"):
        pr.sample_release("EHD", (1.5, 2), 1.0, (1, 1), rng, 3)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        pr.sample_release("EHD", (1, 2), 1.0, (1, 1), 3, 3)
    with pytest.raises(ValueError, match="prior must be > 0"):
        se.global_sensitivity(4, (0.0, 1.0))


# -- the notes' statements -------------------------------------------------------------------------
def test_window_half_widths_readings():
    d = np.array([0.9, 0.5, 0.2, 0.0, 0.3, 0.6, 0.95])
    # x = 3, t = 0.55: candidates 1..4 are inside; symmetric window 1 (x+2 = 5 is outside), one-sided 2
    assert pr.window_half_widths(d, 3, 0.55) == (1, 2)
    assert pr.window_half_widths(d, 3, 0.1) == (0, 0)


def test_good_set_rows_agree_with_single_data_set_functions():
    n, eps, prior = 12, 0.8, (0.5, 2.0)
    g = pr.good_set_rows(n, eps, prior, ("LSHist", "EHD"))
    for x in (0, 5, 12):
        assert g["good_EHD"][x] == pytest.approx(pr.good_set_probability("EHD", (x, n - x), eps, prior), abs=1e-12)
        assert g["elap"][x] == pytest.approx(pr.error_quantile("LSHist", (x, n - x), eps, prior, math.exp(-eps)), abs=1e-12)


def test_theorem_2_5_rows_several_factors_equal_single():
    many = pr.theorem_2_5_rows(10, 1.0, (1, 1), [1.0, 2.0])
    one = pr.theorem_2_5_rows(10, 1.0, (1, 1), 2.0)
    for key in one:
        np.testing.assert_array_equal(many[1][key], one[key])
    # The symmetric-window Laplace bound of Thm 2.5 holds (exact probabilities).
    assert np.all(one["p_LSHist"] >= one["lap_lower"] - 1e-12)


def test_notes_thresholds():
    c = 2 * se.NOTES_GLOBAL_SENSITIVITY
    assert pr.notes_good_set_threshold(1.0) == pytest.approx(3 * math.exp(1 / c) / (1 - math.exp(-1)))
    assert pr.notes_window_threshold(1.0, 0) == math.inf
    n0, pa, pb = pr.crossover_n(1.0, (1, 1), 0.5, 30)
    assert 1 <= n0 <= 31 and np.all(pa[n0 - 1 :] > pb[n0 - 1 :])


def test_crossover_all_x_reads_a_tie_as_not_ahead():
    # Beta(0.02, 3), eps = 3: at x = 1 the good set holds every candidate for n <= 5, so both good-set
    # probabilities are 1 (a tie, +-1e-16 in floating point); the notes' strict inequality fails there
    n0, margin = pr.crossover_n_all_x(3.0, (0.02, 3.0), 12)
    assert n0 == 6
    assert np.all(np.abs(margin[1:5]) < 1e-14) and np.all(margin[5:] > 1e-3)
    g = pr.good_set_rows(4, 3.0, (0.02, 3.0), ("LSHist", "EHD-notes"))
    assert g["size_good"][1] == 5 and g["good_LSHist"][1] == pytest.approx(1.0, abs=1e-15)
    # the tie tolerance is the only difference from a bare "> 0"
    assert pr.crossover_n_all_x(3.0, (0.02, 3.0), 12, tie_tol=0.0)[0] == 1 + int(np.flatnonzero(~(margin > 0))[-1]) + 1
    assert pr.crossover_n_all_x(1.0, (1.0, 1.0), 30)[0] == pr.crossover_n_all_x(1.0, (1.0, 1.0), 30, tie_tol=0.0)[0]
    with pytest.raises(ValueError, match="tie_tol"):
        pr.crossover_n_all_x(1.0, (1.0, 1.0), 5, tie_tol=-1.0)


def test_ehds_smoothing_beta_is_used():
    default = pr.exact_output_distribution("EHDS", 20, 1.0, (1, 1))
    explicit = pr.exact_output_distribution("EHDS", 20, 1.0, (1, 1), smoothing_beta=se.pure_dp_smoothing_beta(20, (1, 1)))
    np.testing.assert_allclose(default, explicit, rtol=1e-13)
    other = pr.exact_output_distribution("EHDS", 20, 1.0, (1, 1), smoothing_beta=3.0)
    assert np.max(np.abs(other - default)) > 1e-3
    # single data set and binary matrix use the same smooth sensitivity
    _, logp = pr.release_log_distribution("EHDS", (7, 13), 1.0, (1, 1), smoothing_beta=3.0)
    np.testing.assert_allclose(np.exp(logp), other[7], rtol=1e-12)


def test_three_category_exact_privacy_loss():
    # Lap(2/eps) on two counts: moving a record between the two noised categories costs eps exactly.
    assert pr.privacy_loss_multi("LSHist", 5, 1.0, (1, 1, 1)) == pytest.approx(1.0, rel=1e-12)
    assert pr.privacy_loss_multi("LSDim", 5, 1.0, (1, 1, 1)) == pytest.approx(2 / 3, rel=1e-12)
    for mechanism in ("EHD", "EHDS"):
        for prior in ((1.0, 1.0, 1.0), (0.5, 2.0, 0.3)):
            assert pr.privacy_loss_multi(mechanism, 5, 1.0, prior) <= 1.0 + 1e-9
    # binary special case agrees with the matrix version
    assert pr.privacy_loss_multi("EHDL", 12, 1.0, (0.5, 0.5)) == pytest.approx(pr.privacy_loss_binary("EHDL", 12, 1.0, (0.5, 0.5)), rel=1e-12)


# -- mechanisms added for the optimality comparison (not in the notes) ------------------------------
@pytest.mark.parametrize("eps", [0.01, 0.3, 1.0, 3.0])
def test_geometric_release_exact_loss_is_eps(eps):
    # truncated geometric mechanism: every neighbouring log ratio is eps or 0, attained for n >= 1
    for n in (1, 2, 7, 40):
        assert pr.privacy_loss_binary("Geometric", n, eps) == pytest.approx(eps, rel=1e-12)
    assert pr.proven_epsilon("Geometric", eps, 10, (1.0, 1.0)) == eps


def test_geometric_release_law_closed_form():
    eps, n, x = 0.7, 9, 3
    a = math.exp(-eps)
    P = pr.exact_output_distribution("Geometric", n, eps)
    assert np.allclose(P.sum(axis=1), 1.0, atol=1e-14)
    j = np.arange(n + 1)
    expect = (1 - a) / (1 + a) * a ** np.abs(j - x)
    expect[0] = a**x / (1 + a)
    expect[n] = a ** (n - x) / (1 + a)
    assert np.allclose(P[x], expect, rtol=1e-13)
    with pytest.raises(ValueError, match="two categories"):
        pr.release_log_distribution("Geometric", (1, 2, 3), eps, (1.0, 1.0, 1.0))


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_rounding_lshist_exact_loss(eps):
    # rounding is post-processing of the Laplace count: loss <= eps, and = eps once n is large enough
    losses = [pr.privacy_loss_binary("LSHist-round", n, eps) for n in range(1, 31)]
    assert max(losses) <= eps * (1 + 1e-12)
    assert losses[-1] == pytest.approx(eps, rel=1e-9)
    assert pr.proven_epsilon("LSHist-round", eps, 10, (1.0, 1.0)) == eps
    # three categories: every data set of size 4, replace-one neighbours
    assert pr.privacy_loss_multi("LSHist-round", 4, eps, (1.0, 1.0, 1.0)) <= eps * (1 + 1e-12)


def test_rounding_lshist_law_and_floor_bias():
    eps, n, x = 1.0, 20, 8
    # interior: P[round(x + eta) = j] = P[j - x - 1/2 <= eta < j - x + 1/2]
    lap = stats.laplace(scale=1 / eps)
    P = pr.exact_output_distribution("LSHist-round", n, eps)
    j = np.arange(1, n)
    assert np.allclose(P[x, 1:n], lap.cdf(j - x + 0.5) - lap.cdf(j - x - 0.5), rtol=1e-12)
    # the floor puts as much mass on x - 1 as on x (bias down); rounding is symmetric about x
    F = pr.exact_output_distribution("LSHist", n, eps)
    assert F[x, x - 1] == pytest.approx(F[x, x], rel=1e-12)
    assert P[x, x - 1] == pytest.approx(P[x, x + 1], rel=1e-12) and P[x, x] > F[x, x]


@pytest.mark.parametrize("mechanism", ["LSHist-round", "Geometric"])
def test_added_mechanisms_sampler_matches_exact_law(mechanism):
    counts, eps = (18, 42), 1.0
    draws = pr.sample_release(mechanism, counts, eps, (1.0, 1.0), np.random.default_rng(3), 100_000)
    assert np.all(draws.sum(axis=1) == 60)
    _, logp = pr.release_log_distribution(mechanism, counts, eps, (1.0, 1.0))
    p = np.exp(logp)
    obs = np.bincount(draws[:, 0], minlength=61)
    keep = p * len(draws) > 5
    chi2 = float((((obs - p * len(draws)) ** 2) / (p * len(draws)))[keep].sum())
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-4


def test_added_mechanisms_keep_notes_list():
    assert pr.MECHANISMS == ("LSDim", "LSHist", "EHD", "EHD-notes", "EHDL", "EHDS")
    assert {"LSHist-round", "Geometric"} <= set(pr.ADDED_MECHANISMS)
    with pytest.raises(ValueError, match="mechanism"):
        pr.mean_error("Gauss", (1, 2), 1.0, (1.0, 1.0))


# -- the release LP (best eps-DP mechanism over the candidate set) and its closed form -------------

def _loss(P, eps):
    logP = np.log(P)
    return float(np.max(np.abs(logP[1:] - logP[:-1])))


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("objective", pr.LP_OBJECTIVES)
@pytest.mark.parametrize("loss", pr.LP_LOSSES)
def test_lp_is_certified_dp_and_beats_every_mechanism(eps, objective, loss):
    n = 12
    sol = pr.optimal_release_lp(n, eps, loss=loss, objective=objective)
    # exact privacy loss of the certified matrix, recomputed here
    assert _loss(sol.P, eps) <= eps + 1e-9
    assert sol.privacy_loss <= eps + 1e-9
    assert np.allclose(sol.P.sum(axis=1), 1.0, atol=1e-12)
    assert sol.value >= sol.solver_value - 1e-7 and sol.value - sol.solver_value < 1e-5
    L = pr.binary_loss_matrix(n, (1.0, 1.0), loss)
    pi = pr.uniform_data_prior(n)
    for m in pr.REGISTRY:
        if pr.privacy_loss_binary(m, n, eps) > eps + 1e-9:
            continue  # not eps-DP at this eps (EHD-notes, EHDL): no comparison
        r = pr.release_risks(np.exp(pr.exact_log_output_distribution(m, n, eps)), L)
        value = float(pi @ r) if objective == "bayes" else float(r.max())
        assert sol.value <= value + 1e-7, m


@pytest.mark.parametrize("eps", [0.05, 0.5, 2.0])
@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.5, 0.5), (0.05, 0.05)])
@pytest.mark.parametrize("loss", ["hellinger", "good_set"])
def test_closed_form_equals_lp_bayes(eps, prior, loss):
    # truncated geometric + remap (chapter 1's exact solver) attains the LP optimum
    n = 15
    data_prior = pr.beta_binomial_data_prior(n, prior)
    a = pr.optimal_release_lp(n, eps, prior, loss=loss, data_prior=data_prior)
    b = pr.optimal_release_bayes_exact(n, eps, prior, loss=loss, data_prior=data_prior)
    assert b.info["monotone_loss"]
    assert b.value == pytest.approx(a.solver_value, abs=1e-8)
    assert b.privacy_loss <= eps + 1e-9


def test_lp_validation():
    with pytest.raises(ValueError, match="objective"):
        pr.optimal_release_lp(5, 1.0, objective="median")
    with pytest.raises(ValueError, match="loss"):
        pr.optimal_release_lp(5, 1.0, loss="kl")
    with pytest.raises(ValueError, match="data_prior"):
        pr.optimal_release_lp(5, 1.0, data_prior=np.ones(6))
    with pytest.raises(ValueError, match="n"):
        pr.optimal_release_lp(0, 1.0)


def test_beta_binomial_uniform_is_uniform():
    assert np.allclose(pr.beta_binomial_data_prior(9, (1.0, 1.0)), pr.uniform_data_prior(9))
    assert math.isclose(pr.beta_binomial_data_prior(9, (0.5, 2.0)).sum(), 1.0)


def test_good_set_loss_matches_good_set_probability():
    n, eps = 20, 1.0
    L = pr.binary_loss_matrix(n, (1.0, 1.0), "good_set")
    P = np.exp(pr.exact_log_output_distribution("LSHist", n, eps))
    for x in (0, 7, 20):
        assert 1 - pr.release_risks(P, L)[x] == pytest.approx(pr.good_set_probability("LSHist", (x, n - x), eps, (1.0, 1.0)), abs=1e-12)


def test_certificate_rejects_non_dp_input():
    P = np.array([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(RuntimeError, match="certified"):
        pr._certify_release(P, 0.1)


# -- projection of off-candidate releases (k >= 3) ---------------------------------------------------
@pytest.mark.parametrize("mechanism", ["LSDim", "LSHist"])
def test_projected_release_is_in_candidate_set_and_keeps_privacy(mechanism):
    prior, eps, n = (1.0, 1.0, 1.0), 1.0, 5
    data = se.candidate_counts(n, 3)
    logs = []
    for c in data:
        cand, logp = pr.projected_release_log_distribution(mechanism, c, eps, prior)
        assert np.array_equal(cand, data)
        assert math.isclose(float(np.exp(logp).sum()), 1.0, abs_tol=1e-12)
        logs.append(logp)
    logs = np.vstack(logs)
    # exact loss over all replace-one neighbours (moves of one record between categories)
    worst = 0.0
    for i, c in enumerate(data):
        for j, c2 in enumerate(data):
            if np.abs(c - c2).sum() == 2:
                both = np.isfinite(logs[i]) | np.isfinite(logs[j])
                worst = max(worst, float(np.max(np.abs(logs[i][both] - logs[j][both]))))
    assert worst <= pr.proven_epsilon(mechanism, eps, n, prior) * (1 + 1e-9)
    # releases already in R_alpha keep their probability
    c = data[7]
    released, logp = pr.release_log_distribution(mechanism, c, eps, prior)
    cand, logq = pr.projected_release_log_distribution(mechanism, c, eps, prior)
    on = released.sum(axis=1) == n
    for r, lp_ in zip(released[on], logp[on]):
        k = int(np.flatnonzero((cand == r).all(axis=1))[0])
        assert np.exp(logq[k]) >= np.exp(lp_) - 1e-15


def test_projected_release_binary_is_identity():
    released, logp = pr.release_log_distribution("LSHist", (3, 5), 1.0, (1.0, 1.0))
    cand, logq = pr.projected_release_log_distribution("LSHist", (3, 5), 1.0, (1.0, 1.0))
    assert np.array_equal(released, cand) and np.allclose(logp, logq)
    with pytest.raises(ValueError, match="mechanism"):
        pr.projected_release_log_distribution("EHD", (3, 5), 1.0, (1.0, 1.0))


# -- notes_statement_checks: every statement, any number of categories --------------------------------
def test_notes_statement_checks_binary_equals_row_functions():
    n, eps, prior, tf = 20, 1.0, (0.5, 0.5), (0.5, 1.0, 2.0)
    r = pr.notes_statement_checks(n, eps, prior, tf, (0.3, 0.05))
    assert set(pr.NOTES_STATEMENTS) <= set(r)
    rows = pr.theorem_2_5_rows(n, eps, prior, list(tf))
    margin = np.concatenate([row["p_LSHist"] - row["lap_lower"] for row in rows])
    np.testing.assert_allclose(r["thm25_lshist_sym"]["margin"], margin, rtol=0, atol=1e-15)
    upper = np.concatenate([row["ehd_upper"] - row["p_EHD-notes"] for row in rows])
    np.testing.assert_allclose(r["thm25_ehdnotes_upper_sym"]["margin"], upper, rtol=0, atol=1e-15)
    g = pr.good_set_rows(n, eps, prior, ("LSHist", "EHD-notes"))
    lb = 1 - 0.5 * (np.exp(-eps) + np.exp(-2 * eps))
    np.testing.assert_allclose(r["cor252_lshist_good"]["margin"], g["good_LSHist"] - lb, atol=1e-15)
    np.testing.assert_array_equal(r["_info"]["size_good"], g["size_good"])
    t23 = pr.theorem_2_3_rows(n, eps, prior, 0.3)
    np.testing.assert_allclose(r["_info"]["C"][: n + 1], t23["M"] / (t23["K"] * t23["ls"]), rtol=1e-14)
    # a violated statement is reported as violated (the strict reading of Thm 2.2 fails here)
    assert (~r["thm22_strict"]["ok"]).any()


def test_notes_statement_checks_three_categories():
    n, eps, prior = 5, 1.0, (1.0, 1.0, 1.0)
    r = pr.notes_statement_checks(n, eps, prior, (1.0,), (0.3,))
    cand = se.candidate_counts(n, 3)
    assert r["cor252_lshist_good"]["ok"].size == len(cand)
    lb = 1 - 0.5 * (np.exp(-eps) + np.exp(-2 * eps))
    for i in (0, len(cand) // 2):
        good = pr.good_set_probability("LSHist", cand[i], eps, prior)
        assert r["cor252_lshist_good"]["margin"][i] == pytest.approx(good - lb, abs=1e-12)
        ehd = pr.good_set_probability("EHD", cand[i], eps, prior)
        assert r["cor252_ehd_bound_gs"]["margin"][i] == pytest.approx(3 / (n * np.exp(-eps)) - ehd, abs=1e-12)
    with pytest.raises(ValueError, match="n"):
        pr.notes_statement_checks(41, eps, prior)


# -- optimal_release_minimax: column generation with a certificate ------------------------------------
@pytest.mark.parametrize("eps, prior", [(0.3, (1.0, 1.0)), (2.0, (1.0, 1.0)), (1.0, (0.5, 2.0))])
def test_minimax_column_generation_equals_lp(eps, prior):
    n = 12
    cg = pr.optimal_release_minimax(n, eps, prior, rtol=1e-9)
    lp = pr.optimal_release_lp(n, eps, prior, objective="minimax")
    assert cg.lower_bound <= lp.value * (1 + 1e-9)
    assert cg.value == pytest.approx(lp.solver_value, rel=1e-7)
    assert cg.gap <= 1e-9
    assert cg.privacy_loss <= eps + 1e-9
    # the mechanism is row-stochastic, its exact loss recomputed from P agrees, and its risks are as stated
    np.testing.assert_allclose(cg.P.sum(axis=1), 1.0, rtol=1e-12)
    assert pr._binary_log_loss(cg.P) <= eps + 1e-9
    np.testing.assert_allclose(cg.per_x, pr.release_risks(cg.P, pr.binary_loss_matrix(n, prior)), rtol=1e-12)
    assert cg.value == pytest.approx(cg.per_x.max())
    assert cg.info["symmetric"] == (prior[0] == prior[1])


def test_minimax_beats_every_mechanism_and_validates():
    n, eps = 30, 1.0
    cg = pr.optimal_release_minimax(n, eps)
    L = pr.binary_loss_matrix(n, (1.0, 1.0))
    for mech in ("LSHist", "LSHist-round", "Geometric", "EHD"):
        worst = pr.release_risks(pr.exact_output_distribution(mech, n, eps), L).max()
        assert cg.lower_bound <= worst
    with pytest.raises(ValueError, match="rtol"):
        pr.optimal_release_minimax(n, eps, rtol=0)
    with pytest.raises(RuntimeError, match="rtol"):
        pr.optimal_release_minimax(n, 0.1, max_iter=1)


def _projected_by_full_search(mechanism, counts, eps, prior):
    prior, counts = np.asarray(prior, dtype=float), np.asarray(counts)
    n = int(counts.sum())
    released, logp = pr.release_log_distribution(mechanism, counts, eps, prior)
    cand = se.candidate_counts(n, prior.size)
    index = {tuple(int(v) for v in r): i for i, r in enumerate(cand)}
    out = np.zeros(len(cand))
    for r, lp in zip(released, logp):
        j = index[tuple(int(v) for v in r)] if r.sum() == n else int(np.argmin(hellinger_dirichlet(prior + r, prior + cand)))
        out[j] += np.exp(lp)
    return out


@pytest.mark.parametrize(
    "counts, prior",
    [((1, 2, 3), (1.0, 1.0, 1.0)), ((3, 3, 3), (0.5, 0.5, 0.5)), ((1, 1, 6), (0.05, 0.05, 0.05)), ((2, 2, 3), (0.02, 3.0, 1.0)),
     ((1, 2, 1, 2), (1.0, 1.0, 1.0, 1.0))],
)
def test_fast_projection_equals_full_search(counts, prior):
    for mech in ("LSHist", "LSDim", "LSHist-round"):
        _, logq = pr.projected_release_log_distribution(mech, counts, 1.0, prior)
        np.testing.assert_allclose(np.exp(logq), _projected_by_full_search(mech, counts, 1.0, prior), rtol=1e-12, atol=1e-15)


def test_projection_mass_tol():
    counts, prior = (4, 6, 10), (1.0, 1.0, 1.0)
    _, exact = pr.projected_release_log_distribution("LSHist", counts, 1.0, prior)
    _, approx = pr.projected_release_log_distribution("LSHist", counts, 1.0, prior, mass_tol=1e-6)
    missing = 1.0 - np.exp(approx).sum()
    assert 0.0 <= missing <= 1e-6 + 1e-15
    assert np.all(np.exp(approx) <= np.exp(exact) * (1 + 1e-12) + 1e-300)
    with pytest.raises(ValueError, match="mass_tol"):
        pr.projected_release_log_distribution("LSHist", counts, 1.0, prior, mass_tol=1.0)


def test_three_category_lp_and_geometric_generalisation():
    n, eps, prior = 4, 1.0, (1.0, 1.0, 1.0)
    sol = pr.optimal_release_lp_multi(n, eps, prior)
    cand = sol.info["candidates"]
    pairs = pr.composition_neighbours(n, 3)
    assert len(pairs) == sum(int((np.abs(cand - c).sum(axis=1) == 2).sum()) for c in cand)
    assert sol.privacy_loss <= eps + 1e-9
    assert sol.value == pytest.approx(sol.solver_value, rel=1e-7)
    # never worse than an eps-DP mechanism that releases candidates: EHD (computed GS)
    ehd = np.mean([pr.mean_error("EHD", c, eps, prior) for c in cand])
    assert sol.value <= ehd
    # the k-category geometric mechanism: exact loss over all neighbouring compositions is at most eps
    support = None
    laws = []
    for c in cand:
        rel, lp = pr.geometric_multi_release_log_distribution(c, eps, prior)
        support = rel if support is None else support
        np.testing.assert_array_equal(rel, support)
        laws.append(lp)
    laws = np.array(laws)
    loss = np.max(np.abs(laws[pairs[:, 0]] - laws[pairs[:, 1]]))
    assert loss <= eps + 1e-9 and loss >= eps - 1e-9  # attained (a record moved between two noised counts)
    with pytest.raises(ValueError, match="k >= 3"):
        pr.geometric_multi_release_log_distribution((1, 2), eps, (1.0, 1.0))
    with pytest.raises(ValueError, match="200"):
        pr.optimal_release_lp_multi(30, eps, prior)


@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.02, 3.0)])
def test_loss_matrices_of_the_other_distances(prior):
    from dpbayes.core.distances import kl_beta, total_variation_beta

    n = 12
    a, b = prior
    for loss in pr.LP_LOSSES:
        L = pr.binary_loss_matrix(n, prior, loss)
        assert L.shape == (n + 1, n + 1) and np.all(np.diag(L) == 0) and pr.is_monotone_loss(L)
    x, j = 3, 7
    p, q = (a + x, b + n - x), (a + j, b + n - j)
    assert pr.binary_loss_matrix(n, prior, "tv")[x, j] == pytest.approx(total_variation_beta(*p, *q), rel=1e-14)
    assert pr.binary_loss_matrix(n, prior, "kl_true_release")[x, j] == pytest.approx(kl_beta(*p, *q), rel=1e-14)
    assert pr.binary_loss_matrix(n, prior, "kl_release_true")[x, j] == pytest.approx(kl_beta(*q, *p), rel=1e-14)
    assert pr.binary_loss_matrix(n, prior, "mean_abs")[x, j] == pytest.approx(q[0] / (a + b + n) - p[0] / (a + b + n), rel=1e-12)
    assert pr.binary_loss_matrix(n, prior, "mean_sq")[x, j] == pytest.approx((4 / (a + b + n)) ** 2, rel=1e-12)
    with pytest.raises(ValueError, match="loss"):
        pr.binary_loss_matrix(n, prior, "wasserstein")


# -- the data-independent baseline and the crossovers in eps --------------------------------------------
def test_constant_release_is_the_best_column_and_bounds_the_optimum():
    n, prior, eps = 12, (1.0, 1.0), 0.05
    L, w = pr.binary_loss_matrix(n, prior), pr.beta_binomial_data_prior(n, prior)
    j, value = pr.constant_release(L, w)
    assert value == pytest.approx(min(float(w @ L[:, k]) for k in range(n + 1)), rel=1e-14)
    assert j == n // 2  # symmetric problem: the middle candidate
    # a constant release is eps-DP for every eps, so the optimum is at most its error; at small eps it is close
    opt = pr.optimal_release_lp(n, eps, prior, data_prior=w).value
    assert opt <= value * (1 + 1e-9) and value < 1.05 * opt
    geo = float(w @ pr.release_risks(np.exp(pr.exact_log_output_distribution("Geometric", n, eps, prior)), L))
    assert value < geo  # ... and beats the geometric mechanism there
    with pytest.raises(ValueError, match="pi must"):
        pr.constant_release(L, w * 2)


def test_dirichlet_multinomial_data_prior_reduces_to_beta_binomial():
    np.testing.assert_allclose(pr.dirichlet_multinomial_data_prior(9, (0.5, 2.0)), pr.beta_binomial_data_prior(9, (0.5, 2.0)), rtol=1e-12)
    w = pr.dirichlet_multinomial_data_prior(6, (1.0, 1.0, 1.0))
    np.testing.assert_allclose(w, np.full(28, 1 / 28), rtol=1e-12)  # uniform over compositions


def test_multi_release_risks_match_mean_error_and_the_lp():
    n, prior, eps = 4, (1.0, 1.0, 1.0), 1.0
    w = pr.dirichlet_multinomial_data_prior(n, prior)
    cand = se.candidate_counts(n, 3)
    r = pr.multi_release_risks(n, eps, prior)
    assert set(r) == set(pr.NOISE_MECHANISMS_MULTI)
    assert r["LSHist"] == pytest.approx(float(w @ [pr.mean_error("LSHist", c, eps, prior) for c in cand]), rel=1e-12)
    opt = pr.optimal_release_lp_multi(n, eps, prior, data_prior=w).value
    const = pr.constant_release(pr.multi_distance_matrix(n, prior), w)[1]
    assert all(v >= opt * (1 - 1e-6) for v in r.values()) and opt <= const * (1 + 1e-6)
    with pytest.raises(ValueError, match="k >= 3"):
        pr.multi_release_risks(n, eps, (1.0, 1.0))


def test_crossover_eps_finds_every_sign_change():
    roots = pr.crossover_eps(lambda e: (e - 0.3) * (e - 2.0), (0.01, 10.0), scan=16, xtol=1e-10)
    np.testing.assert_allclose(roots, [0.3, 2.0], atol=1e-9)
    assert pr.crossover_eps(lambda e: 1.0, (0.1, 1.0)).size == 0
    with pytest.raises(ValueError, match="eps_range"):
        pr.crossover_eps(lambda e: e, (1.0, 0.5))


def test_constant_release_beats_every_noise_adding_mechanism_at_small_eps_three_categories():
    # k = 3, n = 8, uniform prior: below the crossover the data-independent release wins, above it not
    n, prior = 8, (1.0, 1.0, 1.0)
    w = pr.dirichlet_multinomial_data_prior(n, prior)
    const = pr.constant_release(pr.multi_distance_matrix(n, prior), w)[1]
    root = pr.crossover_eps(lambda e: min(pr.multi_release_risks(n, e, prior).values()) - const, (0.1, 3.0))
    assert root.size == 1 and 0.5 < root[0] < 0.6
    assert min(pr.multi_release_risks(n, 0.9 * root[0], prior).values()) > const
    assert min(pr.multi_release_risks(n, 1.1 * root[0], prior).values()) < const
