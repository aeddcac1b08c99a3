"""Private releases of real data: OpenDP's vetted noise samplers followed by a Bayes remap.

The rest of ``dpbayes`` draws noise with :class:`numpy.random.Generator` in floating point,
which is right for simulation (fast, seeded) but is not a safe way to protect real data: the
low-order bits of floating-point Laplace samples can reveal the input (Mironov, "On significance
of the least significant bits for differential privacy", CCS 2012). This module draws the noise
with OpenDP instead (pinned ``opendp==0.16.0``), whose integer (discrete Laplace / geometric)
sampler is exact and whose continuous Laplace sampler is floating-point safe, and then applies
the post-processing that the book shows to be accurate:

* :class:`OptimalProportionRelease` / :func:`release_proportion` -- the optimal epsilon-DP Bayes
  estimate of a proportion from a count in ``{0..n}`` (chapter 1): OpenDP geometric noise on the
  count, clamped to ``{0..n}`` (the truncated geometric mechanism of Ghosh, Roughgarden &
  Sundararajan 2009), then the Bayes remap of the chapter 1 exact solver
  (:func:`dpbayes.ubapp.optimal.ubapp_exact`; UBaPP paper, linear program (11) and Algorithm 1) for a
  Beta or grid prior and squared or absolute loss;
* :class:`GeometricCountRelease` / :func:`release_count_geometric` -- the count itself released with
  OpenDP's geometric noise, clamped to ``{0..n}``: prior-free (``estimator="none"``, with an exact
  prior-free interval, or ``estimator="minimax"``, the remap with the smallest worst mean squared
  error over the counts, :mod:`dpbayes.choosing.minimax`), or followed by the posterior mean or median under a ``Beta(a, b)`` prior on
  the proportion (a hierarchical prior for an unknown ``p``; flat: ``(1, 1)``) or a known ``p``
  (chapter 5: the optimal count release);
* :class:`LaplaceCountRelease` / :func:`release_count_laplace` -- a count released with OpenDP's
  Laplace measurement, followed by the posterior mean (Naldi & D'Acquisto, eq. (11)) or median
  under a ``Binomial(n, p)`` prior (chapter 4, :mod:`dpbayes.counting.model`).

Every release names its **estimand**: ``"proportion"`` (the data set's own ``count / n``, the default of
:func:`release_proportion`), ``"theta"`` (the population proportion of which the records are a sample:
even without noise the posterior mean has the sampling risk ``E Var(theta | count)``) or ``"count"``; and reports its exact risks for
that estimand: the Bayes risk under the prior, the part of it privacy adds, and the worst risk over
data sets (:mod:`dpbayes.choosing.candidates`, which also compares the candidates for a user's ``n``
and ``epsilon``).

Unit of privacy (both mechanisms): one record of a data set of ``n`` records, each contributing 0
or 1 to the count. Two data sets are neighbours when they differ in one record, so their counts
differ by at most 1; ``n`` is public (not computed from the confidential data). The count releases
also take the other relation, one record added or removed (:mod:`dpbayes.core.neighbours`), with
``n`` a public *bound* on the number of records: clamping a noisy count to the data's own size is
not private under it, and the proportion release refuses it (``count / n`` needs the data's own size).
Every release
spends ``epsilon`` of privacy budget: ``k`` releases about the same records are ``k epsilon``-DP together
(basic composition), and the same count released twice is *two* releases. To release several counts of
one table under one budget, with OpenDP's compositor keeping the account, use :mod:`dpbayes.release.table`.

Names. The release API spells the privacy parameter ``epsilon`` and the prior ``prior``, as OpenDP,
diffprivlib and Tumult Analytics do; the science modules keep the sources' ``eps`` (their docstrings cite
equations written with it). The noise this book calls *geometric* (two-sided geometric, ``P(G = k)``
proportional to ``exp(-epsilon |k|)``) is OpenDP's ``dp.m.make_geometric``, which OpenDP's documentation
also calls the discrete Laplace mechanism (``make_laplace`` on an integer domain builds the same
measurement).

OpenDP's measurements used here are behind its ``"contrib"`` feature flag, which
:func:`opendp_measurement` switches on (see the comment there). Beyond the book's sources.
"""

from __future__ import annotations

import functools
import numbers
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from dpbayes.counting import model as counting, metrics as counting_metrics
from dpbayes.choosing import candidates as estimator_choice, minimax_bound
from dpbayes.ubapp import median_remap
from dpbayes.core._extras import lazy_module, require
from dpbayes.core.geometric import KERNEL_CHUNK, clamped_geometric_logmatrix, truncated_geometric_logmatrix
from dpbayes.core.neighbours import ADD_REMOVE, REPLACE_ONE, check_neighbours
from dpbayes.core.losses import LOSSES
from dpbayes.ubapp.optimal import (
    beta_posterior_mean_remap, beta_prior_on_grid, betabinom_logpmf, ubapp_exact,
)
from dpbayes.core.validation import (
    EPS_RANGE, check_choice, check_distribution, check_grid, check_int, check_positive, check_privacy_parameter,
)

stats = lazy_module("scipy.stats")
optimize = lazy_module("scipy.optimize")

__all__ = [
    "UninformativeIntervalWarning",
    "OPENDP_VERSION",
    "MAX_N",
    "OUTPUT_LAW_MAX_N",
    "CONSTANT_TIME_MAX_N",
    "MIN_EPS",
    "MAX_EPS",
    "ProportionRelease",
    "OptimalProportionRelease",
    "release_proportion",
    "CountRelease",
    "LaplaceCountRelease",
    "release_count_laplace",
    "GeometricCountRelease",
    "GeometricCountReleaseResult",
    "release_count_geometric",
    "COUNT_ESTIMATORS",
    "PRIOR_FREE_COUNT_ESTIMATORS",
    "PRIOR_SHARE_MAX",
    "PROPORTION_ESTIMANDS",
    "opendp_measurement",
    "PrivacyMapError",
]

