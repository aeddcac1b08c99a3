"""Chapter 2 (the notes on Laplace optimality): releasing a Beta/Dirichlet posterior privately.

Sensitivities of the Hellinger utility (:mod:`~dpbayes.posterior.sensitivity`), the registry of
release mechanisms with their exact laws (:mod:`~dpbayes.posterior.mechanisms`), the exact law of a
release's error (:mod:`~dpbayes.posterior.accuracy`), the best eps-DP release
(:mod:`~dpbayes.posterior.optimal`), the geometric release as the yardstick
(:mod:`~dpbayes.posterior.geometric`), the notes' statements checked exactly
(:mod:`~dpbayes.posterior.statements`), and one front for the chapter's notebooks
(:mod:`~dpbayes.posterior.release`).

Layer 1 (a subject). May import: dpbayes.core, dpbayes.ubapp (the LP of a count and its certificates).
"""
