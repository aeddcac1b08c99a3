"""dpbayes.release.statistic: OpenDP-based releases, their exact law, their privacy audit and a mutant.

OpenDP draws from the operating system's randomness and cannot be seeded, so the tests on its
samples are statistical, each with a stated false-alarm rate (the probability that a correct
release fails the test): 1e-4 for every chi-square / Kolmogorov-Smirnov test and for every
audit (a lower confidence bound at confidence 1 - 1e-4 exceeds the true eps with probability
at most 1e-4). Everything exact (laws, risks, privacy loss of the output law) is tested exactly.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("opendp")

from dpbayes.core import audit
from dpbayes.counting import model as counting
from dpbayes.counting import metrics as counting_metrics
from dpbayes.counting import risk as counting_risk
from dpbayes.choosing import candidates as estimator_choice
from dpbayes.ubapp import median_remap, optimal as ubapp
from dpbayes.release import statistic as release  # noqa: E402
from dpbayes.ubapp.lbapp import lbapp_mse  # noqa: E402

ALPHA = 1e-4  # false-alarm rate of each statistical test below
CONFIDENCE = 1.0 - ALPHA
N_SMALL, EPS = 4, 1.0  # small n keeps each OpenDP draw cheap (its bounded sampler costs O(n))
N_AUDIT = 50_000  # draws per input: 1e5 draws of the optimal release in all


def recording(sampler):
    """A black-box sampler ``f(x, rng, size)`` for dpbayes.core.audit that also keeps what it drew.

    ``rng`` is unused: OpenDP has its own randomness (which is the point of the module).
    """
    drawn: dict = {}

    def mechanism(x, rng, size):
        out = np.array([sampler(x) for _ in range(size)])
        drawn[x] = np.concatenate([drawn.get(x, out[:0]), out])
        return out

    return mechanism, drawn


def chi_square_pvalue(samples: dict[int, np.ndarray], law: np.ndarray) -> float:
    """Pooled chi-square goodness of fit of integer samples per input against rows of ``law``."""
    stat, df = 0.0, 0
    for x, s in samples.items():
        observed = np.bincount(s, minlength=law.shape[1])
        expected = law[x] * s.size
        assert observed.size == law.shape[1], "an output outside {0..n}"
        assert np.all(expected >= 5), "cells too small for the chi-square approximation"
        stat += float(np.sum((observed - expected) ** 2 / expected))
        df += law.shape[1] - 1
    return float(stats.chi2.sf(stat, df))


# ------------------------------------------------------------------ optimal proportion release


@pytest.fixture(scope="module")
def optimal_audit():
    """The black-box audit of the optimal release on counts 0 ~ 1, and the draws it made."""
    mech = release.OptimalProportionRelease(N_SMALL, EPS)
    sampler, drawn = recording(lambda c: mech.release(c).noisy_count)
    result = audit.statistical_lower_bound(sampler, 0, 1, np.random.default_rng(0), n_samples=N_AUDIT, confidence=CONFIDENCE)
    return mech, result, drawn


@pytest.mark.filterwarnings("ignore::dpbayes.release.statistic.UninformativeIntervalWarning")  # small n or eps: the interval covers [0, 1]
def test_opendp_release_law_matches_the_exact_truncated_geometric_law(optimal_audit):
    mech, _, drawn = optimal_audit
    assert sum(s.size for s in drawn.values()) >= 100_000
    assert chi_square_pvalue(drawn, mech.output_law()) > ALPHA


@pytest.mark.filterwarnings("ignore::dpbayes.release.statistic.UninformativeIntervalWarning")  # small n or eps: the interval covers [0, 1]
def test_black_box_audit_of_the_optimal_release_passes(optimal_audit):
    _, result, _ = optimal_audit
    assert result.eps_lower <= EPS, result


def test_exact_privacy_loss_of_the_output_law_is_eps():
    for n, eps in [(1, 0.1), (4, 1.0), (100, 0.1), (100, 1.0)]:
        mech = release.OptimalProportionRelease(n, eps)
        assert audit.exact_privacy_loss(mech.output_law()).eps == pytest.approx(eps, rel=1e-12)
        assert mech.epsilon_spent <= eps


@pytest.mark.filterwarnings("ignore::dpbayes.release.statistic.UninformativeIntervalWarning")  # small n or eps: the interval covers [0, 1]
def test_mutant_with_halved_noise_scale_fails_the_audit(monkeypatch):
    """A release whose noise scale is halved (true eps = 2 EPS) is caught by the black-box audit."""
    monkeypatch.setattr(release, "opendp_measurement", lambda kind, eps, n=None: release._build_measurement(kind, 0.5 / eps, n))
    mutant = release.OptimalProportionRelease(N_SMALL, EPS)
    sampler, _ = recording(lambda c: mutant.release(c).noisy_count)
    result = audit.statistical_lower_bound(sampler, 0, 1, np.random.default_rng(1), n_samples=20_000, confidence=CONFIDENCE)
    assert result.eps_lower > EPS, result


def test_halved_scale_is_refused_by_the_opendp_privacy_map(monkeypatch):
    """The library's own first line of defence: the scale is checked against OpenDP's map."""
    monkeypatch.setattr(release, "_noise_scale", lambda eps: 0.5 / eps)
    with pytest.raises(release.PrivacyMapError, match="epsilon = 1.0"):
        release.OptimalProportionRelease(N_SMALL, EPS)
    with pytest.raises(release.PrivacyMapError):
        release.LaplaceCountRelease(N_SMALL, EPS, p=0.5)


def test_estimate_is_the_chapter1_remap_of_the_released_count():
    mech = release.OptimalProportionRelease(100, 1.0, estimand="theta")
    sol = ubapp.ubapp_exact(100, 1.0)
    np.testing.assert_allclose(mech.estimates, sol.estimates, rtol=0, atol=0)
    assert mech.bayes_risk == sol.risk
    for count in (0, 37, 100):
        r = mech.release(count)
        assert 0 <= r.noisy_count <= 100 and r.estimate == sol.estimates[r.noisy_count]
        assert (r.n, r.epsilon, r.loss) == (100, 1.0, "squared")


def test_optimal_release_beats_the_laplace_baselines_exactly():
    """Chapter 1, K = 100: UBaPP 1.806e-3 vs LBaPP 1.826e-3 at eps = 1; plain Laplace count is worse still."""
    for eps in (0.1, 1.0):
        risk = release.OptimalProportionRelease(100, eps, estimand="theta").bayes_risk
        plain = 1.0 / 600.0 + 2.0 / (100 * eps) ** 2  # E[theta(1-theta)]/n + Var(Laplace)/n^2, uniform prior
        assert risk < lbapp_mse(100, eps) < plain
    assert release.OptimalProportionRelease(100, 1.0, estimand="theta").bayes_risk == pytest.approx(1.806e-3, abs=1e-6)


def test_absolute_loss_beta_prior_matches_a_fine_grid():
    """The continuous Beta posterior-median remap against chapter 1's exact solver on a grid."""
    cont = release.OptimalProportionRelease(30, 0.5, loss="absolute", prior=(2.0, 5.0), estimand="theta")
    grid = release.OptimalProportionRelease(30, 0.5, loss="absolute", prior=(2.0, 5.0), theta_grid=np.linspace(0, 1, 4001), estimand="theta")
    assert cont.bayes_risk == pytest.approx(grid.bayes_risk, rel=1e-4)
    np.testing.assert_allclose(cont.estimates, grid.estimates, atol=5e-4)
    # the median is the Bayes remap: moving any estimate raises the exact risk
    worse = release.OptimalProportionRelease(30, 0.5, loss="absolute", prior=(2.0, 5.0), estimand="theta")
    worse.estimates = cont.estimates + 0.01
    y = np.arange(31)
    joint = cont.output_law().T * stats.betabinom.pmf(y, 30, 2.0, 5.0)[None, :]
    risk = sum(float(joint[z] @ median_remap.beta_abs_deviation(2.0 + y, 35.0 - y, worse.estimates[z])) for z in range(31))
    assert risk > cont.bayes_risk


