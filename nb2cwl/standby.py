"""An `nb2cwl run` process made ready before its run is asked for: what long-lived processes
(the Jupyter server) keep, so that a run starts its first step without nb2cwl's and
StreamFlow's start-up on its path.

`python -m nb2cwl.standby` imports what compiling needs, compiles a small notebook once (astroid
builds its model of the builtins), and starts a warm StreamFlow engine (nb2cwl.engine) that
imports StreamFlow meanwhile, and a warm step server (nb2cwl.step_server) that imports
the steps' runtime and IPython: the run gives it the notebook's libraries to import. Then it
waits for one request on stdin, a JSON line:

    {"argv": ["run", NOTEBOOK, ...], "cwd": FOLDER, "log": FILE}

and becomes that `nb2cwl run`: its output goes to FILE, it works in FOLDER, and it exits with
the run's status, exactly as the command would. On EOF instead (its owner stopped, or died) it
exits at once, and so do its engine and step server, which then never ran anything: nothing
is left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile

#: A notebook compiled while waiting: astroid's model of the builtins and of the usual
#: statements is then built before the first run compiles.
_WARM_UP = ["import math\nvalues = [math.sqrt(i) for i in range(3)]",
            "total = 0\nfor v in values:\n    total += v\nprint(round(total, 3))"]


def serve() -> None:
    """Get ready, then run the one request that arrives on stdin (see the module docstring)."""
    from nb2cwl.imports import skip_unused_imports

    skip_unused_imports()
    from nb2cwl import cli, step_server
    from nb2cwl.launch import Engine, keep_warm
    from nb2cwl.options import CompileOptions

    engine = Engine(warm=True)  # StreamFlow's import overlaps with the warm-up below
    server = step_server.StepServer()  # and the step server's (the runtime and IPython)
    server.start_warm(CompileOptions().python, engine.env)
    keep_warm(engine)
    step_server.keep_warm(server)
    _warm_up()
    line = sys.stdin.readline()
    if not line.strip():  # no run will come
        engine.stop()
        server.stop()
        sys.exit(0)
    request = json.loads(line)
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.chdir(request["cwd"])
    try:
        status = cli.main(request["argv"])
    finally:
        step_server.stop_warm()  # a run that ended before it took the server (its options)
    sys.exit(status)


def _warm_up() -> None:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from nb2cwl.api import compile_notebook

    with tempfile.TemporaryDirectory(prefix="nb2cwl-warm-") as folder:
        path = os.path.join(folder, "warm.ipynb")
        nbformat.write(new_notebook(cells=[new_code_cell(c) for c in _WARM_UP]), path)
        with contextlib.suppress(Exception):  # only a warm-up: a real run reports its own
            compile_notebook(path)


if __name__ == "__main__":
    serve()
