"""Online DP Bayesian estimation of a normal population with SMC (Yildirim 2024).

Individual ``t`` holds ``x_t ~ N(mu, sigma^2)`` and releases only
``y_t = clamp(x_t, l_t, r_t) + (r_t - l_t) V_t`` with ``V_t ~ Laplace(0, 1/eps)`` (paper eqs. (2),
(10)), which is eps-DP for that individual whatever the interval, because the interval is
chosen from the previously *released* values only (paper Proposition 1; post-processing,
Theorem 1). The analyst updates a particle approximation of the posterior after each release
and, in the adaptive scheme, draws one particle ``(m, c)`` from it and asks the next individual
for ``[m + a c, m + b c]`` (paper eqs. (8), (11), Algorithm 3).

Two samplers are implemented, both vectorised over particles:

* :func:`smc_latent` -- the paper's resample-move SMC on ``(theta, x_{1:t})`` (Algorithms 2-4),
  as in the author's MATLAB code: systematic resampling at every step, rejuvenation by one sweep
  over all latent ``x`` (random-walk MH with scale ``3 sigma``, then an independence MH from
  ``N(mu, sigma^2)``) followed by exact Gibbs draws of ``mu`` and ``sigma^2``. Cost
  ``O(N n^2)``.
* :func:`smc_exact` -- an SMC on ``theta`` alone that weights with the exact likelihood
  ``p(y_t | mu, sigma; l_t, r_t, eps)`` (:func:`dpbayes.smc.truncation.loglik_privatised_normal`)
  and resamples/moves only when the effective sample size drops (IBIS, Chopin 2002,
  Biometrika 89(3)). It targets the same marginal posterior of ``theta`` without latent
  variables.

Priors are those of the paper's Section 4.1: ``mu ~ N(0, 10^4)``, ``sigma^2 ~ IG(1, 1)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import gammaln

from dpbayes.smc import _kernels as _smc_kernels, truncation
from dpbayes.core.validation import check_in_range, check_int, check_interval, check_positive, check_rng

__all__ = [
    "NormalInvGammaPrior",
    "SMCResult",
    "systematic_resample",
    "privatise_one",
    "fixed_interval_releases",
    "smc_latent",
    "smc_exact",
    "realised_fisher_information",
    "cramer_rao_sd",
]

Progress = Callable[[int, int], None] | None


@dataclass(frozen=True)
class NormalInvGammaPrior:
    """Independent priors ``mu ~ N(mu_mean, mu_var)`` and ``sigma^2 ~ IG(shape, scale)``.

    Defaults are the paper's Section 4.1 values (``N(0, 10^4)``, ``IG(1, 1)``).
    """

    mu_mean: float = 0.0
    mu_var: float = 1.0e4
    sigma2_shape: float = 1.0
    sigma2_scale: float = 1.0

    def __post_init__(self) -> None:
        check_positive("mu_var", self.mu_var)
        check_positive("sigma2_shape", self.sigma2_shape)
        check_positive("sigma2_scale", self.sigma2_scale)

    def sample(self, size: int, rng: np.random.Generator) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Draw ``size`` pairs ``(mu, sigma^2)`` from the prior."""
        mu = self.mu_mean + np.sqrt(self.mu_var) * rng.standard_normal(size)
        sigma2 = self.sigma2_scale / rng.gamma(self.sigma2_shape, 1.0, size)
        return mu, sigma2

    def logpdf_mu_logsigma(self, mu: ArrayLike, log_sigma: ArrayLike) -> NDArray[np.float64]:
        """Log prior density of ``(mu, u = log sigma)``, Jacobian ``d sigma^2 / d u = 2 sigma^2`` included."""
        mu = np.asarray(mu, dtype=float)
        u = np.asarray(log_sigma, dtype=float)
        # Closed forms (scipy.stats' per-call overhead dominates inside MH loops).
        lp_mu = -0.5 * (mu - self.mu_mean) ** 2 / self.mu_var - 0.5 * np.log(2.0 * np.pi * self.mu_var)
        a, b = self.sigma2_shape, self.sigma2_scale
        lp_s2 = a * np.log(b) - gammaln(a) - (a + 1.0) * 2.0 * u - b * np.exp(-2.0 * u)
        return lp_mu + lp_s2 + np.log(2.0) + 2.0 * u


