"""The synthetic Fashion-MNIST files and the case-study notebook that reads them.

notebooks/make_fashion_mnist.py writes the four standard IDX .gz files; the notebook's own
``load_idx`` and ``keras.datasets.fashion_mnist.load_data()`` must both read them as they
would read the real files.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import numpy as np
import pytest
from conftest import NOTEBOOKS

TRAIN, TEST = 200, 50
FILES = {
    "train-images-idx3-ubyte.gz": (0x00000803, (TRAIN, 28, 28)),
    "train-labels-idx1-ubyte.gz": (0x00000801, (TRAIN,)),
    "t10k-images-idx3-ubyte.gz": (0x00000803, (TEST, 28, 28)),
    "t10k-labels-idx1-ubyte.gz": (0x00000801, (TEST,)),
}


def _load_module(name: str):
    spec = importlib.util.spec_from_file_location(name, NOTEBOOKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generator():
    return _load_module("make_fashion_mnist")


@pytest.fixture
def data_dir(generator, tmp_path: Path) -> Path:
    out = tmp_path / "data" / "fashion-mnist"
    generator.write_fashion_mnist(out, train=TRAIN, test=TEST, seed=0)
    return out


def _parse_idx(path: Path) -> tuple[int, tuple[int, ...], bytes]:
    """(magic, dims, payload), read with gzip and struct only."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    (magic,) = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(f">{ndim}I", data[4:4 + 4 * ndim])
    return magic, dims, data[4 + 4 * ndim:]


def _notebook_load_idx():
    """The notebook's own load_idx, taken from its cell and run with the names it uses."""
    notebook = nbformat.read(NOTEBOOKS / "fashion_mnist.ipynb", as_version=4)
    sources = [c.source for c in notebook.cells
               if c.cell_type == "code" and "def load_idx(" in c.source]
    assert len(sources) == 1, "expected exactly one cell defining load_idx"
    namespace = {"gzip": gzip, "np": np}
    exec(compile(sources[0], "fashion_mnist.ipynb:load_idx", "exec"), namespace)
    return namespace["load_idx"]


# --- the files ----------------------------------------------------------------------------


def test_writes_the_four_files_with_idx_headers(generator, data_dir: Path) -> None:
    assert sorted(p.name for p in data_dir.iterdir()) == sorted(FILES)
    for name, (magic, dims) in FILES.items():
        got_magic, got_dims, payload = _parse_idx(data_dir / name)
        assert got_magic == magic, name
        assert got_dims == dims, name
        assert len(payload) == int(np.prod(dims)), name
    _, _, labels = _parse_idx(data_dir / "train-labels-idx1-ubyte.gz")
    counts = np.bincount(np.frombuffer(labels, np.uint8), minlength=10)
    assert len(counts) == 10 and counts.min() == counts.max() == TRAIN // 10


def test_returns_the_paths_it_wrote(generator, tmp_path: Path) -> None:
    paths = generator.write_fashion_mnist(tmp_path / "new" / "dir", train=10, test=10)
    assert sorted(p.name for p in paths) == sorted(FILES)
    assert all(p.is_file() and p.parent == tmp_path / "new" / "dir" for p in paths)


def test_deterministic_per_seed(generator, tmp_path: Path) -> None:
    def contents(folder: str, seed: int, train: int = TRAIN) -> dict[str, bytes]:
        out = tmp_path / folder
        generator.write_fashion_mnist(out, train=train, test=TEST, seed=seed)
        return {name: (out / name).read_bytes() for name in FILES}

    first, again, other = contents("a", 0), contents("b", 0), contents("c", 1)
    assert first == again  # byte for byte, gzip header included
    assert all(first[name] != other[name] for name in FILES)
    # the test set does not depend on the size of the training set
    bigger = contents("d", 0, train=TRAIN + 100)
    assert bigger["t10k-images-idx3-ubyte.gz"] == first["t10k-images-idx3-ubyte.gz"]
    assert bigger["t10k-labels-idx1-ubyte.gz"] == first["t10k-labels-idx1-ubyte.gz"]


def test_classes_differ_more_than_images_within_a_class(generator) -> None:
    images, labels = generator.make_split(500, seed=0, stream=0)
    images = images.astype(np.float32) / 255
    means = np.stack([images[labels == k].mean(axis=0) for k in range(10)])
    # a nearest-class-mean classifier already does far better than chance (10 %)
    distances = ((images[:, None] - means[None]) ** 2).sum(axis=(2, 3))
    accuracy = (distances.argmin(axis=1) == labels).mean()
    assert accuracy > 0.5
    assert images.std() > 0.1  # and the images are not flat


# --- reading them back --------------------------------------------------------------------


def test_notebook_load_idx_reads_them(data_dir: Path) -> None:
    load_idx = _notebook_load_idx()
    x_train = load_idx(data_dir / "train-images-idx3-ubyte.gz")
    y_train = load_idx(data_dir / "train-labels-idx1-ubyte.gz")
    x_test = load_idx(data_dir / "t10k-images-idx3-ubyte.gz")
    y_test = load_idx(data_dir / "t10k-labels-idx1-ubyte.gz")
    assert x_train.shape == (TRAIN, 28, 28) and x_test.shape == (TEST, 28, 28)
    assert y_train.shape == (TRAIN,) and y_test.shape == (TEST,)
    for array in (x_train, y_train, x_test, y_test):
        assert array.dtype == np.uint8
    assert set(np.unique(y_train)) == set(range(10))
    assert y_test.min() >= 0 and y_test.max() <= 9
    assert x_train.max() > 200 and x_train.min() == 0


