"""`nb2cwl cache`: the step cache of an output folder listed with sizes and last use, pruned
by age or size (least recently used first), bounded at the end of each run (--cache-limit),
never while a run is in progress (issue 27, item 5). Through the CLI, in subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from deployment_cases import write_notebook

from nb2cwl.run_lock import RunLock
from nb2cwl.step_cache import CACHE_DIR, entries, parse_size

pytestmark = pytest.mark.streamflow

CELLS = ["import numpy as np\nx = np.arange(1000.0)", "y = x * 2\nprint(y.sum())",
         "print(int(y.max()))"]


def _nb2cwl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "nb2cwl", *args], capture_output=True,
                          text=True, timeout=300)
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def _run(notebook: Path, out: Path, *options: str) -> str:
    return _nb2cwl("run", str(notebook), "-o", str(out), "--granularity", "cell",
                   *options).stdout


def test_sizes() -> None:
    assert parse_size("500M") == 500 * 1024**2 and parse_size("2G") == 2 * 1024**3
    assert parse_size("1.5GB") == int(1.5 * 1024**3) and parse_size("800000") == 800000
    with pytest.raises(ValueError, match="not a size"):
        parse_size("lots")


def test_the_cache_is_listed_pruned_least_recently_used_first_and_bounded(
        tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "nb.ipynb", *CELLS)
    out = tmp_path / "nb-wf"  # the notebook's own folder
    _run(notebook, out)
    listed = _nb2cwl("cache", str(notebook)).stdout.splitlines()  # the notebook's folder
    assert listed[0].split() == ["entry", "step", "size", "last", "used"]
    assert sorted(line.split()[1] for line in listed[1:-1]) == ["cell_0", "cell_1", "cell_2"]
    assert listed[-1].startswith("3 entries, ") and str(out / CACHE_DIR) in listed[-1]

    time.sleep(1.1)  # the last cell changes: its old entry is now the least recently used
    write_notebook(notebook, *CELLS[:2], "print(int(y.min()))")
    _run(notebook, out)
    cache = str(out / CACHE_DIR)
    stale = entries(cache)[0]
    assert stale.step == "cell_2" and len(entries(cache)) == 4
    newest = sum(e.size for e in entries(cache)[1:])
    pruned = _nb2cwl("cache", str(out), "--max-size", str(newest)).stdout
    assert pruned.startswith("removed 1 entry") and "kept 3 entries" in pruned
    assert stale.key not in {e.key for e in entries(cache)}
    again = _run(notebook, out)  # what was kept is still reused
    assert again.count(" reused ") == 3, again

    # a limit applied when a run ends: least recently used first
    time.sleep(1.1)
    write_notebook(notebook, *CELLS[:2], "print(int(y.mean()))")
    limited = subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o",
                              str(out), "--granularity", "cell", "--cache-limit", "1"],
                             capture_output=True, text=True, timeout=300)
    assert limited.returncode == 0, limited.stderr
    assert "the step cache was over its limit of 1: removed the least recently used 4 " \
        "entries" in limited.stderr
    assert entries(cache) == []
    cleared = _nb2cwl("cache", str(out), "--clear").stdout
    assert cleared.startswith("removed 0 entries")


def test_half_written_entries_go_and_a_run_in_progress_is_never_pruned(tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "nb.ipynb", *CELLS)
    out = tmp_path / "wf"
    _run(notebook, out)
    cache = out / CACHE_DIR
    half = cache / ".0123abcd.999"  # what a run killed while keeping an entry leaves
    (half / "out").mkdir(parents=True)
    (half / "out" / "report.json").write_text("{")
    assert "(half-written)" in _nb2cwl("cache", str(out)).stdout
    with RunLock(str(out), str(notebook), "run"):
        refused = _nb2cwl("cache", str(out), "--older-than", "0", check=False)
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"nb2cwl: error: an nb2cwl run of nb.ipynb is in progress "
                                     f"in {out} (pid {os.getpid()}")
    assert half.exists() and len(entries(str(cache))) == 4
    done = _nb2cwl("cache", str(out), "--older-than", "1").stdout  # a day: only the half one
    assert done.startswith("removed 1 entry") and not half.exists()
    bad = _nb2cwl("cache", str(out), "--max-size", "big", check=False)
    assert bad.returncode == 1 and bad.stderr.strip() == \
        "nb2cwl: error: --max-size: 'big' is not a size (e.g. 500M, 2G, 800000)"
    missing = _nb2cwl("cache", str(tmp_path / "nowhere"), check=False)
    assert missing.returncode == 1 and "has no step cache" in missing.stderr


def test_keep_runs_removes_the_oldest_run_folders_when_a_run_ends(tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "nb.ipynb", "print('hello')")
    out = tmp_path / "wf"

    def run(*extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o",
                               str(out), "--quiet", *extra], capture_output=True, text=True,
                              timeout=300, env={**os.environ, **(env or {})})

    for _ in range(3):
        assert run().returncode == 0
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["1", "2", "3"]
    kept = run("--keep-runs", "2")
    assert kept.returncode == 0, kept.stderr
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["3", "4"]
    assert f"removed 2 older run folder(s) (--keep-runs 2): {out / 'runs' / '1'}" in kept.stderr
    assert run(env={"NB2CWL_KEEP_RUNS": "1"}).returncode == 0
    assert [p.name for p in (out / "runs").iterdir()] == ["5"]
    refused = run("--keep-runs", "0")
    assert refused.returncode == 1
    assert refused.stderr.strip() == ("nb2cwl: error: --keep-runs: 0: keep at least the run "
                                      "just made (1)")