def test_grid_prior_weights_are_used():
    theta = np.array([0.1, 0.5, 0.9])
    peaked = release.OptimalProportionRelease(10, 1.0, theta_grid=theta, prior_weights=[0.01, 0.98, 0.01], estimand="theta")
    flat = release.OptimalProportionRelease(10, 1.0, theta_grid=theta, prior_weights=[1 / 3, 1 / 3, 1 / 3], estimand="theta")
    assert np.all(peaked.estimates == 0.5) and not np.all(flat.estimates == 0.5)
    assert 0 < peaked.bayes_risk < flat.bayes_risk


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"count": 11, "n": 10, "epsilon": 1.0}, r"count must be an integer in \[0, 10\]"),
        ({"count": -1, "n": 10, "epsilon": 1.0}, r"count must be an integer in \[0, 10\]"),
        ({"count": 1, "n": 10, "epsilon": 0.0}, r"epsilon must lie in \[1e-09, 20\]"),
        ({"count": 1, "n": 0, "epsilon": 1.0}, r"n must be an integer in \[1, 10000000\]"),
        ({"count": 1, "n": 10, "epsilon": 1.0, "loss": "huber"}, r"loss must be one of 'squared', 'absolute'"),
        ({"count": 1, "n": 10, "epsilon": 1.0, "prior": (0.0, 1.0)}, r"prior\[0\] must be > 0"),
        ({"count": 1, "n": 10, "epsilon": 1.0, "theta_grid": [0.2, 0.8], "prior_weights": [0.5, 0.6], "estimand": "theta"}, r"prior_weights must be >= 0 and sum to 1"),
        ({"count": 1, "n": 10, "epsilon": 1.0, "theta_grid": [0.2, 0.8], "prior_weights": [1.5, -0.5], "estimand": "theta"}, r"prior_weights must be >= 0"),
        ({"count": 1, "n": 10, "epsilon": 1.0, "theta_grid": [0.2, 1.8], "estimand": "theta"}, r"theta_grid must lie in \[0.0, 1.0\]"),
        ({"count": 1, "n": 10, "epsilon": 1.0, "prior_weights": [1.0]}, r"prior_weights needs theta_grid"),
    ],
)
def test_release_proportion_rejects_bad_input_before_any_draw(monkeypatch, kwargs, message):
    def no_opendp(*args, **kw):
        raise AssertionError("OpenDP was reached before the input was validated")

    monkeypatch.setattr(release, "_build_measurement", no_opendp)
    with pytest.raises((ValueError, TypeError), match=message):
        release.release_proportion(**kwargs)


