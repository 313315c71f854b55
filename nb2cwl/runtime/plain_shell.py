"""The fallback where IPython is not installed: plain `exec` and a small get_ipython().

Cells run as Python code (magics already converted by IPython's transformer at compile time);
the last expression is formatted by `capture.format_value`, and `get_ipython()` implements the
magics and shell escapes that make sense without IPython. Where IPython is importable, steps
run their cells through IPython's own shell instead (kernel_shell.py).
"""

from __future__ import annotations

import ast
import builtins
import os
import shlex
import subprocess
import sys
import types
from typing import Any

from . import capture
from .capture import display
from .failure import user_traceback
from .future import compiler_flags

_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE, without importing inspect

_NO_OP_MAGICS = {"matplotlib", "config", "load_ext", "reload_ext", "autoreload", "aimport"}
_DISPLAY_MAGICS = {
    "html": ("text/html", "HTML"), "HTML": ("text/html", "HTML"),
    "markdown": ("text/markdown", "Markdown"), "latex": ("text/latex", "Latex"),
    "svg": ("image/svg+xml", "SVG"), "javascript": ("application/javascript", "Javascript"),
    "js": ("application/javascript", "Javascript"),
}


class StepShell:
    """Implements the get_ipython() calls IPython's input transformer produces."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.user_ns = namespace

    def run_line_magic(self, name: str, line: str, _stack_depth: int = 1) -> Any:
        """%name line."""
        if name in _NO_OP_MAGICS:
            return None
        if name == "env":
            return self._env(line)
        if name == "pip":  # as IPython's %pip: this interpreter's pip
            result = subprocess.run([sys.executable, "-m", "pip", *shlex.split(line)],
                                    capture_output=True, text=True, check=False)
            sys.stdout.write(result.stdout + result.stderr)
            return None
        raise RuntimeError(f"%{name} needs IPython, which is not installed where this step "
                           "runs")

    def run_cell_magic(self, name: str, line: str, cell: str) -> Any:
        """%%name line + cell body."""
        if name == "writefile":
            return self._writefile(line, cell)
        if name in ("bash", "sh"):
            return self._script([name], cell)
        if name == "script":
            return self._script(shlex.split(line)[:1] or ["sh"], cell)
        if name in _DISPLAY_MAGICS:
            mime, kind = _DISPLAY_MAGICS[name]
            display({mime: cell, "text/plain": f"<IPython.core.display.{kind} object>"},
                    raw=True)
            return None
        raise RuntimeError(f"%%{name} needs IPython, which is not installed where this "
                           "step runs")

    def system(self, command: str) -> None:
        """!command: run it in a shell; its output becomes the cell's output."""
        result = subprocess.run(["/bin/sh", "-c", self._expand(command)], capture_output=True,
                                text=True, check=False)
        # IPython runs ! commands on a terminal, whose line ends are \r\n
        sys.stdout.write((result.stdout + result.stderr).replace("\n", "\r\n"))
        self.user_ns["_exit_code"] = result.returncode

    def getoutput(self, command: str, split: bool = True, depth: int = 0) -> Any:
        """x = !command: its output lines."""
        result = subprocess.run(["/bin/sh", "-c", self._expand(command)], capture_output=True,
                                text=True, check=False)
        output = result.stdout + result.stderr
        return output.splitlines() if split else output

    def _expand(self, command: str) -> str:
        try:
            from IPython.utils.text import DollarFormatter
        except ImportError:
            return command
        try:
            return DollarFormatter().vformat(command, args=[], kwargs=dict(self.user_ns))
        except Exception:  # as IPython does: leave the command as written
            return command

    def _env(self, line: str) -> Any:
        line = line.strip()
        if not line:
            return dict(os.environ)
        if "=" in line or " " in line:
            key, _, value = line.replace("=", " ", 1).partition(" ")
            os.environ[key.strip()] = value.strip()
            print(f"env: {key.strip()}={value.strip()}")
            return None
        return os.environ.get(line)

    def _writefile(self, line: str, cell: str) -> None:
        words = shlex.split(line)
        append = "-a" in words or "--append" in words
        path = next(w for w in words if not w.startswith("-"))
        path = os.path.expanduser(path)
        exists = os.path.exists(path)
        if exists:
            print(f"Appending to {path}" if append else f"Overwriting {path}")
        else:
            print(f"Writing {path}")
        with open(path, "a" if append else "w", encoding="utf-8") as handle:
            handle.write(cell)

    def _script(self, command: list[str], cell: str) -> None:
        result = subprocess.run(command, input=cell, capture_output=True, text=True, check=False)
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)


