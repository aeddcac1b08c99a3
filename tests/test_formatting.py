import math

import numpy as np
import pytest

from dpbayes.formatting import format_to_accuracy


def test_exact_zero_prints_zero():
    assert format_to_accuracy(0.0, 1e-6) == "0"
    assert format_to_accuracy(-0.0, 1e-6) == "0"


@pytest.mark.parametrize("x", [-1.85e-16, 2.049e-16, 1.515e-07, -9.99e-7])
def test_below_accuracy_prints_zero_like_an_exact_zero(x):
    assert format_to_accuracy(x, 1e-6) == format_to_accuracy(0.0, 1e-6) == "0"


def test_above_accuracy_prints_significant_digits():
    assert format_to_accuracy(-2.345678e-3, 1e-6) == "-0.00235"
    assert format_to_accuracy(1.0e-6, 1e-6, digits=2) == "1e-06"
    assert format_to_accuracy(np.float64(0.125), 1e-3, digits=1) == "0.1"


@pytest.mark.parametrize("bad", [math.nan, math.inf, "0.1", True, None])
def test_bad_value_is_rejected(bad):
    with pytest.raises(ValueError, match="x must be a finite real number"):
        format_to_accuracy(bad, 1e-6)


@pytest.mark.parametrize("kwargs, match", [({"accuracy": 0.0}, "accuracy"), ({"accuracy": -1.0}, "accuracy"),
                                          ({"accuracy": 1e-6, "digits": 0}, "digits")])
def test_bad_accuracy_or_digits_is_rejected(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        format_to_accuracy(0.5, **kwargs)
