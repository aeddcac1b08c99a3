"""Across the chapters: private releases of real data on OpenDP's noise samplers.

One proportion or count at a time (:mod:`~dpbayes.release.statistic`): OpenDP's vetted geometric or
Laplace noise, then the Bayes remap the other chapters derive, with exact risks.

Layer 2 (across the chapters). May import: dpbayes.core, dpbayes.ubapp, dpbayes.counting, dpbayes.choosing.
"""
