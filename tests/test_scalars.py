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


def test_a_name_bound_twice_in_a_comprehension_is_what_it_was_last_bound_to() -> None:
    state = NamespaceState()
    assert not scalar_collection(_expression("[x for x in range(3) for x in frames]"), state)
    assert scalar_collection(_expression("[x for x in frames for x in range(3)]"), state)


def test_a_generators_items_count_only_its_own_names() -> None:
    """A generator makes its items as it is iterated: `base` may hold something else by
    then."""
    state = NamespaceState()
    state.types["base"] = "builtins.int"
    assert scalar_collection(_expression("[base * i for i in range(3)]"), state)
    assert not scalar_collection(_expression("(base * i for i in range(3))"), state)
    assert scalar_collection(_expression("(2 * i for i in range(3))"), state)


def test_a_function_that_rebinds_a_global_makes_what_it_holds_unknown(tmp_path) -> None:
    """`reset()` binds `base` to a list: the loop over `[base, 2 * base]` then appends to
    objects all its iterations share, and stays sequential."""
    import nbformat

    from nb2cwl.api import compile_notebook

    path = tmp_path / "nb.ipynb"
    cells = ["base = 5", "def reset():\n    global base\n    base = [0]", "reset()",
             "out = []\nfor n in [base, 2 * base]:\n    n.append(1)\n    out.append(len(n))"]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c)
                                                   for c in cells]), path)
    workflow = compile_notebook(str(path))
    assert not any(step.name.endswith("_map") for step in workflow.steps)
    assert any("modifies base" in fallback.reason for fallback in workflow.fallbacks), \
        workflow.fallbacks  # the true hazard, not a loop thought too light to scatter
