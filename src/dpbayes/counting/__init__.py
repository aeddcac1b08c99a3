"""Chapter 4 (counting queries): Bayes estimation of a count released with Laplace noise.

The model, its posterior and the Bayes estimates (:mod:`~dpbayes.counting.model`), their exact
error metrics (:mod:`~dpbayes.counting.metrics`), risk at a fixed count and under a wrong prior
(:mod:`~dpbayes.counting.risk`), credible intervals (:mod:`~dpbayes.counting.credible`), large-n
limits (:mod:`~dpbayes.counting.limits`), an individual's posterior odds
(:mod:`~dpbayes.counting.odds`) and the prior-free geometric baseline with the optimum over every
private estimator (:mod:`~dpbayes.counting.geometric`).

Layer 1 (a subject). May import: dpbayes.core, dpbayes.ubapp (the LP optimum over private estimators).
"""
