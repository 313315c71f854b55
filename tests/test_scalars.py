"""Which collections hold only numbers and strings (analysis/scalars.py): their items have no
identity to keep, so loops over them may scatter."""

from __future__ import annotations

import astroid
import pytest

from nb2cwl.analysis.scalars import constant, scalar_collection
from nb2cwl.analysis.state import NamespaceState


def _expression(code: str) -> astroid.nodes.NodeNG:
    return astroid.extract_node(code)


@pytest.mark.parametrize("code", [
    "[60, 2 * 60]", "[-1, +2, 3 ** 2 - 1]", "('a' + 'b', f'part{i}.csv')",
    "[f'part{i}.csv' for i in range(4)]", "[i * 2 for i in range(4)]",
    "[(i, j) for i in range(3) for j in ['a', 'b']]", "[base, 2 * base]", "{'a': 1, 'b' * 2: 2}",
])
def test_numbers_and_strings_made_by_operators_and_comprehensions(code: str) -> None:
    state = NamespaceState()
    state.types["base"] = "builtins.int"
    assert scalar_collection(_expression(code), state)


@pytest.mark.parametrize("code", [
    "[[1] * 3]",  # a list: mutable, whatever it holds
    "[arr * 2]",  # arr: nothing known of it
    "[x * 2 for x in arrays]",  # the comprehension's x hides the notebook's number x
    "[x for x in frames]",
    "[base * frame]",
    "[]",  # empty: what it will hold is not known
])
def test_anything_else_is_not(code: str) -> None:
    state = NamespaceState()
    state.types["base"] = "builtins.int"
    state.types["x"] = "builtins.int"
    assert not scalar_collection(_expression(code), state)


def test_a_name_counts_only_with_what_is_known_of_it() -> None:
    node = _expression("2 * base")
    assert not constant(node)
    assert constant(node, scalars=frozenset({"base"}))
