"""Chapter 3 (adaptive truncation): online DP estimation of a normal population with SMC.

The truncate-then-Laplace observation model and its Fisher information
(:mod:`~dpbayes.smc.truncation`, the Gaussian variant in :mod:`~dpbayes.smc.gaussian_truncation`),
the SMC samplers with adaptive truncation (:mod:`~dpbayes.smc.samplers`, compiled kernels in
``_kernels``), the batch posterior by MCMC and quadrature (:mod:`~dpbayes.smc.mcmc`), the designs
of the interval and their criteria, the simulation study and its summaries, paired tests,
sampler checks, the privacy of the released stream, operation counts, and the paper's §3-4
side results (exploration, group median).

Layer 1 (a subject). May import: dpbayes.core.
"""
