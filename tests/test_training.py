"""Training steps: detection on the corpus, the rewrite of custom loops, and real runs.

The runs use TensorFlow on CPU: MirroredStrategy over 2 logical CPU devices
(NB2CWL_CPU_REPLICAS=2), and MultiWorkerMirroredStrategy over 2 worker processes joined by
TF_CONFIG on localhost (NB2CWL_LOCAL_WORKERS=2).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from conftest import NOTEBOOKS
from training.cases import CASES

from nb2cwl.analysis.program import analyse_notebook
from nb2cwl.api import compile_notebook
from nb2cwl.frontend.reader import read_notebook

CORPUS = Path(__file__).parent / "training"
HAS_TF = importlib.util.find_spec("tensorflow") is not None
needs_tf = pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")


@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_detector_finds_what_the_corpus_declares(case) -> None:
    analysis = analyse_notebook(read_notebook(str(CORPUS / case.file)))
    found = {c.cell.index: c.training for c in analysis.cells if c.training is not None}
    if case.kind is None:
        assert found == {}, f"{case.file}: {case.note}"
        return
    assert list(found) == [case.training_cell]
    site = found[case.training_cell]
    assert site.kind == case.kind
    assert set(site.models) == set(case.models)
    assert site.step_function == case.step_function


@pytest.mark.parametrize("case", [c for c in CASES if c.kind], ids=lambda c: c.file)
def test_compiled_training_steps(case) -> None:
    workflow = compile_notebook(str(CORPUS / case.file))
    trained = [s for s in workflow.steps if s.training is not None]
    if case.kind == "tf1_session":
        assert trained == []
        assert any(f.cell == case.training_cell and "TF1" in f.reason
                   for f in workflow.fallbacks)
        return
    (step,) = trained
    assert step.training.cell == case.training_cell
    code = next(c.code for c in step.cells if c.index == case.training_cell)
    source = next(c.source for c in step.cells if c.index == case.training_cell)
    assert len(code.splitlines()) == len(source.splitlines())  # tracebacks keep their lines
    if case.kind == "keras_fit":
        assert step.training.distributed and code.rstrip() == source.rstrip()
        return
    assert step.training.distributed, step.reasons
    assert "__nb2cwl_training__.split(" in code
    rewritten = _rewritten(step)
    assert "__nb2cwl_training__.all_reduce_gradients(" in rewritten
    if case.step_function is None:  # the tape in the loop body: lifted into a function
        assert "__nb2cwl_training__.run(__nb2cwl_step_" in code
    else:
        assert f"__nb2cwl_training__.run({case.step_function}" in code


def _rewritten(step) -> str:
    """The step's code as it runs: the rewritten definitions, then its cells."""
    return "".join(code for _, code in step.training.preludes) + "".join(
        c.code for c in step.cells)


def test_tf_data_pipelines_stay_with_the_training_that_uses_them() -> None:
    """A tf.data pipeline cannot be saved, and TensorFlow objects cannot cross a step boundary
    exactly: the cells that build the pipeline and the model and train it share a step."""
    workflow = compile_notebook(str(CORPUS / "keras_fit_tfdata.ipynb"))
    (step,) = [s for s in workflow.steps if s.training is not None]
    assert any("TensorFlow and Keras objects" in r for r in step.reasons), step.reasons
    shipped = {i.var for i in step.inputs}
    assert not {"train_ds", "ds", "dataset"} & shipped
    assert not [d for d in workflow.diagnostics if d.code == "unserializable"]


def test_non_keras_fit_and_sklearn_like_objects_are_not_training() -> None:
    analysis = analyse_notebook(read_notebook(str(CORPUS / "not_training_numpy.ipynb")))
    assert all(c.training is None for c in analysis.cells)


def test_scripts_are_read_with_and_without_cell_markers(tmp_path: Path) -> None:
    marked = tmp_path / "marked.py"
    marked.write_text("# %%\nimport math\n\n# %%\nx = math.pi\ny = 2\n\n# %%\nprint(x * y)\n")
    unmarked = tmp_path / "plain.py"
    unmarked.write_text("import math\n\nx = math.pi\ny = 2\n\n\nprint(x * y)\n")
    assert [c.code.strip() for c in read_notebook(str(marked)).code_cells] == [
        "import math", "x = math.pi\ny = 2", "print(x * y)"]
    assert [c.code.strip() for c in read_notebook(str(unmarked)).code_cells] == [
        "import math", "x = math.pi\ny = 2", "print(x * y)"]


