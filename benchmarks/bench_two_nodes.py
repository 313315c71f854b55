"""Training on 1 node vs 2 nodes of the two-node test cluster, and what one Slurm job costs.

Starts the test suite's two-node Slurm cluster (tests/engines/slurm_two_nodes.py: each slurmd
in its own network namespace, one CPU declared per node), then:

1. runs one GradientTape training loop (an MLP on 8,192 synthetic examples, 160 steps of a
   global batch of 256) with `--resources @train=nodes=1` and `=nodes=2`: images/s of the
   loop, and the seconds per step. The loop's cell times itself, so TensorFlow's start and
   the workers' rendezvous are not counted. The two nodes share this machine's cores, so the
   2-node run cannot be faster here; what it shows is the collectives' cost: the time per
   step on 2 workers minus the compute on half the batch (measured in one process on the
   same machine). The projection for 2 real nodes is that compute plus that cost;
2. `nb2cwl calibrate` on the cluster and on the local deployment: what one more step costs.

Usage: python benchmarks/bench_two_nodes.py [--steps-per-epoch N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from deployment_cases import tuned_profile, write_notebook  # noqa: E402
from engines.slurm_two_nodes import start_two_nodes, stop_two_nodes  # noqa: E402

EXAMPLES, BATCH, EPOCHS = 8192, 256, 5
CELLS = [
    "import time\nimport numpy as np\nimport tensorflow as tf\nimport keras",
    "keras.utils.set_random_seed(1)\n"
    f"x = np.random.default_rng(0).normal(size=({EXAMPLES}, 256)).astype('float32')\n"
    "y = x[:, :10].sum(axis=1, keepdims=True).astype('float32')\n"
    f"dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch({BATCH})",
    "model = keras.Sequential([keras.Input((256,)),\n"
    "                          keras.layers.Dense(512, activation='relu'),\n"
    "                          keras.layers.Dense(512, activation='relu'),\n"
    "                          keras.layers.Dense(1)])\n"
    "optimizer = keras.optimizers.SGD(0.001)",
    "def train_step(xb, yb):\n"
    "    with tf.GradientTape() as tape:\n"
    "        loss = tf.reduce_mean((model(xb, training=True) - yb) ** 2)\n"
    "    grads = tape.gradient(loss, model.trainable_variables)\n"
    "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
    "    return loss",
    "started = time.perf_counter()\n"
    f"for epoch in range({EPOCHS}):\n"
    "    for xb, yb in dataset:\n"
    "        loss = train_step(xb, yb)\n"
    "elapsed = time.perf_counter() - started\n"
    "print(f'loop {elapsed:.3f} s, loss {float(loss):.4f}')",
]
STEPS = EPOCHS * (EXAMPLES // BATCH)


def _loop_seconds(run: Path) -> float:
    executed = json.loads(next(run.glob("*.executed.ipynb")).read_text())
    text = "".join("".join(o.get("text", "")) for o in executed["cells"][-1]["outputs"])
    return float(text.split("loop ")[1].split(" s")[0])


def _nb2cwl(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-m", "nb2cwl", *args], env=env, capture_output=True,
                          text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"nb2cwl {args[0]} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def _half_batch_compute(env: dict[str, str]) -> float:
    """Seconds of one step's compute on half the global batch, in one plain process."""
    code = "\n".join(CELLS).replace(f".batch({BATCH})", f".batch({BATCH // 2})")
    done = subprocess.run([sys.executable, "-c", code + "\nprint('SECONDS', elapsed)"],
                          env=env, capture_output=True, text=True, timeout=1800)
    seconds = float(done.stdout.split("SECONDS ")[1])
    return seconds / (2 * STEPS)  # half batches: twice the steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="nb2cwl-bench2n-"))
    cluster = start_two_nodes(Path(tempfile.mkdtemp(prefix="nb2cwl-slurm2-")))
    env = dict(cluster.env, PATH=os.path.dirname(sys.executable) + os.pathsep
               + os.environ["PATH"], NB2CWL_CALIBRATION=str(work / "calibration.json"),
               TF_CPP_MIN_LOG_LEVEL="2")
    try:
        profile = tuned_profile("slurm", work / "slurm.yml", pollingInterval=1)
        notebook = write_notebook(work / "train.ipynb", *CELLS)
        seconds = {}
        for nodes in (1, 2):
            out = work / f"nodes{nodes}"
            _nb2cwl("run", str(notebook), "-o", str(out), "--quiet", "--no-cache",
                    "--deployment", "slurm", "--deployment-file", str(profile),
                    "--resources", f"@train=nodes={nodes}", env=env)
            seconds[nodes] = _loop_seconds(out / "runs" / "1")
        half = _half_batch_compute(env)
        calibration = {}
        for name, extra in (("slurm", ["--deployment-file", str(profile)]), ("local", [])):
            _nb2cwl("calibrate", "--deployment", name, *extra, env=env)
            calibration[name] = json.loads((work / "calibration.json").read_text())[name]
    finally:
        stop_two_nodes(cluster)
    per_step = {n: s / STEPS for n, s in seconds.items()}
    collective = per_step[2] - half
    images = EXAMPLES * EPOCHS
    print(f"two-node cluster, {time.strftime('%Y-%m-%d')}: {STEPS} steps of a global batch of "
          f"{BATCH} ({images} images)")
    for nodes in (1, 2):
        print(f"  {nodes} node{'s' if nodes > 1 else ' '}: loop {seconds[nodes]:.2f} s, "
              f"{images / seconds[nodes]:.0f} images/s, {per_step[nodes] * 1000:.1f} ms per step")
    print(f"  compute of half a batch in one process: {half * 1000:.1f} ms per step")
    print(f"  collectives on 2 nodes (sharing this machine's cores): about "
          f"{collective * 1000:.1f} ms per step ({collective / per_step[2]:.0%} of a step)")
    projected = half + collective
    print(f"  projected on 2 real nodes: {projected * 1000:.1f} ms per step, "
          f"{BATCH / projected:.0f} images/s, {per_step[1] / projected:.2f}x the 1-node run")
    slurm, local = calibration["slurm"]["step_seconds"], calibration["local"]["step_seconds"]
    print(f"  one more step: {slurm:.2f} s as a Slurm job on the cluster, {local:.2f} s locally "
          f"({slurm / local:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
