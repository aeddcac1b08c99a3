"""Tests of dpbayes.ubapp.optimal: the LP (11), the exact count solver, and the privacy of every answer."""

from __future__ import annotations

import numpy as np
import pytest

from dpbayes.ubapp.lbapp import bayes_mse_posterior_mean, lbapp_mse
from dpbayes.core.losses import absolute_loss_matrix, loss_matrix, squared_loss_matrix
from dpbayes.ubapp.optimal import (
    DP_RTOL,
    PrivacyCheckError,
    _repair,
    bayes_risk,
    beta_prior_on_grid,
    binomial_likelihood,
    chain_neighbours,
    dp_breaches,
    dp_log_violation,
    expected_loss_matrix,
    private_bayes_exact_count,
    private_bayes_lp,
    privacy_loss,
    truncated_geometric_logmatrix,
    ubapp_exact,
    ubapp_lp,
    uniform_prior,
)


def assert_is_dp(sol, eps: float, n_obs: int) -> None:
    """Every returned estimator: column-stochastic, non-negative, eps-DP (log and linear checks)."""
    P = sol.P
    assert np.all(P >= 0)
    np.testing.assert_allclose(P.sum(axis=0), 1.0, rtol=0, atol=1e-12)
    nb = chain_neighbours(n_obs)
    # log-space check (exact where P underflows)
    assert dp_log_violation(sol.log_P, eps, nb) <= np.log1p(DP_RTOL)
    assert sol.privacy_loss <= eps * (1 + DP_RTOL) + 1e-15
    # independent linear-space check on the entries that are normal floats
    a, b = P[:, :-1], P[:, 1:]
    ok = (a > 1e-300) & (b > 1e-300)
    assert np.all(a[ok] <= np.exp(eps) * b[ok] * (1 + 1e-9))
    assert np.all(b[ok] <= np.exp(eps) * a[ok] * (1 + 1e-9))


# ------------------------------------------------------------------------------------------
# LP versus exact solver
# ------------------------------------------------------------------------------------------