# --- real runs -----------------------------------------------------------------------------


def _nb2cwl_run(notebook: Path, out: Path, env: dict[str, str]) -> Path:
    """`nb2cwl run` in a subprocess with `env` added (the local steps inherit it)."""
    full = dict(os.environ, **env)
    full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
    done = subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o", str(out),
                           "--quiet", "--no-cache"], env=full, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return sorted((out / "runs").iterdir(), key=lambda p: int(p.name))[-1]


def _weights(model_file: Path) -> list:
    import numpy as np

    with zipfile.ZipFile(model_file) as archive:
        data = archive.read("model.weights.h5")
    import io

    import h5py

    arrays = []
    with h5py.File(io.BytesIO(data), "r") as handle:
        handle.visititems(lambda name, item: arrays.append((name, np.array(item)))
                          if isinstance(item, h5py.Dataset) and name.startswith("layers")
                          else None)
    return sorted(arrays, key=lambda pair: pair[0])


@needs_tf
@pytest.mark.streamflow
def test_case_study_runs_mirrored_over_two_cpu_devices(tmp_path: Path) -> None:
    """The Fashion-MNIST notebook end to end through StreamFlow on synthetic IDX files."""
    sys.path.insert(0, str(NOTEBOOKS))
    try:
        from make_fashion_mnist import write_fashion_mnist
    finally:
        sys.path.remove(str(NOTEBOOKS))
    work = tmp_path / "case"
    work.mkdir()
    shutil.copyfile(NOTEBOOKS / "fashion_mnist.ipynb", work / "fashion_mnist.ipynb")
    # even batch splits: Keras 3 fails to validate an odd-sized batch on 2 replicas
    # (docs/training.md)
    write_fashion_mnist(work / "data" / "fashion-mnist", train=640, test=128, seed=0)
    results = _nb2cwl_run(work / "fashion_mnist.ipynb", tmp_path / "out",
                          {"NB2CWL_CPU_REPLICAS": "2"})
    (run,) = results.glob("training-*")
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["strategy"] == "MirroredStrategy" and metrics["replicas"] == 2
    assert metrics["fit"]["epochs"] == 20 and metrics["fit"]["samples"] == 576
    history = json.loads((run / "history.json").read_text())
    assert len(history["loss"]) == 20 and history["loss"][-1] < history["loss"][0]
    assert (run / "model.keras").is_file()
    assert "Epoch 20/20" in (run / "training.log").read_text()
    executed = nbformat.read(next(results.glob("*.executed.ipynb")), as_version=4)
    printed = "".join(o.get("text", "") for c in executed.cells if c.cell_type == "code"
                      for o in c.outputs)
    assert "Epoch 1/20" in printed and "Epoch 20/20" in printed
    assert (results / "written-files" / "fashion_mnist.keras").is_file()


DETERMINISTIC_LOOP = [
    "import numpy as np\nimport tensorflow as tf\nimport keras",
    "keras.utils.set_random_seed(7)\n"
    "x = np.random.default_rng(0).normal(size=(256, 8)).astype('float32')\n"
    "y = (x @ np.arange(8, dtype='float32')[:, None]).astype('float32')\n"
    "dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)",
    "model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation='tanh'),\n"
    "                          keras.layers.Dense(1)])\n"
    "optimizer = keras.optimizers.SGD(0.01)",
    "def train_step(xb, yb):\n"
    "    with tf.GradientTape() as tape:\n"
    "        loss = tf.reduce_mean((model(xb, training=True) - yb) ** 2)\n"
    "    grads = tape.gradient(loss, model.trainable_variables)\n"
    "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
    "    return loss",
    "for epoch in range(3):\n"
    "    for xb, yb in dataset:\n"
    "        loss = train_step(xb, yb)\n"
    "    print(f'epoch {epoch}: loss {float(loss):.4f}')",
]


