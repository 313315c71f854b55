"""Which loop variables are bound to numbers or strings: their identity never matters, and
nothing can change them in place."""

from __future__ import annotations

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.state import NamespaceState

#: The type a loop variable bound to numbers or strings is given in the per-item walk.
SCALAR = "builtins.int"


def scalar_items(targets: tuple[nodes.NodeNG, ...], iterables: tuple[nodes.NodeNG, ...],
                 state: NamespaceState) -> set[str]:
    """Loop variables bound to numbers or strings: items of `range(...)`, of a literal list
    of them, of a name holding one, the index of `enumerate`, the parts of `zip` and of
    `itertools.product` of such collections."""
    found: set[str] = set()
    for target, iterable in zip(targets, iterables, strict=False):
        found |= _scalar_targets(target, iterable, state)
    return found


def _scalar_targets(target: nodes.NodeNG, iterable: nodes.NodeNG,
                    state: NamespaceState) -> set[str]:
    names = {n.name for n in target.nodes_of_class(nodes.AssignName)}
    if scalar_collection(iterable, state):
        return names
    if not isinstance(iterable, nodes.Call) or iterable.keywords:
        return set()
    parts = target.elts if isinstance(target, (nodes.Tuple, nodes.List)) else None
    view = _dict_view(iterable, state)
    if view in ("keys", "values"):
        return names
    if view == "items":
        return names if parts is not None and len(parts) == 2 else set()
    qualified = _qualified(iterable.func, state)
    if parts is None:
        return set()
    if qualified == "enumerate" and len(parts) == 2 and len(iterable.args) == 1:
        index = {n.name for n in parts[0].nodes_of_class(nodes.AssignName)}
        return index | _scalar_targets(parts[1], iterable.args[0], state)
    if qualified in ("zip", "itertools.product") and len(parts) == len(iterable.args):
        found: set[str] = set()
        for part, arg in zip(parts, iterable.args, strict=True):
            found |= _scalar_targets(part, arg, state) if qualified == "zip" else (
                {n.name for n in part.nodes_of_class(nodes.AssignName)}
                if scalar_collection(arg, state) else set())
        return found
    return set()


def _dict_view(call: nodes.Call, state: NamespaceState) -> str | None:
    """"items", "keys" or "values" for `d.items()` and the like, where `d` is a dict of
    numbers or strings; None otherwise."""
    func = call.func
    if (isinstance(func, nodes.Attribute) and func.attrname in ("items", "keys", "values")
            and not call.args and isinstance(func.expr, nodes.Name)
            and func.expr.name in state.immutable_items):
        return func.attrname
    return None


def _qualified(func: nodes.NodeNG, state: NamespaceState) -> str:
    """`product` or `itertools.product` (as imported) -> itertools.product; builtins as is."""
    head, dot, rest = func.as_string().partition(".")
    return state.imports.get(head, head) + dot + rest


def scalar_collection(node: nodes.NodeNG, state: NamespaceState) -> bool:
    """A collection whose items are numbers or strings (or tuples of them)."""
    if isinstance(node, (nodes.List, nodes.Tuple, nodes.Set)):
        return bool(node.elts) and all(constant(e, state) for e in node.elts)
    if isinstance(node, nodes.Dict):  # iterated: its keys
        return bool(node.items) and all(constant(k, state) for k, _ in node.items)
    if isinstance(node, nodes.Name):
        return node.name in state.immutable_items
    if isinstance(node, nodes.Attribute) and node.attrname in ("columns", "index"):
        return _pandas(node.expr, state)  # a frame's labels: strings, numbers, timestamps
    if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) and (
            node.func.attrname in ("tolist", "to_list") and not node.args):
        return scalar_collection(node.func.expr, state)  # df.columns.tolist()
    if isinstance(node, (nodes.ListComp, nodes.SetComp, nodes.GeneratorExp)):
        scalar: dict[str, bool] = {}  # its own names: bound to numbers or strings (the last
        for g in node.generators:  # generator binding a name decides)
            here = scalar_items((g.target,), (g.iter,), state)
            for name in g.target.nodes_of_class(nodes.AssignName):
                scalar[name.name] = name.name in here
        if any(not scalar.get(n.name, True) for n in node.elt.nodes_of_class(nodes.Name)):
            return False  # they hide whatever the notebook bound to those names
        own = frozenset(name for name, yes in scalar.items() if yes)  # [f"part{i}.csv" for
        # i in range(4)]; a generator's items are made as it is iterated, when the notebook's
        # names may hold something else: only its own names count there
        lazy = isinstance(node, nodes.GeneratorExp)
        return constant(node.elt, None if lazy else state, own)
    if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Name):
        if node.func.name == "range":
            return node.func.name not in state.bound
        if node.func.name in ("list", "tuple", "sorted", "set", "reversed") and (
                len(node.args) == 1):
            return scalar_collection(node.args[0], state)
    return False


def _pandas(node: nodes.NodeNG, state: NamespaceState) -> bool:
    """Whether `node` is a pandas frame or series (so far as its name tells)."""
    root = node.name if isinstance(node, nodes.Name) else None
    return root is not None and (state.types.get(root, "").startswith("pandas.")
                                 or "pandas" in state.families.get(root, ()))


def constant(node: nodes.NodeNG, state: NamespaceState | None = None,
             scalars: frozenset[str] = frozenset()) -> bool:
    """A number or string literal (`-1` too), an f-string, arithmetic on them (`2 * 60`) or
    on names bound to numbers or strings (`2 * base`: the `scalars`, or so typed in the
    `state`), or a tuple of them: operators on numbers and strings make numbers and strings."""
    if isinstance(node, (nodes.Const, nodes.JoinedStr)):
        return True
    if isinstance(node, nodes.UnaryOp):
        return constant(node.operand, state, scalars)
    if isinstance(node, nodes.BinOp):
        return constant(node.left, state, scalars) and constant(node.right, state, scalars)
    if isinstance(node, nodes.Name):
        return node.name in scalars or (
            state is not None and state.types.get(node.name) in kb.SCALAR_TYPES)
    return isinstance(node, nodes.Tuple) and all(constant(e, state, scalars)
                                                 for e in node.elts)
