"""Workflow overhead: a linear notebook of CPU-bound cells, nbclient vs `nb2cwl run` with one
step per cell (--granularity cell) and with the default partitioning (cells fused).

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

    def measure(n: int) -> float:
        code = compile(WORK.format(n=n), "<calibrate>", "exec")
        start = time.perf_counter()
        exec(code, {})
        return time.perf_counter() - start

    n = 200_000
    for repeats in (1, 1, 3):  # the last estimate is the best of 3 at about `seconds`
        n = max(1000, int(n * seconds / min(measure(n) for _ in range(repeats))))
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


def cells_own_time(cells: object) -> float:
    """The sum of the run times the cells printed about themselves."""
    return sum(float(t) for t in re.findall(r"cell \d+: ([\d.]+) s", json.dumps(cells)))


def run_nbclient(path: str, work_dir: str) -> tuple[float, float, float]:
    """Seconds: kernel start + cells + shutdown; cells only; the cells' own printed time."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", resources={"metadata": {"path": work_dir}})
    start = time.perf_counter()
    with client.setup_kernel():
        cells_start = time.perf_counter()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        cells = time.perf_counter() - cells_start
    return time.perf_counter() - start, cells, cells_own_time(nb.cells)


def run_workflow(path: str, out: str, fuse: bool) -> tuple[float, dict[str, float]]:
    """Wall seconds of `nb2cwl run`, and where the time went (from StreamFlow's database).

    `fuse`: the default partitioning; otherwise one step per cell."""
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    command = [os.path.join(bindir, "nb2cwl"), "run", path, "-o", out, "--quiet"]
    started = time.time()
    done = subprocess.run(
        command + ([] if fuse else ["--granularity", "cell"]), env=env, capture_output=True,
        text=True
    )
    wall = time.time() - started
    if done.returncode:
        raise RuntimeError(f"nb2cwl run failed ({done.returncode}):\n{done.stderr}")
    return wall, breakdown(out, started, wall, done.stdout)


def breakdown(out: str, started: float, wall: float, stdout: str) -> dict[str, float]:
    """Split the wall time: nb2cwl start + compile, StreamFlow start, commands, gaps, end."""
    with sqlite3.connect(os.path.join(out, ".streamflow", "sqlite.db")) as db:
        jobs = sorted(db.execute("SELECT start_time, end_time FROM execution"))
    (executed,) = glob.glob(os.path.join(out, "runs", "1", "*.executed.ipynb"))
    with open(executed, encoding="utf-8") as handle:
        own = cells_own_time(json.load(handle)["cells"])
    streamflow = float(re.search(r"finished in ([\d.]+) s", stdout).group(1))  # type: ignore[union-attr]
    first, last = jobs[0][0] / 1e9, jobs[-1][1] / 1e9
    commands = sum((e - s) / 1e9 for s, e in jobs)
    return {
        "commands": len(jobs),  # one per step, and the one that assembles the notebook
        "nb2cwl outside StreamFlow": wall - streamflow,
        "StreamFlow start to 1st command": first - started - (wall - streamflow),
        "cells' own run time": own,
        "step processes beyond the cells": commands - own,
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
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    labels = ("nbclient", "nbclient cells only", "nb2cwl run (cell)", "nb2cwl run (auto)")
    wall: dict[str, list[float]] = {label: [] for label in labels}
    extra: dict[str, list[float]] = {label: [] for label in labels}  # wall - cells' own time
    parts: dict[str, dict[str, float]] = {}
    for rep in range(repeats):
        total, only, own = run_nbclient(path, tempfile.mkdtemp(dir=tmp, prefix="nbclient-"))
        for label, value in (("nbclient", total), ("nbclient cells only", only)):
            wall[label].append(value)
            extra[label].append(value - own)
        for label, fuse in (("nb2cwl run (cell)", False), ("nb2cwl run (auto)", True)):
            out = os.path.join(tmp, f"{'fused' if fuse else 'plain'}-{rep}")
            seconds_taken, parts[label] = run_workflow(path, out, fuse)
            wall[label].append(seconds_taken)
            extra[label].append(seconds_taken - parts[label]["cells' own run time"])
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"\nrepeats: {repeats}; overhead = wall time - the time the cells report for themselves")
    print(f"{'':22} {'best s':>8} {'mean s':>8} {'overhead best':>14} {'mean':>6}")
    for label in labels:
        print(
            f"{label:22} {min(wall[label]):8.2f} {statistics.mean(wall[label]):8.2f} "
            f"{min(extra[label]):14.2f} {statistics.mean(extra[label]):6.2f}"
        )
    work = cells * seconds
    print(
        f"\nratio to nbclient (kernel start included); 'projected' = (work + mean overhead) / "
        f"(work + nbclient's), for exactly {work:g} s of cell work, free of run-time noise"
    )
    print(f"{'':22} {'best':>6} {'mean':>6} {'projected':>10}")
    verdicts = []
    for label in ("nb2cwl run (cell)", "nb2cwl run (auto)"):
        best = min(wall[label]) / min(wall["nbclient"])
        mean = statistics.mean(wall[label]) / statistics.mean(wall["nbclient"])
        projected = (work + statistics.mean(extra[label])) / (
            work + statistics.mean(extra["nbclient"])
        )
        print(f"{label:22} {best:6.2f} {mean:6.2f} {projected:10.2f}")
        verdicts.append((f"{label}: workflow/nbclient mean ratio {mean:.2f} <= 1.3", mean <= 1.3))
    for label, split in parts.items():
        jobs = split.pop("commands")
        print(f"\nwhere the time went, last {label} ({jobs:.0f} commands incl. assemble):")
        for name, value in split.items():
            each = f"  ({value / jobs:.3f} s per command)" if name in PER_COMMAND else ""
            print(f"  {name:34} {value:6.2f} s{each}")
    print("\n(smoke run: the target is meant for the full run)" if args.quick else "")
    for text, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
