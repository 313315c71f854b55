"""File effects of calls: literal paths read and written, and I/O the analysis cannot follow."""

from __future__ import annotations

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.effects import Effects
from nb2cwl.analysis.names import chain_has_call, root_name
from nb2cwl.analysis.state import NamespaceState


class FileEffects:
    """Mixin for the effect walker: records file reads, writes and opaque I/O of calls."""

    fx: Effects
    state: NamespaceState

    def _files(self, node: nodes.Call, qualified: str | None, line: int) -> None:
        func = node.func
        if qualified in ("open", "io.open", "builtins.open", "gzip.open", "bz2.open", "lzma.open"):
            mode = argument(node, 1, "mode")
            mode_text = literal_string(mode, self.state) if mode is not None else "r"
            self._file_access(argument(node, 0, "file"), _open_mode(mode_text), line, "open()")
            return
        if qualified in kb.FILE_FUNCTIONS:
            spec = kb.FILE_FUNCTIONS[qualified]
            self._file_access(argument(node, spec.position, spec.keyword), spec.mode, line,
                              qualified + "()")
            return
        if qualified in kb.OPAQUE_READ_FUNCTIONS:
            path = literal_string(argument(node, 0, None), self.state)
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
                path = func.expr
                if isinstance(path, nodes.Call) and path.args:
                    path = path.args[0]
                self._file_access(path, spec.mode, line, f".{func.attrname}()")
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

    def _file_access(self, argument: nodes.NodeNG | None, mode: str, line: int, what: str) -> None:
        path = literal_string(argument, self.state) if argument is not None else None
        if path is None:
            found = self.fx.opaque_reads if mode == "r" else self.fx.opaque_io
            found.append((line, f"{what} with a path the analysis cannot resolve"))
            return
        self._record_file(path, mode)

    def _record_file(self, path: str, mode: str) -> None:
        if "r" in mode:
            self.fx.file_reads.add(path)
        if "w" in mode:
            self.fx.file_writes.add(path)


def literal_string(node: nodes.NodeNG | None, state: NamespaceState) -> str | None:
    """A string the expression certainly evaluates to, or None."""
    if node is None:
        return None
    if isinstance(node, nodes.Const) and isinstance(node.value, str):
        return node.value
    if isinstance(node, nodes.Name):
        return state.const_strings.get(node.name)
    if isinstance(node, nodes.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, nodes.Const):
                parts.append(str(value.value))
            elif isinstance(value, nodes.FormattedValue) and value.format_spec is None:
                inner = literal_string(value.value, state)
                if inner is None:
                    return None
                parts.append(inner)
            else:
                return None
        return "".join(parts)
    if isinstance(node, nodes.BinOp) and node.op in ("+", "/"):
        left, right = literal_string(node.left, state), literal_string(node.right, state)
        if left is None or right is None:
            return None
        return left + right if node.op == "+" else f"{left}/{right}"
    if isinstance(node, nodes.Call):
        func = node.func
        name = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", "")
        if name in ("Path", "PurePath", "PosixPath") and len(node.args) == 1:
            return literal_string(node.args[0], state)
        if name in ("Path", "PurePath", "PosixPath") and not node.args and not node.keywords:
            return "."  # the working directory
        is_join = name == "join" and isinstance(func, nodes.Attribute) and node.args
        if is_join and root_name(func.expr) in ("os", "path", "osp"):
            parts = [literal_string(a, state) for a in node.args]
            if all(p is not None for p in parts):
                return "/".join(p.rstrip("/") for p in parts if p)  # type: ignore[union-attr]
    return None


def is_path(node: nodes.NodeNG, state: NamespaceState) -> bool:
    """Whether `node` is a pathlib path: built by Path(...) (or joined with `/` from one), or
    a name holding a literal path."""
    if isinstance(node, nodes.BinOp) and node.op == "/":
        return is_path(node.left, state)
    if isinstance(node, nodes.Call):
        func = node.func
        name = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", "")
        return name in ("Path", "PurePath", "PosixPath")
    return isinstance(node, nodes.Name) and node.name in state.const_strings


def argument(node: nodes.Call, position: int, keyword: str | None) -> nodes.NodeNG | None:
    """The call's argument at `position` or passed as `keyword`, when it can be told."""
    for item in node.keywords or ():
        if keyword is not None and item.arg == keyword:
            return item.value
    positional = [a for a in node.args if not isinstance(a, nodes.Starred)]
    if len(positional) == len(node.args) and position < len(positional):
        return positional[position]
    return None


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
