"""The type of a value, read off its syntax or inferred with astroid, to judge method calls."""

from __future__ import annotations

from collections.abc import Callable

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.names import root_name
from nb2cwl.analysis.state import NamespaceState

CONTAINERS_OF_KNOWN = frozenset({"numpy.ndarray", "pandas.DataFrame", "pandas.Series"})
_NUMPY_ARRAY_FUNCS = frozenset(
    {"array", "asarray", "zeros", "ones", "empty", "full", "arange", "linspace", "eye",
     "identity", "concatenate", "stack", "vstack", "hstack", "load", "loadtxt", "genfromtxt",
     "dot", "matmul", "where", "sqrt", "exp", "log", "abs", "cumsum", "diff", "sort",
     "zeros_like", "ones_like", "full_like", "random.rand", "random.randn", "random.random",
     "random.normal", "random.uniform", "random.randint", "random.choice", "random.permutation"}
)


class ValueTypes:
    """Mixin for the effect walker: what type a receiver or assigned value has."""

    state: NamespaceState
    infer_type: Callable[[nodes.NodeNG], str | None] | None

    qualify: Callable[[nodes.NodeNG], str | None]  # provided by the effect walker

    def type_of(self, node: nodes.NodeNG) -> str | None:
        """The qualified type of an expression's value, when known."""
        if isinstance(node, nodes.Name):
            known = self.state.types.get(node.name)
            if known:
                return known
        if self.infer_type is not None:
            return self.infer_type(node)
        return None

    def syntactic_type(self, value: nodes.NodeNG) -> str | None:
        """The type of an assigned value read off its syntax (no inference)."""
        if isinstance(value, (nodes.List, nodes.ListComp)):
            return "builtins.list"
        if isinstance(value, (nodes.Dict, nodes.DictComp)):
            return "builtins.dict"
        if isinstance(value, (nodes.Set, nodes.SetComp)):
            return "builtins.set"
        if isinstance(value, nodes.Tuple):
            return "builtins.tuple"
        if isinstance(value, nodes.JoinedStr):
            return "builtins.str"
        if isinstance(value, nodes.BinOp) and value.op in ("+", "%"):
            sides = {self.syntactic_type(value.left), self.syntactic_type(value.right)}
            if ("builtins.str" in sides and value.op == "+") or (
                    value.op == "%" and self.syntactic_type(value.left) == "builtins.str"):
                return "builtins.str"
        if isinstance(value, nodes.Const):
            return f"builtins.{type(value.value).__name__}"
        if isinstance(value, nodes.Call) and isinstance(value.func, nodes.Attribute) and (
                value.func.attrname in kb.HOLDING_METHODS):  # df.groupby("k"), s.rolling(3)
            root = root_name(value.func.expr)
            if root and (self.state.types.get(root, "").startswith("pandas.")
                         or "pandas" in self.state.families.get(root, ())):
                return kb.HOLDING_METHODS[value.func.attrname]
        if isinstance(value, (nodes.Call, nodes.Subscript, nodes.Attribute)):
            # a method result, item or column of an array or frame is again one
            root = root_name(value)
            method_or_item = (not isinstance(value, nodes.Call)
                              or isinstance(value.func, nodes.Attribute))
            if root and self.state.types.get(root) in CONTAINERS_OF_KNOWN and method_or_item:
                if leaves_arrays(value):
                    return None  # df.to_dict(), a.tolist(), df.attrs: Python objects
                return self.state.types[root]
        if isinstance(value, nodes.Call):
            qualified = self.qualify(value.func)
            if qualified in kb.CONSTRUCTOR_TYPES:
                return kb.CONSTRUCTOR_TYPES[qualified]
            if qualified and qualified.removeprefix("numpy.") in _NUMPY_ARRAY_FUNCS and (
                    qualified.startswith("numpy.")):
                return "numpy.ndarray"
            if qualified and qualified.startswith("pandas.read_"):
                return "pandas.DataFrame"
        return None


#: Methods and attributes of arrays and frames whose result is not one: Python objects (lists,
#: dicts, tuples, numbers) whose copies share their items.
_PYTHON_RESULTS = frozenset({
    "tolist", "to_list", "to_dict", "to_records", "to_json", "to_string", "to_csv",
    "to_markdown", "to_html", "item", "items", "keys", "attrs", "shape", "dtypes", "dtype",
    "ndim", "size", "flags", "nbytes", "columns", "index", "strides"})


def leaves_arrays(value: nodes.NodeNG) -> bool:
    """Whether the chain `value` (`df.to_dict("list")["a"]`) passes through a method or an
    attribute whose result is no longer an array or a frame."""
    node = value
    while isinstance(node, (nodes.Attribute, nodes.Subscript, nodes.Call)):
        if isinstance(node, nodes.Attribute) and node.attrname in _PYTHON_RESULTS:
            return True
        node = (node.expr if isinstance(node, nodes.Attribute)
                else node.func if isinstance(node, nodes.Call) else node.value)
    return False
