"""Exact operation counts of the latent-x SMC and its §3.1 cost reductions (dpbayes.smc.cost)."""

import numpy as np
import pytest

from dpbayes.smc import samplers as smc, cost as smc_cost


def test_latent_move_count_closed_forms():
    n, N = 50, 7
    assert smc_cost.latent_move_count(n, N) == N * n * (n - 1)  # 2 N sum_{t<n} t
    assert smc_cost.latent_move_count(n, N, n - 1) == smc_cost.latent_move_count(n, N)
    assert smc_cost.latent_move_count(n, N, 1) == 2 * N * (n - 1)
    k = 10  # 2 N (sum_{t<=k} t + k (n - 1 - k))
    assert smc_cost.latent_move_count(n, N, k) == 2 * N * (k * (k + 1) // 2 + k * (n - 1 - k))
    assert smc_cost.latent_move_count(1, N) == 0
    assert smc_cost.gibbs_draw_count(n, N) == 2 * N * (n - 1)


def test_move_fraction_is_about_2k_over_n_for_large_n():
    n = 200
    assert smc_cost.move_fraction(n, None) == 1.0
    assert smc_cost.move_fraction(n, 500) == 1.0
    for k in (5, 20, 50):
        f = smc_cost.move_fraction(n, k)
        assert f == pytest.approx((k * (k + 1) / 2 + k * (n - 1 - k)) / (n * (n - 1) / 2), rel=1e-15)
        assert 0 < f < 2 * k / n
    assert smc_cost.move_fraction(200, 5) < smc_cost.move_fraction(200, 20) < smc_cost.move_fraction(200, 50)


@pytest.mark.parametrize("k", [None, 3, 8])
def test_latent_move_count_matches_the_sweeps_of_a_real_run(monkeypatch, k):
    from dpbayes.smc import _kernels as _smc_kernels

    seen = []
    previous = _smc_kernels.use_compiled(False)
    ref = smc._latent_mh_sweep_numpy

    def spy(cur, *args):
        seen.append(cur.size)  # N values swept, two proposals each
        return ref(cur, *args)

    monkeypatch.setattr(smc, "_latent_mh_sweep_numpy", spy)
    try:
        x = 50.0 + 3.0 * np.random.default_rng(1).standard_normal(25)
        res = smc.smc_latent(x, 2.0, np.random.default_rng(4), n_particles=12, ab=(-1.5, 1.5), rejuvenate=k)
    finally:
        _smc_kernels.use_compiled(previous)
    assert 2 * sum(seen) == smc_cost.latent_move_count(25, 12, k)
    assert res.n_moves == len(seen) == 24


def test_exact_smc_likelihood_count_matches_its_events():
    x = 50.0 + 3.0 * np.random.default_rng(1).standard_normal(25)
    res = smc.smc_exact(x, 2.0, np.random.default_rng(4), n_particles=40, ab=(-1.5, 1.5), n_mh=3)
    events = np.flatnonzero(res.ess < 0.5 * 40)
    assert events.size == res.n_moves > 0
    count = smc_cost.exact_smc_likelihood_count(25, 40, events, n_mh=3)
    assert count == 40 * 25 + 40 * 3 * int((events + 1).sum())
    assert count < smc_cost.latent_move_count(25, 40)  # integrating x out is the cheaper sampler here


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: smc_cost.latent_move_count(0, 5), "n"),
        (lambda: smc_cost.latent_move_count(5, 0), "n_particles"),
        (lambda: smc_cost.latent_move_count(5, 5, 0), "rejuvenate"),
        (lambda: smc_cost.move_fraction(5, 1.5), "rejuvenate"),
        (lambda: smc_cost.exact_smc_likelihood_count(5, 5, [5]), "event_steps"),
        (lambda: smc_cost.exact_smc_likelihood_count(5, 5, [1], n_mh=0), "n_mh"),
    ],
)
def test_bad_arguments_name_the_parameter(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()