#: The OpenDP release pinned in ``requirements.txt``; a different installed version is refused.
OPENDP_VERSION = "0.16.0"
#: Largest number of records of :class:`OptimalProportionRelease` (a memory bound, checked before
#: anything is allocated): the remap and the exact risk are built in ``O(n)`` time and memory, about
#: 0.3 kB per record at the peak (``benchmarks/bench_release.py``: ~ 30 MB at n = 10**5), so
#: ``MAX_N`` records need about 3 GB. A grid prior is further bounded by :data:`dpbayes.ubapp.optimal.MAX_GRID_WORK`.
MAX_N = 10**7
#: Largest ``n`` of :meth:`OptimalProportionRelease.output_law`, a dense ``(n + 1) x (n + 1)`` matrix
#: (200 MB at 5000): for the privacy audit of small releases.
OUTPUT_LAW_MAX_N = 5000
#: Up to this ``n`` the geometric noise is drawn by OpenDP's bounded sampler, which runs in constant
#: time (no timing side channel) but costs O(n) per draw (25 ms at 10**4, 0.6 s at 10**6). Above it,
#: OpenDP's unbounded integer sampler (discrete Laplace, same law before the clamp; expected O(1) per
#: draw) is used and the result clamped to ``{0..n}``: the same truncated geometric law
#: (clamping is post-processing), but the draw's running time varies with the noise.
CONSTANT_TIME_MAX_N = 10_000
LAPLACE_ESTIMATORS = ("mean", "median")
#: Smallest epsilon of a release: far below it OpenDP's conservative arithmetic cannot build the sampler
#: (epsilon = 1e-300 fails inside OpenDP), and at 1e-9 the noise (scale 10**9) already hides any count.
MIN_EPS = EPS_RANGE[0]
#: Largest epsilon of a release: the geometric noise moves the count with probability
#: ``2 e^-epsilon / (1 + e^-epsilon)``, 4e-9 at epsilon = 20; above, a release publishes the exact count.
MAX_EPS = EPS_RANGE[1]
#: Largest share of the prior in the ``theta`` estimate, ``(a + b) / (a + b + n)``: above it a release
#: would report the prior and ignore the data, and is refused.
PRIOR_SHARE_MAX = 0.99
#: Estimands of :class:`OptimalProportionRelease`: the data set's ``count / n`` (default) or the population ``theta``.
PROPORTION_ESTIMANDS = ("proportion", "theta")


def _check_eps(epsilon: Any) -> float:
    """A real scalar in ``[MIN_EPS, MAX_EPS]`` (:func:`dpbayes.core.validation.check_privacy_parameter`), with the reason for the range."""
    try:
        return check_privacy_parameter(epsilon, "epsilon", low=MIN_EPS, high=MAX_EPS)
    except ValueError as exc:
        raise ValueError(
            f"{exc} (above {MAX_EPS:g} a release publishes the count itself: the noise moves it with probability < 4e-9; "
            f"below {MIN_EPS:g} it says nothing about the data)"
        ) from None


def _check_count(count: Any, n: int) -> int:
    """The confidential count, an integer in ``[0, n]``; its value is never repeated in a message (logs)."""
    message = f"count must be an integer in [0, {n}] (the value given is confidential and not repeated here)"
    if isinstance(count, (bool, np.bool_)):
        raise TypeError(message)
    if isinstance(count, numbers.Integral):
        value = int(count)
    elif isinstance(count, numbers.Real) and float(count).is_integer():
        value = int(float(count))
    else:
        raise TypeError(message)
    if not 0 <= value <= n:
        raise ValueError(message)
    return value


def _check_open_probability(name: str, value: Any) -> float:
    """A real scalar strictly inside (0, 1): 0 and 1 are priors certain of the count (they ignore the data)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in (0, 1), got {type(value).__name__} {value!r}")
    v = float(value)
    if not 0.0 < v < 1.0:
        raise ValueError(
            f"{name} must lie in (0, 1), got {v!r}" + (" (a prior certain of the count: the release would ignore the data)" if v in (0.0, 1.0) else "")
        )
    return v


class UninformativeIntervalWarning(UserWarning):
    """A released interval covers every possible value: at this ``n`` and epsilon the noise hides the count."""


def _check_level(level: Any) -> float:
    """An interval's coverage, a real number strictly inside (0, 1)."""
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, numbers.Real) or not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    return float(level)


def _warn_uninformative(level: float, n: int, epsilon: float, half_width: int, what: str) -> None:
    # stacklevel 3: the caller of release(), not release() itself
    warnings.warn(
        f"the {level:.0%} interval covers every {what}: with n = {n} records at epsilon = {epsilon:g} the noise (interval "
        f"half-width {half_width} counts) hides the count; a larger epsilon or more records are needed for an informative release",
        UninformativeIntervalWarning, stacklevel=3,
    )


def _opendp() -> Any:
    """Import OpenDP, check its version and switch on the feature flag the measurements need."""
    opendp = require("opendp", "dpbayes.release.statistic (OpenDP's samplers)")
    dp = require("opendp.prelude", "dpbayes.release.statistic (OpenDP's samplers)")
    installed = getattr(opendp, "__version__", None) or _installed_version("opendp")
    if installed != OPENDP_VERSION:
        raise ImportError(f"dpbayes.release.statistic is tested with opendp=={OPENDP_VERSION}, found {installed}")
    # OpenDP ships measurements whose privacy proofs have not completed its own vetting process
    # behind the "contrib" flag; the geometric and Laplace measurements used here are among them
    # (their proofs are published with the library). We rely on them, and say so in every
    # docstring, rather than re-implementing a sampler that would have no proof at all.
    dp.enable_features("contrib")
    return dp


@functools.cache  # reading the package metadata costs ~10 ms; a release table calls this per release
def _installed_version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


class PrivacyMapError(RuntimeError):
    """OpenDP's privacy map of a measurement exceeds the epsilon it was built for."""


def _noise_scale(epsilon: float) -> float:
    """Noise scale ``1 / epsilon`` for a sensitivity-1 count (the one place a test may mutate)."""
    return 1.0 / epsilon


def opendp_measurement(kind: str, epsilon: float, n: int | None = None) -> Any:
    """The OpenDP measurement of a count with noise of scale ``1/epsilon``, its privacy map checked.

    Parameters
    ----------
    kind : {"geometric", "laplace"}
        ``"geometric"``: ``dp.m.make_geometric`` on integers (two-sided geometric noise,
        ``P(G = k) ∝ exp(-epsilon |k|)``), with ``bounds=(0, n)`` so that OpenDP samples in constant
        time; ``"laplace"``: ``dp.m.make_laplace`` on non-NaN floats.
    epsilon : float
        Privacy parameter, ``> 0``.
    n : int, optional
        Number of records (required for ``"geometric"``), ``1 <= n <= MAX_N``. Up to
        :data:`CONSTANT_TIME_MAX_N` the measurement is bounded to ``[0, n]`` (OpenDP's constant-time
        sampler); above, it is unbounded and the caller clamps its output.

    Returns
    -------
    opendp.mod.Measurement
        A measurement whose privacy map, at input distance 1 (one record), is ``<= epsilon``.

    Notes
    -----
    Privacy: OpenDP's map is the guarantee; the scale is nudged up by a few ulps when rounding
    in ``1 / (1 / epsilon)`` would make the map exceed ``epsilon``, and :class:`PrivacyMapError` is raised
    if the map still exceeds ``epsilon`` (a mis-calibrated scale never reaches the data). ``dp.enable_features("contrib")`` is
    switched on (OpenDP's flag for measurements outside its vetted core).
    """
    kind = check_choice("kind", kind, ("geometric", "laplace"))
    epsilon = check_positive("epsilon", epsilon)
    if kind == "geometric":
        if n is None:
            raise ValueError(f"n must be given for the geometric measurement (an integer in [1, {MAX_N}])")
        n = check_int("n", n, minimum=1, maximum=MAX_N)
    return calibrated_measurement(lambda scale: _build_measurement(kind, scale, n), _noise_scale(epsilon),
                                  1 if kind == "geometric" else 1.0, epsilon, f"the {kind} measurement")