@needs_tf
@pytest.mark.streamflow
def test_two_workers_match_two_devices_in_one_process(tmp_path: Path) -> None:
    """MultiWorkerMirroredStrategy over 2 processes gives the final weights of
    MirroredStrategy over 2 logical devices in one process, within 1e-5."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(code) for code in DETERMINISTIC_LOOP]
    path = tmp_path / "loop.ipynb"
    nbformat.write(notebook, str(path))
    import numpy as np

    runs = {}
    for label, env in (("devices", {"NB2CWL_CPU_REPLICAS": "2"}),
                       ("workers", {"NB2CWL_LOCAL_WORKERS": "2"})):
        results = _nb2cwl_run(path, tmp_path / label, env)
        (run,) = results.glob("training-*")
        runs[label] = (json.loads((run / "metrics.json").read_text()),
                       _weights(run / "model.keras"))
    assert runs["devices"][0]["strategy"] == "MirroredStrategy"
    assert runs["workers"][0]["workers"] == 2 and runs["workers"][0]["replicas"] == 2
    devices, workers = runs["devices"][1], runs["workers"][1]
    assert [n for n, _ in devices] == [n for n, _ in workers] and devices
    for (name, a), (_, b) in zip(devices, workers, strict=True):
        assert np.allclose(a, b, atol=1e-5), name


def _run_on_two_local_workers(path: Path, cells: list[str], out: Path
                              ) -> subprocess.CompletedProcess[str]:
    """Write `cells` as the notebook `path` (if not there yet) and `nb2cwl run` it with
    NB2CWL_LOCAL_WORKERS=2, in a subprocess, into `out`."""
    if not path.exists():
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(code) for code in cells]
        nbformat.write(notebook, str(path))
    env = dict(os.environ, NB2CWL_LOCAL_WORKERS="2", NB2CWL_RENDEZVOUS_TIMEOUT="60")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(path), "-o", str(out)],
                          env=env, capture_output=True, text=True, timeout=300)


@needs_tf
@pytest.mark.streamflow
def test_two_workers_share_the_cache_entry_of_their_step(tmp_path: Path) -> None:
    """The process that starts the workers holds the step's cache entry: the workers do not
    wait for it (they did, for each other, forever), and the next run reuses the step."""
    path = tmp_path / "loop.ipynb"
    runs = [_run_on_two_local_workers(path, DETERMINISTIC_LOOP, tmp_path / "wf")
            for _ in range(2)]
    for done in runs:
        assert done.returncode == 0, done.stderr[-3000:]
    assert "reused" not in runs[0].stdout and "reused" in runs[1].stdout, runs[1].stdout
    printed = [json.loads(next((tmp_path / "wf" / "runs" / n).glob("*.executed.ipynb"))
                          .read_text())["cells"][-1]["outputs"] for n in ("1", "2")]
    assert printed[0] == printed[1] and "epoch 2" in printed[0][0]["text"]


@needs_tf
def test_a_worker_whose_peer_never_starts_gives_up(tmp_path: Path) -> None:
    """TensorFlow would wait an hour for a missing peer; the rendezvous timeout ends it."""
    root = str(Path(__file__).parent.parent)
    code = (f"import sys\nsys.path.insert(0, {root!r})\n"
            "from nb2cwl.runtime.training import Training\n"
            "Training({'kind': 'custom_loop', 'models': [], 'distributed': True})\n")
    # ports of its own (another run of the suite may be here at the same time): the peer's
    # is free and nobody listens on it
    ports = []
    for _ in range(2):
        with socket.socket() as probe:
            probe.bind(("localhost", 0))
            ports.append(probe.getsockname()[1])
    config = {"cluster": {"worker": [f"localhost:{port}" for port in ports]},
              "task": {"type": "worker", "index": 1}}
    env = dict(os.environ, TF_CONFIG=json.dumps(config), NB2CWL_RENDEZVOUS_TIMEOUT="5")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == -signal.SIGALRM  # killed by the kernel: TensorFlow holds the GIL
    assert "waiting up to 5 s for the other training workers" in done.stderr


# The same loop, its loss from a Keras loss object and its step function in the loop's own
# cell: the two shapes whose distributed form was not the notebook's algorithm (Keras 3
# divided the loss by the replica count on top of the rewrite; the rewrite of a function
# defined in the loop's cell was lost).
KERAS_LOSS_LOOP = [
    DETERMINISTIC_LOOP[0],
    DETERMINISTIC_LOOP[1],
    DETERMINISTIC_LOOP[2] + "\nloss_fn = keras.losses.MeanSquaredError()",
    "def train_step(xb, yb):\n"
    "    with tf.GradientTape() as tape:\n"
    "        loss = loss_fn(yb, model(xb, training=True))\n"
    "    grads = tape.gradient(loss, model.trainable_variables)\n"
    "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
    "    return loss\n\n"
    + DETERMINISTIC_LOOP[4],
]


def _losses(results: Path) -> list[float]:
    executed = nbformat.read(next(results.glob("*.executed.ipynb")), as_version=4)
    text = "".join(o.get("text", "") for o in executed.cells[-1].outputs)
    assert "INFO:tensorflow" not in text and "MirroredStrategy" not in text, text
    return [float(line.split()[-1]) for line in text.splitlines() if line.startswith("epoch")]


# The loss summed over the batch and divided by a constant (TF-2.x-Tutorials' play-with-MNIST):
# its gradients were divided by the replica count as if it were a mean, so 2 replicas trained
# with half the gradient and printed about half the loss.
SUM_LOSS_LOOP = [
    *DETERMINISTIC_LOOP[:3],
    DETERMINISTIC_LOOP[3].replace("tf.reduce_mean((model(xb, training=True) - yb) ** 2)",
                                  "tf.reduce_sum((model(xb, training=True) - yb) ** 2) / 32"),
    DETERMINISTIC_LOOP[4],
]


@needs_tf
@pytest.mark.streamflow
@pytest.mark.parametrize("cells", [DETERMINISTIC_LOOP, KERAS_LOSS_LOOP, SUM_LOSS_LOOP],
                         ids=["reduce_mean-loss", "keras-loss-same-cell", "sum-loss"])
def test_a_distributed_loop_is_the_notebooks_algorithm(cells: list[str], tmp_path: Path) -> None:
    """On one device the workflow prints the kernel's losses exactly; on 2 CPU replicas the
    final weights and the printed losses stay within float32 reordering of the same sums."""
    import numpy as np
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                       "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(code) for code in cells]
    path = tmp_path / "loop.ipynb"
    nbformat.write(notebook, str(path))
    NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    kernel = [float(line.split()[-1]) for line in
              "".join(o.get("text", "") for o in notebook.cells[-1].outputs).splitlines()]
    one = _nb2cwl_run(path, tmp_path / "one", {})
    two = _nb2cwl_run(path, tmp_path / "two", {"NB2CWL_CPU_REPLICAS": "2"})
    assert _losses(one) == kernel  # the same algorithm on one device: the same numbers
    assert np.allclose(_losses(two), kernel, rtol=1e-3)  # printed to 4 decimals
    (run_one,) = one.glob("training-*")
    (run_two,) = two.glob("training-*")
    assert json.loads((run_two / "metrics.json").read_text())["replicas"] == 2
    for (name, a), (_, b) in zip(_weights(run_one / "model.keras"),
                                 _weights(run_two / "model.keras"), strict=True):
        assert np.allclose(a, b, rtol=1e-4, atol=1e-5), name


# Training where real scripts write it: in main() under `if __name__ == '__main__'`, in a
# train() helper calling a @tf.function step, and in a trainer class's methods.
MAIN_FIT = [
    "import numpy as np\nimport tensorflow as tf\nimport keras",
    "def build():\n    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])",
    "def main():\n    keras.utils.set_random_seed(3)\n"
    "    x = np.linspace(0, 1, 256, dtype='float32').reshape(64, 4)\n"
    "    y = x.sum(axis=1, keepdims=True)\n    model = build()\n"
    "    model.compile(keras.optimizers.SGD(0.05), 'mse')\n"
    "    history = model.fit(x, y, epochs=3, batch_size=16, verbose=0)\n"
    "    print('losses', [round(v, 4) for v in history.history['loss']])",
    "if __name__ == '__main__':\n    main()",
]
HELPER_LOOP = [
    DETERMINISTIC_LOOP[0], DETERMINISTIC_LOOP[1], DETERMINISTIC_LOOP[2],
    "@tf.function\ndef train_step(xb, yb):\n"
    "    with tf.GradientTape() as tape:\n"
    "        loss = tf.reduce_mean((model(xb, training=True) - yb) ** 2)\n"
    "    grads = tape.gradient(loss, model.trainable_variables)\n"
    "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
    "    return loss",
    "def train(data, epochs):\n    for epoch in range(epochs):\n        for xb, yb in data:\n"
    "            loss = train_step(xb, yb)\n"
    "        print(f'epoch {epoch}: loss {float(loss):.4f}')",
    "train(dataset, 3)",
]
TRAINER_CLASS = [
    DETERMINISTIC_LOOP[0], DETERMINISTIC_LOOP[1],
    "class Trainer:\n    def __init__(self):\n"
    "        self.model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])\n"
    "        self.optimizer = keras.optimizers.SGD(0.01)\n\n"
    "    @tf.function\n    def step(self, xb, yb):\n        with tf.GradientTape() as tape:\n"
    "            loss = tf.reduce_mean((self.model(xb) - yb) ** 2)\n"
    "        grads = tape.gradient(loss, self.model.trainable_variables)\n"
    "        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))\n"
    "        return loss\n\n"
    "    def fit(self, data, epochs):\n        for epoch in range(epochs):\n"
    "            for xb, yb in data:\n                loss = self.step(xb, yb)\n"
    "            print(f'epoch {epoch}: loss {float(loss):.4f}')",
    "Trainer().fit(dataset, 2)",
]


def _compiled_training(cells: list[str], tmp_path: Path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(code) for code in cells]
    path = tmp_path / "shape.ipynb"
    nbformat.write(notebook, str(path))
    steps = [s for s in compile_notebook(str(path)).steps if s.training is not None]
    assert len(steps) == 1
    return steps[0], path


def test_training_inside_functions_is_found(tmp_path: Path) -> None:
    step, _ = _compiled_training(MAIN_FIT, tmp_path)
    assert step.training.kind == "keras_fit" and step.training.within == "main"
    assert any("In [4], line 2: Keras fit (in main() at In [3], line 7, called here) runs "
               "under a tf.distribute strategy" in r for r in step.reasons), step.reasons
    step, _ = _compiled_training(HELPER_LOOP, tmp_path)
    assert step.training.kind == "custom_loop" and step.training.within == "train"
    assert step.training.distributed and step.training.step_function == "train_step"
    assert "run(train_step" in _rewritten(step)
    step, _ = _compiled_training(TRAINER_CLASS, tmp_path)
    assert step.training.kind == "custom_loop" and step.training.within == "fit"
    assert not step.training.distributed  # a method's loop: one device, and why
    assert any("kept on one device" in r and "self.step" in r for r in step.reasons)


@needs_tf
@pytest.mark.streamflow
@pytest.mark.parametrize("cells", [MAIN_FIT, HELPER_LOOP], ids=["main-fit", "helper-loop"])
def test_training_inside_functions_prints_what_the_kernel_prints(cells: list[str],
                                                                 tmp_path: Path) -> None:
    import numpy as np
    from nbclient import NotebookClient

    _, path = _compiled_training(cells, tmp_path)
    notebook = nbformat.read(path, as_version=4)
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                       "display_name": "Python 3"}
    NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    kernel = "".join(o.get("text", "") for o in notebook.cells[-1].outputs
                     if o.get("name") == "stdout")
    one = _nb2cwl_run(path, tmp_path / "one", {})
    executed = nbformat.read(next(one.glob("*.executed.ipynb")), as_version=4)
    assert "".join(o.get("text", "") for o in executed.cells[-1].outputs
                   if o.get("name") == "stdout") == kernel
    two = _nb2cwl_run(path, tmp_path / "two", {"NB2CWL_CPU_REPLICAS": "2"})
    executed = nbformat.read(next(two.glob("*.executed.ipynb")), as_version=4)
    printed = "".join(o.get("text", "") for o in executed.cells[-1].outputs
                      if o.get("name") == "stdout")
    numbers = [float(t) for t in printed.replace("[", " ").replace("]", " ").replace(",", " ")
               .split() if t.replace(".", "").isdigit()]
    expected = [float(t) for t in kernel.replace("[", " ").replace("]", " ").replace(",", " ")
                .split() if t.replace(".", "").isdigit()]
    assert numbers and np.allclose(numbers, expected, rtol=1e-3), (printed, kernel)
    (run,) = two.glob("training-*")
    assert json.loads((run / "metrics.json").read_text())["replicas"] == 2


# A per-epoch function holding the batch loop (ColorBot's train_one_epoch): the function is
# not a per-batch step; running it through strategy.run gave every replica the whole epoch.
EPOCH_FUNCTION = [
    DETERMINISTIC_LOOP[0], DETERMINISTIC_LOOP[1], DETERMINISTIC_LOOP[2],
    "def train_one_epoch(net, opt, data, epoch):\n"
    "    for step, (xb, yb) in enumerate(data):\n"
    "        with tf.GradientTape() as tape:\n"
    "            loss = tf.reduce_mean((net(xb, training=True) - yb) ** 2)\n"
    "        grads = tape.gradient(loss, net.trainable_variables)\n"
    "        opt.apply_gradients(zip(grads, net.trainable_variables))\n"
    "        if step % 4 == 0:\n"
    "            print(f'epoch {epoch} step {step}: loss {float(loss):.4f}')",
    "for epoch in range(3):\n    train_one_epoch(model, optimizer, dataset, epoch)",
]


def test_a_per_epoch_function_is_not_a_per_batch_step(tmp_path: Path) -> None:
    step, _ = _compiled_training(EPOCH_FUNCTION, tmp_path)
    assert step.training.within == "train_one_epoch"
    assert step.training.step_function is None
    assert "run(train_one_epoch" not in _rewritten(step)


# Training the analysis used to miss silently: each is found and runs under the strategy, or
# runs as written on one device with the reason (a fallback in explain).
FIT_SHAPES = {
    "applications": ("model = tf.keras.applications.MobileNetV2(weights=None, "
                     "input_shape=(32, 32, 3), classes=4)\n"
                     "model.compile(optimizer='adam', loss='sparse_categorical_crossentropy')\n"
                     "model.fit(np.zeros((8, 32, 32, 3)), np.zeros(8), epochs=1)"),
    "sibling-factory": ("from netlib import build_model\n\nmodel = build_model()\n"
                        "model.fit(np.zeros((8, 4)), np.zeros(8), epochs=1)"),
    "self-model": ("class Trainer:\n    def __init__(self):\n"
                   "        self.model = keras.Sequential([keras.Input((4,)), "
                   "keras.layers.Dense(1)])\n"
                   "        self.model.compile(optimizer='sgd', loss='mse')\n\n"
                   "    def train(self, x, y):\n        return self.model.fit(x, y, epochs=1)\n\n\n"
                   "Trainer().train(np.zeros((8, 4)), np.zeros(8))"),
}
NETLIB = ("import keras\n\n\ndef build_model():\n"
          "    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])\n"
          "    model.compile(optimizer='sgd', loss='mse')\n    return model\n")


@pytest.mark.parametrize("shape", list(FIT_SHAPES))
def test_a_keras_fit_the_analysis_used_to_miss_is_distributed(shape: str,
                                                              tmp_path: Path) -> None:
    (tmp_path / "netlib.py").write_text(NETLIB)
    step, _ = _compiled_training([DETERMINISTIC_LOOP[0], FIT_SHAPES[shape]], tmp_path)
    assert step.training.kind == "keras_fit" and step.training.distributed
    assert any("runs under a tf.distribute strategy" in r for r in step.reasons)


@pytest.mark.parametrize(("code", "reason"), [
    ("model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])\n"
     "model.compile(optimizer='sgd', loss='mse')\n"
     "for i in range(2):\n    model.train_on_batch(np.zeros((8, 4)), np.zeros(8))",
     "model.train_on_batch(...) trains on the whole batch"),
    ("from elsewhere import make_model\n\nmodel = make_model()\n"
     "model.fit(np.zeros((8, 4)), np.zeros(8))",
     "model.fit(...) may train a Keras model, but nb2cwl cannot tell what model is"),
], ids=["train_on_batch", "undetermined-fit"])
def test_training_kept_on_one_device_says_why(code: str, reason: str, tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(c) for c in (DETERMINISTIC_LOOP[0], code)]
    path = tmp_path / "shape.ipynb"
    nbformat.write(notebook, str(path))
    workflow = compile_notebook(str(path))
    assert not [s for s in workflow.steps if s.training is not None]
    assert [f for f in workflow.fallbacks if f.cell == 1 and reason in f.reason]


# explain for a script: its own file's lines, the loop inside main() as well as the call, one
# reason per step that agrees with the others, and a structured training field in --json.
SCRIPT_MAIN_LOOP = '''\
import keras
import numpy as np
import tensorflow as tf


def main():
    keras.utils.set_random_seed(0)
    x = np.zeros((64, 4), "float32")
    dataset = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(16)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    optimizer = keras.optimizers.SGD(0.1)
    for xb, yb in dataset:
        with tf.GradientTape() as tape:
            loss = tf.sqrt(tf.reduce_mean((model(xb) - yb) ** 2))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))


if __name__ == "__main__":
    main()
'''


def test_explain_gives_a_scripts_own_lines_and_one_story_per_step(tmp_path: Path) -> None:
    from nb2cwl.backends.explain import explain_data, explain_text

    path = tmp_path / "train.py"
    path.write_text(SCRIPT_MAIN_LOOP)
    workflow = compile_notebook(str(path))
    (step,) = [s for s in workflow.steps if s.training is not None]
    text = explain_text(workflow)
    assert ("train.py, line 20: custom training loop (in main() at train.py, line 12, called "
            "here) kept on one device: train.py, line 15: cannot tell how the loss `loss` "
            "depends on the batch") in text, text
    assert "run under its own strategy" not in text  # the partition's reason agrees
    data = next(s["training"] for s in explain_data(workflow)["steps"]
                if s["name"] == step.name)
    assert data["kind"] == "custom_loop" and data["distributed"] is False
    assert data["file_line"] == 20 and data["inside"]["file_line"] == 12
    assert data["within"] == "main" and "cannot tell how the loss" in data["reason"]
    assert all(s["training"] is None for s in explain_data(workflow)["steps"]
               if s["name"] != step.name)


def _step_with(body: str) -> list[str]:
    """DETERMINISTIC_LOOP with train_step's body replaced."""
    return [*DETERMINISTIC_LOOP[:3], "def train_step(xb, yb):\n" + body, DETERMINISTIC_LOOP[4]]