# ------------------------------------------------------------------ Laplace count + Bayes (chapter 4)


@pytest.fixture(scope="module")
def laplace_audit():
    mech = release.LaplaceCountRelease(N_SMALL, EPS, p=0.5)
    sampler, drawn = recording(lambda c: mech.release(c).noisy_count)
    result = audit.statistical_lower_bound(sampler, 0, 1, np.random.default_rng(2), n_samples=20_000, confidence=CONFIDENCE)
    return mech, result, drawn


def test_opendp_laplace_noise_has_the_laplace_law(laplace_audit):
    _, _, drawn = laplace_audit
    noise = np.concatenate([s - c for c, s in drawn.items()])
    assert noise.size >= 40_000
    assert stats.kstest(noise, stats.laplace(scale=1.0 / EPS).cdf).pvalue > ALPHA


def test_black_box_audit_of_the_laplace_release_passes(laplace_audit):
    _, result, _ = laplace_audit
    assert result.eps_lower <= EPS, result


def test_laplace_release_reports_the_chapter4_bayes_estimate():
    for estimator, f in (("mean", counting.bayes_estimate), ("median", counting.posterior_median)):
        mech = release.LaplaceCountRelease(100, 0.1, p=0.3, estimator=estimator)
        r = mech.release(30)
        assert r.estimate == f(r.noisy_count, 100, 0.3, 0.1) and r.epsilon_spent <= 0.1
        assert r.mean_abs_error == counting_metrics.mean_abs_error(estimator, 100, 0.3, 0.1)
    # chapter 4: 3.397 (mean) and 3.388 (median) at n = 100, p = 0.3, eps = 0.1
    assert release.LaplaceCountRelease(100, 0.1, p=0.3).mean_abs_error == pytest.approx(3.397, abs=5e-4)


def test_laplace_release_reports_its_worst_risk_over_the_counts():
    n, p, eps = 40, 0.3, 1.0
    for estimator in ("mean", "median"):
        mech = release.LaplaceCountRelease(n, eps, p=p, estimator=estimator)
        r = mech.release(12)
        assert r.estimand == "count" and r.loss == "absolute" and r.bayes_risk == r.mean_abs_error
        # independent route: the risk at each fixed count by chapter 4's integrator (counting_risk)
        per_count = counting_risk.fixed_count_risk(np.arange(n + 1), estimator, n, p, eps, "abs")
        assert r.worst_risk == pytest.approx(float(per_count.max()), rel=1e-9)
        # the known p pulls towards n p: the worst count is an end point, and far above the average
        assert int(np.argmax(per_count)) in (0, n) and r.worst_risk > 5 * r.bayes_risk
        assert stats.binom.pmf(np.arange(n + 1), n, p) @ per_count == pytest.approx(r.bayes_risk, rel=1e-9)
    assert release.LaplaceCountRelease(estimator_choice.LAPLACE_ABS_MAX_N + 1, eps, p=p).worst_risk is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"count": 5, "n": 4, "epsilon": 1.0, "p": 0.5}, r"count must be an integer in \[0, 4\]"),
        ({"count": 1, "n": 4, "epsilon": -1.0, "p": 0.5}, r"epsilon must lie in \[1e-09, 20\]"),
        ({"count": 1, "n": 4, "epsilon": 1.0, "p": 1.5}, r"p must lie in \(0, 1\)"),
        ({"count": 1, "n": 4, "epsilon": 1.0, "p": 0.5, "estimator": "mode"}, r"estimator must be one of 'mean', 'median'"),
    ],
)
def test_release_count_laplace_rejects_bad_input_before_any_draw(monkeypatch, kwargs, message):
    monkeypatch.setattr(release, "_build_measurement", lambda *a, **k: pytest.fail("OpenDP reached before validation"))
    with pytest.raises((ValueError, TypeError), match=message):
        release.release_count_laplace(**kwargs)


def test_opendp_version_is_the_pinned_one():
    import importlib.metadata

    assert importlib.metadata.version("opendp") == release.OPENDP_VERSION
    requirements = Path(__file__).resolve().parents[2] / "requirements.txt"
    pinned = [line for line in requirements.read_text().splitlines(keepends=True) if line.lower().startswith("opendp==")]
    assert pinned == [f"opendp=={release.OPENDP_VERSION}\n"]


# ------------------------------------------------------------------ O(n) construction vs the dense reference


def _dense_twin(mech: release.OptimalProportionRelease, ab: tuple[float, float]) -> release.OptimalProportionRelease:
    ref = release.OptimalProportionRelease.__new__(release.OptimalProportionRelease)
    ref.n, ref.epsilon, ref.loss = mech.n, mech.epsilon, mech.loss
    ref._init_beta_dense(*ab)
    return ref


