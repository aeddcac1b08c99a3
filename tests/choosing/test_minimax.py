"""Tests of dpbayes.choosing.minimax: the worst-case optimal remap of the geometric count, certified."""

from __future__ import annotations

import numpy as np
import pytest

from dpbayes.choosing import minimax as mm
from dpbayes.core.geometric import truncated_geometric_matrix


@pytest.mark.parametrize("n,eps", [(1, 0.5), (5, 0.1), (12, 1.0), (40, 0.3)])
def test_certificate_closes_small_n(n: int, eps: float) -> None:
    r = mm.minimax_remap(n, eps, tol=1e-7)
    assert r.lower_bound <= r.worst_risk * (1 + 1e-12)
    assert r.relative_gap <= 1e-6  # stated tolerance: worst risk within 1e-6 (relative) of its lower bound
    # the remap's worst risk is recomputed exactly (dense G) and matches
    g = truncated_geometric_matrix(n, eps)
    dense = (g * (r.remap[:, None] - np.arange(n + 1)[None, :] / n) ** 2).sum(axis=0)
    np.testing.assert_allclose(dense.max(), r.worst_risk, rtol=1e-10)


@pytest.mark.parametrize("n,eps", [(8, 0.5), (30, 0.2)])
def test_agrees_with_cvxpy(n: int, eps: float) -> None:
    import cvxpy as cp

    g = truncated_geometric_matrix(n, eps)
    y = np.arange(n + 1) / n
    e = cp.Variable(n + 1)
    t = cp.Variable()
    scale = mm.remap_risk(y, eps).max()
    cons = [(g.T @ cp.square(e) - 2 * cp.multiply(y, g.T @ e) + y**2) / scale <= t]
    cp.Problem(cp.Minimize(t), cons).solve(solver="CLARABEL")
    r = mm.minimax_remap(n, eps, tol=1e-8)
    assert r.worst_risk == pytest.approx(float(t.value) * scale, rel=1e-5)


def test_risk_equalised_on_lfp_support() -> None:
    r = mm.minimax_remap(60, 0.5, tol=1e-8)
    risk = mm.remap_risk(r.remap, 0.5)
    support = r.prior > 1e-3 * r.prior.max()
    assert support.sum() >= 2
    assert np.ptp(risk[support]) <= 1e-4 * r.worst_risk
    assert risk.max() <= r.worst_risk * (1 + 1e-12)


@pytest.mark.parametrize("eps", [0.01, 0.1, 1.0, 3.0])
def test_n1_is_flat_bayes(eps: float) -> None:
    r = mm.minimax_remap(1, eps)
    np.testing.assert_allclose(r.remap, mm.bayes_remap(np.ones(2), eps), atol=1e-10)
    np.testing.assert_allclose(r.prior, [0.5, 0.5], atol=1e-10)


@pytest.mark.parametrize("n,eps", [(10, 0.1), (100, 0.1), (100, 1.0)])
def test_identity_is_not_minimax(n: int, eps: float) -> None:
    r = mm.minimax_remap(n, eps, tol=1e-7)
    ident = np.arange(n + 1) / n
    # z/n violates the certified lower bound by much more than the gap
    assert mm.remap_risk(ident, eps).max() > r.lower_bound * (1 + 1e-3)


def test_identity_risk_closed_form() -> None:
    n, eps = 17, 0.4
    g = truncated_geometric_matrix(n, eps)
    c = np.arange(n + 1)
    np.testing.assert_allclose((g * (c[:, None] - c[None, :]) ** 2).sum(0), mm.identity_risk_counts(n, eps), rtol=1e-12)


def test_bayes_remap_matches_dense() -> None:
    rng = np.random.default_rng(1)
    n, eps = 25, 0.7
    w = rng.random(n + 1)
    g = truncated_geometric_matrix(n, eps)
    dense = (g * w) @ (np.arange(n + 1) / n) / (g * w).sum(1)
    np.testing.assert_allclose(mm.bayes_remap(w, eps), dense, rtol=1e-12)


