"""The mechanisms that release a Beta/Dirichlet posterior (chapter 2): one registry, exact laws, samplers.

Source: ``laplace-optimality-notes.md`` ("notes"), Algorithms 1-5. Setting and sensitivities: see
:mod:`dpbayes.posterior.sensitivity`. A *release* is a count vector ``c~`` (the released posterior is
``Dir(alpha + c~)``). Neighbouring data sets have the same size ``n`` and differ in one record
(binary: ``x`` ones versus ``x + 1`` ones).

Every mechanism is one :class:`ReleaseMechanism` in :data:`REGISTRY`: its name, where it comes
from, what it does, its proven guarantee (:func:`proven_epsilon`), and either its additive noise
(the exact log pmf of one noisy, clamped coordinate and its sampler) or the multiplier of the
utility ``-H`` of its exponential mechanism. The functions of this module
(:func:`release_log_distribution`, :func:`exact_log_output_distribution`, :func:`sample_release`,
:func:`privacy_loss_binary`, ...) and :mod:`dpbayes.posterior.release`, the privacy audit and the
tests iterate over the registry; adding a mechanism is one definition in ``_DEFINITIONS`` plus its
test. ``MECHANISMS`` keeps the notes' six, ``ADDED_MECHANISMS`` the ones chapter 2 adds for its
optimality comparison.

``LSDim`` and ``LSHist`` with ``k >= 3`` can release count vectors that do not sum to ``n`` (the
last coordinate is clamped), i.e. posteriors outside ``R_alpha``; this is the notes' algorithm,
reproduced as written.

The registered mechanisms (generated from :data:`REGISTRY`):

"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp

from dpbayes.core.distances import hellinger_dirichlet
from dpbayes.core.geometric import sample_truncated_geometric, truncated_geometric_logpmf
from dpbayes.core.privacy_loss import _max_log_ratio, neighbour_pairs, replace_one_pairs
from dpbayes.posterior.sensitivity import (
    NOTES_GLOBAL_SENSITIVITY,
    _check_counts,
    candidate_counts,
    check_prior,
    global_sensitivity,
    local_sensitivity,
    local_sensitivity_all,
    smooth_sensitivity,
    smooth_sensitivity_all_binary,
)
from dpbayes.core.validation import check_choice, check_int, check_positive, check_rng

__all__ = [
    "ReleaseMechanism",
    "REGISTRY",
    "MECHANISMS",
    "ADDED_MECHANISMS",
    "ALL_MECHANISMS",
    "LAPLACE_MECHANISMS",
    "EXPONENTIAL_MECHANISMS",
    "get_mechanism",
    "proven_epsilon",
    "laplace_scale",
    "release_log_distribution",
    "exact_log_output_distribution",
    "exact_output_distribution",
    "privacy_loss_binary",
    "privacy_loss_multi",
    "sample_release",
    "geometric_multi_release_log_distribution",
]

_LOG2 = math.log(2.0)

#: ``noise_log_pmf(c, n, eps, k)``: log pmf of one noisy, clamped coordinate on ``0..n``.
NoiseLogPmf = Callable[[int, int, float, int], NDArray[np.float64]]
#: ``noise_sample(c_first, n, eps, k, rng, size)``: ``(size, k - 1)`` noisy, clamped first coordinates.
NoiseSampler = Callable[[NDArray[np.int64], int, float, int, np.random.Generator, int], NDArray[np.int64]]
#: ``factor(counts, eps, alpha, smoothing_beta)``: multiplier of the utility ``-H`` for one data set.
ExponentialFactor = Callable[[NDArray[np.int64], float, NDArray[np.float64], float | None], float]
#: ``factor_binary(n, eps, alpha, smoothing_beta)``: the same for every binary data set ``x = 0..n`` at once.
BinaryExponentialFactor = Callable[[int, float, NDArray[np.float64], float | None], NDArray[np.float64]]


@dataclass(frozen=True)
class ReleaseMechanism:
    """One mechanism of chapter 2: what it is, what it provably guarantees, its exact law and sampler.

    Exactly one of the two families is given: an *additive-noise* mechanism (``noise_log_pmf`` and
    ``noise_sample``: noise on each of the first ``k - 1`` counts, mapped to an integer and clamped
    to ``[0, n]``, the last count ``n`` minus their sum, clamped; notes Alg. 1-2) or an *exponential*
    mechanism over the candidate set ``R_alpha`` with utility ``-H`` (``factor`` and
    ``factor_binary``; notes Alg. 3-5, McSherry & Talwar 2007).

    Attributes
    ----------
    name : str
        The name every function takes (``mechanism=``).
    in_notes : bool
        One of the notes' mechanisms (``MECHANISMS``) or one chapter 2 adds (``ADDED_MECHANISMS``).
    summary : str
        What it does, with the source's algorithm number (shown in the module docstring).
    guarantee : str
        Its proven guarantee in words (the number is ``proven``).
    proven : callable ``(eps, n, alpha) -> float``
        The privacy parameter it provably satisfies (pure DP, replace-one neighbours; ``inf``: none).
    noise_log_pmf, noise_sample : callable, optional
        Additive-noise family (see ``NoiseLogPmf`` and ``NoiseSampler``).
    noise_scale : callable ``(eps, k) -> float``, optional
        Scale of Laplace noise (:func:`laplace_scale`); ``None`` for other noise.
    factor, factor_binary : callable, optional
        Exponential family (see ``ExponentialFactor`` and ``BinaryExponentialFactor``).
    max_categories : int, optional
        Largest number of categories the mechanism is defined for (``None``: any ``k >= 2``).
    """

    name: str
    in_notes: bool
    summary: str
    guarantee: str
    proven: Callable[[float, int, NDArray[np.float64]], float]
    noise_log_pmf: NoiseLogPmf | None = None
    noise_sample: NoiseSampler | None = None
    noise_scale: Callable[[float, int], float] | None = None
    factor: ExponentialFactor | None = None
    factor_binary: BinaryExponentialFactor | None = None
    max_categories: int | None = None

    def __post_init__(self) -> None:
        noise = self.noise_log_pmf is not None and self.noise_sample is not None
        expo = self.factor is not None and self.factor_binary is not None
        if noise == expo:
            raise ValueError(f"mechanism {self.name!r} must give either noise_log_pmf and noise_sample or factor and factor_binary")

    def __repr__(self) -> str:
        # the registry's value is shown on the API page: the name says which entry, the docstring the rest
        return f"ReleaseMechanism({self.name!r})"

    @property
    def kind(self) -> str:
        """``"noise"`` (additive noise, coordinate-wise) or ``"exponential"``."""
        return "noise" if self.noise_log_pmf is not None else "exponential"

    def check_categories(self, k: int) -> None:
        """Refuse a number of categories the mechanism is not defined for."""
        if self.max_categories is not None and k > self.max_categories:
            raise ValueError(
                f"mechanism {self.name!r} is defined for two categories (a prior of length 2), got {k} categories"
                if self.max_categories == 2
                else f"mechanism {self.name!r} is defined for at most {self.max_categories} categories, got {k}"
            )


# -- the laws of one noisy, clamped coordinate -------------------------------------------------------
def _log_laplace_interval(lo: NDArray[np.float64], hi: NDArray[np.float64], scale: float) -> NDArray[np.float64]:
    """``log P(lo <= eta < hi)`` for ``eta ~ Lap(0, scale)``, accurate far in the tails."""
    z, w = lo / scale, hi / scale
    out = np.empty(np.broadcast(z, w).shape)
    z, w = np.broadcast_arrays(z, w)
    right = z >= 0  # whole interval right of 0: (e^-z - e^-w)/2
    left = w <= 0  # whole interval left of 0: (e^w - e^z)/2
    mid = ~(right | left)
    zr, wr = z[right], w[right]
    out[right] = -zr + np.log1p(-np.exp(-(wr - zr))) - _LOG2
    zl, wl = z[left], w[left]
    out[left] = wl + np.log1p(-np.exp(zl - wl)) - _LOG2
    zm, wm = z[mid], w[mid]
    out[mid] = np.log1p(-0.5 * (np.exp(zm) + np.exp(-wm)))
    return out


def _log_clamped_floor_pmf(c: int, n: int, scale: float) -> NDArray[np.float64]:
    """log pmf of ``clamp(floor(c + eta), 0, n)``, ``eta ~ Lap(0, scale)``, on ``j = 0..n``."""
    j = np.arange(n + 1, dtype=float)
    lo = j - c
    hi = j + 1.0 - c
    lo[0] = -np.inf  # everything below 1 is clamped to 0
    hi[-1] = np.inf  # everything at or above n is clamped to n
    if n == 0:
        return np.zeros(1)
    return _log_laplace_interval(lo, hi, scale)


def _log_clamped_round_pmf(c: int, n: int, scale: float) -> NDArray[np.float64]:
    """log pmf of ``clamp(round(c + eta), 0, n)`` (``round(y) = floor(y + 1/2)``), ``eta ~ Lap(0, scale)``."""
    if n == 0:
        return np.zeros(1)
    j = np.arange(n + 1, dtype=float)
    lo = j - 0.5 - c
    hi = j + 0.5 - c
    lo[0] = -np.inf
    hi[-1] = np.inf
    return _log_laplace_interval(lo, hi, scale)


def _log_truncated_geometric_pmf(c: int, n: int, eps: float) -> NDArray[np.float64]:
    """log pmf of ``clamp(c + z, 0, n)`` with two-sided geometric noise: :func:`dpbayes.core.geometric.truncated_geometric_logpmf`."""
    return truncated_geometric_logpmf(c, n, eps)


# -- building blocks of the definitions ---------------------------------------------------------------
def _lsdim_scale(eps: float, k: int) -> float:
    return k / eps  # notes Alg. 1: Lap(k/eps)


def _lshist_scale(eps: float, k: int) -> float:
    return (1.0 if k == 2 else 2.0) / eps  # notes Alg. 2: Lap(1/eps) for k = 2, Lap(2/eps) otherwise


def _laplace_proven(scale: Callable[[float, int], float]) -> Callable[[float, int, NDArray[np.float64]], float]:
    """L1 sensitivity of the first ``k - 1`` counts (1 for k = 2, 2 for k >= 3) over the Laplace scale."""

    def proven(eps: float, n: int, alpha: NDArray[np.float64]) -> float:
        k = alpha.size
        return (1.0 if k == 2 else 2.0) / scale(eps, k)

    return proven


def _laplace_noise(scale: Callable[[float, int], float], shift: float) -> tuple[NoiseLogPmf, NoiseSampler]:
    """Laplace noise of ``scale``, then ``floor(. + shift)`` (``shift`` 0: floor, 1/2: round), clamped."""
    pmf = _log_clamped_round_pmf if shift else _log_clamped_floor_pmf

    def log_pmf(c: int, n: int, eps: float, k: int) -> NDArray[np.float64]:
        return pmf(c, n, scale(eps, k))

    def sample(c_first: NDArray[np.int64], n: int, eps: float, k: int, rng: np.random.Generator, size: int) -> NDArray[np.int64]:
        eta = rng.laplace(0.0, scale(eps, k), size=(size, k - 1))
        return np.clip(np.floor(c_first + eta + shift), 0, n).astype(np.int64)

    return log_pmf, sample


def _geometric_log_pmf(c: int, n: int, eps: float, k: int) -> NDArray[np.float64]:
    return _log_truncated_geometric_pmf(c, n, eps)


def _geometric_sample(c_first: NDArray[np.int64], n: int, eps: float, k: int, rng: np.random.Generator, size: int) -> NDArray[np.int64]:
    return sample_truncated_geometric(c_first[0], n, eps, rng, size)[:, None]


def _always(value: str) -> Callable[[float, int, NDArray[np.float64]], float]:
    if value == "eps":
        return lambda eps, n, alpha: eps
    return lambda eps, n, alpha: math.inf


_lsdim_pmf, _lsdim_sample = _laplace_noise(_lsdim_scale, 0.0)
_lshist_pmf, _lshist_sample = _laplace_noise(_lshist_scale, 0.0)
_round_pmf, _round_sample = _laplace_noise(_lshist_scale, 0.5)

# The mechanisms, in the order every list of them follows (the notes' first).
_DEFINITIONS: tuple[ReleaseMechanism, ...] = (
    ReleaseMechanism(
        "LSDim", True,
        "notes Alg. 1: ``Lap(k/eps)`` on each of the first ``k - 1`` counts, floor, clamp to ``[0, n]``, "
        "last = clamp(n - sum)",
        "``eps/2`` (k = 2), ``2 eps/k`` (k >= 3): sensitivity over scale",
        _laplace_proven(_lsdim_scale), _lsdim_pmf, _lsdim_sample, _lsdim_scale,
    ),
    ReleaseMechanism(
        "LSHist", True,
        "notes Alg. 2: the same with ``Lap(1/eps)`` (k = 2) / ``Lap(2/eps)``",
        "``eps``",
        _laplace_proven(_lshist_scale), _lshist_pmf, _lshist_sample, _lshist_scale,
    ),
    ReleaseMechanism(
        "EHD", True,
        "notes Alg. 3: exponential mechanism, score minus H, factor eps over 2 GS, GS computed for (n, prior)",
        "``eps`` (McSherry-Talwar with the computed ``GS``)",
        _always("eps"),
        factor=lambda c, eps, alpha, beta: eps / (2.0 * global_sensitivity(int(c.sum()), alpha)),
        factor_binary=lambda n, eps, alpha, beta: np.full(n + 1, eps / (2.0 * local_sensitivity_all(n, alpha)[1].max())),
    ),
    ReleaseMechanism(
        "EHD-notes", True,
        "notes Alg. 3 with the notes' constant ``GS = sqrt(1 - pi/4)``",
        "``eps GS(n, prior)/sqrt(1 - pi/4)`` (the same theorem with the true sensitivity)",
        lambda eps, n, alpha: eps * global_sensitivity(n, alpha) / NOTES_GLOBAL_SENSITIVITY,
        factor=lambda c, eps, alpha, beta: eps / (2.0 * NOTES_GLOBAL_SENSITIVITY),
        factor_binary=lambda n, eps, alpha, beta: np.full(n + 1, eps / (2.0 * NOTES_GLOBAL_SENSITIVITY)),
    ),
    ReleaseMechanism(
        "EHDL", True,
        "notes Alg. 4 (body missing in the notes; read from Thm 2.5): factor ``eps/(2 LS(x))``",
        "none (not DP in general; see the exact losses in the chapter)",
        _always("inf"),
        factor=lambda c, eps, alpha, beta: eps / (2.0 * local_sensitivity(c, alpha)),
        factor_binary=lambda n, eps, alpha, beta: eps / (2.0 * local_sensitivity_all(n, alpha)[1]),
    ),
    ReleaseMechanism(
        "EHDS", True,
        "notes Alg. 5: factor ``eps/(4 S(x))``, ``S`` = beta-smooth sensitivity",
        "``eps`` with the default beta (argument in :func:`dpbayes.posterior.sensitivity.pure_dp_smoothing_beta`)",
        _always("eps"),
        factor=lambda c, eps, alpha, beta: eps / (4.0 * smooth_sensitivity(c, alpha, beta)),
        factor_binary=lambda n, eps, alpha, beta: eps / (4.0 * smooth_sensitivity_all_binary(n, alpha, beta)),
    ),
    ReleaseMechanism(
        "LSHist-round", False,
        "``LSHist`` with the noisy count rounded to the nearest integer instead of floored (``floor(c + eta + 1/2)``)",
        "as ``LSHist`` (rounding is post-processing of the Laplace mechanism)",
        _laplace_proven(_lshist_scale), _round_pmf, _round_sample, _lshist_scale,
    ),
    ReleaseMechanism(
        "Geometric", False,
        "truncated geometric mechanism (two categories only): two-sided geometric noise ``P(z) ~ exp(-eps |z|)`` "
        "on the count, clamped to ``[0, n]``, released as the matching posterior (Ghosh, Roughgarden & "
        "Sundararajan 2009; :mod:`dpbayes.core.geometric`)",
        "``eps`` (exact loss ``eps``)",
        _always("eps"), _geometric_log_pmf, _geometric_sample, max_categories=2,
    ),
)

#: Every mechanism by name, in the order of ``ALL_MECHANISMS``.
REGISTRY: dict[str, ReleaseMechanism] = {m.name: m for m in _DEFINITIONS}
#: The notes' mechanisms.
MECHANISMS = tuple(m.name for m in _DEFINITIONS if m.in_notes)
#: Not in the notes: the ones chapter 2 adds for its optimality comparison.
ADDED_MECHANISMS = tuple(m.name for m in _DEFINITIONS if not m.in_notes)
ALL_MECHANISMS = MECHANISMS + ADDED_MECHANISMS
#: The notes' additive-noise (Laplace) mechanisms.
LAPLACE_MECHANISMS = tuple(m for m in MECHANISMS if REGISTRY[m].kind == "noise")
#: The notes' exponential mechanisms.
EXPONENTIAL_MECHANISMS = tuple(m for m in MECHANISMS if REGISTRY[m].kind == "exponential")
# mechanisms with Laplace noise (laplace_scale, projection onto R_alpha)
_LAPLACE_SCALED = tuple(m for m in ALL_MECHANISMS if REGISTRY[m].noise_scale is not None)


def _describe_registry() -> str:
    lines = []
    for m in _DEFINITIONS:
        where = "" if m.in_notes else " (not in the notes)"
        lines.append(f"* ``{m.name}``{where}: {m.summary}. Proven guarantee: {m.guarantee}.")
    return "\n".join(lines) + "\n"


__doc__ = (__doc__ or "") + _describe_registry()


def get_mechanism(mechanism: str) -> ReleaseMechanism:
    """The registered mechanism called ``mechanism`` (``ValueError`` naming the choices otherwise).

    Parameters
    ----------
    mechanism : str
        One of ``ALL_MECHANISMS``.

    Returns
    -------
    ReleaseMechanism
    """
    return REGISTRY[check_choice("mechanism", mechanism, ALL_MECHANISMS)]


def laplace_scale(mechanism: str, eps: float, k: int) -> float:
    """Scale of the Laplace noise of ``LSDim`` (notes Alg. 1: ``k/eps``) or ``LSHist`` (Alg. 2: ``1/eps`` for
    ``k = 2``, ``2/eps`` otherwise), and of every other registered mechanism with Laplace noise."""
    check_choice("mechanism", mechanism, _LAPLACE_SCALED)
    eps = check_positive("eps", eps)
    k = check_int("k", k, minimum=2)
    scale = REGISTRY[mechanism].noise_scale
    assert scale is not None
    return scale(eps, k)


def proven_epsilon(mechanism: str, eps: float, n: int, prior: ArrayLike) -> float:
    """The privacy parameter each mechanism provably satisfies (pure DP, replace-one neighbours).

    Laplace mechanisms: L1 sensitivity of the first ``k - 1`` counts is 1 (k = 2) or 2 (k >= 3), so
    the guarantee is ``sensitivity / scale``. ``EHD``: ``eps`` (McSherry-Talwar with the computed
    ``GS``). ``EHD-notes``: the same theorem with the true sensitivity gives ``eps * GS / sqrt(1 - pi/4)``.
    ``EHDS``: ``eps`` (argument in :func:`dpbayes.posterior.sensitivity.pure_dp_smoothing_beta`).
    ``EHDL``: ``inf`` (no guarantee; see the exact losses in the chapter). ``LSHist-round``: as
    ``LSHist`` (rounding is post-processing). ``Geometric``: ``eps`` (two categories). Each value is
    the registered mechanism's ``proven``.
    """
    mech = get_mechanism(mechanism)
    eps = check_positive("eps", eps)
    alpha = check_prior(prior)
    mech.check_categories(alpha.size)
    return float(mech.proven(eps, n, alpha))


def _noise_release_log_distribution(
    mech: ReleaseMechanism, counts: NDArray[np.int64], eps: float
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    assert mech.noise_log_pmf is not None
    k = counts.size
    n = int(counts.sum())
    pmfs = [mech.noise_log_pmf(int(counts[i]), n, eps, k) for i in range(k - 1)]
    grids = np.meshgrid(*[np.arange(n + 1)] * (k - 1), indexing="ij")
    first = np.stack([g.ravel() for g in grids], axis=1)
    logp = sum(pmfs[i][first[:, i]] for i in range(k - 1))
    last = np.clip(n - first.sum(axis=1), 0, n)
    return np.concatenate([first, last[:, None]], axis=1).astype(np.int64), np.asarray(logp)


def release_log_distribution(
    mechanism: str, counts: ArrayLike, eps: float, prior: ArrayLike, *, smoothing_beta: float | None = None
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Exact output distribution of one mechanism on one data set, in log space.

    Parameters
    ----------
    mechanism : str
        One of ``ALL_MECHANISMS``.
    counts : array_like of int, shape (k,)
        Category counts of the data set (``n = sum counts``).
    eps : float
        Privacy parameter the mechanism is calibrated with (``> 0``).
    prior : array_like, shape (k,)
        Dirichlet prior ``alpha``.
    smoothing_beta : float, optional
        EHDS only: smoothing parameter of the smooth sensitivity. The default
        (:func:`dpbayes.posterior.sensitivity.pure_dp_smoothing_beta`) is the value with a proof of ``eps``-DP;
        other values are for exploration only.

    Returns
    -------
    released : ndarray of int, shape (m, k)
        Support: released count vectors (released posterior ``Dir(alpha + released)``). For ``k = 2``
        it is always ``(j, n - j)``, ``j = 0..n``, in this order.
    log_prob : ndarray, shape (m,)
        Log-probability of each support point (``logsumexp(log_prob) = 0``).
    """
    mech = get_mechanism(mechanism)
    eps = check_positive("eps", eps)
    alpha = check_prior(prior)
    c = _check_counts(counts, alpha)
    mech.check_categories(alpha.size)
    if mech.kind == "noise":
        return _noise_release_log_distribution(mech, c, eps)
    assert mech.factor is not None
    cand = candidate_counts(int(c.sum()), alpha.size)
    score = -np.asarray(hellinger_dirichlet(alpha + c, alpha + cand)) * mech.factor(c, eps, alpha, smoothing_beta)
    return cand, score - logsumexp(score)


