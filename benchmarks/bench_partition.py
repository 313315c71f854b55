"""Step partitioning: a boundary only where it pays. Ratios to nbclient, measured in one run.

Usage: python benchmarks/bench_partition.py [--quick] [--only NAME ...]

Cases (issue targets in brackets):
  trivial-300     300 cells `v_i = i * 2`                               [<= 1.3x nbclient]
  trivial-3000    3,000 such cells; and `streamflow run --validate`     [<= 1.5x; < 30 s]
  independent-2   two independent cells of 2 s of CPU each              [<= 0.6x]
  independent-4   four of them, on 2 cores                              [<= 0.55x]
  realistic       a 40+ cell pandas/numpy/matplotlib analysis with one  [<= 1.2x without a
                  heavy loop, without and with `nb2cwl profile`          profile; < 1x with]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import nbformat
from bench_overhead import calibrate, run_nbclient
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}
WORK = "total_{k} = sum(i * i % 7 for i in range({n}))\nprint('branch {k}', total_{k} % 10)"


def notebook(cells: list[str], path: str) -> str:
    nb = new_notebook(cells=[new_markdown_cell("# benchmark")] + [new_code_cell(c)
                                                                   for c in cells])
    nb.metadata["kernelspec"] = dict(KERNEL)
    nbformat.write(nb, path)
    return path


def trivial(count: int) -> list[str]:
    return [f"v_{i} = {i} * 2" for i in range(count)] + [f"print(v_{count - 1})"]


def independent(count: int, n: int) -> list[str]:
    return [WORK.format(k=k, n=n) for k in range(count)] + [
        "print(" + " + ".join(f"total_{k}" for k in range(count)) + ")"]


def realistic(n: int) -> list[str]:
    """A 44-cell analysis: data, cleaning, summaries, plots, one heavy simulation loop."""
    cells = [
        "import math\nimport numpy as np\nimport pandas as pd\nimport matplotlib\n"
        "matplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "pd.set_option('display.precision', 3)",
        "rng = np.random.default_rng(7)\ndf = pd.DataFrame({'group': rng.choice(list('abcd'), "
        "500), 'x': rng.normal(size=500), 'y': rng.normal(size=500)})",
        "df.head()",
        "df.describe()",
        "df['z'] = df['x'] * 2 + df['y']",
        "df['bucket'] = pd.cut(df['z'], 5, labels=False)",
        "counts = df['group'].value_counts().sort_index()\ncounts",
        "means = df.groupby('group')[['x', 'y', 'z']].mean()\nmeans",
        "pivot = df.pivot_table(index='group', columns='bucket', values='x', aggfunc='count')"
        "\npivot",
        "corr = df[['x', 'y', 'z']].corr()\ncorr",
        "fig, ax = plt.subplots()\ndf['z'].hist(ax=ax, bins=20)\nplt.close(fig)",
        "fig, ax = plt.subplots()\nmeans.plot(kind='bar', ax=ax)\nplt.close(fig)",
        "top = df.nlargest(5, 'z')\ntop",
        "df['rank'] = df['z'].rank()",
        "print(df['rank'].max())",
        # the heavy loop: independent simulations, scattered
        "def simulate(seed):\n    local = np.random.default_rng(seed)\n    total = 0.0\n"
        f"    for _ in range({n}):\n        total += math.sin(local.random())\n"
        "    return round(total, 6)",
        "results = [simulate(seed) for seed in range(8)]\nprint(results)",
        "sim = pd.Series(results)\nsim.describe()",
    ]
    for k in range(26):  # cheap follow-up cells, as analyses have
        cells.append(f"stat_{k} = float(df['x'].quantile({(k + 1) / 27:.3f}))\n"
                     f"print('q{k}', round(stat_{k}, 4))")
    return cells


def run_workflow(path: str, out: str, *extra: str) -> float:
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    started = time.perf_counter()
    done = subprocess.run([os.path.join(bindir, "nb2cwl"), "run", path, "-o", out, "--quiet",
                           "--no-cache", *extra], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(f"nb2cwl run failed:\n{done.stderr[-2000:]}")
    return seconds


def validate_seconds(out: str) -> float:
    bindir = os.path.dirname(sys.executable)
    started = time.perf_counter()
    subprocess.run([os.path.join(bindir, "streamflow"), "run", "--validate",
                    os.path.join(out, "streamflow.yml")], capture_output=True, check=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller cases, for a smoke run")
    parser.add_argument("--only", nargs="*", default=None, help="run only these cases")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    tmp = tempfile.mkdtemp(prefix="nb2cwl-partition-")
    seconds = 0.5 if args.quick else 2.0
    n = calibrate(seconds)
    loop_n = calibrate(0.4 if args.quick else 1.0) // 6  # simulate(): 8 items of about 1 s
    cases = {
        "trivial-300": (trivial(60 if args.quick else 300), 1.3),
        "trivial-3000": (trivial(600 if args.quick else 3000), 1.5),
        "independent-2": (independent(2, n), 0.6),
        "independent-4": (independent(4, n), 0.55),
        "realistic": (realistic(loop_n), 1.2),
    }
    verdicts = []
    print(f"cores: {os.cpu_count()}; CPU cells of {seconds} s (range({n})); load average "
          f"{os.getloadavg()[0]:.2f}")
    for name, (cells, target) in cases.items():
        if args.only and name not in args.only:
            continue
        path = notebook(cells, os.path.join(tmp, f"{name}.ipynb"))
        reference, _, _ = run_nbclient(path, tempfile.mkdtemp(dir=tmp))
        out = os.path.join(tmp, f"{name}-wf")
        ours = run_workflow(path, out)
        ratio = ours / reference
        steps = len([p for p in os.listdir(os.path.join(out, "steps")) if p.endswith(".py")])
        print(f"{name:14} nbclient {reference:6.2f} s   nb2cwl run {ours:6.2f} s   ratio "
              f"{ratio:5.2f}   ({steps} step scripts incl. assemble)")
        verdicts.append((f"{name}: {ratio:.2f} <= {target}", ratio <= target))
        if name == "trivial-3000":
            validate = validate_seconds(out)
            print(f"{'':14} streamflow run --validate: {validate:.1f} s")
            verdicts.append((f"{name}: validate {validate:.1f} s < 30 s", validate < 30))
        if name == "realistic":
            profile = os.path.join(tmp, "realistic.profile.json")
            bindir = os.path.dirname(sys.executable)
            subprocess.run([os.path.join(bindir, "nb2cwl"), "profile", path, "-o", profile],
                           capture_output=True, check=True)
            profiled = run_workflow(path, out + "-profiled", "--profile", profile)
            print(f"{'':14} with a profile: nb2cwl run {profiled:6.2f} s   ratio "
                  f"{profiled / reference:5.2f}")
            verdicts.append((f"{name} with a profile: {profiled / reference:.2f} < 1",
                             profiled < reference))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    for text, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
