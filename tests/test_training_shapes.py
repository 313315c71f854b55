"""The training shapes of real TensorFlow programs, run as the notebook (or script) and as a
workflow on 1 and on 2 CPU replicas.

Each program is a small equivalent, written here, of a shape found in the 16 models of the
TF -> Horovod study: the tape inline in the batch loop with enumerate's counter printed and
the batch reused for display, a loss summed over the batch, a per-epoch function holding the
batch loop, a step function nested in train(), `next(iterator)` per step, Keras 3's
`optimizer.apply`, BatchNormalization, a loss adding a batch sum to a batch mean. On one
device the workflow prints exactly what the kernel (or `python script.py`) prints; on 2
replicas the printed numbers agree within the tolerance docs/training.md gives (a relative
1e-4: float32 sums in another order), and every line is printed once.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from test_training import HAS_TF, _compiled_training, _rewritten

from nb2cwl.api import compile_notebook

needs_tf = pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
#: Printed numbers on 2 replicas against one device (docs/training.md).
RTOL, ATOL = 1e-4, 1e-6

IMPORTS = "import numpy as np\nimport tensorflow as tf\nimport keras"
DATA = (
    "keras.utils.set_random_seed(1)\n"
    "x = np.random.default_rng(0).normal(size=(101, 8)).astype('float32')\n"
    "y = (x @ np.linspace(-1, 1, 8, dtype='float32') > 0).astype('int64')\n"
    "dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)  # 32, 32, 32, 5"
)

# Gaps 1, 2, 6 and 7: the tape inline in the batch loop, enumerate's counter used outside the
# update, the batch reused after the update for display, a batch sum divided by a constant, a
# metric updated on the replicas, and a last batch of 5 split 3 + 2.
INLINE_SUM = [
    IMPORTS, DATA,
    "model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation='relu'),\n"
    "                          keras.layers.Dense(2)])\n"
    "optimizer = keras.optimizers.SGD(0.05)\n"
    "accuracy = keras.metrics.SparseCategoricalAccuracy()",
    "for epoch in range(3):\n"
    "    for step, (xb, yb) in enumerate(dataset.map(lambda a, b: (a, tf.cast(b, tf.uint8)))):\n"
    "        with tf.GradientTape() as tape:\n"
    "            logits = model(xb, training=True)\n"
    "            per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(\n"
    "                labels=tf.cast(yb, tf.int64), logits=logits)\n"
    "            loss = tf.reduce_sum(per_example) / 32\n"
    "        accuracy.update_state(yb, logits)  # uint8 labels, as MNIST's\n"
    "        grads = tape.gradient(loss, model.trainable_variables)\n"
    "        for g in grads:  # the VAE's no-op clipping loop\n"
    "            tf.clip_by_norm(g, 15)\n"
    "        optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
    "        if step % 2 == 1:\n"
    "            hits = tf.cast(tf.argmax(model(xb), axis=1) == tf.cast(yb, tf.int64),\n"
    "                           tf.float32)\n"
    "            print(f'epoch {epoch} step {step}: loss {float(loss):.6f} '\n"
    "                  f'batch accuracy {float(tf.reduce_mean(hits)):.6f}')\n"
    "    print(f'epoch {epoch}: accuracy {float(accuracy.result()):.6f}')\n"
    "    accuracy.reset_state()",
]

# Gaps 4, 5 and 7: a per-epoch function holding the batch loop (ColorBot); a loss adding a sum
# over the batch to a mean over it (the VAE's reconstruction + KL); gradients clipped by their
# global norm between the tape and the update (the autoencoder).
EPOCH_FUNCTION_MIXED = [
    IMPORTS,
    "keras.utils.set_random_seed(1)\n"
    "x = np.random.default_rng(0).normal(size=(101, 8)).astype('float32')\n"
    "y = np.tanh(x[:, :1] - x[:, 1:2]).astype('float32')\n"
    "dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)",
    "BATCH = 32\n"
    "model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(8, activation='tanh'),\n"
    "                          keras.layers.Dense(1)])\n"
    "optimizer = keras.optimizers.Adam(0.01)",
    "def train_one_epoch(net, opt, data, epoch):\n"
    "    for step, (xb, yb) in enumerate(data):\n"
    "        with tf.GradientTape() as tape:\n"
    "            pred = net(xb, training=True)\n"
    "            reconstruction = tf.reduce_sum(tf.square(pred - yb)) / BATCH\n"
    "            penalty = tf.reduce_mean(tf.reduce_sum(tf.abs(pred), axis=-1))\n"
    "            loss = reconstruction + 0.1 * penalty\n"
    "        grads = tape.gradient(loss, net.trainable_variables)\n"
    "        grads, _ = tf.clip_by_global_norm(grads, 5.0)\n"
    "        opt.apply_gradients(zip(grads, net.trainable_variables))\n"
    "        if step % 2 == 0:\n"
    "            print(f'epoch {epoch} step {step}: reconstruction '\n"
    "                  f'{float(reconstruction):.6f} penalty {float(penalty):.6f}')",
    "for epoch in range(3):\n    train_one_epoch(model, optimizer, dataset, epoch)",
]

# Gap 3 and gap 10: a @tf.function step defined inside train() (Horovod's tensorflow2_mnist),
# main() under `sys.exit(main())`, a top-level argparse, a Keras loss object (a mean) and a
# Keras Mean metric fed the loss inside the step.
SCRIPT_NESTED = '''\
import argparse
import sys

import keras
import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()


def train(epochs):
    keras.utils.set_random_seed(2)
    x = np.random.default_rng(1).normal(size=(96, 6)).astype("float32")
    y = (x.sum(axis=1) > 0).astype("int64")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(24)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(12, activation="relu"),
                              keras.layers.Dense(2)])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = keras.optimizers.Adam(0.01)
    train_loss = keras.metrics.Mean()

    @tf.function
    def training_step(images, labels, first_batch):
        with tf.GradientTape() as tape:
            loss_value = loss_fn(labels, model(images, training=True))
        grads = tape.gradient(loss_value, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        train_loss(loss_value)
        return loss_value

    for epoch in range(epochs):
        for batch, (images, labels) in enumerate(dataset):
            loss_value = training_step(images, labels, batch == 0)
            if batch % 2 == 0:
                print("Step #%d\\tLoss: %.6f" % (batch, loss_value))
        print(f"epoch {epoch}: mean loss {float(train_loss.result()):.6f}")
        train_loss.reset_state()
    return model


def main():
    train(args.epochs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

# Gap 9 and gap 8: `it = iter(ds)` + `next(it)` per step (the DCGAN), Keras 3's
# `optimizer.apply(grads, vars)`, and a BatchNormalization layer (its batch statistics are the
# global batch's on the replicas too).
SCRIPT_NEXT_APPLY_BN = '''\
import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(3)
x = np.random.default_rng(2).normal(size=(128, 5)).astype("float32")
y = (x[:, :1] - 0.5 * x[:, 1:2]).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(8),
                          keras.layers.BatchNormalization(), keras.layers.Activation("relu"),
                          keras.layers.Dense(1)])
optimizer = keras.optimizers.SGD(0.05)


def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(xb, training=True) - yb))
    grads = tape.gradient(loss, model.trainable_weights)
    optimizer.apply(grads, model.trainable_weights)
    return loss


it = iter(dataset.repeat())
for step in range(12):
    xb, yb = next(it)
    loss = train_step(xb, yb)
    if step % 4 == 3:
        print(f"step {step}: loss {float(loss):.6f}")
print("moving mean", np.round(model.layers[1].moving_mean.numpy(), 5).tolist())
'''

# Batches sliced by hand from numpy arrays (TF-Examples), a plain step function, a loss that
# is a sum over the batch with no division (their cross_entropy), and the batch reused for
# display after the step.
NUMPY_SLICES_SUM = [
    IMPORTS,
    "keras.utils.set_random_seed(4)\n"
    "rng = np.random.default_rng(3)\n"
    "X = rng.normal(size=(120, 4)).astype('float32')\n"
    "Y = (X[:, 0] + X[:, 1] > 0).astype('int64')\n"
    "weights = {'w': tf.Variable(tf.zeros([4, 2])), 'b': tf.Variable(tf.zeros([2]))}\n"
    "optimizer = keras.optimizers.SGD(0.001)",
    "def net(v):\n    return tf.nn.softmax(tf.matmul(v, weights['w']) + weights['b'])\n\n\n"
    "def cross_entropy(y_pred, y_true):\n"
    "    y_true = tf.one_hot(y_true, depth=2)\n"
    "    y_pred = tf.clip_by_value(y_pred, 1e-9, 1.)\n"
    "    return tf.reduce_mean(-tf.reduce_sum(y_true * tf.math.log(y_pred)))\n\n\n"
    "def run_optimization(xb, yb):\n"
    "    with tf.GradientTape() as g:\n"
    "        loss = cross_entropy(net(xb), yb)\n"
    "    variables = list(weights.values())\n"
    "    gradients = g.gradient(loss, variables)\n"
    "    optimizer.apply_gradients(zip(gradients, variables))",
    "for epoch in range(3):\n"
    "    order = rng.permutation(120)\n"
    "    for start in range(0, 120, 40):\n"
    "        idx = order[start:start + 40]\n"
    "        run_optimization(X[idx], Y[idx])\n"
    "        loss = cross_entropy(net(X[idx]), Y[idx])\n"
    "        print(f'epoch {epoch} batch at {start}: loss {float(loss):.6f}')",
]


def _notebook(cells: list[str], path: Path) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                       "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(code) for code in cells]
    nbformat.write(notebook, str(path))
    return path


def _write(program: list[str] | str, folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(program, str):
        path = folder / f"{name}.py"
        path.write_text(program)
        return path
    return _notebook(program, folder / f"{name}.ipynb")


def _reference(path: Path) -> str:
    """What the program prints: in a kernel (notebooks), or with `python script.py`."""
    if path.suffix == ".py":
        done = subprocess.run([sys.executable, path.name], cwd=path.parent, text=True,
                              capture_output=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    return _printed(notebook)


def _printed(notebook: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code"
                   for o in c.outputs if o.get("name") == "stdout")


def _start(path: Path, out: Path, replicas: int) -> subprocess.Popen:
    env = dict(os.environ, NB2CWL_CPU_REPLICAS=str(replicas))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.Popen([sys.executable, "-m", "nb2cwl", "run", str(path), "-o", str(out),
                             "--quiet", "--no-cache"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen, out: Path) -> tuple[str, dict]:
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stdout[-3000:] + stderr[-3000:]
    run = sorted((out / "runs").iterdir(), key=lambda p: int(p.name))[-1]
    executed = nbformat.read(next(run.glob("*.executed.ipynb")), as_version=4)
    errors = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs
              if o.get("output_type") == "error"]
    assert not errors, errors
    (training,) = run.glob("training-*")
    return _printed(executed), json.loads((training / "metrics.json").read_text())


NUMBER = re.compile(r"-?\d+\.\d+(?:e-?\d+)?")


def _numbers(text: str) -> list[float]:
    return [float(n) for n in NUMBER.findall(text)]


def _same_up_to_numbers(text: str, reference: str) -> None:
    """The same lines, once each, with numbers within the tolerance."""
    import numpy as np

    assert NUMBER.sub("#", text) == NUMBER.sub("#", reference), (text, reference)
    assert np.allclose(_numbers(text), _numbers(reference), rtol=RTOL, atol=ATOL), (
        text, reference)


PROGRAMS = {
    "inline-tape-sum-loss": INLINE_SUM,
    "epoch-function-sum-plus-mean": EPOCH_FUNCTION_MIXED,
    "script-nested-step-sys-exit": SCRIPT_NESTED,
    "script-next-apply-batchnorm": SCRIPT_NEXT_APPLY_BN,
    "numpy-slices-sum-loss": NUMPY_SLICES_SUM,
}


@needs_tf
@pytest.mark.streamflow
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_study_shape_is_the_notebooks_algorithm_on_replicas(name: str,
                                                              tmp_path: Path) -> None:
    path = _write(PROGRAMS[name], tmp_path / "program", "train")
    (step,) = [s for s in compile_notebook(str(path)).steps if s.training is not None]
    assert step.training.distributed, step.reasons
    one, two = _start(path, tmp_path / "one", 1), _start(path, tmp_path / "two", 2)
    reference = _reference(path)
    printed_one, metrics_one = _finish(one, tmp_path / "one")
    printed_two, metrics_two = _finish(two, tmp_path / "two")
    assert reference.strip() and _numbers(reference)
    assert printed_one == reference  # one device: the same numbers
    assert metrics_one["replicas"] == 1
    assert metrics_two["strategy"] == "MirroredStrategy" and metrics_two["replicas"] == 2
    _same_up_to_numbers(printed_two, reference)


def test_the_shapes_compile_to_the_rewrites_they_need(tmp_path: Path) -> None:
    step, _ = _compiled_training(INLINE_SUM, tmp_path)
    code = _rewritten(step)
    assert "all_reduce_gradients(tape.gradient(loss, model.trainable_variables), 'sum')" in code
    assert "__nb2cwl_training__.once(accuracy.update_state" in code
    assert "loss, = __nb2cwl_training__.run(__nb2cwl_step_3_3, " in code
    step, _ = _compiled_training(EPOCH_FUNCTION_MIXED, tmp_path)
    code = _rewritten(step)
    assert step.training.within == "train_one_epoch"
    assert "reconstruction + __nb2cwl_training__.share(0.1 * penalty)" in code
    assert "'sum')" in code


# Gap 10: a script sees `python script.py`'s argv and ends normally at sys.exit(0), wherever
# it is; a notebook sees the kernel's argv, and sys.exit there is an error, as in Jupyter.
SCRIPT_EXITS = """\
import argparse
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--size", type=int, default=3)
args = parser.parse_args()
print("argv", sys.argv, "size", args.size)