def _random_cases(n: int, seed: int = 20230713) -> list[tuple[int, float, int, str, str]]:
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        K = int(rng.integers(1, 16))
        eps = float(10 ** rng.uniform(-4, 1))  # eps in [1e-4, 10]
        M = int(rng.integers(3, 41))
        loss = ("squared", "absolute")[i % 2]
        prior = ("uniform", "beta")[(i // 2) % 2]
        cases.append((K, eps, M, loss, prior))
    # the ends of the eps range explicitly
    cases += [(10, 1e-4, 21, "squared", "uniform"), (10, 10.0, 21, "squared", "uniform"), (30, 10.0, 31, "absolute", "beta")]
    return cases


@pytest.mark.parametrize("K,eps,M,loss,prior_kind", _random_cases(24))
def test_exact_matches_lp(K, eps, M, loss, prior_kind):
    theta = np.linspace(0.0, 1.0, M)
    prior = uniform_prior(theta) if prior_kind == "uniform" else beta_prior_on_grid(theta, 2.0, 5.0)
    lp = ubapp_lp(K, eps, theta, prior=prior, loss=loss)
    ex = ubapp_exact(K, eps, theta, prior=prior, loss=loss)
    assert abs(lp.risk - ex.risk) <= 1e-6 * ex.risk
    assert lp.risk >= ex.risk - 1e-12  # the LP answer is feasible, so it cannot beat the optimum
    assert_is_dp(lp, eps, K + 1)
    assert_is_dp(ex, eps, K + 1)


def test_generic_lp_with_different_estimate_grid():
    """Chapter 04's use: a count observed exactly, estimates 0..n, absolute loss on the count."""
    n, eps = 12, 0.3
    counts = np.arange(n + 1.0)
    L = absolute_loss_matrix(counts)  # theta = the count itself
    Q = np.eye(n + 1)
    prior = np.random.default_rng(3).dirichlet(np.ones(n + 1))
    lp = private_bayes_lp(L, Q, prior, eps, chain_neighbours(n + 1), estimates=counts)
    ex = private_bayes_exact_count(L, Q, prior, eps, estimates=counts)
    assert lp.P.shape == (n + 1, n + 1)
    assert abs(lp.risk - ex.risk) <= 1e-9
    assert_is_dp(lp, eps, n + 1)
    # estimates on a coarser grid than theta
    theta = np.linspace(0, 1, 25)
    est = np.linspace(0, 1, 7)
    L2 = squared_loss_matrix(theta, est)
    Q2 = binomial_likelihood(6, theta)
    lp2 = private_bayes_lp(L2, Q2, uniform_prior(theta), 0.8, [(i, i + 1) for i in range(6)], estimates=est)
    ex2 = private_bayes_exact_count(L2, Q2, uniform_prior(theta), 0.8, estimates=est)
    assert lp2.P.shape == (7, 7)
    assert abs(lp2.risk - ex2.risk) <= 1e-9


def test_lp_general_neighbour_graph_is_dp():
    """A non-chain neighbour structure (a star): the LP answer must respect every listed pair."""
    rng = np.random.default_rng(5)
    theta = np.linspace(0, 1, 15)
    Q = rng.dirichlet(np.ones(5), size=15).T  # 5 observations
    nb = [(0, 1), (0, 2), (0, 3), (0, 4)]
    sol = private_bayes_lp(squared_loss_matrix(theta), Q, uniform_prior(theta), 0.5, nb, estimates=theta)
    assert dp_log_violation(sol.log_P, 0.5, nb) <= np.log1p(DP_RTOL)


def test_risk_is_the_objective_of_eq_11():
    theta = np.linspace(0, 1, 11)
    K, eps = 4, 0.7
    sol = ubapp_lp(K, eps, theta)
    Q, pi, L = binomial_likelihood(K, theta), uniform_prior(theta), squared_loss_matrix(theta)
    assert np.isclose(np.trace(Q @ np.diag(pi) @ L @ sol.P), sol.risk, rtol=1e-12)


# ------------------------------------------------------------------------------------------
# Exact solver: structure and limits
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n,eps", [(1, 0.5), (5, 1e-4), (20, 3.0), (100, 10.0)])
def test_truncated_geometric_is_a_mechanism_with_privacy_loss_eps(n, eps):
    logG = truncated_geometric_logmatrix(n, eps)
    np.testing.assert_allclose(np.exp(logG).sum(axis=0), 1.0, rtol=1e-12)
    assert np.isclose(privacy_loss(logG, chain_neighbours(n + 1)), eps, rtol=1e-12)


def test_continuous_limit_is_the_grid_limit():
    K, eps = 20, 0.5
    cont = ubapp_exact(K, eps).risk
    risks = [ubapp_exact(K, eps, np.linspace(0, 1, M)).risk for M in (101, 1001, 10001)]
    gaps = np.abs(np.array(risks) - cont)
    assert gaps[-1] < 1e-6
    assert gaps[2] < gaps[0]


@pytest.mark.parametrize("K", [1, 10, 100])
def test_limits_in_eps(K):
    # eps -> 0: the data are ignored, the estimate is the prior mean, risk = prior variance 1/12
    assert np.isclose(ubapp_exact(K, 1e-9).risk, 1 / 12, rtol=1e-6)
    # eps -> inf: the non-private posterior mean, risk = 1 / (6 (K + 2))
    assert np.isclose(ubapp_exact(K, 60.0).risk, bayes_mse_posterior_mean(K), rtol=1e-9)


@pytest.mark.parametrize("eps", [1e-3, 1e-2, 0.1, 1.0, 5.0])
@pytest.mark.parametrize("K", [1, 10, 100])
def test_ubapp_not_worse_than_lbapp(K, eps):
    """LBaPP is an eps-DP estimator too, so the optimum (continuous limit) cannot be worse."""
    assert ubapp_exact(K, eps).risk <= lbapp_mse(K, eps)


def test_beta_prior_continuous_matches_grid():
    K, eps, a, b = 15, 0.4, 2.0, 5.0
    cont = ubapp_exact(K, eps, beta_prior=(a, b)).risk
    theta = np.linspace(0, 1, 20001)
    grid = ubapp_exact(K, eps, theta, prior=beta_prior_on_grid(theta, a, b)).risk
    assert abs(grid - cont) < 1e-6
    assert np.isclose(ubapp_exact(K, 60.0, beta_prior=(a, b)).risk, bayes_mse_posterior_mean(K, a, b), rtol=1e-9)


@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_expected_loss_fast_paths_equal_dense_product(loss):
    rng = np.random.default_rng(11)
    theta = np.sort(rng.uniform(0, 1, 37))
    est = np.sort(rng.uniform(-0.2, 1.2, 23))
    w = rng.uniform(0, 1, (5, 37))
    np.testing.assert_allclose(
        expected_loss_matrix(w, theta, est, loss), w @ loss_matrix(loss, theta, est), rtol=1e-10, atol=1e-13
    )


# ------------------------------------------------------------------------------------------
# The DP check can fail, and the repair is honest
# ------------------------------------------------------------------------------------------

def test_non_private_estimator_is_rejected():
    K = 5
    P = np.eye(K + 1)  # report the count itself
    with np.errstate(divide="ignore"):
        assert dp_log_violation(np.log(P), 1.0, chain_neighbours(K + 1)) == np.inf
    P2 = np.full((2, 2), 0.5)
    P2[:, 1] = [0.9, 0.1]
    assert dp_log_violation(np.log(P2), 1.0, [(0, 1)]) > 0  # log(0.5 / 0.1) = 1.61 > 1


def test_repair_turns_a_perturbed_solution_into_a_dp_one():
    theta = np.linspace(0, 1, 31)
    K, eps = 30, 2.0
    exact = ubapp_exact(K, eps, theta)
    rng = np.random.default_rng(2)
    P = exact.P * (1 + 1e-9 * rng.standard_normal(exact.P.shape))
    P[P < 1e-12] = 0.0  # a solver's rounding of the tails
    P /= P.sum(axis=0)
    nb = chain_neighbours(K + 1)
    assert dp_log_violation(np.log(np.where(P > 0, P, 1e-320)), eps, nb) > 1e-9
    I, J = np.concatenate([nb[:, 0], nb[:, 1]]), np.concatenate([nb[:, 1], nb[:, 0]])
    R, lam, delta = _repair(P, eps, I, J)
    assert lam < 1e-6 and delta < 1e-6
    with np.errstate(divide="ignore"):
        assert dp_log_violation(np.log(R), eps, nb) <= np.log1p(DP_RTOL)
    np.testing.assert_allclose(R.sum(axis=0), 1.0, atol=1e-12)


def test_dp_breaches_counts_zero_positive_pairs_and_violations():
    eps = np.log(2.0)
    P = np.array([[0.5, 0.2, 0.0], [0.5, 0.8, 1.0]])  # columns: observations 0, 1, 2
    b = dp_breaches(P, eps, chain_neighbours(3))
    # (0, 1): 0.5 > 2 * 0.2 breaks by 0.1; (1, 2): 0.2 next to 0 (infinite loss), 0.2 - 0 breaks
    assert b.n_zero_positive == 1
    assert b.n_violations == 2
    assert b.max_violation == pytest.approx(0.2)
    with np.errstate(divide="ignore"):
        assert np.isinf(privacy_loss(np.log(P), chain_neighbours(3)))
    exact = ubapp_exact(20, 1.0, np.linspace(0, 1, 11))
    clean = dp_breaches(exact.P, 1.0, chain_neighbours(21))
    assert clean.n_zero_positive == 0 and clean.n_violations == 0 and clean.max_violation <= 1e-15
    with pytest.raises(ValueError, match="P"):
        dp_breaches(-P, eps, chain_neighbours(3))


def test_inaccurate_solver_raises_or_is_repaired():
    """An interior-point solver's answer at tiny eps cannot be certified: it must not pass silently."""
    theta = np.linspace(0, 1, 11)
    try:
        sol = ubapp_lp(3, 1e-4, theta, solver="CLARABEL")
    except PrivacyCheckError:
        return
    assert_is_dp(sol, 1e-4, 4)


# ------------------------------------------------------------------------------------------
# Input validation
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"K": 0}, ValueError, "K"),
        ({"K": 2.5}, TypeError, "K"),
        ({"eps": 0.0}, ValueError, "eps"),
        ({"eps": -1.0}, ValueError, "eps"),
        ({"eps": np.inf}, ValueError, "eps"),
        ({"theta_grid": [0.5, 0.2]}, ValueError, "theta_grid"),
        ({"theta_grid": [0.0, 1.5]}, ValueError, "theta_grid"),
        ({"loss": "huber"}, ValueError, "loss"),
        ({"prior": [0.5, 0.6, 0.1]}, ValueError, "prior"),
    ],
)
def test_bad_input_is_rejected(kwargs, exc, match):
    args = {"K": 3, "eps": 1.0, "theta_grid": [0.0, 0.5, 1.0]}
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        ubapp_exact(**args)
    with pytest.raises(exc, match=match):
        ubapp_lp(**args)


