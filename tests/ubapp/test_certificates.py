"""Tests of dpbayes.ubapp.certificates: dual feasible points of LP (11) and the lower bounds they prove."""

from __future__ import annotations

import itertools
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from scipy.optimize import linprog

from dpbayes.ubapp.certificates import (
    certify_count_problem,
    certify_ubapp,
    dual_cone_min,
    dual_lower_bound,
    exact_count_dual,
    is_dual_feasible,
)
from dpbayes.core.losses import absolute_loss_matrix, squared_loss_matrix
from dpbayes.ubapp.optimal import (
    binomial_likelihood,
    chain_neighbours,
    private_bayes_exact_count,
    private_bayes_lp,
    truncated_geometric_logmatrix,
    ubapp_exact,
    ubapp_lp,
    uniform_prior,
)


def _cost(L, Q, pi):
    return (Q @ (pi[:, None] * L)).T


# --------------------------------------------------------------------------------------------
# The dynamic programme over the DP cone
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.05, 0.7, 3.0])
def test_cone_min_equals_brute_force_over_rays(eps):
    rng = np.random.default_rng(0)
    n = 7
    d = rng.normal(size=(40, n))
    best = np.full(40, np.inf)
    for signs in itertools.product([-1.0, 1.0], repeat=n - 1):
        p = np.exp(eps * np.concatenate([[0.0], np.cumsum(signs)]))
        best = np.minimum(best, d @ p)
    assert np.allclose(dual_cone_min(d, eps), best, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("eps", [0.1, 1.0])
def test_cone_min_equals_lp_over_the_whole_cone(eps):
    """The extreme-ray claim: min <d, p> over {p in cone, p_0 = 1} (an LP) equals the DP's value."""
    rng = np.random.default_rng(1)
    n = 6
    nb = chain_neighbours(n)
    rows = []
    for i, j in np.concatenate([nb, nb[:, ::-1]]):
        r = np.zeros(n)
        r[i], r[j] = 1.0, -np.exp(eps)
        rows.append(r)
    A_eq = np.zeros((1, n))
    A_eq[0, 0] = 1.0
    for _ in range(10):
        d = rng.normal(size=n) + 0.3  # some rows bounded below, some not
        res = linprog(d, A_ub=np.array(rows), b_ub=np.zeros(len(rows)), A_eq=A_eq, b_eq=[1.0], bounds=(0, None), method="highs")
        assert res.status == 0
        assert dual_cone_min(d, eps)[0] == pytest.approx(res.fun, rel=1e-9, abs=1e-9)


# --------------------------------------------------------------------------------------------
# Exact rational arithmetic: the construction is exactly feasible and exactly meets the primal
# --------------------------------------------------------------------------------------------

HALF = Fraction(1, 2)  # a = e^{-eps} = 1/2, i.e. eps = ln 2: every quantity is rational


def _exact_problem(K, M, loss):
    theta = [Fraction(j, M - 1) for j in range(M)]
    pi = [Fraction(1, M)] * M
    Q = [[comb(K, y) * t**y * (1 - t) ** (K - y) for t in theta] for y in range(K + 1)]
    L = [[(t - s) ** 2 if loss == "squared" else abs(t - s) for s in theta] for t in theta]
    return [[sum(L[j][k] * pi[j] * Q[y][j] for j in range(M)) for y in range(K + 1)] for k in range(M)]


def _exact_cone_min(d, ratio):
    W = d[-1]
    for y in range(len(d) - 2, -1, -1):
        W = d[y] + (W / ratio if W >= 0 else W * ratio)
    return W


def _exact_dual(C, a):
    n = len(C[0])
    rays = [[a ** abs(z - y) for y in range(n)] for z in range(n)]
    b = [min(sum(ck[y] * r[y] for y in range(n)) for ck in C) for r in rays]
    nu = []
    for z in range(n):  # tridiagonal inverse of the KMS matrix
        diag = 1 if z in (0, n - 1) else 1 + a * a
        v = diag * b[z] - (a * b[z - 1] if z > 0 else 0) - (a * b[z + 1] if z < n - 1 else 0)
        nu.append(v / (1 - a * a))
    return nu, b


def _exact_primal(C, a):
    """Risk of geometric mechanism + Bayes remap, computed from the mechanism's matrix G itself."""
    n = len(C[0])
    risk = 0
    for z in range(n):
        c = (1 - a) / (1 + a) if 0 < z < n - 1 else 1 / (1 + a)
        g = [c * a ** abs(z - y) for y in range(n)]
        risk += min(sum(ck[y] * g[y] for y in range(n)) for ck in C)
    return risk


@pytest.mark.parametrize("K,M,loss", [(3, 5, "squared"), (4, 7, "absolute"), (2, 9, "squared")])
def test_certificate_exact_in_rationals(K, M, loss):
    C = _exact_problem(K, M, loss)
    nu, _ = _exact_dual(C, HALF)
    # dual feasible exactly: every row C[k] - nu is >= 0 on the DP cone (ratio e^eps = 2)
    assert all(_exact_cone_min([ck[y] - nu[y] for y in range(K + 1)], 2) >= 0 for ck in C)
    # and its value equals the exact solver's risk exactly: the exact solver is optimal, certified
    assert sum(nu) == _exact_primal(C, HALF)
    # the float pipeline agrees: the LP optimum, the exact solver and the certificate
    Cf = np.array([[float(v) for v in row] for row in C])
    cert = certify_count_problem(Cf, float(np.log(2.0)))
    assert cert.lower_bound == pytest.approx(float(sum(nu)), rel=1e-12)
    theta = np.linspace(0, 1, M)
    Lf = squared_loss_matrix(theta) if loss == "squared" else absolute_loss_matrix(theta)
    lp = private_bayes_lp(Lf, binomial_likelihood(K, theta), uniform_prior(theta), float(np.log(2.0)), chain_neighbours(K + 1))
    assert cert.lower_bound <= lp.risk * (1 + 1e-9)
    assert lp.risk == pytest.approx(float(sum(nu)), rel=1e-8)


def test_exact_check_rejects_an_infeasible_dual():
    """Raising one nu_y by a little breaks feasibility exactly, and its 'bound' would exceed the optimum."""
    K, M = 3, 5
    C = _exact_problem(K, M, "squared")
    nu, _ = _exact_dual(C, HALF)
    bumped = list(nu)
    bumped[1] += Fraction(1, 10**6)
    assert any(_exact_cone_min([ck[y] - bumped[y] for y in range(K + 1)], 2) < 0 for ck in C)
    assert sum(bumped) > _exact_primal(C, HALF)  # would "prove" a bound above the optimum
    # the floating-point check rejects it too, with and without its rounding margin
    Cf = np.array([[float(v) for v in row] for row in C])
    nf = np.array([float(v) for v in bumped])
    eps = float(np.log(2.0))
    assert not is_dual_feasible(Cf, nf, eps)
    assert not is_dual_feasible(Cf, nf, eps, margin=False)
    # repairing it gives a valid bound again
    fixed, delta = dual_lower_bound(Cf, nf, eps)
    assert delta > 0 and is_dual_feasible(Cf, fixed, eps)
    assert fixed.sum() <= float(_exact_primal(C, HALF)) * (1 + 1e-12)


# --------------------------------------------------------------------------------------------
# Floating point, against the LP and against feasible estimators
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("K,eps,loss", [(10, 0.001, "squared"), (10, 0.3, "absolute"), (20, 1.0, "squared"), (20, 5.0, "absolute")])
def test_certificate_brackets_the_lp_optimum(K, eps, loss):
    theta = np.linspace(0, 1, 41)
    cert = certify_ubapp(K, eps, theta, loss)
    lp = ubapp_lp(K, eps, theta, loss=loss)
    assert cert.lower_bound <= lp.risk * (1 + 1e-9)
    assert cert.lower_bound <= cert.primal_risk
    assert cert.relative_gap < 1e-10
    assert cert.primal_risk == ubapp_exact(K, eps, theta, loss=loss).risk


def test_bound_holds_for_random_private_estimators():
    """Weak duality in action: remapped geometric mechanisms (all eps-DP) never beat the bound."""
    K, eps = 15, 0.4
    theta = np.linspace(0, 1, 61)
    cert = certify_ubapp(K, eps, theta)
    C = _cost(squared_loss_matrix(theta), binomial_likelihood(K, theta), uniform_prior(theta))
    G = np.exp(truncated_geometric_logmatrix(K, eps))
    rng = np.random.default_rng(3)
    for _ in range(50):
        R = rng.dirichlet(np.full(theta.size, 0.2), size=K + 1).T  # random randomised remap z -> estimate
        P = R @ G
        assert np.sum(C * P) >= cert.lower_bound


def test_certificate_on_an_unstructured_problem_is_weaker_but_valid():
    """Where the exact solver is not optimal, its complementary-slackness dual is infeasible;
    the repaired bound is then below the LP optimum (valid) with a visible gap."""
    rng = np.random.default_rng(4)
    n_obs, n_est, n_theta, eps = 6, 8, 8, 0.5
    found = False
    for _ in range(200):
        L = rng.uniform(size=(n_theta, n_est))
        Q = rng.dirichlet(np.ones(n_obs), size=n_theta).T
        pi = rng.dirichlet(np.ones(n_theta))
        C = _cost(L, Q, pi)
        nu0, primal = exact_count_dual(C, eps)
        if is_dual_feasible(C, nu0, eps):
            continue
        lp = private_bayes_lp(L, Q, pi, eps, chain_neighbours(n_obs))
        cert = certify_count_problem(C, eps)
        assert cert.lower_bound <= lp.risk * (1 + 1e-9) + 1e-12
        assert primal == pytest.approx(private_bayes_exact_count(L, Q, pi, eps).risk, rel=1e-9)
        if primal > lp.risk * (1 + 1e-6):
            found = True
            break
    assert found


def test_bad_input():
    with pytest.raises(ValueError, match="C"):
        certify_count_problem(np.zeros((0, 3)), 1.0)
    with pytest.raises(ValueError, match="eps"):
        certify_count_problem(np.ones((2, 3)), -1.0)
    with pytest.raises(ValueError, match="nu"):
        is_dual_feasible(np.ones((2, 3)), np.ones(2), 1.0)
    with pytest.raises(ValueError, match="C"):
        is_dual_feasible(np.array([[np.nan, 1.0]]), np.ones(2), 1.0)


# --------------------------------------------------------------------------------------------
# The condition: single-crossing expected losses => the exact solver's certificate is feasible
# --------------------------------------------------------------------------------------------


N_MONOTONE_CASES = 200  # per loss


@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_monotone_targets_single_crossing_and_certified(loss):
    """The tested identity of issue 36: monotone target, Beta prior, binomial count, squared or absolute loss
    => the costs are single-crossing and the exact solver's dual is feasible (relative gap <= 1e-9)."""
    from dpbayes.ubapp.certificates import random_target_problem, single_crossing

    rng = np.random.default_rng(36)
    for _ in range(N_MONOTONE_CASES):
        C, eps = random_target_problem(rng, True, loss)
        assert single_crossing(C)
        assert certify_count_problem(C, eps).relative_gap <= 1e-9


def test_single_crossing_unstructured_costs_certified():
    """The condition alone, without any statistical structure: random cost matrices that happen to be
    single-crossing are all certified (and the others are not all certified)."""
    from dpbayes.ubapp.certificates import single_crossing

    rng = np.random.default_rng(7)
    n_sc = n_other_gap = 0
    for _ in range(6000):
        n, m = int(rng.integers(2, 6)), int(rng.integers(2, 5))
        eps = float(10 ** rng.uniform(-1.5, 1))
        C = rng.uniform(size=(m, n))
        gap = certify_count_problem(C, eps).relative_gap
        if single_crossing(C):
            n_sc += 1
            assert gap <= 1e-9
        elif gap > 1e-6:
            n_other_gap += 1
    assert n_sc > 500 and n_other_gap > 10


def test_counterexamples_to_weaker_conditions():
    """theta(1 - theta): not single-crossing and a certified gap; a monotone non-private Bayes action alone
    (argmin of each column non-decreasing) is not enough: a 3 x 5 cost matrix with a gap the LP confirms."""
    from dpbayes.ubapp.certificates import single_crossing, target_cost_matrix

    theta = np.linspace(0.0, 1.0, 41)
    g = theta * (1 - theta)
    C = target_cost_matrix(12, theta, uniform_prior(theta), g, np.linspace(0.0, 0.25, 41))
    assert not single_crossing(C)
    assert certify_count_problem(C, 0.3).relative_gap > 1e-2

    C = np.array([[0.18169404, 0.59714176, 0.86796031, 0.90681684, 0.13655278],
                  [0.83271406, 0.07558418, 0.12028516, 0.53522316, 0.97533718],
                  [0.66689442, 0.95521791, 0.96054005, 0.9027065, 0.04294145]])
    eps = 0.586040061876424
    assert np.all(np.diff(np.argmin(C, axis=0)) >= 0) and not single_crossing(C)
    n = C.shape[1]
    lp = private_bayes_lp(n * C.T, np.eye(n), np.full(n, 1.0 / n), eps, chain_neighbours(n))
    exact = private_bayes_exact_count(n * C.T, np.eye(n), np.full(n, 1.0 / n), eps)
    assert exact.risk / lp.risk - 1 > 0.05
    assert certify_count_problem(C, eps).relative_gap > 0.05


def test_single_crossing_definition():
    from dpbayes.ubapp.certificates import single_crossing

    assert single_crossing([[0.0, 1.0, 2.0], [1.0, 1.0, 0.5]])  # + then - : the larger estimate wins later
    assert single_crossing([[1.0, 1.0, 0.5], [0.0, 1.0, 2.0]])  # - then +: the count reversed
    assert not single_crossing([[0.0, 1.0, 2.0], [1.0, 1.0, 0.5], [0.0, 1.0, 2.0]])  # pairs in both directions
    assert not single_crossing([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]])  # two crossings
    assert single_crossing([[1.0, 2.0]])
    with pytest.raises(ValueError, match="rtol"):
        single_crossing([[1.0, 2.0]], rtol=-1.0)