class PlainExecutor:
    """Runs cells with `exec`, showing the last expression's value as Jupyter would."""

    kind = "plain"
    script = False  # the cells are a script's: SystemExit(0) ends it quietly, as `python`

    def __init__(self, module: types.ModuleType) -> None:
        capture.set_runtime_figures(True)
        os.environ.setdefault("MPLBACKEND", f"module://{__package__}.mpl_backend")
        self.namespace: dict[str, Any] = module.__dict__
        shell = StepShell(self.namespace)
        self.namespace.update({"__builtins__": builtins, "display": display,
                               "get_ipython": lambda: shell})
        sys.modules["__main__"] = module
        self._filename = "<cell>"
        self.flags = 0  # `from __future__` features of earlier cells, as a kernel keeps them

    def future(self, features: list[str]) -> None:
        """Compile the cells with these `from __future__` features on."""
        self.flags |= compiler_flags(features)

    def values_loaded(self) -> None:
        """Nothing to do: the plain runtime keeps no result history of its own."""

    def run_cell(self, cell: dict[str, Any],
                 execution_count: int) -> tuple[bool, BaseException | None]:
        """Run one cell's converted code; its result (unless it ends with `;`) and error go
        to the capture."""
        return self.run_code(cell["code"], not cell.get("quiet"), execution_count, True)

    def run_code(self, code: str, show_result: bool, execution_count: int,
                 last: bool, source: str | None = None) -> tuple[bool, BaseException | None]:
        """Run code of a cell; show its last expression's value when `show_result`."""
        import linecache

        filename = self.filename_of(execution_count)
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        target = capture.current()
        try:
            value = _execute(code, filename, self.namespace, self)
            if value is not None and show_result and target is not None:
                target.result(value, execution_count)
                # the kernel's result history
                self.namespace["___"] = self.namespace.get("__", "")
                self.namespace["__"] = self.namespace.get("_", "")
                self.namespace["_"] = value
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # the user's code may raise anything, SystemExit too
            if self.script and isinstance(exc, SystemExit) and exc.code in (0, None):
                return False, exc  # a script's normal end: `python` shows nothing
            if target is not None:
                target.error(type(exc).__name__, str(exc), user_traceback(exc, filename))
            return False, exc
        return True, None

    def filename_of(self, execution_count: int) -> str:
        """The file name of cell `execution_count`'s code, as tracebacks show it."""
        return f"<cell {execution_count}>"

    def cell_file(self, source: str, execution_count: int) -> str | None:
        """Replayed definitions keep their own file names without IPython."""
        return None


def _execute(source: str, filename: str, namespace: dict[str, Any],
             executor: PlainExecutor) -> Any:
    executor.future([alias.name for node in ast.parse(source, filename).body
                     if isinstance(node, ast.ImportFrom) and node.module == "__future__"
                     for alias in node.names])  # they hold from this cell on
    tree = compile(source, filename, "exec", flags=ast.PyCF_ONLY_AST | executor.flags)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop()
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT | executor.flags
    body = compile(tree, filename, "exec", flags=flags)
    _run(body, namespace)
    if last is None:
        return None
    expression = compile(ast.Expression(last.value), filename, "eval", flags=flags)
    return _run(expression, namespace)


def _run(code: types.CodeType, namespace: dict[str, Any]) -> Any:
    if code.co_flags & _CO_COROUTINE:
        import asyncio  # only cells with top-level await need it

        return asyncio.run(eval(code, namespace))
    return eval(code, namespace)
