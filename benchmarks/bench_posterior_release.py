"""Benchmark for chapter 02 (run by hand: ``.venv/bin/python benchmarks/bench_posterior_release.py``).

1. Hellinger distance between neighbouring Beta posteriors: the library's cancellation-free
   second-difference form against the plain closed form through ``betaln`` (the formula the notes'
   background states). Reports time ratio and relative error against a 50-digit Stirling-series reference.
2. Error distribution of one mechanism at n = 600: exact (library) against Monte Carlo with
   10^4 draws (the sampler). Reports the time ratio and the Monte Carlo error of the mean.
"""

from __future__ import annotations

import timeit

import numpy as np
from scipy.special import betaln

from dpbayes.posterior import release as pr
from dpbayes.core.distances import hellinger_beta


def naive_hellinger(a1, b1, a2, b2):
    log_bc = betaln((a1 + a2) / 2, (b1 + b2) / 2) - 0.5 * (betaln(a1, b1) + betaln(a2, b2))
    return np.sqrt(-np.expm1(log_bc))


def reference(a, b):
    """H(Beta(a+1, b), Beta(a, b+1)) in 50-digit arithmetic from the Stirling series of
    ln(Gamma(z + 1/2) / (Gamma(z) sqrt(z))) (valid for z >= ~100)."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 50

        def log_r(z):
            z = Decimal(float(z))
            return -1 / (8 * z) + 1 / (192 * z**3) - 1 / (640 * z**5) + Decimal(17) / (14336 * z**7)

        return float((1 - (log_r(a) + log_r(b)).exp()).sqrt())


def best_of(fn, repeat: int = 5) -> float:
    """Fastest of ``repeat`` single calls (standard-library timeit; the minimum is the least noisy)."""
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def main() -> None:
    print("1. Hellinger between Beta(a+1, b) and Beta(a, b+1)")
    for scale in (1e2, 1e4, 1e6):
        rng = np.random.default_rng(0)
        a = rng.uniform(0.2, 1.0, 20000) * scale
        b = rng.uniform(0.2, 1.0, 20000) * scale
        t_lib = best_of(lambda: hellinger_beta(a + 1, b, a, b + 1))
        t_naive = best_of(lambda: naive_hellinger(a + 1, b, a, b + 1))
        ref = np.array([reference(x, y) for x, y in zip(a[:200], b[:200])])
        err_lib = np.max(np.abs(hellinger_beta(a[:200] + 1, b[:200], a[:200], b[:200] + 1) / ref - 1))
        err_naive = np.max(np.abs(naive_hellinger(a[:200] + 1, b[:200], a[:200], b[:200] + 1) / ref - 1))
        print(f"   counts ~{scale:.0e}: time library/naive = {t_lib / t_naive:.1f}; "
              f"max rel. error library {err_lib:.1e}, naive {err_naive:.1e}")
    print("2. Error distribution at n = 600, eps = 1, uniform prior, x = 180")
    counts, eps, prior = (180, 420), 1.0, (1.0, 1.0)
    for mech in ("LSHist", "EHD", "EHDS"):
        t_exact = best_of(lambda: pr.mean_error(mech, counts, eps, prior), repeat=3)
        rng = np.random.default_rng(1)
        t_mc = best_of(lambda: pr.sample_errors(mech, counts, eps, prior, rng, 10_000).mean(), repeat=3)
        exact = pr.mean_error(mech, counts, eps, prior)
        mc = pr.sample_errors(mech, counts, eps, prior, np.random.default_rng(2), 10_000).mean()
        print(f"   {mech:7s}: time exact/MC(1e4) = {t_exact / t_mc:.2f}; exact mean {exact:.5f}, MC {mc:.5f}")


if __name__ == "__main__":
    main()