def test_bad_lp_input_is_rejected():
    theta = np.linspace(0, 1, 4)
    L, Q, pi = squared_loss_matrix(theta), binomial_likelihood(2, theta), uniform_prior(theta)
    with pytest.raises(ValueError, match="shapes"):
        private_bayes_lp(L, Q.T, pi, 1.0, chain_neighbours(3))
    with pytest.raises(ValueError, match="neighbours"):
        private_bayes_lp(L, Q, pi, 1.0, [(0, 3)])
    with pytest.raises(ValueError, match="neighbours"):
        private_bayes_lp(L, Q, pi, 1.0, [(1, 1)])
    with pytest.raises(ValueError, match="solver"):
        private_bayes_lp(L, Q, pi, 1.0, chain_neighbours(3), solver="GUROBI")
    with pytest.raises(ValueError, match="likelihood"):
        private_bayes_lp(L, -Q, pi, 1.0, chain_neighbours(3))
    with pytest.raises(ValueError, match="continuous"):
        ubapp_exact(3, 1.0, loss="absolute")


# ------------------------------------------------------------------------------------------
# Helpers used by the chapter
# ------------------------------------------------------------------------------------------

def test_bayes_risk_scores_a_solution():
    theta = np.linspace(0, 1, 21)
    sol = ubapp_exact(6, 0.4, theta)
    Q, pi = binomial_likelihood(6, theta), uniform_prior(theta)
    assert np.isclose(bayes_risk(sol.P, squared_loss_matrix(theta), Q, pi), sol.risk, rtol=1e-12)
    # scored under another loss, the squared-loss optimum cannot beat the absolute-loss optimum
    opt_abs = ubapp_exact(6, 0.4, theta, loss="absolute")
    assert bayes_risk(sol.P, absolute_loss_matrix(theta), Q, pi) >= opt_abs.risk - 1e-15


