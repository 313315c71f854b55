"""Kills at random moments (issue 27, item 4): `nb2cwl run` of a multi-step notebook that
writes files and values is killed with SIGKILL or SIGTERM at moments drawn at random over its
whole run, StreamFlow's start and database included: 20 (issue 27), or as many as
NB2CWL_FAULT_KILLS says (`NB2CWL_FAULT_KILLS=100 pytest tests/test_fault_injection.py` for a
longer soak). After each kill:

- no process of the run is left (they all carry a marker in their environment);
- the next run completes, with every cell's outputs equal to Jupyter's (nbclient, once);
- every step whose cache entry was complete when the kill came is reused.

The moments are drawn from a seeded generator, so a failure can be replayed: the test names
the moment and the signal.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from conftest import default_stop_signals
from deployment_cases import write_notebook
from equivalence import per_cell, run_with_nbclient

from nb2cwl.step_cache import CACHE_DIR, entries

pytestmark = pytest.mark.streamflow

KILLS = int(os.environ.get("NB2CWL_FAULT_KILLS", "20"))
CELLS = [
    "import json, time\nimport numpy as np\nrng = np.random.default_rng(0)",
    "time.sleep(0.2)\ndata = rng.normal(size=2000)\nnp.save('data.npy', data)\n"
    "print('saved', data.shape)",
    "time.sleep(0.2)\nloaded = np.load('data.npy')\nstats = {'mean': round(float(loaded.mean()), "
    "6), 'max': round(float(loaded.max()), 6)}\nprint(stats)",
    "time.sleep(0.2)\nwith open('stats.json', 'w') as handle:\n    json.dump(stats, handle)\n"
    "print('wrote stats.json')",
    "time.sleep(0.2)\nprint(json.load(open('stats.json')), len(loaded))",
]


def _marked(marker: str) -> list[int]:
    """Processes carrying the test's marker in their environment."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _no_process_left(marker: str, seconds: float = 15) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := _marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _completed_steps(out: Path) -> set[str]:
    return {e.step for e in entries(str(out / CACHE_DIR)) if e.complete}


def test_runs_killed_at_random_moments_leave_nothing_and_the_next_run_completes(
        tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "faults.ipynb", *CELLS)
    expected = run_with_nbclient(notebook, tmp_path / "kernel")
    out = tmp_path / "faults-wf"
    marker = f"NB2CWL_FAULT_TEST={os.getpid()}-{time.time_ns()}"
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep
               + os.environ["PATH"], **dict([marker.split("=", 1)]))
    command = [sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o", str(out),
               "--granularity", "cell"]

    began = time.monotonic()
    subprocess.run([*command, "--no-cache", "--quiet"], env=env, check=True, timeout=300,
                   capture_output=True)
    whole = time.monotonic() - began  # how long a run takes here: the kills fall inside it
    draw = random.Random(24)
    for number in range(KILLS):
        moment, signum = draw.uniform(0.05, whole), (signal.SIGKILL, signal.SIGTERM)[number % 2]
        what = f"kill {number + 1}: {signal.Signals(signum).name} after {moment:.2f} s"
        killed = subprocess.Popen([*command, "--refresh" if number % 5 == 0 else "--quiet"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True, start_new_session=True,
                                  preexec_fn=default_stop_signals)
        time.sleep(moment)
        killed.send_signal(signum)
        try:
            killed.wait(timeout=60)
        except subprocess.TimeoutExpired:
            killed.kill()
            pytest.fail(f"{what}: nb2cwl run did not stop within 60 s")
        left = _no_process_left(marker)
        assert not left, f"{what}: processes left behind: {left}"
        completed = _completed_steps(out)
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{what}: the next run failed:\n{done.stderr[-3000:]}"
        for step in completed:
            assert f" {step} reused" in done.stdout, f"{what}: {step} ran again:\n{done.stdout}"
        executed = sorted((out / "runs").iterdir(), key=lambda p: int(p.name))[-1]
        got = per_cell(nbformat.read(next(executed.glob("*.executed.ipynb")), as_version=4))
        assert got == expected, f"{what}: outputs differ from Jupyter's"
        assert not _no_process_left(marker, 5), f"{what}: the completed run left processes"
