"""Soak: many consecutive `nb2cwl run`s of one 10-step notebook with changing parameters
(issue 27, item 6). Nothing may grow from run to run but the step cache, up to its limit.

Every run goes into the same output folder with `-p scale VALUE` (a new value each time, so
the steps after the parameter run again and the cache gains entries) and `--cache-limit`.
After every `--every` runs it reports, measured in this one process:

- processes: those carrying this benchmark's marker in their environment (every process a
  run starts inherits it; a finished run must leave none), and the machine's process count;
- file descriptors: the machine's open file handles (/proc/sys/fs/file-nr) and this
  process's own;
- disk: the step cache, the runs' results (runs/: one folder per run, kept by default as a
  notebook's history; with `--keep-runs N`, the newest N), the rest of the output folder,
  and the scratch left in the private TMPDIR the runs are given (StreamFlow's working
  folders, the step server's, the events').

Usage: python benchmarks/bench_soak.py [--runs 200] [--every 50] [--cache-limit 20MB]
                                      [--keep-runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

CELLS = [
    "import json\nimport numpy as np\nscale = 1.0",
    "rng = np.random.default_rng(0)\nbase = rng.normal(size=20_000)",
    "scaled = base * scale",
    "np.save('scaled.npy', scaled)\nprint('saved', scaled.shape)",
    "loaded = np.load('scaled.npy')\nstats = {'mean': float(loaded.mean()), 'std': "
    "float(loaded.std())}",
    "print(json.dumps({k: round(v, 4) for k, v in stats.items()}))",
    "squares = [float(v) ** 2 for v in loaded[:2000]]",
    "total = sum(squares)\nprint(round(total, 3))",
    "with open('summary.json', 'w') as handle:\n    json.dump({'total': total, **stats}, handle)",
    "print(open('summary.json').read()[:60])",
]


def _size(path: Path) -> int:
    if not path.exists():
        return 0
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _marked(marker: bytes) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes():
                    count += 1
            except OSError:
                continue
    return count


def _report(runs: int, seconds: float, marker: bytes, out: Path, scratch: Path) -> str:
    processes = sum(1 for p in Path("/proc").iterdir() if p.name.isdigit())
    handles = int(Path("/proc/sys/fs/file-nr").read_text().split()[0])
    own = len(os.listdir("/proc/self/fd"))
    cache = _size(out / ".nb2cwl-cache")
    results = _size(out / "runs")
    rest = _size(out) - cache - results
    left = _size(scratch)
    entries = sum(1 for _ in scratch.rglob("*"))
    mb = 1e6
    return (f"{runs:5d} {seconds:8.1f} {_marked(marker):6d} {processes:6d} {handles:8d} {own:4d} "
            f"{cache / mb:9.2f} {results / mb:9.2f} {rest / mb:7.2f} {left / mb:8.3f} "
            f"{entries:5d}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="how many runs (default 200)")
    parser.add_argument("--every", type=int, default=50,
                        help="report after every N runs (default 50)")
    parser.add_argument("--cache-limit", default="20MB",
                        help="the runs' --cache-limit (default 20MB)")
    parser.add_argument("--keep-runs", type=int, default=None, metavar="N",
                        help="the runs' --keep-runs: keep the newest N run folders (default: "
                        "every run's is kept, as nb2cwl does by default)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nb2cwl-bench-soak-"))
    scratch = work / "tmp"
    scratch.mkdir()
    notebook = work / "soak.ipynb"
    nb = new_notebook(cells=[new_code_cell(c) for c in CELLS])
    nb.cells[0].metadata["tags"] = ["parameters"]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, notebook)
    out = work / "wf"
    marker = f"NB2CWL_SOAK={os.getpid()}-{time.time_ns()}"
    env = dict(os.environ, TMPDIR=str(scratch), **dict([marker.split("=", 1)]),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    print("runs  seconds marked  procs  handles  fds  cache MB  runs/ MB rest MB scratch MB "
          "files")
    print(_report(0, 0.0, marker.encode(), out, scratch), flush=True)
    started = time.monotonic()
    failures = 0
    for number in range(1, args.runs + 1):
        done = subprocess.run(
            [sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o", str(out), "--quiet",
             "--granularity", "cell", "--cache-limit", args.cache_limit,
             "-p", "scale", str(1.0 + number / 1000),
             *(["--keep-runs", str(args.keep_runs)] if args.keep_runs else [])],
            env=env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            failures += 1
            print(f"run {number} failed: {done.stderr.strip().splitlines()[-1:]}", flush=True)
        if number % args.every == 0:
            print(_report(number, time.monotonic() - started, marker.encode(), out, scratch),
                  flush=True)
    print(f"{failures} of {args.runs} runs failed")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