def calibrated_measurement(build: Any, scale: float, d_in: Any, epsilon: float, what: str) -> Any:
    """``build(scale)``, the scale nudged up by a few ulps until OpenDP's privacy map at ``d_in`` is ``<= epsilon``.

    Rounding in ``unit / (unit / epsilon)`` can make the map exceed ``epsilon`` by an ulp; a scale that still
    fails after eight nudges raises :class:`PrivacyMapError` before the measurement reaches any data. Used by
    every release of :mod:`dpbayes.release`.
    """
    for _ in range(8):
        meas = build(scale)
        spent = float(meas.map(d_in))
        if spent <= epsilon:
            return meas
        scale = float(np.nextafter(scale, np.inf))
    raise PrivacyMapError(f"OpenDP's privacy map of {what} gives {spent!r} > epsilon = {epsilon!r} at noise scale {scale!r}")


def _build_measurement(kind: str, scale: float, n: int | None) -> Any:
    """The bare OpenDP measurement (no check against epsilon; :func:`opendp_measurement` does that)."""
    dp = _opendp()
    if kind == "geometric":
        # 64-bit integers: count + noise cannot overflow for any n <= MAX_N and epsilon >= 1e-9
        space = (dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"))
        if n is not None and n <= CONSTANT_TIME_MAX_N:
            return dp.m.make_geometric(*space, scale=scale, bounds=(0, n))
        return dp.m.make_geometric(*space, scale=scale)
    return dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=scale)


# --------------------------------------------------------------------------------------------
# The optimal release of a proportion (chapter 1)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProportionRelease:
    """One release by :class:`OptimalProportionRelease`.

    Attributes
    ----------
    estimate : float
        Bayes estimate of the proportion ``theta`` (posterior mean for squared loss, posterior
        median for absolute loss, restricted to the grid for a grid prior).
    noisy_count : int
        The released noisy count in ``{0..n}`` (the estimate is a function of it).
    n : int
        Number of records.
    epsilon : float
        Privacy parameter of the release.
    epsilon_spent : float
        OpenDP's privacy map at one record (``<= epsilon``).
    loss : str
        ``"squared"`` or ``"absolute"``.
    bayes_risk : float
        Exact Bayes risk of the whole procedure under the prior, ``E[loss(target, estimate)]``.
    estimand : {"theta", "proportion"}
        What the estimate targets: the population parameter ``theta`` or the data set's ``count / n``.
    privacy_risk : float or None
        The part of ``bayes_risk`` that privacy adds (squared loss, Beta prior): ``bayes_risk`` minus
        the sampling risk ``E Var(theta | count)`` (theta) or all of it (proportion). ``None`` otherwise.
    worst_risk : float or None
        The largest mean squared error over data sets (squared loss, Beta prior): over ``theta`` in
        ``[0, 1]`` (theta, located by optimisation) or over the counts (proportion). ``None`` otherwise.
    interval : tuple of float or None
        Estimand ``"proportion"``: ``((z - k) / n, (z + k) / n)`` clipped to ``[0, 1]`` around the noisy count
        ``z``, which covers the data set's ``count / n`` with probability at least ``level`` at every count,
        whatever the prior (prior-free; :func:`dpbayes.choosing.candidates.prior_free_interval`). When it covers
        all of ``[0, 1]`` the release warns (:class:`UninformativeIntervalWarning`). ``None`` for ``"theta"``:
        an interval for the data set's proportion would not cover ``theta``, whose sampling error it omits.
    level : float
        The interval's guaranteed coverage.
    neighbours : str
        The neighbour relation of the guarantee: ``"replace-one"`` (the only one this release takes).
    """

    estimate: float
    noisy_count: int
    n: int
    epsilon: float
    epsilon_spent: float
    loss: str
    bayes_risk: float
    estimand: str = "proportion"
    privacy_risk: float | None = None
    worst_risk: float | None = None
    interval: tuple[float, float] | None = None
    level: float = 0.9
    neighbours: str = REPLACE_ONE


