"""The base layer: what every chapter stands on.

The two-sided and truncated geometric laws of a count (:mod:`~dpbayes.core.geometric`), the
additive-noise mechanisms (:mod:`~dpbayes.core.mechanisms`), the exact worst-case privacy loss of a
finite output law (:mod:`~dpbayes.core.privacy_loss`) and the privacy audit built on it
(:mod:`~dpbayes.core.audit`), loss matrices and distances between posteriors, locating an extreme,
input validation, optional dependencies and the switch of the compiled kernels (:mod:`~dpbayes.core.compiled`),
task executors, the C allocator's thresholds (:mod:`~dpbayes.core.allocator`) and the shipped data set.

Layer 0. May import: nothing else of dpbayes.
"""