@dataclass
class SMCResult:
    """Record of one online run.

    Attributes
    ----------
    y, lower, upper : ndarray, shape (n,)
        Released values and the interval each individual was asked for.
    mean_mu, mean_sigma : ndarray, shape (n,)
        Posterior means of ``mu`` and ``sigma`` after each release.
    stored_steps : ndarray of int
        1-based time steps at which the particle cloud was stored.
    stored_mu, stored_sigma, stored_weights : ndarray, shape (len(stored_steps), N)
        The weighted particle clouds at those steps.
    ess : ndarray, shape (n,)
        Effective sample size after each weighting step.
    n_moves : int
        Number of rejuvenation sweeps performed (``smc_exact``: resample-move events).
    acceptance : float
        Mean acceptance rate of the MH moves.
    final_mu, final_sigma, final_weights : ndarray, shape (N,)
        The final weighted particle cloud.
    """

    y: NDArray[np.float64]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]
    mean_mu: NDArray[np.float64]
    mean_sigma: NDArray[np.float64]
    stored_steps: NDArray[np.int64]
    stored_mu: NDArray[np.float64]
    stored_sigma: NDArray[np.float64]
    stored_weights: NDArray[np.float64]
    ess: NDArray[np.float64]
    n_moves: int
    acceptance: float
    final_mu: NDArray[np.float64] = field(repr=False)
    final_sigma: NDArray[np.float64] = field(repr=False)
    final_weights: NDArray[np.float64] = field(repr=False)


class _Trace:
    """Per-step weighted posterior means and ESS, and particle clouds every ``store_every`` steps."""

    def __init__(self, n: int, N: int, store_every: int) -> None:
        self.mean_mu = np.empty(n)
        self.mean_sigma = np.empty(n)
        self.ess = np.empty(n)
        self.steps = np.arange(store_every, n + 1, store_every, dtype=np.int64)
        self.mu = np.empty((self.steps.size, N))
        self.sigma = np.empty((self.steps.size, N))
        self.weights = np.empty((self.steps.size, N))
        self._k = 0

    def record(self, t: int, mu: NDArray[np.float64], sigma: NDArray[np.float64], weights: NDArray[np.float64], ess: float) -> None:
        self.mean_mu[t] = weights @ mu
        self.mean_sigma[t] = weights @ sigma
        self.ess[t] = ess
        if self._k < self.steps.size and t + 1 == self.steps[self._k]:
            self.mu[self._k], self.sigma[self._k], self.weights[self._k] = mu, sigma, weights
            self._k += 1

    def result(self, y: NDArray[np.float64], lower: NDArray[np.float64], upper: NDArray[np.float64], n_moves: int,
               accepted: int, proposed: int, mu: NDArray[np.float64], sigma: NDArray[np.float64],
               weights: NDArray[np.float64]) -> SMCResult:
        return SMCResult(
            y=y, lower=lower, upper=upper, mean_mu=self.mean_mu, mean_sigma=self.mean_sigma,
            stored_steps=self.steps, stored_mu=self.mu, stored_sigma=self.sigma, stored_weights=self.weights,
            ess=self.ess, n_moves=n_moves, acceptance=accepted / proposed if proposed else float("nan"),
            final_mu=mu, final_sigma=sigma, final_weights=weights,
        )


def _logsumexp_1d(a: NDArray[np.float64]) -> float:
    """``scipy.special.logsumexp(a)`` for a 1-D array with a finite maximum, bit for bit, without its
    array-API dispatch (about 0.2 ms a call, once per SMC step): the maxima are taken out of the
    sum, ``log1p(sum(exp(a - max)) / m) + log(m) + max`` with ``m`` maxima, as SciPy computes it
    (checked against SciPy in the tests)."""
    a_max = a.max()
    at_max = a == a_max
    m = float(np.count_nonzero(at_max))
    s = float(np.sum(np.exp(np.where(at_max, -np.inf, a) - a_max)))
    if s != 0.0:
        s = s / m
    return float(np.log1p(s) + np.log(m) + a_max)


def systematic_resample(weights: ArrayLike, rng: np.random.Generator) -> NDArray[np.int64]:
    """Indices of a systematic resampling of normalised ``weights`` (one uniform, ``N`` strata)."""
    w = np.asarray(weights, dtype=float)
    n = w.size
    positions = (rng.uniform() + np.arange(n)) / n
    cdf = np.cumsum(w)
    cdf[-1] = 1.0  # guard against round-off so that every position finds an index
    return np.searchsorted(cdf, positions, side="left").astype(np.int64)


