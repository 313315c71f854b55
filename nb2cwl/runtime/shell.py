"""A small get_ipython() for steps: the magics and shell escapes nb2cwl lets through."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from typing import Any

from .capture import display

_NO_OP_MAGICS = {"matplotlib", "config", "load_ext", "reload_ext", "autoreload", "aimport",
                 "pip", "conda"}
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
        raise RuntimeError(f"%{name} cannot run outside Jupyter")

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
        raise RuntimeError(f"%%{name} cannot run outside Jupyter")

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