@pytest.mark.parametrize("loss", ["squared", "absolute"])
@pytest.mark.parametrize(
    ("n", "eps", "ab"),
    [(1, 1.0, (1.0, 1.0)), (30, 0.5, (2.0, 5.0)), (200, 1.0, (1.0, 1.0)), (500, 0.05, (0.5, 0.5)), (1000, 3.0, (50.0, 20.0)), (300, 0.001, (2.0, 2.0))],
)
def test_linear_construction_matches_the_dense_reference(n, eps, ab, loss):
    mech = release.OptimalProportionRelease(n, eps, loss=loss, prior=ab, estimand="theta")
    ref = _dense_twin(mech, ab)
    assert mech.bayes_risk == pytest.approx(ref.bayes_risk, rel=1e-12)
    np.testing.assert_allclose(mech.estimates, ref.estimates, rtol=0, atol=5e-14)


def test_a_million_records_absolute_loss():
    mech = release.OptimalProportionRelease(10**6, 1.0, loss="absolute", estimand="theta")
    assert np.min(np.diff(mech.estimates)) > 0
    # continuous limit: E|theta - median| ~ sqrt(2 / pi) E[sqrt(theta (1 - theta) / n)] = sqrt(2 / pi) (pi / 8) / 1000
    assert mech.bayes_risk == pytest.approx(np.sqrt(2 / np.pi) * np.pi / 8 / 1000, rel=1e-3)


def test_a_million_records_squared_loss():
    mech = release.OptimalProportionRelease(10**6, 1.0, estimand="theta")
    assert np.all(np.diff(mech.estimates) > 0)
    # continuous limit: the risk is E[theta (1 - theta)] / n plus the noise's share, ~ 1 / (6 n)
    assert mech.bayes_risk == pytest.approx(1 / 6e6, rel=1e-3)
    r = mech.release(123_456)
    assert abs(r.noisy_count - 123_456) < 60 and r.estimate == mech.estimates[r.noisy_count]
    with pytest.raises(ValueError, match="output_law"):
        mech.output_law()


def test_concentrated_prior_whose_weights_underflow_still_has_every_estimate():
    """Beta(2000, 2000) on 10**5 records: the Beta-binomial weights underflow far from n/2."""
    from scipy import special

    n, eps, a = 10**5, 1.0, 2000.0
    mech = release.OptimalProportionRelease(n, eps, prior=(a, a), estimand="theta")
    assert np.all(np.isfinite(mech.estimates)) and np.all(np.diff(mech.estimates) >= -1e-11)
    assert np.isfinite(mech.bayes_risk) and mech.bayes_risk > 0
    # E[theta | z] by a direct log-space sum over y, for z where the weights underflow and where they do not
    y = np.arange(n + 1)
    log_w = stats.betabinom.logpmf(y, n, a, a)
    for z in (0, 900, 20_000, n // 2, n):
        log_joint = log_w - eps * np.abs(y - z)
        mean_y = float(np.exp(special.logsumexp(log_joint, b=np.maximum(y, 1e-300)) - special.logsumexp(log_joint)))
        assert mech.estimates[z] == pytest.approx((a + mean_y) / (2 * a + n), rel=1e-10)


@pytest.mark.filterwarnings("ignore::dpbayes.release.statistic.UninformativeIntervalWarning")  # small n or eps: the interval covers [0, 1]
def test_unbounded_sampler_then_clamp_has_the_truncated_geometric_law(monkeypatch):
    """Above CONSTANT_TIME_MAX_N the noise is OpenDP's unbounded integer draw, clamped: same law."""
    monkeypatch.setattr(release, "CONSTANT_TIME_MAX_N", 0)
    mech = release.OptimalProportionRelease(N_SMALL, EPS)
    drawn = {c: np.array([mech.release(c).noisy_count for _ in range(20_000)]) for c in (0, 2)}
    assert chi_square_pvalue(drawn, mech.output_law()) > ALPHA
    assert mech.epsilon_spent <= EPS


# ------------------------------------------------------------------ bad input (issue 29, item 8)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"count": 150, "n": 100, "epsilon": 1.0}, ValueError, r"count must be an integer in \[0, 100\] \(the value given is confidential"),
        ({"count": "abc", "n": 100, "epsilon": 1.0}, TypeError, r"count must be an integer in \[0, 100\]"),
        ({"count": True, "n": 100, "epsilon": 1.0}, TypeError, r"count must be an integer"),
        ({"count": 3, "n": 100, "epsilon": True}, TypeError, r"epsilon must be a real number"),
        ({"count": 3, "n": 100, "epsilon": [1.0]}, TypeError, r"epsilon must be a real number"),
        ({"count": 3, "n": 100, "epsilon": 1e-300}, ValueError, r"epsilon must lie in \[1e-09, 20\]"),
        ({"count": 3, "n": 100, "epsilon": 1e6}, ValueError, r"publishes the count itself"),
        ({"count": 3, "n": 100, "epsilon": float("nan")}, ValueError, r"epsilon must lie in"),
        ({"count": 3, "n": 100, "epsilon": 1.0, "prior": 1}, TypeError, r"prior must be a pair"),
        ({"count": 3, "n": 100, "epsilon": 1.0, "theta_grid": [0.1, 0.5], "prior_weights": "abc", "estimand": "theta"}, TypeError, r"prior_weights must be an array"),
        ({"count": 3, "n": 100, "epsilon": 1.0, "theta_grid": [0.1, 0.5], "prior_weights": [-0.5, 1.5], "estimand": "theta"}, ValueError, r"prior_weights must be >= 0"),
        ({"count": 3, "n": 100, "epsilon": 1.0, "theta_grid": [0.5], "estimand": "theta"}, ValueError, r"at least 2 points"),
        ({"count": 3, "n": 100, "epsilon": 1.0, "theta_grid": [0.1, 0.5], "prior_weights": [0.0, 1.0], "estimand": "theta"}, ValueError, r"all their mass on one point"),
        ({"count": 3, "n": 100, "epsilon": 1.0, "theta_grid": [0.1, 0.5], "prior_weights": [0.5, 0.5], "prior": (2, 2), "estimand": "theta"}, ValueError, r"not both"),
    ],
)
def test_bad_release_input_is_named_and_refused_before_any_draw(monkeypatch, kwargs, error, message):
    monkeypatch.setattr(release, "_build_measurement", lambda *a, **k: pytest.fail("OpenDP reached before validation"))
    with pytest.raises(error, match=message) as info:
        release.release_proportion(**kwargs)
    if kwargs["count"] == 150:
        assert "150" not in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"count": 300, "n": 100, "epsilon": 1.0, "p": 0.3}, ValueError, r"count must be an integer in \[0, 100\] \(the value"),
        ({"count": 3, "n": 100, "epsilon": 1.0, "p": True}, TypeError, r"p must be a real number in \(0, 1\)"),
        ({"count": 3, "n": 100, "epsilon": 1.0, "p": 0.0}, ValueError, r"prior certain of the count"),
        ({"count": 3, "n": 100, "epsilon": 1.0, "p": 1.0}, ValueError, r"prior certain of the count"),
    ],
)
def test_bad_laplace_release_input_is_named_and_refused(monkeypatch, kwargs, error, message):
    monkeypatch.setattr(release, "_build_measurement", lambda *a, **k: pytest.fail("OpenDP reached before validation"))
    with pytest.raises(error, match=message) as info:
        release.release_count_laplace(**kwargs)
    assert "300" not in str(info.value)