def privatise_one(x: float, lower: float, upper: float, eps: float, rng: np.random.Generator) -> float:
    """Release one value with the truncated Laplace mechanism (paper eq. (10)).

    Privacy: eps-DP for the individual (sensitivity of the clamp is ``upper - lower``).
    Delegates to :func:`dpbayes.smc.truncation.sample_privatised`.
    """
    return float(truncation.sample_privatised(np.asarray([x]), lower, upper, eps, rng)[0])


def _check_common(
    x: ArrayLike,
    eps: float,
    rng: np.random.Generator,
    n_particles: int,
    ab: tuple[float, float] | None,
    fixed_interval: tuple[float, float] | None,
    first_interval: tuple[float, float] | None,
    store_every: int,
) -> tuple[NDArray[np.float64], float, bool]:
    xs = np.asarray(x, dtype=float)
    if xs.ndim != 1 or xs.size == 0 or not np.all(np.isfinite(xs)):
        raise ValueError("x must be a non-empty 1-D array of finite sensitive values")
    eps = check_positive("eps", eps)
    check_rng("rng", rng)
    check_int("n_particles", n_particles, minimum=2)
    check_int("store_every", store_every, minimum=1)
    if (ab is None) == (fixed_interval is None):
        raise ValueError("give exactly one of ab (adaptive truncation) and fixed_interval (nonadaptive)")
    for name, pair in (("ab", ab), ("fixed_interval", fixed_interval), ("first_interval", first_interval)):
        if pair is not None:
            check_interval(name, pair)
    return xs, eps, ab is not None


def _check_noise(noise: ArrayLike | None, n: int) -> NDArray[np.float64] | None:
    if noise is None:
        return None
    arr = np.asarray(noise, dtype=float)
    if arr.shape != (n,) or not np.all(np.isfinite(arr)):
        raise ValueError(f"noise must be a finite array of shape ({n},) (standard Laplace draws), got shape {arr.shape}")
    return arr


def _release(x: float, lower: float, upper: float, eps: float, rng: np.random.Generator, noise: NDArray[np.float64] | None, t: int) -> float:
    # Paper eq. (10); with given standard Laplace noise W, (r - l) W / eps ~ (r - l) Laplace(0, 1/eps).
    if noise is None:
        return privatise_one(x, lower, upper, eps, rng)
    return float(np.clip(x, lower, upper) + (upper - lower) * noise[t] / eps)