@pytest.mark.parametrize("loss", ["squared", "absolute"])
@pytest.mark.parametrize("n,eps", [(3, 0.5), (8, 1.0)])
def test_remap_optimal_over_all_mechanisms(n: int, eps: float, loss: str) -> None:
    r = mm.minimax_remap(n, eps, loss=loss, tol=1e-8)
    cert = mm.certify_over_all_mechanisms(r, refine=10)
    slack = 1.0 / (4 * (10 * n) ** 2) if loss == "squared" else 0.0  # rounding onto the output grid
    assert cert.lower <= cert.upper * (1 + 1e-6)
    # the certificate closes up to the rounding slack and solver tolerances (1e-6 relative)
    assert cert.upper - cert.lower <= slack + 1e-6 * cert.upper


def test_absolute_loss_gap() -> None:
    r = mm.minimax_remap(15, 0.5, loss="absolute")
    assert r.relative_gap <= 1e-5


def test_theta_continuum() -> None:
    r = mm.minimax_remap(20, 1.0, estimand="theta", tol=1e-6)
    th = np.linspace(0, 1, 2001)
    assert mm.remap_theta_risk(r.remap, 1.0, th).max() <= r.worst_risk * (1 + 1e-9)
    assert r.relative_gap <= 1e-4


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"n": 0, "eps": 1.0}, "n"),
        ({"n": -3, "eps": 1.0}, "n"),
        ({"n": 2.5, "eps": 1.0}, "n"),
        ({"n": 10, "eps": 0.0}, "eps"),
        ({"n": 10, "eps": -1.0}, "eps"),
        ({"n": 10, "eps": float("nan")}, "eps"),
        ({"n": 10, "eps": 1.0, "estimand": "mean"}, "estimand"),
        ({"n": 10, "eps": 1.0, "loss": "huber"}, "loss"),
        ({"n": 10**6, "eps": 1.0, "loss": "absolute"}, "n"),
    ],
)
def test_bad_input(kwargs: dict, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a: object, **k: object) -> None:
        raise AssertionError("computation started before validation")

    monkeypatch.setattr(mm, "_solve_proportion_squared", boom)
    monkeypatch.setattr(mm, "_solve_dense", boom)
    with pytest.raises((ValueError, TypeError), match=name) as info:
        mm.minimax_remap(**kwargs)
    assert "must" in str(info.value)  # names the parameter and what it must be or lie in


def test_lifted_prior_large_n_is_certified() -> None:
    # n eps = 100 at two scales: the same problem in noise units, so nearly the same ratio to z/n
    small = mm.minimax_remap(1000, 0.1, tol=1e-6)
    # an evaluation budget, not a time budget: on a loaded machine a 10-s budget stopped the solve early
    big = mm.minimax_remap(100_000, 0.001, tol=1e-4, max_evals=2000, max_seconds=float("inf"))
    assert big.relative_gap <= 1e-4
    geo_small = mm.identity_risk_counts(1000, 0.1).max() / 1000**2
    geo_big = mm.identity_risk_counts(100_000, 0.001).max() / 100_000**2
    assert big.worst_risk / geo_big == pytest.approx(small.worst_risk / geo_small, abs=2e-4)
    # far from both ends (n eps = 10^5) the clamped count is already within 1e-5 of the minimax risk
    far = mm.minimax_remap(1_000_000, 0.1, tol=1e-5, max_evals=2000, max_seconds=float("inf"))
    assert far.relative_gap <= 1e-5 and far.lower_bound <= far.worst_risk


def test_proportion_squared_solver_runs_blas_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The O(n) solver's L-BFGS-B runs with BLAS on one thread, so that its result has the same bits on any number
    of cores (measured: at n = 10^4, eps = 0.1 one and two OpenBLAS threads gave worst risks 1.998238951846065e-06
    and 1.9982391363029124e-06, and two threads took 2-5 times as long on a busy 2-core machine)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    seen: list[list[int]] = []
    real = mm.optimize.minimize

    def spy(*args, **kwargs):
        seen.append([pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"])
        return real(*args, **kwargs)

    monkeypatch.setattr(mm.optimize, "minimize", spy)
    with threadpool_limits(limits=2, user_api="blas"):
        result = mm.minimax_remap(300, 0.5, tol=1e-6)
    assert seen and all(threads and set(threads) == {1} for threads in seen)
    assert result.relative_gap <= 1e-6