total = sum(range(args.size))
print("total", total)

if total > 0:
    sys.exit(0)

print("never printed")
"""


@pytest.mark.streamflow
def test_a_script_runs_as_python_runs_it_and_a_notebook_as_the_kernel(tmp_path: Path) -> None:
    script = _write(SCRIPT_EXITS, tmp_path / "script", "exits")
    run = _start(script, tmp_path / "script-out", 1)
    reference = _reference(script)
    assert reference == "argv ['exits.py'] size 3\ntotal 3\n"
    stdout, stderr = run.communicate(timeout=600)
    assert run.returncode == 0, stdout[-2000:] + stderr[-2000:]
    result = sorted((tmp_path / "script-out" / "runs").iterdir())[-1]
    executed = nbformat.read(next(result.glob("*.executed.ipynb")), as_version=4)
    assert _printed(executed) == reference
    assert not [o for c in executed.cells if c.cell_type == "code" for o in c.outputs
                if o.get("output_type") == "error" or o.get("name") == "stderr"]
    notebook = _notebook(["import sys\nprint(sys.argv[1:2])", "sys.exit(0)", "print('after')"],
                         tmp_path / "exits.ipynb")
    run = _start(notebook, tmp_path / "notebook-out", 1)
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    kernel = nbformat.read(notebook, as_version=4)
    with pytest.raises(CellExecutionError, match="SystemExit"):
        NotebookClient(kernel, timeout=120, kernel_name="python3").execute()
    stdout, stderr = run.communicate(timeout=600)
    assert run.returncode != 0 and "SystemExit: 0" in stdout + stderr
    result = sorted((tmp_path / "notebook-out" / "runs").iterdir())[-1]
    executed = nbformat.read(next(result.glob("*.executed.ipynb")), as_version=4)
    assert _printed(executed) == _printed(kernel) == "['-f']\n"
