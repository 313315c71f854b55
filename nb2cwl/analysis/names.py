"""Which variable an expression starts from, and which variables a value may share objects with."""

from __future__ import annotations

from astroid import nodes


def root_name(node: nodes.NodeNG | None) -> str | None:
    """The variable an expression like `a.b[0].c` or `a.f().g` starts from."""
    while node is not None:
        if isinstance(node, nodes.Name):
            return node.name
        if isinstance(node, (nodes.Attribute, nodes.AssignAttr, nodes.DelAttr)):
            node = node.expr
        elif isinstance(node, nodes.Subscript):
            node = node.value
        elif isinstance(node, nodes.Call):
            node = node.func
        elif isinstance(node, nodes.Starred):
            node = node.value
        else:
            return None
    return None


def value_roots(value: nodes.NodeNG) -> set[str]:
    """Names whose objects an assigned value may share: `b = a`, `b = a[0]`, `b = [a, c]`."""
    if isinstance(value, nodes.Name):
        return {value.name}
    if isinstance(value, (nodes.Attribute, nodes.Subscript)):
        root = root_name(value)
        return {root} if root else set()
    if isinstance(value, (nodes.List, nodes.Tuple, nodes.Set)):
        found: set[str] = set()
        for element in value.elts:
            found |= value_roots(element)
        return found
    if isinstance(value, nodes.Dict):
        found = set()
        for _, item in value.items:
            found |= value_roots(item)
        return found
    if isinstance(value, nodes.IfExp):
        return value_roots(value.body) | value_roots(value.orelse)
    if isinstance(value, nodes.Starred):
        return value_roots(value.value)
    return set()


def chain_has_call(node: nodes.NodeNG) -> bool:
    """True when a receiver like `a.f().b` passes through a call (a temporary object)."""
    while isinstance(node, (nodes.Attribute, nodes.Subscript, nodes.Call)):
        if isinstance(node, nodes.Call):
            return True
        node = node.expr if isinstance(node, nodes.Attribute) else node.value
    return False