@pytest.mark.parametrize("eps", [0.2, 1.3])
def test_proof_identities(eps):
    """The two identities of the proof sketch in notebook 01a.

    (1) For an extreme ray p of the DP cone, A^{-1} p = p at peaks, -p at valleys, 0 elsewhere (A[z, y] = a^|z-y|).
    (2) phi(z) = e^{eps z} (A D)(z) has phi(z + 1) - phi(z) = (e^{2 eps} - 1) e^{2 eps z} sum_{y > z} e^{-eps y} D(y).
    """
    rng = np.random.default_rng(3)
    n = 9
    z = np.arange(n)
    A = np.exp(-eps * np.abs(z[:, None] - z[None, :]))
    for _ in range(20):
        signs = rng.choice([-1.0, 1.0], size=n - 1)
        p = np.exp(eps * np.concatenate([[0.0], np.cumsum(signs)]))
        left_ok = np.concatenate([[True], signs > 0])  # the first point, or p[y] > p[y - 1]
        right_ok = np.concatenate([signs < 0, [True]])  # the last point, or p[y] > p[y + 1]
        peak = left_ok & right_ok
        valley = np.concatenate([[False], signs < 0]) & np.concatenate([signs > 0, [False]])
        expected = np.where(peak, p, np.where(valley, -p, 0.0))
        assert np.allclose(np.linalg.solve(A, p), expected, atol=1e-10 * p.max())
        D = rng.normal(size=n)
        phi = np.exp(eps * z) * (A @ D)
        psi = np.array([np.sum(np.exp(-eps * z[z > k]) * D[z > k]) for k in range(n)])
        assert np.allclose(np.diff(phi), ((np.exp(2 * eps) - 1) * np.exp(2 * eps * z) * psi)[:-1], rtol=1e-9, atol=1e-9)