def exact_log_output_distribution(
    mechanism: str, n: int, eps: float, prior: ArrayLike = (1.0, 1.0), *, smoothing_beta: float | None = None
) -> NDArray[np.float64]:
    """Binary case: ``L[x, j] = log P(mechanism releases Beta(a + j, b + n - j) | data with x ones)``.

    Rows ``x = 0..n`` (input neighbours are rows ``x`` and ``x + 1``), columns ``j = 0..n``.
    """
    mech = get_mechanism(mechanism)
    n = check_int("n", n, minimum=1, maximum=3000)
    alpha = check_prior(prior, 2)
    eps = check_positive("eps", eps)
    if mech.kind == "noise":
        assert mech.noise_log_pmf is not None
        return np.vstack([mech.noise_log_pmf(x, n, eps, 2) for x in range(n + 1)])
    assert mech.factor_binary is not None
    # All pairwise distances between the n + 1 posteriors at once (candidates = posteriors).
    post = candidate_counts(n, 2) + alpha
    dist = np.asarray(hellinger_dirichlet(post[:, None, :], post[None, :, :]))
    factor = mech.factor_binary(n, eps, alpha, smoothing_beta)
    score = -dist * factor[:, None]
    return score - logsumexp(score, axis=1, keepdims=True)


def exact_output_distribution(
    mechanism: str, n: int, eps: float, prior: ArrayLike = (1.0, 1.0), *, smoothing_beta: float | None = None
) -> NDArray[np.float64]:
    """Binary case: exact ``(n+1) x (n+1)`` matrix ``P[x, j]`` of output probabilities.

    ``P[x, j]`` is the probability that ``mechanism`` (calibrated for ``eps``; see the module's list for
    the guarantee each one actually has, :func:`proven_epsilon`) releases ``Beta(a + j, b + n - j)`` when
    the data hold ``x`` ones out of ``n``. Rows sum to 1; input neighbours are rows ``x`` and ``x + 1``.
    """
    return np.exp(exact_log_output_distribution(mechanism, n, eps, prior, smoothing_beta=smoothing_beta))


