"""Which variable an expression starts from, and which variables a value may share objects with."""

from __future__ import annotations

import builtins
from collections.abc import Callable

from astroid import nodes

#: Names a cell can use without defining them: Python's builtins and what IPython adds.
BUILTIN_NAMES = frozenset(dir(builtins)) | {"get_ipython", "display", "__name__", "__file__"}

CallRoots = Callable[[nodes.Call], "set[str]"]

#: Methods whose result never shares objects with the receiver (deep copies, scalars, text).
#: A shallow copy (list(a), a.copy()) shares its elements, so it counts as an alias.
FRESH_RESULT_METHODS = frozenset(
    {"deepcopy", "tolist", "to_list", "to_dict", "to_json", "to_csv", "to_string",
     "to_markdown", "to_html", "sum", "mean", "std", "var", "median", "min", "max", "count",
     "nunique", "unique", "value_counts", "describe", "round", "astype", "quantile", "prod",
     "format", "join", "split", "rsplit", "strip", "lstrip", "rstrip", "lower", "upper",
     "replace", "encode", "decode", "startswith", "endswith", "find", "index", "isna",
     "notna", "isnull", "notnull", "idxmax", "idxmin", "argmax", "argmin", "any", "all",
     "agg", "aggregate", "corr", "cov", "dot", "item", "splitlines", "title",
     "capitalize", "hex", "bit_length", "is_integer", "sort_values", "sort_index",
     "reset_index", "dropna", "fillna", "merge", "apply", "map", "score", "predict",
     "predict_proba", "predict_log_proba", "decision_function"}
)
#: Builtins whose result holds the very objects of their arguments (list(d.values()), ...),
#: or is part of them (vars(o) is o's namespace, getattr(o, "x") its attribute).
ELEMENT_SHARING_BUILTINS = frozenset(
    {"list", "tuple", "set", "frozenset", "sorted", "reversed", "enumerate", "zip", "iter",
     "next", "filter", "dict", "min", "max", "vars", "getattr", "memoryview"}
)


#: Methods whose result holds its receiver, but whose items, iterated, are new objects (the
#: groups of a groupby, the windows of a rolling, the rows of iterrows).
FRESH_ITEM_METHODS = frozenset({"groupby", "rolling", "expanding", "ewm", "resample",
                                "iterrows", "itertuples"})


def fresh_items(iterable: nodes.NodeNG) -> bool:
    """`for key, group in df.groupby("k")`: the items are new objects, sharing nothing."""
    return (isinstance(iterable, nodes.Call) and isinstance(iterable.func, nodes.Attribute)
            and iterable.func.attrname in FRESH_ITEM_METHODS)


def only_keys(node: nodes.NodeNG) -> bool:
    """`d.keys()`: a live view of d, but what is copied out of it (list(d.keys())) is keys,
    which are hashable and so, in practice, never changed."""
    return (isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute)
            and node.func.attrname == "keys" and not node.args and not node.keywords)


def item_bindings(target: nodes.NodeNG, iterable: nodes.NodeNG) -> dict[str, set[str]]:
    """For `for target in iterable`: which collections each loop variable is an item of.

    Keys of a mapping (`for k, v in d.items()`, `for k in d.keys()`) are hashable, so in
    practice immutable: they share nothing that could be modified.
    """
    roots = set() if fresh_items(iterable) else value_roots(iterable)
    names = [n.name for n in target.nodes_of_class(nodes.AssignName)]
    method = (iterable.func.attrname if isinstance(iterable, nodes.Call)
              and isinstance(iterable.func, nodes.Attribute) else None)
    if method == "keys":
        return {name: set() for name in names}
    bindings = {name: set(roots) for name in names}
    if method == "items" and isinstance(target, (nodes.Tuple, nodes.List)) and target.elts:
        for key in target.elts[0].nodes_of_class(nodes.AssignName):
            bindings[key.name] = set()
    return bindings


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


