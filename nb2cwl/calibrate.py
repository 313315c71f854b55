"""`nb2cwl calibrate`: measure what a step and a value crossing a boundary cost on a deployment.

Two small notebooks run as workflows on the deployment: a chain of trivial cells, one step
per cell, against the same cells in one step (the difference per extra step is what a step
costs), and a value of several megabytes handed from one step to the next against a tiny one
(the difference per byte is what moving values costs). The figures are kept in the
calibration file (backends/calibration.py), where compiling for that deployment finds them.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import replace

import nbformat

from nb2cwl.api import compile_to_directory
from nb2cwl.backends.calibration import calibration_file, save_calibration
from nb2cwl.backends.deployments import default_deployment
from nb2cwl.launch import Engine, run_workflow
from nb2cwl.options import CompileOptions
from nb2cwl.passes.cost_model import Costs
from nb2cwl.scratch import WORKDIR_ENV

CHAIN = 6  # trivial cells in the chain
PAYLOAD = 32 * 2**20  # bytes handed between two steps


def calibrate(options: CompileOptions, repeats: int = 2) -> tuple[str, Costs]:
    """Measure the default deployment of `options`; keep and return its costs."""
    name = default_deployment(options)
    options = replace(options, profile=None, force=True)
    with tempfile.TemporaryDirectory(prefix="nb2cwl-calibrate-") as work:
        chain = [f"v{k} = {f'v{k - 1} + ' if k else ''}1" for k in range(CHAIN)]
        many = _best(work, "chain", chain, replace(options, granularity="cell"), repeats)
        one = _best(work, "single", ["\n".join(chain)], options, repeats)
        step = max((many - one) / (CHAIN - 1), 0.001)
        big = _best(work, "big", [f"payload = bytes({PAYLOAD})", "print(len(payload))"],
                    replace(options, granularity="cell"), repeats)
        small = _best(work, "small", ["payload = bytes(1)", "print(len(payload))"],
                      replace(options, granularity="cell"), repeats)
        per_byte = max((big - small) / PAYLOAD, 1e-12)
    cores = os.cpu_count() or 1
    when = time.strftime("%Y-%m-%d")
    costs = Costs(round(step, 4), round(1 / per_byte, -3), cores,
                  f"measured by nb2cwl calibrate on {when} ({calibration_file()})")
    save_calibration(name, costs)
    return name, costs


def _best(work: str, label: str, cells: list[str], options: CompileOptions,
          repeats: int) -> float:
    """The shortest of `repeats` runs of a notebook made of `cells`, in seconds."""
    path = os.path.join(work, f"{label}.ipynb")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                 "display_name": "Python 3"}
    nb.cells = [nbformat.v4.new_code_cell(code) for code in cells]
    nbformat.write(nb, path)
    out = os.path.join(work, f"{label}-wf")
    workflow, _ = compile_to_directory(path, out, options)
    best = float("inf")
    # StreamFlow's job folders go in `work`, removed with it (else $TMPDIR/streamflow keeps them)
    engine_work = {WORKDIR_ENV: os.path.join(work, "streamflow")}
    for _ in range(repeats):
        started = time.monotonic()
        run_workflow(workflow, out, quiet=True, cache=False,
                     new_engine=lambda: Engine(None, extra_env=engine_work))
        best = min(best, time.monotonic() - started)
    return best
