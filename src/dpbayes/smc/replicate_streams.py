"""The random streams of one replicate of chapter 3's simulation study (beyond the paper).

Replicate ``(eps_index, run)`` with seed ``seed`` spawns its streams from
``numpy.random.SeedSequence([seed, eps_index, run])``, one child per use: the individuals, the
mechanism's standard Laplace draws (shared by every method, common random numbers), one stream per
sampler, and the public coins of the mirror-randomised design. A child depends only on its position
(``SeedSequence.spawn`` numbers its children), so adding a stream at the end leaves the others as they
were. Every design and every method of a replicate therefore sees the same individuals and noise
(:mod:`dpbayes.smc.study`, :mod:`dpbayes.smc.designs`, :mod:`dpbayes.smc.fair_baseline`).
"""

from __future__ import annotations

import numpy as np

from dpbayes.core.validation import check_int

__all__ = ["STREAMS", "replicate_streams"]

#: The replicate's streams, in spawn order (append new ones at the end: the others keep their draws).
STREAMS = ("data", "noise", "SMC-adaptive", "SMC-nonadaptive", "MCMC", "exact-SMC-adaptive", "mirror-coin")


def replicate_streams(seed: int, eps_index: int, run: int) -> dict[str, np.random.Generator]:
    """One generator per name of :data:`STREAMS`, spawned from ``SeedSequence([seed, eps_index, run])``.

    Parameters
    ----------
    seed : int
        The study's seed, ``>= 0``.
    eps_index, run : int
        The replicate's coordinates, ``>= 0``.

    Returns
    -------
    dict
        Stream name -> ``numpy.random.Generator``.
    """
    key = [check_int(name, value, minimum=0) for name, value in (("seed", seed), ("eps_index", eps_index), ("run", run))]
    children = np.random.SeedSequence(key).spawn(len(STREAMS))
    return {name: np.random.default_rng(child) for name, child in zip(STREAMS, children)}