TAPE = "    with tf.GradientTape() as tape:\n        pred = model(xb, training=True)\n"
UPDATE = ("    grads = tape.gradient(loss, model.trainable_variables)\n"
          "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
          "    return loss")


@pytest.mark.parametrize(("cells", "reason"), [
    (_step_with(TAPE + "        loss = tf.sqrt(tf.reduce_mean((pred - yb) ** 2))\n" + UPDATE),
     "In [4], line 5: cannot tell how the loss `loss` depends on the batch"),
    (_step_with(TAPE + "        loss = tf.reduce_mean((pred - yb) ** 2)\n"
                "    if loss > 1.0:\n        print('large')\n" + UPDATE),
     "In [4], line 5: the condition `loss > 1.0` depends on the batch"),
    (_step_with("    noise = tf.random.normal([32, 8])\n" + TAPE.replace("xb,", "xb + noise,")
                + "        loss = tf.reduce_mean((pred - yb) ** 2)\n" + UPDATE),
     "draws random numbers of a fixed shape on every replica"),
    (_step_with(TAPE + "        centred = pred - tf.reduce_mean(pred, axis=0)\n"
                "        loss = tf.reduce_mean((centred - yb) ** 2)\n" + UPDATE),
     "cannot tell how the loss"),
    ([*DETERMINISTIC_LOOP[:3],
      "for epoch in range(2):\n    for xb, yb in dataset:\n"
      "        with tf.GradientTape() as tape:\n"
      "            loss = tf.reduce_mean((model(xb) - yb) ** 2)\n"
      "        if loss < 0.01:\n            break\n"
      "        grads = tape.gradient(loss, model.trainable_variables)\n"
      "        optimizer.apply_gradients(zip(grads, model.trainable_variables))"],
     "`break` between the GradientTape and the optimizer update leaves the loop"),
], ids=["nonlinear-loss", "condition-on-loss", "fixed-shape-noise", "batch-centring",
        "early-exit"])
