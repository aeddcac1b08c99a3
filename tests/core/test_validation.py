"""The shared input checks raise clear errors naming the parameter and range."""

import numpy as np
import pytest

from dpbayes.core import validation as v


def test_positive():
    assert v.check_positive("eps", 0.5) == 0.5
    with pytest.raises(ValueError, match="eps must be > 0"):
        v.check_positive("eps", 0.0)
    with pytest.raises(ValueError, match="eps must be > 0"):
        v.check_positive("eps", np.inf)
    with pytest.raises(TypeError, match="eps must be a real number"):
        v.check_positive("eps", "1")


def test_int():
    assert v.check_int("K", 3.0, minimum=1) == 3
    with pytest.raises(ValueError, match=r"K must be an integer in \[1, inf\]"):
        v.check_int("K", 0, minimum=1)
    with pytest.raises(TypeError, match="K must be an integer"):
        v.check_int("K", 2.5)
    with pytest.raises(TypeError, match="K must be an integer"):
        v.check_int("K", True)


def test_probability_and_grid():
    assert v.check_probability("p", 0.3) == 0.3
    with pytest.raises(ValueError, match=r"p must lie in \[0.0, 1.0\]"):
        v.check_probability("p", 1.2)
    with pytest.raises(ValueError, match="theta_grid must be a non-empty 1-D grid"):
        v.check_grid("theta_grid", [])
    with pytest.raises(ValueError, match="strictly increasing"):
        v.check_grid("theta_grid", [0.2, 0.1])
    with pytest.raises(ValueError, match=r"theta_grid must lie in \[0.0, 1.0\]"):
        v.check_grid("theta_grid", [0.5, 1.5], low=0.0, high=1.0)


def test_rng_and_choice():
    v.check_rng("rng", np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        v.check_rng("rng", 1)
    with pytest.raises(ValueError, match="method must be one of 'exact', 'mc'"):
        v.check_choice("method", "x", ("exact", "mc"))



@pytest.mark.parametrize("bad", [[0.5, 0.6], [1.5, -0.5], [np.nan, 1.0], [np.inf, 0.0]])
def test_check_distribution_rejects_non_distributions(bad):
    with pytest.raises(ValueError, match="prior must be >= 0 and sum to 1"):
        v.check_distribution("prior", bad)


def test_check_distribution_shape():
    np.testing.assert_array_equal(v.check_distribution("prior", [0.25, 0.75], shape=(2,)), [0.25, 0.75])
    with pytest.raises(ValueError, match=r"prior must have shape \(3,\), got \(2,\)"):
        v.check_distribution("prior", [0.5, 0.5], shape=(3,))


def test_check_interval_requires_finite_increasing_pairs() -> None:
    assert v.check_interval("ab", (-1, 2)) == (-1.0, 2.0)
    for bad in [(1.0, 1.0), (2.0, 1.0), (0.0, float("inf")), (float("nan"), 1.0)]:
        with pytest.raises(ValueError, match="ab must be a pair"):
            v.check_interval("ab", bad)


def test_privacy_parameter_same_error_for_the_same_mistake():
    from decimal import Decimal
    from fractions import Fraction

    for good in (1, 0.5, Fraction(1, 2), Decimal("0.5"), np.float32(0.5), 1e-9, 20):
        assert v.check_privacy_parameter(good) == pytest.approx(float(good))
    for wrong_type in ("1", True, np.bool_(True), [1.0], None):
        with pytest.raises(TypeError, match=r"eps must be a real number in \[1e-09, 20\]"):
            v.check_privacy_parameter(wrong_type)
    for out_of_range in (0.0, -1, 21, float("nan"), float("inf"), Decimal("1e-300")):
        with pytest.raises(ValueError, match=r"epsilon must lie in \[1e-09, 20\]"):
            v.check_privacy_parameter(out_of_range, "epsilon")