class OptimalProportionRelease:
    """The optimal epsilon-DP Bayes estimate of a proportion, released through OpenDP.

    Model (UBaPP paper, Section 5.3, chapter 1): ``n`` records, each 1 with probability
    ``theta``; the confidential statistic is their count ``c`` in ``{0..n}``; the prior on
    ``theta`` is ``Beta(a, b)`` or a distribution on a grid. The release is

    1. ``z = clamp(c + G, 0, n)`` with ``G`` OpenDP's two-sided geometric noise of scale ``1/epsilon``
       (the truncated geometric mechanism, :func:`dpbayes.core.geometric.truncated_geometric_logmatrix`);
    2. ``estimate = remap[z]``, the estimate of least posterior expected loss given ``z``
       (chapter 1's exact solver, :func:`dpbayes.ubapp.optimal.ubapp_exact`).

    Chapter 1 shows numerically (not by proof) that this equals the optimum of the UBaPP linear
    program (11) for the binomial likelihood with squared or absolute loss: no epsilon-DP mechanism
    has a smaller Bayes risk.

    Everything except the noise is computed once here, without the ``(n + 1)^2`` law: ``O(n)`` time
    and memory for the Beta prior and squared loss (:func:`dpbayes.ubapp.optimal.beta_posterior_mean_remap`),
    ``O(n + sqrt(n) / epsilon)`` time and memory for absolute loss
    (:func:`dpbayes.ubapp.median_remap.beta_posterior_median_remap`), ``O(n M)`` time and ``O(n + M)`` memory for a grid prior
    of ``M`` points (:func:`dpbayes.ubapp.optimal.ubapp_exact`). Each :meth:`release` costs one OpenDP draw.

    Parameters
    ----------
    n : int
        Number of records (public), ``1 <= n <= MAX_N`` (``10**7``, a memory bound).
    epsilon : float
        Privacy parameter, a real number in ``[MIN_EPS, MAX_EPS] = [1e-9, 20]``.
    loss : {"squared", "absolute"}
        Loss of the Bayes remap and of ``bayes_risk``.
    prior : tuple of float, optional
        ``(a, b)`` of the Beta prior (both ``> 0``); ``None`` (default) is ``(1, 1)``, uniform. With
        ``theta_grid`` and no ``prior_weights``, this Beta is discretised on the grid; giving both
        ``prior`` and ``prior_weights`` is refused.
    theta_grid : array_like, optional
        Strictly increasing values in ``[0, 1]``: the prior lives on (and the estimate is chosen
        from) this grid, as in the paper's LP. ``None``: continuous ``theta``.
    prior_weights : array_like, optional
        Prior probabilities on ``theta_grid`` (non-negative, summing to 1).
    estimand : {"proportion", "theta"}
        ``"proportion"`` (default): the data set's own ``count / n``, estimated by ``E[count | z] / n``
        (squared loss and a Beta prior only; other losses and grid priors need ``"theta"``). ``"theta"``
        (chapter 1's estimand): the population parameter of which the records are a sample, estimated by
        ``E[theta | z]`` or its median; it shrinks towards the prior mean far more, and about ``count / n``
        it is worse than the plain clamped geometric count for most counts at ``n = 526``, ``epsilon = 1`` and a
        uniform prior (chapter 5).
    level : float
        Coverage of the prior-free interval (estimand ``"proportion"``), in ``(0, 1)``.
    neighbours : {"replace-one"}
        The neighbour relation of the guarantee (:mod:`dpbayes.core.neighbours`). ``"add-remove"`` is
        refused: the proportion divides by the data set's own size, which that relation keeps confidential
        (release the count with :func:`release_count_geometric` and ``neighbours="add-remove"`` instead).

    Notes
    -----
    Privacy guarantee: epsilon-differential privacy for data sets of ``n`` records differing in one
    record replaced (``n`` public; the count moves by at most 1). Step 1 is OpenDP's geometric measurement, whose
    privacy map at distance 1 is checked to be ``<= epsilon`` (:func:`opendp_measurement`); clamping,
    the remap and the interval are post-processing. The exact privacy loss of the output law is ``epsilon``
    (:meth:`output_law`; tested with :mod:`dpbayes.core.audit`). Uses ``dp.enable_features("contrib")``.
    """

    def __init__(
        self,
        n: int,
        epsilon: float,
        *,
        loss: str = "squared",
        prior: tuple[float, float] | None = None,
        theta_grid: ArrayLike | None = None,
        prior_weights: ArrayLike | None = None,
        estimand: str = "proportion",
        level: float = 0.9,
        neighbours: str = REPLACE_ONE,
    ) -> None:
        self.n = check_int("n", n, minimum=1, maximum=MAX_N)
        self.epsilon = _check_eps(epsilon)
        self.loss = check_choice("loss", loss, LOSSES)
        self.estimand = check_choice("estimand", estimand, PROPORTION_ESTIMANDS)
        if self.estimand == "proportion" and (self.loss != "squared" or theta_grid is not None):
            raise ValueError(
                "estimand='proportion' (the default) is available for squared loss and a Beta prior (no theta_grid); "
                "for absolute loss or a grid prior pass estimand='theta' (the population parameter)"
            )
        self.level = _check_level(level)
        self.neighbours = check_neighbours(neighbours)
        if self.neighbours != REPLACE_ONE:
            raise ValueError(
                "neighbours='add-remove' is not available for a proportion: count / n divides by the data set's size, "
                "which that relation keeps confidential; release the count with release_count_geometric(..., "
                "neighbours='add-remove') and a public bound on n"
            )
        if prior is not None and prior_weights is not None:
            raise ValueError("give prior or prior_weights, not both (prior_weights replaces the Beta prior)")
        pair = (1.0, 1.0) if prior is None else prior
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise TypeError(f"prior must be a pair (a, b) of numbers > 0, got {prior!r}")
        a = float(check_positive("prior[0]", pair[0]))
        b = float(check_positive("prior[1]", pair[1]))
        if self.estimand == "theta" and (a + b) / (a + b + self.n) > PRIOR_SHARE_MAX:
            raise ValueError(
                f"prior is worth a + b = {a + b:g} records against n = {self.n}: the estimate would be more than "
                f"{PRIOR_SHARE_MAX:.1%} prior and ignore the data (use a weaker prior)"
            )
        self._beta = (a, b) if theta_grid is None else None
        self._risks: tuple[float, float] | None = None
        if theta_grid is None:
            if prior_weights is not None:
                raise ValueError("prior_weights needs theta_grid (the grid the weights live on)")
            self._init_beta(a, b)
        else:
            theta = check_grid("theta_grid", theta_grid, low=0.0, high=1.0)
            if theta.size < 2:
                raise ValueError("theta_grid must have at least 2 points (a one-point prior ignores the data)")
            if prior_weights is None:
                weights = beta_prior_on_grid(theta, a, b)
            else:
                if isinstance(prior_weights, (str, bytes)):
                    raise TypeError(f"prior_weights must be an array of probabilities, got {prior_weights!r}")
                try:
                    weights = check_distribution("prior_weights", np.asarray(prior_weights, dtype=float), shape=theta.shape)
                except (TypeError, ValueError) as exc:
                    if str(exc).startswith("prior_weights"):
                        raise
                    raise TypeError(f"prior_weights must be an array of probabilities, got {prior_weights!r}") from exc
            if float(np.max(weights)) >= 1.0 - 1e-15:
                raise ValueError("prior_weights put all their mass on one point (a prior certain of theta ignores the data)")
            sol = ubapp_exact(self.n, self.epsilon, theta_grid=theta, prior=weights, loss=self.loss)
            self.estimates = theta[sol.info["remap"]]
            self.bayes_risk = float(sol.risk)
        # built last: a bad argument above fails before OpenDP is touched
        self.half_width = estimator_choice.prior_free_half_width(self.epsilon, self.level)
        self._measurement = opendp_measurement("geometric", self.epsilon, self.n)
        self.epsilon_spent = float(self._measurement.map(1))

    def _init_beta(self, a: float, b: float) -> None:
        if self.estimand == "proportion":
            try:
                # chunk by chunk: only the prior's weights and the estimates are arrays of n + 1 numbers
                shift, self.bayes_risk, worst = estimator_choice.geometric_bayes_proportion_summary(self.n, self.epsilon, (a, b))
            except FloatingPointError:  # a prior far from some counts: the one-array path, in log space there
                bias, msd = estimator_choice.candidate_moments("geometric-bayes", self.n, self.epsilon, (a, b), "proportion")
                shift = estimator_choice._geometric_count_posterior_mean(betabinom_logpmf(np.arange(self.n + 1.0), self.n, a, b), self.epsilon)
                self.bayes_risk, worst = estimator_choice.bayes_risk(bias, msd, (a, b), "proportion"), float(np.max(msd))
            for lo in range(0, self.n + 1, KERNEL_CHUNK):  # (z + shift) / n in place, without a second array
                hi = min(lo + KERNEL_CHUNK, self.n + 1)
                shift[lo:hi] = (np.arange(lo, hi) + shift[lo:hi]) / self.n
            self.estimates = shift
            self._risks = (self.bayes_risk, worst)
            return
        if self.loss == "squared":
            self.estimates, self.bayes_risk, _ = beta_posterior_mean_remap(self.n, self.epsilon, a, b, with_p_z=False)
        else:
            # absolute loss, continuous theta: posterior median of the Beta mixture given z, and the
            # exact risk sum_z sum_y P(z, y) E[|theta - m_z| | y] (theta | y ~ Beta(a + y, b + n - y))
            self.estimates, self.bayes_risk = median_remap.beta_posterior_median_remap(self.n, self.epsilon, a, b)

    def _init_beta_dense(self, a: float, b: float) -> None:
        """The ``O(n^2)`` reference of :meth:`_init_beta` (tests compare with it; ``n <= OUTPUT_LAW_MAX_N``)."""
        if self.n > OUTPUT_LAW_MAX_N:
            raise ValueError(f"the dense reference needs n <= {OUTPUT_LAW_MAX_N}, got {self.n}")
        if self.loss == "squared":
            from dpbayes.ubapp.optimal import ubapp_exact_dense

            sol = ubapp_exact_dense(self.n, self.epsilon, beta_prior=(a, b))
            self.estimates = np.asarray(sol.estimates, dtype=float)
            self.bayes_risk = float(sol.risk)
            return
        y = np.arange(self.n + 1, dtype=float)
        joint = np.exp(truncated_geometric_logmatrix(self.n, self.epsilon)) * stats.betabinom.pmf(y, self.n, a, b)[None, :]
        alpha, beta = a + y, b + self.n - y
        est = np.empty(self.n + 1)
        risk = 0.0
        for z in range(self.n + 1):
            w = joint[z] / joint[z].sum()
            est[z] = median_remap.beta_mixture_median(w, alpha, beta)
            risk += float(joint[z] @ median_remap.beta_abs_deviation(alpha, beta, est[z]))
        self.estimates = est
        self.bayes_risk = risk

    def output_law(self) -> NDArray[np.float64]:
        """Exact law of the released noisy count: ``M[c, z] = P(z | count c)``, shape ``(n + 1, n + 1)``.

        Rows are inputs (as :func:`dpbayes.core.audit.exact_privacy_loss` expects); the estimate is
        ``estimates[z]``, so this is the law of the whole release. A dense matrix, for small
        releases only (the privacy audit's exact loss): ``n <= OUTPUT_LAW_MAX_N`` (5000, 200 MB).
        """
        if self.n > OUTPUT_LAW_MAX_N:
            raise ValueError(
                f"output_law() is a dense (n + 1) x (n + 1) matrix, available for n <= {OUTPUT_LAW_MAX_N}, got n = {self.n}"
            )
        return np.exp(truncated_geometric_logmatrix(self.n, self.epsilon)).T

    def release(self, count: int) -> ProportionRelease:
        """Release the proportion for a confidential ``count`` in ``[0, n]`` (one OpenDP draw).

        Each call spends ``epsilon`` (see the class notes on composition).
        """
        count = _check_count(count, self.n)
        # Up to CONSTANT_TIME_MAX_N OpenDP's bounded sampler already returns values in [0, n]; above,
        # the unbounded draw is clamped here. Clamping is post-processing, and clamped two-sided
        # geometric noise is the truncated geometric law (output_law) whatever the sampler does at the bounds.
        z = int(min(max(int(self._measurement(count)), 0), self.n))
        privacy_risk, worst_risk = self.risks() if self._beta is not None and self.loss == "squared" else (None, None)
        interval = None
        if self.estimand == "proportion":
            k = self.half_width
            interval = (max(z - k, 0) / self.n, min(z + k, self.n) / self.n)
            if interval == (0.0, 1.0):
                _warn_uninformative(self.level, self.n, self.epsilon, k, "proportion in [0, 1]")
        return ProportionRelease(
            estimate=float(self.estimates[z]), noisy_count=z, n=self.n, epsilon=self.epsilon, epsilon_spent=self.epsilon_spent,
            loss=self.loss, bayes_risk=self.bayes_risk, estimand=self.estimand, privacy_risk=privacy_risk,
            worst_risk=worst_risk, interval=interval, level=self.level, neighbours=self.neighbours,
        )

    def risks(self) -> tuple[float, float]:
        """``(privacy_risk, worst_risk)`` of squared loss with a Beta prior (see :class:`ProportionRelease`).

        Computed exactly on first use in ``O(n)`` (:mod:`dpbayes.choosing.candidates`; the theta worst case adds
        201 binomial windows and a bounded Brent search) and kept; they depend on ``n``, ``epsilon`` and the
        prior only, never on a count.
        """
        if self._beta is None or self.loss != "squared":
            raise ValueError("privacy and worst-case risks are computed for squared loss and a Beta prior (no theta_grid)")
        if self._risks is None:  # estimand "theta" (the proportion's are computed with the estimates)
            sampling = estimator_choice.theta_sampling_risk(self.n, *self._beta)
            # the moments of this remap, chunk by chunk: two arrays of n + 1 numbers beside the estimates
            bias, msd = estimator_choice.geometric_bayes_theta_moments(self.estimates, self.epsilon)
            self._risks = (self.bayes_risk - sampling, estimator_choice.worst_theta_risk(bias, msd)[1])
        return self._risks