# --------------------------------------------------------------------------------------------
# Outputs off the grid
# --------------------------------------------------------------------------------------------


def test_off_grid_bound():
    from dpbayes.ubapp.certificates import off_grid_bound
    from dpbayes.ubapp.lbapp import clipped_lbapp_mse

    coarse, fine = off_grid_bound(20, 1.0, 101), off_grid_bound(20, 1.0, 2001)
    for bd in (coarse, fine):
        assert 0 < bd.lower <= bd.upper
        assert bd.upper == pytest.approx(ubapp_exact(20, 1.0).risk, rel=1e-12)
        # the grid optimum (real outputs rounded) lies above the lower bound
        assert bd.grid_lower >= bd.lower
        # any eps-DP estimator with real outputs is above the bound: clipped LBaPP
        assert clipped_lbapp_mse(20, 1.0) >= bd.lower
    # the bound's width is about h / sqrt(MSE) and shrinks with the spacing
    assert fine.relative_width < coarse.relative_width / 10
    assert coarse.relative_width == pytest.approx(coarse.h / np.sqrt(coarse.upper), rel=0.05)
    with pytest.raises(ValueError, match="M_out"):
        off_grid_bound(20, 1.0, 1)
    with pytest.raises(ValueError, match="eps"):
        off_grid_bound(20, 0.0)
