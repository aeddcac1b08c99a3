"""The release LP (best eps-DP mechanism over the candidate set) and its closed form."""

import math

import numpy as np
import pytest

from dpbayes import posterior_release as pr
from dpbayes import posterior_release_lp as lp


def _loss(P, eps):
    logP = np.log(P)
    return float(np.max(np.abs(logP[1:] - logP[:-1])))


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("objective", lp.OBJECTIVES)
@pytest.mark.parametrize("loss", lp.LOSSES)
def test_lp_is_certified_dp_and_beats_every_mechanism(eps, objective, loss):
    n = 12
    sol = lp.optimal_release_lp(n, eps, loss=loss, objective=objective)
    # exact privacy loss of the certified matrix, recomputed here
    assert _loss(sol.P, eps) <= eps + 1e-9
    assert sol.privacy_loss <= eps + 1e-9
    assert np.allclose(sol.P.sum(axis=1), 1.0, atol=1e-12)
    assert sol.value >= sol.solver_value - 1e-7 and sol.value - sol.solver_value < 1e-5
    L = lp.binary_loss_matrix(n, (1.0, 1.0), loss)
    pi = lp.uniform_data_prior(n)
    for m in (*pr.MECHANISMS, *pr.ADDED_MECHANISMS):
        if pr.privacy_loss_binary(m, n, eps) > eps + 1e-9:
            continue  # not eps-DP at this eps (EHD-notes, EHDL): no comparison
        r = lp.risks(np.exp(pr.exact_log_output_distribution(m, n, eps)), L)
        value = float(pi @ r) if objective == "bayes" else float(r.max())
        assert sol.value <= value + 1e-7, m


@pytest.mark.parametrize("eps", [0.05, 0.5, 2.0])
@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.5, 0.5), (0.05, 0.05)])
def test_closed_form_equals_lp_bayes(eps, prior):
    # truncated geometric + remap (chapter 1's exact solver) attains the LP optimum
    n = 15
    data_prior = lp.beta_binomial_data_prior(n, prior)
    a = lp.optimal_release_lp(n, eps, prior, data_prior=data_prior)
    b = lp.optimal_release_bayes_exact(n, eps, prior, data_prior=data_prior)
    assert b.info["monotone_loss"]
    assert b.value == pytest.approx(a.solver_value, abs=1e-8)
    assert b.privacy_loss <= eps + 1e-9


def test_lp_validation():
    with pytest.raises(ValueError, match="objective"):
        lp.optimal_release_lp(5, 1.0, objective="median")
    with pytest.raises(ValueError, match="loss"):
        lp.optimal_release_lp(5, 1.0, loss="kl")
    with pytest.raises(ValueError, match="data_prior"):
        lp.optimal_release_lp(5, 1.0, data_prior=np.ones(6))
    with pytest.raises(ValueError, match="n"):
        lp.optimal_release_lp(0, 1.0)


def test_beta_binomial_uniform_is_uniform():
    assert np.allclose(lp.beta_binomial_data_prior(9, (1.0, 1.0)), lp.uniform_data_prior(9))
    assert math.isclose(lp.beta_binomial_data_prior(9, (0.5, 2.0)).sum(), 1.0)


def test_good_set_loss_matches_good_set_probability():
    n, eps = 20, 1.0
    L = lp.binary_loss_matrix(n, (1.0, 1.0), "good_set")
    P = np.exp(pr.exact_log_output_distribution("LSHist", n, eps))
    for x in (0, 7, 20):
        assert 1 - lp.risks(P, L)[x] == pytest.approx(pr.good_set_probability("LSHist", (x, n - x), eps, (1.0, 1.0)), abs=1e-12)


def test_certificate_rejects_non_dp_input():
    P = np.array([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(RuntimeError, match="certified"):
        lp._certify(P, 0.1)
