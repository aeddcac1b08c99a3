"""Privacy audit: the auditors are right on cases with known answers, and catch broken mechanisms."""

import numpy as np
import pytest
from scipy import stats

from dpbayes.core import audit as A
from dpbayes.book import audit_book as AB
from dpbayes.core import privacy_loss


def randomized_response(eps: float) -> np.ndarray:
    """Binary randomized response: keep the bit with probability e^eps / (1 + e^eps); loss = eps."""
    keep = np.exp(eps) / (1.0 + np.exp(eps))
    return np.array([[keep, 1 - keep], [1 - keep, keep]])


# ---------------------------------------------------------------------------------- neighbours


def test_neighbour_pairs_relations():
    assert A.neighbour_pairs(3).tolist() == [[0, 1], [1, 0], [1, 2], [2, 1]]
    assert len(A.neighbour_pairs(4, "all")) == 12
    assert A.neighbour_pairs(3, np.array([[2, 0], [1, 1]])).tolist() == [[0, 2], [2, 0]]
    with pytest.raises(ValueError, match="relation must be"):
        A.neighbour_pairs(3, "nearby")
    with pytest.raises(ValueError, match=r"relation indices must lie in \[0, 2\]"):
        A.neighbour_pairs(3, np.array([[0, 3]]))
    with pytest.raises(ValueError, match="n_inputs must be an integer"):
        A.neighbour_pairs(1)


# ---------------------------------------------------------------------------------- exact audit


@pytest.mark.parametrize("eps", [1e-3, 0.3, 1.0, 5.0])
def test_exact_loss_of_randomized_response_is_eps(eps):
    res = A.exact_privacy_loss(randomized_response(eps))
    assert res.eps == pytest.approx(eps, rel=1e-12, abs=1e-15)
    assert res.n_pairs == 2


def test_exact_loss_reports_maximising_pair_and_output():
    P = np.array([[0.5, 0.3, 0.2], [0.4, 0.4, 0.2], [0.1, 0.4, 0.5]])
    res = A.exact_privacy_loss(P)
    # brute force over ordered adjacent pairs and outputs
    cand = {(i, j, o): np.log(P[i, o] / P[j, o]) for i, j in [(0, 1), (1, 0), (1, 2), (2, 1)] for o in range(3)}
    (i, j, o), best = max(cand.items(), key=lambda kv: kv[1])
    assert (res.x, res.x_prime, res.output) == (i, j, o) == (1, 2, 0)
    assert res.eps == pytest.approx(best)
    # columns as inputs gives the same answer
    assert A.exact_privacy_loss(P.T, input_axis=1) == res
    # log-probabilities give the same answer
    assert A.exact_privacy_loss(np.log(P), log_probabilities=True).eps == pytest.approx(res.eps)
    # "all" pairs includes (0, 2)
    assert A.exact_privacy_loss(P, "all").eps == pytest.approx(np.log(0.5 / 0.1))


def test_exact_loss_zero_probabilities():
    # 0/0 is ignored, 0/positive is ignored, positive/0 is infinite
    P = np.array([[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]])
    assert A.exact_privacy_loss(P).eps == pytest.approx(np.log(2))
    Q = np.array([[0.5, 0.5, 0.0], [0.5, 0.25, 0.25]])
    res = A.exact_privacy_loss(Q)
    assert res.eps == np.inf and (res.x, res.x_prime, res.output) == (1, 0, 2)
    # identical rows: no loss
    assert A.exact_privacy_loss(np.array([[1.0, 0.0], [1.0, 0.0]])).eps == 0.0


def test_exact_loss_blocks_agree_with_one_shot(monkeypatch):
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(7), size=30)
    full = A.exact_privacy_loss(P, "all")
    monkeypatch.setattr(A, "_BLOCK_ELEMENTS", 10)
    monkeypatch.setattr(privacy_loss, "_BLOCK_ELEMENTS", 10)
    assert A.exact_privacy_loss(P, "all") == full