def value_roots(value: nodes.NodeNG, call_roots: CallRoots | None = None) -> set[str]:
    """Names whose objects an assigned value may share: `b = a`, `b = a[0]`, `b = [a, c]`.

    `call_roots` says what a call's result may hold (the walker knows the notebook's
    functions); without it, only methods of a value and builtins that keep their arguments'
    items count.
    """
    def roots(node: nodes.NodeNG) -> set[str]:
        return value_roots(node, call_roots)

    if isinstance(value, nodes.Name):
        return {value.name}
    if isinstance(value, (nodes.Attribute, nodes.Subscript)):
        inner = value
        while isinstance(inner, (nodes.Attribute, nodes.Subscript)):
            inner = inner.expr if isinstance(inner, nodes.Attribute) else inner.value
        if isinstance(inner, nodes.Call):  # f(x)[0] belongs to what f returned
            return roots(inner)
        root = root_name(value)
        return {root} if root else set()
    if isinstance(value, (nodes.List, nodes.Tuple, nodes.Set)):
        found: set[str] = set()
        for element in value.elts:
            found |= roots(element)
        return found
    if isinstance(value, nodes.Dict):
        found = set()
        for _, item in value.items:
            found |= roots(item)
        return found
    if isinstance(value, nodes.IfExp):
        return roots(value.body) | roots(value.orelse)
    if isinstance(value, nodes.Starred):
        return roots(value.value)
    if isinstance(value, (nodes.ListComp, nodes.SetComp, nodes.GeneratorExp, nodes.DictComp)):
        # [x for x in xs] holds xs's own items; the comprehension's own names are not roots
        parts = [value.key, value.value] if isinstance(value, nodes.DictComp) else [value.elt]
        found = set().union(*(roots(p) for p in parts))
        own: set[str] = set()
        for generator in value.generators:
            own |= {n.name for n in generator.target.nodes_of_class(nodes.AssignName)}
        if found & own:  # the results are the items themselves: they share the collection's
            for generator in value.generators:
                if not only_keys(generator.iter):
                    found |= roots(generator.iter)
        return found - own
    if isinstance(value, nodes.Call):
        if call_roots is not None:
            return call_roots(value)
        func = value.func
        if isinstance(func, nodes.Attribute):
            # d.items(), d.get(k), arr.reshape(...): the result may hold the receiver's objects
            if func.attrname in FRESH_RESULT_METHODS:
                return set()
            root = root_name(func.expr)
            return {root} if root else set()
        if isinstance(func, nodes.Name) and func.name in ELEMENT_SHARING_BUILTINS:
            found = set()
            for arg in value.args:
                if not only_keys(arg):
                    found |= roots(arg)
            return found
    return set()


def chain_has_call(node: nodes.NodeNG) -> bool:
    """True when a receiver like `a.f().b` passes through a call (a temporary object)."""
    while isinstance(node, (nodes.Attribute, nodes.Subscript, nodes.Call)):
        if isinstance(node, nodes.Call):
            return True
        node = node.expr if isinstance(node, nodes.Attribute) else node.value
    return False


def chain_has_attribute(node: nodes.NodeNG, attribute: str) -> bool:
    """`df.style.format(...).highlight_max`: the chain passes through `.style`."""
    while isinstance(node, (nodes.Attribute, nodes.Subscript, nodes.Call)):
        if isinstance(node, nodes.Attribute) and node.attrname == attribute:
            return True
        node = (node.expr if isinstance(node, nodes.Attribute)
                else node.func if isinstance(node, nodes.Call) else node.value)
    return False

def is_itself(node: nodes.NodeNG) -> bool:
    """Whether `node` is the object its name holds, not an item in it: `d`, and a frame's
    indexers (`d.loc`, `d.iloc`, `d.at`, `d.iat`), through which a store goes into `d`."""
    return isinstance(node, nodes.Name) or (
        isinstance(node, nodes.Attribute) and node.attrname in ("loc", "iloc", "at", "iat")
        and isinstance(node.expr, nodes.Name))