@pytest.mark.filterwarnings("ignore::dpbayes.release.statistic.UninformativeIntervalWarning")  # small n or eps: the interval covers [0, 1]
def test_extreme_allowed_eps_values_build_opendp_measurements():
    for eps in (release.MIN_EPS, release.MAX_EPS):
        mech = release.OptimalProportionRelease(10, eps)
        assert mech.epsilon_spent <= eps and 0 <= mech.release(5).noisy_count <= 10
    big = release.OptimalProportionRelease(10**5, release.MIN_EPS)  # unbounded sampler, scale 1e9, clamped
    assert 0 <= big.release(5).noisy_count <= 10**5


# ---------------------------------------------------------------- estimands and the geometric count release


def test_every_proportion_release_names_its_estimand_and_splits_its_risk():
    from dpbayes.choosing import candidates as estimator_choice
    from dpbayes.ubapp import lbapp

    theta = release.OptimalProportionRelease(60, 0.5, estimand="theta")
    r = theta.release(20)
    assert r.estimand == "theta"
    assert r.privacy_risk == pytest.approx(r.bayes_risk - lbapp.bayes_mse_posterior_mean(60), rel=1e-10)
    assert r.worst_risk >= r.bayes_risk
    prop = release.OptimalProportionRelease(60, 0.5, estimand="proportion")
    q = prop.release(20)
    assert q.estimand == "proportion" and q.privacy_risk == q.bayes_risk
    # the proportion remap is E[c | z] / n, by the dense posterior
    law = np.exp(ubapp.truncated_geometric_logmatrix(60, 0.5))
    post = law @ np.arange(61) / law.sum(axis=1)  # uniform prior on the counts
    np.testing.assert_allclose(prop.estimates, post / 60, rtol=1e-12)
    bias, msd = estimator_choice.candidate_moments("geometric-bayes", 60, 0.5)
    assert q.worst_risk == pytest.approx(msd.max())


def test_a_prior_that_ignores_the_data_is_refused():
    with pytest.raises(ValueError, match="ignore the data"):
        release.OptimalProportionRelease(10, 1.0, prior=(600.0, 600.0), estimand="theta")
    with pytest.raises(ValueError, match="estimand"):
        release.OptimalProportionRelease(10, 1.0, estimand="count")
    with pytest.raises(ValueError, match="squared loss"):
        release.OptimalProportionRelease(10, 1.0, estimand="proportion", loss="absolute")


def test_geometric_count_release_estimates_and_risks():
    from scipy import stats

    n, eps = 40, 0.7
    law = np.exp(ubapp.truncated_geometric_logmatrix(n, eps))  # law[z, c]
    w = stats.betabinom.pmf(np.arange(n + 1), n, 2.0, 3.0)
    post = law * w[None, :]
    post /= post.sum(axis=1, keepdims=True)
    mean = release.GeometricCountRelease(n, eps, estimator="mean", prior=(2.0, 3.0))
    median = release.GeometricCountRelease(n, eps, estimator="median", prior=(2.0, 3.0))
    for z in (0, 7, 40):
        assert mean.estimate_of(z) == pytest.approx(post[z] @ np.arange(n + 1), rel=1e-12)
        assert median.estimate_of(z) == np.searchsorted(np.cumsum(post[z]), 0.5)
    est = np.array([mean.estimate_of(z) for z in range(n + 1)])
    per_count = (law * (est[:, None] - np.arange(n + 1)[None, :]) ** 2).sum(axis=0)
    bayes, worst = mean.risks()
    assert bayes == pytest.approx(w @ per_count, rel=1e-9)
    assert worst == pytest.approx(per_count.max(), rel=1e-9)
    free = release.GeometricCountRelease(n, eps)
    r = free.release(13)
    assert r.estimand == "count" and r.bayes_risk is None and r.estimate == r.noisy_count
    assert r.interval[0] <= r.noisy_count <= r.interval[1]