def test_exact_loss_input_errors():
    with pytest.raises(ValueError, match="P must hold finite probabilities >= 0"):
        A.exact_privacy_loss(np.array([[1.1, -0.1], [0.5, 0.5]]))
    with pytest.raises(ValueError, match="input 1 sums to 0.9"):
        A.exact_privacy_loss(np.array([[0.5, 0.5], [0.5, 0.4]]))
    assert A.exact_privacy_loss(np.array([[0.5, 0.5], [0.5, 0.4]]), sum_atol=None).eps == pytest.approx(np.log(1.25))
    with pytest.raises(ValueError, match="P must be a non-empty 2-D matrix"):
        A.exact_privacy_loss(np.ones(3) / 3)
    with pytest.raises(ValueError, match="P must not contain NaN"):
        A.exact_privacy_loss(np.array([[np.nan, 1.0], [0.5, 0.5]]))
    with pytest.raises(ValueError, match="input_axis must be 0"):
        A.exact_privacy_loss(randomized_response(1.0), input_axis=2)
    with pytest.raises(ValueError, match="log_probabilities=True"):
        A.exact_privacy_loss(np.array([[0.1, -1.0], [-1.0, -1.0]]), log_probabilities=True)


def test_exact_delta():
    assert A.exact_delta(randomized_response(1.0), 1.0) == pytest.approx(0.0, abs=1e-15)
    # RR calibrated for eps=2 but claimed eps=1: delta = keep - e^1 (1 - keep)
    keep = np.exp(2) / (1 + np.exp(2))
    assert A.exact_delta(randomized_response(2.0), 1.0) == pytest.approx(keep - np.e * (1 - keep))
    with pytest.raises(ValueError, match="eps must be > 0"):
        A.exact_delta(randomized_response(1.0), 0.0)


def test_geometric_mechanism_window_is_exact():
    # Two-sided geometric (scipy dlaplace) on counts 0..n: log ratio is constant outside the
    # window [-W, n + W], so a window audit is exact.
    eps, n = 0.7, 6
    z = np.arange(-20, n + 21)
    P = stats.dlaplace.pmf(z[None, :] - np.arange(n + 1)[:, None], eps)
    assert A.exact_privacy_loss(P, sum_atol=None).eps == pytest.approx(eps, abs=1e-12)


# ---------------------------------------------------------------------------------- analytic audit


@pytest.mark.parametrize("eps", [0.01, 1.0, 3.0])
def test_laplace_loss_equal_scales(eps):
    counts = np.arange(6)
    res = A.laplace_privacy_loss(counts, 1 / eps)
    assert res.eps == pytest.approx(eps, rel=1e-12)
    # local DP on clamped values: worst pair is the two ends
    xs = np.linspace(-1, 2, 13)
    res = A.laplace_privacy_loss(np.clip(xs, 0, 1), 1 / eps, "all", inputs=xs)
    assert res.eps == pytest.approx(eps, rel=1e-12)
    assert min(res.x, res.x_prime) <= 0 and max(res.x, res.x_prime) >= 1


def test_laplace_loss_matches_brute_force_density_ratio():
    rng = np.random.default_rng(3)
    loc = rng.normal(size=(5, 2))
    scale = rng.uniform(0.5, 2.0, size=5)
    scale_2d = np.repeat(scale[:, None], 2, axis=1)
    y = np.linspace(-40, 40, 80001)
    pairs = A.neighbour_pairs(5)
    # different scales give an unbounded ratio in a tail
    assert A.laplace_privacy_loss(loc, scale).eps == np.inf
    # equal scales: compare with a dense grid supremum, coordinate by coordinate
    b = 0.8
    res = A.laplace_privacy_loss(loc, b)
    grid_sup = max(
        sum(np.max(stats.laplace.logpdf(y, loc[i, k], b) - stats.laplace.logpdf(y, loc[j, k], b)) for k in range(2))
        for i, j in pairs
    )
    assert res.eps == pytest.approx(grid_sup, abs=1e-3)
    assert A.laplace_privacy_loss(loc, scale_2d).eps == np.inf


def test_laplace_loss_input_errors():
    with pytest.raises(ValueError, match="scale must be > 0"):
        A.laplace_privacy_loss(np.arange(3), 0.0)
    with pytest.raises(ValueError, match="scale must be a scalar, one value per input"):
        A.laplace_privacy_loss(np.arange(3), np.ones(2))
    with pytest.raises(ValueError, match="location must be a finite"):
        A.laplace_privacy_loss(np.array([0.0, np.inf]), 1.0)