def test_default_solver_falls_back_and_named_solver_does_not(monkeypatch):
    import dpbayes.ubapp.optimal as ub

    real = ub._solve_private_lp

    def highs_fails(L, Q, pi, eps, nb, solver, *rest):
        if solver == "HIGHS":
            raise RuntimeError("LP solver HIGHS failed: status infeasible_inaccurate")
        return real(L, Q, pi, eps, nb, solver, *rest)

    monkeypatch.setattr(ub, "_solve_private_lp", highs_fails)
    grid = np.linspace(0.05, 0.95, 7)
    sol = ubapp_lp(4, 0.5, grid)
    assert sol.solver == "CLARABEL" and sol.info["failed_solvers"][0].startswith("HIGHS")
    assert sol.risk == pytest.approx(ubapp_exact(4, 0.5, grid).risk, rel=1e-6)
    with pytest.raises(RuntimeError, match="HIGHS"):
        ubapp_lp(4, 0.5, grid, solver="HIGHS")


# ------------------------------------------------------------------ O(K M) solver vs the dense reference


@pytest.mark.parametrize(
    ("K", "M", "eps", "loss", "prior_kind"),
    [
        (10, 11, 1.0, "squared", "uniform"),
        (100, 501, 0.1, "squared", "random"),
        (100, 501, 0.1, "absolute", "random"),
        (300, 2000, 0.01, "absolute", "uniform"),
        (50, 1001, 0.001, "squared", "beta"),
        (200, 300, 5.0, "absolute", "beta"),
    ],
)
def test_ubapp_exact_grid_matches_the_dense_reference(K, M, eps, loss, prior_kind):
    from dpbayes.ubapp.optimal import ubapp_exact_dense

    theta = np.linspace(0.0, 1.0, M)
    prior = {"uniform": None, "random": np.random.default_rng(K).dirichlet(np.ones(M)), "beta": beta_prior_on_grid(theta, 2.0, 5.0)}[prior_kind]
    new = ubapp_exact(K, eps, theta, prior=prior, loss=loss)
    ref = ubapp_exact_dense(K, eps, theta, prior=prior, loss=loss)
    assert new.risk == pytest.approx(ref.risk, rel=1e-12)
    np.testing.assert_array_equal(new.info["remap"], ref.info["remap"])
    np.testing.assert_allclose(new.P, ref.P, rtol=0, atol=0)
    assert new.privacy_loss == ref.privacy_loss <= eps * (1 + DP_RTOL)


