"""Generate the Fashion-MNIST case-study notebook, fashion_mnist.ipynb, next to this script.

    python notebooks/make_fashion_mnist_notebook.py

The notebook is the reference scenario: ordinary single-device TensorFlow/Keras, written
the way a data scientist would, with one step per cell (imports, parameters, seeding, the
IDX loader, loading, preprocessing, the model, training, evaluation, saving). It reads the
four standard Fashion-MNIST files from data/fashion-mnist/ beside the notebook; real files
or the synthetic ones written by make_fashion_mnist.py.

The output is deterministic: cell ids are fmnist-1, fmnist-2, ... in order, there are no
outputs and every execution_count is None, so running the script again on an unchanged
file rewrites a byte-identical notebook. It needs only nbformat.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
NOTEBOOK = HERE / "fashion_mnist.ipynb"

sys.path.insert(0, str(HERE))
import make_notebooks  # noqa: E402  (the core notebooks' builder, beside this script)

CELLS: list[tuple[str, str]] = [
    ("markdown", """
        # Fashion-MNIST: a small CNN in TensorFlow/Keras

        The reference case study: an ordinary, single-device Keras notebook that loads
        Fashion-MNIST from its standard IDX files, trains a small convolutional network,
        evaluates it on the test set and saves the model, the training history and the test
        metrics (`fashion_mnist.keras`, `history.json`, `metrics.json`).

        The data is read from `data/fashion-mnist/` (relative to this notebook), which must
        hold the four standard files:

        - `train-images-idx3-ubyte.gz`, `train-labels-idx1-ubyte.gz`
        - `t10k-images-idx3-ubyte.gz`, `t10k-labels-idx1-ubyte.gz`

        Either the real files from Zalando Research, or synthetic files in the same format
        made with (from the repository root)

        ```
        python notebooks/make_fashion_mnist.py notebooks/data/fashion-mnist \\
            --train 60000 --test 10000
        ```
    """),
    ("code", """
        import gzip
        import json
        from pathlib import Path

        import numpy as np
        import tensorflow as tf
        from tensorflow import keras

        print("TensorFlow", tf.__version__, "Keras", keras.__version__)
    """),
    ("code", """
        DATA_DIR = Path("data/fashion-mnist")
        EPOCHS = 20
        BATCH_SIZE = 128
        SEED = 42
    """),
    ("code", """
        keras.utils.set_random_seed(SEED)
    """),
    ("code", '''
        def load_idx(path):
            """Read a gzipped IDX file (the MNIST format) into a numpy array."""
            with gzip.open(path, "rb") as f:
                data = f.read()
            magic = int(np.frombuffer(data, dtype=">u4", count=1)[0])
            if magic >> 16 != 0 or (magic >> 8) & 0xFF != 0x08:
                raise ValueError(f"{path}: not an unsigned-byte IDX file (magic {magic:#010x})")
            ndim = magic & 0xFF
            dims = np.frombuffer(data, dtype=">u4", count=ndim, offset=4)
            array = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
            return array.reshape(tuple(int(d) for d in dims))
    '''),
    ("code", """
        x_train = load_idx(DATA_DIR / "train-images-idx3-ubyte.gz")
        y_train = load_idx(DATA_DIR / "train-labels-idx1-ubyte.gz")
        x_test = load_idx(DATA_DIR / "t10k-images-idx3-ubyte.gz")
        y_test = load_idx(DATA_DIR / "t10k-labels-idx1-ubyte.gz")
        print("train:", x_train.shape, y_train.shape, "test:", x_test.shape, y_test.shape)
    """),
    ("code", """
        x_train = (x_train.astype("float32") / 255.0).reshape(-1, 28, 28, 1)
        x_test = (x_test.astype("float32") / 255.0).reshape(-1, 28, 28, 1)
        y_train = keras.utils.to_categorical(y_train, 10)
        y_test = keras.utils.to_categorical(y_test, 10)
        print("x_train", x_train.shape, x_train.dtype, "y_train", y_train.shape)
    """),
    ("code", """
        model = keras.Sequential([
            keras.Input((28, 28, 1)),
            keras.layers.Conv2D(32, (3, 3), activation="relu"),
            keras.layers.MaxPooling2D((2, 2)),
            keras.layers.Flatten(),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10, activation="softmax"),
        ])
        model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
        model.summary()
    """),
    ("code", """
        history = model.fit(x_train, y_train, batch_size=BATCH_SIZE, epochs=EPOCHS,
                            validation_split=0.1, verbose=2)
    """),
    ("code", """
        test_loss, test_accuracy = model.evaluate(x_test, y_test, verbose=0)
        print(f"test loss: {test_loss:.4f}")
        print(f"test accuracy: {test_accuracy:.4f}")
    """),
    ("code", """
        model.save("fashion_mnist.keras")
        with open("history.json", "w") as f:
            json.dump({k: [float(v) for v in values] for k, values in history.history.items()},
                      f, indent=2)
        with open("metrics.json", "w") as f:
            json.dump({"test_loss": float(test_loss), "test_accuracy": float(test_accuracy)},
                      f, indent=2)
        print("saved fashion_mnist.keras, history.json, metrics.json")
    """),
]


def build(cells: list[tuple[str, str]] = CELLS) -> nbformat.NotebookNode:
    """The notebook of `cells` ((kind, text) pairs), with ids fmnist-1, fmnist-2, ..."""
    return make_notebooks.build([(kind, f"fmnist-{number}", text)
                                 for number, (kind, text) in enumerate(cells, start=1)])


def main() -> None:
    nbformat.write(build(), str(NOTEBOOK))
    print(f"wrote {NOTEBOOK.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
