"""The truth-free two-stage baseline: pilot from the public prior, settings tuned on prior draws
(dpbayes.smc.truthfree_baseline)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from dpbayes.smc import truthfree_baseline as T
from dpbayes.smc.samplers import NormalInvGammaPrior

TRUTH_NAMES = {"mu", "sigma", "mu_true", "sigma_true", "sigma2_true", "truth", "theta"}


def test_no_function_of_the_baseline_takes_the_truth():
    for fn in (T.truthfree_two_stage, T.tune_two_stage, T.prior_pilot_interval):
        assert not TRUTH_NAMES & set(inspect.signature(fn).parameters), fn.__name__


def test_the_design_depends_on_the_releases_not_on_the_truth_behind_them():
    # the same individuals and noise give the same estimates, whatever population they are said to come from;
    # the tuning's choice does not change with the data the verdict is computed on (it never sees them)
    rng = np.random.default_rng(0)
    x = 50 + 3 * rng.standard_normal(60)
    noise = rng.laplace(size=60)
    s = [T.TwoStageSetting(0.25, 2.0, 2.0, 1.0)]
    a = T.truthfree_two_stage(x, noise, 2.0, s)
    b = T.truthfree_two_stage(x.copy(), noise.copy(), 2.0, s)
    assert np.array_equal(a, b)
    c1 = T.tune_two_stage(60, 2.0, 1, seed=3, settings=s * 2)
    c2 = T.tune_two_stage(60, 2.0, 1, seed=3, settings=s * 2)
    assert c1[0] == c2[0] and np.array_equal(c1[1], c2[1])


def test_the_pilot_interval_comes_from_the_prior():
    prior = NormalInvGammaPrior(mu_mean=5.0, mu_var=4.0)
    assert T.prior_pilot_interval(prior, 1.5) == pytest.approx((2.0, 8.0))


def test_tuning_picks_the_smallest_simulated_risk():
    settings = [T.TwoStageSetting(0.25, 0.5, 2.0, 1.0), T.TwoStageSetting(0.25, 2.0, 2.0, 1.0)]
    best, scores = T.tune_two_stage(60, 5.0, 2, seed=1, settings=settings)
    assert scores.shape == (2,) and best == settings[int(np.argmin(scores))]


def test_bad_settings_are_rejected():
    with pytest.raises(ValueError):
        T.TwoStageSetting(1.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError):
        T.TwoStageSetting(0.5, 1.0, 1.0, -1.0)
    with pytest.raises(ValueError):
        T.truthfree_two_stage([1.0], [0.0], 1.0, [T.TwoStageSetting(0.5, 1.0, 1.0, 1.0)])
