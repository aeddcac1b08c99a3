"""Across the chapters (chapter 5): which private estimator of a proportion or a count to use.

Exact risks of every candidate estimator and their comparison (:mod:`~dpbayes.choosing.candidates`),
and the comparisons that rest on them: the risk at a fixed theta and its worst case
(:mod:`~dpbayes.choosing.fixed_theta`), the worst-case optimal remap of the geometric count with
its certificate (:mod:`~dpbayes.choosing.minimax`), sample complexity (:mod:`~dpbayes.choosing.sample_complexity`),
UBaPP's advantage over the Laplace baselines (:mod:`~dpbayes.choosing.ubapp_advantage`) and what the
Bayes gain of a noisy count needs (:mod:`~dpbayes.choosing.counting_gain`).

Layer 2 (across the chapters). May import: dpbayes.core, dpbayes.ubapp, dpbayes.counting.
"""