def privacy_loss_binary(
    mechanism: str, n: int, eps: float, prior: ArrayLike = (1.0, 1.0), *, smoothing_beta: float | None = None
) -> float:
    """Exact worst-case privacy loss ``max_{x, j} |log P[x, j] - log P[x+1, j]|`` over all binary neighbours.

    This is the smallest ``eps'`` for which the mechanism is ``eps'``-DP on data sets of size ``n``
    (``inf`` when some output has probability 0 under one neighbour only); computed by
    :mod:`dpbayes.core.privacy_loss`.
    """
    L = exact_log_output_distribution(mechanism, n, eps, prior, smoothing_beta=smoothing_beta)
    return max(_max_log_ratio(L, neighbour_pairs(n + 1, "adjacent")), 0.0)


def privacy_loss_multi(mechanism: str, n: int, eps: float, prior: ArrayLike, *, smoothing_beta: float | None = None) -> float:
    """Exact worst-case privacy loss for ``k >= 2`` categories over all data sets of size ``n``.

    Neighbours: ``c`` and ``c - e_i + e_j`` (one record changes category,
    :func:`dpbayes.core.privacy_loss.replace_one_pairs`). Every data set has the same output support (all
    candidates for the exponential mechanisms, the full noise grid for the additive-noise ones), so
    the loss is ``max |log P_c(r) - log P_c'(r)|`` over all pairs and outputs.
    """
    get_mechanism(mechanism)
    alpha = check_prior(prior)
    n = check_int("n", n, minimum=1, maximum=60)
    data = candidate_counts(n, alpha.size)
    logs = np.vstack([release_log_distribution(mechanism, c, eps, alpha, smoothing_beta=smoothing_beta)[1] for c in data])
    return max(_max_log_ratio(logs, replace_one_pairs(data)), 0.0)


