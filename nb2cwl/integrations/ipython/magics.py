"""`%nb2cwl` and `%%nb2cwl`: the notebook as a workflow, from inside the notebook.

    %nb2cwl explain [--deployment NAME] [--json]    steps, values between cells, and why
    %nb2cwl graph [--deployment NAME]               the step graph, inline (SVG)
    %nb2cwl run [--deployment NAME] [--changed]     run the notebook file as a workflow
    %nb2cwl pull NAME [NAME ...]                    load values of the last run into the kernel
    %%nb2cwl step [--deployment NAME]               run this cell elsewhere, values shipped

They act on the notebook the kernel belongs to (Jupyter tells the kernel its path), or on
`--notebook PATH`. A workflow step never runs these magics: nb2cwl compiles them away.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import SVG, display

from nb2cwl.errors import Nb2CwlError

USAGE = __doc__.split("\n\n")[1]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # no sys.exit inside a kernel
        raise UsageError(f"%nb2cwl: {message}\n{USAGE}")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="%nb2cwl", add_help=False)
    parser.add_argument("command", choices=("explain", "graph", "run", "pull", "step"))
    parser.add_argument("names", nargs="*")
    parser.add_argument("--notebook", help="the notebook (default: the kernel's own)")
    parser.add_argument("--deployment", help="where steps run (local, docker, slurm, helm, ...)")
    parser.add_argument("--changed", action="store_true",
                        help="run: reuse the steps whose code and inputs are unchanged")
    parser.add_argument("--json", action="store_true", help="explain: as JSON")
    return parser


@magics_class
class Nb2CwlMagics(Magics):
    """The %nb2cwl line magic and the %%nb2cwl cell magic."""

    @line_cell_magic
    def nb2cwl(self, line: str, cell: str | None = None) -> Any:
        """Run nb2cwl on this notebook; `%nb2cwl` alone shows how."""
        words = shlex.split(line)
        if not words or words[0] in ("-h", "--help", "help"):  # how, not an error
            print(USAGE)
            return None
        args = _parser().parse_args(words)
        if (cell is None) == (args.command == "step"):
            raise UsageError("%%nb2cwl step is a cell magic; the others are line magics\n"
                             + USAGE)
        try:
            return self._dispatch(args, cell)
        except Nb2CwlError as exc:  # one line, as the command line says it (no traceback)
            raise UsageError(str(exc)) from None

    def _dispatch(self, args: argparse.Namespace, cell: str | None) -> Any:
        if args.command == "step":
            from nb2cwl.integrations.ipython.remote_cell import run_cell_remotely

            assert cell is not None
            return run_cell_remotely(self.shell, cell, args.deployment)
        notebook = self._notebook(args.notebook)
        if args.command == "explain":
            from nb2cwl.backends.explain import explain_data, explain_text
            from nb2cwl.integrations.notebook_view import compile_view

            workflow = compile_view(notebook, deployment=args.deployment)
            if args.json:
                print(json.dumps(explain_data(workflow), indent=1))
            else:
                sys.stdout.write(explain_text(workflow))
            return None
        if args.command == "graph":
            from nb2cwl.integrations.notebook_view import compile_view, graph_payload

            display(SVG(graph_payload(compile_view(notebook, deployment=args.deployment))["svg"]))
            return None
        if args.command == "run":
            from nb2cwl.integrations.ipython.progress import run_with_progress

            return run_with_progress(notebook, args.deployment, args.changed)
        from nb2cwl.integrations.ipython.progress import pull

        if not args.names:
            raise UsageError("%nb2cwl pull: name the variables to load, e.g. %nb2cwl pull df")
        return pull(self.shell, notebook, args.names)

    def _notebook(self, given: str | None) -> str:
        """The notebook to act on: --notebook, else the one this kernel runs."""
        path = given or os.environ.get("JPY_SESSION_NAME") or \
            self.shell.user_ns.get("__session__") or self.shell.user_ns.get("__vsc_ipynb_file__")
        if not path:
            raise UsageError("%nb2cwl: which notebook? This kernel was not started for a "
                             "notebook file: name it with --notebook PATH")
        path = os.path.abspath(os.path.expanduser(str(path)))
        if not os.path.isfile(path):
            raise UsageError(f"%nb2cwl: no notebook file {path} (save the notebook first, or "
                             "name it with --notebook PATH)")
        return path
