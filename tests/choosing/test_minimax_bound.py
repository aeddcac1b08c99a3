"""dpbayes.choosing.minimax_bound: the worst case of a large count from its ends only."""

from __future__ import annotations

import numpy as np
import pytest

from dpbayes.choosing import decision
from dpbayes.choosing import minimax_bound as mb
from dpbayes.choosing.candidates import compare_estimators, minimax_certificate

SETTINGS = [(100, 20.0), (400, 5.0), (2000, 1.0), (3000, 0.5)]


@pytest.mark.parametrize("n, eps", SETTINGS)
def test_the_worst_risk_is_the_exact_one_over_every_count(n, eps):
    exact = compare_estimators(n, eps, candidates=["geometric"]).worst_risk[0] * n**2
    assert mb.clamped_geometric_worst_risk(n, eps) == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("n, eps", SETTINGS)
def test_the_lower_bound_is_below_every_remap_and_close_to_the_count(n, eps):
    """Below the minimax remap's worst risk and the certificate of its optimum; the count within 1 % of it."""
    lower = mb.count_minimax_lower_bound(n, eps)
    cert = minimax_certificate(n, eps)
    minimax_worst = compare_estimators(n, eps, candidates=["geometric-minimax"]).worst_risk[0] * n**2
    assert lower <= cert.lower_bound * n**2 * (1 + 1e-12) and lower <= minimax_worst
    assert mb.clamped_geometric_worst_risk(n, eps) <= lower * 1.0101


def test_the_bound_closes_as_the_count_grows_and_refuses_small_counts():
    eps = 0.5
    gaps = [mb.clamped_geometric_worst_risk(n, eps) / mb.count_minimax_lower_bound(n, eps) - 1 for n in (3000, 30_000, 300_000)]
    assert gaps[0] > gaps[1] > gaps[2] > 0 and gaps[2] < 1e-4
    width = mb.tail_width(eps)
    assert mb.count_minimax_lower_bound(2 * width - 1, eps) is None and mb.clamped_geometric_worst_risk(2 * width - 1, eps) is None
    # the whole noise law inside the window: q^D has underflowed
    assert np.exp(-eps * width) == 0.0


def test_a_large_count_is_decided_by_the_bound_as_the_full_comparison_decides(monkeypatch):
    n, eps = 100_000, 1.0
    quick = decision.recommend(n, eps)
    assert quick.comparison is None and quick.candidate == "geometric"
    assert quick.worst_risk <= quick.minimax_lower_bound * (1 + quick.tie)
    monkeypatch.setattr(decision, "BOUND_MIN_N", 10**9)
    full = decision.recommend(n, eps)
    assert full.comparison is not None and full.candidate == quick.candidate
    assert full.worst_risk == pytest.approx(quick.worst_risk, rel=1e-12)
    assert full.minimax_lower_bound >= quick.minimax_lower_bound * (1 - 1e-9)


def test_the_release_reports_the_same_worst_risk_either_way(monkeypatch):
    pytest.importorskip("opendp")
    from dpbayes.release.statistic import GeometricCountRelease

    n, eps = 5000, 0.8
    quick = GeometricCountRelease(n, eps).risks()
    monkeypatch.setattr(mb, "clamped_geometric_worst_risk", lambda n, eps: None)
    full = GeometricCountRelease(n, eps).risks()
    assert quick[0] is None and full[0] is None
    assert quick[1] == pytest.approx(full[1], rel=1e-12)
