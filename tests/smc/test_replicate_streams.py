"""The random streams of a replicate (dpbayes.smc.replicate_streams)."""

import numpy as np
import pytest

from dpbayes.smc.replicate_streams import STREAMS, replicate_streams


def test_streams_are_the_spawned_children_in_order() -> None:
    # the layout the stored runs were made with: SeedSequence([seed, eps_index, run]).spawn(6), then the coins
    streams = replicate_streams(3, 1, 2)
    assert tuple(streams) == STREAMS
    old = [np.random.default_rng(s) for s in np.random.SeedSequence([3, 1, 2]).spawn(6)]
    for name, gen in zip(STREAMS[:6], old):
        assert np.array_equal(streams[name].random(5), gen.random(5))
    coins = np.random.default_rng(np.random.SeedSequence([3, 1, 2]).spawn(7)[6])
    assert np.array_equal(streams["mirror-coin"].random(5), coins.random(5))


def test_replicates_differ_and_repeat() -> None:
    a, b = replicate_streams(1, 0, 0)["data"].random(4), replicate_streams(1, 0, 1)["data"].random(4)
    assert not np.array_equal(a, b)
    assert np.array_equal(a, replicate_streams(1, 0, 0)["data"].random(4))


@pytest.mark.parametrize("bad", [{"seed": -1}, {"eps_index": 1.5}, {"run": True}])
def test_bad_coordinates_are_refused_by_name(bad: dict) -> None:
    args = {"seed": 1, "eps_index": 0, "run": 0} | bad
    name = next(iter(bad))
    with pytest.raises((ValueError, TypeError), match=name):
        replicate_streams(**args)