@pytest.mark.parametrize(("K", "eps", "ab"), [(10, 1.0, (1.0, 1.0)), (500, 0.01, (2.0, 5.0)), (1000, 1e-5, (0.5, 0.5)), (2000, 60.0, (300.0, 200.0))])
def test_ubapp_exact_continuous_matches_the_dense_reference(K, eps, ab):
    from dpbayes.ubapp.optimal import ubapp_exact_dense

    new, ref = ubapp_exact(K, eps, beta_prior=ab), ubapp_exact_dense(K, eps, beta_prior=ab)
    assert new.risk == pytest.approx(ref.risk, rel=1e-12)
    np.testing.assert_allclose(new.estimates, ref.estimates, rtol=1e-12)
    np.testing.assert_allclose(new.info["p_z"], ref.info["p_z"], rtol=1e-12)
    if K <= 500:
        np.testing.assert_array_equal(new.log_P, ref.log_P)
        assert new.privacy_loss == ref.privacy_loss


def test_geometric_kernel_sums_match_the_dense_products():
    from dpbayes.ubapp.optimal import geometric_kernel_sums

    rng = np.random.default_rng(3)
    for n, eps in [(0, 1.0), (1, 0.3), (40, 2.0), (400, 0.02)]:
        w = rng.random((3, n + 1))
        G = np.exp(truncated_geometric_logmatrix(n, eps))
        d = np.arange(n + 1)[None, :] - np.arange(n + 1)[:, None]  # y - z
        sums = geometric_kernel_sums(w, eps, 2, axis=1)
        for r in range(3):
            np.testing.assert_allclose(sums[r], w @ (G * d**r).T, rtol=1e-12, atol=1e-12 * np.abs(w).sum())


def test_ubapp_exact_is_linear_in_K_without_the_dense_matrix():
    """K = 10**6 (a dense G would be 8 TB): only O(K) memory, P is refused when read."""
    sol = ubapp_exact(10**6, 1.0)
    assert np.all(np.diff(sol.estimates) > 0) and 0 < sol.risk < 1e-6
    with pytest.raises(ValueError, match="MAX_DENSE_ENTRIES"):
        sol.P
    assert "built on first access" in repr(sol)


def test_ubapp_exact_lazy_solution_pickles():
    import pickle

    sol = ubapp_exact(20, 0.5, np.linspace(0, 1, 30))
    back = pickle.loads(pickle.dumps(sol))
    assert back.risk == sol.risk and np.array_equal(back.P, sol.P)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"K": 10**8 + 1, "eps": 1.0}, r"K must be an integer in \[1, 100000000\]"),
        ({"K": 10, "eps": 1.0, "theta_grid": np.linspace(0, 1, 10**6 + 1)}, r"theta_grid must have at most 1000000 points"),
        ({"K": 10**6, "eps": 1.0, "theta_grid": np.linspace(0, 1, 20_000)}, r"\(K \+ 1\) \* len\(theta_grid\) must be <= 1e\+10"),
    ],
)
def test_ubapp_exact_bounds_every_size_before_allocating(args, message):
    with pytest.raises(ValueError, match=message):
        ubapp_exact(**args)


def test_dense_reference_refuses_huge_matrices():
    from dpbayes.ubapp.optimal import ubapp_exact_dense

    with pytest.raises(ValueError, match="dense 100001 x 100001 matrix"):
        ubapp_exact_dense(100_000, 1.0)


# --- issue 36: the reduction to the count, neighbour TV, add/remove neighbours ---------------------------


@pytest.mark.parametrize("n, eps, a, b", [(1, 1.0, 1.0, 1.0), (1000, 0.3, 2.0, 5.0), (20000, 1.0, 2000.0, 2000.0)])
def test_the_mean_remap_without_p_z_is_the_same(n, eps, a, b):
    from dpbayes.ubapp.optimal import beta_posterior_mean_remap

    est, risk, p_z = beta_posterior_mean_remap(n, eps, a, b)
    est2, risk2, none = beta_posterior_mean_remap(n, eps, a, b, with_p_z=False)
    assert none is None and est.tobytes() == est2.tobytes() and risk == risk2
    assert p_z.sum() == pytest.approx(1.0, rel=1e-10)  # (scipy's Beta-binomial above a, b = 30: about 1e-11)
