"""Workflow overhead: a linear notebook of CPU-bound cells, nbclient vs `nb2cwl run` (and --fuse).

Usage: python benchmarks/bench_overhead.py [--quick]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

WORK = "total = sum(i * i % 7 for i in range({n}))"  # pure-Python CPU work, no sleeping


PER_COMMAND = ("step processes beyond the cells", "gaps between commands")


def calibrate(seconds: float) -> int:
    """Loop count for which WORK, run at module level as a cell runs, takes `seconds`."""
    n = 200_000
    for _ in range(3):
        code = compile(WORK.format(n=n), "<calibrate>", "exec")
        start = time.perf_counter()
        exec(code, {})
        n = max(1000, int(n * seconds / (time.perf_counter() - start)))
    return n


def make_notebook(cells: int, n: int) -> nbformat.NotebookNode:
    """`cells` code cells; cell k does the work and extends cell k-1's list `v{k-1}`."""
    nb_cells = [new_markdown_cell("# Linear chain of CPU-bound cells")]
    for k in range(cells):
        previous = f"v{k - 1} + " if k else ""
        nb_cells.append(
            new_code_cell(
                ("import time\n" if k == 0 else "")
                + f"_start = time.perf_counter()\n{WORK.format(n=n)}\n"
                f"v{k} = {previous}[total % 10]\n"
                f"print(f'cell {k}: {{time.perf_counter() - _start:.3f}} s')"
            )
        )
    nb = new_notebook(cells=nb_cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def run_nbclient(path: str, work_dir: str) -> tuple[float, float]:
    """Seconds for (kernel start + cells + shutdown, cells only), executed top to bottom."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", resources={"metadata": {"path": work_dir}})
    start = time.perf_counter()
    with client.setup_kernel():
        cells_start = time.perf_counter()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        cells = time.perf_counter() - cells_start
    return time.perf_counter() - start, cells


def run_workflow(path: str, out: str, fuse: bool) -> tuple[float, dict[str, float]]:
    """Wall seconds of `nb2cwl run`, and where the time went (from StreamFlow's database)."""
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    command = [os.path.join(bindir, "nb2cwl"), "run", path, "-o", out, "--quiet"]
    started = time.time()
    done = subprocess.run(
        command + (["--fuse"] if fuse else []), env=env, capture_output=True, text=True
    )
    wall = time.time() - started
    if done.returncode:
        raise RuntimeError(f"nb2cwl run failed ({done.returncode}):\n{done.stderr}")
    return wall, breakdown(out, started, wall, done.stdout)


def breakdown(out: str, started: float, wall: float, stdout: str) -> dict[str, float]:
    """Split the wall time: nb2cwl/compile, StreamFlow start, step commands, gaps, finish."""
    with sqlite3.connect(os.path.join(out, ".streamflow", "sqlite.db")) as db:
        jobs = sorted(db.execute("SELECT start_time, end_time, cmd FROM execution"))
    (executed,) = glob.glob(os.path.join(out, "runs", "1", "*.executed.ipynb"))
    with open(executed, encoding="utf-8") as handle:
        text = json.dumps(json.load(handle)["cells"])
    cell_seconds = sum(float(s) for s in re.findall(r"cell \d+: ([\d.]+) s", text))
    streamflow = float(re.search(r"finished in ([\d.]+) s", stdout).group(1))  # type: ignore[union-attr]
    first, last = jobs[0][0] / 1e9, jobs[-1][1] / 1e9
    commands = sum((e - s) / 1e9 for s, e, _ in jobs)
    return {
        "steps": len(jobs) - 1,  # the last job assembles the executed notebook
        "nb2cwl (interpreter, compile)": wall - streamflow,
        "StreamFlow start to 1st command": first - started - (wall - streamflow),
        "cells' own run time": cell_seconds,
        "step processes beyond the cells": commands - cell_seconds,
        "gaps between commands": (last - first) - commands,
        "StreamFlow after last command": started + wall - last,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="3 cells of 0.3 s, one repeat")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    cells, seconds, repeats = (3, 0.3, 1) if args.quick else (10, 1.0, 2)
    n = calibrate(seconds)
    tmp = tempfile.mkdtemp(prefix="nb2cwl-overhead-")
    path = os.path.join(tmp, "chain.ipynb")
    nbformat.write(make_notebook(cells, n), path)
    print(f"{cells} cells x {seconds} s of CPU work (range({n})); notebook {path}")
    times: dict[str, list[float]] = {
        "nbclient": [],
        "nbclient cells only": [],
        "nb2cwl run": [],
        "nb2cwl run --fuse": [],
    }
    parts: dict[str, dict[str, float]] = {}
    for rep in range(repeats):
        work_dir = tempfile.mkdtemp(dir=tmp, prefix="nbclient-")
        total, only = run_nbclient(path, work_dir)
        times["nbclient"].append(total)
        times["nbclient cells only"].append(only)
        for label, fuse in (("nb2cwl run", False), ("nb2cwl run --fuse", True)):
            out = os.path.join(tmp, f"{'fused' if fuse else 'plain'}-{rep}")
            wall, parts[label] = run_workflow(path, out, fuse)
            times[label].append(wall)
    print(f"\n{'':22} {'best s':>8} {'mean s':>8}   (repeats: {repeats})")
    for label, values in times.items():
        print(f"{label:22} {min(values):8.2f} {statistics.mean(values):8.2f}")
    base = times["nbclient"]
    print("\nratio to nbclient (kernel start included): best/best, mean/mean")
    verdicts = []
    for label in ("nb2cwl run", "nb2cwl run --fuse"):
        best = min(times[label]) / min(base)
        mean = statistics.mean(times[label]) / statistics.mean(base)
        only = statistics.mean(times[label]) / statistics.mean(times["nbclient cells only"])
        print(f"{label:22} {best:6.2f} {mean:6.2f}   (mean vs nbclient cells only: {only:.2f})")
        verdicts.append((f"{label}: workflow/nbclient mean ratio {mean:.2f} <= 1.3", mean <= 1.3))
    for label, split in parts.items():
        jobs = split.pop("steps") + 1
        print(f"\nwhere the time went, last {label} ({jobs:.0f} commands incl. assemble):")
        for name, value in split.items():
            each = f"  ({value / jobs:.3f} s per command)" if name in PER_COMMAND else ""
            print(f"  {name:34} {value:6.2f} s{each}")
    print()
    for text, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
