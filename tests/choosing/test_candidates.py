"""Tests of dpbayes.choosing.candidates: every candidate's exact moments against an independent reference."""

import numpy as np
import pytest
from scipy import integrate, stats

from dpbayes.counting import geometric as counting_geometric
from dpbayes.counting import metrics as counting_metrics
from dpbayes.counting import risk as counting_risk
from dpbayes.choosing import candidates as ec
from dpbayes.ubapp import lbapp
from dpbayes.ubapp.optimal import beta_posterior_mean_remap, chain_neighbours, privacy_loss, truncated_geometric_logmatrix


def dense_moments(law: np.ndarray, est: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """law[z, c] = P(z | c); est[z] the estimate: bias and msd about c/n by direct sums."""
    err = est[:, None] - np.arange(n + 1)[None, :] / n
    return (law * err).sum(axis=0), (law * err**2).sum(axis=0)


def rounded_laplace_law(n: int, eps: float) -> np.ndarray:
    """P(round(clip(c + L, 0, n)) = z | c) by the Laplace CDF at the half-integers."""
    z = np.arange(n + 1)
    upper = np.where(z == n, np.inf, z + 0.5)
    lower = np.where(z == 0, -np.inf, z - 0.5)
    c = np.arange(n + 1)
    cdf = lambda x: stats.laplace.cdf(x, loc=c[None, :], scale=1 / eps)  # noqa: E731
    return cdf(upper[:, None]) - cdf(lower[:, None])


@pytest.mark.parametrize("eps", [0.05, 0.7, 3.0])
@pytest.mark.parametrize("n", [1, 7, 40])
def test_geometric_and_rounded_closed_forms_match_the_laws(n, eps):
    law = np.exp(truncated_geometric_logmatrix(n, eps))
    ref = dense_moments(law, np.arange(n + 1) / n, n)
    got = ec.candidate_moments("geometric", n, eps)
    np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-15)
    ref = dense_moments(rounded_laplace_law(n, eps), np.arange(n + 1) / n, n)
    got = ec.candidate_moments("laplace-rounded", n, eps)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("eps", [0.05, 1.0, 6.0])
def test_clamped_laplace_by_quadrature(eps):
    n = 9
    bias, msd = ec.candidate_moments("laplace-clamped", n, eps)
    for c in range(n + 1):
        f = lambda x, k: ((np.clip(x, 0, n) - c) / n) ** k * stats.laplace.pdf(x, c, 1 / eps)  # noqa: E731
        pts = [0.0, float(n), float(c)]
        m1 = integrate.quad(f, c - 80 / eps, c + 80 / eps, args=(1,), points=pts, limit=200, epsabs=1e-15)[0]
        m2 = integrate.quad(f, c - 80 / eps, c + 80 / eps, args=(2,), points=pts, limit=200, epsabs=1e-15)[0]
        assert bias[c] == pytest.approx(m1, rel=1e-8, abs=1e-13)
        assert msd[c] == pytest.approx(m2, rel=1e-8, abs=1e-15)


@pytest.mark.parametrize("estimand", ["proportion", "theta"])
@pytest.mark.parametrize("prior", [(1.0, 1.0), (0.5, 0.5), (8.0, 2.0)])
def test_geometric_bayes_against_the_dense_posterior(prior, estimand):
    n, eps = 30, 0.4
    law = np.exp(truncated_geometric_logmatrix(n, eps))  # law[z, c]
    w = stats.betabinom.pmf(np.arange(n + 1), n, *prior)
    post_c = (law * w[None, :]) @ np.arange(n + 1) / (law @ w)  # E[c | z]
    a, b = prior
    est = post_c / n if estimand == "proportion" else (a + post_c) / (a + b + n)
    ref = dense_moments(law, est, n)
    got = ec.candidate_moments("geometric-bayes", n, eps, prior, estimand)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-10)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-9, atol=1e-14)


