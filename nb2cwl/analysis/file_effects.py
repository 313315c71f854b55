"""File effects of calls: known paths read and written (analysis/string_values.py), and I/O the
analysis cannot follow."""

from __future__ import annotations

from collections.abc import Callable

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.effects import Effects
from nb2cwl.analysis.names import chain_has_call, root_name
from nb2cwl.analysis.state import NamespaceState
from nb2cwl.analysis.string_values import iteration_values, string_values

#: open() and its relatives: the path is the first argument, the mode the second.
OPEN_FUNCTIONS = frozenset({"open", "io.open", "builtins.open", "gzip.open", "bz2.open",
                            "lzma.open"})


class FileEffects:
    """Mixin for the effect walker: records file reads, writes and opaque I/O of calls."""

    fx: Effects
    state: NamespaceState
    function_mode: bool
    locals: set[str]
    params: tuple[str, ...]
    comprehension_names: set[str]
    declared_globals: set[str]
    lazy: int
    qualify: Callable[[nodes.NodeNG], str | None]

    def _strings(self, node: nodes.NodeNG | None) -> frozenset[str] | None:
        """The strings `node` may be here: its names are the notebook's globals as known now,
        but a comprehension's own; in a function body, its own names and the globals it
        binds are unknown, and another global only a constant string (the body runs when
        called); in a generator expression, which runs when consumed, every name."""
        hidden = set(self.comprehension_names)
        if self.function_mode:
            hidden |= self.locals | set(self.params) | self.declared_globals
        return string_values(node, self.state, hidden, self.function_mode, self.lazy > 0)

    def _literal(self, node: nodes.NodeNG | None) -> str | None:
        values = self._strings(node)
        return next(iter(values)) if values is not None and len(values) == 1 else None

    def _files(self, node: nodes.Call, qualified: str | None, line: int) -> None:
        func = node.func
        if qualified in OPEN_FUNCTIONS:
            mode = argument(node, 1, "mode")
            mode_text = self._literal(mode) if mode is not None else "r"
            self._file_access(argument(node, 0, "file"), _open_mode(mode_text), line, "open()")
            return
        if qualified in kb.FILE_FUNCTIONS:
            spec = kb.FILE_FUNCTIONS[qualified]
            self._file_access(argument(node, spec.position, spec.keyword), spec.mode, line,
                              qualified + "()")
            return
        if qualified in kb.OPAQUE_READ_FUNCTIONS:
            path = self._literal(argument(node, 0, None))
            if path is None or any(c in path for c in "*?["):
                # a listing or pattern may match files of any earlier cell
                self.fx.opaque_reads.append((line, f"{qualified}() looks at files the analysis "
                                                   "cannot name"))
            else:
                self._record_file(path, "r")
            return
        if qualified in kb.OPAQUE_IO_FUNCTIONS:
            self.fx.opaque_io.append((line, f"{qualified}() touches files the analysis cannot see"))
            return
        if isinstance(func, nodes.Attribute) and func.attrname in kb.PATH_METHODS and \
                is_path(func.expr, self.state):
            self._file_access(func.expr, kb.PATH_METHODS[func.attrname], line,
                              f"Path.{func.attrname}()")
            return
        if isinstance(func, nodes.Attribute) and func.attrname in kb.FILE_METHODS:
            spec = kb.FILE_METHODS[func.attrname]
            if func.attrname in ("write_text", "write_bytes", "read_text", "read_bytes"):
                self._file_access(func.expr, spec.mode, line, f".{func.attrname}()")
                return
            path_node = argument(node, spec.position, spec.keyword)
            if path_node is None and func.attrname in kb.OPTIONAL_PATH_METHODS:
                return
            root = root_name(func.expr)
            module_function = root in self.state.imports and not chain_has_call(func.expr)
            if module_function and qualified not in kb.FILE_FUNCTIONS:
                if func.attrname in ("save", "load"):
                    # a module-level save/load we do not know (joblib-like): be careful
                    self._file_access(path_node, spec.mode, line, f"{qualified}()")
                return
            self._file_access(path_node, spec.mode, line, f".{func.attrname}()")

    def _file_function_value(self, node: nodes.Name | nodes.Attribute) -> None:
        """A function that touches files, used here as a value and not called
        (`map(pd.read_csv, files)`, `partial(open, mode="w")`, `reader = open`): it runs with
        paths _files never sees. Mapped at once over known paths, those paths are named; else
        the I/O is opaque, and the names the function is kept in touch files wherever used."""
        line = node.lineno or 0
        if isinstance(node, nodes.Name) and node.name in self.state.file_functions:
            self.fx.opaque_io.append((line, f"{node.name} holds a function that touches files "
                                            "the analysis cannot name"))
            return
        parent = node.parent
        if isinstance(parent, nodes.Call) and parent.func is node:
            return  # called here: _files names its paths
        qualified = self.qualify(node)
        mode = _function_mode(qualified)
        if qualified is None or mode is None or self._mapped_at_once(node, qualified):
            return
        found = self.fx.opaque_reads if mode == "r" else self.fx.opaque_io
        found.append((line, f"{qualified} is passed on as a value, to run with paths the "
                            "analysis cannot name"))
        if not self.function_mode:
            self.state.file_functions |= _keepers(node)

    def _mapped_at_once(self, node: nodes.NodeNG, qualified: str) -> bool:
        """`list(map(pd.read_csv, paths))` with paths known: records those paths read."""
        call = node.parent
        spec = kb.FILE_FUNCTIONS.get(qualified)
        position = 0 if qualified in OPEN_FUNCTIONS else spec.position if spec else None
        if not (isinstance(call, nodes.Call) and self.qualify(call.func) == "map"
                and len(call.args) == 2 and call.args[0] is node and not call.keywords
                and position == 0 and not self.function_mode and not self.lazy
                and not self.comprehension_names):
            return False
        consumer = call.parent  # the map is used up here, not kept for later
        if not (isinstance(consumer, nodes.Call) and call in consumer.args) and not (
                isinstance(consumer, (nodes.For, nodes.Comprehension))
                and consumer.iter is call):
            return False
        values = iteration_values(call.args[1], self.state)
        if values is None or not all(isinstance(v, str) for v in values):
            return False
        for path in sorted(values):  # type: ignore[type-var]
            self._record_file(path, "r" if spec is None else spec.mode)
        return True

    def _file_access(self, argument: nodes.NodeNG | None, mode: str, line: int, what: str) -> None:
        paths = self._strings(argument) if argument is not None else None
        if paths is None:
            found = self.fx.opaque_reads if mode == "r" else self.fx.opaque_io
            found.append((line, f"{what} with a path the analysis cannot resolve"))
            return
        for path in sorted(paths):  # one of them each time: `f"part{i}.csv"` in a loop
            self._record_file(path, mode)

    def _record_file(self, path: str, mode: str) -> None:
        if "r" in mode:
            self.fx.file_reads.add(path)
        if "w" in mode:
            self.fx.file_writes.add(path)