def sample_release(
    mechanism: str,
    counts: ArrayLike,
    eps: float,
    prior: ArrayLike,
    rng: np.random.Generator,
    size: int = 1,
    *,
    smoothing_beta: float | None = None,
) -> NDArray[np.int64]:
    """Draw ``size`` releases of ``mechanism`` on the data set with category counts ``counts``.

    The additive-noise mechanisms are simulated as written in notes Alg. 1-2 (noise, integer map,
    clamp); the exponential mechanisms draw from their candidate weights. For ``k = 2`` column 0 of
    the result is the index ``j`` of the released candidate in :func:`exact_output_distribution`.

    For simulation only (seeded floating-point noise); to protect real data draw the noise with a
    vetted sampler such as OpenDP's (as :mod:`dpbayes.release.statistic` does for counts).

    Returns
    -------
    ndarray of int, shape (size, k)
        Released count vectors ``c~``; the released posterior is ``Dir(prior + c~)``.
    """
    mech = get_mechanism(mechanism)
    eps = check_positive("eps", eps)
    alpha = check_prior(prior)
    c = _check_counts(counts, alpha)
    rng = check_rng("rng", rng)
    size = check_int("size", size, minimum=1)
    k, n = alpha.size, int(c.sum())
    mech.check_categories(k)
    if mech.kind == "noise":
        assert mech.noise_sample is not None
        first = mech.noise_sample(c[: k - 1], n, eps, k, rng, size)
        last = np.clip(n - first.sum(axis=1), 0, n)
        return np.concatenate([first, last[:, None]], axis=1)
    support, logp = release_log_distribution(mechanism, c, eps, alpha, smoothing_beta=smoothing_beta)
    p = np.exp(logp)
    idx = rng.choice(len(support), size=size, p=p / p.sum())
    return support[idx]


