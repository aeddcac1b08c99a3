"""Input checks shared by every numerical module.

Each check raises :class:`ValueError` (or :class:`TypeError` for a wrong type) with a message
that names the parameter and the allowed range, *before* any computation starts.
"""

from __future__ import annotations

import decimal
import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "check_positive",
    "check_nonnegative",
    "check_int",
    "check_interval",
    "check_probability",
    "check_in_range",
    "check_grid",
    "check_distribution",
    "check_rng",
    "check_choice",
    "check_privacy_parameter",
    "EPS_RANGE",
]

#: The privacy parameters a release or a comparison accepts: far below, OpenDP cannot build a sampler and
#: the noise hides any count; above, the noise moves a count with probability < 4e-9.
EPS_RANGE = (1e-9, 20.0)


def _is_real_scalar(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _as_float_array(name: str, value: ArrayLike) -> NDArray[np.float64]:
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be a real number or an array of real numbers, got {value!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a real number or an array of real numbers, got {value!r}") from exc
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN")
    return arr


def check_positive(name: str, value: ArrayLike, *, allow_inf: bool = False) -> Any:
    """Require ``value > 0`` (element-wise, finite unless ``allow_inf``); return it as float/array."""
    arr = _as_float_array(name, value)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(arr > 0) or (not allow_inf and not np.all(np.isfinite(arr))):
        raise ValueError(f"{name} must be > 0{'' if allow_inf else ' and finite'}, got {value!r}")
    return float(arr) if arr.ndim == 0 else arr


def check_nonnegative(name: str, value: ArrayLike) -> Any:
    """Require finite ``value >= 0`` (element-wise); return it as float/array."""
    arr = _as_float_array(name, value)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(arr >= 0) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be >= 0 and finite, got {value!r}")
    return float(arr) if arr.ndim == 0 else arr


def check_int(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Require an integer (Python or NumPy, not bool; floats with integral value are accepted)."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got bool {value!r}")
    if isinstance(value, numbers.Integral):
        ivalue = int(value)
    elif _is_real_scalar(value) and float(value).is_integer():
        ivalue = int(value)
    else:
        raise TypeError(f"{name} must be an integer, got {value!r}")
    lo = "-inf" if minimum is None else str(minimum)
    hi = "inf" if maximum is None else str(maximum)
    if (minimum is not None and ivalue < minimum) or (maximum is not None and ivalue > maximum):
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {ivalue}")
    return ivalue


def check_in_range(
    name: str,
    value: ArrayLike,
    low: float,
    high: float,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> Any:
    """Require ``low <= value <= high`` (bounds open when asked), element-wise."""
    arr = _as_float_array(name, value)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    ok_low = arr > low if low_open else arr >= low
    ok_high = arr < high if high_open else arr <= high
    if not (np.all(ok_low) and np.all(ok_high)):
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return float(arr) if arr.ndim == 0 else arr


def check_probability(name: str, value: ArrayLike, *, open_interval: bool = False) -> Any:
    """Require a probability in [0, 1] (or (0, 1) with ``open_interval``)."""
    return check_in_range(name, value, 0.0, 1.0, low_open=open_interval, high_open=open_interval)


def check_grid(name: str, value: ArrayLike, *, low: float | None = None, high: float | None = None) -> NDArray[np.float64]:
    """Require a non-empty, finite, strictly increasing 1-D grid, optionally inside [low, high]."""
    arr = _as_float_array(name, value)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D grid, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    if arr.size > 1 and not np.all(np.diff(arr) > 0):
        raise ValueError(f"{name} must be strictly increasing")
    if low is not None or high is not None:
        check_in_range(name, arr, -np.inf if low is None else low, np.inf if high is None else high)
    return arr


def check_distribution(name: str, value: ArrayLike, *, shape: tuple[int, ...] | None = None) -> NDArray[np.float64]:
    """Require a probability vector: finite, ``>= 0``, summing to 1 within ``1e-9`` (of ``shape`` if given)."""
    arr = np.asarray(value, dtype=float)
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or not np.isclose(arr.sum(), 1.0, rtol=0, atol=1e-9):
        raise ValueError(f"{name} must be >= 0 and sum to 1 (a probability distribution), got sum {arr.sum()!r}")
    return arr


def check_rng(name: str, value: Any) -> np.random.Generator:
    """Require a :class:`numpy.random.Generator` (never a global or legacy RandomState)."""
    if not isinstance(value, np.random.Generator):
        raise TypeError(f"{name} must be a numpy.random.Generator (use numpy.random.default_rng(seed)), got {type(value).__name__}")
    return value


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """Require one of a fixed set of strings."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def check_interval(name: str, pair: Any) -> tuple[float, float]:
    """Require a pair ``(low, high)`` of finite numbers with ``low < high``; returns it as floats."""
    low, high = (float(v) for v in pair)
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ValueError(f"{name} must be a pair (low, high) of finite numbers with low < high, got {pair!r}")
    return low, high


def check_privacy_parameter(value: Any, name: str = "eps", *, low: float = EPS_RANGE[0], high: float = EPS_RANGE[1]) -> float:
    """A privacy parameter: a real number (``int``, ``float``, ``Fraction``, ``Decimal``, NumPy scalar; not a
    bool, a string or an array) in ``[low, high]``. :class:`TypeError` for a wrong type, :class:`ValueError` for
    a value out of range or NaN, each naming the parameter and the range: the same mistake gets the same error
    in every release and comparison.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, decimal.Decimal)):
        raise TypeError(f"{name} must be a real number in [{low:g}, {high:g}], got {type(value).__name__} {value!r}")
    v = float(value)
    if not low <= v <= high:  # also NaN
        raise ValueError(f"{name} must lie in [{low:g}, {high:g}], got {v!r}")
    return v
