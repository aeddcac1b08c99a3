"""Across the chapters: private releases of real data on OpenDP's noise samplers.

One proportion or count at a time (:mod:`~dpbayes.release.statistic`): OpenDP's vetted geometric or
Laplace noise, then the Bayes remap the other chapters derive, with exact risks.
A table of binary attributes, records in, under one budget (:mod:`~dpbayes.release.table`): OpenDP's
compositor and its geometric measurement on the vector of counts, each attribute post-processed by the
estimator :func:`dpbayes.choosing.decision.recommend` chooses (each attribute at its share of the budget).
One categorical column as a histogram (:mod:`~dpbayes.release.histogram`): every category's count under one
budget, which the categories share without splitting it.

Layer 2 (across the chapters). May import: dpbayes.core, dpbayes.ubapp, dpbayes.counting, dpbayes.choosing.
"""