def release_proportion(
    count: int,
    n: int,
    epsilon: float,
    *,
    loss: str = "squared",
    prior: tuple[float, float] | None = None,
    theta_grid: ArrayLike | None = None,
    prior_weights: ArrayLike | None = None,
    estimand: str = "proportion",
    level: float = 0.9,
    neighbours: str = REPLACE_ONE,
) -> ProportionRelease:
    """Release ``count / n`` once with the optimal epsilon-DP Bayes mechanism (chapter 1).

    Shorthand for ``OptimalProportionRelease(n, epsilon, ...).release(count)``; see that class for
    the parameters, the model and the optimality claim (UBaPP paper, LP (11); chapter 1).

    Parameters
    ----------
    count : int
        The confidential count, ``0 <= count <= n``.
    n, epsilon, loss, prior, theta_grid, prior_weights, estimand, level, neighbours
        As in :class:`OptimalProportionRelease`: by default the data set's own ``count / n`` (estimand
        ``"proportion"``) with a flat prior, squared error and a prior-free 90 % interval.

    Returns
    -------
    ProportionRelease
        The estimate, the released noisy count, ``epsilon``, the exact risks and the interval.

    Notes
    -----
    Privacy guarantee: epsilon-DP with respect to one record of the ``n`` replaced, ``n`` public (OpenDP
    geometric noise on the count, then post-processing). Uses ``dp.enable_features("contrib")``. Every
    call spends ``epsilon`` again.
    """
    n = check_int("n", n, minimum=1, maximum=MAX_N)
    _check_count(count, n)
    return OptimalProportionRelease(
        n, epsilon, loss=loss, prior=prior, theta_grid=theta_grid, prior_weights=prior_weights, estimand=estimand,
        level=level, neighbours=neighbours,
    ).release(count)


