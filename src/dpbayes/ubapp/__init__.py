"""Chapter 1 (the UBaPP paper): the optimal eps-DP Bayes point estimate of a binomial proportion.

The linear program and the exact solver of the optimal private Bayes estimator
(:mod:`~dpbayes.ubapp.optimal`), its dual certificates (:mod:`~dpbayes.ubapp.certificates`), the
Laplace baseline LBaPP (:mod:`~dpbayes.ubapp.lbapp`), where the solver's optimality holds
(:mod:`~dpbayes.ubapp.scope`) and the posterior-median remap under absolute loss
(:mod:`~dpbayes.ubapp.median_remap`).

Layer 1 (a subject). May import: dpbayes.core.
"""
