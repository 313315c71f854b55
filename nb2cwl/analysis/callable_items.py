"""Loop variables bound to a library's functions or classes: `for name, cls in
{"lr": LogisticRegression, "tree": DecisionTreeClassifier}.items()`.

Calling such a variable is calling one of those callables: it draws, reads files or makes
objects as they do (`random_state` decides), and changes neither the callable nor the
collection it came from. The dict's keys are constants.
"""

from __future__ import annotations

from astroid import nodes

from nb2cwl.analysis.state import NamespaceState


def callable_loop_items(target: nodes.NodeNG, iterable: nodes.NodeNG, state: NamespaceState,
                        ) -> tuple[dict[str, frozenset[str]], set[str]]:
    """({loop variable: the callables it may be}, the loop variables that are constant keys)
    for a loop over a named collection of library callables; ({}, set()) for any other."""
    collections = state.callable_collections
    if isinstance(iterable, nodes.Name) and iterable.name in collections:
        if isinstance(target, nodes.AssignName) and not _is_dict(iterable.name, state):
            return {target.name: collections[iterable.name]}, set()
        return {}, set()
    if not (isinstance(iterable, nodes.Call) and not iterable.args
            and isinstance(iterable.func, nodes.Attribute)
            and isinstance(iterable.func.expr, nodes.Name)
            and iterable.func.expr.name in collections
            and _is_dict(iterable.func.expr.name, state)):
        return {}, set()
    held = collections[iterable.func.expr.name]
    view = iterable.func.attrname
    if view == "values" and isinstance(target, nodes.AssignName):
        return {target.name: held}, set()
    if view == "items" and isinstance(target, nodes.Tuple) and len(target.elts) == 2 and all(
            isinstance(part, nodes.AssignName) for part in target.elts):
        key, value = target.elts
        return {value.name: held}, {key.name}
    return {}, set()


def _is_dict(name: str, state: NamespaceState) -> bool:
    return state.types.get(name) == "builtins.dict"
