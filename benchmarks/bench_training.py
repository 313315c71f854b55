"""Training-step overhead: images/s of the case study's fit, as a workflow vs run directly.

Both runs train the notebooks/fashion_mnist.ipynb model for the notebook's 20 epochs on the
same synthetic IDX files, on one device (TensorFlow's default strategy). The direct run
executes the notebook's code cells in one Python process; the workflow run is `nb2cwl run`
through StreamFlow, whose training step records the fit's images/s in metrics.json. Both
time `model.fit` the same way (wall clock around the call). Target: overhead at most 5%.

    python benchmarks/bench_training.py [--train 12800] [--test 2560] [--repeats 3]

The two runs alternate `--repeats` times and the fastest fit of each counts: the host's noise
(the same fit takes 17 to 22 s from one minute to the next) is larger than the 5% measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "fashion_mnist.ipynb"

_DIRECT = '''
import json, sys, time
import keras
fit = keras.Model.fit
record = {}
def timed(model, *args, **kwargs):
    start = time.perf_counter()
    history = fit(model, *args, **kwargs)
    record["seconds"] = time.perf_counter() - start
    record["samples"] = int(len(args[0]) * (1 - kwargs.get("validation_split", 0.0)))
    record["epochs"] = len(history.epoch)
    return history
keras.Model.fit = timed
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", type=int, default=12800, help="training images")
    parser.add_argument("--test", type=int, default=2560, help="test images")
    parser.add_argument("--repeats", type=int, default=3,
                        help="alternating runs of each; the fastest fit counts")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "notebooks"))
    from make_fashion_mnist import write_fashion_mnist

    with tempfile.TemporaryDirectory(prefix="nb2cwl-bench-training-") as tmp:
        work = Path(tmp)
        shutil.copyfile(NOTEBOOK, work / NOTEBOOK.name)
        write_fashion_mnist(work / "data" / "fashion-mnist", train=args.train, test=args.test)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
        env.pop("NB2CWL_CPU_REPLICAS", None)
        directs, workflows = [], []
        for number in range(args.repeats):
            directs.append(_direct(work, env))
            workflows.append(_workflow(work, env, number))
    direct, direct_wall = min(directs, key=lambda d: d[0]["seconds"])
    workflow, workflow_wall = min(workflows, key=lambda w: w[0]["seconds"])
    direct_ips = direct["samples"] * direct["epochs"] / direct["seconds"]
    workflow_ips = workflow["samples_per_second"]
    every = ", ".join(f"{d['samples'] * d['epochs'] / d['seconds']:.0f}" for d, _ in directs)
    print(f"images/s of each run: direct {every}; workflow "
          + ", ".join(f"{w['samples_per_second']:.0f}" for w, _ in workflows))
    overhead = (direct_ips / workflow_ips - 1) * 100
    print(f"fit, {direct['epochs']} epochs x {direct['samples']} images, one device")
    print(f"  direct:   {direct_ips:8.0f} images/s  (fit {direct['seconds']:.1f} s, "
          f"notebook {direct_wall:.1f} s)")
    print(f"  workflow: {workflow_ips:8.0f} images/s  (fit {workflow['seconds']:.1f} s, "
          f"nb2cwl run {workflow_wall:.1f} s)")
    print(f"  overhead: {overhead:+.1f}% images/s (target: at most +5%)  "
          f"{'PASS' if overhead <= 5 else 'FAIL'}")
    print(f"  whole run: {workflow_wall / direct_wall:.2f}x the direct run's wall time")
    return 0


def _direct(work: Path, env: dict[str, str]) -> tuple[dict, float]:
    notebook = nbformat.read(work / NOTEBOOK.name, as_version=4)
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    script = work / "direct.py"
    script.write_text(_DIRECT + code + "\nprint('NB2CWL-FIT', json.dumps(record))\n")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(script)], cwd=work, env=env,
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    line = next(x for x in done.stdout.splitlines() if x.startswith("NB2CWL-FIT "))
    return json.loads(line.split(" ", 1)[1]), wall


def _workflow(work: Path, env: dict[str, str], number: int = 0) -> tuple[dict, float]:
    out = work / f"wf-{number}"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(work / NOTEBOOK.name), "-o",
                    str(out), "--quiet", "--no-cache"], env=env, check=True,
                   capture_output=True, text=True)
    wall = time.perf_counter() - start
    (run,) = (out / "runs" / "1").glob("training-*")
    return json.loads((run / "metrics.json").read_text())["fit"], wall


if __name__ == "__main__":
    raise SystemExit(main())