def test_notebook_load_idx_rejects_other_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gz"
    with gzip.open(bad, "wb") as f:
        f.write(struct.pack(">I", 0x00000D01) + struct.pack(">I", 1) + b"\0\0\0\0")
    with pytest.raises(ValueError, match="not an unsigned-byte IDX file"):
        _notebook_load_idx()(bad)


def test_keras_load_data_reads_them(data_dir: Path, tmp_path: Path) -> None:
    """keras.datasets.fashion_mnist.load_data() finds the files in $KERAS_HOME/datasets/.

    Keras reads KERAS_HOME when it is imported, so this runs in a fresh interpreter (which
    also keeps TensorFlow out of the test process); it is skipped where keras won't import.
    """
    if importlib.util.find_spec("keras") is None:
        pytest.skip("keras is not installed")
    keras_home = tmp_path / "keras-home"
    shutil.copytree(data_dir, keras_home / "datasets" / "fashion-mnist")
    script = textwrap.dedent("""
        import json, sys
        try:
            import keras
        except ImportError as error:
            print(error)
            sys.exit(77)
        (x, y), (xt, yt) = keras.datasets.fashion_mnist.load_data()
        print(json.dumps({"shapes": [a.shape for a in (x, y, xt, yt)],
                          "dtypes": [str(a.dtype) for a in (x, y, xt, yt)],
                          "labels": [int(y.min()), int(y.max())]}))
    """)
    env = {**os.environ, "KERAS_HOME": str(keras_home), "TF_CPP_MIN_LOG_LEVEL": "3",
           "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, timeout=300)
    if result.returncode == 77:
        pytest.skip(f"keras does not import: {result.stdout.strip()}")
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"shapes": [[TRAIN, 28, 28], [TRAIN], [TEST, 28, 28], [TEST]],
                      "dtypes": ["uint8"] * 4, "labels": [0, 9]}
    # it used the files that were there rather than downloading its own
    assert sorted(p.name for p in (keras_home / "datasets" / "fashion-mnist").iterdir()) == \
        sorted(FILES)


# --- overwriting --------------------------------------------------------------------------


def test_refuses_to_overwrite(generator, data_dir: Path) -> None:
    before = {p.name: p.read_bytes() for p in data_dir.iterdir()}
    with pytest.raises(FileExistsError):
        generator.write_fashion_mnist(data_dir, train=TRAIN, test=TEST, seed=1)
    assert {p.name: p.read_bytes() for p in data_dir.iterdir()} == before


def test_refuses_if_any_one_file_exists(generator, tmp_path: Path) -> None:
    (tmp_path / "t10k-labels-idx1-ubyte.gz").write_bytes(b"mine")
    with pytest.raises(FileExistsError):
        generator.write_fashion_mnist(tmp_path, train=10, test=10)
    assert [p.name for p in tmp_path.iterdir()] == ["t10k-labels-idx1-ubyte.gz"]


def test_cli_refuses_then_force_overwrites(generator, data_dir: Path, capsys) -> None:
    before = (data_dir / "train-images-idx3-ubyte.gz").read_bytes()
    assert generator.main([str(data_dir), "--train", "20", "--test", "10"]) == 1
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and "already exists" in error
    assert (data_dir / "train-images-idx3-ubyte.gz").read_bytes() == before
    args = [str(data_dir), "--train", "20", "--test", "10", "--seed", "3", "--force"]
    assert generator.main(args) == 0
    assert _parse_idx(data_dir / "train-images-idx3-ubyte.gz")[1] == (20, 28, 28)


def test_cli_as_a_script(tmp_path: Path) -> None:
    script = NOTEBOOKS / "make_fashion_mnist.py"
    command = [sys.executable, str(script), str(tmp_path), "--train", "30", "--test", "20"]
    first = subprocess.run(command, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FILES)
    second = subprocess.run(command, capture_output=True, text=True)
    assert second.returncode == 1
    assert second.stderr.count("\n") == 1 and "--force" in second.stderr


# --- the notebook -------------------------------------------------------------------------


def test_notebook_is_generated_and_up_to_date() -> None:
    maker = _load_module("make_fashion_mnist_notebook")
    expected = nbformat.writes(maker.build())
    assert (NOTEBOOKS / "fashion_mnist.ipynb").read_text() == expected + "\n", (
        "fashion_mnist.ipynb is stale: run notebooks/make_fashion_mnist_notebook.py"
    )
    notebook = nbformat.read(NOTEBOOKS / "fashion_mnist.ipynb", as_version=4)
    assert [c.id for c in notebook.cells] == [
        f"fmnist-{i}" for i in range(1, len(notebook.cells) + 1)
    ]
    assert notebook.cells[0].cell_type == "markdown"
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    for name in FILES:
        assert f'DATA_DIR / "{name}"' in code
    assert 'DATA_DIR = Path("data/fashion-mnist")' in code
