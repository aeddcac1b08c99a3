"""dpbayes.core.privacy_loss: the one exact worst-case privacy loss, and the chapters' entry points that use it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpbayes.core import geometric, mechanisms, privacy_loss
from dpbayes.posterior import release as posterior_release, sensitivity
from dpbayes.ubapp import optimal as ubapp
from dpbayes.core.privacy_loss import exact_privacy_loss, neighbour_pairs, replace_one_pairs, worst_case_privacy_loss


def brute_force_loss(P: np.ndarray, pairs: list[tuple[int, int]]) -> float:
    """max over pairs (both orders) and outputs of log P[x, o] / P[x', o], 0/0 and 0/positive ignored."""
    worst = 0.0
    for x, y in pairs:
        for u, v in ((x, y), (y, x)):
            for o in range(P.shape[1]):
                if P[u, o] == 0.0:
                    continue
                worst = max(worst, np.inf if P[v, o] == 0.0 else float(np.log(P[u, o] / P[v, o])))
    return worst


@pytest.mark.parametrize("seed", range(4))
def test_the_loss_is_the_largest_log_ratio_over_neighbours(seed):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(5), size=6)
    if seed % 2:
        P[2, 1] = P[3, 1] = 0.0  # 0/0: ignored
        P /= P.sum(axis=1, keepdims=True)
    adjacent = [(i, i + 1) for i in range(5)]
    everyone = list(itertools.combinations(range(6), 2))
    assert worst_case_privacy_loss(P) == pytest.approx(brute_force_loss(P, adjacent), rel=1e-13)
    assert worst_case_privacy_loss(P, "all") == pytest.approx(brute_force_loss(P, everyone), rel=1e-13)
    with np.errstate(divide="ignore"):
        log_P = np.log(P)
    assert worst_case_privacy_loss(log_P, log_probabilities=True) == worst_case_privacy_loss(P)
    assert worst_case_privacy_loss(P.T, input_axis=1) == worst_case_privacy_loss(P)
    assert exact_privacy_loss(P).eps == worst_case_privacy_loss(P)


def test_an_output_possible_under_one_neighbour_only_gives_inf():
    P = np.array([[0.5, 0.5, 0.0], [0.5, 0.25, 0.25]])
    assert worst_case_privacy_loss(P) == np.inf
    assert worst_case_privacy_loss(np.array([[1.0, 0.0], [1.0, 0.0]])) == 0.0


def test_blocks_do_not_change_the_value(monkeypatch):
    P = np.random.default_rng(0).dirichlet(np.ones(7), size=30)
    full = exact_privacy_loss(P, "all")
    monkeypatch.setattr(privacy_loss, "_BLOCK_ELEMENTS", 10)
    assert exact_privacy_loss(P, "all") == full
    assert worst_case_privacy_loss(P, "all") == full.eps


def test_replace_one_pairs_of_count_vectors():
    data = np.array([c for c in itertools.product(range(3), repeat=3) if sum(c) == 2])
    pairs = replace_one_pairs(data)
    # one record changes category: the L1 distance of the count vectors is exactly 2
    expect = {(i, j) for i in range(len(data)) for j in range(len(data)) if np.abs(data[i] - data[j]).sum() == 2}
    assert {tuple(p) for p in pairs.tolist()} == expect
    with pytest.raises(ValueError, match="integer count vectors"):
        replace_one_pairs(np.ones((3, 2)))


def test_neighbour_relations_are_validated():
    assert neighbour_pairs(3).tolist() == [[0, 1], [1, 0], [1, 2], [2, 1]]
    with pytest.raises(ValueError, match="relation"):
        neighbour_pairs(3, "nearby")
    with pytest.raises(ValueError, match="sum 1"):
        worst_case_privacy_loss(np.array([[0.5, 0.4], [0.5, 0.5]]), sum_atol=1e-6)


def test_the_chapters_entry_points_are_this_loss():
    eps = 0.8
    G = geometric.truncated_geometric_matrix(12, eps)  # G[z, c]
    assert mechanisms.max_privacy_loss(G) == worst_case_privacy_loss(G, input_axis=1) == pytest.approx(eps, rel=1e-12)
    logG = np.log(G)
    assert ubapp.privacy_loss(logG, ubapp.chain_neighbours(13)) == worst_case_privacy_loss(G, input_axis=1)
    L = posterior_release.exact_log_output_distribution("LSHist", 10, eps, (1.0, 2.0))
    assert posterior_release.privacy_loss_binary("LSHist", 10, eps, (1.0, 2.0)) == worst_case_privacy_loss(L, log_probabilities=True)
    alpha = (1.0, 1.0, 2.0)
    data = sensitivity.candidate_counts(3, 3)
    logs = np.vstack([posterior_release.release_log_distribution("EHD", c, eps, alpha)[1] for c in data])
    assert posterior_release.privacy_loss_multi("EHD", 3, eps, alpha) == worst_case_privacy_loss(
        logs, replace_one_pairs(data), log_probabilities=True
    )


def test_count_summaries_and_their_neighbour_pairs():
    s = privacy_loss.count_summaries(3)
    assert s.shape == (10, 2) and np.all(s[:, 1] <= s[:, 0])
    np.testing.assert_array_equal(privacy_loss.count_summaries(3, n=2), [[2, 0], [2, 1], [2, 2]])
    rows = {tuple(r) for r in s}
    add = {(tuple(s[i]), tuple(s[j])) for i, j in privacy_loss.summary_pairs(s, "add-remove")}
    replace = {(tuple(s[i]), tuple(s[j])) for i, j in privacy_loss.summary_pairs(s, "replace-one")}
    # every pair by brute force from the definitions: sizes one apart and the smaller a sub-multiset, or same size and counts one apart
    expect_add = {(u, v) for u in rows for v in rows if abs(u[0] - v[0]) == 1
                  and (min(u, v)[1] in (max(u, v)[1], max(u, v)[1] - 1))}
    expect_replace = {(u, v) for u in rows for v in rows if u[0] == v[0] and abs(u[1] - v[1]) == 1}
    assert add == expect_add and replace == expect_replace
    with pytest.raises(ValueError, match="neighbours"):
        privacy_loss.summary_pairs(s, "swap")
    with pytest.raises(ValueError, match="0 <= c <= n"):
        privacy_loss.summary_pairs(np.array([[1, 2], [2, 2]]), "add-remove")
    with pytest.raises(ValueError, match="no two neighbours"):
        privacy_loss.summary_pairs(np.array([[1, 0], [3, 0]]), "add-remove")


def test_summary_loss_of_a_law_that_reveals_n_is_infinite_under_add_remove_only():
    # output = n exactly (no noise on n), count with a randomised response: private under replace-one only
    s = privacy_loss.count_summaries(2)
    eps = 0.7
    law = np.zeros((len(s), 3 * 2))
    for i, (k, c) in enumerate(s):
        p = np.exp(-eps * np.abs(np.arange(2) - min(c, 1)))
        law[i, 2 * k: 2 * k + 2] = p / p.sum()
    assert privacy_loss.exact_summary_privacy_loss(law, s, "replace-one").eps == pytest.approx(eps)
    assert privacy_loss.exact_summary_privacy_loss(law, s, "add-remove").eps == np.inf
    with pytest.raises(ValueError, match="one row per row"):
        privacy_loss.exact_summary_privacy_loss(law[:-1], s, "add-remove")