# --------------------------------------------------------------------------------------------
# Laplace noise on a count, then Bayes (chapter 4)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CountRelease:
    """One release by :class:`LaplaceCountRelease`.

    Attributes
    ----------
    estimate : float
        Posterior mean or median of the count given the noisy count.
    noisy_count : float
        The released Laplace-noised count (a float, not clamped).
    n : int
        Number of records.
    epsilon : float
        Privacy parameter of the release.
    epsilon_spent : float
        OpenDP's privacy map at one record (``<= epsilon``).
    estimator : str
        ``"mean"`` or ``"median"``.
    mean_abs_error : float
        Exact ``E|C - estimate|`` under the ``Binomial(n, p)`` prior (Naldi & D'Acquisto eq. (12),
        :func:`dpbayes.counting.metrics.mean_abs_error`): the Bayes risk in absolute loss.
    estimand : str
        ``"count"``.
    loss : str
        ``"absolute"``: the loss of ``bayes_risk`` and ``worst_risk``.
    bayes_risk : float
        The same number as ``mean_abs_error``. All of it is added by privacy (without noise the count
        is known exactly), so it is also the privacy-added risk.
    worst_risk : float or None
        Exact largest ``E[|C - estimate| | C = c]`` over the true counts ``c`` (the known ``p`` pulls the
        estimate towards ``n p``, so it is attained at ``c = 0`` or ``n``); ``None`` above
        :data:`dpbayes.choosing.candidates.LAPLACE_ABS_MAX_N`.
    neighbours : str
        The neighbour relation of the guarantee (``"replace-one"`` or ``"add-remove"``).
    """

    estimate: float
    noisy_count: float
    n: int
    epsilon: float
    epsilon_spent: float
    estimator: str
    mean_abs_error: float
    estimand: str = "count"
    loss: str = "absolute"
    worst_risk: float | None = None
    neighbours: str = REPLACE_ONE

    @property
    def bayes_risk(self) -> float:
        """The Bayes risk in absolute loss (``mean_abs_error``), all of it added by privacy."""
        return self.mean_abs_error


class LaplaceCountRelease:
    """A count released with OpenDP's Laplace measurement, then the Bayes estimate (chapter 4).

    Model (Naldi & D'Acquisto, eqs. (1), (8)): the count ``C`` of ``n`` records is
    ``Binomial(n, p)`` a priori; the release is ``y = C + Laplace(1/epsilon)`` drawn by OpenDP and the
    estimate is the posterior mean (eq. (11), :func:`dpbayes.counting.model.bayes_estimate`) or median
    (:func:`dpbayes.counting.model.posterior_median`, the Bayes estimate for absolute error).

    Parameters
    ----------
    n : int
        Number of records (public), ``1 <= n <= 10**7`` (:data:`dpbayes.counting.model.MAX_N`).
    epsilon : float
        Privacy parameter, ``> 0``.
    p : float
        Prior probability that a record counts, in ``(0, 1)``. It must be known from outside the data:
        a guessed ``p`` far from the truth makes the estimate worse than the noisy count itself (chapter
        4, "wrong prior"). Without a trusted ``p`` use :class:`GeometricCountRelease`, prior-free or with a
        Beta prior on ``p``.
    estimator : {"mean", "median"}
        Posterior summary reported as the estimate.
    neighbours : {"replace-one", "add-remove"}
        The neighbour relation of the guarantee (:mod:`dpbayes.core.neighbours`). Under ``"add-remove"``
        ``n`` must be public (a known or bounded size, never ``len(data)``): the noisy count is not clamped,
        so its law depends on the count only and the guarantee holds, but the prior and the risks then
        assume exactly ``n`` records.

    Notes
    -----
    Privacy guarantee: epsilon-differential privacy for data sets differing in one record, replaced (``n``
    public) or, with ``neighbours="add-remove"``, added or removed; the count moves by at most 1 under
    either relation: OpenDP's Laplace measurement on floats, privacy map at distance 1 checked
    ``<= epsilon``; the estimate is post-processing of the noisy count and the public ``n`` and ``p``
    (:meth:`output_log_density`, audited under both relations in ``tests/release/test_statistic.py``).
    Uses ``dp.enable_features("contrib")``. For a count
    geometric noise followed by the same posterior summary (:class:`GeometricCountRelease`) is at least
    as accurate on average over the prior (chapters 4 and 5 measure by how much).
    """

    def __init__(self, n: int, epsilon: float, *, p: float, estimator: str = "mean", neighbours: str = REPLACE_ONE) -> None:
        self.n = check_int("n", n, minimum=1, maximum=counting.MAX_N)
        self.epsilon = _check_eps(epsilon)
        self.p = _check_open_probability("p", p)
        self.estimator = check_choice("estimator", estimator, LAPLACE_ESTIMATORS)
        self.neighbours = check_neighbours(neighbours)
        self._measurement = opendp_measurement("laplace", self.epsilon)
        self.epsilon_spent = float(self._measurement.map(1.0))
        self._mae: float | None = None
        self._worst: tuple[float | None] | None = None

    def output_log_density(self, counts: ArrayLike, noisy: ArrayLike) -> NDArray[np.float64]:
        """``log f(noisy | count)`` of the released noisy count, rows ``counts``, columns ``noisy``.

        The Laplace density of scale ``1/epsilon`` centred at the count (what :meth:`release` draws; the
        estimate is a function of it). It depends on the count only, not on the number of records.
        """
        c = np.asarray(counts, dtype=float)[:, None]
        y = np.asarray(noisy, dtype=float)[None, :]
        return np.log(self.epsilon / 2.0) - self.epsilon * np.abs(y - c)

    @property
    def worst_risk(self) -> float | None:
        """Exact largest ``E[|C - estimate| | C = c]`` over the counts ``c = 0..n`` (computed on first use,
        :func:`dpbayes.choosing.candidates.candidate_abs_risk`); ``None`` for ``n`` above
        :data:`dpbayes.choosing.candidates.LAPLACE_ABS_MAX_N`."""
        if self._worst is None:
            if self.n > estimator_choice.LAPLACE_ABS_MAX_N:
                self._worst = (None,)
            else:
                name = "laplace-bayes" if self.estimator == "mean" else "laplace-median"
                per_count = estimator_choice.candidate_abs_risk(
                    name, self.n, self.epsilon, estimator_choice.CountPrior.binomial(self.p)) * self.n
                self._worst = (float(np.max(per_count)),)
        return self._worst[0]

    @property
    def bayes_risk(self) -> float:
        """The Bayes risk in absolute loss: :attr:`mean_abs_error`."""
        return self.mean_abs_error

    @property
    def mean_abs_error(self) -> float:
        """Exact ``E|C - estimate|`` (computed on first use, over the prior's effective support:
        ``O(sqrt(n p (1 - p)) + log(n) / epsilon)``, :func:`dpbayes.counting.metrics.mean_abs_error`)."""
        if self._mae is None:
            self._mae = counting_metrics.mean_abs_error(self.estimator, self.n, self.p, self.epsilon)
        return self._mae

    def release(self, count: int) -> CountRelease:
        """Release a confidential ``count`` in ``[0, n]`` once (one OpenDP draw, spends ``epsilon``)."""
        count = _check_count(count, self.n)
        y = float(self._measurement(float(count)))
        # the posterior's cumulative sums over the counts that carry it given y: O(sqrt(n) + 1/epsilon)
        post = counting._Posterior.build(self.n, self.p, self.epsilon, around=y)
        estimate = post.mean(np.asarray(y)) if self.estimator == "mean" else post.median(np.asarray(y))
        return CountRelease(
            estimate=float(estimate), noisy_count=y, n=self.n, epsilon=self.epsilon,
            epsilon_spent=self.epsilon_spent, estimator=self.estimator, mean_abs_error=self.mean_abs_error,
            worst_risk=self.worst_risk, neighbours=self.neighbours,
        )