def test_a_loop_the_analysis_cannot_prove_stays_on_one_device(cells: list[str], reason: str,
                                                              tmp_path: Path) -> None:
    step, _ = _compiled_training(cells, tmp_path)
    assert not step.training.distributed
    assert reason in step.training.reason, step.training.reason
    assert "__nb2cwl_training__" not in _rewritten(step)


KINDS_PRELUDE = ("import tensorflow as tf\nimport keras\n"
                 "model = keras.Sequential([keras.layers.Dense(1)])\n"
                 "mean_loss = keras.losses.MeanSquaredError()\n"
                 "sum_loss = keras.losses.MeanSquaredError(reduction='sum')\n")


@pytest.mark.parametrize(("expression", "kind"), [
    ("tf.reduce_mean(tf.square(model(x) - y))", "M"),
    ("tf.reduce_sum(tf.square(model(x) - y)) / 32", "S"),
    ("tf.reduce_mean(-tf.reduce_sum(y * tf.math.log(model(x))))", "S"),  # TF-Examples
    ("mean_loss(y, model(x))", "M"),
    ("sum_loss(y, model(x))", "S"),
    ("tf.reduce_mean(keras.losses.mean_squared_error(y, model(x)))", "M"),
    ("tf.reduce_sum(tf.square(x)) / tf.cast(tf.shape(x)[0], tf.float32)", "M"),
    ("tf.reduce_mean(tf.reduce_sum(tf.square(x), axis=-1))", "M"),
    ("tf.nn.compute_average_loss(tf.square(x), global_batch_size=32)", "S"),
    ("tf.reduce_max(x, axis=-1)", "E"),
    ("tf.sqrt(tf.reduce_mean(tf.square(x)))", "U"),
    ("tf.reduce_mean(x, axis=0)", "M"),
    ("x - tf.reduce_mean(x, axis=0)", "U"),
    ("tf.reduce_max(x)", "U"),
    ("tf.transpose(x)", "U"),
    ("tf.reduce_mean(x) * tf.reduce_mean(y)", "U"),
])
def test_each_value_of_the_per_batch_code_has_a_kind(expression: str, kind: str) -> None:
    """E per example, S a sum over the batch, M a mean over it, U unknown (batch_kinds)."""
    import ast

    from nb2cwl.passes.batch_kinds.program import Program
    from nb2cwl.passes.batch_kinds.replica_code import ReplicaCode
    from nb2cwl.passes.batch_kinds.scope import Scope
    from nb2cwl.passes.batch_kinds.unit import Unit

    unit = Unit("cell:0", 0, KINDS_PRELUDE + f"value = {expression}\n")
    analysis = ReplicaCode(Program([unit]), set(), recording=False)
    scope = Scope({"x": "E", "y": "E"}, None, unit)
    statement = unit.tree.body[-1]
    assert isinstance(statement, ast.Assign)
    assert analysis.expr(statement.value, scope) == kind