def test_density_loss_truncate_then_laplace():
    eps, low, high = 0.8, -1.0, 2.0
    xs = np.linspace(-4.0, 5.0, 37)  # contains low and high, reaches beyond both

    def clamped(y, x):
        return stats.laplace.logpdf(y, np.clip(x, low, high), (high - low) / eps)

    res = A.density_privacy_loss(clamped, xs, xs)
    assert res.eps == pytest.approx(eps, rel=1e-12)
    assert min(res.x, res.x_prime) <= low and max(res.x, res.x_prime) >= high
    # mutant: no clamping -> loss = eps * range of inputs / (high - low)
    unclamped = A.density_privacy_loss(lambda y, x: stats.laplace.logpdf(y, x, (high - low) / eps), xs, xs)
    assert unclamped.eps == pytest.approx(eps * 9.0 / 3.0, rel=1e-12)
    # data-dependent scale: the ratio grows without bound in a tail
    wobbly = A.density_privacy_loss(lambda y, x: stats.laplace.logpdf(y, np.clip(x, low, high), 1.0 + 0.1 * np.abs(x)), xs, xs)
    assert wobbly.eps == np.inf and np.isinf(wobbly.output)
    # agrees with the closed-form Laplace audit
    assert A.laplace_privacy_loss(np.clip(xs, low, high), (high - low) / eps, "all").eps == pytest.approx(res.eps)
    with pytest.raises(ValueError, match="log_density must broadcast"):
        A.density_privacy_loss(lambda y, x: np.zeros(3), xs, xs)
    with pytest.raises(ValueError, match="inputs must hold at least two finite values"):
        A.density_privacy_loss(clamped, [0.0], xs)


# ---------------------------------------------------------------------------------- statistical audit


def test_clopper_pearson_matches_scipy_exact_interval():
    n = 50
    for k in [0, 1, 17, 49, 50]:
        lo, hi = A.clopper_pearson(k, n, 0.95)
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.90, method="exact")
        assert lo == pytest.approx(ci.low, abs=1e-10)
        assert hi == pytest.approx(ci.high, abs=1e-10)
    with pytest.raises(ValueError, match=r"k must lie in \[0, 50\]"):
        A.clopper_pearson(51, n, 0.95)
    with pytest.raises(ValueError, match=r"confidence must lie in \(0.0, 1.0\)"):
        A.clopper_pearson(1, n, 1.0)


def test_statistical_bound_is_valid_and_tight_on_randomized_response():
    # Valid: with 20 fixed seeds the 90% lower bound exceeds the true eps rarely (binomial(20, 0.1)
    # tail; we allow up to 5), and it is reasonably tight.
    eps = 1.0
    P = randomized_response(eps)
    mech = lambda x, g, s: (g.random(s) < P[x, 1]).astype(int)  # noqa: E731
    bounds = [A.statistical_lower_bound(mech, 0, 1, np.random.default_rng(s), n_samples=4000, confidence=0.9).eps_lower for s in range(20)]
    assert sum(b > eps for b in bounds) <= 5
    assert np.median(bounds) > 0.8


def test_statistical_bound_deterministic_and_categorical_vectors():
    mech = lambda x, g, s: np.column_stack([g.integers(0, 2, s), (g.random(s) < 0.2 + 0.3 * x).astype(int)])  # noqa: E731
    r1 = A.statistical_lower_bound(mech, 0, 1, np.random.default_rng(5), n_samples=20000)
    r2 = A.statistical_lower_bound(mech, 0, 1, np.random.default_rng(5), n_samples=20000)
    assert r1 == r2
    true_eps = np.log(0.5 / 0.2)  # the worst event: second coordinate 1, under x=1 vs x=0
    assert 0.3 < r1.eps_lower <= true_eps
    assert r1.n_test == 10000 and "output in" in r1.event