@pytest.mark.parametrize("n, eps, prior", [(40, 0.7, (2.0, 3.0)), (300, 0.1, (1.0, 1.0)), (25, 3.0, 0.3)])
def test_geometric_count_release_median_risks_against_the_dense_law(n, eps, prior):
    """The posterior median's absolute risks (O(n) partial sums) equal the dense law's sums."""
    from scipy import stats

    law = np.exp(ubapp.truncated_geometric_logmatrix(n, eps))  # law[z, c]
    median = release.GeometricCountRelease(n, eps, estimator="median", prior=prior)
    est = np.array([median.estimate_of(z) for z in range(n + 1)])
    per_count = (law * np.abs(est[:, None] - np.arange(n + 1)[None, :])).sum(axis=0)
    c = np.arange(n + 1)
    w = stats.betabinom.pmf(c, n, *prior) if isinstance(prior, tuple) else stats.binom.pmf(c, n, prior)
    bayes, worst = median.risks()
    assert median.loss == "absolute"
    assert bayes == pytest.approx(w @ per_count, rel=1e-9)
    assert worst == pytest.approx(per_count.max(), rel=1e-9)


def test_geometric_count_release_median_risks_beyond_the_old_dense_limit():
    """Above n = 2000 (where the dense law stopped) the risks are numbers, not None, and behave: at large n eps
    the median's worst absolute error tends to the clamped geometric count's, E|N| = 2a / (1 - a^2)."""
    n, eps = 50_000, 1.0
    bayes, worst = release.GeometricCountRelease(n, eps, estimator="median", prior=(1.0, 1.0)).risks()
    a = np.exp(-eps)
    assert bayes is not None and np.isfinite(bayes) and 0.0 < bayes <= worst
    assert worst == pytest.approx(2 * a / (1 - a**2), rel=0.05)