def release_count_laplace(
    count: int, n: int, epsilon: float, *, p: float, estimator: str = "mean", neighbours: str = REPLACE_ONE,
) -> CountRelease:
    """Release a count once with OpenDP's Laplace noise and report its Bayes estimate (chapter 4).

    Shorthand for ``LaplaceCountRelease(n, epsilon, p=p, estimator=estimator, neighbours=neighbours).release(count)``.

    Parameters
    ----------
    count : int
        The confidential count, ``0 <= count <= n``.
    n, epsilon, p, estimator, neighbours
        As in :class:`LaplaceCountRelease`.

    Returns
    -------
    CountRelease

    Notes
    -----
    Privacy guarantee: epsilon-DP with respect to one record replaced or, with ``neighbours="add-remove"``,
    added or removed (Laplace noise of scale ``1/epsilon`` on a sensitivity-1 count, drawn by OpenDP; the
    estimate is post-processing). Uses ``dp.enable_features("contrib")``.
    """
    n = check_int("n", n, minimum=1, maximum=counting.MAX_N)
    _check_count(count, n)
    return LaplaceCountRelease(n, epsilon, p=p, estimator=estimator, neighbours=neighbours).release(count)


# --------------------------------------------------------------------------------------------
# Geometric noise on a count: prior-free, or with a prior on p (chapter 5)
# --------------------------------------------------------------------------------------------

#: Estimators of :class:`GeometricCountRelease`: the noisy count itself, its minimax remap, or the posterior mean or median.
COUNT_ESTIMATORS = ("none", "minimax", "mean", "median")
#: Estimators of :class:`GeometricCountRelease` without a prior (the others need one).
PRIOR_FREE_COUNT_ESTIMATORS = ("none", "minimax")


@dataclass(frozen=True)
class GeometricCountReleaseResult:
    """One release by :class:`GeometricCountRelease` (estimand: the data set's count).

    Attributes
    ----------
    estimate : float
        The released count (``estimator="none"``), its minimax remap, or its posterior mean / median given it.
    noisy_count : int
        OpenDP's geometric-noised count, clamped to ``{0..n}``.
    interval : tuple of int
        ``(noisy_count - k, noisy_count + k)`` clipped to ``[0, n]``: covers the true count with
        probability at least ``level`` at every count, whatever the prior (prior-free). When it covers
        all of ``[0, n]`` the release warns (:class:`UninformativeIntervalWarning`).
    level : float
        The interval's guaranteed coverage.
    n, epsilon, epsilon_spent, estimator, neighbours
        As the mechanism's.
    loss : {"squared", "absolute"}
        Loss of the risks: squared for ``"none"``, ``"minimax"`` and ``"mean"``, absolute for ``"median"``.
    bayes_risk : float or None
        Exact risk averaged over the prior (``None`` without a prior). All of it is added by privacy: the
        count is known without noise.
    worst_risk : float
        Exact largest risk over the true counts.
    estimand : str
        ``"count"``.
    """

    estimate: float
    noisy_count: int
    interval: tuple[int, int]
    level: float
    n: int
    epsilon: float
    epsilon_spent: float
    estimator: str
    loss: str
    bayes_risk: float | None
    worst_risk: float
    estimand: str = "count"
    neighbours: str = REPLACE_ONE


