"""Whether a loop is worth a process per chunk: its items call something substantial."""

from __future__ import annotations

from astroid import nodes

from nb2cwl.analysis.names import root_name, value_roots
from nb2cwl.analysis.skeletons.model import Piece
from nb2cwl.analysis.state import NamespaceState

_CHEAP_CALLS = frozenset(
    {"len", "str", "int", "float", "bool", "abs", "round", "min", "max", "range", "enumerate",
     "zip", "sorted", "list", "dict", "set", "tuple", "print", "repr", "format", "isinstance",
     "type", "hash", "ord", "chr", "divmod", "pow", "sum", "any", "all", "reversed", "iter",
     "next", "getattr", "hasattr", "id"}
)
#: Modules whose functions are too quick to be worth a process per chunk.
_CHEAP_MODULES = frozenset({"math", "cmath", "operator", "string", "re", "json", "decimal",
                            "fractions", "statistics", "itertools", "functools", "datetime"})
#: Methods that usually do real work (models, files, network, simulations).
_HEAVY_METHODS = frozenset(
    {"fit", "predict", "predict_proba", "transform", "fit_transform", "train", "evaluate",
     "score", "compute", "run", "process", "read", "load", "read_text", "read_bytes",
     "download", "resample", "solve", "simulate", "render", "infer", "generate", "encode",
     "decode", "apply", "minimize", "optimize", "sample", "query", "request", "get", "post"}
)

def scatter_hinted(iterables: tuple[nodes.NodeNG, ...], piece: Piece) -> bool:
    return any(value_roots(i) & piece.scatter_over for i in iterables)


def hints_used(parts: list[nodes.NodeNG], piece: Piece) -> tuple[bool, bool]:
    called = set()
    for part in parts:
        for node in part.nodes_of_class(nodes.Call):
            name = root_name(node.func)
            if name:
                called.add(name)
        if isinstance(part, nodes.Name):
            called.add(part.name)
    return bool(called & (piece.hinted | piece.gpu_hinted)), bool(called & piece.gpu_hinted)


def worth_it(parts: list[nodes.NodeNG], state: NamespaceState, mapped: bool = False) -> bool:
    """Per-item work calls something that may take time, not just cheap builtins and math.

    Splitting costs a process per chunk, so only calls of the notebook's own functions,
    library functions outside cheap modules, and methods known to be heavy count.
    """
    for part in parts:
        if mapped:
            return True  # map(f, xs): f itself is the work
        for node in part.nodes_of_class(nodes.Call):
            func = node.func
            if isinstance(func, nodes.Name):
                if func.name in state.functions:
                    return True
                if func.name in _CHEAP_CALLS:
                    continue
                qualified = state.imports.get(func.name)
                if qualified is None or qualified.split(".")[0] not in _CHEAP_MODULES:
                    return True
            elif isinstance(func, nodes.Attribute):
                root = root_name(func)
                if root in state.imports:
                    if state.imports[root].split(".")[0] not in _CHEAP_MODULES:
                        return True
                elif func.attrname in _HEAVY_METHODS:
                    return True
    return False


