"""Which of the notebook's libraries a step server may import before any step runs.

A library qualifies when the knowledge tables say importing it early cannot be observed
(`Library.preloadable`) and the notebook imports it before anything else happens: in the
imports that open the notebook, with nothing before them but other such imports, imports
that change nothing another library could see (`import os`, `import matplotlib.pyplot`:
`IMPORTS_WITHOUT_EFFECTS`) and `%matplotlib` (no environment variable set, no path changed,
no setting made, no code run).
The step server imports those once; a step then finds them imported, as it would after its
own first cell.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable

from nb2cwl.analysis import knowledge as kb
from nb2cwl.frontend.model import source_text

#: `%matplotlib inline` on a line of its own, and the call IPython turns it into
_MATPLOTLIB_LINE = re.compile(r"%matplotlib\b")
_MATPLOTLIB_CALL = "get_ipython().run_line_magic('matplotlib', '')"


def notebook_preload(path: str, content: str | None = None) -> tuple[str, ...]:
    """`preloadable` for the notebook at `path` (`content`: the file of its editor's copy):
    what a step server may import while the notebook compiles. () when the notebook cannot be
    read (compiling says why).

    A notebook's cells are read from its JSON as they are, without nbformat and IPython (a
    quarter of a second of imports, on the path to the step server's start): `%matplotlib`
    is the one magic `preloadable` passes over, any other magic ends the list there, and so
    does code Python cannot parse. The compiled workflow's list (`Workflow.preload`,
    from IPython's own transformation) decides: `StepServer.preloading` starts the server
    again where the two differ. A script is read with the front end (jupytext).
    """
    if content is None and not path.lower().endswith(".ipynb"):
        return _front_end_preload(path)
    try:
        with open(content or path, encoding="utf-8") as handle:
            cells = json.load(handle)["cells"]
        codes = [source_text(cell) for cell in cells if cell.get("cell_type") == "code"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return ()
    return preloadable(_as_python(code) for code in codes)


def _as_python(code: str) -> str:
    """A cell's code with `%matplotlib` as IPython's call, and cut at any other magic or
    shell line (a call there: code runs, the list ends)."""
    lines = code.splitlines()
    for number, line in enumerate(lines):
        if _MATPLOTLIB_LINE.match(line):
            lines[number] = _MATPLOTLIB_CALL
        elif line.startswith(("%", "!")):
            return "\n".join([*lines[:number], "get_ipython()"])
    return "\n".join(lines)


def _front_end_preload(path: str) -> tuple[str, ...]:
    from nb2cwl.errors import Nb2CwlError
    from nb2cwl.frontend.reader import read_notebook

    try:
        notebook = read_notebook(path)
    except Nb2CwlError:
        return ()
    return preloadable(cell.code for cell in notebook.cells if cell.is_code)


def preloadable(codes: Iterable[str]) -> tuple[str, ...]:
    """The libraries, in the notebook's import order, from the code cells' Python code (magics
    already turned into calls)."""
    found: list[str] = []
    for code in codes:
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            return tuple(found)
        for statement in tree.body:
            names = _imported(statement)
            if names is None:
                return tuple(found)
            for name in names:
                library = kb.library_of(name)
                if name.split(".")[0] in kb.IMPORTS_WITHOUT_EFFECTS and (
                        library is None or not library.preloadable):
                    continue  # `import os`: nothing another library's import could see
                if library is None or not library.preloadable:
                    return tuple(found)  # its import may run anything: stop here
                if name not in found:
                    found.append(name)
    return tuple(found)


def _imported(statement: ast.stmt) -> list[str] | None:
    """The modules an import statement imports (`sklearn.ensemble` for `from sklearn.ensemble
    import X`: importing a package does not import its submodules); [] for `%matplotlib`;
    None for any other statement."""
    if isinstance(statement, ast.Import):
        return [alias.name for alias in statement.names]
    if isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
        return [statement.module]
    if _matplotlib_magic(statement):
        return []
    return None


def _matplotlib_magic(statement: ast.stmt) -> bool:
    """`%matplotlib inline`: get_ipython().run_line_magic('matplotlib', ...)."""
    if not isinstance(statement, ast.Expr) or not isinstance(statement.value, ast.Call):
        return False
    call = statement.value
    return (isinstance(call.func, ast.Attribute) and call.func.attr == "run_line_magic"
            and bool(call.args) and isinstance(call.args[0], ast.Constant)
            and call.args[0].value == "matplotlib")