def test_statistical_bound_input_errors():
    mech = lambda x, g, s: g.random(s)  # noqa: E731
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        A.statistical_lower_bound(mech, 0, 1, 1)
    with pytest.raises(ValueError, match="n_samples must be an integer"):
        A.statistical_lower_bound(mech, 0, 1, np.random.default_rng(0), n_samples=10)
    with pytest.raises(ValueError, match="mechanism must return an array of shape"):
        A.statistical_lower_bound(lambda x, g, s: g.random(s + 1), 0, 1, np.random.default_rng(0), n_samples=100)
    with pytest.raises(ValueError, match="vector outputs need at most max_categories"):
        A.statistical_lower_bound(lambda x, g, s: g.random((s, 2)), 0, 1, np.random.default_rng(0), n_samples=100, max_categories=10)
    # a constant mechanism shows no loss
    res = A.statistical_lower_bound(lambda x, g, s: np.zeros(s), 0, 1, np.random.default_rng(0), n_samples=100)
    assert res.eps_lower == 0.0


def test_statistical_search_over_pairs():
    # The search picks pair, direction and event on the selection half by itself. Halved Laplace
    # scale on counts: it must find a violation of eps = 1; the correct scale must stay below 1.
    pairs = [(0, 1), (3, 4), (7, 8)]
    broken = A.statistical_search(lambda c, g, s: A._reference_laplace_count(c, 1.0, g, s, scale_factor=0.5), pairs,
                                  np.random.default_rng(11), n_samples=40_000)
    assert 1.0 < broken.eps_lower <= 2.0
    correct = A.statistical_search(lambda c, g, s: A._reference_laplace_count(c, 1.0, g, s), pairs,
                                   np.random.default_rng(12), n_samples=40_000)
    assert 0.8 < correct.eps_lower <= 1.0
    assert (correct.numerator, correct.denominator) in {p for q in pairs for p in (q, q[::-1])}
    with pytest.raises(ValueError, match="pairs must hold at least one"):
        A.statistical_search(lambda c, g, s: g.random(s), [], np.random.default_rng(0))


def test_repeat_sampler():
    mech = A.repeat_sampler(lambda x, g: x + g.laplace())
    out = mech(2.0, np.random.default_rng(0), 5)
    assert out.shape == (5,)


# ---------------------------------------------------------------------------------- mutations


@pytest.fixture(scope="module")
def mutation_cases():
    return A.mutation_audit(1.0, np.random.default_rng(2026), n_samples=100_000)


def test_every_mutant_is_caught_by_both_audits(mutation_cases):
    broken = [c for c in mutation_cases if c.broken]
    assert len(broken) == 4
    for c in broken:
        assert c.audited_eps > c.claimed_eps + 1e-9, c  # exact / analytic catches it
        assert c.statistical_lower > c.claimed_eps, c  # black-box auditor catches it too
        assert c.caught


def test_correct_reference_mechanisms_pass(mutation_cases):
    correct = [c for c in mutation_cases if not c.broken]
    assert len(correct) == 4
    for c in correct:
        assert c.audited_eps <= c.claimed_eps + 1e-9, c
        assert c.statistical_lower <= c.claimed_eps, c
        assert not c.caught


@pytest.mark.parametrize("eps", [0.1, 0.5, 2.0])
def test_mutants_caught_exactly_across_eps(eps):
    # the exact / analytic half does not depend on sampling: check it over a range of eps
    for c in A.mutation_audit(eps, np.random.default_rng(0), n_samples=200):
        assert (c.audited_eps > eps + 1e-9) == c.broken, c


# ---------------------------------------------------------------------------------- the book's mechanisms


def test_verdict_rules():
    assert A.verdict(1.0, 1.0, 1.0 + 5e-10, np.nan) == "holds"
    assert A.verdict(1.0, 1.0, 1.0 + 2e-9, np.nan) == "VIOLATED"
    assert A.verdict(1.0, 1.0, 0.9, 1.01) == "VIOLATED"  # the statistical bound alone suffices
    assert A.verdict(1.0, 1.5, 1.2, 0.9) == "not eps-DP as calibrated"  # proven 1.5, named 1.0
    assert A.verdict(1.0, np.inf, 3.0, np.nan) == "not eps-DP as calibrated"
    assert A.verdict(1.0, np.inf, 0.7, 0.6) == "within eps here (no general claim)"
    assert A.verdict(1.0, 1.0, np.nan, np.nan) == "not yet available"


