"""dpbayes.core.geometric: the one truncated geometric law, its kernel sums and samplers (and OpenDP's)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpbayes.core import geometric as geo
from dpbayes.core.privacy_loss import worst_case_privacy_loss


def brute_force_truncated(n: int, eps: float) -> np.ndarray:
    """G[z, c] by summing the two-sided geometric pmf over every noise value that clamps to z."""
    a = np.exp(-eps)
    k = np.arange(-(n + 2000), n + 2001)  # the tails beyond hold < exp(-2000 eps) of the mass
    pmf = (1 - a) / (1 + a) * a ** np.abs(k)
    G = np.zeros((n + 1, n + 1))
    for c in range(n + 1):
        np.add.at(G[:, c], np.clip(c + k, 0, n), pmf)
    return G


@pytest.mark.parametrize("n,eps", [(1, 0.3), (5, 1.0), (12, 0.05), (7, 3.0)])
def test_truncated_law_is_the_clamped_two_sided_geometric(n, eps):
    G = geo.truncated_geometric_matrix(n, eps)
    np.testing.assert_allclose(G, brute_force_truncated(n, eps), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(G.sum(axis=0), 1.0, rtol=1e-13)
    logG = geo.truncated_geometric_logmatrix(n, eps)
    for c in range(n + 1):
        np.testing.assert_array_equal(geo.truncated_geometric_logpmf(c, n, eps), logG[:, c])
    a = np.exp(-eps)
    z = np.arange(n + 1)
    np.testing.assert_allclose(G, geo.geometric_row_factors(n, eps)[:, None] * a ** np.abs(z[:, None] - z[None, :]), rtol=1e-13)


def test_single_output_and_log_space_far_in_the_tail():
    assert geo.truncated_geometric_logmatrix(0, 2.0).tolist() == [[0.0]]
    assert geo.truncated_geometric_logpmf(0, 0, 2.0).tolist() == [0.0]
    assert geo.geometric_row_factors(0, 2.0).tolist() == [1.0]
    logG = geo.truncated_geometric_logmatrix(2000, 5.0)  # a^2000 underflows, its log does not
    assert np.all(np.isfinite(logG)) and logG[1000, 0] == pytest.approx(-5.0 * 1000 + np.log((1 - np.exp(-5)) / (1 + np.exp(-5))))


def test_two_sided_law_sums_to_one_and_is_eps_dp():
    eps = 0.4
    z = np.arange(-300, 301)
    lp = geo.two_sided_geometric_logpmf(z, 0, eps)
    assert np.exp(lp).sum() == pytest.approx(1.0, rel=1e-12)
    shifted = geo.two_sided_geometric_logpmf(z, 1, eps)
    assert np.max(np.abs(lp - shifted)) == pytest.approx(eps, rel=1e-12)


@pytest.mark.parametrize("eps", [0.01, 0.5, 2.0])
def test_the_truncated_law_has_exact_privacy_loss_eps(eps):
    assert worst_case_privacy_loss(geo.truncated_geometric_logmatrix(30, eps), "adjacent", input_axis=1, log_probabilities=True) == pytest.approx(eps, rel=1e-10)


@pytest.mark.parametrize("moments", [0, 1, 2])
def test_kernel_sums_agree_with_the_dense_product(moments):
    rng = np.random.default_rng(3)
    n, eps = 25, 0.3
    w = rng.random((n + 1, 3))
    G = geo.truncated_geometric_matrix(n, eps)
    d = np.arange(n + 1)[None, :] - np.arange(n + 1)[:, None]  # c - z
    sums = geo.geometric_kernel_sums(w, eps, moments)
    assert len(sums) == moments + 1
    for r, s in enumerate(sums):
        np.testing.assert_allclose(s, (G * d**r) @ w, rtol=1e-11, atol=1e-13)
    along_1 = geo.geometric_kernel_sums(w.T, eps, moments, axis=1)
    for s, t in zip(sums, along_1):
        np.testing.assert_allclose(t, s.T, rtol=1e-14)


def chi2_pvalue(draws: np.ndarray, log_pmf: np.ndarray) -> float:
    counts = np.bincount(draws, minlength=log_pmf.size)
    expected = np.exp(log_pmf) * draws.size
    return float(stats.chisquare(counts, expected).pvalue)


def test_numpy_samplers_have_the_exact_law():
    rng = np.random.default_rng(11)
    n, c, eps = 8, 3, 0.6
    draws = geo.sample_truncated_geometric(c, n, eps, rng, 50_000)
    assert draws.min() >= 0 and draws.max() <= n and draws.dtype == np.int64
    assert chi2_pvalue(draws, geo.truncated_geometric_logpmf(c, n, eps)) > 1e-6
    # the check bites: the law at a different eps is rejected
    assert chi2_pvalue(draws, geo.truncated_geometric_logpmf(c, n, 0.8 * eps)) < 1e-6
    noise = geo.sample_two_sided_geometric(eps, rng, (2, 3))
    assert noise.shape == (2, 3) and noise.dtype == np.int64


def test_opendp_geometric_sampler_has_the_exact_truncated_law():
    """OpenDP's constant-time geometric measurement (bounded to [0, n]), as dpbayes.release.statistic builds it,
    draws from truncated_geometric_logpmf: chi-square test at level 1e-6 on 4000 draws (OpenDP's
    randomness is not seedable, so the test fails spuriously with probability 1e-6)."""
    pytest.importorskip("opendp")
    from dpbayes.release import statistic as release

    n, c, eps = 6, 2, 0.7
    meas = release.opendp_measurement("geometric", eps, n)
    draws = np.array([meas(c) for _ in range(4000)], dtype=np.int64)
    assert draws.min() >= 0 and draws.max() <= n
    law = geo.truncated_geometric_logpmf(c, n, eps)
    assert chi2_pvalue(draws, law) > 1e-6
    assert chi2_pvalue(draws, geo.truncated_geometric_logpmf(c, n, 2.0 * eps)) < 1e-6  # the test has power


def test_arguments_are_validated():
    with pytest.raises(ValueError, match="eps"):
        geo.truncated_geometric_logmatrix(3, 0.0)
    with pytest.raises(ValueError, match="count"):
        geo.truncated_geometric_logpmf(4, 3, 1.0)
    with pytest.raises(ValueError, match="count"):
        geo.sample_truncated_geometric(np.array([5]), 3, 1.0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        geo.sample_two_sided_geometric(1.0, 3, 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="moments"):
        geo.geometric_kernel_sums(np.ones(3), 1.0, 3)


@pytest.mark.parametrize("low, high, eps", [(0, 6, 0.4), (2, 9, 1.5), (1, 30, 0.05)])
def test_clamped_law_is_the_clamped_two_sided_geometric_for_any_window_and_input(low, high, eps):
    """Inputs inside and outside the window: rows sum to one and match the clamp of the two-sided law."""
    values = np.arange(low - 3, high + 4)
    logm = geo.clamped_geometric_logmatrix(values, low, high, eps)
    a = np.exp(-eps)
    k = np.arange(-2000, 2001)  # a^2000 < 1e-43 at the smallest eps
    pmf = (1 - a) / (1 + a) * a ** np.abs(k)
    for row, v in zip(np.exp(logm), values):
        z = np.clip(v + k, low, high)
        expected = np.bincount(z - low, weights=pmf, minlength=high - low + 1)
        np.testing.assert_allclose(row, expected, rtol=1e-10, atol=1e-300)
    inside = geo.clamped_geometric_logmatrix(np.arange(0, 7), 0, 6, 0.4)
    np.testing.assert_allclose(inside, geo.truncated_geometric_logmatrix(6, 0.4).T, rtol=1e-12)
    assert geo.clamped_geometric_logmatrix([5], 3, 3, 1.0).shape == (1, 1)


def test_clamped_law_refuses_bad_arguments():
    with pytest.raises(ValueError, match="high"):
        geo.clamped_geometric_logmatrix([0], 3, 2, 1.0)
    with pytest.raises(ValueError, match="integers"):
        geo.clamped_geometric_logmatrix([0.5], 0, 2, 1.0)
    with pytest.raises(ValueError, match="eps"):
        geo.clamped_geometric_logmatrix([0], 0, 2, 0.0)


@pytest.mark.parametrize("moments", [0, 1, 2])
@pytest.mark.parametrize("n, chunk", [(0, 1), (1, 1), (9, 1), (40, 7), (40, 41), (40, 400), (3000, 256)])
def test_kernel_sums_by_chunk_are_the_same_bits_as_the_one_array_sums(moments, n, chunk):
    """Chunk by chunk (states carried forward, right states kept from a backward pass) gives the same bits."""
    rng = np.random.default_rng(n + 7 * chunk + moments)
    for eps in (0.01, 1.0, 9.0):
        w = rng.random(n + 1) ** 4
        whole = geo.geometric_kernel_sums(w, eps, moments)
        asked: list[tuple[int, int]] = []

        def weights(lo: int, hi: int) -> np.ndarray:
            asked.append((lo, hi))
            return w[lo:hi]

        pieces = list(geo.geometric_kernel_sums_by_chunk(weights, n, eps, moments, chunk))
        assert [lo for lo, _, _ in pieces] == list(range(0, n + 1, chunk))
        for r in range(moments + 1):
            joined = np.concatenate([s[r] for _, _, s in pieces])
            assert joined.tobytes() == whole[r].tobytes(), (eps, r)
        assert max(hi - lo for lo, hi in asked) <= chunk  # never more than one chunk of w at a time


def test_kernel_sums_by_chunk_notice_a_changed_recursion():
    """The bit comparison can fail: the first chunk without the state brought from its right differs."""
    w = np.random.default_rng(0).random(50)
    whole = geo.geometric_kernel_sums(w, 0.1, 0)[0]
    (_, _, (first,)), *_ = geo.geometric_kernel_sums_by_chunk(lambda lo, hi: w[lo:hi], 49, 0.1, 0, 10)
    alone = geo.geometric_kernel_sums(w[:10], 0.1, 0)[0]
    assert first.tobytes() == whole[:10].tobytes()
    assert alone.tobytes() != whole[:10].tobytes()


def test_kernel_sums_by_chunk_refuse_a_bad_chunk():
    with pytest.raises(ValueError, match="chunk"):
        list(geo.geometric_kernel_sums_by_chunk(lambda lo, hi: np.ones(hi - lo), 5, 1.0, 0, 0))


@pytest.mark.parametrize(("n", "eps"), [(0, 2.0), (1, 0.5), (7, 1.0), (1000, 0.01)])
def test_row_factors_at_some_counts_are_those_of_all_counts(n, eps):
    """The factors at chosen counts (ends, interior, repeated, any order) are those of the full array, bit for bit."""
    z = np.array([n, 0, n // 2, 0, n, max(n - 1, 0), min(1, n)])
    assert geo.geometric_row_factors_at(z, n, eps).tobytes() == geo.geometric_row_factors(n, eps)[z].tobytes()