def test_known_p_prior_remap():
    n, eps, p = 25, 0.8, 0.3
    law = np.exp(truncated_geometric_logmatrix(n, eps))
    w = stats.binom.pmf(np.arange(n + 1), n, p)
    est = ((law * w[None, :]) @ np.arange(n + 1) / (law @ w)) / n
    got = ec.candidate_moments("geometric-bayes", n, eps, ec.CountPrior.binomial(p))
    np.testing.assert_allclose(got[1], dense_moments(law, est, n)[1], rtol=1e-10)


@pytest.mark.parametrize("eps", [0.3, 2.0, 8.0])
def test_laplace_bayes_against_the_chapter_4_integrator(eps):
    """Two independent quadratures: unit-interval recursions here, break points in counting_risk."""
    n = 30
    _, msd = ec.candidate_moments("laplace-bayes", n, eps, (2.0, 3.0))
    ref = counting_risk.fixed_count_risk(np.arange(n + 1), "mean", n, 0.4, eps, "sq", prior="beta-binomial", concentration=5.0)
    np.testing.assert_allclose(msd, ref / n**2, rtol=1e-9)


@pytest.mark.parametrize("eps", [0.01, 0.5, 4.0])
def test_theta_bayes_risks_agree_with_chapter_1(eps):
    n = 50
    opt = ec.bayes_risk(*ec.candidate_moments("geometric-bayes", n, eps, estimand="theta"), estimand="theta")
    assert opt == pytest.approx(beta_posterior_mean_remap(n, eps, 1.0, 1.0)[1], rel=1e-11)
    clip = ec.bayes_risk(*ec.candidate_moments("lbapp-clipped", n, eps, estimand="theta"), estimand="theta")
    assert clip == pytest.approx(lbapp.clipped_lbapp_mse(n, eps), rel=1e-11)
    assert ec.sampling_risk(n, estimand="theta") == pytest.approx(lbapp.bayes_mse_posterior_mean(n), rel=1e-13)
    assert ec.sampling_risk(n, estimand="proportion") == 0.0


@pytest.mark.parametrize("estimand", ["proportion", "theta"])
@pytest.mark.parametrize("n, eps", [(10, 0.1), (100, 1.0), (300, 3.0)])
def test_the_bayes_remap_has_the_smallest_bayes_risk(n, eps, estimand):
    """The LP optimum (Ghosh, Roughgarden & Sundararajan): no candidate beats geometric + posterior mean on average."""
    cmp = ec.compare_estimators(n, eps, estimand=estimand)
    assert cmp.best == "geometric-bayes"
    releases = [i for i, nm in enumerate(cmp.names) if nm != "no-privacy"]
    assert np.all(cmp.bayes_risk[releases] >= cmp.bayes_risk[cmp.names.index("geometric-bayes")] * (1 - 1e-12))
    assert np.allclose(cmp.privacy_risk + cmp.sampling_risk, cmp.bayes_risk)


def test_theta_risk_by_direct_sum_and_its_worst_case():
    n, eps = 20, 0.5
    bias, msd = ec.candidate_moments("geometric-bayes", n, eps, estimand="theta")
    law = np.exp(truncated_geometric_logmatrix(n, eps))
    w = stats.betabinom.pmf(np.arange(n + 1), n, 1, 1)
    est = (1 + (law * w[None, :]) @ np.arange(n + 1) / (law @ w)) / (n + 2)
    for t in (0.0, 0.13, 0.5, 1.0):
        direct = sum(stats.binom.pmf(c, n, t) * law[:, c] @ (est - t) ** 2 for c in range(n + 1))
        assert ec.theta_risk(bias, msd, t) == pytest.approx(direct, rel=1e-10)
    t_star, r_star = ec.worst_theta_risk(bias, msd)
    fine = ec.theta_risk(bias, msd, np.linspace(0, 1, 4001))
    assert r_star >= fine.max() * (1 - 1e-9)
    assert ec.theta_risk(bias, msd, t_star) == pytest.approx(r_star)