@pytest.mark.parametrize(
    ("eps", "n", "K", "n_theta", "n_large"), [(0.05, 12, 4, 41, 40), (1.0, 50, 10, 101, 300), (4.0, 7, 3, 41, 20)]
)
def test_every_book_mechanism_meets_its_claim_exactly(eps, n, K, n_theta, n_large):
    # (1.0, 50, 10, 101, 300) are the audit page's defaults
    rows = AB.audit_book_mechanisms(eps, np.random.default_rng(0), n=n, K=K, n_theta=n_theta, n_multi=n // 5, n_large=n_large,
                                   n_samples=0)
    missing = [(r.mechanism, r.note) for r in rows if r.verdict == "not yet available"]
    assert not missing, f"mechanisms the book uses are not auditable: {missing}"
    assert len(rows) >= 28
    for r in rows:
        assert np.isfinite(r.audited_eps), r
        if r.claims_dp:
            assert r.audited_eps <= r.claimed_eps + A.CLAIM_ATOL, r
        assert r.verdict != "VIOLATED", r
    # the paper's own noise scale (r - l)/(eps sqrt 2) is flagged, with loss sqrt(2) eps
    (author,) = [r for r in rows if "author's noise scale" in r.mechanism]
    assert author.audited_eps == pytest.approx(np.sqrt(2) * eps, rel=1e-9)
    assert author.verdict == "not eps-DP as calibrated" and not author.claims_dp
    if n_large == 300:
        # Ch. 2's counterexample: EHDL (local sensitivity, no DP claim) exceeds eps = 1 at n = 300
        # and the notes' EHD constant exceeds eps = 1 for small n (Ch. 2: 1.023 eps)
        flagged = {r.mechanism: r for r in rows if r.verdict == "not eps-DP as calibrated"}
        ehdl = flagged["EHDL, Beta(0.05, 0.05) prior"]
        assert ehdl.audited_eps > 1.05 and "n' = 300" in ehdl.note
        assert flagged["EHD-notes, Beta(0.05, 0.05) prior"].audited_eps > 1.02


@pytest.mark.slow
def test_book_audit_with_statistics_finds_no_violation():
    rows = AB.audit_book_mechanisms(1.0, np.random.default_rng(1), n=20, K=8, n_theta=41, n_multi=5, n_large=40, n_samples=40_000)
    for r in rows:
        assert r.verdict in ("holds", "within eps here (no general claim)", "not eps-DP as calibrated"), r
        assert r.statistical_lower <= r.audited_eps + A.CLAIM_ATOL, r  # a valid lower bound sits below the exact loss


@pytest.mark.parametrize("eps", [0.05, 1.0, 3.0])
def test_geometric_posterior_release_is_audited_with_loss_eps(eps):
    # Ch. 2's truncated geometric posterior release (and LSHist with rounding) spend exactly eps
    rows = AB.audit_book_mechanisms(eps, np.random.default_rng(0), n=12, K=4, n_theta=41, n_multi=0, n_large=0, n_samples=0)
    by_name = {r.mechanism: r for r in rows}
    for name in ("Geometric", "LSHist-round"):
        r = by_name[name]
        assert r.audit_kind == "exact" and r.claims_dp
        assert r.claimed_eps == pytest.approx(eps, rel=1e-12)
        assert r.audited_eps == pytest.approx(eps, rel=1e-9), r
        assert r.verdict == "holds", r


@pytest.mark.parametrize("eps, n_bound", [(1.0, 3), (0.2, 12)])
def test_count_clamp_relation_audit_flags_the_own_size_clamp_under_add_remove_only(eps, n_bound):
    rows = {(r.mechanism, r.neighbours): r for r in A.count_clamp_relation_audit(eps, n_bound)}
    public, own = A.COUNT_CLAMPS
    assert rows[(public, "replace-one")].audited_eps == pytest.approx(eps, rel=1e-9)
    assert rows[(public, "add-remove")].audited_eps == pytest.approx(eps, rel=1e-9)
    assert rows[(own, "replace-one")].audited_eps == pytest.approx(eps, rel=1e-9)
    worst = rows[(own, "add-remove")]
    assert worst.audited_eps == np.inf
    # the witness: a data set and the same data with one record more, and an output above the smaller size
    small, big = sorted([worst.x, worst.x_prime])
    assert big[0] == small[0] + 1 and worst.output > small[0]
    with pytest.raises(ValueError, match="n_bound"):
        A.count_clamp_relation_audit(eps, 0)
