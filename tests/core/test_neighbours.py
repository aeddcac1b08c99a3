"""dpbayes.core.neighbours: the two neighbour relations, named once and checked."""

from __future__ import annotations

import pytest

from dpbayes.core import neighbours


def test_the_relations_are_named_once():
    assert neighbours.NEIGHBOUR_RELATIONS == (neighbours.REPLACE_ONE, neighbours.ADD_REMOVE) == ("replace-one", "add-remove")
    for name in neighbours.NEIGHBOUR_RELATIONS:
        assert neighbours.check_neighbours(name) == name


@pytest.mark.parametrize("value, error", [("bounded", ValueError), ("Replace-One", ValueError), (1, TypeError), (None, TypeError)])
def test_an_unknown_relation_is_refused_by_name(value, error):
    with pytest.raises(error, match="relation|neighbours") as info:
        neighbours.check_neighbours(value, "relation")
    assert "relation" in str(info.value) and "'add-remove'" in str(info.value)