def geometric_multi_release_log_distribution(counts: ArrayLike, eps: float, prior: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The natural ``k``-category generalisation of the truncated geometric mechanism (not in the notes).

    LSHist's structure with geometric instead of Laplace noise: the first ``k - 1`` counts get independent
    two-sided geometric noise ``P(z) ∝ e^{-eps |z| / 2}``, each clamped to ``[0, n]``; the last count is
    ``n`` minus their sum, clamped (so, as for LSHist, the release can leave ``R_alpha``). Privacy:
    replacing one record changes at most two of the first ``k - 1`` counts by one, so the loss is at most
    ``2 (eps / 2) = eps`` (exact loss tested). For ``k = 2`` the noise would be calibrated to ``eps/2``;
    use the binary ``"Geometric"`` mechanism there. Returns ``(released, log_prob)`` as
    :func:`release_log_distribution`.
    """
    eps = check_positive("eps", eps)
    alpha = check_prior(prior)
    c = _check_counts(counts, alpha)
    k = c.size
    if k < 3:
        raise ValueError("geometric_multi_release_log_distribution needs k >= 3 categories (use 'Geometric' for k = 2)")
    n = int(c.sum())
    pmfs = [_log_truncated_geometric_pmf(int(c[i]), n, eps / 2.0) for i in range(k - 1)]
    grids = np.meshgrid(*[np.arange(n + 1)] * (k - 1), indexing="ij")
    first = np.stack([g.ravel() for g in grids], axis=1)
    logp = sum(pmfs[i][first[:, i]] for i in range(k - 1))
    last = np.clip(n - first.sum(axis=1), 0, n)
    return np.concatenate([first, last[:, None]], axis=1).astype(np.int64), np.asarray(logp)