def fixed_interval_releases(
    x: ArrayLike, interval: tuple[float, float], eps: float, noise: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Releases of every individual through one fixed interval, from given standard Laplace draws.

    ``y_t = clamp(x_t, l, r) + (r - l) W_t / eps`` (paper eq. (10)), the same numbers
    :func:`smc_latent` and :func:`smc_exact` release with ``fixed_interval`` and ``noise``; lets a
    batch method (``dpbayes.smc.mcmc``) see the nonadaptive releases without running an SMC.

    Returns
    -------
    y, lower, upper : ndarray, shape (n,)
    """
    x = np.asarray(x, dtype=float)
    if noise is None:
        raise ValueError("noise is required: an array of standard Laplace draws, one per individual")
    draws = _check_noise(noise, x.size)
    assert draws is not None  # checked above; narrows the Optional for mypy
    eps = check_positive("eps", eps)
    lower, upper = float(interval[0]), float(interval[1])
    if not lower < upper:
        raise ValueError(f"interval must satisfy lower < upper, got {interval!r}")
    y = np.clip(x, lower, upper) + (upper - lower) * draws / eps
    return y, np.full(x.size, lower), np.full(x.size, upper)


def _interval_from_particle(mu: float, sigma: float, ab: tuple[float, float]) -> tuple[float, float]:
    # Paper eq. (11): location-scale shift of the base interval (a, b).
    return mu + ab[0] * sigma, mu + ab[1] * sigma


def _latent_mh_sweep_numpy(
    cur: NDArray[np.float64],
    cur_lap: NDArray[np.float64],
    mc: NDArray[np.float64],
    sd: NDArray[np.float64],
    sigma2: NDArray[np.float64],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    yy: NDArray[np.float64],
    sl: NDArray[np.float64],
    rw_scale: float,
    rng: np.random.Generator,
) -> int:
    """NumPy reference of :func:`smc_latent`'s two MH moves on every latent ``x``, in place.

    Draws ``standard_normal((N, t))``, ``random((N, t))``, ``standard_normal((N, t))`` and
    ``random((N, t))`` from ``rng`` in that order; :func:`dpbayes.smc._kernels.latent_step` is
    the compiled version (fused with the resampling copy and the row sums) fed with the same draws.
    ``mc`` and ``sd`` have shape ``(N, 1)``.

    Returns
    -------
    int
        Number of accepted proposals.
    """
    N, t = cur.shape
    accepted = 0
    # (i) random-walk MH on every x_k
    prop = cur + (rw_scale * sd) * rng.standard_normal((N, t))
    prop_lap = -sl * np.abs(yy - np.clip(prop, lo, hi))
    log_ratio = ((cur - mc) ** 2 - (prop - mc) ** 2) / (2.0 * sigma2[:, None]) + prop_lap - cur_lap
    acc = np.log(rng.random((N, t))) < log_ratio
    np.copyto(cur, prop, where=acc)
    np.copyto(cur_lap, prop_lap, where=acc)
    accepted += int(acc.sum())
    # (ii) independence MH from N(mu, sigma^2): prior and proposal cancel
    prop = mc + sd * rng.standard_normal((N, t))
    prop_lap = -sl * np.abs(yy - np.clip(prop, lo, hi))
    acc = np.log(rng.random((N, t))) < prop_lap - cur_lap
    np.copyto(cur, prop, where=acc)
    np.copyto(cur_lap, prop_lap, where=acc)
    accepted += int(acc.sum())
    return accepted


def smc_latent(
    x: ArrayLike,
    eps: float,
    rng: np.random.Generator,
    *,
    n_particles: int = 1000,
    ab: tuple[float, float] | None = None,
    fixed_interval: tuple[float, float] | None = None,
    first_interval: tuple[float, float] | None = None,
    prior: NormalInvGammaPrior = NormalInvGammaPrior(),
    rw_scale: float = 3.0,
    store_every: int = 20,
    noise: ArrayLike | None = None,
    progress: Progress = None,
    init: str | tuple[float, float] = "prior",
    rejuvenate: int | None = None,
) -> SMCResult:
    """Paper's SMC with latent ``x`` (Algorithms 2 and 4; Algorithm 3 when adaptive).

    At each step ``t``: resample systematically with the weights of step ``t - 1``; choose the
    interval for individual ``t`` (adaptive: from one particle drawn uniformly after resampling,
    eq. (8) and (11); the first interval is ``first_interval`` or ``ab`` itself, i.e. the
    standard normal's optimum centred at 0); privatise ``x_t``; rejuvenate every particle with
    one MH sweep over ``x_{1:t-1}`` (random walk of scale ``rw_scale * sigma``, then an
    independence proposal from ``N(mu, sigma^2)``) and Gibbs draws ``mu | x, sigma^2`` and
    ``sigma^2 | x, mu``; propagate ``x_t ~ N(mu, sigma^2)``; weight by
    ``Laplace(y_t - clamp(x_t); (r_t - l_t)/eps)`` (Algorithm 2).

    With numba (``dpbayes.smc._kernels``) one compiled kernel per step does the resampling copy
    of the latent ``x`` (double-buffered: two more ``N x n`` arrays), the sweep and the row sums of
    the Gibbs draws; its results are bit for bit those of the NumPy path (the same ``rng`` calls in
    the same order; compared with ``np.array_equal`` in ``tests/smc/test_samplers.py``).

    Parameters
    ----------
    x : array_like, shape (n,)
        Sensitive values in arrival order (only ever used through the mechanism).
    eps : float
        Privacy parameter of each release, ``> 0``.
    rng : numpy.random.Generator
        Source of all randomness (mechanism and sampler).
    n_particles : int
        Number of particles ``N``.
    ab : (float, float), optional
        Base interval ``(a, b)`` for the standard normal (adaptive truncation).
    fixed_interval : (float, float), optional
        Constant interval ``(l, r)`` (nonadaptive truncation). Exactly one of ``ab`` and
        ``fixed_interval`` must be given.
    first_interval : (float, float), optional
        Interval for the first individual in the adaptive scheme (default ``ab``).
    prior : NormalInvGammaPrior
        Prior of ``(mu, sigma^2)``.
    rw_scale : float
        Random-walk scale of the latent-``x`` move in units of ``sigma``.
    store_every : int
        Store the particle cloud at steps ``store_every, 2 store_every, ...``.
    noise : array_like, shape (n,), optional
        Standard Laplace(0, 1) draws ``W_t`` to use as the mechanism's noise,
        ``y_t = clamp(x_t) + (r_t - l_t) W_t / eps`` (common random numbers, so that several
        methods can be fed the same releases); default: fresh draws from ``rng``.
    progress : callable(t, n), optional
        Called after each step (e.g. to update a progress bar).
    init : "prior", "author" or (mu, sigma^2)
        Initial particles: draws from the prior (default, as Algorithm 2 implies), every particle at
        ``(y_1, 1)`` as in the author's MATLAB code (``"author"``; ``y_1`` is the first release), or
        every particle at the given ``(mu, sigma^2)``.
    rejuvenate : int, optional
        Subset size ``k >= 1`` of the paper's cost reduction (a) (§3.1: "updating only a random
        subset of fixed size of the x_k"): at a step ``t > k`` both MH moves run on ``k`` of the
        ``t`` earlier latent values only, one subset for all particles, drawn from ``rng`` without
        replacement and sorted; the Gibbs draws of ``(mu, sigma^2)`` still use all ``x_{1:t}``.
        At steps ``t <= k`` every value is swept and no subset is drawn, so ``rejuvenate >= n``
        gives bit for bit the default run. Default ``None``: every value at every step, the cost
        ``O(N n^2)`` (:mod:`dpbayes.smc.cost` counts the moves of both variants exactly). The
        paper's reduction (b), a Gibbs move for ``theta`` when ``p(theta | x_{1:t})`` is
        tractable, is what this sampler already does (normal-inverse-gamma conjugacy).

    Returns
    -------
    SMCResult
    """
    xs, eps, adaptive = _check_common(x, eps, rng, n_particles, ab, fixed_interval, first_interval, store_every)
    if rejuvenate is not None:
        rejuvenate = check_int("rejuvenate", rejuvenate, minimum=1)
    noise_arr = _check_noise(noise, xs.size)
    check_positive("rw_scale", rw_scale)
    if isinstance(init, str):
        if init not in ("prior", "author"):
            raise ValueError(f"init must be 'prior', 'author' or a pair (mu, sigma^2), got {init!r}")
        init_point = None
    else:
        try:
            init_point = (float(init[0]), float(init[1]))
        except (TypeError, ValueError, IndexError) as exc:
            raise ValueError(f"init must be 'prior', 'author' or a pair (mu, sigma^2), got {init!r}") from exc
        if not np.isfinite(init_point[0]) or not (np.isfinite(init_point[1]) and init_point[1] > 0):
            raise ValueError(f"init must be a finite mu and a finite sigma^2 > 0, got {init!r}")
    n, N = xs.size, int(n_particles)

    y = np.empty(n)
    lower = np.empty(n)
    upper = np.empty(n)
    slope = np.empty(n)  # eps / (r - l): the Laplace log density is -slope * |y - clamp(x)|
    trace = _Trace(n, N, store_every)

    mu, sigma2 = prior.sample(N, rng)  # drawn in every case, so that "prior" runs are unchanged
    if init_point is not None:
        mu, sigma2 = np.full(N, init_point[0]), np.full(N, init_point[1])
    latent = np.empty((N, n))  # latent[i, k]: particle i's value of x_k
    loglap = np.empty((N, n))  # cached Laplace log-likelihood of each latent x (up to a constant)
    weights = np.full(N, 1.0 / N)
    accepted = 0
    proposed = 0
    n_sweeps = 0
    compiled = _smc_kernels.compiled_enabled()
    # compiled path: the sweep's random draws (two normal and two uniform N x t arrays), reused across
    # steps, and a second pair of latent buffers: the kernel reads the parents' rows from one pair and
    # writes the moved rows to the other (the resampling copy fused into the sweep), then they swap
    draws = np.empty((4, N * max(n - 1, 1))) if compiled else np.empty((4, 0))
    spare, spare_lap = (np.empty((N, n)), np.empty((N, n))) if compiled else (latent, loglap)
    row_sum = np.empty(N)

    for t in range(n):
        # Resampling (Algorithm 2), systematic as in the author's code.
        idx = systematic_resample(weights, rng)
        mu, sigma2 = mu[idx], sigma2[idx]
        if t > 0 and not compiled:  # the compiled step copies the parents' rows itself (below)
            latent[:, :t] = latent[idx, :t]
            loglap[:, :t] = loglap[idx, :t]

        # Interval for individual t.
        if adaptive:
            assert ab is not None  # _check_common: adaptive means ab was given (narrows for mypy)
            if t == 0:
                l_t, r_t = first_interval if first_interval is not None else ab
            else:
                j = rng.integers(N)  # one particle after resampling = a draw from eq. (8)
                l_t, r_t = _interval_from_particle(mu[j], np.sqrt(sigma2[j]), ab)
        else:
            assert fixed_interval is not None  # _check_common: nonadaptive means fixed_interval was given
            l_t, r_t = fixed_interval
        lower[t], upper[t] = l_t, r_t
        slope[t] = eps / (r_t - l_t)
        y[t] = _release(xs[t], l_t, r_t, eps, rng, noise_arr, t)
        if t == 0 and init == "author":  # the author's code: every particle at (y_1, 1)
            mu, sigma2 = np.full(N, y[0]), np.ones(N)

        # Rejuvenation (Algorithm 4) targeting the posterior given y_{1:t-1}.
        if t > 0:
            subset = None
            if rejuvenate is not None and t > rejuvenate:
                # §3.1 (a): one sorted random subset of k of the t earlier x's for all particles
                subset = np.sort(rng.choice(t, size=int(rejuvenate), replace=False))
            cols = slice(t) if subset is None else subset  # a slice gives views, swept in place
            lo, hi, yy, sl = lower[cols], upper[cols], y[cols], slope[cols]
            m = t if subset is None else subset.size
            if compiled:
                # The same Generator calls in the same order as the NumPy path; one kernel call copies
                # the parents' rows, makes both moves and sums each row (NumPy's summation, same bits).
                z_rw = rng.standard_normal(out=draws[0, : N * m].reshape(N, m))
                logu_rw = np.log(rng.random(out=draws[1, : N * m].reshape(N, m)), out=draws[1, : N * m].reshape(N, m))
                z_ind = rng.standard_normal(out=draws[2, : N * m].reshape(N, m))
                logu_ind = np.log(rng.random(out=draws[3, : N * m].reshape(N, m)), out=draws[3, : N * m].reshape(N, m))
                moved = np.arange(t, dtype=np.int64) if subset is None else subset.astype(np.int64, copy=False)
                accepted += _smc_kernels.latent_step(
                    latent, loglap, spare, spare_lap, idx, t, moved, z_rw, logu_rw, z_ind, logu_ind,
                    mu, np.sqrt(sigma2), sigma2, lo, hi, yy, sl, float(rw_scale), row_sum,
                )
                latent, spare = spare, latent
                loglap, spare_lap = spare_lap, loglap
                sum_x = row_sum
            else:
                cur = latent[:, cols]
                cur_lap = loglap[:, cols]
                sd, mc = np.sqrt(sigma2)[:, None], mu[:, None]
                accepted += _latent_mh_sweep_numpy(cur, cur_lap, mc, sd, sigma2, lo, hi, yy, sl, rw_scale, rng)
                if subset is not None:  # the gathered columns were swept in place: write them back
                    latent[:, subset] = cur
                    loglap[:, subset] = cur_lap
                sum_x = latent[:, :t].sum(axis=1)  # the Gibbs draws use every x_{1:t}, swept or not
            proposed += 2 * N * m
            # (iii) Gibbs: mu | x, sigma^2 (normal), then sigma^2 | x, mu (inverse gamma)
            prec = 1.0 / prior.mu_var + t / sigma2
            mean = (prior.mu_mean / prior.mu_var + sum_x / sigma2) / prec
            mu = mean + rng.standard_normal(N) / np.sqrt(prec)
            if compiled:  # the same bits as below, without the N x t temporary
                ss = _smc_kernels.row_sq_dev_sums(latent, t, mu)
            else:
                ss = ((latent[:, :t] - mu[:, None]) ** 2).sum(axis=1)
            sigma2 = (prior.sigma2_scale + 0.5 * ss) / rng.gamma(prior.sigma2_shape + 0.5 * t, 1.0, N)
            n_sweeps += 1

        # Propagation and weighting (Algorithm 2).
        x_new = mu + np.sqrt(sigma2) * rng.standard_normal(N)
        latent[:, t] = x_new
        loglap[:, t] = -slope[t] * np.abs(y[t] - np.clip(x_new, l_t, r_t))
        logw = loglap[:, t]
        weights = np.exp(logw - _logsumexp_1d(logw))
        trace.record(t, mu, np.sqrt(sigma2), weights, 1.0 / np.sum(weights**2))
        if progress is not None:
            progress(t + 1, n)

    return trace.result(y, lower, upper, n_sweeps, accepted, proposed, mu, np.sqrt(sigma2), weights)


def _exact_loglik_sum(
    y: NDArray[np.float64],
    lower: NDArray[np.float64],
    upper: NDArray[np.float64],
    mu: NDArray[np.float64],
    sigma: NDArray[np.float64],
    eps: float,
    chunk: int = 16_384,
) -> NDArray[np.float64]:
    """``sum_k log p(y_k | mu_i, sigma_i; l_k, r_k, eps)`` for each particle ``i`` (chunked).

    Blocks of whole rows of about ``chunk`` elements (a block's temporaries stay in the cache; each
    row's sum is the same whatever the block size). A constant interval enters as two numbers, so
    that the terms depending only on ``(mu_i, sigma_i)`` are computed once per particle. The
    arguments are the sampler's own (finite, ``sigma > 0``, ``lower < upper``): no checks here.
    """
    out = np.zeros(mu.size)
    rows = max(1, chunk // max(1, y.size))
    if y.size and np.all(lower == lower[0]) and np.all(upper == upper[0]):
        lo: NDArray[np.float64] = np.asarray(lower[0])
        hi: NDArray[np.float64] = np.asarray(upper[0])
    else:
        lo, hi = lower[None, :], upper[None, :]
    eps_arr = np.asarray(eps, dtype=float)
    for s in range(0, mu.size, rows):
        ll = truncation._loglik(y[None, :], mu[s : s + rows, None], sigma[s : s + rows, None], lo, hi, eps_arr)
        out[s : s + rows] = ll.sum(axis=1)
    return out


def smc_exact(
    x: ArrayLike,
    eps: float,
    rng: np.random.Generator,
    *,
    n_particles: int = 1000,
    ab: tuple[float, float] | None = None,
    fixed_interval: tuple[float, float] | None = None,
    first_interval: tuple[float, float] | None = None,
    prior: NormalInvGammaPrior = NormalInvGammaPrior(),
    ess_threshold: float = 0.5,
    n_mh: int = 5,
    store_every: int = 20,
    noise: ArrayLike | None = None,
    progress: Progress = None,
) -> SMCResult:
    """SMC on ``theta = (mu, sigma)`` alone with the exact likelihood (IBIS, Chopin 2002).

    The latent ``x`` of the paper's SMC are integrated out in closed form
    (:func:`dpbayes.smc.truncation.loglik_privatised_normal`), so each step only reweights the
    particles by ``p(y_t | mu, sigma; l_t, r_t, eps)``. When the effective sample size falls below
    ``ess_threshold * N`` the particles are resampled systematically and moved by ``n_mh``
    random-walk MH steps on ``(mu, log sigma)`` that leave the posterior given ``y_{1:t}``
    invariant; the proposal covariance is ``2.38^2 / 2`` times the weighted particle covariance.
    The interval rule (adaptive or fixed) is the same as in :func:`smc_latent`; the adaptive
    draw is from the weighted cloud (eq. (8)).

    Parameters are those of :func:`smc_latent` plus ``ess_threshold`` in (0, 1] and ``n_mh``.

    Returns
    -------
    SMCResult
        ``n_moves`` counts the resample-move events.
    """
    xs, eps, adaptive = _check_common(x, eps, rng, n_particles, ab, fixed_interval, first_interval, store_every)
    noise_arr = _check_noise(noise, xs.size)
    check_in_range("ess_threshold", ess_threshold, 0.0, 1.0, low_open=True)
    check_int("n_mh", n_mh, minimum=1)
    n, N = xs.size, int(n_particles)

    y = np.empty(n)
    lower = np.empty(n)
    upper = np.empty(n)
    trace = _Trace(n, N, store_every)

    mu, sigma2 = prior.sample(N, rng)
    log_sigma = 0.5 * np.log(sigma2)
    logw = np.full(N, -np.log(N))
    loglik = np.zeros(N)  # log-likelihood of y_{1:t} at each particle, kept for the MH moves
    accepted = 0
    proposed = 0
    n_events = 0

    prev_weights: NDArray[np.float64] | None = None  # normalised logw of the previous step, if unchanged since
    for t in range(n):
        if adaptive:
            assert ab is not None  # _check_common: adaptive means ab was given (narrows for mypy)
            if t == 0:
                l_t, r_t = first_interval if first_interval is not None else ab
            else:
                # the weights of the current logw: the previous step's normalisation of the same logw
                # (same bits), recomputed only after a resample-move reset logw
                weights = prev_weights if prev_weights is not None else np.exp(logw - _logsumexp_1d(logw))
                j = rng.choice(N, p=weights)
                l_t, r_t = _interval_from_particle(mu[j], np.exp(log_sigma[j]), ab)
        else:
            assert fixed_interval is not None  # _check_common: nonadaptive means fixed_interval was given
            l_t, r_t = fixed_interval
        lower[t], upper[t] = l_t, r_t
        y[t] = _release(xs[t], l_t, r_t, eps, rng, noise_arr, t)

        inc = truncation._loglik(np.asarray(y[t]), mu, np.exp(log_sigma), np.asarray(l_t, dtype=float),
                                 np.asarray(r_t, dtype=float), np.asarray(eps, dtype=float))  # validated above
        logw = logw + inc
        loglik += inc
        weights = np.exp(logw - _logsumexp_1d(logw))
        prev_weights = weights
        ess_t = 1.0 / np.sum(weights**2)

        if ess_t < ess_threshold * N:
            # Resample-move: proposal covariance from the weighted cloud before resampling.
            theta = np.column_stack([mu, log_sigma])
            centred = theta - weights @ theta
            cov = (centred * weights[:, None]).T @ centred
            chol = np.linalg.cholesky(2.38**2 / 2.0 * cov + 1e-12 * np.eye(2))
            idx = systematic_resample(weights, rng)
            mu, log_sigma, loglik = mu[idx], log_sigma[idx], loglik[idx]
            logprior = prior.logpdf_mu_logsigma(mu, log_sigma)
            yy, lo, hi = y[: t + 1], lower[: t + 1], upper[: t + 1]
            for _ in range(n_mh):
                step = rng.standard_normal((N, 2)) @ chol.T
                mu_p, ls_p = mu + step[:, 0], log_sigma + step[:, 1]
                ll_p = _exact_loglik_sum(yy, lo, hi, mu_p, np.exp(ls_p), eps)
                lp_p = prior.logpdf_mu_logsigma(mu_p, ls_p)
                acc = np.log(rng.random(N)) < (ll_p + lp_p) - (loglik + logprior)
                mu = np.where(acc, mu_p, mu)
                log_sigma = np.where(acc, ls_p, log_sigma)
                loglik = np.where(acc, ll_p, loglik)
                logprior = np.where(acc, lp_p, logprior)
                accepted += int(acc.sum())
                proposed += N
            logw = np.full(N, -np.log(N))
            weights = np.full(N, 1.0 / N)
            prev_weights = None
            n_events += 1

        trace.record(t, mu, np.exp(log_sigma), weights, ess_t)
        if progress is not None:
            progress(t + 1, n)

    return trace.result(y, lower, upper, n_events, accepted, proposed, mu, np.exp(log_sigma), weights)


def realised_fisher_information(
    lower: ArrayLike, upper: ArrayLike, mu: float, sigma: float, eps: float
) -> NDArray[np.float64]:
    """Total exact Fisher information about ``(mu, sigma)`` of releases made with given intervals.

    ``sum_t F^eps_{l_t, r_t}(mu, sigma)`` (paper eq. (6)); the releases are independent given
    ``theta`` and the intervals, and by the chain rule the information of an adaptive sequence is
    the sum of the per-release informations at the realised intervals (each interval is a function
    of earlier releases only). Uses :func:`dpbayes.smc.truncation.fisher_information_normal`.

    Returns
    -------
    ndarray, shape (2, 2)
        Index 0 is ``mu``, index 1 is ``sigma``.
    """
    lo = np.atleast_1d(np.asarray(lower, dtype=float))
    hi = np.broadcast_to(np.asarray(upper, dtype=float), lo.shape)
    total = np.zeros((2, 2))
    for l_t, r_t in zip(lo, hi):
        total += truncation.fisher_information_normal(mu, sigma, l_t, r_t, eps)
    return total


def cramer_rao_sd(fisher: ArrayLike) -> NDArray[np.float64]:
    """Cramer-Rao lower bounds on the standard deviations of unbiased estimators: ``sqrt(diag(F^-1))``.

    With a weak prior this is also the large-sample van Trees bound at the true ``theta``.
    """
    F = np.asarray(fisher, dtype=float)
    if F.shape != (2, 2):
        raise ValueError(f"fisher must be a 2 x 2 matrix, got shape {F.shape}")
    return np.sqrt(np.diag(np.linalg.inv(F)))