def test_a_wrong_prior_changes_the_bayes_risk_only_through_the_truth():
    n, eps = 200, 0.3
    right = ec.compare_estimators(n, eps, prior=(1, 1))
    wrong = ec.compare_estimators(n, eps, prior=(50, 50), true_prior=(2, 8))
    i = wrong.names.index("geometric")  # prior-free: only the data's distribution moves its risk
    free = ec.compare_estimators(n, eps, prior=(1, 1), true_prior=(2, 8))
    assert wrong.bayes_risk[i] == pytest.approx(free.bayes_risk[i])
    j = wrong.names.index("geometric-bayes")
    assert wrong.bayes_risk[j] > wrong.bayes_risk[i]  # an over-confident wrong prior loses to no prior
    assert right.best == "geometric-bayes"


def test_every_noisy_count_candidate_is_eps_dp_exactly():
    n, eps = 12, 0.9
    nb = chain_neighbours(n + 1)
    assert privacy_loss(truncated_geometric_logmatrix(n, eps), nb) == pytest.approx(eps, rel=1e-12)
    # rounding and clamping Laplace noise is post-processing: the loss can only fall
    # (the law is a difference of Laplace CDFs: rounding error ~1e-12 in the logs)
    assert privacy_loss(np.log(rounded_laplace_law(n, eps)), nb) <= eps * (1 + 1e-9)


@pytest.mark.parametrize("eps, level", [(0.1, 0.9), (1.0, 0.95), (5.0, 0.5)])
def test_prior_free_interval_covers_at_every_count(eps, level):
    n = 40
    k, cover = ec.prior_free_interval(n, eps, level)
    law = np.exp(truncated_geometric_logmatrix(n, eps))
    z, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    direct = (law * (np.abs(z - c) <= k)).sum(axis=0)
    np.testing.assert_allclose(cover, direct, rtol=1e-12)
    assert cover.min() >= level - 1e-12
    a = np.exp(-eps)  # k is the smallest half-width whose unclamped tail is small enough
    assert 2 * a ** (k + 1) / (1 + a) <= 1 - level < (2 * a**k / (1 + a) if k > 0 else 1.0)


def test_compare_table_and_skips():
    cmp = ec.compare_estimators(2 * 10**5, 1.0)
    assert "laplace-bayes" in cmp.skipped and "laplace-bayes" not in cmp.names
    frame = ec.compare_estimators(100, 1.0, estimand="theta").to_frame()
    assert frame.index.name == "candidate" and "privacy-added risk" in frame.columns
    assert "geometric-bayes-theta" not in frame.index  # the same as geometric-bayes for theta


@pytest.mark.parametrize("kwargs, match", [
    (dict(n=0, epsilon=1.0), "n must"),
    (dict(n=10, epsilon=-1.0), "epsilon must"),
    (dict(n=10, epsilon=float("nan")), "epsilon must"),
    (dict(n=10, epsilon=1.0, estimand="count"), "estimand"),
    (dict(n=10, epsilon=1.0, prior=(0.0, 1.0)), "a must"),
    (dict(n=10, epsilon=1.0, candidates=["nope"]), "candidates"),
])
def test_bad_input_is_refused_before_any_work(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        ec.compare_estimators(**kwargs)


def test_a_prior_certain_of_the_count_is_refused():
    with pytest.raises(ValueError, match="ignores the data"):
        ec.CountPrior.binomial(1.0)
    with pytest.raises(TypeError, match="prior must"):
        ec.compare_estimators(10, 1.0, prior="flat")


@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0])
def test_rounding_costs_cosh_at_every_count_clamped_or_not_for_both_losses(eps):
    """Rounded Laplace noise is cosh(eps/2) times the geometric law off zero, and rounding commutes with clamping."""
    n = 12  # most counts are near a bound
    geo_sq = ec.candidate_moments("geometric", n, eps)[1]
    rnd_sq = ec.candidate_moments("laplace-rounded", n, eps)[1]
    np.testing.assert_allclose(rnd_sq / geo_sq, ec.interior_ratio("rounded", eps), rtol=1e-12)
    rnd_abs = ec.candidate_abs_risk("laplace-rounded", n, eps)
    np.testing.assert_allclose(rnd_abs / ec.candidate_abs_risk("geometric", n, eps), np.cosh(eps / 2), rtol=1e-12)
    # the clamped (not rounded) Laplace count has no such identity near the bounds
    lap_sq = ec.candidate_moments("laplace-clamped", n, eps)[1]
    assert np.ptp(lap_sq / geo_sq) > 1e-3