def is_path(node: nodes.NodeNG, state: NamespaceState) -> bool:
    """Whether `node` is a pathlib path: built by Path(...) (or joined with `/` from one), or
    a name holding a literal path."""
    if isinstance(node, nodes.BinOp) and node.op == "/":
        return is_path(node.left, state)
    if isinstance(node, nodes.Call):
        func = node.func
        name = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", "")
        return name in ("Path", "PurePath", "PosixPath")
    if not isinstance(node, nodes.Name):
        return False
    choices = state.choices.get(node.name)
    return node.name in state.const_strings or (
        choices is not None and all(isinstance(c, str) for c in choices))


def argument(node: nodes.Call, position: int, keyword: str | None) -> nodes.NodeNG | None:
    """The call's argument at `position` or passed as `keyword`, when it can be told."""
    for item in node.keywords or ():
        if keyword is not None and item.arg == keyword:
            return item.value
    positional = [a for a in node.args if not isinstance(a, nodes.Starred)]
    if len(positional) == len(node.args) and position < len(positional):
        return positional[position]
    return None


def _function_mode(qualified: str | None) -> str | None:
    """How a function touches files when called with a path ("r", "w", "rw"); None: not."""
    if qualified in OPEN_FUNCTIONS or qualified in kb.OPAQUE_IO_FUNCTIONS:
        return "rw"
    if qualified in kb.FILE_FUNCTIONS:
        return kb.FILE_FUNCTIONS[qualified].mode
    return "r" if qualified in kb.OPAQUE_READ_FUNCTIONS else None


def _keepers(node: nodes.NodeNG) -> set[str]:
    """The global names that keep the function value `node` to call later: an assignment's
    targets (through partial(), map(), a tuple or dict of functions), the loop variable
    over such a collection, a function that has it as a default argument."""
    child, parent = node, node.parent
    while parent is not None:
        if isinstance(parent, nodes.Call) and child is not parent.func:
            if not isinstance(parent.func, (nodes.Name, nodes.Attribute)) or \
                    parent.func.as_string().rsplit(".", 1)[-1] not in ("partial", "map"):
                return set()  # called with it: used up here
        elif isinstance(parent, (nodes.Keyword, nodes.Tuple, nodes.List, nodes.Set, nodes.Dict)):
            pass
        elif isinstance(parent, (nodes.Assign, nodes.AnnAssign, nodes.For)):
            targets = parent.targets if isinstance(parent, nodes.Assign) else [parent.target]
            return {name.name for target in targets
                    for name in target.nodes_of_class(nodes.AssignName)}
        elif isinstance(parent, nodes.Arguments):  # def load(path, reader=open)
            function = parent.parent
            return {function.name} if isinstance(function, nodes.FunctionDef) else set()
        else:
            return set()
        child, parent = parent, parent.parent
    return set()


def _open_mode(mode: str | None) -> str:
    if mode is None:
        return "rw"
    if "+" in mode:
        return "rw"
    if "a" in mode:
        return "rw"
    if "w" in mode or "x" in mode:
        return "w"
    return "r"


def looks_like_path(text: str) -> bool:
    """A string constant that could name a file (no spaces, a dot or a slash)."""
    return (0 < len(text) < 256 and ("." in text or "/" in text) and not any(
        c.isspace() for c in text) and "://" not in text)