@pytest.mark.parametrize("kwargs, match", [
    (dict(estimator="mean"), "needs a prior"),
    (dict(estimator="mode", prior=(1, 1)), "estimator"),
    (dict(prior=1.0), "ignores the data"),
    (dict(prior=(1, 2, 3)), "pair"),
    (dict(level=1.0), "level"),
])
def test_geometric_count_release_refuses_bad_input(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        release.GeometricCountRelease(30, 1.0, **kwargs)


def test_geometric_count_release_never_repeats_the_count():
    with pytest.raises(ValueError) as info:
        release.release_count_geometric(31337, 100, 1.0)
    assert "31337" not in str(info.value)


def test_an_interval_covering_every_count_warns_without_the_count():
    # n = 12 at eps = 0.1: the 90 % half-width is at least n, so every release covers 0..12, whatever the noise
    assert release.GeometricCountRelease(12, 0.1).half_width >= 12
    for _ in range(5):
        with pytest.warns(release.UninformativeIntervalWarning, match="covers every count 0..12") as record:
            r = release.release_count_geometric(7, 12, 0.1)
        assert r.interval == (0, 12)
        assert all("7" not in str(w.message) for w in record)
    with warnings.catch_warnings():
        warnings.simplefilter("error", release.UninformativeIntervalWarning)
        r = release.release_count_geometric(370, 1000, 1.0)  # half-width a few counts: informative
    assert r.interval[1] - r.interval[0] < 20


# ------------------------------------------------------------------ minimax remap and neighbour relations


def test_minimax_count_release_is_the_certified_remap_times_n():
    from dpbayes.choosing import minimax

    n, eps = 60, 0.2
    mech = release.GeometricCountRelease(n, eps, estimator="minimax")
    cert = estimator_choice.minimax_certificate(n, eps)
    est = np.array([mech.estimate_of(z) for z in range(n + 1)])
    np.testing.assert_allclose(est, n * cert.remap, rtol=1e-12)
    per_count = minimax.remap_risk(cert.remap, eps) * n**2
    bayes, worst = mech.risks()
    assert bayes is None and mech.loss == "squared"
    assert worst == pytest.approx(per_count.max(), rel=1e-9)
    # worst-case optimal: below the clamped count's worst risk, and within the certificate's gap of its lower bound
    assert worst < release.GeometricCountRelease(n, eps).risks()[1]
    assert worst <= cert.lower_bound * n**2 * (1 + 2 * estimator_choice.MINIMAX_TOL)
    r = mech.release(17)
    assert r.estimator == "minimax" and r.estimate == pytest.approx(n * cert.remap[r.noisy_count])


def _own_size_clamp_log_law(summaries, n_bound, eps):
    """The flawed release: noisy count clamped to the data set's own size n (padded to 0..n_bound)."""
    from dpbayes.core.geometric import clamped_geometric_logmatrix

    out = np.full((len(summaries), n_bound + 1), -np.inf)
    for i, (k, c) in enumerate(summaries):
        out[i, : k + 1] = clamped_geometric_logmatrix([c], 0, k, eps)[0]
    return out


@pytest.mark.parametrize("n_bound, eps", [(3, 1.0), (8, 0.3), (20, 2.0)])
def test_count_release_passes_the_exact_audit_under_both_relations_and_the_own_size_clamp_fails(n_bound, eps):
    """Every data set of at most n_bound records, summarised by (size, count): the release with the public
    bound has privacy loss eps under add/remove and under replace-one; clamping to the data's own size has
    eps under replace-one and an infinite loss under add/remove (an output impossible at (n, n) is possible
    at (n + 1, n))."""
    from dpbayes.core import privacy_loss

    mech = release.GeometricCountRelease(n_bound, eps, neighbours="add-remove")
    summaries = privacy_loss.count_summaries(n_bound)
    law = mech.output_log_law()[summaries[:, 1]]  # depends on the count only
    for relation in ("add-remove", "replace-one"):
        result = privacy_loss.exact_summary_privacy_loss(law, summaries, relation, log_probabilities=True)
        assert result.eps == pytest.approx(eps, rel=1e-9), relation
    flawed = _own_size_clamp_log_law(summaries, n_bound, eps)
    assert privacy_loss.exact_summary_privacy_loss(flawed, summaries, "replace-one", log_probabilities=True).eps == pytest.approx(eps, rel=1e-9)
    bad = privacy_loss.exact_summary_privacy_loss(flawed, summaries, "add-remove", log_probabilities=True)
    assert bad.eps == np.inf
    assert summaries[bad.x_prime][0] == summaries[bad.x][0] + 1 or summaries[bad.x][0] == summaries[bad.x_prime][0] + 1


@pytest.mark.filterwarnings("ignore::dpbayes.release.statistic.UninformativeIntervalWarning")  # n = 4, eps = 1: every interval is 0..4
def test_output_log_law_is_what_the_release_draws():
    mech = release.GeometricCountRelease(N_SMALL, EPS, neighbours="add-remove")
    np.testing.assert_allclose(np.exp(mech.output_log_law()), release.OptimalProportionRelease(N_SMALL, EPS).output_law(), atol=1e-14)
    drawn = {c: np.array([mech.release(c).noisy_count for _ in range(4000)]) for c in (0, 2)}
    assert chi_square_pvalue(drawn, np.exp(mech.output_log_law())) > ALPHA
    assert mech.release(1).neighbours == "add-remove"


@pytest.mark.parametrize("kwargs, match", [
    (dict(neighbours="bounded"), "neighbours"),
    (dict(neighbours="add-remove", estimator="mean", prior=(1, 1)), "not available for neighbours='add-remove'"),
    (dict(neighbours="add-remove", estimator="median", prior=(1, 1)), "not available"),
])
def test_count_release_refuses_a_bad_relation(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        release.GeometricCountRelease(30, 1.0, **kwargs)


# ------------------------------------------------- the proportion release's default, interval and relation (issue 48)


def test_a_proportion_release_estimates_the_data_sets_proportion_unless_theta_is_asked_for():
    default = release.OptimalProportionRelease(60, 0.5)
    explicit = release.OptimalProportionRelease(60, 0.5, estimand="proportion")
    theta = release.OptimalProportionRelease(60, 0.5, estimand="theta")
    assert default.estimand == "proportion"
    np.testing.assert_array_equal(default.estimates, explicit.estimates)
    assert not np.allclose(default.estimates, theta.estimates)
    assert release.release_proportion(20, 60, 0.5).estimand == "proportion"
    with pytest.raises(ValueError, match="estimand='theta'"):
        release.OptimalProportionRelease(60, 0.5, loss="absolute")
    with pytest.raises(ValueError, match="estimand='theta'"):
        release.release_proportion(3, 10, 1.0, theta_grid=[0.2, 0.8])


@pytest.mark.parametrize("n, eps, level", [(40, 0.7, 0.9), (200, 0.1, 0.8), (1000, 1.0, 0.95)])
def test_the_proportion_interval_covers_the_data_sets_proportion_at_every_count(n, eps, level):
    """Exact coverage over the truncated geometric law: P(c / n in interval(z) | c) >= level for every c."""
    mech = release.OptimalProportionRelease(n, eps, level=level)
    k = mech.half_width
    law = np.exp(ubapp.truncated_geometric_logmatrix(n, eps))  # law[z, c]
    z = np.arange(n + 1)[:, None]
    c = np.arange(n + 1)[None, :]
    inside = (np.maximum(z - k, 0) <= c) & (c <= np.minimum(z + k, n))
    coverage = (law * inside).sum(axis=0)
    assert coverage.min() >= level - 1e-12
    # the smallest such k: one less misses the level at an interior count
    inside_less = (np.maximum(z - (k - 1), 0) <= c) & (c <= np.minimum(z + k - 1, n))
    assert (law * inside_less).sum(axis=0).min() < level
    r = mech.release(n // 3)
    lo, hi = r.interval
    assert r.level == level and lo <= r.noisy_count / n <= hi
    assert (lo, hi) == (max(r.noisy_count - k, 0) / n, min(r.noisy_count + k, n) / n)
    assert release.OptimalProportionRelease(n, eps, estimand="theta").release(n // 3).interval is None


def test_a_proportion_interval_covering_everything_warns():
    with pytest.warns(release.UninformativeIntervalWarning, match=r"covers every proportion in \[0, 1\]"):
        r = release.release_proportion(10, 20, 0.1)  # half-width 23 counts: every interval is [0, 1]
    assert r.interval == (0.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", release.UninformativeIntervalWarning)
        release.release_proportion(2000, 6366, 1.0)


def test_the_proportion_release_refuses_add_remove_neighbours():
    with pytest.raises(ValueError, match="neighbours='add-remove' is not available for a proportion"):
        release.release_proportion(3, 10, 1.0, neighbours="add-remove")
    with pytest.raises(ValueError, match="neighbours must be one of"):
        release.release_proportion(3, 10, 1.0, neighbours="bounded")
    assert release.release_proportion(3, 10, 1.0).neighbours == "replace-one"
    with pytest.raises(ValueError, match="level must lie in"):
        release.release_proportion(3, 10, 1.0, level=1.0)


@pytest.mark.parametrize("n_bound, eps", [(3, 1.0), (12, 0.3)])
def test_laplace_release_privacy_loss_is_eps_under_both_relations(n_bound, eps):
    """The Laplace count's log density on a fine grid of outputs, every data set of at most n_bound records:
    the largest log ratio between neighbours is eps under add/remove and under replace-one (the law depends on
    the count only; it is attained for outputs outside the two counts)."""
    from dpbayes.core import privacy_loss

    summaries = privacy_loss.count_summaries(n_bound)
    for relation in ("add-remove", "replace-one"):
        mech = release.LaplaceCountRelease(n_bound, eps, p=0.4, neighbours=relation)
        y = np.linspace(-5.0, n_bound + 5.0, 20 * (n_bound + 10) + 1)
        log_density = mech.output_log_density(summaries[:, 1], y)
        pairs = privacy_loss.summary_pairs(summaries, relation)
        worst = np.max(np.abs(log_density[pairs[:, 0]] - log_density[pairs[:, 1]]))
        assert worst == pytest.approx(eps, rel=1e-12), relation
        assert mech.release(1).neighbours == relation
    # what release() draws is this density (a Kolmogorov-Smirnov test of OpenDP's draws)
    mech = release.LaplaceCountRelease(n_bound, eps, p=0.4)
    drawn = np.array([mech.release(1).noisy_count for _ in range(3000)])
    assert stats.kstest(drawn, stats.laplace(loc=1.0, scale=1.0 / eps).cdf).pvalue > ALPHA
    with pytest.raises(ValueError, match="neighbours must be one of"):
        release.release_count_laplace(1, n_bound, eps, p=0.4, neighbours="unbounded")


def test_the_same_mistake_gets_the_same_error_in_every_entry_point():
    """issue 51: a string eps was a ValueError in compare_estimators and a TypeError in the releases; a list prior
    was refused where a tuple was accepted; a Decimal eps was refused where a Fraction was accepted."""
    from decimal import Decimal
    from fractions import Fraction

    from dpbayes.choosing.decision import recommend
    from dpbayes.release import table

    calls = {
        "compare_estimators": lambda e, pr: estimator_choice.compare_estimators(30, e, prior=pr, candidates=["geometric", "geometric-bayes"]),
        "recommend": lambda e, pr: recommend(30, e, prior=pr, criterion="average"),
        "release_count_geometric": lambda e, pr: release.release_count_geometric(10, 30, e, estimator="mean", prior=pr),
        "release_proportion": lambda e, pr: release.release_proportion(10, 30, e, prior=pr),
        "release_table": lambda e, pr: table.release_table({"x": np.arange(30) < 10}, ["x"], e, prior=pr, criterion="average"),
    }
    for name, call in calls.items():
        for wrong in ("1", True):
            with pytest.raises(TypeError, match="must be a real number"):
                call(wrong, (1, 1))
        with pytest.raises(ValueError, match=r"must lie in \[1e-09, 20\]"):
            call(0.0, (1, 1))
        for eps in (Fraction(1, 2), Decimal("0.5")):
            for prior in ((1, 1), [1, 1]):
                assert call(eps, prior) is not None, name


@pytest.mark.parametrize("prior", [(2.0, 3.0), (2000.0, 2000.0)])
def test_the_proportion_release_is_the_posterior_mean_of_the_count_on_either_path(prior):
    """The chunked path (a prior whose weights do not underflow) and the log-space one (Beta(2000, 2000),
    which hands the sums back) give ``E[c | z] / n`` and the exact risks of ``candidate_moments``."""
    from dpbayes.choosing import candidates as ec

    n, eps = 20_000, 0.7
    mech = release.OptimalProportionRelease(n, eps, prior=prior)
    shift = ec._geometric_count_posterior_mean(ec.CountPrior.beta(*prior).log_weights(n), eps)
    assert mech.estimates.tobytes() == ((np.arange(n + 1) + shift) / n).tobytes()
    bias, msd = ec.candidate_moments("geometric-bayes", n, eps, prior, "proportion")
    assert mech.bayes_risk == pytest.approx(ec.bayes_risk(bias, msd, prior, "proportion"), rel=1e-12)
    assert mech.risks()[1] == pytest.approx(float(np.max(msd)), rel=1e-12)