@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0])
def test_interior_ratios_are_the_closed_forms(eps):
    """In the middle of a long range (no clamping) the exact per-count risks equal the closed forms."""
    n = 4000
    c = n // 2
    geo = ec.candidate_moments("geometric", n, eps)[1][c]
    lap = ec.candidate_moments("laplace-clamped", n, eps)[1][c]
    rnd = ec.candidate_moments("laplace-rounded", n, eps)[1][c]
    assert lap / geo == pytest.approx(ec.interior_ratio("laplace", eps), rel=1e-10)
    assert rnd / geo == pytest.approx(ec.interior_ratio("rounded", eps), rel=1e-10)
    bayes = ec.candidate_moments("laplace-bayes", 400, eps)[1][200] / ec.candidate_moments("geometric", 400, eps)[1][200]
    if eps <= 1.0:  # the remap gives back almost nothing
        assert bayes == pytest.approx(ec.interior_ratio("laplace", eps), rel=1e-4)
    else:  # it snaps towards integers: part of the cost comes back, not all
        assert 1.0 < bayes < 0.95 * ec.interior_ratio("laplace", eps)


# ---------------------------------------------------------------- absolute loss


@pytest.mark.parametrize("eps", [0.05, 0.7, 3.0])
@pytest.mark.parametrize("n", [1, 9, 40])
def test_absolute_closed_forms_match_the_laws(n, eps):
    c = np.arange(n + 1)
    err = np.abs(c[:, None] - c[None, :]) / n  # |z - c| / n, law[z, c]
    law = np.exp(truncated_geometric_logmatrix(n, eps))
    np.testing.assert_allclose(ec.candidate_abs_risk("geometric", n, eps), (law * err).sum(axis=0), rtol=1e-11, atol=1e-15)
    np.testing.assert_allclose(ec.candidate_abs_risk("laplace-rounded", n, eps),
                               (rounded_laplace_law(n, eps) * err).sum(axis=0), rtol=1e-9, atol=1e-14)
    got = ec.candidate_abs_risk("laplace-clamped", n, eps)
    for cc in (0, n // 2, n):
        f = lambda x: abs(np.clip(x, 0, n) - cc) / n * stats.laplace.pdf(x, cc, 1 / eps)  # noqa: E731
        ref = integrate.quad(f, cc - 80 / eps, cc + 80 / eps, points=[0.0, float(n), float(cc)], limit=200, epsabs=1e-15)[0]
        assert got[cc] == pytest.approx(ref, rel=1e-8, abs=1e-14)


@pytest.mark.parametrize("prior", [(1.0, 1.0), (2.0, 3.0), ec.CountPrior.binomial(0.3)])
@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_geometric_remaps_under_absolute_loss_by_the_dense_law(prior, eps):
    n = 35
    pr = ec._as_prior(prior)
    law = np.exp(truncated_geometric_logmatrix(n, eps))  # law[z, c]
    post = law * pr.weights(n)[None, :]
    post /= post.sum(axis=1, keepdims=True)
    c = np.arange(n + 1)
    for name, est in (("geometric-median", np.array([np.searchsorted(np.cumsum(row), 0.5 - 1e-12) for row in post])),
                      ("geometric-bayes", post @ c)):
        ref = (law * np.abs(est[:, None] - c[None, :])).sum(axis=0) / n
        np.testing.assert_allclose(ec.candidate_abs_risk(name, n, eps, prior), ref, rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("eps", [0.1, 1.0])
def test_absolute_bayes_risks_agree_with_chapter_4(eps):
    """Known p: the Bayes MAE of chapter 4's estimators by its own exact metrics (counting_metrics.mean_abs_error)."""
    n, p = 100, 0.3
    cmp = ec.compare_estimators(n, eps, prior=ec.CountPrior.binomial(p), loss="absolute")
    risk = dict(zip(cmp.names, cmp.bayes_risk * n))
    assert risk["laplace-median"] == pytest.approx(counting_metrics.mean_abs_error("median", n, p, eps), rel=1e-7)
    assert risk["laplace-bayes"] == pytest.approx(counting_metrics.mean_abs_error("mean", n, p, eps), rel=1e-7)
    assert risk["geometric-median"] == pytest.approx(counting_geometric.geometric_mean_abs_error("median", n, p, eps), rel=1e-9)
    assert cmp.best == "geometric-median"  # the LP optimum for absolute error (chapter 4)


def test_absolute_loss_needs_the_proportion():
    with pytest.raises(ValueError, match="absolute"):
        ec.compare_estimators(10, 1.0, estimand="theta", loss="absolute")
    with pytest.raises(ValueError, match="loss"):
        ec.compare_estimators(10, 1.0, loss="hinge")
    assert "lbapp-clipped" in ec.compare_estimators(10, 1.0, loss="absolute").skipped


@pytest.mark.parametrize("eps", [1.0, 10.0])
def test_a_symmetric_prior_gives_a_symmetric_per_count_risk_at_large_n(eps):
    """Beta(100, 100) at n = 10^6: the prior's weights underflow near both ends (the log-space fallback), and the
    remap's bias and msd must still mirror each other (they differed by 11 % at eps = 10 before the fallback was
    centred at z)."""
    from dpbayes.choosing import candidates as ec

    bias, msd = ec.candidate_moments("geometric-bayes", 10**6, eps, ec.CountPrior.beta(100.0, 100.0), "proportion")
    np.testing.assert_allclose(msd, msd[::-1], rtol=1e-8)
    np.testing.assert_allclose(bias, -bias[::-1], rtol=1e-8, atol=1e-25)


def test_the_log_space_fallback_equals_the_linear_sums_where_both_hold():
    from dpbayes.core.geometric import geometric_kernel_sums
    from dpbayes.ubapp.optimal import _log_space_mean_offset, betabinom_logpmf

    for n, eps, a, b in [(50, 1.0, 2.0, 3.0), (1000, 0.1, 1.0, 1.0), (2000, 3.0, 20.0, 80.0)]:
        lw = betabinom_logpmf(np.arange(n + 1), n, a, b)
        lw = lw - lw.max()
        s0, s1 = geometric_kernel_sums(np.exp(lw), eps, 1)
        ok = s0 > 1e-280
        np.testing.assert_allclose(_log_space_mean_offset(lw, eps)[ok], s1[ok] / s0[ok], rtol=1e-10, atol=1e-11)


def test_share_worse_counts_differences_a_reader_cares_about() -> None:
    # the check: a + b = 200, n = 1000, eps = 10: worse at 88.9 % of counts by any amount, by > 1 % at 0.80 %
    names = ["geometric", "laplace-clamped", "geometric-bayes"]
    any_excess = ec.compare_estimators(1000, 10.0, prior=(100, 100), candidates=names, share_tolerance=0.0)
    one_pct = ec.compare_estimators(1000, 10.0, prior=(100, 100), candidates=names)
    assert one_pct.share_tolerance == 0.01
    assert any_excess.share_worse[2] == pytest.approx(890 / 1001, abs=1.5e-3)
    assert one_pct.share_worse[2] == pytest.approx(8 / 1001, abs=1.5e-3)
    with pytest.raises(ValueError, match="share_tolerance"):
        ec.compare_estimators(10, 1.0, share_tolerance=2.0)


def test_minimax_candidate_is_its_certified_remap() -> None:
    from dpbayes.choosing import minimax as mm

    cert = ec.minimax_certificate(60, 0.3)
    bias, msd = ec.candidate_moments("geometric-minimax", 60, 0.3)
    np.testing.assert_allclose(msd, mm.remap_risk(cert.remap, 0.3), rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(bias, truncated_bias(cert.remap, 0.3), rtol=1e-9, atol=1e-13)
    cmp = ec.compare_estimators(60, 0.3, per_case=True)
    assert cmp.best_worst == "geometric-minimax"
    assert cmp.worst_risk[cmp.names.index("geometric-minimax")] <= cert.lower_bound * (1 + ec.MINIMAX_TOL)
    assert set(cmp.risk_per_case) == set(cmp.names)
    assert ec.compare_estimators(60, 0.3).risk_per_case is None
    # theta beyond the dense solver's range is skipped, not an error
    assert "geometric-minimax" in ec.compare_estimators(ec.MINIMAX_THETA_MAX_N + 1, 1.0, estimand="theta").skipped


def truncated_bias(remap: np.ndarray, eps: float) -> np.ndarray:
    from dpbayes.core.geometric import truncated_geometric_matrix

    n = remap.size - 1
    g = truncated_geometric_matrix(n, eps)  # g[z, c] = P(z | c)
    return remap @ g - np.arange(n + 1) / n


@pytest.mark.parametrize("n, eps, prior, chunk", [
    (1, 1.0, (1.0, 1.0), 1), (50, 1.0, (1.0, 1.0), 7), (1000, 0.3, (2.0, 5.0), 100),
    (3000, 2.0, (0.5, 0.5), 4096), (20000, 0.05, (3.0, 1.0), 777), (4000, 15.0, (2.0, 2.0), 512)])
def test_the_chunked_geometric_bayes_summary_is_the_one_array_result(n, eps, prior, chunk):
    """``release_proportion``'s memory-bounded path: the same shift bit for bit, the same risks to rounding."""
    shift, bayes, worst = ec.geometric_bayes_proportion_summary(n, eps, prior, chunk=chunk)
    ref_shift = ec._geometric_count_posterior_mean(ec.CountPrior.beta(*prior).log_weights(n), eps)
    assert shift.tobytes() == ref_shift.tobytes()
    bias, msd = ec.candidate_moments("geometric-bayes", n, eps, prior, "proportion")
    assert bayes == pytest.approx(ec.bayes_risk(bias, msd, prior, "proportion"), rel=1e-13)
    assert worst == pytest.approx(float(np.max(msd)), rel=1e-13)


def test_the_chunked_summary_hands_an_underflowing_prior_back():
    """A prior far from some counts underflows in linear space: the caller takes the log-space path."""
    with pytest.raises(FloatingPointError, match="log-space"):
        ec.geometric_bayes_proportion_summary(20000, 1.0, (900.0, 900.0))


@pytest.mark.parametrize("eps", [1e-3, 0.2, 1.0, 20.0])
def test_the_clamped_noise_table_stops_where_its_terms_are_zero(eps):
    """Reading the short table past its end gives the same bits as the whole cumulative sum over 0..n."""
    n = 6000
    log_beta = ec._geometric_log_beta(eps)
    k = np.arange(1, n + 1, dtype=float)
    with np.errstate(under="ignore"):
        full = np.concatenate(([0.0], np.cumsum((2.0 * k - 1.0) * np.exp(log_beta + -eps * k))))
    c = np.arange(n + 1)
    _, second = ec._clamped_integer_noise_moments(eps, log_beta, n)
    assert second.tobytes() == (full[c] + full[n - c]).tobytes()
    assert ec._clamped_noise_table(eps, log_beta, n).size == min(n, int(np.ceil(746.0 / eps)) + 1) + 1


@pytest.mark.parametrize("n, eps, prior, chunk", [
    (1, 1.0, (1.0, 1.0), 1), (50, 1.0, (1.0, 1.0), 7), (1000, 0.3, (2.0, 5.0), 100), (20000, 0.05, (3.0, 1.0), 777),
    (4000, 15.0, (2.0, 2.0), 512)])
def test_the_chunked_theta_moments_are_the_candidates(n, eps, prior, chunk):
    """``release_proportion(estimand="theta")``'s risks chunk by chunk: the same moments and worst case as the one-array path."""
    from dpbayes.ubapp.optimal import beta_posterior_mean_remap

    estimates, _, _ = beta_posterior_mean_remap(n, eps, *prior)
    bias, msd = ec.geometric_bayes_theta_moments(estimates, eps, chunk)
    ref_bias, ref_msd = ec.candidate_moments("geometric-bayes", n, eps, prior, "theta")
    np.testing.assert_allclose(bias, ref_bias, rtol=1e-12, atol=1e-13 * float(np.max(np.abs(ref_bias))))
    np.testing.assert_allclose(msd, ref_msd, rtol=1e-12)
    assert ec.worst_theta_risk(bias, msd)[1] == pytest.approx(ec.worst_theta_risk(ref_bias, ref_msd)[1], rel=1e-12)


@pytest.mark.parametrize("n, prior", [(1, (1.0, 1.0)), (40, (0.5, 2.0)), (5000, (3.0, 7.0)), (10**5, (30.0, 1.0))])
def test_the_theta_sampling_risk_has_a_closed_form(n, prior):
    assert ec.theta_sampling_risk(n, *prior) == pytest.approx(ec.sampling_risk(n, prior, "theta"), rel=1e-12)


def test_theta_risk_one_window_at_a_time_is_all_windows_at_once():
    bias, msd = ec.candidate_moments("geometric-bayes", 3000, 0.5, (2.0, 2.0), "theta")
    grid = np.linspace(0.0, 1.0, 41)
    together = ec._theta_risk_from(bias, msd, ec._theta_weights(3000, grid))
    assert ec.theta_risk(bias, msd, grid).tobytes() == together.tobytes()


def test_minimax_cache_reuses_a_remap_and_stays_within_its_budget_of_counts(monkeypatch) -> None:
    # a remap is prior-free: asked again for the same (n, eps), the same object; the cache holds at most
    # MINIMAX_CACHE_COUNTS counts n + 1 (oldest use evicted first) and always the latest remap
    monkeypatch.setattr(ec, "_minimax_cache", type(ec._minimax_cache)())
    monkeypatch.setattr(ec, "MINIMAX_CACHE_COUNTS", 100)
    first = ec.minimax_certificate(40, 1.0)
    assert ec.minimax_certificate(40, 1.0) is first
    ec.minimax_certificate(30, 1.0)  # 41 + 31 counts: both kept
    assert list(ec._minimax_cache) == [(40, 1.0, "proportion", "squared"), (30, 1.0, "proportion", "squared")]
    ec.minimax_certificate(40, 1.0)  # used again: now the most recent
    ec.minimax_certificate(50, 1.0)  # 41 + 31 + 51 > 100: the least recently used (n = 30) goes
    assert list(ec._minimax_cache) == [(40, 1.0, "proportion", "squared"), (50, 1.0, "proportion", "squared")]
    ec.minimax_certificate(200, 1.0)  # larger than the whole budget alone: kept, everything else evicted
    assert list(ec._minimax_cache) == [(200, 1.0, "proportion", "squared")]
    assert ec.minimax_certificate(40, 1.0) is not first  # recomputed after its eviction ...
    np.testing.assert_array_equal(ec.minimax_certificate(40, 1.0).remap, first.remap)  # ... with the same bits
