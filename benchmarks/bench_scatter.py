"""Scatter/gather speed-up: independent items in one comprehension, nbclient vs the workflow.

Case 1: 16 items of about 1 s of CPU work each (target: the workflow at least 1.8x faster on
2 cores). Case 2: 10,000 items of about 1 ms each (target: the workflow no slower than 1.2x the
top-to-bottom run). Both times are measured in this one run, on the same machine.

Usage: python benchmarks/bench_scatter.py [--quick] [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

WORK = ("def work(i):\n    total = 0\n    for k in range({n}):\n        total += k * i % 7\n"
        "    return total")


def calibrate(seconds: float) -> int:
    """Loop count for which work() takes about `seconds`.

    Measured three times, each on the previous estimate: a short first measurement alone
    overestimates the per-iteration cost (the interpreter has not specialised the loop yet), and
    gave items of about half the intended time.
    """
    namespace: dict = {}
    n = 1_000_000
    for _ in range(3):
        exec(WORK.format(n=n), namespace)
        start = time.perf_counter()
        namespace["work"](3)
        n = max(10, int(n * seconds / (time.perf_counter() - start)))
    return n


def notebook(items: int, n: int) -> nbformat.NotebookNode:
    """A definition cell, then one comprehension over `items` calling work()."""
    nb = new_notebook(cells=[
        new_markdown_cell(f"# {items} independent items"),
        new_code_cell(WORK.format(n=n)),
        new_code_cell(f"results = [work(i) for i in range({items})]\nprint(sum(results))"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                 "display_name": "Python 3"}
    return nb


def time_nbclient(path: Path) -> float:
    """Top to bottom in a fresh kernel, as a user runs the notebook (kernel start included)."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return time.perf_counter() - start


def time_workflow(path: Path, out: Path) -> tuple[float, float]:
    """(`nb2cwl run` wall time, StreamFlow's run alone on the compiled workflow)."""
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep
               + os.environ.get("PATH", ""))
    nb2cwl = [sys.executable, "-m", "nb2cwl"]
    start = time.perf_counter()
    subprocess.run([*nb2cwl, "run", str(path), "-o", str(out), "--quiet"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    total = time.perf_counter() - start
    streamflow = [sys.executable, "-c", "import sys; from streamflow.main import run; "
                  "sys.exit(run())", "run", "--quiet", "--outdir", str(out / "again"),
                  str(out / "streamflow.yml")]
    start = time.perf_counter()
    subprocess.run(streamflow, check=True, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return total, time.perf_counter() - start


def case(label: str, items: int, seconds: float, repeats: int, root: Path) -> dict[str, float]:
    """Best-of-`repeats` times for one case, nbclient and workflow interleaved."""
    n = calibrate(seconds)
    path = root / f"{label}.ipynb"
    nbformat.write(notebook(items, n), path)
    best = {"nbclient": float("inf"), "nb2cwl run": float("inf"), "streamflow run": float("inf")}
    for repeat in range(repeats):
        best["nbclient"] = min(best["nbclient"], time_nbclient(path))
        run, streamflow = time_workflow(path, root / f"{label}-wf{repeat}")
        best["nb2cwl run"] = min(best["nb2cwl run"], run)
        best["streamflow run"] = min(best["streamflow run"], streamflow)
    return best


def main() -> int:
    """Run both cases and print times and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller cases, one repeat")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each case, interleaved; the best of each is compared "
                             "(default 3: the host is noisy)")
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    big = (4, 0.25) if args.quick else (16, 1.0)
    small = (1000, 0.001) if args.quick else (10_000, 0.001)
    print(f"cores: {os.cpu_count()}, python {sys.version.split()[0]}, repeats {repeats} (best)")
    with tempfile.TemporaryDirectory(prefix="nb2cwl-scatter-") as tmp:
        root = Path(tmp)
        results = {
            f"{big[0]} items x {big[1]} s": case("big", *big, repeats, root),
            f"{small[0]} items x {small[1] * 1000:g} ms": case("small", *small, repeats, root),
        }
    for label, best in results.items():
        print(f"\n{label}")
        for name, seconds in best.items():
            print(f"  {name:<16} {seconds:7.2f} s")
        for name in ("nb2cwl run", "streamflow run"):
            print(f"  speed-up nbclient / {name}: {best['nbclient'] / best[name]:.2f}x")
    big_label, small_label = list(results)
    speedup = results[big_label]["nbclient"] / results[big_label]["nb2cwl run"]
    slowdown = results[small_label]["nb2cwl run"] / results[small_label]["nbclient"]
    print(f"\n{'PASS' if speedup >= 1.8 else 'FAIL'}: {big_label}: nb2cwl run is {speedup:.2f}x "
          "faster than nbclient (target >= 1.8x)")
    print(f"{'PASS' if slowdown <= 1.2 else 'FAIL'}: {small_label}: nb2cwl run takes "
          f"{slowdown:.2f}x the nbclient time (target <= 1.2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