class GeometricCountRelease:
    """A count released with OpenDP's geometric noise, clamped to ``{0..n}``, then optionally a Bayes estimate.

    The mechanism is the truncated geometric mechanism (Ghosh, Roughgarden & Sundararajan 2009), the
    one whose Bayes post-processing reaches the optimum of the linear program over all epsilon-DP
    estimators (chapters 1, 2 and 4 certify it; chapter 5 compares the candidates).

    Parameters
    ----------
    n : int
        Number of records (public), ``1 <= n <= MAX_N``; under ``neighbours="add-remove"`` a public upper
        bound on the number of records (never ``len(data)``: the data set's size is then confidential).
    epsilon : float
        Privacy parameter in ``[MIN_EPS, MAX_EPS]``.
    estimator : {"none", "minimax", "mean", "median"}
        ``"none"``: the clamped noisy count itself (prior-free; chapter 5 shows where it is within a few
        per cent of the optimum). ``"minimax"``: the remap of it with the smallest worst mean squared error
        over the counts ``0..n`` (prior-free; Gupte & Sundararajan 2010;
        :func:`dpbayes.choosing.candidates.minimax_certificate`). ``"mean"`` / ``"median"``: the posterior
        mean / median of the count (the Bayes estimates for squared / absolute error).
    prior : (a, b) or float, optional
        Needed by ``"mean"`` and ``"median"``; allowed with ``"none"`` (it then only sets ``bayes_risk``).
        A pair ``(a, b)``: ``p ~ Beta(a, b)`` and the count Beta-binomial (``(1, 1)``: flat, every count
        equally likely; ``(0.5, 0.5)``: Jeffreys) -- the choice for an unknown ``p``. A float ``p`` in
        ``(0, 1)``: the count is ``Binomial(n, p)`` with ``p`` known from outside the data.
    level : float
        Coverage of the prior-free interval, in ``(0, 1)``.
    neighbours : {"replace-one", "add-remove"}
        The neighbour relation of the guarantee (:mod:`dpbayes.core.neighbours`). ``"add-remove"`` takes the
        prior-free estimators only (a prior on the count of ``n`` records assumes ``n`` records).

    Notes
    -----
    Privacy guarantee: epsilon-DP for data sets of ``n`` records differing in one record (replace one;
    ``n`` public), and with ``neighbours="add-remove"`` epsilon-DP for data sets of at most ``n`` records, one
    record added or removed: a count moves by at most 1 under either relation, OpenDP's geometric
    measurement has privacy map at distance 1 checked ``<= epsilon``, and the clamp to the public ``{0..n}``,
    the estimate and the interval are post-processing. The output law depends on the count only
    (:meth:`output_log_law`), which ``tests/release/test_statistic.py`` audits exactly under both relations.
    Uses ``dp.enable_features("contrib")``.
    """

    n: int
    epsilon: float
    estimator: str
    level: float
    neighbours: str
    half_width: int
    epsilon_spent: float
    _measurement: Any

    def __init__(
        self, n: int, epsilon: float, *, estimator: str = "none", prior: Any = None, level: float = 0.9,
        neighbours: str = REPLACE_ONE,
    ) -> None:
        self.n = check_int("n", n, minimum=1, maximum=MAX_N)
        self.epsilon = _check_eps(epsilon)
        self.estimator = check_choice("estimator", estimator, COUNT_ESTIMATORS)
        self.level = _check_level(level)
        self.neighbours = check_neighbours(neighbours)
        if self.neighbours == ADD_REMOVE and self.estimator not in PRIOR_FREE_COUNT_ESTIMATORS:
            raise ValueError(
                f"estimator={self.estimator!r} is not available for neighbours='add-remove': allowed "
                f"{', '.join(map(repr, PRIOR_FREE_COUNT_ESTIMATORS))} (a prior on the count assumes a known number of records)"
            )
        if prior is None:
            if self.estimator not in PRIOR_FREE_COUNT_ESTIMATORS:
                raise ValueError(f"estimator={self.estimator!r} needs a prior: (a, b) for p ~ Beta(a, b) (unknown p; (1, 1) is flat) or p")
            self.prior: estimator_choice.CountPrior | None = None
        elif isinstance(prior, (tuple, list)):
            if len(prior) != 2:
                raise TypeError(f"prior must be a pair (a, b) of numbers > 0 or a probability p, got {prior!r}")
            self.prior = estimator_choice.CountPrior.beta(check_positive("prior[0]", prior[0]), check_positive("prior[1]", prior[1]))
        elif isinstance(prior, numbers.Real) and not isinstance(prior, (bool, np.bool_)):
            self.prior = estimator_choice.CountPrior.binomial(float(prior))
        else:
            raise TypeError(f"prior must be a pair (a, b) of numbers > 0 or a probability p, got {prior!r}")
        self.half_width = estimator_choice.prior_free_half_width(self.epsilon, self.level)
        self._measurement = opendp_measurement("geometric", self.epsilon, self.n)
        self.epsilon_spent = float(self._measurement.map(1))
        self._risks: tuple[float | None, float] | None = None

    @property
    def loss(self) -> str:
        return "absolute" if self.estimator == "median" else "squared"

    def _log_posterior(self, z: int) -> NDArray[np.float64]:
        assert self.prior is not None
        c = np.arange(self.n + 1)
        lp = self.prior.log_weights(self.n) - self.epsilon * np.abs(c - z)
        return lp - special.logsumexp(lp)

    def estimate_of(self, z: int) -> float:
        """The estimate for a released noisy count ``z`` (post-processing: public input only)."""
        z = check_int("z", z, minimum=0, maximum=self.n)
        if self.estimator == "none":
            return float(z)
        if self.estimator == "minimax":
            return float(self.n * self._minimax_remap()[z])
        # given z the truncated geometric likelihood is proportional to a^|z - c| (its row factor does not depend on c)
        post = np.exp(self._log_posterior(z))
        if self.estimator == "mean":
            return float(post @ np.arange(self.n + 1))
        return float(np.searchsorted(np.cumsum(post), 0.5 - 1e-12))

    def _minimax_remap(self) -> NDArray[np.float64]:
        # the remap of z / n for the proportion; on the count scale times n (squared error scales by n^2)
        return np.asarray(estimator_choice.minimax_certificate(self.n, self.epsilon, "proportion", "squared").remap)

    def output_log_law(self) -> NDArray[np.float64]:
        """``log P(noisy_count = z | count = c)``, rows ``c = 0..n``, columns ``z = 0..n``: the clamped geometric law.

        What :meth:`release` draws (OpenDP's geometric noise, then the clamp to ``{0..n}``); it depends on
        the count only, not on the number of records, so it is private under add/remove as well when ``n``
        is a public bound. Dense: ``n <= OUTPUT_LAW_MAX_N``.
        """
        if self.n > OUTPUT_LAW_MAX_N:
            raise ValueError(
                f"output_log_law() is a dense (n + 1) x (n + 1) matrix, available for n <= {OUTPUT_LAW_MAX_N}, got n = {self.n}"
            )
        return clamped_geometric_logmatrix(np.arange(self.n + 1), 0, self.n, self.epsilon)

    def risks(self) -> tuple[float | None, float]:
        """``(bayes_risk, worst_risk)`` in the mechanism's loss, on the count scale (see the result's fields).

        Exact at every ``n`` in ``O(n log n)``: squared error from the candidates' error moments, absolute error
        of the posterior median from partial sums against the truncated geometric law
        (:func:`dpbayes.choosing.candidates.candidate_abs_risk`; ``tests/release/test_statistic.py`` checks it
        against the dense law). The plain count without a prior, when ``n`` is at least twice
        :func:`dpbayes.choosing.minimax_bound.tail_width`: its worst risk in ``O(1 / epsilon)``
        (:func:`dpbayes.choosing.minimax_bound.clamped_geometric_worst_risk`, tested against the ``O(n)`` value).
        """
        if self._risks is None:
            n = self.n
            pr = self.prior if self.prior is not None else estimator_choice.CountPrior.beta(1.0, 1.0)
            # far more records than 1 / epsilon: the plain count's worst risk in O(1 / epsilon), the same number
            worst_far = (minimax_bound.clamped_geometric_worst_risk(n, self.epsilon)
                         if self.estimator == "none" and self.prior is None else None)
            if worst_far is not None:
                self._risks = (None, worst_far)
            elif self.estimator in ("none", "minimax", "mean"):
                name = {"none": "geometric", "minimax": "geometric-minimax", "mean": "geometric-bayes"}[self.estimator]
                bias, msd = estimator_choice.candidate_moments(name, n, self.epsilon, pr, "proportion")
                bayes = None if self.prior is None else estimator_choice.bayes_risk(bias, msd, self.prior, "proportion") * n**2
                self._risks = (bayes, float(np.max(msd)) * n**2)
            else:
                per_count = estimator_choice.candidate_abs_risk("geometric-median", n, self.epsilon, pr) * n
                self._risks = (float(pr.weights(n) @ per_count), float(np.max(per_count)))
        return self._risks

    def release(self, count: int) -> GeometricCountReleaseResult:
        """Release a confidential ``count`` in ``[0, n]`` once (one OpenDP draw, spends ``epsilon``)."""
        count = _check_count(count, self.n)
        z = int(min(max(int(self._measurement(count)), 0), self.n))
        bayes, worst = self.risks()
        k = self.half_width
        if z - k <= 0 and z + k >= self.n:
            _warn_uninformative(self.level, self.n, self.epsilon, k, f"count 0..{self.n}")
        return GeometricCountReleaseResult(
            estimate=self.estimate_of(z), noisy_count=z, interval=(max(z - k, 0), min(z + k, self.n)), level=self.level,
            n=self.n, epsilon=self.epsilon, epsilon_spent=self.epsilon_spent, estimator=self.estimator, loss=self.loss,
            bayes_risk=bayes, worst_risk=worst, neighbours=self.neighbours,
        )


def release_count_geometric(
    count: int, n: int, epsilon: float, *, estimator: str = "none", prior: Any = None, level: float = 0.9,
    neighbours: str = REPLACE_ONE,
) -> GeometricCountReleaseResult:
    """Release a count once with OpenDP's clamped geometric noise (chapter 5).

    Shorthand for ``GeometricCountRelease(n, epsilon, estimator=estimator, prior=prior, level=level,
    neighbours=neighbours).release(count)``.

    Notes
    -----
    Privacy guarantee: epsilon-DP with respect to one record replaced (``n`` public), or with
    ``neighbours="add-remove"`` one record added or removed (``n`` a public bound on the number of
    records, not the data's own size); everything after the noise is post-processing. Uses
    ``dp.enable_features("contrib")``. Every call spends ``epsilon`` again.
    """
    n = check_int("n", n, minimum=1, maximum=MAX_N)
    _check_count(count, n)
    return GeometricCountRelease(n, epsilon, estimator=estimator, prior=prior, level=level, neighbours=neighbours).release(count)
