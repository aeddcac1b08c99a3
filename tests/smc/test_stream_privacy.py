"""Proposition 1 on the whole released transcript: replacing a later record changes nothing released before it (dpbayes.smc.stream_privacy)."""

import numpy as np
import pytest

from dpbayes.smc import samplers as smc, stream_privacy

X = 50.0 + np.sqrt(10.0) * np.random.default_rng(3).standard_normal(30)
SAMPLERS = [
    (smc.smc_latent, dict(n_particles=60, ab=(-0.12, 0.12), store_every=4)),
    (smc.smc_exact, dict(n_particles=60, ab=(-0.12, 0.12), store_every=4)),
    (smc.smc_exact, dict(n_particles=60, fixed_interval=(20.0, 80.0), store_every=4)),
]


@pytest.mark.parametrize("sampler, kwargs", SAMPLERS)
@pytest.mark.parametrize("k", [0, 17, 29])
def test_transcript_before_a_replaced_record_is_bit_identical(sampler, kwargs, k):
    eps = 2.0
    x = X.copy()
    x[k] = -1e6  # the two extremes: clamped to opposite ends of whatever interval record k is asked for
    check = stream_privacy.neighbour_stream_check(sampler, x, k, 1e6, eps, seed=9, **kwargs)
    # everything released at steps 0..k-1 (releases, intervals, posterior means, ESS, stored clouds) and the
    # interval asked of record k are unchanged; release k itself differs
    assert check.first_difference == k
    assert check.same_interval_at_k
    assert eps - 1e-9 <= check.max_privacy_loss <= eps + 1e-9  # the bound eps, attained


@pytest.mark.parametrize("sampler, kwargs", SAMPLERS[:2])
def test_a_small_replacement_never_moves_anything_earlier(sampler, kwargs):
    check = stream_privacy.neighbour_stream_check(sampler, X, 11, X[11] + 0.5, 1.0, seed=4, **kwargs)
    assert check.first_difference >= 11  # equal to the length when both values clamp to the same end
    assert check.same_interval_at_k
    assert check.max_privacy_loss <= 1.0 + 1e-9


def test_transcript_covers_every_released_quantity():
    a = smc.smc_exact(X, 2.0, np.random.default_rng(1), n_particles=20, ab=(-0.12, 0.12), store_every=5)
    t = stream_privacy.released_transcript(a)
    assert t.shape == (X.size, len(stream_privacy.TRANSCRIPT_FIELDS) + 3 * 20)
    np.testing.assert_array_equal(t[:, 0], a.y)
    np.testing.assert_array_equal(t[:, 3], a.mean_mu)
    np.testing.assert_array_equal(t[4, 6:26], a.stored_mu[0])  # step 5 (1-based) holds the first stored cloud
    assert np.all(np.isnan(t[0, 6:]))


def test_first_difference_sees_a_change_anywhere():
    a = smc.smc_exact(X, 2.0, np.random.default_rng(1), n_particles=20, ab=(-0.12, 0.12), store_every=5)
    b = smc.smc_exact(X, 2.0, np.random.default_rng(1), n_particles=20, ab=(-0.12, 0.12), store_every=5)
    assert stream_privacy.first_transcript_difference(a, b) == X.size
    b.stored_weights[1, 3] += 1e-300 if b.stored_weights[1, 3] == 0 else b.stored_weights[1, 3] * 1e-15
    assert stream_privacy.first_transcript_difference(a, b) == 9  # the second stored cloud, step 10 (1-based)
    b.ess[2] = np.nextafter(b.ess[2], np.inf)
    assert stream_privacy.first_transcript_difference(a, b) == 2


def test_a_data_dependent_interval_rule_is_caught():
    # a (non-private) sampler whose interval peeks at the next record: the check must see the leak
    def leaky(x, eps, rng, **kw):
        res = smc.smc_exact(x, eps, rng, **kw)
        res.lower[1:] = res.lower[1:] + 1e-9 * x[1:]
        return res

    check = stream_privacy.neighbour_stream_check(leaky, X, 12, 1e3, 2.0, seed=1, n_particles=20, ab=(-0.12, 0.12))
    assert not check.same_interval_at_k
    assert check.first_difference == 12


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="k"):
        stream_privacy.neighbour_stream_check(smc.smc_exact, X, 30, 1.0, 1.0, 0, n_particles=10, ab=(-1.0, 1.0))
    with pytest.raises(ValueError, match="x_k_new"):
        stream_privacy.neighbour_stream_check(smc.smc_exact, X, 3, np.inf, 1.0, 0, n_particles=10, ab=(-1.0, 1.0))
    with pytest.raises(TypeError, match="SMCResult"):
        stream_privacy.released_transcript(np.zeros(3))
