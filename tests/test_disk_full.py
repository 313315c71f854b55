"""A full disk stops the run at once, with one line, and the next run completes once there is
room (issue 27, item 2). The output folder is a 40 MB tmpfs; a cell writes a 64 MB file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from deployment_cases import write_notebook

pytestmark = pytest.mark.streamflow


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "small"
    folder.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _run(notebook: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(notebook), "--granularity",
                           "cell"], capture_output=True, text=True, timeout=300)


def test_a_full_output_folder_stops_the_run_at_once(small_disk: Path) -> None:
    notebook = write_notebook(
        small_disk / "w.ipynb", "import numpy as np\nx = np.ones(1000)",
        "big = np.random.default_rng(0).random(8_000_000)\nnp.save('big.npy', big)\n"
        "print(big.size)",
        "print(np.load('big.npy').sum() > 0)")
    out = small_disk / "w-wf"
    began = time.monotonic()
    full = _run(notebook)
    assert full.returncode == 1
    assert time.monotonic() - began < 60  # it used to wait until killed
    errors = [line for line in full.stderr.splitlines() if line.startswith("nb2cwl: error:")]
    assert len(errors) == 1 and "Traceback" not in full.stderr, full.stderr[-3000:]
    assert errors[0].startswith(f"nb2cwl: error: no space left on the device of {out}/runs/1")
    assert "the steps that finished are reused" in errors[0]
    assert not (out / "runs" / "1").exists()  # the half-copied outputs would keep it full
    cache = out / ".nb2cwl-cache"
    assert not [p for p in cache.iterdir() if p.name.startswith(".") and p.name != ".locks"]

    subprocess.run(["mount", "-o", "remount,size=200m", str(small_disk)], check=True)
    again = _run(notebook)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "cell_0 reused" in again.stdout
    written = next(out.glob("runs/*/written-files/big.npy"))
    assert written.stat().st_size == 64_000_128