@needs_tf
@pytest.mark.streamflow
def test_a_keras_error_on_several_workers_names_the_notebooks_line(tmp_path: Path) -> None:
    """A fit that fails inside Keras (tf-keras, as several workers need): the error line
    names the notebook's cell and the line of the fit, and shows that line, not Keras' own
    `raise`; Keras' message follows."""
    cells = ["import numpy as np\nimport keras",
             "x = np.zeros((64, 5), dtype='float32')\ny = np.zeros(64, dtype='int64')",
             "model = keras.Sequential([keras.Input((7,)), keras.layers.Dense(3)])\n"
             "model.compile(optimizer='sgd',\n"
             "              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))",
             "print('fitting')\nhistory = model.fit(x, y, batch_size=16, epochs=1, verbose=0)"]
    path = tmp_path / "shapes.ipynb"
    done = _run_on_two_local_workers(path, cells, tmp_path / "wf")
    notebook = nbformat.read(path, as_version=4)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("nb2cwl: error:"))
    assert lines[first].startswith("nb2cwl: error: step ") and lines[first].endswith(
        "failed at shapes.ipynb, cell 3 (In [4], id " + notebook.cells[3].id + "), line 2:"
    ), lines[first]
    assert lines[first + 1].strip() == "history = model.fit(x, y, batch_size=16, epochs=1, " \
                                       "verbose=0)"
    assert lines[first + 2].startswith("ValueError"), lines[first + 2]
