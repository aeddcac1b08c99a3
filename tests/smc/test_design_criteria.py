"""Design criteria of the truncation interval: losses, the mirror design, multi-start optima."""

import numpy as np
import pytest

from dpbayes.smc import design_criteria as dc
from dpbayes.smc import truncation


def test_losses_on_known_matrices():
    F = np.array([[4.0, 1.0], [1.0, 2.0]])  # det 7, inverse [[2, -1], [-1, 4]] / 7
    assert dc.criterion_loss(F, "F_mumu") == pytest.approx(0.25)
    assert dc.criterion_loss(F, "harmonic") == pytest.approx(0.25 + 0.5)
    assert dc.criterion_loss(F, "A") == pytest.approx(6.0 / 7.0)
    assert dc.criterion_loss(F, "D") == pytest.approx(1.0 / 7.0)
    np.testing.assert_allclose(dc.cramer_rao_bounds(F, 7), np.sqrt(np.diag(np.linalg.inv(F)) / 7))
    diag = np.diag([4.0, 2.0])
    assert dc.criterion_loss(diag, "A") == pytest.approx(dc.criterion_loss(diag, "harmonic"))
    singular = np.array([[1.0, 1.0], [1.0, 1.0]])
    assert np.isinf(dc.criterion_loss(singular, "A")) and np.isinf(dc.criterion_loss(singular, "D"))
    assert np.all(np.isinf(dc.cramer_rao_bounds(singular, 10)))
    # batches broadcast over the leading axes
    assert dc.criterion_loss(np.stack([F, diag, singular]), "D").shape == (3,)


def test_mirror_design_has_the_diagonal_of_one_orientation_and_no_correlation():
    F = dc.design_information(0.3, 1.1, 2.0, "offcentre")
    M = dc.design_information(0.3, 1.1, 2.0, "mirror")
    assert abs(F[0, 1]) > 1e-3
    np.testing.assert_allclose(np.diag(M), np.diag(F), rtol=1e-10)
    assert abs(M[0, 1]) < 1e-10 * M[0, 0]
    # so the A-loss of the mirror design is the harmonic loss of the interval
    assert dc.criterion_loss(M, "A") == pytest.approx(float(dc.criterion_loss(F, "harmonic")), rel=1e-9)
    np.testing.assert_allclose(dc.design_information(-0.5, 0.5, 1.0, "symmetric"), truncation.fisher_information(-0.5, 0.5, 1.0))


def test_symmetric_optimum_of_the_paper_score_is_the_chapters_exact_optimum():
    for eps in (1.0, 5.0):
        opt = dc.optimal_design(eps, "F_mumu", "symmetric", n_starts=6)
        _, b = truncation.best_interval(eps, "paper", refine=True)
        assert opt.b == pytest.approx(b, rel=3e-4)  # a flat optimum: ~1e-4 from the stopping rule
        assert opt.a == pytest.approx(-opt.b)


def test_offcentre_harmonic_optimum_matches_the_chapters_search_and_is_bad_under_a():
    eps = 1.0
    h = dc.optimal_design(eps, "harmonic", "offcentre", n_starts=6)
    a_ref, b_ref, _ = truncation.best_interval_asymmetric(eps, "harmonic")
    assert (h.a, h.b) == pytest.approx((a_ref, b_ref), abs=2e-3)
    a_opt = dc.optimal_design(eps, "A", "offcentre", n_starts=6)
    # the A-optimum is no worse than any interval tried, and far better than the harmonic optimum under A
    F_h = dc.design_information(h.a, h.b, eps)
    assert a_opt.loss <= float(dc.criterion_loss(F_h, "A")) / 10
    rng = np.random.default_rng(0)
    c = rng.uniform(-1.5, 1.5, 200)
    w = np.exp(rng.uniform(np.log(0.05), np.log(8.0), 200))
    losses = dc.criterion_loss(dc.design_information(c - w / 2, c + w / 2, eps), "A")
    assert a_opt.loss <= losses.min() * (1 + 1e-6)
    # and the mirror design of the harmonic interval beats every fixed interval under A
    m = dc.optimal_design(eps, "A", "mirror", n_starts=6)
    assert m.loss == pytest.approx(h.loss, rel=1e-5)
    assert m.loss < a_opt.loss


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="criterion"):
        dc.criterion_loss(np.eye(2), "E")
    with pytest.raises(ValueError, match="design"):
        dc.design_information(-1.0, 1.0, 1.0, "random")
    with pytest.raises(ValueError, match="a = -b"):
        dc.design_information(-1.0, 2.0, 1.0, "symmetric")
    with pytest.raises(ValueError, match="eps"):
        dc.optimal_design(0.0, "A", "symmetric")
    with pytest.raises(ValueError, match="n_starts"):
        dc.optimal_design(1.0, "A", "symmetric", n_starts=1)
    with pytest.raises(ValueError, match="F"):
        dc.criterion_loss(np.eye(3), "A")
