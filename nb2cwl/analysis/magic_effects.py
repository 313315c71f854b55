"""The effects of IPython magics and `!` commands, read from the calls IPython's input
transformer turned them into (`get_ipython().run_line_magic('time', 'x = f()')`).

`%time stmt`, `%%time`, `%%capture` and the like run Python: their code is walked in place.
`$name` and `{expr}` in a magic's line or a `!` command are expanded from the namespace when
it runs: they are reads. What each magic does comes from knowledge/magics.py.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable

import astroid
from astroid import nodes
from astroid.exceptions import AstroidSyntaxError

from nb2cwl.analysis.effects import Effects, Hold, StateChange
from nb2cwl.analysis.knowledge import magics as mk
from nb2cwl.analysis.state import NamespaceState

#: IPython's `$name` (and `$name.attr`) expansion; `$$` stands for a literal `$`.
_DOLLAR = re.compile(r"(?<!\$)\$([A-Za-z_][\w.]*)")


class MagicEffects:
    """Mixin for the effect walker: magics and shell escapes (see the module docstring)."""

    fx: Effects
    state: NamespaceState
    function_mode: bool

    read: Callable[[str], None]  # provided by the effect walker
    statements: Callable[[list[nodes.NodeNG]], None]
    write: Callable[[str, nodes.NodeNG | None], None]
    _record_file: Callable[[str, str], None]

    def magic_call(self, node: nodes.Call, line: int) -> bool:
        """Record what a `get_ipython().<method>(...)` call does; False for other calls."""
        func = node.func
        if not (isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Call)
                and isinstance(func.expr.func, nodes.Name)
                and func.expr.func.name == "get_ipython"):
            return False
        args = [a.value if isinstance(a, nodes.Const) else None for a in node.args]
        method = func.attrname
        if method in ("system", "getoutput"):
            self.fx.opaque_io.append((line, "a shell command (!...) may read or write any file"))
            self._expanded(args[0] if args else None, line)
            if isinstance(args[0] if args else None, str) and _installs(args[0]):
                self.fx.installs.append((line, mk.INSTALLS_WHY.format(
                    what=f"!{args[0].strip()}")))
        elif method == "run_line_magic" and args and isinstance(args[0], str):
            self._line_magic(args[0], args[1] if len(args) > 1 else "", line)
        elif method == "run_cell_magic" and args and isinstance(args[0], str):
            body = args[2] if len(args) > 2 else ""
            self._cell_magic(args[0], args[1] if len(args) > 1 else "", body, line)
        return True

    def _line_magic(self, name: str, argument: object, line: int) -> None:
        kind = mk.LINE_MAGICS.get(name)
        text = argument if isinstance(argument, str) else None
        if name not in mk.NO_VAR_EXPAND:
            self._expanded(text, line)
        if kind == mk.CODE:
            self._python(text, line, f"%{name}")
        elif kind == mk.SHELL:
            self.fx.opaque_io.append((line, f"%{name} runs a program that may read or write "
                                            "any file"))
        elif kind == mk.SETTING:
            self._setting(name, text or "", line)
        elif kind == mk.READS_ALL:
            self.fx.reads_all.append((line, f"%{name} lists every variable"))
        elif kind == mk.SKIPPED:
            why = mk.SKIPPED_WHY.get(name, mk.SKIPPED_DEFAULT.format(name=name))
            self.fx.skipped_magics.append((line, why))
        elif kind == mk.INSTALLS:
            self.fx.opaque_io.append((line, f"%{name} installs packages, which may change any "
                                            "file"))
            self.fx.installs.append((line, mk.INSTALLS_WHY.format(
                what=f"%{name} {text or ''}".strip())))
        elif kind != mk.DISPLAY:
            self._unknown(f"%{name}", kind, line)

    def _cell_magic(self, name: str, argument: object, body: object, line: int) -> None:
        kind = mk.CELL_MAGICS.get(name)
        text = argument if isinstance(argument, str) else None
        if name not in mk.NO_VAR_EXPAND:
            self._expanded(text, line)
        if kind == mk.CODE:
            self._python(body if isinstance(body, str) else None, line, f"%%{name}", cell=True)
            if name == "capture" and text:
                target = [w for w in text.split() if not w.startswith("-")]
                if target and target[0].isidentifier():
                    self.write(target[0], None)
        elif kind == mk.SHELL:
            self.fx.opaque_io.append((line, f"%%{name} may read or write any file"))
        elif kind == mk.WRITEFILE:
            self._writefile(text, line)
        elif kind != mk.DISPLAY:
            self._unknown(f"%%{name}", kind, line)

    def _python(self, code: str | None, line: int, what: str, cell: bool = False) -> None:
        """Walk the Python a magic runs, at its place (a cell magic's body starts a line
        below the magic)."""
        if code is None:
            self.fx.opaque_namespace.append((line, f"{what} runs code the analysis cannot read"))
            return
        padding = "\n" * (line if cell else line - 1)
        try:
            tree = astroid.parse(padding + code, module_name="__magic__")
        except (AstroidSyntaxError, SyntaxError, ValueError, RecursionError):
            self.fx.opaque_namespace.append((line, f"{what} runs code the analysis cannot "
                                                   "parse"))
            return
        self.statements(tree.body)

    def _setting(self, name: str, text: str, line: int) -> None:
        if name in ("env", "set_env") and "=" not in text and " " not in text.strip():
            return  # %env, %env NAME: they only read the environment
        kind = mk.SETTING_STATE.get(name, mk.SHELL_SETTINGS)
        what = f"%{name} {text}".strip()
        self.fx.state_changes.append(StateChange(line, kind, what))
        self.fx.module_state.add(f"%{name}")
        if kind.treatment == mk.TOGETHER:
            self.fx.holds.append(Hold("*", line, f"{what} changes {kind.name} for every "
                                                 "later cell"))
        if kind is mk.WORKING_DIRECTORY:  # relative paths now mean other files
            self.fx.opaque_io.append((line, f"{what} moves where relative paths point"))

    def _writefile(self, text: str | None, line: int) -> None:
        words = [self._constant(w) for w in (text or "").split()]
        append = "-a" in words or "--append" in words
        paths = [w for w in words if w is not None and not w.startswith("-")]
        if len(paths) == 1 and None not in words:
            self._record_file(paths[0], "rw" if append else "w")
        else:
            self.fx.opaque_io.append((line, "%%writefile without a single plain path"))

    def _constant(self, word: str) -> str | None:
        """A word of a magic's line, with `$name` replaced where `name` is a known string."""
        if "{" in word:
            return None
        missing = False

        def value(match: re.Match[str]) -> str:
            nonlocal missing
            known = self.state.const_strings.get(match.group(1))
            missing = missing or known is None
            return known or ""

        expanded = _DOLLAR.sub(value, word).replace("$$", "$")
        return None if missing else expanded

    def _unknown(self, what: str, kind: str | None, line: int) -> None:
        if kind == mk.NAMESPACE:
            reason = f"{what} may read or bind any variable"
        else:
            reason = f"{what} is a magic nb2cwl does not know: it may read or bind any variable"
        self.fx.opaque_namespace.append((line, reason))

    def _expanded(self, text: object, line: int) -> None:
        """The names `$name` and `{expr}` in a magic's line read when IPython expands them."""
        if not isinstance(text, str):
            return
        for match in _DOLLAR.finditer(text):
            self.read(match.group(1).split(".")[0])
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(text) if f]
        except ValueError:
            return
        for field in fields:
            try:
                tree = astroid.extract_node(field)
            except (AstroidSyntaxError, SyntaxError, ValueError, RecursionError):
                continue
            for name in [tree, *tree.nodes_of_class(nodes.Name)]:
                if isinstance(name, nodes.Name):
                    self.read(name.name)


def _installs(command: str) -> bool:
    """`pip install x`, `python -m pip install x`, `conda install -y x`, `uv pip install x`."""
    words = command.split()
    if len(words) >= 3 and words[1] == "-m" and words[0].startswith("python"):
        words = words[2:]
    if words[:2] == ["uv", "pip"]:
        words = words[1:]
    return len(words) >= 2 and words[0] in mk.INSTALLERS and words[1] == "install"
